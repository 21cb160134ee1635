#!/usr/bin/env python3
"""A call's cost in wall time, measured in one process (issue 34, seventeenth round).

Builds callcost.c (the program and its layer library) against Debian's Open MPI and runs it on 2
ranks bound to the 2 cores, in one of three modes:

  plain     no preload: V's MPI_* calls are the library's (the instrument's control: 0 a call)
  pass      libcolltune preloaded, profiling off: V's calls pass through the interposer
  profiled  preloaded with COLLTUNE_PROFILE_RUN=dir: V's calls take the profiled path

Each run is cut in rounds of four short phases (~200 us each): two V phases (the layer calls
MPI_* for the kinds of --mask) and two B phases (it calls PMPI_*, bypassing the interposer), in
one of the six orders of VVBB drawn at random each round. A round's (V1 + V2 - B1 - B2) / 2
divided by a V phase's intercepted calls is a call's cost in ns. Kept: the rounds in which
neither rank was switched out (getrusage around each round: under load most phases with a
context switch are longer by the other process's time slice). Reported over them, rank 0's wall
time (the ranks are synchronous: rank 1's agrees to a few ns): the six orders' 10%-trimmed
means averaged ("cost", 95% interval; a phase's place in its round matters by a few us), the
trimmed mean, the mean (t interval) and the median (order statistics). The instrument's zero is
a run of its own: --mode plain (V's MPI_* calls go to the library's own, the same code) or
--mask 0 (V = B).

    callcost.py OUT --lib LIB --mode profiled --gap 7000 --evict 1 --mask 15
    callcost.py OUT --lib LIB --sweep            # the round's table: zeros, pass, profiled
    callcost.py OUT --lib LIB --sweep --plan profiled --env COLLTUNE_PROFILE_RUN_SAMPLE=0 --tag s0-
    callcost.py OUT --read [--tsv FILE]          # the table again from OUT/results.jsonl

LIB: a libcolltune built for Debian's Open MPI (python -c "from colltune.mpi import build,
libraries as m; print(build.ensure_built(m.resolve('/usr/bin/mpicc.openmpi')).libcolltune)").
--env K=V adds an environment variable to the run (e.g. COLLTUNE_PROFILE_RUN_SAMPLE=0).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = {1: "Allreduce", 2: "Isend", 4: "Irecv", 8: "Waitall"}
# Student's t, two-sided 95%, by degrees of freedom (>= 120: 1.96 is close enough for these n)
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 8: 2.31, 10: 2.23, 15: 2.13,
       20: 2.09, 30: 2.04, 60: 2.00, 120: 1.98}


def t95(df: int) -> float:
    best = 1.96
    for k in sorted(T95, reverse=True):
        if df <= k:
            best = T95[k]
    return best


def build(out: Path) -> Path:
    """The layer and the program into OUT (-O2, as Debian builds OpenFOAM)."""
    out.mkdir(parents=True, exist_ok=True)
    src = HERE / "callcost.c"
    subprocess.run(["mpicc.openmpi", "-O2", "-g", "-fPIC", "-shared", "-DCC_LAYER", "-o",
                    str(out / "libcallcost_layer.so"), str(src)], check=True)
    subprocess.run(["mpicc.openmpi", "-O2", "-g", "-o", str(out / "callcost"), str(src),
                    f"-L{out}", "-lcallcost_layer", f"-Wl,-rpath,{out}"], check=True)
    return out / "callcost"


def mean_ci(xs: list[float]) -> tuple[float, float, float]:
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan, math.nan
    h = t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def median_ci(xs: list[float]) -> tuple[float, float, float]:
    """The median and its distribution-free 95% interval (the order statistics n/2 -+ 0.98 sqrt(n))."""
    s = sorted(xs)
    n = len(s)
    h = 0.98 * math.sqrt(n)
    lo, hi = max(0, int(math.floor(n / 2 - h))), min(n - 1, int(math.ceil(n / 2 + h)))
    return statistics.median(s), s[lo], s[hi]


Round = tuple[int, int, int, int, int, int]   # V1, V2, B1, B2 wall ns; block's switches; order


def read_phases(path: Path) -> tuple[dict[str, float], dict[int, Round]]:
    head: dict[str, float] = {}
    rounds: dict[int, Round] = {}
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            f = line[1:].split()
            head = {f[i]: float(f[i + 1]) for i in range(0, len(f), 2)}
        elif line and not line.startswith("round"):
            r, o, v1, v2, b1, b2, sw = line.split("\t")
            rounds[int(r)] = (int(v1), int(v2), int(b1), int(b2), int(sw), int(o))
    return head, rounds


def trimmed_ci(xs: list[float], g: float = 0.1) -> tuple[float, float, float]:
    """The g-trimmed mean and its 95% interval (Tukey-McLaughlin: the winsorized variance)."""
    s = sorted(xs)
    n = len(s)
    k = int(g * n)
    core = s[k:n - k]
    tm = statistics.fmean(core)
    w = [s[k]] * k + core + [s[n - k - 1]] * k
    se = statistics.stdev(w) / ((1 - 2 * k / n) * math.sqrt(n))
    h = t95(n - 2 * k - 1) * se
    return tm, tm - h, tm + h


def estimates(xs: list[float]) -> dict[str, tuple[float, float, float]]:
    return {"mean": mean_ci(xs), "trimmed": trimmed_ci(xs), "median": median_ci(xs)}


def stratified(by_order: dict[int, list[float]]) -> tuple[float, float, float]:
    """The six orders' trimmed means, averaged with equal weights (a phase's place in its round
    matters: the first after getrusage is slower by ~1-3 us; the orders are drawn at random, so
    their counts differ, and an unweighted mean keeps a part of that place's effect), and its 95%
    interval from the orders' (independent) standard errors."""
    parts = [trimmed_ci(xs) for xs in by_order.values() if len(xs) >= 10]
    m = statistics.fmean(p[0] for p in parts)
    se = math.sqrt(sum(((p[2] - p[0]) / 1.96) ** 2 for p in parts)) / len(parts)
    return m, m - 1.96 * se, m + 1.96 * se


def analyse(prefix: Path) -> dict[str, object]:
    """A run's figures from its phase files (rank 0's and rank 1's), over the clean rounds: those
    of a block in which neither rank was switched out (world; self: the rank itself), whose
    phases are longer by the other process's time slice, ms. A round's cost a call:
    (V1 + V2 - B1 - B2) / 2 over V's intercepted calls (under no difference, symmetric: the
    trimmed mean and the median estimate the same as the mean). The instrument's zero is a run
    of its own: --mode plain (V's MPI_* calls are the library's own) or --mask 0 (V = B)."""
    res: dict[str, object] = {}
    ranks = [read_phases(Path(f"{prefix}.{rank}")) for rank in (0, 1)]
    head = ranks[0][0]
    common = sorted(set(ranks[0][1]) & set(ranks[1][1]))

    def clean_in(rs: list[dict[int, Round]]) -> list[int]:
        return [r for r in common if all(rounds[r][4] == 0 for rounds in rs)]

    self = bool(head.get("self", 0))
    via = head["via_calls"] or head["calls"]   # mask 0: per call of the phase, as a scale
    for rank, (_, rounds) in enumerate(ranks):
        clean = clean_in([rounds] if self else [ranks[0][1], ranks[1][1]])
        d = [(rounds[r][0] + rounds[r][1] - rounds[r][2] - rounds[r][3]) / 2 / via for r in clean]
        by_order: dict[int, list[float]] = {}
        for r, x in zip(clean, d):
            by_order.setdefault(rounds[r][5], []).append(x)
        res[f"r{rank}_wall"] = {"cost": {**estimates(d), "stratified": stratified(by_order)},
                                "rounds": len(clean)}
    clean = clean_in([ranks[0][1]] if self else [ranks[0][1], ranks[1][1]])
    b = [(ranks[0][1][r][2] + ranks[0][1][r][3]) / 2 for r in clean]
    res["rounds"] = len(clean)
    res["rounds_all"] = len(common)
    res["phase_us"] = statistics.median(b) / 1e3
    res["ns_per_call_bypass"] = statistics.median(b) / head["calls"]
    res["head"] = head
    return res


def run(out: Path, prog: Path, lib: str, mode: str, gap: float, evict: int, mask: int,
        rounds: int, warm: int, phase_us: float, comm: str, env: list[str], tag: str) -> dict[str, object]:
    name = f"{tag}{mode}-g{int(gap)}-e{evict}-m{mask}-{comm}"
    prefix = out / "phases" / name
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prof = out / "prof" / name
    shutil.rmtree(prof, ignore_errors=True)
    extra: list[str] = []
    if mode in ("pass", "profiled"):
        extra += ["-x", f"LD_PRELOAD={lib}"]
    if mode == "profiled":
        extra += ["-x", f"COLLTUNE_PROFILE_RUN={prof}"]
    for kv in env:
        extra += ["-x", kv]
    argv = ["mpirun.openmpi", "--allow-run-as-root", "-np", "2", "--bind-to", "core", *extra,
            str(prog), str(prefix), str(gap), str(evict), str(mask), str(rounds), str(warm),
            str(phase_us), comm]
    load = float(Path("/proc/loadavg").read_text().split()[0])
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or "errors 0" not in proc.stdout:
        raise RuntimeError(f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    if mode == "profiled" and not (prof / "rank-0").exists():
        raise RuntimeError(f"{name}: no {prof}/rank-0")
    res = analyse(prefix)
    res.update(name=name, mode=mode, gap_ns=gap, evict=evict, mask=mask, comm=comm, env=env, load1=load,
               seconds=round(time.time() - t0, 1), when=time.strftime("%H:%M:%S", time.gmtime(t0)))
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(res) + "\n")
    return res


def fmt(t: tuple[float, float, float]) -> str:
    return f"{t[0]:7.1f} ({t[1]:6.1f} .. {t[2]:6.1f})"


def show(res: dict[str, object], clock: str = "r0_wall") -> str:
    r = res[clock]
    assert isinstance(r, dict)
    kinds = "+".join(v for k, v in KINDS.items() if int(res["mask"]) & k) or "none"
    env = " ".join(res.get("env", [])) or "-"
    return (f"{res['mode']:8} {res.get('comm', 'world'):5} {clock} gap {int(res['gap_ns']):5} evict {res['evict']} {kinds:26} {env:30} "
            f"n {res['rounds']:6}/{res['rounds_all']:<6} | cost {fmt(r['cost']['stratified'])}"
            f" trimmed {fmt(r['cost']['trimmed'])}"
            f" mean {fmt(r['cost']['mean'])} median {fmt(r['cost']['median'])}"
            f" | {res['ns_per_call_bypass']:6.0f} ns/call"
            f" load {res['load1']}")


def write_tsv(path: Path, rows: list[dict[str, object]]) -> None:
    """One line a run (appended): its settings and rank 0's and rank 1's figures, ns a call."""
    cols = ["name", "when", "mode", "comm", "gap_ns", "evict", "mask", "env", "load1", "rounds",
            "rounds_all", "ns_per_call_bypass"]
    new = not path.exists()
    with open(path, "a") as f:
        if new:
            f.write("\t".join(cols + [f"r{k}_{e}{x}" for k in (0, 1)
                                      for e in ("stratified", "trimmed", "mean", "median")
                                      for x in ("", "_lo", "_hi")]) + "\n")
        for res in rows:
            vals = [" ".join(v) if isinstance(v := res.get(c, ""), list) else str(v) for c in cols]
            for k in (0, 1):
                est = res[f"r{k}_wall"]["cost"]   # type: ignore[index]
                for e in ("stratified", "trimmed", "mean", "median"):
                    vals += [f"{x:.1f}" for x in est[e]]
            f.write("\t".join(vals) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--lib", default="")
    ap.add_argument("--mode", choices=("plain", "pass", "profiled"), default="profiled")
    ap.add_argument("--gap", type=float, default=7000, help="ns of work before each call")
    ap.add_argument("--evict", type=int, default=1)
    ap.add_argument("--mask", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=6000)
    ap.add_argument("--warm", type=int, default=300)
    ap.add_argument("--phase-us", type=float, default=200)
    ap.add_argument("--comm", choices=("world", "self"), default="world")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--tag", default="")
    ap.add_argument("--plan", choices=("all", "profiled"), default="all",
                    help="with --sweep: every run, or the profiled ones but the zero")
    ap.add_argument("--sweep", action="store_true",
                    help="the round's table: controls, then pass and profiled over gaps, eviction, kinds")
    ap.add_argument("--read", action="store_true")
    ap.add_argument("--again", action="store_true", help="with --read: analyse the phase files again")
    ap.add_argument("--clock", default="r0_wall")
    ap.add_argument("--tsv", default="", help="with --read: append the runs to this TSV")
    args = ap.parse_args()
    out = args.out.resolve()
    if args.read:
        rows = []
        for line in (out / "results.jsonl").read_text().splitlines():
            res = json.loads(line)
            if args.again:   # the figures again from the phase files (a new estimator)
                res.update(analyse(out / "phases" / res["name"]))
            print(show(res, args.clock))
            rows.append(res)
        if args.tsv:
            write_tsv(Path(args.tsv), rows)
        return 0
    prog = build(out)
    if args.mode != "plain" and not args.lib:
        ap.error("--lib: a libcolltune for Debian's Open MPI")
    lib = os.path.realpath(args.lib) if args.lib else ""
    if not args.sweep:
        res = run(out, prog, lib, args.mode, args.gap, args.evict, args.mask, args.rounds,
                  args.warm, args.phase_us, args.comm, args.env, args.tag)
        print(show(res, args.clock), flush=True)
        return 0
    # (profiled runs: give --env COLLTUNE_PROFILE_RUN_SAMPLE=0 for the straight path alone; with
    # sampling, the period stays at 16 here, under budget, where OpenFOAM's widened: a sampled
    # call's synchronisation, ~2.3 us, is then ~140 ns an Allreduce)
    plan: list[tuple[str, float, int, int]] = [
        ("plain", 7000, 1, 15), ("profiled", 7000, 1, 0),          # the instrument's zeros
        ("pass", 7000, 1, 15), ("pass", 0, 1, 15),
        *[("profiled", gap, 1, 15) for gap in (0, 2000, 7000, 20000)],
        ("profiled", 7000, 0, 15), ("profiled", 0, 0, 15),
        *[("profiled", 7000, 1, mask) for mask in KINDS]]
    if args.plan == "profiled":
        plan = [p for p in plan if p[0] == "profiled" and p[3] != 0]
    for mode, gap, evict, mask in plan:
        res = run(out, prog, lib, mode, gap, evict, mask, args.rounds, args.warm, args.phase_us,
                  args.comm, args.env, args.tag)
        print(show(res, args.clock), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
