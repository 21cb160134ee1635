#!/bin/bash
# OpenFOAM (Debian's openfoam, built against Debian's Open MPI 4.1) under `colltune advise`: the
# issue-34 case, a C++ code whose communication goes through its own layer (libPstream.so,
# Foam::reduce), with more point-to-point than collective calls. icoFoam on the lid-driven cavity
# of openfoam-examples (40x40 cells, 2 subdomains, 20 steps; 10 under callgrind).
#
#   bash benchmarks/advise/openfoam.sh OUT             # apt-get installs openfoam openfoam-examples
#   bash benchmarks/advise/openfoam.sh OUT callgrind   # rank 0 under callgrind, profiled
#   bash benchmarks/advise/openfoam.sh OUT callgrind 200   # the same over 200 steps (default 10)
#   bash benchmarks/advise/openfoam.sh OUT time 200 11     # wall time: 11 rounds of plain and
#                                                          # profiled in a random order, 200 steps
#                                                          # (paired_time.py: the verdict on 1%)
#   bash benchmarks/advise/openfoam.sh OUT prepare 100     # only the case (OUT/cavity), for
#                                                          # concurrent_time.py
#   LIB=PATH bash benchmarks/advise/openfoam.sh OUT callgrind 200  # that libcolltune.so, not this tree's
#   CELLS=200 bash benchmarks/advise/openfoam.sh OUT callgrind 20   # a 200x200 mesh instead of
#                   # the issue's 40x40 (800 cells a rank): how the share scales with the case
#
# Writes OUT/advise.txt (the terminal output of colltune advise), OUT/advise/ (its files) and,
# with `callgrind`, OUT/cg.out (rank 0) and OUT/cg-objects.txt (instructions per object).
set -euo pipefail
out=$(realpath -m "$1")
mode=${2:-advise}
repo=$(cd "$(dirname "$0")/../.." && pwd)
command -v icoFoam >/dev/null || apt-get install -y -qq openfoam openfoam-examples
mkdir -p "$out"
rm -rf "$out/cavity"
cp -r /usr/share/doc/openfoam-examples/examples/incompressible/icoFoam/cavity/cavity "$out/cavity"
cd "$out/cavity"
cells=${CELLS:-40}
sed -i "s/(20 20 1)/($cells $cells 1)/" system/blockMeshDict
steps=${3:-$([ "$mode" = callgrind ] && echo 10 || echo 20)}
steps_end=$(awk -v n="$steps" 'BEGIN { printf "%g", n * 0.0005 }')
sed -i "s/^endTime .*/endTime         $steps_end;/; s/^deltaT .*/deltaT          0.0005;/; s/^writeInterval .*/writeInterval   100000;/" system/controlDict
cat > system/decomposeParDict <<'EOF'
FoamFile { version 2.0; format ascii; class dictionary; object decomposeParDict; }
numberOfSubdomains 2;
method simple;
coeffs { n (2 1 1); }
simpleCoeffs { n (2 1 1); delta 0.001; }
EOF
bash -c 'source /usr/share/openfoam/etc/bashrc 2>/dev/null; blockMesh > log.blockMesh 2>&1; decomposePar -force > log.decompose 2>&1'
export COLLTUNE_CACHE=${COLLTUNE_CACHE:-$out/cache}
if [ "$mode" = callgrind ]; then
  lib=${LIB:-$("$repo/.venv/bin/python" -c "from colltune.mpi import build, libraries as m; print(build.ensure_built(m.resolve('/usr/bin/mpicc.openmpi')).libcolltune)")}
  cat > cg.sh <<EOF
#!/bin/bash
source /usr/share/openfoam/etc/bashrc 2>/dev/null
export LD_PRELOAD=$lib COLLTUNE_PROFILE_RUN=$out/cavity/prof
if [ "\$OMPI_COMM_WORLD_RANK" = 0 ]; then exec valgrind --tool=callgrind --callgrind-out-file=$out/cg.out icoFoam -parallel; fi
exec icoFoam -parallel
EOF
  chmod +x cg.sh
  mpirun.openmpi --allow-run-as-root -np 2 ./cg.sh > log.cg 2>&1
  callgrind_annotate --inclusive=no --threshold=100 --auto=no "$out/cg.out" | sed -n '1,40p' > "$out/cg-annotate.txt"
  # instructions per object (exclusive, exact) and the call path's share
  "$repo/.venv/bin/python" "$repo/benchmarks/advise/overhead.py" --read "$out/cg.out" > "$out/cg-objects.txt"
elif [ "$mode" = prepare ]; then
  :   # the case only (concurrent_time.py runs it)
elif [ "$mode" = time ]; then
  # Wall time, plain against profiled: ROUNDS rounds (default 11), each one plain run (no preload)
  # and one profiled run (LD_PRELOAD + COLLTUNE_PROFILE_RUN, chains on) in a random order; the
  # launcher's wall time per run into OUT/time.tsv, and each run's last continuity line, which
  # must be the same in every run (the profiling never changes results).
  rounds=${4:-11}
  lib=${LIB:-$("$repo/.venv/bin/python" -c "from colltune.mpi import build, libraries as m; print(build.ensure_built(m.resolve('/usr/bin/mpicc.openmpi')).libcolltune)")}
  # the library reaches icoFoam alone, as RANK_PRELOAD: a bash started with LD_PRELOAD would have
  # Open MPI mapped in each subshell its bashrc forks (README, "twentieth round")
  cat > run.sh <<'EOF2'
#!/bin/bash
source /usr/share/openfoam/etc/bashrc 2>/dev/null
[ -n "${RANK_PRELOAD-}" ] && export LD_PRELOAD=$RANK_PRELOAD
unset RANK_PRELOAD
exec icoFoam -parallel "$@"
EOF2
  chmod +x run.sh
  printf 'round\tmode\twall_s\tload1\tcontinuity\n' > "$out/time.tsv"
  for r in $(seq 1 "$rounds"); do
    for m in $(printf 'plain\nprofiled\n' | shuf); do
      rm -rf "$out/cavity/prof" processor*/[1-9]* processor*/0.*
      load=$(cut -d' ' -f1 /proc/loadavg)
      t0=$(date +%s.%N)
      if [ "$m" = plain ]; then
        mpirun.openmpi --allow-run-as-root -np 2 ./run.sh > log.time 2>&1
      else
        mpirun.openmpi --allow-run-as-root -np 2 -x RANK_PRELOAD="$lib" -x COLLTUNE_PROFILE_RUN="$out/cavity/prof" ./run.sh > log.time 2>&1
      fi
      t1=$(date +%s.%N)
      cont=$(grep 'continuity errors' log.time | tail -1 | tr -s ' ' | tr '\t' ' ')
      printf '%s\t%s\t%.3f\t%s\t%s\n' "$r" "$m" "$(echo "$t1 - $t0" | bc)" "$load" "$cont" >> "$out/time.tsv"
    done
  done
  # the paired statistic: each round's ratio, their median with its distribution-free interval,
  # the verdict against 1% and the rounds that would resolve it (paired_time.py)
  "$repo/.venv/bin/python" "$repo/benchmarks/advise/paired_time.py" "$out/time.tsv" | tee "$out/time.txt"
else
  # OpenFOAM's environment in the launcher's, the ranks icoFoam itself: what a user runs (a rank
  # script would have the preload colltune gives the ranks in its own shell)
  bash -c 'source /usr/share/openfoam/etc/bashrc 2>/dev/null; exec "$@"' bash \
    "$repo/.venv/bin/colltune" advise --db "$out/none.duckdb" --out "$out/advise" \
    -- mpirun.openmpi --allow-run-as-root -np 2 icoFoam -parallel | sed -n '/^colltune advise:/,$p' > "$out/advise.txt"
fi
