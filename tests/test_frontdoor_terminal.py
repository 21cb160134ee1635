"""Terminal output at any width (issue 14, defect 7): `colltune mpi list` never folds a path over
several lines; paths are shortened to fit, a list replaces the table when the terminal is narrow,
and a wide terminal gets the whole paths."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from colltune.commands import mpi as mpi_cmd
from colltune.mpi.libraries import MpiLibrary
from colltune.terminal import shorten_path

SITE = "/opt/site/software/mpi/openmpi-5.0.11-gcc-13.2.0/bin"
LIBS = [
    MpiLibrary(name="openmpi", family="openmpi", version="Open MPI v5.0.11, package: Open MPI", mpi_version="3.1",
               mpicc=Path(f"{SITE}/mpicc"), mpiexec=Path(f"{SITE}/mpiexec"), origin="PATH"),
    MpiLibrary(name="mpich", family="mpich", version="MPICH Version: 4.0.2", mpi_version="4.0",
               mpicc=Path("/usr/bin/mpicc.mpich"), mpiexec=Path("/usr/bin/mpiexec.mpich"), origin="PATH"),
]


@pytest.mark.parametrize(("path", "width", "shown"), [
    ("/usr/bin/mpicc.mpich", 80, "/usr/bin/mpicc.mpich"),  # fits: untouched
    (f"{Path.home()}/mpi/bin/mpicc", len("~/mpi/bin/mpicc"), "~/mpi/bin/mpicc"),
    ("/work/wt/frontdoor/.mpi/mpich/bin/mpicc", 30, "/work/…/.mpi/mpich/bin/mpicc"),
    ("/work/wt/frontdoor/.mpi/mpich/bin/mpicc", 23, "/work/…/mpich/bin/mpicc"),
    ("/work/wt/frontdoor/.mpi/mpich/bin/mpicc", 20, "/wo…/mpich/bin/mpicc"),
    (f"{SITE}/mpicc", 41, "/opt/site/…pi-5.0.11-gcc-13.2.0/bin/mpicc"),
    ("/usr/bin/mpiexec.openmpi", 12, "/usr/…penmpi"),
])
def test_shorten_path(path: str, width: int, shown: str) -> None:
    assert shorten_path(path, width) == shown
    assert len(shown) <= width


def _render(width: int) -> tuple[object, list[str]]:
    view = mpi_cmd._libraries_view(LIBS, width)
    console = Console(width=width, file=io.StringIO())
    console.print(view)
    return view, console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def _row(lines: list[str], name: str) -> list[str]:
    return [line.split() for line in lines if line.split()[:1] == [name]][0]


def test_80_columns_lists_whole_paths_one_per_line() -> None:
    view, lines = _render(80)
    assert not isinstance(view, Table)
    assert max(map(len, lines)) <= 80
    assert lines == [
        "MPI libraries",
        "openmpi  Open MPI v5.0.11  (openmpi ABI, MPI 3.1, found via PATH)",
        f"  mpicc    {SITE}/mpicc",
        f"  mpiexec  {SITE}/mpiexec",
        "mpich  MPICH 4.0.2  (mpich ABI, MPI 4.0, found via PATH)",
        "  mpicc    /usr/bin/mpicc.mpich",
        "  mpiexec  /usr/bin/mpiexec.mpich",
    ]


def test_40_columns_shorten_the_paths_in_the_list() -> None:
    _, lines = _render(40)
    assert max(map(len, lines)) <= 40
    assert f"  mpicc    {shorten_path(f'{SITE}/mpicc', 29)}" in lines
    assert "  mpicc    /opt/s…1-gcc-13.2.0/bin/mpicc" in lines


def test_medium_width_table_with_shortened_paths() -> None:
    view, lines = _render(150)
    assert isinstance(view, Table) and max(map(len, lines)) <= 150
    assert _row(lines, "openmpi") == ["openmpi", "Open", "MPI", "v5.0.11", "openmpi", "3.1", "PATH",
                                      "/opt/site/…pi-5.0.11-gcc-13.2.0/bin/mpicc",
                                      "/opt/site…i-5.0.11-gcc-13.2.0/bin/mpiexec"]
    assert _row(lines, "mpich")[-2:] == ["/usr/bin/mpicc.mpich", "/usr/bin/mpiexec.mpich"]


def test_wide_terminal_gets_whole_paths() -> None:
    view, lines = _render(220)
    assert isinstance(view, Table) and max(map(len, lines)) <= 220
    assert _row(lines, "openmpi")[-2:] == [f"{SITE}/mpicc", f"{SITE}/mpiexec"]
    assert len([line for line in lines if "/" in line]) == 2  # one line per library: nothing wraps


@pytest.mark.parametrize("columns", [80, 250])
def test_mpi_list_command_at_a_terminal_width(columns: int) -> None:
    """The real command on this machine's libraries, width from COLUMNS as a terminal sets it."""
    def mpi_list(*args: str) -> str:
        return subprocess.run([str(Path(sys.executable).parent / "colltune"), "mpi", "list", *args],
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "COLUMNS": str(columns)}).stdout

    libraries = json.loads(mpi_list("--json"))["libraries"]
    out = mpi_list()
    lines = out.splitlines()
    assert libraries and max(map(len, lines)) <= columns
    path_lines = [line for line in lines if "/" in line]
    for lib in libraries:
        for path in (lib["mpicc"], lib["mpiexec"]):
            # every path whole on one line (these fit both widths), on no other line in part
            # (whole words: /usr/bin/mpicc is a prefix of Debian's /usr/bin/mpicc.mpich)
            assert sum(path in line.split() for line in path_lines) == 1, out
    assert len(path_lines) == (2 * len(libraries) if columns == 80 else len(libraries))


class _Medians:
    """The one store reader the bench overview uses."""

    def __init__(self, rows: list[tuple[int, str, int, str, float]]) -> None:
        import pandas as pd

        self.frame = pd.DataFrame(
            [(n, c, b, v, launch, t * (1 + launch / 100)) for n, c, b, v, t in rows for launch in range(3)],
            columns=["nprocs", "collective", "msg_bytes", "variant", "launch_idx", "median_s"])

    def launch_medians(self, run_id: str) -> object:
        return self.frame


def _overview(rows: list[tuple[int, str, int, str, float]], width: int) -> list[str]:
    from colltune.commands.bench import _print_overview

    console = Console(width=width, file=io.StringIO())
    _print_overview(_Medians(rows), "r", console)  # type: ignore[arg-type]
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_bench_overview_at_80_columns() -> None:
    short = [(2, "allreduce", 8, "default", 1.65e-6), (2, "allreduce", 8, "allreduce_as_reduce_bcast", 1.78e-6)]
    assert _overview(short, 90)[1:] == [
        "procs collective bytes default us launches fastest other               us default/it",
        "    2 allreduce      8       1.67        3 allreduce_as_reduce_bcast 1.80       0.93"]
    lines = _overview(short, 80)
    assert max(map(len, lines)) <= 80
    assert [line.rstrip() for line in lines[1:]] == [
                         "2 procs allreduce 8 B: default 1.67 us (3 launches); fastest other",
                         "allreduce_as_reduce_bcast 1.80 us, default/it 0.93"]
    long = [(16, "reduce_scatter_block", 1048576, "default", 2.5e-3),
            (16, "reduce_scatter_block", 1048576, "reducescatterblock_as_reducescatter_with_padding", 1.25e-3)]
    lines = _overview(long, 80)
    assert max(map(len, lines)) <= 80
    # too wide for a table: a list that wraps between words, never inside a name
    text = " ".join(" ".join(lines[1:]).split())
    assert any("reducescatterblock_as_reducescatter_with_padding" in line for line in lines)
    assert text == ("16 procs reduce_scatter_block 1048576 B: default 2525.00 us (3 launches); fastest other "
                    "reducescatterblock_as_reducescatter_with_padding 1262.50 us, default/it 2.00")
    assert _overview(long, 200)[2].split() == ["16", "reduce_scatter_block", "1048576", "2525.00", "3",
                                               "reducescatterblock_as_reducescatter_with_padding", "1262.50", "2.00"]
