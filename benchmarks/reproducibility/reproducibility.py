"""Do independent quick checks reach the same verdicts? (issue 36)

    python benchmarks/reproducibility/reproducibility.py --runs 10 --db /tmp/repro.duckdb --tag quiet
    python benchmarks/reproducibility/reproducibility.py --runs 10 --db /tmp/repro-load.duckdb --tag load2 --busy
    python benchmarks/reproducibility/reproducibility.py --db /tmp/repro.duckdb --tag quiet --reuse  # re-analyse
    python benchmarks/reproducibility/reproducibility.py --db /tmp/repro.duckdb --tag quiet --reuse --rejudge separate
    python benchmarks/reproducibility/reproducibility.py --db /tmp/repro.duckdb --tag quiet --reuse --keep-rounds 8,8
    python benchmarks/reproducibility/reproducibility.py --db /tmp/repro.duckdb --tag quiet --reuse --test paired-t
    python benchmarks/reproducibility/reproducibility.py --runs 10 --db /tmp/repro-m0.duckdb --tag quiet_m0 --margin 0
    python benchmarks/reproducibility/reproducibility.py --db /tmp/repro.duckdb --tag quiet --reuse --margin 0

Each run is an independent `colltune check --preset quick -n 4` (own launches, own seed), stored as
its own run in one database; `--busy` keeps one other program busy on one core while the runs
measure (the issue's "load ~2": a spinning process next to the check). Every run records
/proc/loadavg before and after it: on a shared machine the load is part of the result.

Per pair of runs: the overlap of the violation sets, |A and B| / |A or B| (a violation in one run
that the other left undecided counts against it; two empty sets: 1), and the decided flips
(violation in one, no violation in the other; with a margin (session 13) also "no practical
violation" in the other: a violation set holds the violations the check reports, those beyond the
tolerance with its margin, and a comparison decided below that widened boundary in one run and a
violation in another is a decided flip). Per run: the share of guideline comparisons left
undecided or untested, and the wall time. Targets (issue 36): mean overlap >= 95%, worst pair
>= 90%, 0 decided flips, undecided <= 5%, median wall <= 10 s. Comparisons that differ between
runs are listed with their verdict in each run and, where undecided, the check's reason. Writes
results_<tag>.json next to this script. A check that fails ends the measuring; the runs before it
are analysed. A run stopped before its check stored verdicts (killed while it judged: its run is
`complete`, its verdicts absent) is left out with a note naming it.

Offline, `--reuse` judges the stored runs again: `--rejudge RULE` with another decision rule,
`--keep-rounds N1,N2` as if adaptive round k had measured only its first Nk launches (the looks'
alpha planned for R, N1, N2 launches; the rounds' jobs stay those the run chose).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd

from colltune.verify import check, decide, stats

HERE = Path(__file__).resolve().parent
COLLTUNE = str(Path(sys.executable).parent / "colltune")
TARGETS = {"overlap_mean": 0.95, "overlap_min": 0.90, "flips": 0, "undecided_max": 0.05, "wall_median_s": 10.0}


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def measure(db: Path, runs: int, first_seed: int, busy: bool, extra: list[str],
            until: float | None = None, busy_core: int | None = None) -> list[dict[str, object]]:
    """`runs` checks, none started after `until` (epoch seconds: the end of a quiet window);
    `busy`: one program kept busy meanwhile, on core `busy_core` only where given."""
    pin = (lambda: os.sched_setaffinity(0, {busy_core})) if busy_core is not None else None
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin) if busy else None
    try:
        if spinner is not None:
            time.sleep(5)  # let the load average see it
        out = []
        for i in range(runs):
            if until is not None and time.time() > until:
                print(f"--until reached: {i} of {runs} runs measured", file=sys.stderr, flush=True)
                break
            before = loadavg()
            t0 = time.monotonic()
            proc = subprocess.run([COLLTUNE, "check", "--preset", "quick", "-n", "4", "--db", str(db), "--quiet",
                                   "--seed", str(first_seed + i), *extra], capture_output=True, text=True, check=False)
            wall = time.monotonic() - t0
            row = {"run": i, "started_utc": time.strftime("%H:%M:%S", time.gmtime(time.time() - wall)),
                   "wall_s": round(wall, 2), "exit": proc.returncode, "loadavg_before": before,
                   "loadavg_after": loadavg()}
            if proc.returncode not in (0, 1, 3):
                # Keep what the runs before it measured: analyse them, with this one's error stated.
                row["error"] = proc.stderr[-3000:]
                out.append(row)
                print(f"run {i} failed (exit {proc.returncode}) after {wall:.1f} s; no further runs measured:\n"
                      f"{proc.stderr[-3000:]}", file=sys.stderr, flush=True)
                break
            out.append(row)
            print(f"run {i}: {wall:.1f} s, exit {proc.returncode}, loadavg {before}", flush=True)
        return out
    finally:
        if spinner is not None:
            spinner.terminate()
            spinner.wait()


def key(r: object) -> str:
    # split rows keep only the smallest violating k per size, which may differ between runs
    ref = f" vs {int(r.ref_bytes)} B" if r.kind == "monotony" else ""  # type: ignore[attr-defined]
    return f"{r.kind} {r.collective} {r.variant} {int(r.msg_bytes)} B{ref}"  # type: ignore[attr-defined]


@dataclasses.dataclass
class _PlannedRun(check.RunData):
    """A stored run whose looks are judged as planned for `plan` launches (--keep-rounds)."""

    plan: list[int] = dataclasses.field(default_factory=list)

    @property
    def planned_launches(self) -> list[int] | None:
        return self.plan


def keep_rounds(run: check.RunData, keep: list[int]) -> check.RunData:
    """`run` as if adaptive round k had measured only its first keep[k-1] launches."""
    drop: set[int] = set()
    for k, n in enumerate(keep, start=1):
        drop |= set(sorted(i for i, r in run.rounds.items() if r == k)[n:])
    fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(check.RunData)}
    fields["measurements"] = run.measurements[~run.measurements["launch_idx"].isin(drop)]
    fields["rounds"] = {i: r for i, r in run.rounds.items() if i not in drop}
    return _PlannedRun(**fields, plan=[run.launches_per_nprocs or 0, *keep])


def analyse(db: Path, ids: list[str], rule: str | None = None, keep: list[int] | None = None,
            test: str | None = None, two_modes: str | None = None,
            variance_prior: float | None = None, margin: float | None = None,
            pairing: str | None = None) -> dict[str, object]:
    """The stored verdicts of each run, or the run judged again with decision rule `rule`, test
    `test` and/or its rounds cut to their first `keep` launches."""
    verdicts: dict[str, dict[str, tuple[str, str]]] = {}
    for rid in ids:
        if rule is None and keep is None and test is None and two_modes is None and variance_prior is None \
                and margin is None and pairing is None:
            v = check.load_verdicts(db, rid)
        else:
            run = check.load_run(db, rid)
            settings = check.CheckSettings(rule=rule or "directional", looks=1 + len(keep) if keep else None,
                                           **({"test": test} if test else {}),
                                           **({"two_modes": two_modes} if two_modes else {}),
                                           **({"variance_prior": variance_prior} if variance_prior is not None else {}),
                                           **({"margin": margin} if margin is not None else {}),
                                           **({"pairing": pairing} if pairing else {}))
            v = check.judge(keep_rounds(run, keep) if keep else run, settings).verdicts
        verdicts[rid] = keyed(v)
    return agreement(verdicts)


def keyed(v: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """A run's guideline verdicts: comparison -> (verdict, note)."""
    v = v[v["kind"].isin(decide.GUIDELINE_KINDS)]
    return {key(r): (str(r.verdict), str(r.note or "")) for r in v.itertuples()}


def agreement(verdicts: dict[str, dict[str, tuple[str, str]]]) -> dict[str, object]:
    """Overlap and flips of every pair of runs, counts per run, the comparisons that differ."""
    ids = list(verdicts)
    pairs = []
    for a, b in itertools.combinations(ids, 2):
        va = {k for k, (x, _) in verdicts[a].items() if x == decide.VIOLATION}
        vb = {k for k, (x, _) in verdicts[b].items() if x == decide.VIOLATION}
        # a decided flip: a violation in one run, decided otherwise ("no violation", or "no
        # practical violation" with a margin) in the other
        na = {k for k, (x, _) in verdicts[a].items() if x in (decide.NO_VIOLATION, decide.NO_PRACTICAL)}
        nb = {k for k, (x, _) in verdicts[b].items() if x in (decide.NO_VIOLATION, decide.NO_PRACTICAL)}
        pairs.append({"a": a, "b": b, "overlap": len(va & vb) / len(va | vb) if va | vb else 1.0,
                      "flips": sorted((va & nb) | (vb & na)), "differ": sorted(va ^ vb)})
    runs = []
    for rid in ids:
        states = [x for x, _ in verdicts[rid].values()]
        runs.append({"run_id": rid, "comparisons": len(states), "violations": states.count(decide.VIOLATION),
                     "no_violation": states.count(decide.NO_VIOLATION),
                     "no_practical": states.count(decide.NO_PRACTICAL),
                     "undecided": states.count(decide.UNDECIDED), "untested": states.count(decide.UNTESTED)})
    differing = sorted({k for p in pairs for k in p["differ"]})
    return {"runs": runs, "pairs": pairs,
            "differing": {k: {rid[-6:]: verdicts[rid].get(k, ("-", ""))[0] for rid in ids} for k in differing},
            "undecided_reasons": {k: sorted({verdicts[rid][k][1] for rid in ids
                                             if verdicts[rid].get(k, ("", ""))[0] == decide.UNDECIDED})
                                  for k in differing}}


def unjudged_runs(ids: list[str], judged: set[str], db: Path) -> list[str]:
    """The runs among `ids` whose launches are stored but whose verdicts are not: a check stopped
    (killed, Ctrl-C) while its rounds measured or while it judged leaves its run `complete` (the
    first R launches are) with no verdicts. They are left out of the agreement, said here, not
    counted as a run that decided nothing."""
    missing = [rid for rid in ids if rid not in judged]
    for rid in missing:
        print(f"note: run {rid} has launches but no verdicts (its check was stopped before it stored them): "
              f"left out; judge what it measured with `colltune check --no-measure --db {db} --run {rid}`",
              file=sys.stderr)
    return missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--db", type=Path, default=Path("/tmp/colltune-repro.duckdb"))
    ap.add_argument("--tag", default="quiet", help="results_<tag>.json")
    ap.add_argument("--busy", action="store_true", help="keep one other program busy on one core meanwhile")
    ap.add_argument("--busy-core", type=int, help="with --busy: keep the busy program on this core only")
    ap.add_argument("--reuse", action="store_true", help="analyse the runs already in --db")
    ap.add_argument("--last", type=int, help="analyse only the last N complete runs of --db [default: the runs "
                                              "just measured; with --reuse all]")
    ap.add_argument("--first-seed", type=int, default=3600, help="seed of the first run (+1 per run)")
    ap.add_argument("--rejudge", choices=["directional", "separate"],
                    help="with --reuse: judge the stored runs again with this decision rule (separate: before "
                         "issue 36; the rounds' launches were still chosen by the rule that measured them)")
    ap.add_argument("--test", choices=[str(t) for t in stats.Test],
                    help="with --reuse: judge the stored runs again with this test (the rounds' launches were "
                         "still chosen by the test that measured them)")
    ap.add_argument("--keep-rounds", metavar="N1,N2",
                    help="with --reuse: judge the stored runs as if round k had measured its first Nk launches")
    ap.add_argument("--two-modes", choices=["median", "mean", "tested"],
                    help="with --reuse: judge the stored runs again with this slowdown for launches in two modes "
                         "(decide.two_modes_slowdown; the rounds' launches were still chosen as measured)")
    ap.add_argument("--variance-prior", type=float,
                    help="with --reuse: judge the stored runs again with this weight of the family's typical "
                         "variance (decide.VARIANCE_PRIOR; 0: none, the rule before session 10; the rounds' "
                         "launches were still chosen as measured)")
    ap.add_argument("--margin", type=float,
                    help="measuring: every check with `--margin M`; with --reuse: judge the stored runs again with "
                         "this equivalence margin (decide.MARGIN; 0: none, the rule before session 13; the rounds' "
                         "launches were still chosen as measured)")
    ap.add_argument("--pairing", choices=["launch", "repetition"],
                    help="with --reuse: judge the stored runs again with this value of a launch in a paired test of "
                         "two variants of one job (CheckSettings.pairing: needs pairing_by_repetition.patch applied; "
                         "the rounds' launches were still chosen as measured)")
    ap.add_argument("--until", metavar="HH:MM:SS", help="start no run after this time (UTC, today): the end of a "
                                                       "quiet window")
    args, extra = ap.parse_known_args()
    if args.pairing and "pairing" not in check.CheckSettings.model_fields:
        raise SystemExit("--pairing: this tree's check pairs by launch only; apply "
                         "benchmarks/reproducibility/pairing_by_repetition.patch first (`patch -p1 < ...`)")
    until = None
    if args.until:
        day = time.strftime("%Y-%m-%d", time.gmtime())
        until = time.mktime(time.strptime(f"{day} {args.until}", "%Y-%m-%d %H:%M:%S")) - time.timezone
    keep = [int(x) for x in args.keep_rounds.split(",")] if args.keep_rounds else None
    out = HERE / f"results_{args.tag}.json"
    if args.reuse:  # measure nothing: the wall times are those of the results file, if any
        stored = json.loads(out.read_text()) if out.exists() else {}
        timing = stored.get("timing", [])
        args.busy = args.busy or bool(stored.get("summary", {}).get("busy"))  # how they were measured
    else:
        if args.margin is not None:  # measured with it: each check judges (and chooses its rounds) with it
            extra = [*extra, "--margin", f"{args.margin:g}"]
        timing = measure(args.db, args.runs, args.first_seed, args.busy, extra, until, args.busy_core)
    rejudge_margin = args.margin if args.reuse else None
    if args.rejudge:
        out = out.with_name(f"results_{args.tag}_rejudged_{args.rejudge}.json")
    if args.test:
        out = out.with_name(f"{out.stem}_test_{args.test}.json")
    if keep:
        out = out.with_name(f"{out.stem}_rounds_{'_'.join(map(str, keep))}.json")
    if args.two_modes:
        out = out.with_name(f"{out.stem}_two_modes_{args.two_modes}.json")
    if args.variance_prior is not None:
        out = out.with_name(f"{out.stem}_variance_prior_{args.variance_prior:g}.json")
    if rejudge_margin is not None:
        out = out.with_name(f"{out.stem}_margin_{rejudge_margin:g}.json")
    if args.pairing:
        out = out.with_name(f"{out.stem}_pairing_{args.pairing}.json")
    with duckdb.connect(str(args.db), read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created").fetchall()]
        tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
        judged = {r[0] for r in con.execute("SELECT DISTINCT run_id FROM verdicts").fetchall()} \
            if "verdicts" in tables else set()
    ids = ids[-(args.last or (len(ids) if args.reuse else args.runs)):]
    unjudged = unjudged_runs(ids, judged, args.db)
    ids = [rid for rid in ids if rid not in unjudged]
    if len(ids) < 2:
        raise SystemExit(f"need at least 2 complete runs with verdicts in {args.db}, found {len(ids)}"
                         + (f" ({len(unjudged)} more without verdicts, above)" if unjudged else ""))
    res = analyse(args.db, ids, args.rejudge, keep, args.test, args.two_modes, args.variance_prior, rejudge_margin,
                  args.pairing)
    overlaps = [p["overlap"] for p in res["pairs"]]
    flips = sum(len(p["flips"]) for p in res["pairs"])
    undecided = [(r["undecided"] + r["untested"]) / max(r["comparisons"], 1) for r in res["runs"]]
    walls = [t["wall_s"] for t in timing if "error" not in t]  # a failed run's wall is no check's
    summary = {"runs": len(ids), "pairs": len(overlaps), "overlap_mean": statistics.fmean(overlaps),
               "overlap_min": min(overlaps), "flips": flips, "undecided_max": max(undecided),
               "undecided_mean": statistics.fmean(undecided),
               "wall_median_s": statistics.median(walls) if walls else None,
               "violations_per_run": [r["violations"] for r in res["runs"]], "busy": args.busy,
               "left_out_without_verdicts": unjudged,
               "rejudged": ({"rule": args.rejudge, "keep_rounds": keep, "test": args.test,
                             "two_modes": args.two_modes, "variance_prior": args.variance_prior,
                             "margin": rejudge_margin, "pairing": args.pairing}
                            if args.rejudge or keep or args.test or args.two_modes or args.pairing
                            or args.variance_prior is not None or rejudge_margin is not None else None),
               "measured_with": " ".join(extra) if not args.reuse else None}
    res = {"command": "colltune check --preset quick -n 4 --seed <first-seed + i>", "summary": summary,
           "targets": TARGETS, "timing": timing, **res}
    out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"{summary['runs']} runs, {summary['pairs']} pairs; violations per run {summary['violations_per_run']}")
    for name, target in TARGETS.items():
        got, at_most = summary[name], name in ("flips", "undecided_max", "wall_median_s")
        ok = got is not None and (got <= target if at_most else got >= target)
        print(f"  {name}: {got if got is None or isinstance(got, int) else round(got, 3)} "
              f"(target {'<=' if at_most else '>='} {target}) {'met' if ok else 'NOT met'}")
    for k, per_run in res["differing"].items():
        print(f"  differs: {k}: {per_run}")
    for t in timing:
        print(f"  run {t['run']} {t['started_utc']} UTC: {t['wall_s']} s, loadavg before {t['loadavg_before']}")


if __name__ == "__main__":
    main()
