#!/bin/sh
# Two independent comparisons of the embedded Open MPI and MPICH at 2 ranks, then the share of
# points with the same verdict in both (README.md). MPICH busy-polls: never more ranks than cores.
# Usage: benchmarks/compare/run.sh [OUT_DIR] [LAUNCHES] [default|yield]   (from the repository root)
#   default: colltune's choice (Open MPI busy-polls while 2 ranks do not outnumber the cores);
#   yield: Open MPI's ranks yield their core when idle (OMPI_MCA_mpi_yield_when_idle=1), as
#          colltune launched them before, for the comparison in README.md.
set -e
out=${1:-benchmarks/compare/results}
launches=${2:-20}
case ${3:-default} in
    default) configs="--mpi openmpi,mpich" ;;
    yield) configs="--config openmpi:openmpi:OMPI_MCA_mpi_yield_when_idle=1 --config mpich:mpich" ;;
    *) echo "mode: default or yield" >&2; exit 2 ;;
esac
mkdir -p "$out"
for run in run1 run2; do
    rm -f "$out/$run.duckdb"
    uptime > "$out/$run.uptime.txt"
    start=$(date +%s)
    colltune compare $configs -n 2 --preset quick -R "$launches" \
        --db "$out/$run.duckdb" --out "$out/$run" --quiet > "$out/$run.txt"
    echo "$(( $(date +%s) - start )) s" >> "$out/$run.uptime.txt"
    uptime >> "$out/$run.uptime.txt"
done
python benchmarks/compare/agreement.py "$out/run1.duckdb" "$out/run2.duckdb" --csv "$out/agreement.csv" \
    | tee "$out/agreement.txt"
