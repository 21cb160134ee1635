#!/bin/sh
# Learning per layout (README.md): gather_app (400 MPI_Gather of 32 KiB per rank, Open MPI,
# 4 ranks) in learning mode, alternating 2 nodes x 2 and 1 node x 4 for ROUNDS rounds, all
# batches into one database; then the learned table. Usage, from the repository root, as root:
#   benchmarks/cluster/learn.sh [OUT_DIR] [ROUNDS]      (default benchmarks/cluster/results/learn, 5)
set -e
out=${1:-benchmarks/cluster/results/learn}
rounds=${2:-5}
bash scripts/cluster-up.sh --nodes 2
export SLURM_CONF=${COLLTUNE_CLUSTER_DIR:-/tmp/colltune-cluster}/slurm.conf
mkdir -p "$out"
rm -f "$out/learn.duckdb"
app="$out/gather_app"
mpicc=$(dirname "$(command -v colltune)")/mpicc
"$mpicc" -O2 -o "$app" benchmarks/cluster/gather_app.c
cat /proc/loadavg > "$out/load.txt"
i=1
while [ "$i" -le "$rounds" ]; do
    for lay in "-N 2 --ntasks-per-node 2" "-N 1 -n 4 -O"; do
        # shellcheck disable=SC2086
        timeout 600 colltune learn run --batches 1 --db "$out/learn.duckdb" --table-out "$out/table.sel" \
            --check "grep -q 'gather_app ok' \$COLLTUNE_LEARN_LOG" -- srun $lay "$app" >> "$out/batches.txt" 2>&1
    done
    i=$((i + 1))
done
cat /proc/loadavg >> "$out/load.txt"
colltune learn table --db "$out/learn.duckdb" --show > "$out/table.txt" 2>&1
python - "$out/learn.duckdb" > "$out/medians.txt" <<'PY'
import sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
print(con.execute("SELECT nodes, ppn, member, count(*) AS calls, round(median(runtime_s) * 1e6, 1) AS median_us "
                  "FROM trace_calls WHERE collective = 'gather' GROUP BY ALL ORDER BY nodes, median_us").fetchdf()
      .to_string(index=False))
PY
cat "$out/medians.txt" "$out/table.txt"
