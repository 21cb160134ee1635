#!/bin/bash
# Page faults of one OpenFOAM rank, plain / libcolltune preloaded (pass) / profiled, by the
# function that took each (perf record -e page-faults -c 1: every fault, exact, whatever the
# load). On this virtual machine a fault costs 1-8 us (a read of an untouched page maps the zero
# page, a first write zeroes one), so a fixed count of them is a fixed cost of the run.
#
#   bash benchmarks/advise/openfoam.sh OUT prepare 100
#   bash benchmarks/advise/openfoam_faults.sh OUT LIBCOLLTUNE [TAG]   # -> OUT/faults-TAG.txt
set -euo pipefail
out=$(realpath "$1"); lib=$2; tag=${3:-run}
cd "$out/cavity"
cat > faults-rank.sh <<'EOF2'
#!/bin/bash
source /usr/share/openfoam/etc/bashrc 2>/dev/null
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec perf record -q -e page-faults -c 1 -o "$PF_OUT" icoFoam -parallel; fi
exec icoFoam -parallel
EOF2
chmod +x faults-rank.sh
report="$out/faults-$tag.txt"
: > "$report"
for mode in plain pass profiled; do
  rm -rf prof processor*/[1-9]* processor*/0.*
  env=()
  [ "$mode" != plain ] && env+=(-x "LD_PRELOAD=$lib")
  [ "$mode" = profiled ] && env+=(-x "COLLTUNE_PROFILE_RUN=$PWD/prof")
  mpirun.openmpi --allow-run-as-root -np 2 --bind-to core -x "PF_OUT=$out/faults-$tag-$mode.data" "${env[@]}" ./faults-rank.sh > /dev/null
  total=$(perf report -i "$out/faults-$tag-$mode.data" --stdio --sort dso 2>/dev/null | sed -n 's/^# Event count (approx.): //p')
  echo "== $mode: $total page faults, rank 0; libcolltune's and libc's memset by function:" >> "$report"
  perf report -i "$out/faults-$tag-$mode.data" --stdio --sort dso,sym -n 2>/dev/null \
    | grep -E "libcolltune|memset_avx|_Unwind_Find_FDE" | awk '{print "  " $2, $3, $5}' | head -12 >> "$report"
done
cat "$report"
