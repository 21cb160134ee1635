"""`colltune learn run` on real applications from Debian's package registry (issue 12):
HPCC 1.5.0 and LAMMPS 20220106 (Debian Open MPI 4.1.4 builds) on the embedded Open MPI 5.0.11,
NWChem 7.0.2 (Debian MPICH 4.0.2 build) on pip MPICH 5.0.2, 2 ranks. real_apps.sh installs the
packages and calls this.

Per application:
1. reference runs without colltune (the application's own result: HPCC `Success=1`, the NWChem
   energy, LAMMPS's total energy after the last step), then one traced run with every call left
   to the library: the points it calls;
2. the oracle: `colltune bench` of every member of the runtime's portfolio at the application's
   (collective, bytes, ranks) points that make up 95% of its calls and of its collective time;
3. `--loops` independent learning loops of `--batches` batches, every batch checked by the
   application's own result (`learn run --check`); each loop's database starts as a copy of the
   oracle's (the head start of docs/learn.md: bench medians train the models and the bench veto
   reads them), or empty with `--no-head-start` (the procedure before the veto);
4. per batch: the regret of the exploit-only table learned after it against that oracle,
   default/oracle, the measured exploration cost;
5. the final exploit-only table of each loop against the library's default, the application
   run `--repeats` times each, alternating (medians; wall time and traced collective time).
Results go to OUT/<app>.json; the README tables are printed from them (`--report`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from colltune import catalog
from colltune.learn import traces
from colltune.learn.loop import medians_score
from colltune.learn.table import SelectionTable, parse_table, read_table, write_table
from colltune.mpi import build, launch, libraries, runenv
from colltune.store import Store

HERE = Path(__file__).resolve().parent
COLLTUNE = str(HERE.parent.parent / ".venv" / "bin" / "colltune")
NPROCS = 2
NWCHEM_TOLERANCE = 1e-8  # Hartree: the input's own SCF convergence criterion
LAMMPS_STEPS = 1000
LAMMPS_TOLERANCE = 1e-10  # relative, on the last step's total energy
# the application's own result in its output: HPCC's verdict, NWChem's energy, LAMMPS's last total energy
RESULT_RE = {"hpcc": r"^Success=\d", "nwchem": r"Total DFT energy =\s+(\S+)",
             "lammps": rf"^\s*{LAMMPS_STEPS}\s+\S+\s+\S+\s+\S+\s+(\S+)\s+\S+\s*$"}


@dataclass
class App:
    name: str
    mpi: str
    workdir: Path
    argv: list[str]
    check: str  # shell; $COLLTUNE_LEARN_LOG is the run's output; exit 0 = the application's result holds
    result_re: str  # the application's own result line in its output (or hpccoutf.txt)


def _hpcc(out: Path) -> App:
    lib = libraries.resolve("openmpi")
    work = out / "hpcc"
    work.mkdir(parents=True, exist_ok=True)
    text = Path("/usr/share/doc/hpcc/examples/_hpccinf.txt").read_text()
    # the example's 2x2 grid -> 1x2 for 2 ranks (N=1000, the example's other settings)
    text = re.sub(r"^2(\s+)Ps$", r"1\1Ps", text, count=1, flags=re.M)
    (work / "hpccinf.txt").write_text(text)
    # A Debian Open MPI 4.1 build under Open MPI 5.0's mpiexec with 5.0's libmpi.so.40 (same ABI).
    argv = [str(lib.mpiexec), "-n", str(NPROCS), "--bind-to", "none",
            "-x", f"LD_LIBRARY_PATH={lib.mpiexec.parent.parent / 'lib'}", "/usr/bin/hpcc"]
    # HPCC appends its report to hpccoutf.txt: move each run's next to its log.
    check = 'grep -q "^Success=1" hpccoutf.txt && mv hpccoutf.txt "$COLLTUNE_LEARN_LOG.hpccoutf"'
    return App("hpcc", "openmpi", work, argv, check, RESULT_RE["hpcc"])




def _lammps(out: Path) -> App:
    lib = libraries.resolve("openmpi")
    work = out / "lammps"
    work.mkdir(parents=True, exist_ok=True)
    text = Path("/usr/share/lammps/examples/melt/in.melt").read_text()
    # Debian's LJ melt (4000 atoms) with a thermo line and a neighbour-list check every step: the
    # allreduces that make up its collectives, each step instead of every 50th (and 1000 steps)
    for key, value in (("thermo", "1"), ("run", str(LAMMPS_STEPS)), ("neigh_modify", "every 20 delay 0 check yes")):
        text, n = re.subn(rf"^{key}\s.*$", f"{key}\t\t{value}", text, count=1, flags=re.M)
        if n != 1:
            raise SystemExit(f"lammps: no '{key}' line in Debian's in.melt; the example changed")
    (work / "in.melt").write_text(text)
    # a Debian Open MPI 4.1 build under the embedded Open MPI 5.0's mpiexec and libmpi.so.40, as HPCC
    argv = [str(lib.mpiexec), "-n", str(NPROCS), "--bind-to", "none",
            "-x", f"LD_LIBRARY_PATH={lib.mpiexec.parent.parent / 'lib'}", "/usr/bin/lmp", "-in", "in.melt",
            "-log", "none"]
    # the check needs the reference energy: main() sets it after the reference runs
    return App("lammps", "openmpi", work, argv, "true", RESULT_RE["lammps"])


def _lammps_check(reference: float) -> str:
    return (f"awk -v ref={reference!r} '$1 == {LAMMPS_STEPS} && NF == 6 {{d = $5 - ref; if (d < 0) d = -d; "
            f"s = ref < 0 ? -ref : ref; ok = (d <= {LAMMPS_TOLERANCE} * s)}} END {{exit !ok}}' \"$COLLTUNE_LEARN_LOG\"")


def _nwchem(out: Path) -> App:
    lib = libraries.resolve("mpich")
    work = out / "nwchem"
    (work / "lib").mkdir(parents=True, exist_ok=True)
    (work / "etoh.nw").write_text((HERE / "apps" / "etoh.nw").read_text())
    # Debian's NWChem needs libmpich.so.12; pip MPICH 5.0.2 names the same ABI libmpi.so.12.
    libdir = lib.mpicc.parent.parent / "lib"
    link = work / "lib" / "libmpich.so.12"
    link.unlink(missing_ok=True)
    link.symlink_to(libdir / "libmpi.so.12")
    path = f"{work / 'lib'}:{libdir}:{libdir / 'mpich'}"
    argv = [str(lib.mpiexec), "-n", str(NPROCS), "-genv", "LD_LIBRARY_PATH", path, "/usr/bin/nwchem.mpich", "etoh.nw"]
    # the check needs the reference energy: main() sets it after the reference runs
    return App("nwchem", "mpich", work, argv, "true", RESULT_RE["nwchem"])


def _nwchem_check(app: App, reference: float) -> str:
    return (f"awk -v ref={reference!r} '/Total DFT energy/ {{d = $5 - ref; if (d < 0) d = -d; ok = (d <= "
            f"{NWCHEM_TOLERANCE})}} END {{exit !ok}}' \"$COLLTUNE_LEARN_LOG\"")


def _launch(app: App, log: Path, table: Path | None, trace_dir: Path | None) -> float:
    """One run (under the interposer when a table is given), its output in `log`; wall seconds."""
    lib = libraries.resolve(app.mpi)
    argv, extra = app.argv, {}
    if table is not None:
        env = runenv.rank_environment(lib, build.ensure_built(lib), learn=table, trace_dir=trace_dir)
        argv, extra = runenv.inject(lib, app.argv, env)
    start = time.perf_counter()
    with log.open("w") as sink:
        proc = subprocess.run(argv, cwd=app.workdir, env={**launch.launcher_env(lib), **extra}, stdout=sink,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{app.name}: {shlex.join(argv)} exited {proc.returncode}; see {log}")
    chk = subprocess.run(["sh", "-c", app.check], cwd=app.workdir, check=False,
                         env={**os.environ, "COLLTUNE_LEARN_LOG": str(log)})
    if chk.returncode != 0:
        raise SystemExit(f"{app.name}: the application's result check failed on {log}")
    return wall


def _result(app: App, log: Path) -> str:
    for path in (log, Path(f"{log}.hpccoutf")):
        if path.exists():
            m = re.search(app.result_re, path.read_text(errors="replace"), re.M)
            if m:
                return m.group(m.lastindex or 0)
    raise SystemExit(f"{app.name}: no result line in {log}")


def _calls(trace_dir: Path) -> pd.DataFrame:
    files = sorted(trace_dir.glob("rank-*.cttrace"))
    return traces.calls_frame([traces.read_trace(p) for p in files])[0]


def _default_table(app: App, out: Path) -> Path:
    """A table that lists nothing and leaves every call to the library (traced all the same)."""
    path = out / f"{app.name}-default.sel"
    write_table(SelectionTable(unlisted="library", mpi=app.mpi, comments=("every call: the library",)), path)
    return path


def discover(app: App, out: Path) -> Path:
    """One traced run with every call left to the library, ingested into its own database: the
    points the application calls and the runtime's portfolios, before any learning."""
    lib = libraries.resolve(app.mpi)
    tdir = out / f"discover-{app.name}"
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir(parents=True)
    _launch(app, tdir / "out.log", _default_table(app, out), tdir)
    db = out / f"{app.name}-discover.duckdb"
    db.unlink(missing_ok=True)
    with Store(db) as store:
        traces.ingest(tdir, store, command=shlex.join(app.argv), batch=0, app=app.name, mpi_name=lib.name,
                      mpi_version=lib.short_version, abi_family=lib.family)
    return db


def learn_loops(app: App, out: Path, loops: int, batches: int, extra: list[str], head_start: Path | None
                ) -> tuple[list[Path], list[list[float]]]:
    """The loops' databases and the 1-minute load average at each loop's start and end."""
    dbs, loads = [], []
    for i in range(loops):
        db = out / f"{app.name}-loop{i}.duckdb"
        db.unlink(missing_ok=True)
        if head_start is not None:  # what a user does: `colltune bench --db X` first, then `learn run --db X`
            shutil.copyfile(head_start, db)
        cmd = [COLLTUNE, "learn", "run", "--mpi", app.mpi, "--batches", str(batches), "--db", str(db),
               "--table-out", str(out / f"{app.name}-loop{i}.sel"), "--trace-root", str(out / f"traces-{app.name}-{i}"),
               "--check", app.check, *extra, "--", *app.argv]
        print(f"[{app.name}] loop {i + 1}/{loops}: {shlex.join(cmd)}", flush=True)
        before = os.getloadavg()[0]
        subprocess.run(cmd, cwd=app.workdir, check=True, stdin=subprocess.DEVNULL)
        loads.append([before, os.getloadavg()[0]])
        dbs.append(db)
    return dbs, loads


def oracle_points(dbs: list[Path], share: float = 0.95) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """(collective, msg_bytes) on the whole world that make up `share` of the calls and of the
    collective time of the loops' runs, and the runtime's portfolio per collective."""
    frames, portfolios = [], {}
    for db in dbs:
        with Store(db, read_only=True) as store:
            frames.append(store.trace_calls())
            for text in store.trace_runs()["portfolios"]:
                portfolios.update(json.loads(text))
    calls = pd.concat(frames, ignore_index=True)
    calls = calls[(calls["comm_size"] == NPROCS) & (calls["msg_bytes"] > 0)]
    pts = calls.groupby(["collective", "msg_bytes"], as_index=False).agg(n=("runtime_s", "size"),
                                                                         t=("runtime_s", "sum"))
    keep = set()
    for col in ("n", "t"):
        ranked = pts.sort_values(col, ascending=False)
        cum = ranked[col].cumsum() / ranked[col].sum()
        keep |= set(ranked.index[(cum.shift(fill_value=0.0) < share).to_numpy()])
    return pts.loc[sorted(keep)].sort_values(["collective", "msg_bytes"]), portfolios


def bench_oracle(app: App, out: Path, points: pd.DataFrame, portfolios: dict[str, list[str]], launches: int,
                 name: str = "oracle") -> Path:
    db = out / f"{app.name}-{name}.duckdb"
    db.unlink(missing_ok=True)
    for coll, grp in points.groupby("collective"):
        sizes = ",".join(str(int(b)) for b in grp["msg_bytes"])
        cmd = [COLLTUNE, "bench", "--mpi", app.mpi, "-n", str(NPROCS), "-c", str(coll), "-s", sizes,
               "--variants", ",".join(portfolios[str(coll)]), "-R", str(launches), "--no-aa", "--no-barrier",
               "--time-budget", "1.0", "--max-reps", "500", "--quiet", "--db", str(db)]
        print(f"[{app.name}] oracle: {shlex.join(cmd)}", flush=True)
        subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL)
    return db


def _exploration_cost(calls: pd.DataFrame, default_med: pd.Series) -> float:
    """Measured extra collective time of the explored calls over the default's median at the same
    point (in the same loop): what this batch paid for exploring."""
    ex = calls[calls["mode"] == "explore"]
    key = list(zip(ex["collective"], ex["msg_bytes"], ex["comm_size"], strict=True))
    base = np.array([default_med.get(k, np.nan) for k in key], float)
    ok = ~np.isnan(base)
    return float((ex["runtime_s"].to_numpy()[ok] - base[ok]).sum())


def _cells(table: SelectionTable) -> dict[str, int]:
    cells = [cell for ct in table.collectives.values() for cell in ct.cells.values()]
    return {"exploit_cells": sum(c.mode == "exploit" for c in cells), "cells": len(cells)}


def score_loops(app: App, out: Path, dbs: list[Path], oracle_db: Path
                ) -> tuple[list[list[dict[str, object]]], list[dict[str, object]]]:
    """Per loop and batch: the figures of the README's table; per loop: the table the loop started
    from (bench medians only, with a head start) scored over the calls of its first batch."""
    with Store(oracle_db, read_only=True) as store:
        medians = store.library_medians(app.mpi)
    rows, starts = [], []
    for i, db in enumerate(dbs):
        with Store(db, read_only=True) as store:
            batches = store.learn_batches()
            calls = {r: store.trace_calls(r) for r in batches["trace_run_id"]}
        every = pd.concat(calls.values(), ignore_index=True)
        default_med = every[every["member"] == catalog.DEFAULT].groupby(
            ["collective", "msg_bytes", "comm_size"])["runtime_s"].median()
        tables = [parse_table(str(t).encode()) for t in batches["table_text"]]
        first = medians_score(tables[0], calls[batches["trace_run_id"].iloc[0]], medians)
        starts.append({"regret": first.regret, **_cells(tables[0])})
        tables = tables[1:] + [read_table(out / f"{app.name}-loop{i}.sel")]
        loop = []
        for b, (row, after) in enumerate(zip(batches.itertuples(), tables, strict=True), start=1):
            c = calls[row.trace_run_id]
            s = medians_score(after, c, medians)
            loop.append({"batch": b, "wall_s": row.wall_s, "collective_s": row.collective_s,
                         "explored": int(row.explored_calls), "traced": int(row.traced_calls),
                         "exploration_cost_s": _exploration_cost(c, default_med),
                         "regret": s.regret, "default_over_oracle": (s.default_s / s.oracle_s) if s.oracle_s else None,
                         **_cells(after)})
        rows.append(loop)
    return rows, starts


def add_heldout(app: App, out: Path, result: dict[str, object], launches: int) -> None:
    """The oracle measured again after the loops, into a database no loop read: with a head start
    the first oracle is also training data and the veto's evidence, so scoring against it alone
    would grade the tables on what they learned from; this one is out of sample."""
    points = pd.DataFrame(result["points"])  # type: ignore[arg-type]
    db = bench_oracle(app, out, points, result["portfolios"], launches, "oracle-heldout")  # type: ignore[arg-type]
    dbs = [out / f"{app.name}-loop{i}.duckdb" for i in range(len(result["batches"]))]  # type: ignore[arg-type]
    batches, starts = score_loops(app, out, dbs, db)
    result["heldout"] = {"batches": [[{k: b[k] for k in ("batch", "regret", "default_over_oracle")} for b in loop]
                                     for loop in batches], "start": starts}


def final_vs_default(app: App, out: Path, dbs: list[Path], repeats: int) -> dict[str, object]:
    """Each loop's final exploit-only table against the library's default (a table that lists
    nothing and leaves every call to the library; both traced) and against no colltune at all,
    the three in turn so that they share the machine's load."""
    default = _default_table(app, out)
    res: dict[str, list[dict[str, float | str | None]]] = {"none": [], "default": [], "learned": []}
    for i in range(len(dbs)):
        frozen = out / f"{app.name}-loop{i}-frozen.sel"
        write_table(read_table(out / f"{app.name}-loop{i}.sel").frozen(), frozen)
        for k in range(repeats):
            for kind, table in (("none", None), ("default", default), ("learned", frozen)):
                tdir = out / f"final-{app.name}" / f"loop{i}-{kind}-{k}"
                tdir.mkdir(parents=True, exist_ok=True)
                load = os.getloadavg()[0]
                wall = _launch(app, tdir / "out.log", table, tdir if table else None)
                coll = float(_calls(tdir)["runtime_s"].sum()) if table else None
                res[kind].append({"loop": i, "wall_s": wall, "collective_s": coll, "load": load,
                                  "result": _result(app, tdir / "out.log")})
    return res


def _pct(x: float | None) -> str:
    return "-" if x is None or np.isnan(x) else f"{100 * x:.1f}%"


def _ratio_ci(a: pd.Series, b: pd.Series, draws: int = 10000) -> str:
    """95% percentile-bootstrap interval of median(a) / median(b) (runs resampled independently)."""
    rng = np.random.default_rng(12)
    x, y = a.to_numpy(float), b.to_numpy(float)
    ratios = [np.median(rng.choice(x, x.size)) / np.median(rng.choice(y, y.size)) for _ in range(draws)]
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return f"{lo:.3f}-{hi:.3f}"


def report(path: Path) -> str:
    """The README's figures for one application from its JSON."""
    r = json.loads(path.read_text())
    rows = pd.DataFrame([b | {"loop": i} for i, loop in enumerate(r["batches"]) for b in loop])
    held = pd.DataFrame([b | {"loop": i} for i, loop in enumerate(r["heldout"]["batches"]) for b in loop]
                        if "heldout" in r else [], columns=["batch", "regret", "default_over_oracle", "loop"])
    loads_text = ""
    if "loop_loads" in r:
        ll = np.array(r["loop_loads"], float)
        loads_text = f"; load average at the loops' starts and ends {ll.min():.1f}-{ll.max():.1f}"
    lines = [f"{r['app']} on {r['mpi']}, {len(r['batches'])} loops (medians over loops; regret: max over loops "
             f"in brackets; head start from bench: {'yes' if r.get('head_start') else 'no'}{loads_text})", "",
             "| batch | wall s | collective s | explored calls | exploration cost ms | exploit cells | "
             "regret vs bench oracle | default vs oracle | regret vs held-out oracle | default vs held-out |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for b, g in rows.groupby("batch"):
        h = held[held["batch"] == b]
        lines.append(f"| {b} | {g['wall_s'].median():.2f} | {g['collective_s'].median():.3f} | "
                     f"{g['explored'].median():.0f} | {1e3 * g['exploration_cost_s'].median():.1f} | "
                     f"{g['exploit_cells'].median():.0f} of {g['cells'].median():.0f} | "
                     f"{_pct(g['regret'].median())} ({_pct(g['regret'].max())}) | "
                     f"{_pct(g['default_over_oracle'].median() - 1)} | "
                     f"{_pct(h['regret'].median())} ({_pct(h['regret'].max())}) | "
                     f"{_pct(h['default_over_oracle'].median() - 1)} |")
    if r.get("start"):
        st = pd.DataFrame(r["start"])
        sh = pd.DataFrame(r["heldout"]["start"] if "heldout" in r else [], columns=["regret"])
        lines += ["", f"table each loop started from (before batch 1), scored over batch 1's calls: regret "
                  f"{_pct(st['regret'].median())} (max {_pct(st['regret'].max())}), against the held-out oracle "
                  f"{_pct(sh['regret'].median())} (max {_pct(sh['regret'].max())}); exploit cells "
                  + ", ".join(f"{a} of {b}" for a, b in zip(st["exploit_cells"], st["cells"], strict=True))]
    fin = {k: pd.DataFrame(v) for k, v in r["final"].items()}
    ref, d, le = fin["none"], fin["default"], fin["learned"]
    loads = pd.concat(fin.values())["load"]
    lines += ["", f"final runs in turn (load average {loads.min():.1f}-{loads.max():.1f}, median {loads.median():.1f})",
              "", "| runs (medians) | wall s | traced collective s |", "| --- | --- | --- |",
              f"| without colltune ({len(ref)}) | {ref['wall_s'].median():.2f} | - |",
              f"| default: interposer, every call to the library ({len(d)}) | {d['wall_s'].median():.2f} | "
              f"{d['collective_s'].median():.3f} |",
              f"| learned: each loop's final exploit-only table ({len(le)}) | {le['wall_s'].median():.2f} | "
              f"{le['collective_s'].median():.3f} |",
              f"| learned / default | {le['wall_s'].median() / d['wall_s'].median():.3f} | "
              f"{le['collective_s'].median() / d['collective_s'].median():.3f} |",
              f"| 95% bootstrap interval of that ratio of medians | {_ratio_ci(le['wall_s'], d['wall_s'])} | "
              f"{_ratio_ci(le['collective_s'], d['collective_s'])} |",
              "| learned / default per loop | " + ", ".join(
                  f"{le[le['loop'] == i]['wall_s'].median() / d[d['loop'] == i]['wall_s'].median():.3f}"
                  for i in sorted(set(le["loop"]))) + " | " + ", ".join(
                  f"{le[le['loop'] == i]['collective_s'].median() / d[d['loop'] == i]['collective_s'].median():.3f}"
                  for i in sorted(set(le["loop"]))) + " |"]
    app = App(r["app"], r["mpi"], path.parent, r["argv"], r["check"], RESULT_RE[r["app"]])
    batch_results = [_result(app, p) for p in sorted(path.parent.glob(f"traces-{app.name}-*/*/batch-*.log"))]
    results = [x["result"] for x in r["reference"]] + batch_results + [
        x["result"] for kind in ("none", "default", "learned") for x in r["final"][kind]]
    lines += ["", f"results ({len(results)} runs): " + ", ".join(f"{v} x{results.count(v)}" for v in sorted(set(results)))]
    pts = pd.DataFrame(r["points"])
    lines.append(f"oracle points: {len(pts)} (collective, bytes) at {NPROCS} ranks, "
                 + ", ".join(f"{c} {len(g)}" for c, g in pts.groupby("collective")))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--apps", default="hpcc,nwchem")
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--loops", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5, help="final table vs default: runs of each per loop")
    ap.add_argument("--oracle-launches", type=int, default=3)
    ap.add_argument("--learn-args", default="", help="more options for `colltune learn run`, e.g. the former "
                    "defaults: '--train-on all --replicate 0'")
    ap.add_argument("--no-head-start", action="store_true", help="loops start from empty databases (the oracle "
                    "is used for scoring only), as before the bench veto")
    ap.add_argument("--heldout-only", action="store_true", help="measure the held-out oracle for OUT/<app>.json "
                    "and add its scores (when the run was made without it)")
    ap.add_argument("--final-only", action="store_true", help="rerun only the final runs (learned tables, "
                    "default, no colltune) of the loops in OUT, --repeats each, replacing those in OUT/<app>.json")
    ap.add_argument("--report", action="store_true", help="print the figures of OUT/<app>.json, run nothing")
    args = ap.parse_args()
    out = args.out.resolve()
    if args.report:
        print("\n\n".join(report(out / f"{name}.json") for name in args.apps.split(",")
                           if (out / f"{name}.json").exists()))
        return
    out.mkdir(parents=True, exist_ok=True)
    for name in args.apps.split(","):
        app = {"hpcc": _hpcc, "nwchem": _nwchem, "lammps": _lammps}[name](out)
        if args.heldout_only or args.final_only:
            path = out / f"{app.name}.json"
            result = json.loads(path.read_text())
            if args.heldout_only:
                add_heldout(app, out, result, args.oracle_launches)
            else:
                app.check = str(result["check"])
                shutil.rmtree(out / f"final-{app.name}", ignore_errors=True)
                dbs = [out / f"{app.name}-loop{i}.duckdb" for i in range(len(result["batches"]))]
                result["final"] = final_vs_default(app, out, dbs, args.repeats)
            path.write_text(json.dumps(result, indent=1, default=float))
            continue
        refs = []
        for k in range(3):  # reference runs without colltune: the result to hold, the plain wall time
            log = out / f"{app.name}-reference-{k}.log"
            wall = _launch(app, log, None, None)
            refs.append({"wall_s": wall, "result": _result(app, log)})
        if app.name == "nwchem":
            app.check = _nwchem_check(app, float(refs[0]["result"]))
        if app.name == "lammps":
            app.check = _lammps_check(float(refs[0]["result"]))
        points, portfolios = oracle_points([discover(app, out)])
        oracle_db = bench_oracle(app, out, points, portfolios, args.oracle_launches)
        dbs, loop_loads = learn_loops(app, out, args.loops, args.batches, shlex.split(args.learn_args),
                                      None if args.no_head_start else oracle_db)
        batches, starts = score_loops(app, out, dbs, oracle_db)
        result = {"app": app.name, "mpi": app.mpi, "argv": app.argv, "check": app.check, "reference": refs,
                  "head_start": not args.no_head_start, "learn_args": args.learn_args, "loop_loads": loop_loads,
                  "points": points.to_dict("records"), "portfolios": portfolios,
                  "batches": batches, "start": starts,
                  "final": final_vs_default(app, out, dbs, args.repeats)}
        (out / f"{app.name}.json").write_text(json.dumps(result, indent=1, default=float))
        add_heldout(app, out, result, args.oracle_launches)
        (out / f"{app.name}.json").write_text(json.dumps(result, indent=1, default=float))
        print(f"[{app.name}] wrote {out / f'{app.name}.json'}", flush=True)


if __name__ == "__main__":
    main()
