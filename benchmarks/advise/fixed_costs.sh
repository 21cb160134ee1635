#!/bin/bash
# The profiling run's fixed costs (issue 34, sixteenth round): a tiny program (MPI_Init, N
# MPI_Allreduce, MPI_Finalize; fixed_allreduce.c), 2 ranks of Debian's Open MPI, with
# libcolltune preloaded (pass) and profiling (profiled), counted, not timed (the machine is
# shared): per rank its page faults (perf stat) and system calls (strace -f -c), rank 0's page
# faults by function (perf record -e page-faults -c 1: every fault) and its instructions in
# MPI_Init, MPI_Finalize and the profiling mode's parts of them (callgrind, inclusive).
#
#   bash benchmarks/advise/fixed_costs.sh OUT LIBCOLLTUNE [N]    # -> OUT/fixed-costs.txt
# LIBCOLLTUNE: a build for Debian's Open MPI (python -c "from colltune.mpi import build,
# libraries as m; print(build.ensure_built(m.resolve('/usr/bin/mpicc.openmpi')).libcolltune)").
set -euo pipefail
out=$(realpath -m "$1"); lib=$(realpath "$2"); n=${3:-20000}
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
mpicc.openmpi -O2 -g -o "$out/fixed_allreduce" "$here/fixed_allreduce.c"
cat > "$out/rank.sh" <<'EOF2'
#!/bin/bash
r=$OMPI_COMM_WORLD_RANK
case "$TOOL" in
  perf) exec perf stat -x, -e page-faults -o "$OUT/perf-$MODE-$r.txt" "$@" ;;
  faults) if [ "$r" = 0 ]; then exec perf record -q -e page-faults -c 1 -o "$OUT/faults-$MODE.data" "$@"; fi; exec "$@" ;;
  strace) exec strace -f -c -o "$OUT/strace-$MODE-$r.txt" "$@" ;;
  callgrind) if [ "$r" = 0 ]; then exec valgrind -q --tool=callgrind --callgrind-out-file="$OUT/cg-$MODE.out" "$@"; fi; exec "$@" ;;
esac
EOF2
chmod +x "$out/rank.sh"
report="$out/fixed-costs.txt"
: > "$report"
for tool in perf faults strace callgrind; do
  for mode in pass profiled; do
    rm -rf "$out/prof-$mode"
    env=(-x "LD_PRELOAD=$lib")
    [ "$mode" = profiled ] && env+=(-x "COLLTUNE_PROFILE_RUN=$out/prof-$mode")
    mpirun.openmpi --allow-run-as-root -np 2 -x TOOL=$tool -x MODE=$mode -x OUT="$out" "${env[@]}" \
      "$out/rank.sh" "$out/fixed_allreduce" "$n" > "$out/log-$tool-$mode.txt" 2>&1
    grep -q '^result ' "$out/log-$tool-$mode.txt"
  done
done
dso=$(basename "$lib")
for mode in pass profiled; do
  echo "== $mode ($lib, N=$n)" >> "$report"
  for r in 0 1; do
    faults=$(grep -v '^#' "$out/perf-$mode-$r.txt" | awk -F, '$3 ~ /page-faults/ {print $1}')
    calls=$(awk '$NF == "total" {print $4}' "$out/strace-$mode-$r.txt")
    echo "  rank $r: $faults page faults, $calls system calls (all threads)" >> "$report"
  done
  echo "  rank 0's system calls by name (all threads):" >> "$report"
  awk 'NR > 2 && $1 ~ /^[0-9.]+$/ && $NF != "total" {printf " %s %s", $NF, $4}' "$out/strace-$mode-0.txt" \
    | fold -s -w 96 | sed 's/^/   /' >> "$report"
  echo >> "$report"
  echo "  rank 0's page faults in $dso by function:" >> "$report"
  perf report -i "$out/faults-$mode.data" --stdio --sort dso,sym -n 2>/dev/null \
    | awk -v d="$dso" '$3 == d {print "    " $5, $2}' | head -12 >> "$report"
  echo "  rank 0's instructions (callgrind, inclusive):" >> "$report"
  callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$out/cg-$mode.out" 2>/dev/null \
    | grep -E ":(MPI_Init|MPI_Finalize|ct_runtime_start|ct_profrun_start|ct_profenv_read_maps|ct_profrun_finish|ct_profenv_write|ct_profchain_write|ct_topo_write) \[" \
    | sed -E 's/^ *([0-9,]+) .*:([A-Za-z_0-9]+) \[.*/    \2 \1/' >> "$report"
done
cat "$report"
