"""`colltune check --preset quick` on SMPI at several simulated sizes: its host cost and its
verdicts (README, "`colltune check --preset quick`, the whole preset, at 256 and 1024 simulated
ranks").

    COLLTUNE_CACHE=/tmp/ct-cache nice -n 10 .venv/bin/python benchmarks/scale/check_cost.py \\
        --ranks 4,256,1024 --platform fattree-64x16 --db-dir /tmp --out benchmarks/scale

Each size is one fresh `colltune check --mpi smpi --platform P -n N --preset quick` (every
collective of the preset, its three sizes; a deterministic simulator's plan: one launch, one
repetition after a warm-up per point, docs/smpi.md "Deterministic times"), whose process id is
printed: `check_cost.py --signal STOP --root <id>` freezes it and the launches it started (a
simulator does not mind), `--signal CONT` resumes it; the time it spent stopped is measured and
left out of `wall_s`. Every 2 s the private memory of the check and its launches (`RssAnon` of
/proc/<pid>/status, summed: the shared buffers' pages count once per simulated rank in VmRSS, docs/smpi.md) is
sampled. Rows: check_cost.csv (one per size: wall and CPU seconds, peak private memory, verdict
counts) and check_verdicts.csv (one per comparison and size); rows of sizes not run are kept.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

COLLTUNE = str(Path(sys.executable).with_name("colltune"))
COST_FIELDS = ("ranks", "platform", "nodes", "ppn", "wall_s", "stopped_s", "cpu_s", "peak_rss_anon_mb",
               "launches", "measurement_rows", "comparisons", "violations", "no_violation", "undecided",
               "untested", "aa_flagged", "exit_code", "load_start", "load_end", "started_utc", "command")
VERDICT_FIELDS = ("ranks", "kind", "guideline", "collective", "variant", "msg_bytes", "ref_bytes", "k",
                  "verdict", "slowdown", "default_median_s", "variant_median_s")


def _tree(root: int) -> list[int]:
    """root and its descendants (a launch runs in a session of its own: mpi/launch.py)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))  # after ")": state ppid
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _status(pid: int) -> dict[str, str]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


class Sampler(threading.Thread):
    """Peak private memory of a process tree, and how long all of it was stopped."""

    def __init__(self, root: int, period: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.root, self.period = root, period
        self.peak_anon_kb = 0
        self.stopped_s = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        while not self.done.wait(self.period):
            now = time.monotonic()
            statuses = [_status(pid) for pid in _tree(self.root)]
            anon = sum(int(s.get("RssAnon", "0 kB").split()[0]) for s in statuses)
            self.peak_anon_kb = max(self.peak_anon_kb, anon)
            running = [s for s in statuses if s.get("State", "").split()[:1] not in (["T"], ["Z"], [])]
            if statuses and not running:
                self.stopped_s += now - last
            last = now


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def run_check(ranks: int, platform: str, db: Path,
              extra: list[str]) -> tuple[dict[str, object], list[dict[str, object]]]:
    import duckdb

    db.unlink(missing_ok=True)
    cmd = [COLLTUNE, "check", "--mpi", "smpi", "--platform", platform, "-n", str(ranks), "--preset", "quick",
           "--db", str(db), "--quiet", *extra]
    load_start, started_utc = _load(), time.strftime("%H:%M:%S", time.gmtime())
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    print(f"{ranks} ranks: check {proc.pid} (freeze: {Path(__file__).name} --signal STOP --root {proc.pid}; "
          f"resume: --signal CONT)", flush=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    try:
        out, _ = proc.communicate()
    except BaseException:
        send(proc.pid, "CONT")
        send(proc.pid, "TERM")
        raise
    wall = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    log = db.with_suffix(".log")
    log.write_text(out)
    with duckdb.connect(str(db), read_only=True) as con:
        verdicts = con.sql("select * from verdicts").df()
        rows = int(con.sql("select count(*) from measurements").fetchall()[0][0])
        launches = int(con.sql("select count(*) from launches").fetchall()[0][0])
        layout = dict(con.sql("select key, any_value(value) from environment where key in ('nodes', 'ranks_per_node') "
                              "group by key").fetchall())
    judged = verdicts[verdicts["kind"] != "aa"]
    judged = judged[judged["kind"] != "tuned"]
    counts = judged["verdict"].value_counts()
    cost: dict[str, object] = {
        "ranks": ranks, "platform": platform, "nodes": layout.get("nodes", ""),
        "ppn": str(layout.get("ranks_per_node", "")).split(",")[0],  # one entry per node
        "wall_s": round(wall - sampler.stopped_s, 1), "stopped_s": round(sampler.stopped_s, 1),
        "cpu_s": "", "peak_rss_anon_mb": round(sampler.peak_anon_kb / 1024),
        "launches": launches, "measurement_rows": rows, "comparisons": len(judged),
        "violations": int(counts.get("violation", 0)), "no_violation": int(counts.get("no violation", 0)),
        "undecided": int(counts.get("undecided", 0)), "untested": int(counts.get("untested", 0)),
        "aa_flagged": int(verdicts[verdicts["kind"] == "aa"]["violation"].sum()),
        "exit_code": proc.returncode, "load_start": load_start, "load_end": _load(), "started_utc": started_utc,
        "command": " ".join(["colltune", *cmd[1:]]),
    }
    verdict_rows = [{"ranks": ranks, **{k: r[k] for k in VERDICT_FIELDS if k != "ranks"}}
                    for r in judged.to_dict("records")]
    return cost, verdict_rows


def send(root: int, name: str) -> None:
    """Signal SIG<name> to a check and every process it started (the launches have sessions of
    their own, so a process group does not reach them)."""
    for pid in _tree(root):
        try:
            os.kill(pid, getattr(signal, f"SIG{name}"))
        except ProcessLookupError:
            pass


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _merge(path: Path, fields: tuple[str, ...], rows: list[dict[str, object]], ranks: set[int]) -> None:
    kept: list[dict[str, object]] = []
    if path.exists():
        with path.open() as f:
            kept = [r for r in csv.DictReader(f) if int(r["ranks"]) not in ranks]
    merged = sorted([*kept, *rows], key=lambda r: int(r["ranks"]))
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(merged)


def table(path: Path, at: int | None = None) -> str:
    """The comparisons whose verdict differs between the sizes of check_verdicts.csv, as a
    markdown table (slowdown = default / the equivalent; '-': not measured at that size); `at`:
    every comparison measured at that size instead."""
    import pandas as pd

    v = pd.read_csv(path)
    v["key"] = list(zip(v["guideline"], v["collective"], v["variant"], v["msg_bytes"],
                        v["ref_bytes"].fillna(-1).astype(int), v["k"].fillna(-1).astype(int), strict=True))
    sizes = sorted(v["ranks"].unique())
    cells = {(r.key, r.ranks): (r.verdict, r.slowdown) for r in v.itertuples()}
    lines = ["| guideline | collective | equivalent | bytes | " + " | ".join(f"{n} ranks" for n in sizes) + " |",
             "| --- | --- | --- | --- | " + " | ".join("---" for _ in sizes) + " |"]
    for key in sorted(set(v["key"]), key=lambda k: (k[1], k[3], k[0], k[2])):
        seen = [cells.get((key, n)) for n in sizes]
        if (at is None and len({c[0] for c in seen if c is not None}) < 2) or \
                (at is not None and (key, at) not in cells):
            continue
        guideline, coll, variant, size, ref, k = key
        what = variant if variant != "default" else (f"split k={k}" if k > 0 else f"vs {ref} B")
        lines.append(f"| {guideline} | {coll} | {what} | {size} | " + " | ".join(
            "-" if c is None else f"**{c[1]:.2f}x**" if c[0] == "violation" else f"{c[0]} ({c[1]:.2f})"
            for c in seen) + " |")
    return "\n".join(lines)


def partial(path: Path, tolerance: float = 0.05) -> list[dict[str, object]]:
    """The mock-up comparisons of the jobs a driver output holds so far (a launch stopped before
    its end stores nothing): each measured repetition's default / mock-up ratio against the
    tolerance, as the judge does for a deterministic simulator (verify/decide.py exact_effect)."""
    import json

    from colltune import catalog
    from colltune.verify.decide import EXACT_JITTER

    guideline = {v.name: v.guideline for v in catalog.load().variants}
    jobs: dict[int, dict[str, object]] = {}
    times: dict[tuple[int, int], list[float]] = {}
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith('{"type":"job"'):
            job = json.loads(line)
            jobs[int(job["job"])] = job
        elif line.startswith("R,"):
            f = line.split(",")
            if f[4] == "0" and f[5] == "1":  # measured (not a warm-up), valid
                times.setdefault((int(f[1]), int(f[2])), []).append(float(f[6]))
    limit = 1.0 / (1.0 - tolerance)
    rows = []
    for idx, job in sorted(jobs.items()):
        names = [str(v) for v in job["variants"]]  # type: ignore[union-attr]
        if "default" not in names:
            continue
        ref = times.get((idx, names.index("default")))
        for i, name in enumerate(names):
            alt = times.get((idx, i))
            if name not in guideline or not ref or not alt:
                continue
            ratio = sorted(ref)[len(ref) // 2] / sorted(alt)[len(alt) // 2]
            verdict = ("violation" if ratio > limit * (1 + EXACT_JITTER) else
                       "no violation" if ratio < limit / (1 + EXACT_JITTER) else "undecided")
            rows.append({"guideline": guideline[name], "collective": job["collective"], "variant": name,
                         "msg_bytes": job["msg_bytes"], "slowdown": ratio, "verdict": verdict})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", default="4,256,1024", help="simulated sizes, comma-separated")
    ap.add_argument("--platform", default="fattree-64x16")
    ap.add_argument("--db-dir", type=Path, default=Path("/tmp"), help="where the checks' databases and logs go")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent)
    ap.add_argument("--signal", choices=("STOP", "CONT", "TERM"), help="freeze, resume or stop the check started as --root")
    ap.add_argument("--root", type=int, help="the check's process id (printed when it starts)")
    ap.add_argument("--partial", type=Path, metavar="DRIVER_OUTPUT",
                    help="run nothing: the mock-up verdicts of the jobs a (stopped) launch's driver output holds")
    ap.add_argument("--table", action="store_true", help="run nothing: print the verdicts that differ between "
                                                         "the sizes of OUT/check_verdicts.csv")
    ap.add_argument("--at", type=int, metavar="RANKS", help="with --table: every comparison measured at RANKS")
    ap.add_argument("extra", nargs="*", help="more `colltune check` options, after --")
    args = ap.parse_args()
    if args.signal:
        send(args.root, args.signal)
        return
    if args.partial:
        for row in partial(args.partial):
            print(row)
        return
    if args.table:
        print(table(args.out / "check_verdicts.csv", args.at))
        return
    for ranks in (int(n) for n in args.ranks.split(",")):
        cpu = _children_cpu()
        cost, verdicts = run_check(ranks, args.platform, args.db_dir / f"check-quick-{ranks}.duckdb", args.extra)
        cost["cpu_s"] = round(_children_cpu() - cpu, 1)
        print(cost, flush=True)
        _merge(args.out / "check_cost.csv", COST_FIELDS, [cost], {ranks})
        _merge(args.out / "check_verdicts.csv", VERDICT_FIELDS, verdicts, {ranks})


if __name__ == "__main__":
    main()
