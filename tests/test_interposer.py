"""The interposer (libcolltune.so) on real MPI programs: every mode, exact counting tables.

One build of the C core and of the test programs per library (session fixtures); launches
batch several checks (all ten collectives per launch, one forced variant per collective).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from interposer_support import (
    Run,
    compile_programs,
    expected_force_counts,
    force_rounds,
    force_spec,
    mpmd_argv,
    run_argv,
    run_mpi,
)

from colltune import catalog, interposer
from colltune.measure.settings import GUIDELINE_COLLECTIVES
from colltune.mpi import runenv
from colltune.mpi.libraries import MpiError

REPO = Path(__file__).resolve().parent.parent
COLLECTIVES = GUIDELINE_COLLECTIVES   # what ct_collectives calls


@pytest.fixture(scope="session")
def ompi_programs(openmpi, tmp_path_factory):
    return compile_programs(openmpi, tmp_path_factory.mktemp("programs"))


@pytest.fixture(scope="session")
def mpich_programs(mpich, tmp_path_factory):
    return compile_programs(mpich, tmp_path_factory.mktemp("programs"))


def env_for(lib, art, **kw) -> dict[str, str]:
    return runenv.rank_environment(lib, art, **kw)


def ok(run: Run) -> Run:
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert "FAIL" not in run.stderr, run.describe()
    return run


def rows_of(run: Run, collective: str) -> Counter:
    return Counter({k: v for k, v in run.counts.items() if k[0] == collective})


def assert_forced(run: Run, choice: dict[str, str]) -> None:
    calls = run.program_calls
    assert set(calls) == set(COLLECTIVES), run.describe()
    for coll, variant in choice.items():
        if coll in COLLECTIVES:   # the later rows' variants: tests/test_irregular.py
            assert rows_of(run, coll) == expected_force_counts(coll, variant, calls[coll]), (coll, run.describe())


# ---- generated files --------------------------------------------------------------------------

@pytest.mark.parametrize("generator", ["gen_wrappers.py", "gen_forms.py", "gen_settings.py", "gen_driver.py", "gen_fortran.py",
                                       "gen_formats.py", "gen_p2p.py"])
def test_generated_files_are_current(generator):
    proc = subprocess.run([sys.executable, str(REPO / "native" / "gen" / generator), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{generator} --check: {proc.stderr} (run `make generate`)"


# ---- off, counting ----------------------------------------------------------------------------

def test_off_is_silent_pass_through(openmpi, openmpi_build, ompi_programs):
    run = ok(run_mpi(openmpi, 4, [ompi_programs["ct_collectives"]], env_for(openmpi, openmpi_build)))
    assert "colltune" not in run.stderr, run.describe()
    assert run.stdout.strip().endswith("ok 4 ranks")


def test_counting_only_counts_library_calls(openmpi, openmpi_build, ompi_programs):
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_collectives"]],
                     env_for(openmpi, openmpi_build, verbose=True)))
    want = Counter({(c, "none", "library", "library"): sum(k.values())
                    for c, k in run.program_calls.items()})
    assert len(want) == 10 and run.counts == want, run.describe()


def test_unknown_setting_is_reported_once(openmpi, openmpi_build, ompi_programs):
    env = env_for(openmpi, openmpi_build, extra={"COLLTUNE_FORSE": "bcast=bcast_as_allgatherv"})
    run = ok(run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "bcast"], env))
    assert len(run.messages("unknown setting COLLTUNE_FORSE")) == 1, run.describe()


# ---- force ------------------------------------------------------------------------------------

@pytest.mark.parametrize("nprocs", [3, 4])
@pytest.mark.parametrize("round_", range(len(force_rounds())))
def test_force_every_variant(openmpi, openmpi_build, ompi_programs, nprocs, round_):
    choice = force_rounds()[round_]
    run = ok(run_mpi(openmpi, nprocs, [ompi_programs["ct_collectives"]],
                     env_for(openmpi, openmpi_build, force=force_spec(choice), verbose=True)))
    assert_forced(run, choice)


def test_force_rounds_cover_every_variant():
    forced = {v for r in force_rounds() for v in r.values()}
    assert forced == {v.name for v in catalog.load().variants}


@pytest.mark.parametrize("spec, message", [
    ("bcats=bcast_as_allgatherv", "unknown collective 'bcats'; valid collectives: allgather, allreduce"),
    ("bcast=bcast_as_nothing", "unknown variant 'bcast_as_nothing' for bcast; valid choices for bcast: "
                               "bcast_as_allgatherv, bcast_as_scatter_allgather, library"),
    ("bcast=allreduce_as_reduce_bcast", "variant of another collective 'allreduce_as_reduce_bcast'"),
    ("bcast", "entry 'bcast' is not collective=variant"),
])
def test_bad_force_aborts_with_the_valid_choices(openmpi, openmpi_build, ompi_programs, spec, message):
    env = env_for(openmpi, openmpi_build, extra={"COLLTUNE_FORCE": spec})
    run = run_mpi(openmpi, 3, [ompi_programs["ct_collectives"], "bcast"], env, timeout=60)
    assert run.returncode != 0 and not run.timed_out, run.describe()
    assert len(run.messages(message)) == 1, run.describe()     # rank 0 only
    assert "calls bcast" not in run.stdout                     # aborted at MPI_Init


def test_bad_force_is_refused_by_colltune_run_before_launch(openmpi, openmpi_build):
    with pytest.raises(MpiError, match="valid choices for bcast: bcast_as_allgatherv"):
        runenv.rank_environment(openmpi, openmpi_build, force="bcast=nope")


def test_force_differing_across_ranks_turns_everything_off(openmpi, openmpi_build, ompi_programs):
    prog = [ompi_programs["ct_collectives"], "bcast"]
    a = env_for(openmpi, openmpi_build, force="bcast=bcast_as_allgatherv", verbose=True)
    b = {**a, "COLLTUNE_FORCE": "bcast=bcast_as_scatter_allgather"}
    run = ok(run_argv(openmpi, mpmd_argv(openmpi, [(1, prog, a), (2, prog, b)])))
    assert len(run.messages("differ across ranks; libcolltune is off")) == 1, run.describe()
    assert run.counts == Counter({("bcast", "none", "library", "library"): 12}), run.describe()


def test_force_library_counts_as_an_opinion(openmpi, openmpi_build, ompi_programs):
    run = ok(run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "scan"],
                     env_for(openmpi, openmpi_build, force="scan=library", verbose=True)))
    assert run.counts == Counter({("scan", "force", "library", "library"): 9}), run.describe()


ERROR_FORCE = ("bcast=bcast_as_scatter_allgather,allreduce=allreduce_as_reduce_bcast,"
               "reduce=reduce_as_allreduce,allgather=allgather_as_gather_bcast")


@pytest.mark.parametrize("library", ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)])
def test_library_error_codes_reach_the_caller(request, library):
    """MPI_ERRORS_RETURN: erroneous calls return the library's error class, and a correct call
    after them is served by the forced variant."""
    lib = request.getfixturevalue(library)
    art = request.getfixturevalue(f"{library}_build")
    prog = request.getfixturevalue("ompi_programs" if library == "openmpi" else "mpich_programs")["ct_errors"]
    cases = ["bcast_root_out_of_range", "bcast_negative_count", "allreduce_null_op",
             "reduce_root_out_of_range", "allgather_null_type", "ok_allreduce"]
    if library == "openmpi":  # MPICH 5.0.2 itself dies on it (yaksa assertion), with or without us
        cases.insert(2, "allreduce_negative_count")
    plain = ok(run_mpi(lib, 2, [prog, *cases], {}))
    tuned = ok(run_mpi(lib, 2, [prog, *cases], env_for(lib, art, force=ERROR_FORCE, verbose=True)))
    lines = [line for line in plain.stdout.splitlines() if line.startswith("error ")]
    assert len(lines) == len(cases) and lines[-1] == "error ok_allreduce class 0", plain.describe()
    assert [line for line in tuned.stdout.splitlines() if line.startswith("error ")] == lines, tuned.describe()
    assert tuned.counts[("allreduce", "force", "allreduce_as_reduce_bcast", "applied")] == 1, tuned.describe()
    assert sum(n for k, n in tuned.counts.items() if k[3] == "library:error") == len(cases) - 1, tuned.describe()


# ---- threads, uniform decisions ---------------------------------------------------------------

def test_thread_multiple_concurrent_collectives(openmpi, openmpi_build, ompi_programs):
    force = "allreduce=allreduce_as_reducescatterblock_allgather,bcast=bcast_as_scatter_allgather," \
            "allgather=allgather_as_allreduce"
    run = ok(run_mpi(openmpi, 2, [ompi_programs["ct_threads"], "60"],
                     env_for(openmpi, openmpi_build, force=force, verbose=True)))
    assert "threads calls allreduce=120 bcast=120 allgather=120" in run.stdout, run.describe()
    assert run.counts == Counter({
        ("allreduce", "force", "allreduce_as_reducescatterblock_allgather", "applied"): 120,
        ("bcast", "force", "bcast_as_scatter_allgather", "applied"): 120,
        ("allgather", "force", "allgather_as_allreduce", "applied"): 120,
    }), run.describe()


ROOTONLY_FORCES = [
    "gather=gather_as_gatherv,scatter=scatter_as_scatterv,bcast=bcast_as_allgatherv",
    "gather=gather_as_allgather,scatter=scatter_as_bcast",
    "gather=gather_as_reduce",
]


@pytest.mark.parametrize("force", ROOTONLY_FORCES)
def test_root_only_arguments_never_change_decisions(openmpi, openmpi_build, ompi_programs, force):
    """The root passes other counts/datatypes (same type signature), non-roots pass garbage in
    ignored arguments: a decision from any of them would hang or corrupt this run."""
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_rootonly"], "256"],
                     env_for(openmpi, openmpi_build, force=force, verbose=True), timeout=60))
    assert "rootonly calls gather=3 scatter=3 bcast=3" in run.stdout
    for entry in force.split(","):
        coll, variant = entry.split("=")
        assert run.counts[coll, "force", variant, "applied"] == 3, run.describe()


@pytest.mark.parametrize("force, args", [
    ("bcast=bcast_as_scatter_allgather", ["256"]),
    ("gather=gather_as_reduce", ["256", "gaps"]),
    ("scatter=scatter_as_bcast", ["256", "gaps"]),
    ("gather=gather_as_allgather,scatter=scatter_as_scatterv,bcast=bcast_as_allgatherv", ["256", "gaps"]),
])
def test_rank_local_layouts_never_change_decisions(openmpi, openmpi_build, ompi_programs, force, args):
    """Bcast with count 1 of a K-int type at the root and K ints elsewhere; Gather/Scatter/Bcast
    whose root has a layout with gaps while the others' data is contiguous. (Both hung or failed
    before the variants learned to block by bytes and to pack/unpack locally.)"""
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_rootonly"], *args],
                     env_for(openmpi, openmpi_build, force=force, verbose=True), timeout=30))
    for entry in force.split(","):
        coll, variant = entry.split("=")
        assert run.counts[coll, "force", variant, "applied"] == 3, run.describe()


@pytest.mark.parametrize("force", [
    "reduce_scatter_block=reducescatterblock_as_reduce_scatter",
    "reduce_scatter_block=reducescatterblock_as_reducescatter",
    "reduce_scatter_block=reducescatterblock_as_allreduce",
    "reduce_scatter=reducescatter_as_allreduce",
    "reduce_scatter=reducescatter_as_reduce_scatterv",
])
def test_in_place_reduce_scatter_keeps_the_rest_of_the_buffer(openmpi, openmpi_build, ompi_programs, force):
    """Libraries leave an in-place Reduce_scatter(_block)'s receive buffer past the caller's
    block untouched and mpi4py's tests check it: so must the variants (a bug found that way)."""
    coll = force.split("=")[0]
    run = run_mpi(openmpi, 3, [ompi_programs["ct_collectives"], "-t", coll],
                  env_for(openmpi, openmpi_build, force=force), timeout=60)
    ok(run)


# ---- profile ----------------------------------------------------------------------------------

PROFILE = """colltune-profile 1
# test profile: ct_collectives on 4 ranks, ints
generator tests/test_interposer.py
collective allreduce
  procs 4 4
    bytes 4 4 allreduce_as_reduce_bcast
    bytes 12 12 allreduce_as_reducescatter_allgatherv
collective bcast
  procs 1 3
    bytes 0 1000000 bcast_as_allgatherv
  procs 4 4
    bytes 0 100 bcast_as_scatter_allgather
end
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_profile_mode_uses_the_rules(openmpi, openmpi_build, ompi_programs, tmp_path):
    prof = write(tmp_path, "t.prf", PROFILE)
    run = ok(run_mpi(openmpi, 4, [ompi_programs["ct_collectives"], "allreduce", "bcast"],
                     env_for(openmpi, openmpi_build, profile=prof, verbose=True)))
    # allreduce: counts 1, 3, 1000 ints x (plain, in-place, non-commutative) -> 3 calls each size
    # bcast on 4 ranks: counts 1, 3 ints (4, 12 bytes) x 2 roots x (plain, gaps); 1000 ints: library
    want = Counter({
        ("allreduce", "profile", "allreduce_as_reduce_bcast", "applied"): 3,
        # GL7 splits the vector into chunks: never with a user-defined op (docs/variants.md)
        ("allreduce", "profile", "allreduce_as_reducescatter_allgatherv", "applied"): 2,
        ("allreduce", "profile", "allreduce_as_reducescatter_allgatherv", "not-applicable:op"): 1,
        ("allreduce", "profile", "library", "library"): 3,
        ("bcast", "profile", "library", "library"): 4,
    })
    if "contiguous" in catalog.load().variant("bcast_as_scatter_allgather").needs:
        want[("bcast", "profile", "bcast_as_scatter_allgather", "applied")] = 4
        want[("bcast", "profile", "bcast_as_scatter_allgather", "not-applicable:datatype")] = 4
    else:
        want[("bcast", "profile", "bcast_as_scatter_allgather", "applied")] = 8
    assert run.counts == want, run.describe()
    assert len(run.messages(f"profile {prof}")) == 1


def test_profile_communicator_size_and_force_precedence(openmpi, openmpi_build, ompi_programs, tmp_path):
    prof = write(tmp_path, "t.prf", PROFILE)
    env = env_for(openmpi, openmpi_build, profile=prof, verbose=True, force="allreduce=library")
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_collectives"], "allreduce", "bcast"], env))
    assert run.counts == Counter({
        ("allreduce", "force", "library", "library"): 9,
        ("bcast", "profile", "bcast_as_allgatherv", "applied"): 12,
    }), run.describe()


@pytest.mark.parametrize("text, where", [
    (PROFILE.replace("end\n", ""), "t.prf:12: file ends without the 'end' line"),
    (PROFILE.replace("bytes 12 12", "bytes 2 12"), "t.prf:7:"),
    ("not a profile\n", "t.prf:1:"),
])
def test_bad_profile_warns_once_and_passes_through(openmpi, openmpi_build, ompi_programs, tmp_path,
                                                   text, where):
    prof = write(tmp_path, "t.prf", text)  # by hand: colltune run would refuse it before launch
    run = ok(run_mpi(openmpi, 4, [ompi_programs["ct_collectives"], "allreduce"],
                     env_for(openmpi, openmpi_build, verbose=True, extra={"COLLTUNE_PROFILE": str(prof)})))
    warnings = run.messages("warning: COLLTUNE_PROFILE ignored")
    assert len(warnings) == 1 and where in warnings[0], run.describe()
    assert run.counts == Counter({("allreduce", "none", "library", "library"): 9}), run.describe()


def test_bad_profile_is_refused_by_colltune_run_before_launch(openmpi, openmpi_build, tmp_path):
    prof = write(tmp_path, "t.prf", PROFILE.replace("end\n", ""))
    with pytest.raises(MpiError, match="t.prf:12: file ends without the 'end' line"):
        interposer.rank_environment(openmpi, openmpi_build, profile=prof)


def test_missing_profile_warns_once(openmpi, openmpi_build, ompi_programs, tmp_path):
    env = env_for(openmpi, openmpi_build, verbose=True, extra={"COLLTUNE_PROFILE": str(tmp_path / "none.prf")})
    run = ok(run_mpi(openmpi, 2, [ompi_programs["ct_collectives"], "scan"], env))
    warnings = run.messages("warning: COLLTUNE_PROFILE ignored")
    assert len(warnings) == 1 and "none.prf" in warnings[0], run.describe()
    assert run.counts == Counter({("scan", "none", "library", "library"): 9}), run.describe()


def test_profiles_differing_across_ranks_pass_through(openmpi, openmpi_build, ompi_programs, tmp_path):
    a = write(tmp_path, "a.prf", PROFILE)
    b = write(tmp_path, "b.prf", PROFILE.replace("bytes 4 4 allreduce_as_reduce_bcast",
                                                 "bytes 4 8 allreduce_as_reduce_bcast"))
    prog = [ompi_programs["ct_collectives"], "allreduce"]
    env_a = env_for(openmpi, openmpi_build, profile=a, verbose=True)
    run = ok(run_argv(openmpi, mpmd_argv(openmpi, [(2, prog, env_a), (2, prog, {**env_a, "COLLTUNE_PROFILE": str(b)})])))
    warnings = run.messages("warning: COLLTUNE_PROFILE")
    assert len(warnings) == 1 and "different rules" in warnings[0], run.describe()
    assert run.counts == Counter({("allreduce", "none", "library", "library"): 9}), run.describe()


def test_profile_on_root_only_arguments(openmpi, openmpi_build, ompi_programs, tmp_path):
    """Profile decisions come from the uniform message size: the root's other counts and the
    non-roots' garbage recvcounts must not split the ranks."""
    prof = write(tmp_path, "r.prf", "colltune-profile 1\ncollective gather\n  procs 3 3\n"
                 "    bytes 1024 1024 gather_as_allgather\ncollective scatter\n  procs 3 3\n"
                 "    bytes 1024 1024 scatter_as_scatterv\nend\n")
    run = ok(run_mpi(openmpi, 3, [ompi_programs["ct_rootonly"], "256"],
                     env_for(openmpi, openmpi_build, profile=prof, verbose=True), timeout=60))
    assert run.counts[("gather", "profile", "gather_as_allgather", "applied")] == 3, run.describe()
    assert run.counts[("scatter", "profile", "scatter_as_scatterv", "applied")] == 3, run.describe()


# ---- colltune run -----------------------------------------------------------------------------

def colltune(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args] if False else
                          [str(Path(sys.executable).parent / "colltune"), *args],
                          capture_output=True, text=True, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)


def test_colltune_run_injects_into_the_ranks_only(openmpi, openmpi_build, ompi_programs):
    prog = str(ompi_programs["ct_collectives"])
    proc = colltune("run", "--dry-run", "--force", "bcast=bcast_as_allgatherv", "--verbose", "--",
                    str(openmpi.mpiexec), "-n", "2", prog, "bcast")
    assert proc.returncode == 0, proc.stderr
    argv = proc.stdout.split()
    assert argv[0] == str(openmpi.mpiexec) and argv[-4:] == ["-n", "2", prog, "bcast"]
    assert argv[1:7] == ["-x", f"LD_PRELOAD={openmpi_build.libcolltune.resolve()}",
                         "-x", "COLLTUNE_FORCE=bcast=bcast_as_allgatherv", "-x", "COLLTUNE_VERBOSE=1"]
    proc = colltune("run", "--force", "bcast=bcast_as_allgatherv", "--verbose", "--",
                    str(openmpi.mpiexec), "--oversubscribe", "-n", "3", prog, "bcast")
    assert proc.returncode == 0, proc.stderr
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    assert run.counts == Counter({("bcast", "force", "bcast_as_allgatherv", "applied"): 12}), run.describe()


def test_colltune_run_warns_of_a_launcher_of_another_install(openmpi):
    """`--mpi openmpi` names the embedded Open MPI; Debian's mpiexec launches programs built for
    its 4.1, which would load both libmpi.so.40 (a Fortran program crashed in MPI_Init)."""
    debian = runenv.library_for_launcher("/usr/bin/mpiexec.openmpi")
    if debian is None or debian.mpicc.resolve() == openmpi.mpicc.resolve():
        pytest.skip("Debian's Open MPI is not installed (make setup-fortran)")
    proc = colltune("run", "--mpi", "openmpi", "--dry-run", "--", "/usr/bin/mpiexec.openmpi", "-n", "2", "true")
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 0
    assert (f"warning: /usr/bin/mpiexec.openmpi is the launcher of {debian.short_version} ({debian.mpicc}), "
            f"but the interposer is built for {openmpi.short_version}") in said
    assert said.endswith(f"pass `--mpi {debian.mpicc}`")
    proc = colltune("run", "--mpi", str(debian.mpicc), "--dry-run", "--", "/usr/bin/mpiexec.openmpi", "-n", "2", "true")
    assert proc.returncode == 0 and "warning" not in proc.stderr


@pytest.mark.mpich
def test_colltune_run_refuses_a_launcher_of_the_other_family(openmpi, mpich):
    proc = colltune("run", "--mpi", "openmpi", "--", str(mpich.mpiexec), "-n", "2", "true")
    assert proc.returncode == 2
    assert "launches mpich programs but the interposer is for openmpi" in " ".join(proc.stderr.split())


# ---- MPICH ------------------------------------------------------------------------------------

@pytest.mark.mpich
@pytest.mark.parametrize("round_", range(len(force_rounds())))
def test_mpich_force_every_variant(mpich, mpich_build, mpich_programs, round_):
    choice = force_rounds()[round_]
    run = ok(run_mpi(mpich, 2, [mpich_programs["ct_collectives"]],
                     env_for(mpich, mpich_build, force=force_spec(choice), verbose=True)))
    assert_forced(run, choice)


@pytest.mark.mpich
def test_mpich_large_count_bindings_are_served(mpich, mpich_build, mpich_programs):
    force = "gather=gather_as_gatherv,scatter=scatter_as_bcast,reduce_scatter=reducescatter_as_allreduce," \
            "allreduce=allreduce_as_reduce_bcast,bcast=bcast_as_scatter_allgather"
    run = ok(run_mpi(mpich, 2, [mpich_programs["ct_largecount"]],
                     env_for(mpich, mpich_build, force=force, verbose=True)))
    assert "largecount calls 10" in run.stdout
    want = Counter({(c, "force", v, "applied"): 1 for c, v in (e.split("=") for e in force.split(","))})
    want.update({(c, "none", "library", "library"): 1
                 for c in ("allgather", "alltoall", "reduce", "reduce_scatter_block", "scan")})
    assert run.counts == want, run.describe()


@pytest.mark.mpich
def test_mpich_profile_and_threads(mpich, mpich_build, mpich_programs, tmp_path):
    prof = write(tmp_path, "m.prf", "colltune-profile 1\ncollective allreduce\n  procs 2 2\n"
                 "    bytes 1200 1200 allreduce_as_reducescatterblock_allgather\nend\n")
    run = ok(run_mpi(mpich, 2, [mpich_programs["ct_threads"], "20"],
                     env_for(mpich, mpich_build, profile=prof, verbose=True)))
    assert run.counts == Counter({
        ("allreduce", "profile", "allreduce_as_reducescatterblock_allgather", "applied"): 40,
        ("bcast", "profile", "library", "library"): 40,
        ("allgather", "profile", "library", "library"): 40,
    }), run.describe()


@pytest.mark.mpich
def test_mpich_root_only_arguments_and_layouts(mpich, mpich_build, mpich_programs):
    force = "gather=gather_as_reduce,scatter=scatter_as_bcast,bcast=bcast_as_scatter_allgather"
    for args in (["256"], ["256", "gaps"]):
        run = ok(run_mpi(mpich, 2, [mpich_programs["ct_rootonly"], *args],
                         env_for(mpich, mpich_build, force=force, verbose=True), timeout=60))
        assert "rootonly calls gather=2 scatter=2 bcast=2" in run.stdout, run.describe()
        assert run.counts == Counter({(e.split("=")[0], "force", e.split("=")[1], "applied"): 2
                                      for e in force.split(",")}), run.describe()


# ---- Intel MPI (when installed: make setup-intel) -----------------------------------------------

@pytest.fixture(scope="session")
def intel_setup(tmp_path_factory):
    """Intel MPI's build, proven first (its mock-ups and members, at 2 ranks): the interposer
    serves a forced variant only in the classes its proof passed, so without a proof every forced
    call is `not-applicable:unproven` (as on a fresh build wherever Intel MPI is installed)."""
    from colltune.measure import proof
    from colltune.mpi import build
    from colltune.mpi import libraries as mpi
    try:
        lib = mpi.resolve("intel")
    except MpiError as exc:
        pytest.skip(f"Intel MPI not available: {exc}")
    art = build.ensure_built(lib)
    proof.ensure_proven(lib)
    return lib, art, compile_programs(lib, tmp_path_factory.mktemp("intel"))


def _call_class(collective: str, kind: str) -> str:
    """The proof's class of ct_collectives' calls of one kind: MPI_INT throughout, MPI_SUM or the
    non-commutative user op on the reductions; data movement is `none/any` whatever its datatype."""
    mode = "in_place" if kind == "inplace" else "separate"
    if not catalog.load().is_reduction(collective):
        return f"{mode}/none/any"
    return f"{mode}/{'user_noncommutative' if kind == 'noncommutative' else 'builtin'}/int"


def expected_proven_counts(proof_file: Path, collective: str, variant: str,
                           kinds: dict[str, int]) -> Counter[tuple[str, str, str, str]]:
    """expected_force_counts, with the calls of a kind whose class the proof did not pass moved from
    `applied` to `not-applicable:unproven` (the rules come first, then the proof: ct_member.h)."""
    from colltune.measure import proof
    want = expected_force_counts(collective, variant, kinds)
    passed = proof.read_passed(proof_file).get(variant, set())
    needs = set(catalog.load().variant(variant).needs)
    for kind, n in kinds.items():
        if not n or (kind == "noncontig" and "contiguous" in needs) or (
                kind == "noncommutative" and needs & {"commutative", "predefined_op"}):
            continue   # not applicable by the rules already
        cls = _call_class(collective, kind)
        if cls in passed:
            continue
        # ct_collectives' counts 1, 3, 1000 span bands: a class passed in some bands only would need
        # each call's band here
        assert not any(c.startswith(cls + "/") for c in passed), (variant, cls, sorted(passed))
        want[collective, "force", variant, "applied"] -= n
        want[collective, "force", variant, "not-applicable:unproven"] += n
    return +want


@pytest.mark.parametrize("round_", range(len(force_rounds())))
def test_intel_force_every_variant(intel_setup, round_):
    """Every mock-up forced on Intel MPI 2021.18.1 (MPICH family): exact results, and each call
    served exactly where the rules and the build's proof let it be."""
    from colltune.measure import proof
    lib, art, progs = intel_setup
    choice = force_rounds()[round_]
    run = ok(run_mpi(lib, 2, [progs["ct_collectives"]], env_for(lib, art, force=force_spec(choice), verbose=True)))
    calls = run.program_calls
    assert set(calls) == set(COLLECTIVES), run.describe()
    for coll, variant in choice.items():
        if coll in COLLECTIVES:
            want = expected_proven_counts(art.dir / proof.PROOF_FILE, coll, variant, calls[coll])
            assert rows_of(run, coll) == want, (coll, run.describe())


# ---- ABI family -------------------------------------------------------------------------------

@pytest.mark.mpich
def test_abi_family_refusal(openmpi, openmpi_build, mpich, mpich_build, ompi_programs, mpich_programs):
    wrong = [(mpich, {"LD_PRELOAD": str(openmpi_build.libcolltune)}, mpich_programs, "built for Open MPI"),
             (openmpi, {"LD_PRELOAD": str(mpich_build.libcolltune)}, ompi_programs, "built for the MPICH family")]
    for lib, env, progs, message in wrong:
        run = run_mpi(lib, 2, [progs["ct_collectives"], "bcast"], env, timeout=60)
        assert run.returncode != 0 and not run.timed_out, run.describe()
        assert message in run.stderr and "colltune mpi build --mpi" in run.stderr, run.describe()
        assert "calls bcast" not in run.stdout


# ---- launcher command lines (no launch) -------------------------------------------------------

def test_inject_srun_and_refusals(openmpi, openmpi_build):
    env = {"LD_PRELOAD": "/x/libcolltune.so", "COLLTUNE_FORCE": "bcast=library,scan=library"}
    # srun --export splits at commas: such values travel in srun's environment (--export=ALL)
    assert runenv.inject(openmpi, ["srun", "-n", "4", "./app"], {**env, "COLLTUNE_VERBOSE": "1"}) == (
        ["srun", "--export=ALL,LD_PRELOAD=/x/libcolltune.so,COLLTUNE_VERBOSE=1", "--mpi=pmix", "-n", "4", "./app"],
        {"COLLTUNE_FORCE": "bcast=library,scan=library"})
    with pytest.raises(MpiError, match="not an MPI launcher"):
        runenv.inject(openmpi, ["/bin/true", "-n", "2"], env)
    with pytest.raises(MpiError, match="give the launch command"):
        runenv.inject(openmpi, [], env)


@pytest.mark.mpich
def test_inject_hydra_uses_genv(mpich, mpich_build):
    env = runenv.rank_environment(mpich, mpich_build, force="bcast=library", verbose=True)
    argv, launcher_extra = runenv.inject(mpich, [str(mpich.mpiexec), "-n", "2", "./app", "-v"], env)
    assert launcher_extra == {}
    assert argv == [str(mpich.mpiexec), "-genv", "LD_PRELOAD", str(mpich_build.libcolltune.resolve()),
                    "-genv", "COLLTUNE_FORCE", "bcast=library", "-genv", "COLLTUNE_VERBOSE", "1",
                    "-n", "2", "./app", "-v"]


def test_print_env_keeps_ld_preload_out_of_the_shell(openmpi, openmpi_build):
    text = runenv.print_env(runenv.rank_environment(openmpi, openmpi_build, force="scan=library"), openmpi)
    exports = [line for line in text.splitlines() if line.startswith("export ")]
    assert exports == ["export COLLTUNE_FORCE=scan=library"]
    assert f"colltune_lib={openmpi_build.libcolltune.resolve()}" in text
    assert '-x LD_PRELOAD="$colltune_lib" -x COLLTUNE_FORCE' in text
