#!/usr/bin/env bash
# colltune learn run on a real MPI program (tests/programs/ct_collectives.c: every collective at
# 3 sizes, results checked exactly) under the interposer's learning mode, on the embedded Open MPI
# and on MPICH, 3 ranks, 6 batches each; then the per-batch figures from learn_batches.
#   bash benchmarks/learn/real_program.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-/tmp/colltune-learn-real}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src}
PY=.venv/bin/python
for LIB in openmpi mpich; do
  MPIEXEC=$($PY -c "from colltune.mpi import libraries; print(libraries.resolve('$LIB').mpiexec)")
  $PY -c "from colltune.mpi import libraries, build; from pathlib import Path; build.compile_program(libraries.resolve('$LIB'), [Path('tests/programs/ct_collectives.c')], Path('$OUT/ct_collectives_$LIB'), ['-Wextra'])"
  EXTRA=""; [ "$LIB" = openmpi ] && EXTRA="--oversubscribe"
  rm -f "$OUT/$LIB.duckdb"
  .venv/bin/colltune learn run --mpi "$LIB" --batches 6 --db "$OUT/$LIB.duckdb" --table-out "$OUT/$LIB.sel" \
      --trace-root "$OUT/traces-$LIB" -- "$MPIEXEC" $EXTRA -n 3 "$OUT/ct_collectives_$LIB" -r 20
  .venv/bin/colltune learn plot --db "$OUT/$LIB.duckdb" --out "$OUT/png-$LIB"
  .venv/bin/colltune learn export --db "$OUT/$LIB.duckdb" --out "$OUT/$LIB.prf"
done
