#!/bin/bash
# Does FAST_START (measure/startup.py: no UCX memory hooks, PMIx gds=hash) change what a launch
# measures? (issue 36, session 12)
#
#     bash benchmarks/reproducibility/fast_start_effect.sh BENCH [PAIRS]    # BENCH: colltune-bench of `colltune mpi build`
#
# PAIRS times (default 30), alternating: one 4-rank launch of colltune-bench measuring MPI_Allgather
# 1 KiB and its mock-up allgather_as_alltoall (the comparison of the quick check closest to the
# tolerance) with session 11's settings, then one with FAST_START added. Per launch: the ratio of
# the two variants' median times (the `max` metric). Prints, per setting, the geometric mean and
# the median of the ratios, the sd of their logs and the default's median time.
set -u
BENCH=${1:?usage: fast_start_effect.sh BENCH [PAIRS]}
PAIRS=${2:-30}
V=$(cd "$(dirname "$0")/../.." && pwd)/.venv/bin
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mtl=^ofi OMPI_MCA_btl=^ofi,uct,tcp OMPI_MCA_pml=^ucx OMPI_MCA_mpi_yield_when_idle=1
printf 'allgather 1024 - - - default,allgather_as_alltoall\n' > "$TMP/jobs.txt"
echo "loadavg before: $(cat /proc/loadavg)"
for i in $(seq "$PAIRS"); do
  for cfg in s11 fast_start; do
    E=""; [ "$cfg" = fast_start ] && E="PMIX_MCA_gds=hash UCX_MEM_MMAP_HOOK_MODE=none"
    env $E "$V/mpirun" -n 4 --oversubscribe --bind-to none "$BENCH" run "$TMP/jobs.txt" --out "$TMP/out" \
      --expect-procs 4 --seed $((1000 + i)) --stop rse --rse 0.025 --min-reps 10 --max-reps 40 --warmup 2 \
      --time-budget 0.1 > /dev/null 2>&1 || { echo "launch failed ($cfg)"; exit 1; }
    # R,job,variant,repetition,...,local time,max time,...: the variants' medians of the max time
    awk -F, -v c=$cfg '/^R,/ {t[$3] = t[$3] " " $8} END {print c, t[0], "|", t[1]}' "$TMP/out" >> "$TMP/rows"
  done
done
echo "loadavg after:  $(cat /proc/loadavg)"
"$V/python" - "$TMP/rows" <<'PY'
import math, statistics as s, sys
rows = {}
for line in open(sys.argv[1]):
    cfg, rest = line.split(maxsplit=1)
    default, mockup = ([float(x) for x in part.split()] for part in rest.split("|"))
    rows.setdefault(cfg, []).append((s.median(mockup) / s.median(default), s.median(default)))
for cfg, v in rows.items():
    logs = [math.log(r) for r, _ in v]
    print(f"{cfg:10s} launches {len(v)}  mock-up/default geo-mean {math.exp(s.mean(logs)):.4f} "
          f"median {s.median(r for r, _ in v):.4f}  sd(log) {s.stdev(logs):.4f}  "
          f"default median {1e6 * s.median(d for _, d in v):.2f} us")
PY
