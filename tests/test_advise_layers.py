"""Call sites in the application's own code through its communication layers (advise/callsites.py,
native/runtime/profchain.c): tiny C, C++ (a template wrapper layer in a shared library), Fortran and
mpi4py programs with known call chains (tests/programs/layers/). Each site names the application
line that calls the layer, with the layer's frames below it; a layer the user names is honoured."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from advise_support import profiled
from click.testing import CliRunner

from colltune.advise import callsites, patterns, profile_run, where
from colltune.commands import nextsteps
from colltune.commands.advise import command as advise_cmd

SOURCES = Path(__file__).resolve().parent / "programs" / "layers"


def line(source: str, marker: str) -> int:
    """The line of `source` carrying the comment `marker` (the tests name lines, not numbers)."""
    ends = (f"/* {marker} */", f"// {marker}", f"! {marker}")
    [n] = [i for i, text in enumerate((SOURCES / source).read_text().splitlines(), 1) if text.rstrip().endswith(ends)]
    return n


# Every chain is walked with the kept frame rules (native/runtime/profwalk.c) and unwound by
# libgcc too: the two must give the same frames at the same stack slots.
CHECK_WALKS = {"COLLTUNE_PROFILE_RUN_UNWIND_CHECK": "1"}


def walked_as_libgcc(directory: Path, every: bool = True) -> None:
    for rank in profile_run.read(directory).ranks:
        walked, checked, differed = rank.chain_walks
        assert (differed, checked) == (0, walked) and walked > 0, rank.chain_walks
        assert walked == rank.chain_unwinds or not every, (walked, rank.chain_unwinds)


def sites(run: profile_run.ProfileRun) -> dict[str, list[tuple[str, int]]]:
    return {r.name: sorted((s.label, s.calls) for s in r.sites) for r in where.rows(run)}


@pytest.fixture(scope="module")
def cxx_app(openmpi, tmp_path_factory):
    """libminipstream.so (the layer: reduce<T, Op> and gSum/gMax) and the application using it."""
    out = tmp_path_factory.mktemp("layers")
    cxx = Path(openmpi.mpicc).with_name("mpicxx")
    subprocess.run([str(cxx), "-O2", "-g", "-fPIC", "-shared", "-o", str(out / "libminipstream.so"),
                    str(SOURCES / "minipstream.cpp")], check=True)
    subprocess.run([str(cxx), "-O2", "-g", "-o", str(out / "layers_app"), str(SOURCES / "layers_app.cpp"),
                    f"-L{out}", "-lminipstream", f"-Wl,-rpath,{out}"], check=True)
    return out / "layers_app"


@pytest.fixture(scope="module")
def cxx_run(openmpi, openmpi_build, cxx_app, tmp_path_factory):
    directory = tmp_path_factory.mktemp("cxx-run") / "p"
    run = profiled(openmpi, openmpi_build, 2, [cxx_app], directory, CHECK_WALKS)
    assert "total 105" in run.stdout, run.describe()
    walked_as_libgcc(directory)
    return directory


def test_cxx_layer_found_from_the_data(cxx_run):
    # reduce<> is reached from gSum, gMax and norm: a layer. gSum and gMax have one caller each
    # here: the data cannot tell they are layers (the user can, below).
    run = profile_run.read(cxx_run)
    assert sites(run) == {"MPI_Allreduce": [
        ("mini::gMax (minipstream.cpp:25) <- mini::reduce", 7),
        ("mini::gSum (minipstream.cpp:19) <- mini::reduce", 20),
        (f"solver::norm (layers_app.cpp:{line('layers_app.cpp', 'LINE_D')}) <- mini::reduce", 4)]}
    # each chain starts at the caller of MPI_Allreduce (reduce<> in the library)
    for rank in run.ranks:
        for site in callsites.of(run, rank).values():
            assert site.frames[0] == "mini::reduce (minipstream.cpp:11)", site
            assert site.frames[-1].startswith("_start (layers_app+0x"), site


def test_cxx_user_layer_names_the_application_lines(cxx_run):
    a, b, c, d = (line("layers_app.cpp", f"LINE_{x}") for x in "ABCD")
    expected = {"MPI_Allreduce": [
        (f"solver::PCG::solve (layers_app.cpp:{a}) <- mini::gSum <- mini::reduce", 10),
        (f"solver::PCG::solve (layers_app.cpp:{b}) <- mini::gSum <- mini::reduce", 10),
        (f"solver::Smoother::sweep (layers_app.cpp:{c}) <- mini::gMax <- mini::reduce", 7),
        (f"solver::norm (layers_app.cpp:{d}) <- mini::reduce", 4)]}
    for layer in ("libminipstream.so", "libminipstream*", "mini::g*"):
        assert sites(profile_run.read(cxx_run, (layer,))) == expected, layer
    # the pattern is per application line: two lines, not one wrapper frame twice
    run = profile_run.read(cxx_run, ("libminipstream.so",))
    first = [(p.name, p.first, p.second, p.pairs) for p in patterns.find(run)][0]
    assert first == ("small_reductions", expected["MPI_Allreduce"][0][0], expected["MPI_Allreduce"][1][0], 10)


def test_cli_one_screen_application_lines_and_explain(openmpi, openmpi_build, cxx_app, tmp_path):
    out = tmp_path / "out"
    args = ["--db", str(tmp_path / "none.duckdb"), "--out", str(out), "--json", str(tmp_path / "a.json"),
            "--layer", "libminipstream.so", "--", str(openmpi.mpiexec), "-n", "2", str(cxx_app)]
    res = CliRunner().invoke(advise_cmd, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "a.json").read_text())
    [row] = report["where"]["collectives"]
    a, b = line("layers_app.cpp", "LINE_A"), line("layers_app.cpp", "LINE_B")
    assert f"solver::PCG::solve (layers_app.cpp:{a}) <- mini::gSum <- mini::reduce" in {
        s["site"] for s in row["sites"]}
    # One screen of at most 80 columns, the next steps' command lines wrapped (they paste whole).
    lines = res.output.splitlines()
    assert len(lines) <= 40, res.output
    # (a wrapped piece holding a single word longer than that, pytest's long paths, cannot be split)
    assert [x for x in lines if len(x) > 80 and not (x.startswith(nextsteps.INDENT) and
                                                     len(x.removesuffix(nextsteps.CONTINUED).split()) == 1)] == [], \
        res.output
    steps = nextsteps.printed_steps(res.output)
    assert [s.line.split(" -- ")[1] for s in steps] == [f"{openmpi.mpiexec} -n 2 {cxx_app}"] * len(steps)
    # One line per finding naming the application lines; the claim the run cannot make is gone.
    first = next(x for x in lines if x.startswith(" 1 "))
    assert first.endswith(f"reductions 10x PCG::solve (layers_app.cpp:{a}, :{b}): fuse (check)"), first
    assert "read the first's result here" not in res.output
    pattern = next(f for f in report["findings"] if f["strategy"] == "pattern")
    assert "buffers do not overlap the first's result" in " ".join(pattern["evidence"])
    assert pattern["check"].startswith("the second reduction's input must not be computed from the first's")
    # --explain N from the saved advice: the details, 80 columns, nothing run again
    res = CliRunner().invoke(advise_cmd, ["--out", str(out), "--explain", "1"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"1. {pattern['title'][:40]}")
    assert "check before changing the source: the second reduction's input" in " ".join(res.output.split())
    assert all(len(x) <= 80 for x in res.output.splitlines())
    res = CliRunner().invoke(advise_cmd, ["--out", str(out), "--explain", "99"])
    assert res.exit_code != 0 and "--explain 99: there are" in res.output


def test_observable_safe_findings_rank_first():
    # A Reduce+Bcast of the reduce's own result (safe as observed) outranks small reductions that
    # save ten times more (their data flow is the user's to check).
    from colltune.advise import findings

    safe = patterns.Pattern("reduce_bcast", "f (a.c:1)", "f (a.c:2)", "MPI_Reduce", "MPI_Bcast", 2, 3, 10, 8.0,
                            saving_per_pair_s=1e-6)
    check = patterns.Pattern("small_reductions", "g (a.c:5) <- comm_sum", "g (a.c:6) <- comm_sum",
                             "MPI_Allreduce", "MPI_Allreduce", 2, 3, 10, 8.0, saving_per_pair_s=1e-5)
    found = findings.ordered(patterns.findings([check, safe], 0.01))
    assert [f.data["pattern"] for f in found] == ["reduce_bcast", "small_reductions"]
    assert [f.check == "" for f in found] == [True, False]
    assert [f.brief for f in found] == ["Reduce+Bcast 10x f (a.c:1, :2): one MPI_Allreduce",
                                        "reductions 10x g (a.c:5, :6): fuse (check)"]


@pytest.fixture(scope="module")
def c_run(openmpi, openmpi_build, tmp_path_factory):
    from colltune.mpi import build

    out = tmp_path_factory.mktemp("c-layers")
    exe = build.compile_program(openmpi, [SOURCES / "layers_c.c"], out / "layers_c", ["-g"])
    stripped = out / "stripped" / "layers_c"
    stripped.parent.mkdir()
    subprocess.run(["strip", "-s", "-o", str(stripped), str(exe)], check=True)
    runs = {}
    for name, program in (("debug", exe), ("stripped", stripped)):
        runs[name] = out / name / "p"
        run = profiled(openmpi, openmpi_build, 2, [program], runs[name], CHECK_WALKS)
        assert "energy 12" in run.stdout, run.describe()
        walked_as_libgcc(runs[name])
    return runs


def test_c_helper_named_by_the_user(c_run):
    e, m = line("layers_c.c", "LINE_E"), line("layers_c.c", "LINE_M")
    assert sites(profile_run.read(c_run["debug"])) == {
        "MPI_Allreduce": [("comm_sum (layers_c.c:10)", 6)], "MPI_Bcast": [(f"main (layers_c.c:{m})", 3)]}
    assert sites(profile_run.read(c_run["debug"], ("comm_*",))) == {
        "MPI_Allreduce": [(f"energy (layers_c.c:{e}) <- comm_sum", 6)], "MPI_Bcast": [(f"main (layers_c.c:{m})", 3)]}


def test_stripped_binary_sites_are_offsets(c_run):
    # Without symbols each frame is `binary+0xoffset`, and a user layer by binary still cuts.
    table = sites(profile_run.read(c_run["stripped"]))
    [(allreduce, n)] = table["MPI_Allreduce"]
    assert n == 6 and allreduce.startswith("layers_c+0x") and " <- " not in allreduce
    run = profile_run.read(c_run["stripped"])
    [site] = {s for rank in run.ranks[:1] for s in callsites.of(run, rank).values() if s.label == allreduce}
    assert all(f.startswith("layers_c+0x") or "libc" in f for f in site.frames[:3]), site.frames


def test_realigned_stack_is_walked_through(openmpi, openmpi_build, tmp_path):
    # A layer whose frame realigns its stack (gcc's DRAP, as Debian's AVX2 builds do): its CFA is
    # read from its own frame (`DW_OP_breg6 N; DW_OP_deref`) and rbp is saved at rbp
    # (`DW_OP_breg6 0`). profwalk.c takes both forms: every chain walked, none differing from
    # libgcc's unwind, and the two callers above the realigned frame told apart.
    import re

    from colltune.mpi import build

    exe = build.compile_program(openmpi, [SOURCES / "layers_realign.c"], tmp_path / "layers_realign", ["-O2", "-g"])
    frames = subprocess.run(["readelf", "--debug-dump=frames", str(exe)], capture_output=True, text=True,
                            check=True).stdout
    assert re.search(r"DW_CFA_def_cfa_expression \(DW_OP_breg6 \(rbp\): -\d+; DW_OP_deref\)", frames), \
        "the compiler did not realign the layer's stack: the test would not test the walk"
    assert "DW_CFA_expression: r6 (rbp) (DW_OP_breg6 (rbp): 0)" in frames
    directory = tmp_path / "p"
    run = profiled(openmpi, openmpi_build, 2, [exe], directory, CHECK_WALKS)
    assert "total 7500" in run.stdout, run.describe()
    walked_as_libgcc(directory)
    p, v = line("layers_realign.c", "CALL_P"), line("layers_realign.c", "CALL_V")
    assert sites(profile_run.read(directory, ("realigned_*",))) == {"MPI_Allreduce": [
        (f"pressure (layers_realign.c:{p}) <- realigned_sum", 50),
        (f"velocity (layers_realign.c:{v}) <- realigned_sum", 50)]}


DEBIAN_MPICC = Path("/usr/bin/mpicc.openmpi")


@pytest.fixture(scope="module")
def debian(tmp_path_factory):
    """Debian's Open MPI (for gfortran's `use mpi` and for Debian's python3-mpi4py) and
    libcolltune built for it."""
    from colltune.measure import proof
    from colltune.mpi import build
    from colltune.mpi import libraries as mpi

    if not DEBIAN_MPICC.exists():
        pytest.skip("Debian's Open MPI is missing (make setup-fortran)")
    lib = mpi.identify(DEBIAN_MPICC)
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)
    return lib, art, tmp_path_factory.mktemp("debian")


def test_fortran_module_layer(debian):
    lib, art, out = debian
    fort = Path("/usr/bin/mpifort.openmpi")
    if not fort.exists() or shutil.which("gfortran") is None:
        pytest.skip("mpifort and gfortran are missing (make setup-fortran)")
    exe = out / "layers_fortran"
    subprocess.run([str(fort), "-g", "-O0", "-J", str(out), "-o", str(exe), str(SOURCES / "layers_fortran.f90")],
                   check=True)
    run = profiled(lib, art, 2, [exe], out / "f", CHECK_WALKS)
    assert "total     40.0" in run.stdout, run.describe()
    walked_as_libgcc(out / "f")
    e, p = line("layers_fortran.f90", "LINE_E"), line("layers_fortran.f90", "LINE_P")
    # comm_sum is called from energy and pressure: a layer from the data; gfortran's
    # __comm_MOD_comm_sum reads comm::comm_sum
    assert sites(profile_run.read(out / "f")) == {"MPI_Allreduce": [
        (f"energy_ (layers_fortran.f90:{e}) <- comm::comm_sum", 5),
        (f"pressure_ (layers_fortran.f90:{p}) <- comm::comm_sum", 3)]}


def test_mpi4py_says_the_python_line_is_not_recorded(debian):
    lib, art, out = debian
    python = Path("/usr/bin/python3")
    if subprocess.run([str(python), "-c", "import mpi4py"], capture_output=True).returncode != 0:
        pytest.skip("Debian's python3-mpi4py is missing (make setup-mpi4py)")
    run = profiled(lib, art, 2, [python, SOURCES / "layers_mpi4py.py"], out / "py", CHECK_WALKS)
    assert "total 22.0" in run.stdout, run.describe()
    walked_as_libgcc(out / "py", every=False)
    table = sites(profile_run.read(out / "py"))
    # mpi4py 3.1's comm.allreduce of a Python object is a reduce by Send/Recv and two Bcasts; every
    # call comes through the interpreter: one site per call, saying why it is no line
    note = callsites.PYTHON_NOTE
    assert table == {"MPI_Bcast": [(note, 16)], "MPI_Send": [(note, 16)], "MPI_Recv": [(note, 16)]}


def test_findings_at_one_line_through_different_layer_calls_are_told_apart():
    # HPCC (stripped): one helper function holds three MPI_Barrier calls, each pair a finding at
    # the same application frame; their one-line briefs printed the same line three times. Where
    # briefs would repeat, the frame below the application's (the layer's call) is added, as an
    # offset where both are in one object; a brief that is unique keeps its short form.
    from colltune.advise import patterns

    def barrier(first: str, second: str, pairs: int, call: str = "MPI_Barrier") -> patterns.Pattern:
        return patterns.Pattern("barrier_before_sync", first, second, "MPI_Barrier", call, 2, -1, pairs, 0.0,
                                saving_per_pair_s=0.0028)

    def sums(second: str) -> patterns.Pattern:
        return patterns.Pattern("small_reductions", "solver::PCG::solve (a.cpp:10) <- mini::gSum <- mini::reduce",
                                second, "MPI_Allreduce", "MPI_Allreduce", 2, 3, 10, 8.0, saving_per_pair_s=1e-3)

    found = patterns.findings([barrier("hpcc+0x1dc6d <- hpcc+0x1eed6", "hpcc+0x1dc6d <- hpcc+0x1eeeb", 10),
                               barrier("hpcc+0x1dc6d <- hpcc+0x1eeeb", "hpcc+0x1dc6d <- hpcc+0x1f0af", 10),
                               barrier("hpcc+0x42835", "hpcc+0x4285f", 520, "MPI_Alltoall"),
                               sums("solver::PCG::solve (a.cpp:10) <- mini::gMax <- mini::reduce"),
                               sums("solver::PCG::solve (a.cpp:10) <- mini::gMin <- mini::reduce"),
                               sums("solver::PCG::solve (a.cpp:12) <- mini::gSum <- mini::reduce")], 1.0)
    assert [f.brief for f in found] == [
        "Barrier before MPI_Barrier 10x hpcc+0x1dc6d <- +0x1eed6: remove (check)",
        "Barrier before MPI_Barrier 10x hpcc+0x1dc6d <- +0x1eeeb: remove (check)",
        "Barrier before MPI_Alltoall 520x hpcc+0x42835: remove (check)",
        "reductions 10x PCG::solve (a.cpp:10) <- mini::gSum, mini::gMax: fuse (check)",
        "reductions 10x PCG::solve (a.cpp:10) <- mini::gSum, mini::gMin: fuse (check)",
        "reductions 10x PCG::solve (a.cpp:10, :12): fuse (check)"]
