#!/bin/bash
# Would a persistent PRRTE DVM start a check's 4 ranks markedly faster than mpirun? (issue 36, session 12)
#
#     bash benchmarks/reproducibility/dvm_cost.sh TOOL [ROUNDS]     # from the repository, after make setup
#
# TOOL: session 9's PMIx launch tool, `ct_dvmrun URI NPROCS [-x KEY=VALUE]... -- PROGRAM`, removed in
# session 10 (source: `git show 8d42a1c^:native/launch/ct_dvmrun.c`, built against the wheel's
# libpmix.so.2 with Debian's libpmix-dev headers). Open MPI 5.0.11's own `prterun --dvm` / `mpirun --dvm`
# segfault on an existing DVM (prrte issue #2364; launch_cost.sh shows it) and the wheel has no `prun`.
# Starts one `prte`, then ROUNDS times (default 12), alternating: `mpirun -n 4` and a launch into the
# DVM of the same MPI_Init + MPI_Finalize program, both with the check's settings of session 12
# (measure/startup.py: LEAVE_OUT_UNUSED + FAST_START, the ranks yielding). Prints the median wall of each.
# The DVM is stopped on exit.
set -u
TOOL=${1:?usage: dvm_cost.sh TOOL [ROUNDS]}
ROUNDS=${2:-12}
V=$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin
TMP=$(mktemp -d)
P=
trap '[ -n "$P" ] && kill "$P" 2>/dev/null; rm -rf "$TMP"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PRTE_ALLOW_RUN_AS_ROOT=1 PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$TMP/hello.c"
"$V/mpicc" -o "$TMP/hello" "$TMP/hello.c"
S="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_gds=hash UCX_MEM_MMAP_HOOK_MODE=none"
(env $S OPAL_PREFIX="$V/.." PRTE_PREFIX="$V/.." PMIX_PREFIX="$V/.." "$V/prte" --report-uri "$TMP/uri" --no-ready-msg \
  > "$TMP/prte.log" 2>&1 & echo $! > "$TMP/pid")
for _ in $(seq 100); do [ -s "$TMP/uri" ] && break; sleep 0.05; done
P=$(cat "$TMP/pid"); URI=$(head -1 "$TMP/uri")
X=(); for kv in $S; do X+=(-x "$kv"); done
echo "loadavg before: $(cat /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do
  env $S /usr/bin/time -f "mpirun %e" "$V/mpirun" -n 4 --oversubscribe --bind-to none "$TMP/hello" 2>&1 | tail -1
  /usr/bin/time -f "dvm %e" "$TOOL" "$URI" 4 "${X[@]}" -- "$TMP/hello" 2>&1 | tail -1
done > "$TMP/times"
echo "loadavg after:  $(cat /proc/loadavg)"
sort "$TMP/times" | awk '{v[$1]=v[$1] " " $2; n[$1]++} END {for (k in v) print k, n[k], v[k]}' | while read -r k n vals; do
  printf '%-7s median wall %s s  (%s launches)\n' "$k" "$(printf '%s\n' $vals | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')" "$n"
done
