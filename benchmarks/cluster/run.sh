#!/bin/sh
# check --preset quick at 4 ranks of the embedded Open MPI on 1 node x 4 and 2 nodes x 2 of the
# namespace cluster (scripts/cluster-up.sh), alternating 1x4 2x2 1x4 2x2 ..., then `compare` of
# the two layouts and a summary (README.md). Both layouts launch with srun --mpi=pmix on the same
# 2 physical cores: only the node layout differs (shared memory vs TCP over the bridge, coll/tuned
# vs coll/han). Usage, from the repository root, as root:
#   benchmarks/cluster/run.sh [OUT_DIR] [PAIRS] [ROUND_BUDGET_S]   (default results, 3, 300)
# The adaptive rounds get ROUND_BUDGET_S (quick's own is 30 s): launches across nodes are slower,
# and with quick's budget the 2x2 runs stopped after one round while 1x4 ran both, which made
# 2x2 look cleaner only because it decided less.
# MPI=mpich runs MPICH at 2 ranks instead (1x2 vs 2x1): 4 busy-polling MPICH ranks on 2 cores
# would measure the scheduler, not the layout.
set -e
mpi=${MPI:-openmpi}
if [ "$mpi" = openmpi ]; then n=4; layouts="1x4 2x2"; else n=2; layouts="1x2 2x1"; fi
out=${1:-benchmarks/cluster/results}
pairs=${2:-3}
budget=${3:-300}
bash scripts/cluster-up.sh --nodes 2
export SLURM_CONF=${COLLTUNE_CLUSTER_DIR:-/tmp/colltune-cluster}/slurm.conf
mkdir -p "$out"
i=1
while [ "$i" -le "$pairs" ]; do
    for lay in $layouts; do
        run=$lay-$i
        case $lay in
            1x4) alloc="-N 1 -n 4 -O" ;;   # 4 tasks on one 2-CPU node: overcommit
            2x2) alloc="-N 2 --ntasks-per-node 2" ;;
            1x2) alloc="-N 1 -n 2" ;;
            2x1) alloc="-N 2 --ntasks-per-node 1" ;;
        esac
        rm -rf "$out/$run.duckdb" "$out/$run"
        cat /proc/loadavg > "$out/$run.load.txt"
        start=$(date +%s)
        # shellcheck disable=SC2086
        timeout 3600 salloc $alloc colltune check --mpi "$mpi" -n "$n" --preset quick --round-budget "$budget" --db "$out/$run.duckdb" \
            --out "$out/$run" > "$out/$run.txt" 2>&1 || [ $? -le 3 ]   # 1: violations, 3: undecided
        echo "$(( $(date +%s) - start )) s" >> "$out/$run.load.txt"
        cat /proc/loadavg >> "$out/$run.load.txt"
    done
    i=$((i + 1))
done
set -- $layouts
colltune compare "one-node=$out/$1-1.duckdb" "two-nodes=$out/$2-1.duckdb" --out "$out/compare" \
    > "$out/compare.txt" 2>&1 || true
python benchmarks/cluster/summarize.py "$out" | tee "$out/summary.md"
