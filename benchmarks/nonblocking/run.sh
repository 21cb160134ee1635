#!/bin/sh
# The check of the nonblocking preset (docs/guidelines.md, "Forms": NB1-NB3), then its summary.
#   sh benchmarks/nonblocking/run.sh [openmpi|mpich|PATH-TO-MPICC] [ranks]   (from the repository root)
# Writes benchmarks/nonblocking/<name>-<ranks>.duckdb (not committed), the report directory next to
# it, and results_<name>_<ranks>.json (committed: the NB verdicts per collective and size).
set -e
lib=${1:-openmpi}
n=${2:-4}
case "$lib" in */*) name=path-$(echo "$lib" | tr '/' '_') ;; *) name=$lib ;; esac
here=benchmarks/nonblocking
cat /proc/loadavg > "$here/loadavg_${name}_${n}.txt"
start=$(date +%s)
# exit 1 (violations) and 3 (some undecided) are results, not failures
rc=0
.venv/bin/colltune check --preset nonblocking --mpi "$lib" -n "$n" \
    --db "$here/$name-$n.duckdb" --out "$here/report-$name-$n" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || [ "$rc" -eq 3 ] || exit "$rc"
echo "wall $(( $(date +%s) - start )) s" >> "$here/loadavg_${name}_${n}.txt"
cat /proc/loadavg >> "$here/loadavg_${name}_${n}.txt"
.venv/bin/python "$here/summary.py" "$here/$name-$n.duckdb" > "$here/results_${name}_${n}.json"
