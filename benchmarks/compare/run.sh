#!/bin/sh
# Two independent comparisons of the embedded Open MPI and MPICH at 2 ranks, then the share of
# points with the same verdict in both. Keep the machine otherwise idle while it runs: Open MPI
# yields its core when it waits, so any other busy process slows its launches 3-5x (README.md).
# Usage: benchmarks/compare/run.sh [OUT_DIR] [LAUNCHES] [yield|spin]   (from the repository root)
#   yield: colltune's default, Open MPI ranks yield when idle; spin: both libraries busy-poll.
set -e
out=${1:-benchmarks/compare/results}
launches=${2:-20}
case ${3:-yield} in
    yield) configs="--mpi openmpi,mpich" ;;
    spin) configs="--config openmpi:openmpi:OMPI_MCA_mpi_yield_when_idle=0 --config mpich:mpich" ;;
    *) echo "mode: yield or spin" >&2; exit 2 ;;
esac
mkdir -p "$out"
for run in run1 run2; do
    rm -f "$out/$run.duckdb"
    uptime > "$out/$run.uptime.txt"
    colltune compare $configs -n 2 --preset quick -R "$launches" \
        --db "$out/$run.duckdb" --out "$out/$run" --quiet > "$out/$run.txt"
    uptime >> "$out/$run.uptime.txt"
done
python benchmarks/compare/agreement.py "$out/run1.duckdb" "$out/run2.duckdb" --csv "$out/agreement.csv" \
    | tee "$out/agreement.txt"
