#!/bin/sh
# The check of the neighborhood preset (docs/guidelines.md, "Neighborhood collectives": NH1-NH7,
# and NB1 of their nonblocking form), then its summary and figure.
#   sh benchmarks/neighborhood/run.sh [openmpi|mpich|PATH-TO-MPICC] [ranks] [check options...]
#   (from the repository root; e.g. --time-budget 1 on a loaded machine)
# Writes benchmarks/neighborhood/<name>-<ranks>.duckdb and report-<name>-<ranks>/ (not committed),
# results_<name>_<ranks>.json and slowdowns_<name>_<ranks>.png (committed).
set -e
lib=${1:-openmpi}
n=${2:-4}
[ $# -ge 2 ] && shift 2 || shift $#
case "$lib" in */*) name=path-$(echo "$lib" | tr '/' '_') ;; *) name=$lib ;; esac
here=benchmarks/neighborhood
cat /proc/loadavg > "$here/loadavg_${name}_${n}.txt"
start=$(date +%s)
# exit 1 (violations) and 3 (some undecided) are results, not failures
rc=0
nice -n 19 .venv/bin/colltune check --preset neighborhood --library-algorithms --mpi "$lib" -n "$n" \
    --db "$here/$name-$n.duckdb" --out "$here/report-$name-$n" "$@" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || [ "$rc" -eq 3 ] || exit "$rc"
echo "wall $(( $(date +%s) - start )) s" >> "$here/loadavg_${name}_${n}.txt"
cat /proc/loadavg >> "$here/loadavg_${name}_${n}.txt"
.venv/bin/python "$here/summary.py" "$here/$name-$n.duckdb" --figure "$here/slowdowns_${name}_${n}.png" \
    > "$here/results_${name}_${n}.json"
