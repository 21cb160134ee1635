"""`colltune selftest`: prove that every variant gives the library's own result."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from colltune.commands.bench_options import platform_option
from colltune.measure import proof as pf
from colltune.measure import selftest as st
from colltune.mpi import build
from colltune.mpi import libraries as mpi

MAX_FAILURES_SHOWN = 20
# The matrix's datatypes whose sums Open MPI 5.0's op/avx saturates (a library finding).
SATURATING = ("MPI_UINT8_T",)


def _nprocs(values: tuple[str, ...]) -> list[int]:
    counts: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not part.isdigit() or int(part) < 1:
                raise click.BadParameter(f"{part!r} is not a process count (a positive integer)",
                                         param_hint="-n")
            counts.append(int(part))
    return counts


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


def _table(report: st.Report, variants: list[st.VariantResult]) -> Table:
    ranks = ",".join(str(r.nprocs) for r in report.launches)
    table = Table(title=f"colltune selftest: {report.library.short_version}, ranks {ranks}",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    # The variant's name starts with its collective: no column of its own, so the table fits
    # 80 columns without wrapping the figures.
    table.add_column("variant", no_wrap=True)
    table.add_column("GL", no_wrap=True)
    table.add_column("cases", justify="right", no_wrap=True)
    table.add_column("fail", justify="right", no_wrap=True)
    table.add_column("not applicable", overflow="fold", min_width=12)
    table.add_column("rules", no_wrap=True)
    for v in variants:
        failures = f"[bold red]{v.failures}[/]" if v.failures else "0"
        rules = "ok"
        if v.reason_mismatches or v.nonuniform:
            rules = f"[bold red]{v.reason_mismatches} wrong, {v.nonuniform} nonuniform[/]"
        table.add_row(v.variant, v.guideline, str(v.cases), failures, _reasons(v.not_applicable), rules)
    table.caption = ("rules: each not-applicable answer checked against docs/variants.md's rules "
                     f"({sum(v.cases + v.probes for v in variants)} answers)")
    table.caption_justify = "left"
    return table


def _print_failures(console: Console, report: st.Report) -> None:
    failures = [f for r in report.launches for f in r.failures]
    for f in failures[:MAX_FAILURES_SHOWN]:
        case = ", ".join(f"{k}={v}" for k, v in f.case.items())
        console.print(f"[red]{f.what}[/] {f.variant} (rank {f.rank} of {f.nprocs}): {f.detail}\n"
                      f"    case: {case}", highlight=False)
    if len(failures) > MAX_FAILURES_SHOWN:
        console.print(f"... {len(failures) - MAX_FAILURES_SHOWN} more failure lines (see --json)")


@click.command(context_settings={"max_content_width": 100})
@click.option("--mpi", "mpi_spec", default=None, metavar="MPI",
              help="MPI library: openmpi (embedded, default), mpich, intel, smpi, or a path to an mpicc")
@platform_option
@click.option("-n", "--nprocs", "nprocs", multiple=True, metavar="RANKS",
              help="process counts, repeatable or comma-separated (default 4; for the MPICH "
                   "family at most the number of cores, as it busy-polls)")
@click.option("--quick", is_flag=True,
              help="smaller matrix (counts 0 and 7, fewer datatypes on the split and duplicated "
                   "communicators, one 1 MiB case per collective)")
@click.option("--no-big", "no_big", is_flag=True, help="skip the 1 MiB cases")
@click.option("-c", "--collective", default=None, metavar="NAME",
              help="only the variants of one collective (e.g. allreduce)")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="also write the results (counts per variant, failure details) as JSON")
@click.option("--timeout", type=float, default=1800.0, show_default=True,
              help="seconds per launch before the driver is stopped (a hang is a failure)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@click.option("--prove/--no-prove", default=True, show_default=True,
              help="also prove every member (mock-ups and the library's own algorithms) per case "
                   "class and write the proof the interposer serves by (not with --collective)")
@click.option("--nonblocking", is_flag=True,
              help="the proof also covers the library's algorithms of the nonblocking forms "
                   "(lib:<coll>:<alg>#nonblocking, which COLLTUNE_FORCE may name for MPI_I<coll>), "
                   "each against the library's own MPI_I<coll>: one launch each, 30-45 s more here")
@click.option("--persistent", is_flag=True,
              help="the proof also covers the library's algorithms of the persistent forms "
                   "(lib:<coll>:<alg>#persistent, which COLLTUNE_FORCE may name for "
                   "MPI_<Coll>_init), each against the library's own MPI_<Coll>_init started "
                   "twice: one launch each, as long again as --nonblocking")
@click.option("--reference-dir", "reference_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, metavar="DIR",
              help="where the proof of an algorithm fixed per launch (Intel MPI) passes the "
                   "library's results from one launch to the next, a file per rank: on several "
                   "nodes a directory they all share (default: $COLLTUNE_REFERENCE_DIR, else the "
                   "build's directory, which every rank runs the driver from)")
def command(mpi_spec: str | None, nprocs: tuple[str, ...], quick: bool, no_big: bool,
            collective: str | None, json_path: Path | None, timeout: float, quiet: bool,
            prove: bool, nonblocking: bool, persistent: bool, reference_dir: Path | None) -> None:
    """Run every variant against the MPI library's own collective and compare the results.

    Cases: MPI_BYTE, MPI_INT, MPI_DOUBLE, a contiguous and a vector derived datatype; counts 0,
    1, 7, 1000 and 1 MiB; roots 0, middle and last; MPI_IN_PLACE wherever the standard allows
    it; MPI_SUM, MPI_MAX, MPI_BOR and user-defined commutative and non-commutative ops;
    MPI_COMM_WORLD, a split and a duplicated communicator. Results must be bit-identical, except
    sums of doubles, which may differ by the worst-case rounding of two summation orders
    (docs/variants.md). Every "not applicable" is checked against the documented rules, also on
    an inter-communicator and for count overflow and the scratch cap.

    Then the proof (unless --no-prove or -c): the mock-ups and each of the library's own
    algorithms, forced one launch each, per case class (buffer mode, op class, datatype class,
    size band), over the matrix and a sweep of what can change a result (every integer width
    with overflowing values, floats whose sums round by order, counts around vector widths and
    segment sizes up to 70,000), bit for bit; the interposer serves a member only in the classes
    it passed here, and order-sensitive sums only on communicators of the sizes proven
    (docs/select.md, "The proof"). The table lists every member with the classes it is refused in and the first
    failing case; the proof is written next to the library's build of libcolltune. Intel MPI's
    algorithms (I_MPI_ADJUST_*, fixed per launch) are proven too, each in a launch set to it
    against the library's results of a launch without: they are no members of any mode, but
    `export --native intel` writes settings that apply them to every call.

    Exit code 0: no mismatch (differences the proof explains by a library finding, such as
    Open MPI's saturating 8-bit sums, are refused per class, not failures); 1: a mismatch, a
    wrong reason, or a failed launch.

    \b
    Examples:
      colltune selftest                     4 ranks of the embedded Open MPI
      colltune selftest -n 1,2,3,4,5,8
      colltune selftest --mpi mpich -n 2
      colltune selftest -c allreduce --json allreduce.json
      colltune selftest --nonblocking       the nonblocking forms' algorithms proven too
      colltune selftest --persistent        the persistent forms' algorithms proven too
    """
    console = Console()
    errors = Console(stderr=True)
    lib = mpi.resolve(mpi_spec)
    counts = _nprocs(nprocs) or [st.default_nprocs(lib)]
    if prove and collective is None and reference_dir is not None:
        pf.reference_root(lib, reference_dir)   # before the matrix: an unwritable one fails now
    if collective is not None and collective not in _collectives():
        raise click.BadParameter(f"unknown collective {collective!r}; choose from "
                                 f"{', '.join(_collectives())}", param_hint="--collective")
    if quiet:
        report = st.run(lib, counts, quick=quick, big=not no_big, collective=collective,
                        timeout=timeout)
    else:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=errors, transient=True) as progress:
            tasks = [progress.add_task(f"{n} ranks", total=None) for n in counts]

            def advance(idx: int, done: int, total: int, what: str) -> None:
                progress.update(tasks[idx], completed=done, total=total,
                                description=f"{counts[idx]} ranks: {what}")

            report = st.run(lib, counts, quick=quick, big=not no_big, collective=collective,
                            on_progress=advance, timeout=timeout)
    # With --collective the driver still probes every variant's rules: show only that one's.
    variants = [v for v in report.variants if collective is None or v.collective == collective]
    console.print(_table(report, variants))
    if json_path is not None:
        json_path.write_text(st.report_json(report))
    _print_failures(errors, report)
    cases = sum(v.cases for v in variants)
    proof = None
    if prove and collective is None:
        # Without -n the proof runs at its own default (a non-power-of-two count).
        forms = [f for f, on in (("nonblocking", nonblocking), ("persistent", persistent)) if on]
        proof = _prove(lib, _nprocs(nprocs), quiet, errors, forms, reference_dir)
        console.print(_members_table(proof))
        for finding in proof.findings:
            console.print(f"[yellow]library finding:[/] {finding}", highlight=False)
    explained = [v for v in variants if not v.ok and _explained(v, report, proof)]
    if explained:
        console.print(_explained_note(explained, report), highlight=False)
    bad = [v for v in report.variants if not v.ok and not _explained(v, report, proof)]
    seconds = sum(r.seconds for r in report.launches)
    if bad:
        console.print(f"[bold red]FAILED:[/] {len(bad)} of {len(variants)} variants: "
                      f"{', '.join(v.variant for v in bad)} ({cases} cases, {seconds:.1f} s)")
        sys.exit(1)
    console.print(f"[bold green]OK:[/] {len(variants)} variants, {cases} cases, every "
                  f"not-applicable as the rules say ({seconds:.1f} s in the drivers)"
                  + ("" if proof is None else
                     f"; proof written to {pf.proof_path(build.ensure_built(lib))} "
                     f"({proof.seconds:.0f} s)"))


def _prove(lib: mpi.MpiLibrary, counts: list[int], quiet: bool, errors: Console,
           forms: list[str], reference_dir: Path | None = None) -> pf.Proof:
    nprocs = tuple(counts) if counts else None
    if quiet:
        proof = pf.prove(lib, nprocs, forms=forms, at_launch=True, reference_dir=reference_dir)
    else:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=errors, transient=True) as progress:
            task = progress.add_task("proof", total=None)

            def step(done: int, total: int, what: str) -> None:
                progress.update(task, completed=done, total=total, description=f"proof: {what}")

            proof = pf.prove(lib, nprocs, on_step=step, forms=forms, at_launch=True,
                             reference_dir=reference_dir)
    pf.write(proof)
    return proof


def _explained(v: st.VariantResult, report: st.Report, proof: pf.Proof | None) -> bool:
    """A mock-up whose only failures are 8- or 16-bit sums where the library itself breaks
    modular arithmetic: the library's bug, refused per class by the proof, not the mock-up's."""
    if proof is None or not proof.findings or v.reason_mismatches or v.nonuniform:
        return False
    mine = [f for r in report.launches for f in r.failures if f.variant == v.variant]
    return bool(mine) and all(f.case.get("datatype") in SATURATING and f.case.get("op") == "MPI_SUM"
                              for f in mine)


def _explained_note(explained: list[st.VariantResult], report: st.Report) -> str:
    """The matrix's table counts every mismatch before the proof has run; this line says which
    of them the library finding explains, so that a reader of the table does not take them for
    the variants' own."""
    names = {v.variant for v in explained}
    lines = sum(1 for r in report.launches for f in r.failures if f.variant in names)
    listed = ", ".join(f"{v.variant} ({v.guideline})" for v in explained)
    return (f"[yellow]not failures:[/] the {lines} mismatch lines of {listed} are all MPI_SUM on "
            f"{'/'.join(SATURATING)}, which the library's own reduction saturates on some of "
            f"its paths (the finding above): its arithmetic, not the variants'; the proof "
            f"refuses those classes")


def _members_table(proof: pf.Proof) -> Table:
    ranks = ",".join(map(str, proof.nprocs))
    table = Table(title=f"proof: {proof.library.short_version}, ranks {ranks}, "
                        f"{proof.seconds:.0f} s", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
    table.add_column("member", no_wrap=True)
    table.add_column("passed", justify="right", no_wrap=True)
    table.add_column("refused classes (first failing case)", overflow="fold")
    for name in sorted(proof.members, key=lambda n: (not n.startswith("lib:"), n)):
        m = proof.members[name]
        # The first failure's what and where; the full case is in the proof file.
        refused = "; ".join(f"[red]{c}[/]: {m.evidence.get(c, 'failed').split(' (')[0]}"
                            for c in sorted(m.failed))
        table.add_row(name, str(len(m.passed)), refused or "-")
    table.caption = ("a member serves a call only in the classes it passed here "
                     "(docs/select.md, \"The proof\")")
    table.caption_justify = "left"
    return table


def _collectives() -> list[str]:
    from colltune import catalog

    return catalog.load().collective_names()
