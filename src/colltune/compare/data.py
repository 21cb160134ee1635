"""The runs a comparison reads: from one database's comparison, or from several databases.

A *source* on the command line is `[LABEL=]DB[@RUN_ID]`: a database measured by `colltune
compare` contributes every run of its newest comparison (labelled as measured), any other
database its newest run with measurements (labelled by its MPI library). What differs between
the runs (library, version, host, CPU, ranks per node, launcher settings) comes from their
`environment` tables.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from colltune import catalog
from colltune.catalog import DEFAULT
from colltune.compare.config import CompareError
from colltune.store.database import Store
from colltune.store.engine import StoreError
from colltune.verify import check

# Environment keys that say what a comparison compares, in the order they are shown.
FACTS = ("mpi_name", "mpi_version", "library_version", "hostnames", "cpu_model", "nodes", "ranks_per_node",
         "cores_available", "launcher", "idle_wait", "sync", "metric", "colltune_version")


@dataclass
class Member:
    """One configuration of a comparison: its label, its measured run, and the variant that stands
    for it at every point (`side`: the library's blocking call, or another form of it, or one of
    the library's algorithms: set_sides)."""

    label: str
    run: check.RunData
    config_env: dict[str, str] = field(default_factory=dict)
    side: str = DEFAULT

    @property
    def mpi_name(self) -> str:
        return str(self.run.info.get("mpi_name") or self.run.environment.get("mpi_name") or "unknown")


def _store(db_path: Path) -> Store:
    try:
        return Store(db_path, read_only=True)
    except StoreError as exc:
        raise CompareError(str(exc)) from None


def from_comparison(db_path: str | Path, comparison_id: str | None = None) -> list[Member]:
    """The runs of one comparison stored in `db_path` (default: its newest)."""
    db_path = Path(db_path)
    with _store(db_path) as store:
        rows = store.comparison_members(comparison_id)
    if rows.empty:
        which = f"comparison {comparison_id!r}" if comparison_id else "comparison"
        raise CompareError(f"{db_path} holds no {which}: measure one with `colltune compare --mpi openmpi,mpich "
                           f"--db {db_path}`, or name databases to compare: `colltune compare A.duckdb B.duckdb`")
    return [Member(str(r.label), check.load_run(db_path, str(r.run_id)), json.loads(r.config_env or "{}"))
            for r in rows.itertuples(index=False)]


def _parse_source(source: str) -> tuple[str | None, Path, str | None]:
    label, eq, rest = source.partition("=")
    if not eq or "/" in label:
        label, rest = None, source
    path, at, run_id = rest.rpartition("@") if "@" in rest else (rest, "", "")
    return label or None, Path(path), (run_id or None) if at else None


def from_sources(sources: Sequence[str]) -> list[Member]:
    """Members from `[LABEL=]DB[@RUN_ID]` arguments, labels made unique."""
    members: list[Member] = []
    for source in sources:
        label, path, run_id = _parse_source(source)
        if run_id is None:
            with _store(path) as store:
                compared = not store.comparison_members().empty
            if compared:
                found = from_comparison(path)
                if label is not None and len(found) == 1:
                    found[0].label = label
                members += found
                continue
        try:
            run = check.load_run(path, run_id)
        except check.CheckError as exc:
            raise CompareError(str(exc)) from None
        members.append(Member(label or str(run.info.get("mpi_name") or path.stem), run))
    _unique_labels(members)
    return members


def _unique_labels(members: list[Member]) -> None:
    """Two runs of one library get the database's name (or the run id) added to the label."""
    for m in members:
        if sum(o.label == m.label for o in members) > 1:
            twins = [o for o in members if o.label == m.label]
            names = [o.run.db_path.stem for o in twins]
            for o in twins:
                o.label = f"{o.label}@{o.run.db_path.stem if len(set(names)) == len(names) else o.run.run_id}"


def parse_sides(specs: Sequence[str], labels: Sequence[str]) -> dict[str, str]:
    """`--side [LABEL=]VARIANT` -> {label: variant}: the variant that stands for a configuration
    (all of them without LABEL=) at every point, e.g. `default#nonblocking`, `default#persistent`
    or `lib:allreduce:ring#nonblocking`; the others keep `default`."""
    sides: dict[str, str] = {}
    for spec in specs:
        label, eq, variant = spec.partition("=")
        if not eq:
            label, variant = "", spec
        if label and label not in labels:
            raise CompareError(f"--side {spec!r}: no configuration is labelled {label!r}; the labels are "
                               f"{', '.join(labels)}")
        kind = catalog.variant_kind(variant)
        if kind not in ("default", "form", "library"):
            raise CompareError(f"--side {spec!r}: a side is the library's own call: default, "
                               f"{', '.join(catalog.FORM_VARIANTS)} or lib:<collective>:<algorithm>[#<form>]")
        if kind == "library":
            try:
                catalog.library_variant(variant)
            except ValueError as exc:
                raise CompareError(f"--side {spec!r}: {exc}") from None
        sides.update({x: variant for x in ([label] if label else labels)})
    return sides


def set_sides(members: Sequence[Member], specs: Sequence[str]) -> None:
    for label, variant in parse_sides(specs, [m.label for m in members]).items():
        next(m for m in members if m.label == label).side = variant


def require_two(members: Sequence[Member]) -> None:
    if len(members) >= 2:
        return
    if not members:
        raise CompareError("nothing to compare: give two databases, or measure with --mpi openmpi,mpich")
    m = members[0]
    raise CompareError(f"{m.run.db_path} holds a single run ({m.label}, run {m.run.run_id}): a comparison needs "
                       f"two; give a second database (`colltune compare {m.run.db_path} OTHER.duckdb`) or "
                       "measure both libraries together with `colltune compare --mpi openmpi,mpich`")


def environment_table(members: Sequence[Member]) -> pd.DataFrame:
    """One row per fact (FACTS, env:* settings, and the library control variables (cvar:*) that
    every member has, with different values): each member's value and whether they differ."""
    keys = [k for k in FACTS if any(k in m.run.environment for m in members)]
    keys += sorted({k for m in members for k in m.run.environment if k.startswith(("env:", "cvar:"))}
                   | {f"env:{k}" for m in members for k in m.config_env})
    rows = []
    for key in keys:
        values = [m.run.environment.get(key, m.config_env.get(key.removeprefix("env:"), "")) for m in members]
        differs = len(set(values)) > 1
        shared = all(key in m.run.environment for m in members)
        if not key.startswith("cvar:") or (differs and shared):
            rows.append({"fact": key, **{m.label: v for m, v in zip(members, values, strict=True)},
                         "differs": differs})
    return pd.DataFrame(rows, columns=["fact", *(m.label for m in members), "differs"])
