#!/bin/sh
# The full check of the irregular preset at 4 ranks (docs/guidelines.md), then its summary.
#   sh benchmarks/irregular/run.sh [openmpi|mpich] [ranks]     (from the repository root)
# Writes benchmarks/irregular/<library>-<ranks>.duckdb (not committed), the report directory
# next to it, and results_<library>_<ranks>.json (committed: verdicts per guideline).
set -e
lib=${1:-openmpi}
n=${2:-4}
here=benchmarks/irregular
cat /proc/loadavg > "$here/loadavg_${lib}_${n}.txt"
.venv/bin/colltune check --preset irregular --library-algorithms --mpi "$lib" -n "$n" \
    --db "$here/$lib-$n.duckdb" --out "$here/report-$lib-$n" || [ $? -eq 1 ] || [ $? -eq 3 ]
cat /proc/loadavg >> "$here/loadavg_${lib}_${n}.txt"
.venv/bin/python "$here/summary.py" "$here/$lib-$n.duckdb" > "$here/results_${lib}_${n}.json"
