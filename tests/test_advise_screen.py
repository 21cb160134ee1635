"""advise's one screen (issue 34, "What it must show": at most 40 lines of at most 80 columns
before the details, every finding naming an application line or saying why it cannot): long C++
sites shortened by dropping what the reader needs least before any cut, address-only sites with
the line that says why, the next steps' command lines wrapped so that they still paste as one
command, and the placement lines said in 80 columns. Pure: no MPI run (the five applications'
screens are benchmarks/advise/round15/after/, checked by benchmarks/advise/check_screen.py)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from colltune.advise import output, patterns, symbols, topology, where
from colltune.advise.findings import Finding
from colltune.advise.profile_run import Mapping
from colltune.commands import nextsteps

LAMMPS = "LAMMPS_NS::ComputePressure::virial_compute (liblammps.so.0+0x2f357d)"


def test_a_cxx_site_drops_its_object_then_its_namespaces_before_any_cut():
    label = LAMMPS + " <- LAMMPS_NS::Thermo::compute"
    assert where.fit_site(label, 100) == label
    # the object first (the function names the code; the object is in the JSON), the layer next
    assert where.fit_site(label, 90) == "LAMMPS_NS::ComputePressure::virial_compute (+0x2f357d) <- LAMMPS_NS::Thermo::compute"
    assert where.fit_site(label, 80) == "LAMMPS_NS::ComputePressure::virial_compute (+0x2f357d) <- ..."
    assert where.fit_site(label, 60) == "LAMMPS_NS::ComputePressure::virial_compute (+0x2f357d)"
    # then the namespaces (Class::method stays), then the offset
    assert where.fit_site(label, 45) == "ComputePressure::virial_compute (+0x2f357d)"
    assert where.fit_site(label, 35) == "ComputePressure::virial_compute"
    # only then is the name cut in the middle: its start and its end stay
    assert where.fit_site(label, 25) == "ComputePres...ial_compute"
    # a file:line always stays; an address stays whole, its object cut if it must
    assert where.fit_site("ns::Solver::residual_norm (solver.cpp:142) <- mini::reduce", 40) == \
        "Solver::residual_norm (solver.cpp:142)"
    assert where.fit_site("a_rather_long_executable_name+0x1c45c", 30) == "a_rather_l...able_name+0x1c45c"


def _pattern(name: str, first: str, second: str, pairs: int, second_call: str = "MPI_Allreduce",
             first_call: str = "MPI_Allreduce") -> patterns.Pattern:
    return patterns.Pattern(name, first, second, first_call, second_call, 2, 3, pairs, 8.0, saving_per_pair_s=None)


def test_the_compact_table_drops_the_object_of_every_named_site():
    assert where.without_object(LAMMPS) == "LAMMPS_NS::ComputePressure::virial_compute (+0x2f357d)"
    # the application frame's object only; a file:line and an address stay
    assert where.without_object("Foam::PCG::scalarSolve (libOpenFOAM.so+0x5fe401) <- Foam::reduce (libPstream.so+0x6daa)") \
        == "Foam::PCG::scalarSolve (+0x5fe401) <- Foam::reduce (libPstream.so+0x6daa)"
    assert where.without_object("PCG::solve (layers_app.cpp:19) <- mini::reduce") == \
        "PCG::solve (layers_app.cpp:19) <- mini::reduce"
    assert where.without_object("hpcc+0x8be0") == "hpcc+0x8be0"


def test_pattern_rows_keep_the_application_function_within_80_columns():
    lammps = patterns.findings([
        _pattern("small_reductions", "LAMMPS_NS::ComputePE::compute_scalar (liblammps.so.0+0x2f23ed)",
                 LAMMPS, 81),
        _pattern("barrier_before_sync", "LAMMPS_NS::CreateAtoms::command (liblammps.so.0+0x31a453)",
                 "LAMMPS_NS::CreateAtoms::add_lattice (liblammps.so.0+0x31993b)", 1, first_call="MPI_Barrier"),
        _pattern("small_reductions", "Foam::PCG::scalarSolve (libOpenFOAM.so+0x5fe53e) <- Foam::reduce",
                 "Foam::PCG::scalarSolve (libOpenFOAM.so+0x5fe6ca) <- Foam::reduce", 2050),
        _pattern("reduce_bcast", "examl-avx2+0x43b9e", "examl-avx2+0x43bbe", 24944, "MPI_Bcast", "MPI_Reduce"),
    ], 1.0)
    # the JSON's brief: the functions without their objects (offsets where one function has two)
    assert [f.brief for f in lammps] == [
        "reductions 81x ComputePE::compute_scalar, ComputePressure::virial_compute: fuse (check)",
        "Barrier before MPI_Allreduce 1x CreateAtoms::command: remove (check)",
        "reductions 2,050x PCG::scalarSolve (+0x5fe53e, +0x5fe6ca): fuse (check)",
        "Reduce+Bcast 24,944x examl-avx2+0x43b9e, +0x43bbe: one MPI_Allreduce"]
    # the row (67 columns after `#` and the saving): shorter words, then classes, never the name's end
    rows = [output.finding_row(f, 67) for f in lammps]
    assert rows == ["reductions 81x compute_scalar, virial_compute: fuse (check)",
                    "Barrier before Allreduce 1x CreateAtoms::command: remove (check)",
                    "reductions 2,050x scalarSolve (+0x5fe53e, +0x5fe6ca): fuse (check)",
                    "Reduce+Bcast 24,944x examl-avx2+0x43b9e, +0x43bbe: one Allreduce"]
    foam = patterns.findings([_pattern("small_reductions", "Foam::fvMatrix::solveSegregatedOrCoupled (libfv.so+0x14a2)",
                                       "Foam::GAMGSolver::scalarSolve (libOpenFOAM.so+0x5fe1)", 40)], 1.0)
    assert [output.finding_row(f, w) for f in foam for w in (80, 70, 60)] == [
        "reductions 40x solveSegregatedOrCoupled, GAMGSolver::scalarSolve: fuse (check)",   # the longest first
        "reductions 40x solveSegregatedOrCoupled, scalarSolve: fuse (check)",
        "reductions 40x solveSeg...Coupled, scalarSolve: fuse (check)"]
    assert output.finding_row(lammps[1], 50) == "Barrier+Allreduce 1x command: remove (check)"


def test_findings_alike_but_for_their_count_are_told_apart_by_the_frame_below():
    # ExaML (stripped): one helper reached through several callers; its Reduce and Bcast share the
    # frame below it, shown once
    chain = "examl-avx2+0x1c45c <- examl-avx2+{} <- examl-avx2+0x19565 <- examl-avx2+{}"
    found = patterns.findings([
        _pattern("reduce_bcast", chain.format("0x1a66e", "0x3b7fe"), chain.format("0x1a66e", "0x3b814"), 528,
                 "MPI_Bcast", "MPI_Reduce"),
        _pattern("reduce_bcast", chain.format("0x1a6bc", "0x3b7fe"), chain.format("0x1a6bc", "0x3b814"), 484,
                 "MPI_Bcast", "MPI_Reduce")], 1.0)
    assert [f.brief for f in found] == ["Reduce+Bcast 528x examl-avx2+0x1c45c <- +0x1a66e: one MPI_Allreduce",
                                        "Reduce+Bcast 484x examl-avx2+0x1c45c <- +0x1a6bc: one MPI_Allreduce"]
    # functions without a line: their offsets first, then the frame below
    same = "LAMMPS_NS::Timer::barrier_stop (liblammps.so.0+0x{})"
    found = patterns.findings([
        _pattern("barrier_before_sync", same.format("595d1b"), "LAMMPS_NS::Finish::end (liblammps.so.0+0x35a63d)", 1,
                 first_call="MPI_Barrier"),
        _pattern("barrier_before_sync", same.format("595d40"), "LAMMPS_NS::Finish::end (liblammps.so.0+0x35a63d)", 3,
                 first_call="MPI_Barrier")], 1.0)
    assert [f.brief for f in found] == ["Barrier before MPI_Allreduce 1x Timer::barrier_stop (+0x595d1b): remove (check)",
                                        "Barrier before MPI_Allreduce 3x Timer::barrier_stop (+0x595d40): remove (check)"]


def test_rows_alike_but_for_a_frame_further_down_say_where_their_chains_part():
    # ExaML (benchmarks/advise/round15/after/: rows 2 and 3 both read `examl-avx2+0x1c45c <-
    # +0x1a66e`): one line reached through one call of its caller, from two callers further down
    # (0x19a37, 0x19aa8). The screen's rows name the frame where the chains part; the JSON's briefs
    # stay (their data has the whole chains).
    chain = "examl-avx2+0x1c45c <- examl-avx2+{} <- examl-avx2+{} <- examl-avx2+0x19565 <- examl-avx2+{}"

    def pair(below: str, caller: str, pairs: int) -> patterns.Pattern:
        return _pattern("reduce_bcast", chain.format(below, caller, "0x3b7fe"), chain.format(below, caller, "0x3b814"),
                        pairs, "MPI_Bcast", "MPI_Reduce")

    found = patterns.findings([pair("0x1a66e", "0x19a37", 528), pair("0x1a66e", "0x19aa8", 492),
                               pair("0x1a6bc", "0x19a37", 484)], 1.0)
    assert [f.brief for f in found] == ["Reduce+Bcast 528x examl-avx2+0x1c45c <- +0x1a66e: one MPI_Allreduce",
                                        "Reduce+Bcast 492x examl-avx2+0x1c45c <- +0x1a66e: one MPI_Allreduce",
                                        "Reduce+Bcast 484x examl-avx2+0x1c45c <- +0x1a6bc: one MPI_Allreduce"]
    assert output.finding_lines(found, 0.0)[2:] == [
        " 1         -  Reduce+Bcast 528x examl-avx2+0x1c45c via +0x19a37: one Allreduce",
        " 2         -  Reduce+Bcast 492x examl-avx2+0x1c45c via +0x19aa8: one Allreduce",
        " 3         -  Reduce+Bcast 484x examl-avx2+0x1c45c <- +0x1a6bc: one Allreduce"]
    # a second pair of rows parting at the same callers: one frame no longer tells the four apart
    # (`via +0x19a37` twice) and two do not fit a row: they read as before
    found = patterns.findings([pair("0x1a66e", "0x19a37", 528), pair("0x1a66e", "0x19aa8", 492),
                               pair("0x1a6bc", "0x19a37", 484), pair("0x1a6bc", "0x19aa8", 424)], 1.0)
    assert patterns.told_apart(found) == {}
    assert patterns.told_apart(found[:3]) == {0: "Reduce+Bcast 528x examl-avx2+0x1c45c via +0x19a37: one MPI_Allreduce",
                                              1: "Reduce+Bcast 492x examl-avx2+0x1c45c via +0x19aa8: one MPI_Allreduce"}
    # the same chains (the pair seen twice): nothing to tell
    assert patterns.told_apart(patterns.findings([pair("0x1a66e", "0x19a37", 5), pair("0x1a66e", "0x19a37", 4)],
                                                 1.0)) == {}


def _compile(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "tiny.c"
    source.write_text("int helper(int x) { return x * 3; }\nint main(void) { return helper(0); }\n")
    debug, stripped = tmp_path / "tiny", tmp_path / "tiny-stripped"
    subprocess.run(["cc", "-g", "-o", str(debug), str(source)], check=True)
    subprocess.run(["strip", "-s", "-o", str(stripped), str(debug)], check=True)
    return debug, stripped


def test_an_address_only_site_says_why_once_per_object(tmp_path: Path):
    debug, stripped = _compile(tmp_path)
    assert symbols.object_info(str(debug)) == symbols.ObjectInfo(symbols=True, lines=True, debuglink=False)
    assert symbols.object_info(str(stripped)) == symbols.ObjectInfo(symbols=False, lines=False, debuglink=False)
    assert symbols.object_info(str(tmp_path / "tiny.c")) is None
    run = SimpleNamespace(ranks=[SimpleNamespace(maps=[Mapping(0x1000, 0x2000, 0, str(stripped)),
                                                       Mapping(0x3000, 0x4000, 0, str(debug))])])
    lines = [" 2   17.7 ms  Barrier before MPI_Alltoall 2,108x tiny-stripped+0x19a82: remove (check)",
             " 3         -  reductions 5x tiny-stripped+0x21c45, +0x21f63: fuse (check)",
             "              1    1.4 s  solve (libfoo.so+0x8be0) <- tiny+0x1234"]
    why = output.why_addresses(lines, run)
    assert why == ["tiny-stripped: stripped, no debug info: sites are addresses; rebuild with -g",
                   "tiny: no symbol at these addresses: sites are addresses"]
    assert all(len(x) <= 80 for x in why)
    # a function with its object in parentheses is not an address-only site
    assert output.why_addresses(["   1  1.4 s  solve (libfoo.so+0x8be0)"], run) == []


def test_a_debian_object_says_which_dbgsym_package_has_its_lines(tmp_path: Path):
    """Debian strips its packages' objects and ships their debug info apart (.gnu_debuglink; the
    -dbgsym package of its debug archive installs it under /usr/lib/debug/.build-id/, where
    addr2line looks): the why-line names that package, within 80 columns, instead of "rebuild";
    an object whose functions are named (dynamic symbols) but that has no line table says why
    file:line is missing. /usr/bin/ls and libz: stripped objects of every Debian system."""
    ls = "/usr/bin/ls"   # dpkg lists it as /bin/ls (merged /usr): asked both ways
    libz = str(Path("/usr/lib/x86_64-linux-gnu/libz.so.1").resolve())
    assert symbols.object_info(ls) == symbols.ObjectInfo(symbols=False, lines=False, debuglink=True)
    assert symbols.object_info(libz) == symbols.ObjectInfo(symbols=False, lines=False, debuglink=True)
    assert (symbols.debian_package(ls), symbols.debian_package(libz)) == ("coreutils", "zlib1g")
    _, stripped = _compile(tmp_path)
    assert symbols.debian_package(str(stripped)) is None
    run = SimpleNamespace(ranks=[SimpleNamespace(maps=[Mapping(0x1000, 0x2000, 0, ls),
                                                       Mapping(0x3000, 0x4000, 0, libz)])])
    name = Path(libz).name
    lines = [" 2         -  Reduce+Bcast 528x ls+0x1c45c, +0x1c4a0: one Allreduce",
             "             19   16.4 ms  deflate (+0x459668)"]
    labels = ["ls+0x1c45c", f"deflate ({name}+0x459668) <- ls+0x1c4a0"]
    why = output.why_addresses(lines, run, labels)
    assert why == ["ls: stripped: apt install coreutils-dbgsym (Debian's debug archive)",
                   f"{name}: no line table: apt install zlib1g-dbgsym (debug archive)"]
    # without the labels (or with the function not on the screen) nothing is said of libz
    assert output.why_addresses(lines, run) == why[:1]
    assert output.why_addresses(lines[:1], run, labels) == why[:1]
    # the longest form that fits: libz's "(Debian's debug archive)" would take 82 columns
    assert [len(x) for x in why] == [67, 72]


def test_a_long_command_wraps_at_its_words_and_pastes_as_one():
    line = ("/home/user/.venv/bin/colltune advise --db /scratch/runs/colltune.duckdb --out '/scratch/my runs/x' "
            "--measure -- /usr/bin/mpiexec.openmpi --oversubscribe -n 2 -x OMP_NUM_THREADS=1 /usr/bin/lmp "
            "-in in.lj -var steps 4000")
    printed = nextsteps.printed_lines([nextsteps.Step("measure", line)], width=80)
    assert printed == [
        "next steps:", "  measure:",
        "  $ /home/user/.venv/bin/colltune advise --db /scratch/runs/colltune.duckdb \\",
        "    --out '/scratch/my runs/x' --measure -- /usr/bin/mpiexec.openmpi \\",
        "    --oversubscribe -n 2 -x OMP_NUM_THREADS=1 /usr/bin/lmp -in in.lj -var \\",
        "    steps 4000"]
    assert all(len(x) <= 80 for x in printed)
    # read back as the one line, and the shell sees the same words
    [step] = nextsteps.printed_steps("\n".join(printed))
    assert step.line == line
    words = subprocess.run(["bash", "-c", 'printf "%s\\n" ' + "\n".join(printed[2:]).removeprefix("  $ ")],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert words == shlex.split(line)
    # without a width (every other command), and a line that fits: one line as before
    assert nextsteps.printed_lines([nextsteps.Step("measure", line)])[2] == "  $ " + line
    assert nextsteps.wrapped("colltune report --db x.duckdb", 80) == ["  $ colltune report --db x.duckdb"]
    # a word longer than the width is never split: it stays whole on its own piece
    assert nextsteps.wrapped("run " + "/a" * 40 + " x", 40) == ["  $ run \\", "    " + "/a" * 40 + " \\", "    x"]


def test_placement_lines_say_the_point_in_80_columns():
    env = {"hosts": [{"host": "vm", "numa_nodes": {"0": "0-1"}, "ranks_per_numa": None, "spanning": [],
                      "devices": {}, "isolated": "-", "cores": 2, "loadavg": 4.21, "busy": True}],
           "rank0": {"host": "vm", "cpus": "unbound", "numa": None, "local_devices": [],
                     "os_noise": "unknown (no core is isolated: every core takes OS work)"}}
    assert topology.screen_lines(env) == [
        "host vm: busy with other work (load 4.2 on 2 cores); 1 NUMA node (cpus 0-1)",
        "rank 0 on vm: not bound, NUMA unknown; OS noise unknown (no isolated core)"]
    big = {"hosts": [{"host": "node-with-a-long-name-017", "numa_nodes": {str(n): f"{16 * n}-{16 * n + 15}"
                                                                          for n in range(4)},
                      "ranks_per_numa": {"0": 8, "1": 8, "2": 0, "3": 0}, "spanning": [],
                      "devices": {"net/ib0": 1}, "isolated": "-", "cores": 64, "loadavg": 3.0, "busy": False}],
           "rank0": {"host": "node-with-a-long-name-017", "cpus": "0", "numa": [0], "local_devices": [],
                     "os_noise": "no: rank 0 is bound to isolated cores"}}
    # a part that does not fit is left out whole, never cut
    assert topology.screen_lines(big) == ["host node-with-a-long-name-017: load 3.0 on 64 cores; 4 NUMA nodes",
                                          "rank 0 on node-with-a-long-name-017: cpus 0, NUMA 0"]
    big["rank0"]["host"] = "n17"
    assert topology.screen_lines(big)[1] == "rank 0 on n17: cpus 0, NUMA 0; no OS noise (isolated cores)"
    # describe() (the findings' evidence, advise.json) keeps every fact
    assert "ranks per NUMA node 0: 8, 1: 8, 2: 0, 3: 0" in topology.describe(big)[0]


def test_a_run_setting_row_is_its_brief():
    f = Finding("mapping", "placement on vm: ranks 0,1 are not bound (they may migrate between cores)", [], {},
                brief="placement on vm: ranks 0,1 not bound: bind each rank to its cores")
    assert output.finding_row(f, 67) == "placement on vm: ranks 0,1 not bound: bind each rank to its cores"


def test_the_five_applications_screens_pass_the_one_screen_check():
    # benchmarks/advise/round15/after/: advise on LAMMPS, QE, HPCC, ExaML and OpenFOAM (session
    # 15's profiling runs, this front end), checked by benchmarks/advise/check_screen.py; the
    # screens before (round15/) passed 0 of 5
    import sys

    after = Path(__file__).parents[1] / "benchmarks" / "advise" / "round15" / "after"
    sys.path.insert(0, str(after.parents[1]))
    import check_screen

    # round16/screens/: the same runs, session 16's front end (the -dbgsym lines)
    now = after.parents[1] / "round16" / "screens"
    for screens in (after, now):
        results = {app: check_screen.check(screens / f"advise-{app}.txt", screens / f"advise-{app}-findings.json",
                                           False) for app in ("lammps", "qe", "hpcc", "examl", "openfoam")}
        assert {app: (r["ok"], r["lines"] <= 40, r["wide"]) for app, r in results.items()} == {
            app: (True, True, []) for app in results}
    text = (after / "advise-hpcc.txt").read_text()
    assert "hpcc: stripped, no debug info: sites are addresses; rebuild with -g" in text.splitlines()
    why = {app: [line for line in (now / f"advise-{app}.txt").read_text().splitlines() if "dbgsym" in line]
           for app in ("lammps", "qe", "hpcc", "examl", "openfoam")}
    assert why == {
        "lammps": ["liblammps.so.0: no line table: apt install liblammps0-dbgsym (debug archive)"],
        "qe": ["pw.x: stripped: apt install quantum-espresso-dbgsym (Debian's debug archive)"],
        "hpcc": ["hpcc: stripped: apt install hpcc-dbgsym (Debian's debug archive)"],
        "examl": ["examl-avx2: stripped: apt install examl-dbgsym (Debian's debug archive)"],
        "openfoam": ["icoFoam: stripped: apt install openfoam-dbgsym (Debian's debug archive)",
                     "libOpenFOAM.so, libfiniteVolume.so: no file:line: apt install libopenfoam-dbgsym"]}
    # every site of the compact table without its object (round15/after/ kept it where it fitted)
    assert "             19   16.4 ms  LAMMPS_NS::Input::file (+0x459668)" in (
        now / "advise-lammps.txt").read_text().splitlines()
    # ExaML's rows 2 and 3 (alike in round15/after/) name where their chains part
    assert [line for line in (now / "advise-examl.txt").read_text().splitlines() if " via " in line] == [
        " 2         -  Reduce+Bcast 528x examl-avx2+0x1c45c via +0x19a37: one Allreduce",
        " 3         -  Reduce+Bcast 492x examl-avx2+0x1c45c via +0x19aa8: one Allreduce"]
    # the wrapped next steps read back as the commands advise printed before, whole
    [measure, learn] = nextsteps.printed_steps(text)
    assert measure.line.endswith(" --measure -- /usr/bin/mpiexec.openmpi --oversubscribe --bind-to none -n 2 -x "
                                 "OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 /usr/bin/hpcc")
    assert learn.line.split(" -- ")[0].split()[1:4] == ["learn", "run", "--batches"]


def test_the_verify_table_holds_80_columns_with_a_long_cxx_pattern():
    """`advise --verify`'s results (was a rich table that folded its labels and went as wide as
    the terminal): one row per figure in <= 80 columns, points and patterns named by their
    finding's number, a pattern's sites on a line of their own (cut to the label's room they no
    longer name its function), the verdict in a word; the sentences are the JSON's and the report's."""
    from colltune.advise import collectives
    from colltune.advise.points import AppPoint
    from colltune.advise.verify import Comparison, PatternFigure, PointFigure, Verification, point_label

    pattern = patterns.Pattern("small_reductions",
                               "Foam::GAMGSolver::solveCoarsestLevel (libOpenFOAM.so+0x5fe53e) <- Foam::reduce",
                               "Foam::GAMGSolver::solveCoarsestLevel (libOpenFOAM.so+0x5fe6ca) <- Foam::reduce",
                               "MPI_Allreduce", "MPI_Allreduce", 2, 3, 93194, 8.0, saving_per_pair_s=1.2e-6)
    bcast = collectives.Choice(AppPoint("bcast", 2, 12, calls=300, own_s=0.03), 4096, 100e-6,
                               "bcast_as_scatter_allgather", 20e-6)
    allreduce = collectives.Choice(AppPoint("allreduce", 2, 3, calls=30000, own_s=0.3), 8, 10e-6,
                                   "lib:allreduce:recursive_doubling", 8e-6)
    found = collectives.findings([bcast, allreduce]) + patterns.findings([pattern], 12.0)
    points = (PointFigure(("bcast", 2, 12), Comparison(point_label(bcast), [0.050, 0.051, 0.049, 0.052, 0.050],
                                                       [0.026, 0.025, 0.027, 0.025, 0.026]), bcast.saving_s),
              PointFigure(("allreduce", 2, 3), Comparison(point_label(allreduce), [0.35, 0.351, 0.349, 0.35, 0.36],
                                                          [0.3, 0.31, 0.29, 0.3, 0.3]), allreduce.saving_s))
    cost = PatternFigure(pattern, Comparison(pattern.name, [0.150, 0.151, 0.149, 0.15, 0.15],
                                             [0.14, 0.15, 0.15, 0.15, 0.15]))
    v = Verification(Comparison("wall time", [12.1, 12.3, 11.9, 12.0, 12.2], [12.0, 12.1, 11.8, 12.3, 12.0]),
                     Comparison("in-situ own cost at the advised points", [0.4, 0.41, 0.39, 0.4, 0.4],
                                [0.33, 0.32, 0.34, 0.33, 0.33]),
                     bcast.saving_s + allreduce.saving_s, True, points, (cost,))
    lines = output.verification_lines(v, found)
    assert lines == [
        "--verify: 5 runs per side, alternating; medians, +- ~95% noise of the gain",
        "                         default  advised        measured gain predicted verdict",
        "wall time                12.10 s  12.00 s 100.0 ms +- 157.0 ms   84.0 ms noise",
        "in-situ own cost        400.0 ms 330.0 ms         70.0 ms +- 0   84.0 ms agree",
        "#1 Bcast 4.0K-8.0K @2    50.0 ms  26.0 ms  24.0 ms +- 993.0 us   24.0 ms agree",
        "#2 Allreduce 8-16 @2    350.0 ms 300.0 ms  50.0 ms +- 702.1 us   60.0 ms agree",
        "#3 reductions 93,194x solveCoarsestLevel (+0x5fe53e, +0x5fe6ca): fuse (check)",
        "                        150.0 ms 150.0 ms               0 +- 0  111.8 ms <= cost",
        "the advised collectives changed as predicted; the wall time did not resolve it",
        "both sides run a pattern's calls (a source change): it saves at most their cost",
        'the verdicts in full: advise.json ("verification"), colltune report']
    assert max(map(len, lines)) == 80
    # the pattern's predicted saving above what its calls cost in situ: off
    pattern.saving_per_pair_s = 2e-6
    assert output.verification_lines(v, found)[7].endswith("  186.4 ms off")
    # without the findings (nothing to number): the point's own name, the pattern's kind
    assert [line[:24] for line in output.verification_lines(v)[4:7]] == [
        "Bcast 4.0K-8.0K @2      ", "Allreduce 8-16 @2       ", "small_reductions        "]
