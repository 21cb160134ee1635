"""The library's own algorithms as members of the learning mode's portfolio (docs/select.md,
"Library members"), on real MPI programs.

The decisive check is bit-exact: a sum of doubles whose rounding depends on the order of
additions gives each algorithm class its own bits, so every call drawn for `lib:allreduce:X` must
carry the bits of a plain run where the library itself was told to use X (its own environment
variables, no interposer). A member that silently ran the library's default would carry the
default's bits instead; the reference classes are checked to differ so that the check can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from interposer_support import compile_programs, run_mpi
from test_learn_runtime import learn_env, ok, predicted, read_calls, refused_members, stand_in_proof

from colltune.learn import table as sel
from colltune.mpi import algorithms, build, libraries

PROGRAMS = Path(__file__).resolve().parent / "programs"
LIBRARIES = ["openmpi", pytest.param("mpich", marks=pytest.mark.mpich)]
REFUSED = 10  # colltune_reason COLLTUNE_NA_REFUSED, as written in trace records


@pytest.fixture(scope="module")
def libalg_programs(request, tmp_path_factory):
    """learn_libalg and the ct_* programs, per library, built on first use."""
    built: dict[str, dict[str, Path]] = {}

    def get(name: str) -> dict[str, Path]:
        if name not in built:
            lib = request.getfixturevalue(name)
            out = tmp_path_factory.mktemp(f"libalg-{name}")
            progs = compile_programs(lib, out)
            progs["learn_libalg"] = build.compile_program(lib, [PROGRAMS / "learn_libalg.c"], out / "learn_libalg",
                                                          ["-Wextra", "-lm"])
            built[name] = progs
        return built[name]

    return get


def setup(request, library: str):
    lib = request.getfixturevalue(library)
    return lib, request.getfixturevalue(f"{library}_build"), request.getfixturevalue("libalg_programs")(library)


def allreduce_algorithms(lib) -> list[str]:
    return list(algorithms.LIBRARY_ALGORITHMS[algorithms.algorithm_key(lib)]["allreduce"])


def native_force(lib, alg: str | None) -> dict[str, str]:
    """The library's own way to fix its allreduce algorithm for a whole run (MPI-NOTES.md)."""
    if alg is None:
        return {}
    if lib.family == "openmpi":
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                "OMPI_MCA_coll_tuned_allreduce_algorithm": str(algorithms.openmpi_algorithm_id("allreduce", alg))}
    return {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": alg, "MPIR_CVAR_DEVICE_COLLECTIVES": "none"}


def sum_bits(stdout: str) -> dict[int, str]:
    return {int(w[1]): w[2] for w in (line.split() for line in stdout.splitlines()) if w and w[0] == "sum"}


def exploit_table(path: Path, collective: str, member: str, ppn_bin: int) -> Path:
    """Every size bin of one layout exploits `member`; everything else goes to the library."""
    cells = "".join(f"  cell {s} 0 {ppn_bin} exploit 0 1\n" for s in range(24))
    path.write_text(f"colltune-select 1\nunlisted library\ncollective {collective}\n"
                    f"  members default {member}\n{cells}end\n")
    return path


@pytest.mark.parametrize("library", LIBRARIES)
def test_library_members_really_run(request, library, tmp_path):
    """60 allreduces of 1000 doubles at 3 ranks, each drawn uniformly over default and the
    library's algorithms (named as `colltune bench` names them): every call's result bits are
    those of a plain run with that algorithm fixed by the library's own settings."""
    lib, art, progs = setup(request, library)
    algs = allreduce_algorithms(lib)
    prog = [progs["learn_libalg"], "sums"]
    ref = {}
    for alg in [None, *algs]:
        run = ok(run_mpi(lib, 3, [*prog, "1", "1000"], native_force(lib, alg)))
        ref[f"lib:allreduce:{alg}" if alg else "default"] = sum_bits(run.stdout)[0]
    assert len(set(ref.values())) >= 3, ref  # the classes differ: the check below can fail
    members = list(ref)
    table = tmp_path / "t.select"
    # 8000 bytes: size bin 13; one node: nodes bin 0; 3 processes: ppn bin 1
    table.write_text("colltune-select 1\nunlisted library\ncollective allreduce\n"
                     f"  members {' '.join(members)}\n  cell 13 0 1 explore {' '.join('1' for _ in members)}\nend\n")
    trace = tmp_path / "trace"
    trace.mkdir()
    proof = stand_in_proof(tmp_path / "proof.txt", members, 3)
    run = ok(run_mpi(lib, 3, [*prog, "60", "1000"],
                     learn_env(lib, art, select=table, trace=trace, COLLTUNE_PROOF=str(proof)), timeout=240))
    bits = sum_bits(run.stdout)
    calls, portfolios = read_calls(trace, 3)
    assert len(calls) == 60 and set(portfolios["allreduce"]) >= set(members)
    assert set(calls["member"]) == set(members)  # every algorithm was drawn
    assert set(calls["outcome"]) == {"applied"}
    got = {int(i): bits[int(i)] for i in calls["call_index"]}
    want = {int(i): ref[m] for i, m in zip(calls["call_index"], calls["member"], strict=True)}
    assert got == want
    # `default` is counted as the library's call, every other member as applied
    assert sum(run.counts.values()) == 60 and {(k[1], k[3]) for k in run.counts} == {("explore", "applied"),
                                                                                     ("explore", "library")}


@pytest.mark.parametrize(("library", "member"), [("openmpi", "lib:allgather:two_proc"),
                                                 pytest.param("mpich", "lib:allgather:recursive_doubling",
                                                              marks=pytest.mark.mpich)])
def test_refused_algorithm_falls_back_to_the_library_counted(request, library, member, tmp_path):
    """Open MPI's two_proc serves 2 processes only, MPICH's recursive doubling allgather a power
    of two: at 3 ranks the library refuses them (on every rank, before any message), the
    library's own choice serves the call, and the counting table and the trace say `refused`.
    At 2 ranks the same table applies the member."""
    lib, art, progs = setup(request, library)
    prog = [progs["ct_collectives"], "allgather"]
    three = ok(run_mpi(lib, 3, prog, learn_env(lib, art, select=exploit_table(tmp_path / "t3", "allgather", member, 1),
                                                trace=tmp_path), timeout=120))
    made = sum(three.program_calls["allgather"].values())
    assert three.counts == {("allgather", "exploit", member, "not-applicable:refused"): made}, three.describe()
    calls, _ = read_calls(tmp_path, 3)
    assert set(calls["member"]) == {member} and set(calls["outcome"]) == {"not_applicable"}
    assert set(calls["reason"]) == {REFUSED}
    two = ok(run_mpi(lib, 2, prog, learn_env(lib, art, select=exploit_table(tmp_path / "t2", "allgather", member, 1))))
    assert two.counts == {("allgather", "exploit", member, "applied"): made}, two.describe()


@pytest.mark.parametrize("library", LIBRARIES)
def test_member_communicators_follow_their_parents(request, library, tmp_path):
    """Every round dups the world and splits it, runs library members on both (Open MPI: each
    gets its member communicator at its first call) and frees them while those are cached; 20
    rounds, results exact on every rank, nothing left for MPI_Finalize to trip over."""
    lib, art, progs = setup(request, library)
    alg = {"openmpi": "ring", "mpich": "ring"}[library]
    table = tmp_path / "t.select"
    cells = "".join(f"  cell {s} 0 {p} exploit 0 1\n" for s in range(24) for p in (0, 1))
    bcast = "binomial"
    table.write_text(f"colltune-select 1\nunlisted library\ncollective allreduce\n  members default lib:allreduce:{alg}\n"
                     f"{cells}collective bcast\n  members default lib:bcast:{bcast}\n{cells}end\n")
    run = ok(run_mpi(lib, 3, [progs["learn_libalg"], "comms", "20"], learn_env(lib, art, select=table), timeout=240))
    assert "learn_libalg comms ok" in run.stdout, run.describe()
    assert run.counts == {("allreduce", "exploit", f"lib:allreduce:{alg}", "applied"): 40,
                          ("bcast", "exploit", f"lib:bcast:{bcast}", "applied"): 20}, run.describe()


@pytest.mark.parametrize("library", LIBRARIES)
def test_uniform_draws_over_several_communicators_include_library_members(request, library, tmp_path):
    """With no table every member of the portfolio is drawn, the library's algorithms included,
    on the world, its dups and splits of different sizes: the run would hang if two ranks drew
    differently, and Python predicts every call's member from the trace."""
    lib, art, _ = setup(request, library)
    prog = build.compile_program(lib, [PROGRAMS / "learn_comms.c"], tmp_path / "learn_comms", ["-Wextra"])
    trace = tmp_path / "trace"
    trace.mkdir()
    run = ok(run_mpi(lib, 3, [prog, "12"], learn_env(lib, art, trace=trace), timeout=240))
    calls, portfolios = read_calls(trace, 3)
    assert list(calls["member"]) == predicted(sel.SelectionTable(), calls, portfolios, refused_members(art))
    lib_calls = calls[calls["member"].str.startswith("lib:")]
    assert lib_calls["comm_id"].nunique() >= 4 and (lib_calls["comm_size"] < 3).any(), run.describe()
    # the runtime offers the algorithms under the names `colltune bench` measures them by
    assert {f"lib:allreduce:{a}" for a in allreduce_algorithms(lib)} <= set(portfolios["allreduce"])


def test_no_library_members_under_thread_multiple(openmpi, openmpi_build, libalg_programs, tmp_path):
    """Algorithm settings are process-wide: under MPI_THREAD_MULTIPLE a table naming a library
    member is refused (one warning naming why), and the run goes on with the library."""
    progs = libalg_programs("openmpi")
    table = exploit_table(tmp_path / "t", "allreduce", "lib:allreduce:ring", 0)
    run = run_mpi(openmpi, 2, [progs["ct_threads"], "10"], learn_env(openmpi, openmpi_build, select=table), timeout=120)
    assert run.returncode == 0, run.describe()
    msgs = run.messages("learning mode off")
    assert len(msgs) == 1 and "member 'lib:allreduce:ring' of allreduce is not offered by this MPI library: " \
        "library algorithms are not online members under MPI_THREAD_MULTIPLE" in msgs[0], run.describe()


def test_learning_loop_with_library_members(openmpi, openmpi_build, libalg_programs, tmp_path):
    """Traces with library members -> `traces ingest` -> `learn table` lists them and names the
    runtime's own portfolio -> the frozen table runs (the runtime accepts what learn wrote) and
    applies its choice -> `learn export` writes a profile that `colltune run --profile` accepts,
    leaving a library algorithm out and saying so."""
    import subprocess
    import sys

    from colltune.mpi import runenv
    from colltune.tune.profile import read_profile

    colltune = str(Path(sys.executable).with_name("colltune"))
    prog = [libalg_programs("openmpi")["learn_libalg"], "sums"]
    members = ["default", *(f"lib:allreduce:{a}" for a in allreduce_algorithms(openmpi))]
    table = tmp_path / "t.select"
    table.write_text("colltune-select 1\nunlisted library\ncollective allreduce\n"
                     f"  members {' '.join(members)}\n  cell 13 0 1 explore {' '.join('1' for _ in members)}\nend\n")
    trace, db = tmp_path / "trace", tmp_path / "x.duckdb"
    trace.mkdir()
    proof = str(stand_in_proof(tmp_path / "proof.txt", members, 3))
    ok(run_mpi(openmpi, 3, [*prog, "140", "1000"],
               learn_env(openmpi, openmpi_build, select=table, trace=trace, COLLTUNE_PROOF=proof), timeout=240))
    subprocess.run([colltune, "traces", "ingest", str(trace), "--db", str(db), "--mpi", "openmpi"], check=True,
                   capture_output=True)
    learned = tmp_path / "learned.select"
    opts = ["--db", str(db), "--mpi-name", "openmpi", "--min-timings", "5", "--min-members", "2",
            "--min-cell-evidence", "5", "--trees", "20"]
    subprocess.run([colltune, "learn", "table", *opts, "--out", str(learned)], check=True, capture_output=True)
    block = sel.read_table(learned).collectives["allreduce"]
    assert set(members) <= set(block.members) and (13, 0, 1) in block.cells
    weights = block.cells[13, 0, 1].weights
    best = block.members[weights.index(max(weights))]
    frozen = sel.write_table(sel.read_table(learned).frozen(), tmp_path / "frozen.select")
    run = ok(run_mpi(openmpi, 3, [*prog, "5", "1000"],
                     learn_env(openmpi, openmpi_build, select=frozen, COLLTUNE_PROOF=proof)))
    served = ("allreduce", "exploit", best, "applied") if best != "default" else \
        ("allreduce", "exploit", "library", "library")
    assert run.counts == {served: 5}, run.describe()
    profile = tmp_path / "learned.prof"
    out = subprocess.run([colltune, "learn", "export", *opts, "--out", str(profile)], check=True,
                         capture_output=True, text=True)
    read_profile(profile)
    runenv.rank_environment(openmpi, openmpi_build, profile=profile)
    said = "choose a library algorithm (lib:)" in out.stderr
    exploit = block.cells[13, 0, 1].mode == "exploit"
    assert said == (exploit and best.startswith("lib:")), out.stderr


def test_profile_export_leaves_library_choices_out(tmp_path):
    """An exploit cell whose best member is a library algorithm has no profile rule (a profile
    cannot name one, docs/profile.md) and is counted; a mock-up's cell next to it is exported,
    and the profile reads back."""
    import pandas as pd

    from colltune.learn.export import to_profile
    from colltune.learn.selection import CellReport
    from colltune.tune.profile import read_profile, write_profile

    members = ("default", "allreduce_as_reduce_bcast", "lib:allreduce:ring")
    reports = [CellReport("allreduce", (s, 0, 1), members, {}, {}, 50, "exploit", (0.2, 0.2, 0.6), best)
               for s, best in ((10, "lib:allreduce:ring"), (11, "allreduce_as_reduce_bcast"))]
    layouts = pd.DataFrame([("allreduce", 3, 1, 3, 100)], columns=["collective", "comm_size", "nodes", "ppn", "calls"])
    res = to_profile(reports, layouts, (24, 4, 8), mpi="openmpi", source="test")
    assert (res.rules, res.library_cells, res.explore_cells) == (1, 1, 0)
    path = write_profile(res.profile, tmp_path / "p.prf") or tmp_path / "p.prf"
    rules = read_profile(path).sections[0].blocks[0].rules
    assert [(r.lo, r.hi, r.variant) for r in rules] == [(1024, 2047, "allreduce_as_reduce_bcast")]


def test_intel_mpi_offers_no_library_members(tmp_path):
    """Intel MPI fixes its algorithms per launch (I_MPI_ADJUST_*; its MPI_T writes do nothing):
    its portfolios hold no `lib:` member, the front end refuses a table naming one before the
    launch, and the runtime refuses it too (one warning saying why) if given one directly."""
    from colltune.mpi import libraries as mpi
    from colltune import interposer

    try:
        intel = mpi.resolve("intel")
    except mpi.MpiError as exc:
        pytest.skip(f"Intel MPI not available: {exc}")
    art = build.ensure_built(intel)
    prog = build.compile_program(intel, [PROGRAMS / "ct_collectives.c"], tmp_path / "ct_collectives", ["-Wextra"])
    trace = tmp_path / "trace"
    trace.mkdir()
    ok(run_mpi(intel, 2, [prog, "allreduce"], learn_env(intel, art, trace=trace)))
    _, portfolios = read_calls(trace, 2)
    assert not [m for ms in portfolios.values() for m in ms if m.startswith("lib:")]
    table = exploit_table(tmp_path / "t", "allreduce", "lib:allreduce:1", 0)
    with pytest.raises(mpi.MpiError, match=r"fixes its algorithms per launch \(I_MPI_ADJUST_\*\), not per call"):
        interposer.rank_environment(intel, art, learn=table)
    run = run_mpi(intel, 2, [prog, "allreduce"], learn_env(intel, art, select=table))
    assert run.returncode == 0 and "ok 2 ranks" in run.stdout, run.describe()
    msgs = run.messages("learning mode off")
    assert len(msgs) == 1 and "Intel MPI fixes its algorithms per launch" in msgs[0], run.describe()


def test_no_library_members_without_the_algorithm_variables(openmpi, openmpi_build, libalg_programs, tmp_path):
    """Open MPI without coll/tuned registers no algorithm control variable: the portfolio has no
    library member and a table naming one is refused with that reason; the run goes on."""
    progs = libalg_programs("openmpi")
    table = exploit_table(tmp_path / "t", "allreduce", "lib:allreduce:ring", 0)
    env = learn_env(openmpi, openmpi_build, select=table, OMPI_MCA_coll="^tuned")
    run = run_mpi(openmpi, 2, [progs["ct_collectives"], "allreduce"], env)
    assert run.returncode == 0 and "ok 2 ranks" in run.stdout, run.describe()
    msgs = run.messages("learning mode off")
    assert len(msgs) == 1 and "not offered by this MPI library: this library lists no algorithm control " \
        "variables in MPI_T" in msgs[0], run.describe()


def test_read_only_dynamic_rules_switch(tmp_path):
    """Open MPI 4.1 (Debian's, installed by `make setup-fortran`) refuses MPI_T writes of
    coll_tuned_use_dynamic_rules (MPI_T_ERR_CVAR_SET_NEVER), without which a forced algorithm is
    ignored: a member would silently run the library's default under its name. So its algorithms
    are offered only when the launch turned dynamic rules on; otherwise a table naming one is
    refused with the fix, and the run goes on with the library."""
    mpicc = Path("/usr/bin/mpicc.openmpi")
    if not mpicc.exists():
        pytest.skip("Debian's Open MPI 4.1 is not installed (make setup-fortran installs it)")
    debian = libraries.resolve(str(mpicc))
    if not debian.version.startswith("Open MPI v4."):
        pytest.skip(f"{debian.version}: not an Open MPI 4.x")
    art = build.ensure_built(debian)
    prog = build.compile_program(debian, [PROGRAMS / "ct_collectives.c"], tmp_path / "ct_collectives", ["-Wextra"])
    table = exploit_table(tmp_path / "t", "allreduce", "lib:allreduce:ring", 1)
    run = run_mpi(debian, 3, [prog, "allreduce"], learn_env(debian, art, select=table))
    assert run.returncode == 0 and "ok 3 ranks" in run.stdout, run.describe()
    msgs = run.messages("learning mode off")
    assert len(msgs) == 1 and "coll_tuned_use_dynamic_rules is read-only through MPI_T here (Open MPI before " \
        "5.0): launch with OMPI_MCA_coll_tuned_use_dynamic_rules=1" in msgs[0], run.describe()
    # Turned on at launch: a member runs its algorithm for real (the bits of the library's own
    # run of it), checked with an algorithm whose bits differ from the default's.
    sums = build.compile_program(debian, [PROGRAMS / "learn_libalg.c"], tmp_path / "learn_libalg", ["-Wextra", "-lm"])

    def bits(alg: str | None) -> str:
        return sum_bits(ok(run_mpi(debian, 3, [sums, "sums", "1", "1000"], native_force(debian, alg))).stdout)[0]

    default = bits(None)
    alg = next((a for a in allreduce_algorithms(debian) if bits(a) != default), None)
    assert alg is not None, "every algorithm sums in the default's order: the check below could not fail"
    table = exploit_table(tmp_path / "t2", "allreduce", f"lib:allreduce:{alg}", 1)
    # This test is about the read-only switch, not about Open MPI 4.1's algorithms: a proof that
    # passes the member for double sums stands in for the proof run of this library (the proof
    # of the embedded library's algorithms is tests/test_proof.py).
    stand_in = tmp_path / "proof.txt"
    stand_in.write_text(f"colltune-proof 2\nsizes 3\nmember lib:allreduce:{alg} passed separate/builtin/float\n")
    on = ok(run_mpi(debian, 3, [sums, "sums", "5", "1000"],
                    learn_env(debian, art, select=table, OMPI_MCA_coll_tuned_use_dynamic_rules="1",
                              COLLTUNE_PROOF=str(stand_in))))
    assert on.messages("learning mode off") == [], on.describe()
    assert set(sum_bits(on.stdout).values()) == {bits(alg)}, (alg, on.describe())
