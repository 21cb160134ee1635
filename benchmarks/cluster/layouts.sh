#!/bin/sh
# Per-layout tuning profiles end to end (docs/profile.md "Layouts", README.md "Per-layout
# profile"): `check --preset quick` of gather, scatter and allreduce at 4 ranks of the embedded
# Open MPI on 1 node x 4 and on 2 nodes x 2 of the namespace cluster, into ONE database; `colltune
# tune` on it (a rule set per layout); `colltune validate` of that profile inside each layout
# (tuned vs default in the same launches: the benchmark's `tuned` takes the rules of its
# communicator's layout); and the counting table of gather_app.c under the profile on each layout.
# Usage, from the repository root, as root:
#   benchmarks/cluster/layouts.sh [OUT_DIR]        (default benchmarks/cluster/results/layouts)
set -e
out=${1:-benchmarks/cluster/results/layouts}
bash scripts/cluster-up.sh --nodes 2
export SLURM_CONF=${COLLTUNE_CLUSTER_DIR:-/tmp/colltune-cluster}/slurm.conf
mkdir -p "$out"
db=$out/layouts.duckdb
rm -rf "$db" "$out"/validate-*.duckdb "$out"/check-*/
alloc() {  # the allocation of a layout; 4 tasks on one 2-CPU node need overcommit
    case $1 in 1x4) echo "-N 1 -n 4 -O" ;; 2x2) echo "-N 2 --ntasks-per-node 2" ;; esac
}
for lay in 1x4 2x2; do
    cat /proc/loadavg > "$out/check-$lay.load.txt"
    # shellcheck disable=SC2046
    timeout 3600 salloc $(alloc $lay) colltune check -n 4 --preset quick -c gather,scatter,allreduce \
        --round-budget 300 --db "$db" --out "$out/check-$lay" > "$out/check-$lay.txt" 2>&1 || [ $? -le 3 ]
    cat /proc/loadavg >> "$out/check-$lay.load.txt"
done
colltune tune --db "$db" --out "$out/layouts.prof" --show-decisions > "$out/tune.txt" 2>&1
mpicc -O2 -o "$out/gather_app" benchmarks/cluster/gather_app.c
for lay in 2x2 1x4; do
    cat /proc/loadavg > "$out/validate-$lay.load.txt"
    # shellcheck disable=SC2046
    timeout 3600 salloc $(alloc $lay) colltune validate --profile "$out/layouts.prof" -n 4 --preset quick \
        -c gather,scatter,allreduce -R 6 --db "$out/validate-$lay.duckdb" > "$out/validate-$lay.txt" 2>&1 \
        || [ $? -le 1 ]   # 1: a point flagged slower
    cat /proc/loadavg >> "$out/validate-$lay.load.txt"
    # shellcheck disable=SC2046
    colltune run --profile "$out/layouts.prof" --verbose -- srun $(alloc $lay) "$out/gather_app" 200 \
        > "$out/run-$lay.txt" 2>&1
done
grep -h "colltune:   gather\|colltune:   scatter\|colltune:   allreduce" "$out"/run-*.txt || true
