"""`colltune tune`: write a tuning profile from a check's verdicts."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pandas as pd
from rich.console import Console
from rich.table import Table

from colltune.commands import nextsteps
from colltune.tune import profile_view
from colltune.tune import tuner as tune_mod
from colltune.units import human_bytes

console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)


def _bytes_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int:
    try:
        return tune_mod.scratch_cap_from_env() if value is None else tune_mod.parse_bytes(value)
    except tune_mod.TuneError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command(name="tune")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("colltune.duckdb"),
              show_default=True, help="Results database with a check's verdicts (colltune check --db DB).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Profile file to write (docs/profile.md).")
@click.option("--run-id", "run_ids", multiple=True,
              help="Check run to use; repeat it to combine runs of other process counts or node layouts "
                   "(default: the most recently judged run, plus the latest run of each other node layout "
                   "of its process counts: docs/profile.md, \"Layouts\").")
@click.option("--min-gain", default=0.10, show_default=True, type=click.FloatRange(0.0, 10.0),
              help="Replace only where default median / variant median >= 1 + MIN_GAIN.")
@click.option("--scratch-cap", default=None, callback=_bytes_option,
              help="Largest scratch memory a variant may need (bytes, K/M/G suffix). "
                   "[default: $COLLTUNE_SCRATCH_BYTES or 256M]")
@click.option("--extension", type=click.Choice(["between", "none"]), default="between", show_default=True,
              help="between: a rule spans consecutive measured sizes with the same choice; "
                   "none: one rule per measured size. Never past the measured interval.")
@click.option("--per-layout", is_flag=True,
              help="A `nodes N ppn P` block for every node layout measured, also a process count's only one: "
                   "each rule applies only to communicators of the layout it was measured on (docs/profile.md, "
                   "\"Layouts\"; simulated layouts: docs/smpi.md). Default: layout-free where one layout was measured.")
@click.option("--cautious", is_flag=True, help="Ignore gains that carry a barrier warning (may be sync noise).")
@click.option("--show-decisions", is_flag=True, help="Print the decision for every measured size.")
def command(db_path: Path, out: Path, run_ids: tuple[str, ...], min_gain: float, scratch_cap: int,
            extension: str, per_layout: bool, cautious: bool, show_decisions: bool) -> None:
    """Write a tuning profile from the verdicts of `colltune check`.

    A mock-up replaces the library's collective for a (process count, message size) only where
    the check found it significantly faster, at least MIN_GAIN faster, and its scratch memory
    (docs/variants.md) fits under the cap. Library algorithms (lib:...) are listed, not written:
    use `colltune export --native` for them.

    \b
    Example:
      colltune check -n 4 --db results.duckdb
      colltune tune --db results.duckdb --out tuned.prof
      colltune validate --profile tuned.prof --db results.duckdb -n 4
      COLLTUNE_PROFILE=tuned.prof  (or: colltune run --profile tuned.prof -- mpiexec -n 4 ./app)
    """
    settings = tune_mod.TuneSettings(min_gain=min_gain, scratch_cap=scratch_cap, extension=extension,
                                     cautious=cautious, per_layout=per_layout)
    profile, decisions = tune_mod.tune_db(db_path, out, settings, list(run_ids))

    if show_decisions:
        table = Table(title="decision per measured size", title_justify="left")
        for col in ("procs", "layout", "collective", "bytes", "choice", "why", "rejected"):
            table.add_column(col)
        for r in decisions.itertuples():
            layout = f"{r.nodes}x{r.ppn}" if not pd.isna(r.nodes) else "-"
            table.add_row(str(r.nprocs), layout, r.collective, human_bytes(int(r.msg_bytes)),
                          r.variant if isinstance(r.variant, str) else "library", r.reason, r.candidates)
        console.print(table)
    console.print(profile_view.render(profile))

    from colltune.verify.check import load_verdicts

    used = profile.provenance.get("check-run", "").split()
    verdicts = pd.concat([load_verdicts(db_path, rid) for rid in used], ignore_index=True) if used \
        else load_verdicts(db_path)
    if "partial" in verdicts.columns and verdicts["partial"].fillna(False).astype(bool).any():
        err_console.print("[yellow]note:[/] some verdicts rest on an incomplete run (marked partial by the check); "
                          f"complete it with `{nextsteps.cli('bench', '--db', db_path, '--resume', 'latest')}` and "
                          f"check again (`{nextsteps.cli('check', '--no-measure', '--db', db_path)}`) before relying "
                          "on the profile", highlight=False, soft_wrap=True)
    lib = tune_mod.library_choices(verdicts, settings)
    if not lib.empty:
        console.print(f"{len(lib)} (collective, size) points where a library algorithm is >= "
                      f"{1 + min_gain:.2f}x faster: not in the profile (the interposer cannot select them); "
                      "the library's own tuning file can apply them (below)", highlight=False, soft_wrap=True)
    replaced = int(decisions["variant"].notna().sum())
    console.print(f"wrote {out}: {profile.rule_count()} rules from {replaced} of {len(decisions)} measured "
                  f"(procs, collective, size) points (hash {profile.content_hash():016x})", highlight=False)
    if not profile.rule_count():
        console.print("the profile changes nothing: no mock-up was faster by the margin anywhere", highlight=False)
    run_settings = _run_settings(db_path, used[0] if used else None)
    counts = [int(x) for x in profile.provenance.get("nprocs", "").split() if x.isdigit()]
    # the next step offers `export --native` only for points it can write (proven algorithms)
    from colltune.tune import native_export

    spec = run_settings.get("mpi")
    exportable = native_export.exportable_points(
        lib, native_export.proof_of(nextsteps.library_of_run(str(spec) if spec else None)))
    if exportable < len(lib):
        console.print(f"{len(lib) - exportable} of them use an algorithm the library's proof refuses in some class: "
                      "a native tuning file cannot apply it (`colltune selftest` shows why)",
                      highlight=False, soft_wrap=True)
    nextsteps.show(nextsteps.after_tune(
        db_path, out, rules=profile.rule_count(), nprocs=max(counts or [4]), run_settings=run_settings,
        library_points=exportable),
        note=f"{nextsteps.APP} stands for your program and its arguments")


def _run_settings(db_path: Path, run_id: str | None) -> dict[str, object]:
    """The measuring settings of the check the profile came from ({} if it is not stored)."""
    if run_id is None:
        return {}
    from colltune.store.database import Store
    from colltune.store.engine import StoreError

    try:
        with Store(db_path, read_only=True) as store:
            return dict(store.run_info(run_id).get("settings") or {})
    except StoreError:
        return {}
