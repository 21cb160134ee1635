#!/bin/bash
# What libcolltune costs when it is only preloaded (profiling off, every call passed to the
# library), plain against pass, in exact counts (issue 34, seventeenth round; README.md "what the
# preload alone costs"). Debian's Open MPI, OpenFOAM's case from openfoam.sh. Counted, not timed:
#   1. OpenFOAM's rank script (sequential_time.py's rank.sh: bash sources OpenFOAM's bashrc, then
#      execs icoFoam): the processes before icoFoam, whole tree (page faults, perf stat -r) and
#      each exec'd process's instructions (callgrind --trace-children);
#   2. icoFoam's start alone (icoFoam -help, no MPI): instructions per object (the loader's
#      symbol lookups) and page faults;
#   3. OpenFOAM rank 0 whole process, STEPS steps (callgrind --collect-atstart=yes, rank 1 native);
#   4. the tiny program fixed_allreduce.c (N MPI_Allreduce of one double): rank 0's callgrind,
#      page faults and system calls per rank;
#   5. libcolltune itself: size, exported symbols, relocations, how many of icoFoam's symbol
#      lookups pass its Bloom filter (bloom.py).
#
#   bash benchmarks/advise/openfoam.sh OUT prepare 200
#   bash benchmarks/advise/pass_cost.sh OUT LIBCOLLTUNE [STEPS] [N]   # -> OUT/pass-cost.txt
# LIBCOLLTUNE: a build for Debian's Open MPI (python -c "from colltune.mpi import build,
# libraries as m; print(build.ensure_built(m.resolve('/usr/bin/mpicc.openmpi')).libcolltune)").
set -euo pipefail
out=$(realpath "$1"); lib=$(realpath "$2"); steps=${3:-200}; n=${4:-20000}
here=$(dirname "$(realpath "$0")")
case_dir=$out/cavity
[ -d "$case_dir/processor1" ] || { echo "no case: bash benchmarks/advise/openfoam.sh $out prepare $steps" >&2; exit 1; }
work=$out/pass-cost
mkdir -p "$work"
report=$out/pass-cost.txt
: > "$report"
objects() { python3 "$here/cg_objects.py" "$@"; }
say() { echo "$*" >> "$report"; }

# 1. the rank script's processes before icoFoam
cat > "$work/env.sh" <<'EOF'
#!/bin/bash
source /usr/share/openfoam/etc/bashrc 2>/dev/null
exit 0
EOF
chmod +x "$work/env.sh"
say "== 1. OpenFOAM's rank script before icoFoam (bash sources OpenFOAM's bashrc): whole tree, perf stat -r 30"
for mode in plain pass; do
  pre=; [ $mode = pass ] && pre=$lib
  LD_PRELOAD=$pre perf stat -r 30 -x, -e page-faults,task-clock -o "$work/env-$mode.perf" "$work/env.sh"
  say "  $mode: $(grep -v '^#' "$work/env-$mode.perf" | grep . | awk -F, '{printf "%s %s, ", $1, $3}')"
  rm -f "$work"/cg-env-$mode.*
  LD_PRELOAD=$pre valgrind -q --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$work/cg-env-$mode.%p" "$work/env.sh"
done
say "  instructions per exec'd process (callgrind; forked subshells copy their parent's count):"
for mode in plain pass; do
  for f in $(ls "$work"/cg-env-$mode.* | sort -t. -k2 -n); do
    cmd=$(sed -n 's/^cmd: *//p' "$f" | cut -c1-40); tot=$(sed -n 's/^totals: //p' "$f")
    echo "$mode|$cmd|$tot"
  done
done | awk -F'|' '!seen[$1 $2]++ {print}' | awk -F'|' '{a[$2]=a[$2] " " $1 "=" $3} END {for (k in a) print "    " k ":" a[k]}' >> "$report"

# 2. icoFoam's start alone
say ""
say "== 2. icoFoam -help (the loader and the libraries' constructors, no MPI)"
(
  cd "$case_dir"
  set +eu   # OpenFOAM's bashrc reads unset variables
  source /usr/share/openfoam/etc/bashrc >/dev/null 2>&1
  set -eu
  for mode in plain pass; do
    pre=; [ $mode = pass ] && pre=$lib
    LD_PRELOAD=$pre perf stat -r 20 -x, -e page-faults -o "$work/help-$mode.perf" icoFoam -help > /dev/null
    LD_PRELOAD=$pre valgrind -q --tool=callgrind --callgrind-out-file="$work/cg-help-$mode.out" icoFoam -help > /dev/null
    LD_PRELOAD=$pre LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/bindings-$mode" icoFoam -help > /dev/null
  done
)
for mode in plain pass; do say "  $mode: $(grep page-faults "$work/help-$mode.perf" | cut -d, -f1) page faults"; done
objects "$work/cg-help-plain.out" "$work/cg-help-pass.out" --functions 6 | grep -E '^(ld-linux|libc\.so|libcolltune|total)|^  ' | sed 's/^/  /' >> "$report"

# 3. OpenFOAM rank 0, whole process
say ""
say "== 3. OpenFOAM rank 0, $steps steps, whole process (callgrind --collect-atstart=yes; the libraries' polling follows rank 1's timing)"
cat > "$case_dir/cgrank.sh" <<'EOF'
#!/bin/bash
source /usr/share/openfoam/etc/bashrc 2>/dev/null
if [ -n "$PRE" ]; then export LD_PRELOAD=$PRE; fi
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec valgrind -q --tool=callgrind --collect-atstart=yes --callgrind-out-file="$CGOUT" icoFoam -parallel; fi
exec icoFoam -parallel
EOF
chmod +x "$case_dir/cgrank.sh"
for mode in plain pass; do
  pre=; [ $mode = pass ] && pre=$lib
  (cd "$case_dir" && rm -rf processor*/[1-9]* processor*/0.* &&
   mpirun.openmpi --allow-run-as-root -np 2 --bind-to core -x OMP_NUM_THREADS=1 -x PRE=$pre \
     -x CGOUT="$work/cg-of-$mode.out" ./cgrank.sh > "$work/log-of-$mode.txt" 2>&1)
  say "  $mode: $(grep 'continuity errors' "$work/log-of-$mode.txt" | tail -1)"
done
objects "$work/cg-of-plain.out" "$work/cg-of-pass.out" --functions 0 \
  --match '^(do_lookup_x|MPI_Init|MPI_Finalize|ompi_coll_libnbc_progress|opal_progress|MPI_(Allreduce|Isend|Irecv|Waitall|Recv|Send|Wait))$' \
  | grep -E '^(ld-linux|libcolltune|total)|^  ' | sed 's/^/  /' >> "$report"

# 4. the tiny program
say ""
say "== 4. fixed_allreduce.c, $n MPI_Allreduce of one double, 2 ranks"
mpicc.openmpi -O2 -g -o "$work/fixed_allreduce" "$here/fixed_allreduce.c"
cat > "$work/rank.sh" <<'EOF'
#!/bin/bash
r=$OMPI_COMM_WORLD_RANK
case "$TOOL" in
  perf) exec perf stat -x, -e page-faults -o "$OUT/perf-$MODE-$r.txt" "$@" ;;
  strace) exec strace -f -c -o "$OUT/strace-$MODE-$r.txt" "$@" ;;
  callgrind) if [ "$r" = 0 ]; then exec valgrind -q --tool=callgrind --collect-atstart=yes --callgrind-out-file="$OUT/cg-tiny-$MODE.out" "$@"; fi; exec "$@" ;;
esac
EOF
chmod +x "$work/rank.sh"
for tool in perf strace callgrind; do
  for mode in plain pass; do
    env=(); [ $mode = pass ] && env=(-x "LD_PRELOAD=$lib")
    mpirun.openmpi --allow-run-as-root -np 2 --bind-to core -x TOOL=$tool -x MODE=$mode -x OUT="$work" "${env[@]}" \
      "$work/rank.sh" "$work/fixed_allreduce" "$n" > "$work/log-tiny-$tool-$mode.txt" 2>&1
    grep -q '^result ' "$work/log-tiny-$tool-$mode.txt"
  done
done
for mode in plain pass; do
  for r in 0 1; do
    faults=$(grep page-faults "$work/perf-$mode-$r.txt" | cut -d, -f1)
    say "  $mode rank $r: $faults page faults; system calls (polling ones aside): $(awk 'NR > 2 && $1 ~ /^[0-9.]+$/ && $NF !~ /^(total|poll|clock_nanosleep|epoll_wait|futex|sched_yield)$/ {s += $4} END {print s}' "$work/strace-$mode-$r.txt")"
  done
done
objects "$work/cg-tiny-plain.out" "$work/cg-tiny-pass.out" --functions 0 \
  --match '^(do_lookup_x|MPI_Init|MPI_Finalize|ompi_coll_libnbc_progress|opal_progress|MPI_Allreduce)$' \
  | grep -E '^(ld-linux|libcolltune|mca_coll_libnbc|libopen-pal|total)|^  ' | sed 's/^/  /' >> "$report"

# 5. the library
say ""
say "== 5. $lib"
say "  $(size "$lib" | tail -1 | awk '{print "text " $1 ", data " $2 ", bss " $3}'), file $(stat -c %s "$lib") bytes"
say "  exported symbols: $(readelf --dyn-syms -W "$lib" | awk '$5 == "GLOBAL" && $7 != "UND"' | wc -l) ($(readelf --dyn-syms -W "$lib" | awk '$5 == "GLOBAL" && $7 != "UND" && $8 !~ /^(MPI_|mpi_)/' | wc -l) not MPI_*/mpi_*)"
say "  relocations: $(readelf -r -W "$lib" | awk '$3 ~ /^R_X86_64/ {print $3}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')"
say "  needed: $(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
sed -n 's/.*symbol `\([^'"'"']*\)'"'"'.*/\1/p' "$work"/bindings-plain.* > "$work/names.txt"
python3 "$here/bloom.py" "$lib" "$work/names.txt" | sed 's/^/  /' >> "$report"
cat "$report"
