"""From a check's verdicts to a tuning profile (docs/profile.md, "How colltune tune fills the
ranges").

Per (process count, collective, measured message size) the decision is the mock-up with the
largest speedup (default median / mock-up median) among those that are

  1. significantly faster than the default (the check's `significant`, after its correction for
     multiple comparisons, and faster: slowdown > 1),
  2. at least `min_gain` faster (speedup >= 1 + min_gain; PGMPITuneLib replaces at >= 10%),
  3. within the scratch cap (the variant's `scratch` formula of collectives.toml, PGMPITuneLib
     Table 1, evaluated at that size and process count),
  4. optionally (cautious) free of a barrier warning,

or "library". Runs of consecutive measured sizes with the same decision become one rule; what
lies between two sizes with different decisions, and outside the measured interval, stays with
the library (extension "between"), or every rule covers one measured size (extension "none").

Node layouts (docs/profile.md, "Layouts"): a process count measured on one layout gets a
layout-free block (`procs p p`) as always; one measured on several (check runs inside
allocations of different shapes) gets a block per uniform layout (`nodes N ppn P`), which the
interposer selects by each communicator's own layout. With `per_layout` every uniform layout gets
its block, a process count's only one too: rules that apply only where they were measured (the
simulated layouts of SimGrid SMPI, docs/smpi.md, are exactly known).

Library algorithms of the blocking form (`lib:<coll>:<alg>`) are reported but never written into
a profile: `colltune export --native` writes them into the library's own tuning file
(colltune.tune.native_export). Those of the nonblocking and persistent forms
(`lib:<coll>:<alg>#nonblocking`, measured against `default#nonblocking` by `colltune check`) are
the only members of those forms: they go, by the same rules (significant, min_gain, no scratch),
into the sections `<coll>#nonblocking` and `<coll>#persistent`, which the interposer serves
(docs/profile.md, "Nonblocking and persistent forms"); those sections have layout-free blocks
only (a started call cannot learn its layout without blocking), so a process count measured on
several layouts keeps its layout-free block there.
"""

from __future__ import annotations

import ast
import datetime as _dt
import math
import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from colltune import __version__, catalog
from colltune.errors import ColltuneError
from colltune.measure import confirm
from colltune.store.database import Store
from colltune.store.engine import StoreError
from colltune.tune import profile as prof

DEFAULT_SCRATCH_CAP = 256 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 64
INT_BYTES = 4
# The element size `e` of the scratch formulas is not in the verdicts; 8 (double, the widest
# common reduction type) gives the largest padding `c`, so the cap check stays an upper bound.
DEFAULT_ELEMENT_BYTES = 8

DECISION_COLUMNS = (
    "nprocs", "collective", "msg_bytes", "variant", "speedup", "scratch_bytes", "reason", "candidates",
    "nodes", "ppn",  # the node layout the verdicts were measured on (NA: not recorded)
)


class TuneError(ColltuneError):
    """Verdicts that cannot be turned into a profile; the message says what to run first."""


class TuneSettings(BaseModel):
    model_config = ConfigDict(frozen=True)
    min_gain: float = Field(0.10, ge=0.0, lt=10.0, description="speedup >= 1 + min_gain to replace")
    scratch_cap: int = Field(DEFAULT_SCRATCH_CAP, ge=0, description="bytes of scratch a variant may use")
    extension: Literal["between", "none"] = "between"
    cautious: bool = Field(False, description="ignore gains that carry a barrier warning")
    chunk_bytes: int = Field(DEFAULT_CHUNK_BYTES, ge=1)
    element_bytes: int = Field(DEFAULT_ELEMENT_BYTES, ge=1)
    per_layout: bool = Field(False, description="a `nodes N ppn P` block for every uniform layout, "
                                                "also a process count's only one")


def scratch_cap_from_env(env: Mapping[str, str] | None = None) -> int:
    """COLLTUNE_SCRATCH_BYTES as the interposer reads it: bytes with an optional K/M/G suffix."""
    raw = (env if env is not None else os.environ).get("COLLTUNE_SCRATCH_BYTES")
    if raw is None or raw.strip() == "":
        return DEFAULT_SCRATCH_CAP
    return parse_bytes(raw)


def parse_bytes(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", text)
    if not m:
        raise TuneError(f"{text!r} is not a byte count; write e.g. 268435456, 256M or 1G")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(m.group(1)) * scale


# ---------------------------------------------------------------------------------------------
# Scratch formulas (the same integer arithmetic as the generated C: + - * / on int64)

_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.floordiv,  # C division of non-negative integers
    ast.FloorDiv: operator.floordiv,
}


def scratch_bytes(formula: str, n: int, p: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                  element_bytes: int = DEFAULT_ELEMENT_BYTES) -> int:
    """Evaluate a `scratch` formula of collectives.toml (variables n, p, I, e, C, c)."""
    e = element_bytes
    block = p * e
    values = {
        "n": n,
        "p": p,
        "I": INT_BYTES,
        "e": e,
        "C": max(e, chunk_bytes // e * e),
        "c": (block - n % block) % block,
    }

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            right = ev(node.right)
            if isinstance(node.op, (ast.Div, ast.FloorDiv)) and right == 0:
                raise TuneError(f"scratch formula {formula!r} divides by zero at n={n}, p={p}")
            return _OPS[type(node.op)](ev(node.left), right)
        raise TuneError(f"scratch formula {formula!r} uses something other than + - * / and n, p, I, e, C, c")

    return ev(ast.parse(formula, mode="eval"))


# ---------------------------------------------------------------------------------------------
# Decisions


def _with_layout(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Verdicts with integer columns _nodes, _ppn (0: layout not recorded)."""
    out = verdicts.copy()
    for col in ("nodes", "ppn"):
        values = out[col] if col in out.columns else pd.Series(None, index=out.index, dtype="object")
        out[f"_{col}"] = pd.to_numeric(values, errors="coerce").fillna(0).astype(int)
    return out


def decide(verdicts: pd.DataFrame, settings: TuneSettings | None = None) -> pd.DataFrame:
    """One row per (nprocs, layout, collective, measured size) with the chosen variant (None:
    library) and why; columns DECISION_COLUMNS."""
    settings = settings or TuneSettings()
    cat = catalog.load()
    pattern = verdicts[verdicts["kind"] == "pattern"]
    # the started forms' library algorithms, under their section's name (allreduce#nonblocking)
    forms = verdicts["variant"].map(catalog.form_of)
    started = verdicts[(verdicts["kind"] == "library") & (forms != catalog.FORMS[0])]
    started = started.assign(collective=started["collective"] + "#" + forms[started.index])
    pattern = _with_layout(pd.concat([pattern, started]) if not started.empty else pattern)
    rows = []
    keys = ["nprocs", "_nodes", "_ppn", "collective", "msg_bytes"]
    for (nprocs, nodes, ppn, coll, nbytes), group in pattern.groupby(keys, sort=True):
        best: tuple[float, str, int] | None = None
        reasons: list[str] = []
        base, form = prof.split_section(str(coll))
        for _, v in group.sort_values("variant").iterrows():
            name = str(v["variant"])
            speedup = float(v["slowdown"])
            if form != catalog.FORMS[0]:
                if not prof.started_member(base, form, name):
                    continue
                scratch = 0   # the library's own algorithm: no arena memory
            elif name.startswith("lib:") or name not in {x.name for x in cat.variants_of(str(coll))}:
                continue
            else:
                scratch = scratch_bytes(cat.variant(name).scratch, int(nbytes), int(nprocs),
                                        settings.chunk_bytes, settings.element_bytes)
            if _open(v):
                reasons.append(f"{name}: {v['verdict']} (no rule from an undecided verdict)")
            elif not (_flag(v["significant"]) and speedup > 1.0):
                reasons.append(f"{name}: not significantly faster")
            elif speedup < 1.0 + settings.min_gain:
                reasons.append(f"{name}: {speedup:.3f}x < {1 + settings.min_gain:.2f}x")
            elif scratch > settings.scratch_cap:
                reasons.append(f"{name}: scratch {scratch} B > cap {settings.scratch_cap} B")
            elif settings.cautious and _flag(v.get("barrier_warning", False)):
                reasons.append(f"{name}: barrier warning (cautious)")
            elif best is None or speedup > best[0]:
                best = (speedup, name, scratch)
        layout = (int(nodes) or pd.NA, int(ppn) or pd.NA)
        if best is None:
            rows.append((int(nprocs), str(coll), int(nbytes), None, math.nan, 0, "library", "; ".join(reasons),
                         *layout))
        else:
            rows.append((int(nprocs), str(coll), int(nbytes), best[1], best[0], best[2],
                         f"{best[0]:.2f}x faster", "; ".join(reasons), *layout))
    out = pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
    return out.astype({"nodes": "Int64", "ppn": "Int64"})


def _open(v: pd.Series) -> bool:
    """A verdict neither decided way (three-way verdicts, issue 17); older verdicts lack it."""
    return isinstance(v.get("verdict"), str) and v["verdict"] in ("undecided", "untested")


def _flag(value: object) -> bool:
    """A boolean verdict column; NULL (no test was possible) counts as False."""
    return bool(value) if pd.notna(value) else False


def rules_from_decisions(sizes_and_choices: list[tuple[int, str | None]],
                         extension: Literal["between", "none"] = "between") -> list[prof.Rule]:
    """The range-extension rule: measured sizes (ascending) with their decisions -> rules."""
    rules: list[prof.Rule] = []
    run: list[int] = []
    current: str | None = None
    for size, choice in sorted(sizes_and_choices) + [(-1, None)]:
        if extension == "between" and choice is not None and choice == current:
            run.append(size)
            continue
        if current is not None and run:
            rules.append(prof.Rule(lo=run[0], hi=run[-1], variant=current))
        current, run = choice, [size]
    return rules


Layout = tuple[int, int]  # (nodes, ppn); (0, 0): not recorded


def _layouts(decisions: pd.DataFrame) -> dict[int, list[Layout]]:
    """Process count -> the layouts its decisions were measured on."""
    out: dict[int, list[Layout]] = {}
    for nprocs, nodes, ppn in decisions[["nprocs", "nodes", "ppn"]].fillna(0).drop_duplicates().itertuples(index=False):
        out.setdefault(int(nprocs), []).append((int(nodes), int(ppn)))
    return {n: sorted(v) for n, v in out.items()}


def block_layouts(decisions: pd.DataFrame, per_layout: bool = False) -> dict[tuple[int, Layout], Layout | None]:
    """(process count, measured layout) -> the layout its block says, None for layout-free.

    One layout for a process count: layout-free, as before layouts existed (the profile's
    `layout` says where it was measured, `colltune run --profile` warns elsewhere), unless
    per_layout. Several: a `nodes N ppn P` block per uniform layout (N x P = the process count);
    the others (not uniform, or not recorded) cannot be named in the grammar and keep the
    layout-free block, which applies where no layout block matches: at most one such per
    process count."""
    out: dict[tuple[int, Layout], Layout | None] = {}
    for nprocs, layouts in _layouts(decisions).items():
        if len(layouts) == 1 and not per_layout:
            out[(nprocs, layouts[0])] = None
            continue
        unnamed = [lay for lay in layouts if not (lay[0] > 0 and lay[0] * lay[1] == nprocs)]
        if len(unnamed) > 1:
            raise TuneError(f"{nprocs} processes were measured on {len(unnamed)} layouts that are not "
                            f"nodes x ppn ({', '.join(_describe(lay) for lay in unnamed)}): a profile holds one "
                            "layout-free block per process count; pass --run-id for the runs to combine")
        for lay in layouts:
            out[(nprocs, lay)] = None if lay in unnamed else lay
    return out


def _describe(layout: Layout) -> str:
    return "layout not recorded" if layout[0] == 0 else f"{layout[0]} nodes, at most {layout[1]} per node"


def build_profile(decisions: pd.DataFrame, provenance: dict[str, str],
                  extension: Literal["between", "none"] = "between", per_layout: bool = False) -> prof.Profile:
    sections = []
    named = block_layouts(decisions, per_layout)
    names = [name for coll in catalog.load().collective_names()
             for name in (coll, *(coll + suffix for suffix in prof.FORM_SUFFIX.values()))]
    for coll in names:
        started = prof.split_section(coll)[1] != catalog.FORMS[0]
        d = decisions[decisions["collective"] == coll].fillna({"nodes": 0, "ppn": 0})
        free, per_layout = [], []
        for (nprocs, nodes, ppn), group in d.groupby(["nprocs", "nodes", "ppn"], sort=True):
            pairs = [(int(r.msg_bytes), r.variant if isinstance(r.variant, str) else None)
                     for r in group.itertuples()]
            rules = tuple(rules_from_decisions(pairs, extension))
            layout = named[(int(nprocs), (int(nodes), int(ppn)))]
            if not rules or (started and layout is not None):   # no layout blocks for started calls
                continue
            if layout is None:
                free.append(prof.Block(procs_lo=int(nprocs), procs_hi=int(nprocs), rules=rules))
            else:
                per_layout.append(prof.Block(nodes=layout[0], ppn=layout[1], rules=rules))
        blocks = sorted(free, key=lambda b: b.procs_lo) + sorted(per_layout, key=lambda b: b.layout or (0, 0))
        if blocks:
            sections.append(prof.Section(collective=coll, blocks=tuple(blocks)))
    return prof.Profile(provenance=provenance, sections=tuple(sections))


def library_choices(verdicts: pd.DataFrame, settings: TuneSettings | None = None) -> pd.DataFrame:
    """Library algorithms that beat the default by min_gain (for the report and native export)."""
    settings = settings or TuneSettings()
    decided = ~verdicts["verdict"].isin(("undecided", "untested")) if "verdict" in verdicts.columns else True
    lib = verdicts[(verdicts["kind"] == "library") & verdicts["significant"].fillna(False).astype(bool)
                   & (verdicts["slowdown"] >= 1.0 + settings.min_gain) & decided]
    return lib[["nprocs", "collective", "msg_bytes", "variant", "slowdown"]].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Provenance from the results database


def run_provenance(db_path: str | Path, run_id: str) -> dict[str, str]:
    """MPI library, version and machine of a run, from the `runs` and `environment` tables."""
    out: dict[str, str] = {}
    try:
        with Store(db_path, read_only=True) as store:
            info = store.run_info(run_id)
            environment = store.environment(run_id)
            shapes = confirm.run_shapes(environment, store.launches(run_id))
            env = dict(environment[["key", "value"]].itertuples(index=False))
    except StoreError:
        return out
    if shapes:
        out["layout"] = confirm.format_layouts(shapes)
    if info.get("mpi_name"):
        out["mpi"] = str(info["mpi_name"])
    if info.get("mpi_version"):
        out["mpi-version"] = str(info["mpi_version"]).splitlines()[0]
    host = next((env[k] for k in ("hostname", "host", "node", "machine", "hostnames") if env.get(k)), None)
    arch = next((env[k] for k in ("arch", "machine_arch", "cpu_arch", "platform") if env.get(k)), None)
    if host or arch:
        out["machine"] = " ".join(str(x) for x in (host, arch) if x)
    return out


def tune(verdicts: pd.DataFrame, settings: TuneSettings, provenance: dict[str, str] | None = None,
         now: _dt.datetime | None = None) -> tuple[prof.Profile, pd.DataFrame]:
    """Verdicts -> (profile, decisions). The verdicts may come from several check runs when each
    measured other (process count, node layout) pairs: one run per pair (tune_db combines them)."""
    if verdicts.empty:
        raise TuneError("no verdicts: run `colltune check --db DB` first (tune reads its verdicts)")
    run_ids = [str(r) for r in pd.unique(verdicts["run_id"])]
    keyed = _with_layout(verdicts)
    per_key = keyed.groupby(["nprocs", "_nodes", "_ppn"])["run_id"].unique()
    for (nprocs, nodes, ppn), runs in per_key.items():
        if len(runs) > 1:
            where = f" on {_describe((int(nodes), int(ppn)))}" if nodes else ""
            raise TuneError(f"verdicts of several runs ({', '.join(sorted(map(str, runs)))}) for {nprocs} "
                            f"processes{where}; pass --run-id")
    if (verdicts["kind"] == "pattern").sum() == 0:
        raise TuneError(f"run {', '.join(run_ids)} has no pattern verdicts (default vs mock-ups): measure the "
                        "mock-ups with `colltune check` (not only library algorithms)")
    decisions = decide(verdicts, settings)
    when = (now or _dt.datetime.now(_dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    prov = {
        "generator": f"colltune {__version__}",
        "nprocs": " ".join(str(n) for n in sorted({int(n) for n in verdicts["nprocs"].unique()})),
        "date": when,
        "check-run": " ".join(run_ids),
        "min-gain": f"{settings.min_gain:g}",
        "scratch-cap": str(settings.scratch_cap),
        "extension": settings.extension,
    }
    prov.update(provenance or {})
    layouts = {(int(n), int(a), int(b)) for n, a, b in keyed[["nprocs", "_nodes", "_ppn"]].itertuples(index=False)}
    if all(a > 0 for _, a, _ in layouts):  # recorded for every process count: what was really combined
        prov["layout"] = " ".join(f"{n}:{a}x{b}" for n, a, b in sorted(layouts))
    return build_profile(decisions, prov, settings.extension, settings.per_layout), decisions


def layout_companions(db_path: str | Path, main: pd.DataFrame) -> pd.DataFrame:
    """Verdicts of other check runs of the same MPI library (name and version) that measured the
    main run's process counts on node layouts the main run did not: per (process count, layout)
    the most recently judged run. Empty when there are none (one node, or one allocation)."""
    keyed = _with_layout(main)
    have = {(int(n), int(a), int(b)) for n, a, b in keyed[["nprocs", "_nodes", "_ppn"]].itertuples(index=False)}
    counts = {n for n, _, _ in have}
    main_id = str(main["run_id"].iloc[0])
    picked: dict[tuple[int, int, int], pd.DataFrame] = {}
    try:
        with Store(db_path, read_only=True) as store:
            info = store.run_info(main_id)
            runs = store.runs()
            others = runs[(runs["run_id"] != main_id) & (runs["mpi_name"] == info.get("mpi_name"))
                          & (runs["mpi_version"] == info.get("mpi_version"))]
            frames = [store.derived("verdicts", str(rid)) for rid in others["run_id"]]
    except StoreError:
        return main.iloc[0:0]
    for frame in frames:
        if frame.empty:
            continue
        for key, rows in _with_layout(frame).groupby(["nprocs", "_nodes", "_ppn"]):
            key = (int(key[0]), int(key[1]), int(key[2]))
            if key[0] not in counts or key in have or key[1] == 0:
                continue
            if key not in picked or rows["judged_at"].max() > picked[key]["judged_at"].max():
                picked[key] = rows
    if not picked:
        return main.iloc[0:0]
    return pd.concat([picked[k] for k in sorted(picked)])[list(main.columns)]


def _merged_provenance(db_path: str | Path, run_ids: list[str]) -> dict[str, str]:
    """run_provenance of every run combined; runs of different MPI libraries cannot be."""
    parts = [run_provenance(db_path, rid) for rid in run_ids]
    out: dict[str, str] = {}
    for key in ("mpi", "mpi-version"):
        values = sorted({p[key] for p in parts if key in p})
        if len(values) > 1:
            raise TuneError(f"runs {', '.join(run_ids)} measured different MPI libraries ({' / '.join(values)}); "
                            "a profile is for one library: pass --run-id for runs of one")
        if values:
            out[key] = values[0]
    machines = list(dict.fromkeys(p["machine"] for p in parts if "machine" in p))
    if machines:
        out["machine"] = "; ".join(machines)
    layouts = [p["layout"] for p in parts if "layout" in p]
    if layouts:
        out["layout"] = " ".join(layouts)
    return out


def tune_db(db_path: str | Path, out: str | Path, settings: TuneSettings | None = None,
            run_id: str | Sequence[str] | None = None) -> tuple[prof.Profile, pd.DataFrame]:
    """Load verdicts (colltune.verify.check.load_verdicts), tune, write the profile to `out`.

    Without run ids: the most recently judged run, plus the runs that measured its process
    counts on other node layouts (layout_companions). With run ids: exactly those runs."""
    from colltune.verify.check import CheckError, load_verdicts

    settings = settings or TuneSettings()
    wanted = [run_id] if isinstance(run_id, str) else list(run_id or [])
    try:
        frames = [load_verdicts(db_path, rid) for rid in wanted] if wanted else [load_verdicts(db_path)]
    except CheckError as exc:
        raise TuneError(str(exc)) from exc
    for rid, frame in zip(wanted or [None], frames):
        if frame.empty:
            raise TuneError(f"{db_path} holds no verdicts{f' for run {rid}' if rid else ''}: run "
                            f"`colltune check --db {db_path}` first")
    if not wanted:
        frames.append(layout_companions(db_path, frames[0]))
    verdicts = pd.concat([f for f in frames if not f.empty], ignore_index=True)
    run_ids = [str(r) for r in pd.unique(verdicts["run_id"])]
    profile, decisions = tune(verdicts, settings, _merged_provenance(db_path, run_ids))
    prof.write_profile(profile, out)
    return profile, decisions
