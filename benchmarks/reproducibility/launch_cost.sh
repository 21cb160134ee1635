#!/bin/bash
# What one launch of 4 ranks of the embedded Open MPI costs, and which part could be cut (issue 36).
#
#     bash benchmarks/reproducibility/launch_cost.sh [ROUNDS]      # from the repository, after make setup
#
# Interleaved, ROUNDS times (default 6): `mpirun -n 4 /bin/true` (the launcher alone), a program
# that only calls MPI_Init and MPI_Finalize with colltune's start-up settings before session 8 of
# issue 36 (mtl=^ofi btl=^ofi) and since (pml=^ucx as well, measure/startup.py), the same with
# UCX's and TCP's components left out too, and with only self/sm and ob1; then the check's settings
# of session 11 (those, the ranks yielding: 4 ranks on 2 cores) and of session 12 (check_s11 plus
# PMIX_MCA_gds=hash, UCX_MEM_MMAP_HOOK_MODE=none, each alone and both: startup.FAST_START; and both
# with TCP_NODELAY on the rank's PMIx socket before MPI_Finalize, as colltune-bench does). Prints the mean wall and CPU seconds (user + sys of mpirun and its ranks) of
# each; prints /proc/loadavg before and after: wall times on a shared machine follow its load.
# Session 9 timed a launch into one persistent PRRTE DVM through colltune's own launch tool too
# (ct_dvmrun): slower in a check, removed in session 10 (README, "Session 10").
# Then tries Open MPI's own `mpirun --dvm` and says whether it runs (it segfaults in 5.0.11).
set -u
ROUNDS=${1:-6}
V=$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin
TMP=$(mktemp -d)
trap 'kill "$DVM" 2>/dev/null; rm -rf "$TMP"' EXIT
DVM=
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PRTE_ALLOW_RUN_AS_ROOT=1 PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$TMP/hello.c"
"$V/mpicc" -o "$TMP/hello" "$TMP/hello.c"
# the same, turning Nagle's algorithm off on the process's TCP sockets (its PMIx connection) before
# MPI_Finalize, as colltune-bench does since session 12 (native/bench/bench_main.c ct_tcp_nodelay_all)
cat > "$TMP/nodelay.c" <<'EOC'
#include <mpi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
int main(int c, char **v) {
    MPI_Init(&c, &v);
    for (int fd = 0, one = 1; fd < 1024; fd++) {
        int type = 0; socklen_t len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM)
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    MPI_Finalize();
    return 0;
}
EOC
"$V/mpicc" -o "$TMP/nodelay" "$TMP/nodelay.c"
declare -A cfg=(
  [launcher_only]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi|/bin/true"
  [init_finalize]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi|$TMP/hello"
  [without_ucx_pml]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi OMPI_MCA_pml=^ucx|$TMP/hello"
  [without_ucx_tcp]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_osc=^ucx|$TMP/hello"
  [self_sm_ob1]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=self,sm OMPI_MCA_pml=ob1 OMPI_MCA_osc=sm,rdma|$TMP/hello"
  [check_s11]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1|$TMP/hello"
  [s12_gds_hash]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_gds=hash|$TMP/hello"
  [s12_no_ucm_hooks]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1 UCX_MEM_MMAP_HOOK_MODE=none|$TMP/hello"
  [s12_fast_start]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_gds=hash UCX_MEM_MMAP_HOOK_MODE=none|$TMP/hello"
  [s12_fast_start_nodelay]="OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1 PMIX_MCA_gds=hash UCX_MEM_MMAP_HOOK_MODE=none|$TMP/nodelay"
)
echo "loadavg before: $(cat /proc/loadavg)"
for _ in $(seq "$ROUNDS"); do
  for k in $(printf '%s\n' "${!cfg[@]}" | sort); do
    env ${cfg[$k]%%|*} /usr/bin/time -f "$k %e %U %S" "$V/mpirun" -n 4 --oversubscribe --bind-to none "${cfg[$k]##*|}" 2>&1 | tail -1
  done
done > "$TMP/times"
echo "loadavg after:  $(cat /proc/loadavg)"
awk '{w[$1]+=$2; c[$1]+=$3+$4; n[$1]++} END {for (k in w) printf "%-16s wall %.3f s  cpu %.3f s  (%d launches)\n", k, w[k]/n[k], c[k]/n[k], n[k]}' "$TMP/times" | sort
(OPAL_PREFIX=$V/.. PRTE_PREFIX=$V/.. PMIX_PREFIX=$V/.. "$V/prte" --report-uri "$TMP/uri" --no-ready-msg > "$TMP/prte.log" 2>&1 & echo $! > "$TMP/pid")
sleep 2; DVM=$(cat "$TMP/pid")
OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi "$V/mpirun" --dvm "pid:$DVM" -n 4 --oversubscribe --bind-to none "$TMP/hello" > /dev/null 2>&1
echo "a launch into a persistent DVM (prte, then mpirun --dvm pid:N): exit $?"
