"""SimGrid SMPI as a fourth library (docs/smpi.md): platforms, discovery, build, per-launch
algorithms, a bench run on a simulated cluster. The SMPI tests skip, naming the fix, where
`make setup-smpi` (Debian libsimgrid-dev) has not run; `make test` runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from colltune.cli import main
from colltune.mpi import build, launch, smpi
from colltune.mpi import libraries as mpi
from colltune.mpi.algorithms import launch_setting

needs_smpi = pytest.mark.skipif(shutil.which("smpicc") is None or shutil.which("smpirun") is None,
                                reason="SimGrid SMPI absent: run `make setup-smpi` (libsimgrid-dev)")


def test_presets_place_ranks_in_blocks_of_a_node() -> None:
    small = smpi.platform("small")
    assert (small.slots, small.ppn) == (16, 4)
    assert small.hosts[:5] == ("small-0",) * 4 + ("small-1",)
    assert small.layout(8) == (2, 4) and small.layout(3) == (1, 3) and small.layout(13) == (4, 4)
    fat = smpi.platform("fattree-64x16")
    assert (fat.slots, fat.ppn, fat.layout(256)) == (1024, 16, (16, 16))
    assert 'topology="FAT_TREE" topo_parameters="2;8,8;1,4;1,1"' in fat.xml.read_text()
    fly = smpi.platform("dragonfly-1024")
    assert (fly.slots, fly.ppn, fly.layout(4096)) == (4096, 4, (1024, 4))
    assert smpi.platform(None, 17).name == "fattree-64x16"  # the smallest preset that holds 17
    assert small.hostfile(6).read_text().splitlines() == ["small-0"] * 4 + ["small-1"] * 2
    with pytest.raises(smpi.SmpiError, match="has 16 cores, 17 ranks asked"):
        small.hostfile(17)


def test_platform_file_hosts_from_hosts_and_clusters(tmp_path: Path) -> None:
    xml = tmp_path / "mine.xml"
    xml.write_text("<?xml version='1.0'?><platform version='4.1'><zone id='z' routing='Full'>"
                   "<host id='login' speed='1Gf' core='2'/>"
                   "<cluster id='c' prefix='n' suffix='.x' radical='0-1,4' speed='1Gf' core='3' "
                   "bw='1GBps' lat='1us'/></zone></platform>")
    plat = smpi.platform(str(xml))
    assert plat.hosts == ("login", "login", *(["n0.x"] * 3), *(["n1.x"] * 3), *(["n4.x"] * 3))
    assert plat.ppn == 2
    with pytest.raises(smpi.SmpiError, match="neither a preset"):
        smpi.platform(str(tmp_path / "missing.xml"))
    (tmp_path / "bad.xml").write_text("<platform>")
    with pytest.raises(smpi.SmpiError, match="cannot be read as SimGrid XML"):
        smpi.platform(str(tmp_path / "bad.xml"))


def test_per_launch_choices_become_cfg_flags() -> None:
    env = {**launch_setting("smpi", "allreduce", "rdb"), **launch_setting("smpi", "bcast", "NTSL"),
           smpi.SELECTOR_VAR: "ompi", smpi.PLATFORM_VAR: "small", "COLLTUNE_SMPI_lower": "x"}
    assert env["COLLTUNE_SMPI_ALLREDUCE"] == "rdb"
    assert smpi.config_flags(env) == [*smpi.BASE_CONFIG, "--cfg=smpi/allreduce:rdb",
                                      "--cfg=smpi/bcast:NTSL", "--cfg=smpi/coll-selector:ompi"]
    assert launch_setting("intel", "allreduce", "3") == {"I_MPI_ADJUST_ALLREDUCE": "3"}
    # without a family named, MPICH's: SimGrid's own `default` family is its naive one
    assert smpi.config_flags({}) == [*smpi.BASE_CONFIG, "--cfg=smpi/coll-selector:mpich"]
    assert smpi.config_flags({smpi.SELECTOR_VAR: "default"}) == [*smpi.BASE_CONFIG, "--cfg=smpi/coll-selector:default"]
    # timing launches share buffers from 1 KiB per rank, 4 MiB at least; the user's value wins
    assert smpi.timing_env(1024, {}) == {smpi.SHARED_VAR: "4194304"}
    assert smpi.timing_env(8192, {}) == {smpi.SHARED_VAR: "8388608"}
    assert smpi.timing_env(4, {}) == {smpi.SHARED_VAR: "4194304"}
    assert smpi.timing_env(4096, {smpi.SHARED_VAR: "0"}) == {smpi.SHARED_VAR: "0"}
    assert smpi.config_flags({smpi.SHARED_VAR: "0"})[-1] == "--cfg=smpi/auto-shared-malloc-thresh:0"
    assert smpi.config_flags({smpi.SHARED_VAR: "65536"})[-2:] == [
        "--cfg=smpi/auto-shared-malloc-thresh:65536", "--cfg=smpi/shared-malloc-blocksize:67108864"]


def test_members_serve_only_where_the_line_takes_the_proven_collectives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The proof is made with the MPICH family: an smpirun line with SimGrid's own family (none
    named) or a collective's algorithm of its own gets a proof that passes no member, saying why."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf absent: run `make setup-smpi`")
    monkeypatch.setenv("COLLTUNE_CACHE", str(tmp_path))
    assert smpi.unproven_choice(["smpirun", "-np", "4", "--cfg=smpi/coll-selector:mpich"]) is None
    assert "'default' family" in str(smpi.unproven_choice(["smpirun", "-np", "4"]))
    assert "'ompi' family" in str(smpi.unproven_choice(["smpirun", "--cfg=smpi/coll-selector:ompi"]))
    assert smpi.unproven_choice(["smpirun", "--cfg=smpi/coll-selector:mpich", "--cfg=smpi/bcast:NTSL"]) \
        == "the line chooses bcast's algorithm (--cfg=smpi/bcast:NTSL)"
    lib = tmp_path / "build" / "libcolltune.so"
    lib.parent.mkdir()
    lib.write_bytes(b"")
    (lib.parent / "proof.txt").write_text("colltune-proof 2\nsizes 3\nmember a passed x\n")
    _, env = smpi.interposed_command(["smpirun", "-np", "4", "--cfg=smpi/coll-selector:mpich", "-platform", "p",
                                      "/bin/true"], lib, {})
    assert env["COLLTUNE_PROOF"] == str(lib.parent / "proof.txt")
    # smpirun's temporary directory, where SMPI copies libcolltune per rank under names without a
    # process id, is this process's own; a finished process's is removed when empty
    assert env["TMPDIR"] == str(tmp_path / "smpi" / "tmp" / str(os.getpid()))
    gone = tmp_path / "smpi" / "tmp" / "999999999"  # above any pid_max (at most 2^22): no such process
    gone.mkdir()
    _, env = smpi.interposed_command(["smpirun", "-np", "4", "-platform", "p", "/bin/true"], lib, {})
    assert not gone.exists() and Path(env["TMPDIR"]).is_dir()
    assert Path(env["COLLTUNE_PROOF"]).read_text().splitlines() == [
        "colltune-proof 2", "# no member serves: " + str(smpi.unproven_choice(["smpirun"]))]


@pytest.fixture(scope="module")
def smpi_lib() -> mpi.MpiLibrary:
    if shutil.which("smpicc") is None:
        pytest.skip("SimGrid SMPI absent: run `make setup-smpi` (libsimgrid-dev)")
    return mpi.resolve("smpi")


@needs_smpi
def test_smpi_found_built_and_launched_on_the_platform(smpi_lib: mpi.MpiLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (smpi_lib.name, smpi_lib.family, smpi_lib.short_version) == ("smpi", "smpi", "SMPI Version 3.32")
    assert (smpi_lib.mpicc.name, smpi_lib.mpiexec.name) == ("smpicc", "smpirun")
    art = build.ensure_built(smpi_lib)
    assert art.bench.exists() and art.libcolltune.exists() and art.selftest.exists()
    monkeypatch.setenv(smpi.PLATFORM_VAR, "small")
    argv = launch.mpiexec_argv(smpi_lib, 6, ["./app", "x"], launch_setting("smpi", "reduce", "binomial"))
    plat = smpi.platform("small")
    assert argv == [str(smpi_lib.mpiexec), "-np", "6", "-platform", str(plat.xml), "-hostfile",
                    str(plat.hostfile(6)), *smpi.BASE_CONFIG, "--cfg=smpi/coll-selector:mpich", "--cfg=smpi/reduce:binomial", "./app", "x"]


def _medians(db: Path) -> dict[tuple[str, int], float]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.sql("select variant, nprocs, median(runtime_s) from measurements where not warmup "
                       "group by all").fetchall()
    return {(v, n): t for v, n, t in rows}


@needs_smpi
def test_bench_on_two_simulated_nodes_is_deterministic(smpi_lib: mpi.MpiLibrary, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """8 ranks on the small preset = 2 nodes x 4; a library algorithm gets its own launch with
    its --cfg; simulated time repeats exactly from launch to launch and run to run, also when the
    second run shares its 4 MiB buffers between the ranks (SimGrid's shared malloc)."""
    monkeypatch.setenv(smpi.PLATFORM_VAR, "small")  # --platform sets it for the process: restored after
    args = ["bench", "--mpi", "smpi", "--platform", "small", "-n", "8", "-c", "allreduce", "-s", "4MiB",
            "--variants", "default,lib:allreduce:rdb", "-R", "2", "--no-aa", "--no-barrier", "--seed", "3"]
    medians = []
    for k in (1, 2):
        if k == 1:
            monkeypatch.setenv(smpi.SHARED_VAR, "0")  # every buffer private
        else:
            monkeypatch.delenv(smpi.SHARED_VAR)  # the default: 4 MiB buffers shared on 8 ranks
        db = tmp_path / f"run{k}.duckdb"
        result = CliRunner().invoke(main, [*args, "--db", str(db)])
        assert result.exit_code == 0, result.output
        medians.append(_medians(db))
    assert medians[0] == medians[1]
    assert set(medians[0]) == {("default", 8), ("lib:allreduce:rdb", 8)}
    assert medians[0][("default", 8)] != medians[0][("lib:allreduce:rdb", 8)]
    with duckdb.connect(str(tmp_path / "run1.duckdb"), read_only=True) as con:
        env = dict(con.sql("select key || '@' || launch_idx, value from environment where key in "
                           "('nodes', 'ranks_per_node', 'hostnames', 'smpi_platform', 'smpi_config')").fetchall())
    assert env["nodes@0"] == "2" and env["ranks_per_node@0"] == "4,4"
    assert env["hostnames@0"] == "small-0,small-1" and env["smpi_platform@0"] == "small"
    assert env["smpi_config@1"] == " ".join([*smpi.BASE_CONFIG, "--cfg=smpi/coll-selector:mpich", "--cfg=smpi/allreduce:rdb",
                                             "--cfg=smpi/auto-shared-malloc-thresh:0"])
    with duckdb.connect(str(tmp_path / "run2.duckdb"), read_only=True) as con:
        assert con.sql("select value from environment where key = 'smpi_config' and launch_idx = 0").fetchall() \
            == [(" ".join([*smpi.BASE_CONFIG, "--cfg=smpi/coll-selector:mpich", "--cfg=smpi/auto-shared-malloc-thresh:4194304",
                           "--cfg=smpi/shared-malloc-blocksize:67108864"]),)]


@needs_smpi
def test_run_interposes_an_unmodified_smpi_program(smpi_lib: mpi.MpiLibrary, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`colltune run -- smpirun ...` on a program built by plain smpicc: a patched copy loads
    libcolltune (one copy per rank), the calls are counted per rank, the results are the plain
    run's, and the program file is untouched."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf absent: run `make setup-smpi`")
    monkeypatch.setenv(smpi.PLATFORM_VAR, "small")
    app = build.compile_program(smpi_lib, [Path(__file__).parents[1] / "benchmarks" / "scale" / "app.c"],
                                tmp_path / "app")
    before = app.read_bytes()
    plain = launch.run(smpi_lib, 16, [str(app), "7"])
    assert plain.returncode == 0, plain.stderr
    line = next(l for l in plain.stdout.splitlines() if l.startswith("scale-app"))
    assert line.startswith("scale-app ranks 16 calls 7 checksum ")
    run = subprocess.run([str(Path(sys.executable).with_name("colltune")), "run", "--mpi", "smpi", "--verbose",
                          "--", "smpirun", "-np", "16", str(app), "7"], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    # the checksum of every result; not the simulated time: this smpirun line, unlike colltune's
    # own launches, simulates computation, so host CPU bursts move the clock by nanoseconds
    assert [l.split(" simulated_s")[0] for l in run.stdout.splitlines() if l.startswith("scale-app")] \
        == [line.split(" simulated_s")[0]]
    assert "colltune: libcolltune active on 16 ranks (built for SimGrid SMPI)" in run.stderr
    counted = {l.split()[1]: int(l.split()[-1]) for l in run.stderr.splitlines()
               if l.startswith("colltune:   MPI_")}
    assert counted == {"MPI_Allreduce": 7, "MPI_Bcast": 7, "MPI_Reduce": 1}
    assert app.read_bytes() == before


def test_scan_is_left_out_where_simgrid_aborts() -> None:
    """SimGrid 3.32's solver aborts on MPI_Scan/MPI_Exscan from 128 ranks on: the plan says so
    instead of crashing the launch; below that, and on other libraries, they are measured."""
    from colltune.measure.planning import plan_jobs
    from colltune.measure.settings import BenchSettings

    settings = BenchSettings(collectives=["scan", "exscan", "bcast"], sizes=[8], barrier=False)
    at_256 = plan_jobs(settings, 256, "smpi")
    assert [j.collective for j in at_256.jobs] == ["bcast"]
    assert [note.split(":")[0] for note in at_256.left_out] == ["scan", "exscan"]
    assert "maxmin.cpp:217" in at_256.left_out[0]
    assert [j.collective for j in plan_jobs(settings, 64, "smpi").jobs] == ["scan", "exscan", "bcast"]
    assert [j.collective for j in plan_jobs(settings, 256, "mpich").jobs] == ["scan", "exscan", "bcast"]


@needs_smpi
def test_selftest_and_proof_complete_with_the_cases_smpi_cannot_take_refused(smpi_lib: mpi.MpiLibrary) -> None:
    """The selftest and the proof run through on SMPI (docs/smpi.md, "The proof on SMPI"): the
    cases SimGrid 3.32 cannot take are named by their SimGrid line, a case the library's own call
    cannot take is not run, and a mock-up that would run into one is refused in the whole class,
    with the line as the proof's evidence; the other classes pass and are served."""
    result = CliRunner().invoke(main, ["selftest", "--mpi", "smpi", "-n", "4", "--quick", "--quiet"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for line in ("reduce-mvapich-two-level.cpp:149", "smpi_pmpi_coll.cpp:851", "smpi_coll.cpp:391",
                 "smpi_mpich_selector.cpp:180-181"):
        assert "library finding: a case SMPI cannot take: " in text and line in text
    proof = (build.ensure_built(smpi_lib).dir / "proof.txt").read_text().splitlines()
    passed = {l.split()[1]: l.split()[3] for l in proof if l.startswith("member ")}
    assert passed["alltoall_as_alltoallv"] == "separate/none/any"  # in place: SMPI's Alltoallv
    assert passed["gather_as_reduce"] == ("in_place/none/any/2048-65535B,in_place/none/any/65536B+,"
                                          "separate/none/any/2048-65535B,separate/none/any/65536B+")
    assert passed["allgather_as_alltoall"] == ("in_place/none/any/0-15B,in_place/none/any/16-2047B,"
                                               "separate/none/any/0-15B,separate/none/any/16-2047B")
    assert passed["allgather_as_gather_bcast"] == "in_place/none/any,separate/none/any"
    fails = {tuple(l.split()[1:3]): l for l in proof if l.startswith("fail ")}
    assert "refused on rank" in fails[("gather_as_reduce", "separate/none/any/0-15B")]
    assert "reduce-mvapich-two-level.cpp:149" in fails[("gather_as_reduce", "separate/none/any/0-15B")]
    assert "smpi_pmpi_coll.cpp:851" in fails[("alltoall_as_alltoallv", "in_place/none/any")]


@needs_smpi
def test_reduce_scatter_block_sweep_on_8_ranks_finds_the_float_order_only_its_largest_vectors_show(
        smpi_lib: mpi.MpiLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the proof's Reduce_scatter(_block) counts stay per block above 4 ranks
    (benchmarks/scale/README.md, "The proof's P^2"): on 8 simulated ranks two mock-ups' float sums
    differ from SMPI's own Reduce_scatter_block only at 70,000 floats per block (a 2.24 MB vector,
    twice the largest the 4-rank sweep reaches), so a sweep whose per-block counts shrank as 4/P
    would have proven those classes. Every rank reports the difference; nothing else fails."""
    monkeypatch.setenv(smpi.PLATFORM_VAR, "small")
    art = build.ensure_built(smpi_lib)
    argv = launch.mpiexec_argv(smpi_lib, 8, [str(art.selftest), "--quick", "--sweep", "--collective",
                                             "reduce_scatter_block"], {})
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    fails = [r for r in records if r["type"] == "proof_fail"]
    assert {(r["member"], r["class"], r["case"]["comm"], r["case"]["count"], r["case"]["datatype"]) for r in fails} == {
        (member, f"{mode}/builtin/float/65536B+", "world", 70000, "MPI_FLOAT")
        for member in ("reducescatterblock_as_allreduce", "reducescatterblock_as_reduce_scatter")
        for mode in ("separate", "in_place")}
    assert sorted(r["rank"] for r in fails) == sorted(list(range(8)) * 4)
    assert next(r["sizes"] for r in records if r["type"] == "proof_format") == [4, 8]
    failed = {r["member"]: sorted(r["failed"]) for r in records if r["type"] == "proof" and r["tested"]}
    assert failed == {"reducescatterblock_as_allreduce": ["in_place/builtin/float/65536B+",
                                                          "separate/builtin/float/65536B+"],
                      "reducescatterblock_as_reduce_scatter": ["in_place/builtin/float/65536B+",
                                                               "separate/builtin/float/65536B+"],
                      "reducescatterblock_as_reducescatter": []}


@needs_smpi
def test_learning_mode_serves_proven_members_with_the_plain_results(smpi_lib: mpi.MpiLibrary, tmp_path: Path) -> None:
    """`colltune run --learn -` (every call exploring, seed 2) on an unmodified smpicc program, 16
    simulated ranks, the proven MPICH family on the line: the members the proof passed serve most
    calls and every result is the plain run's (benchmarks/scale/learn.py does it up to 1024)."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf absent: run `make setup-smpi`")
    app = build.compile_program(smpi_lib, [Path(__file__).parents[1] / "benchmarks" / "scale" / "app.c"],
                                tmp_path / "app")
    plat = smpi.platform("small")
    line = ["smpirun", "-np", "16", "-platform", str(plat.xml), "-hostfile", str(plat.hostfile(16)),
            "--cfg=smpi/coll-selector:mpich", "--cfg=smpi/simulate-computation:no", str(app), "50"]
    plain = subprocess.run(line, capture_output=True, text=True, check=False)
    assert plain.returncode == 0, plain.stderr
    learn = subprocess.run([str(Path(sys.executable).with_name("colltune")), "run", "--mpi", "smpi", "--learn", "-",
                            "--verbose", "--", *line], capture_output=True, text=True, check=False,
                           env={**os.environ, "COLLTUNE_SELECT_SEED": "2"})
    assert learn.returncode == 0, learn.stderr
    assert "no member serves" not in learn.stderr
    default = subprocess.run([str(Path(sys.executable).with_name("colltune")), "run", "--mpi", "smpi", "--learn", "-",
                              "--dry-run", "--", "smpirun", "-np", "16", str(app), "50"],
                             capture_output=True, text=True, check=False)
    assert "colltune: no member serves this run: the line's collectives are SimGrid's 'default' family" \
        in default.stderr, default.stderr
    result = [l.split(" simulated_s")[0] for l in plain.stdout.splitlines() if l.startswith("scale-app")]
    assert result and [l.split(" simulated_s")[0] for l in learn.stdout.splitlines() if l.startswith("scale-app")] == result
    served = {f"{w[1]}:{w[3]}": int(w[5]) for w in (l.split() for l in learn.stderr.splitlines())
              if len(w) == 6 and w[0] == "colltune:" and w[4] in ("applied", "library")}
    assert served == {"allreduce:library": 8, "allreduce:allreduce_as_reduce_bcast": 6,
                      "allreduce:allreduce_as_reducescatter_allgatherv": 13,
                      "allreduce:allreduce_as_reducescatterblock_allgather": 23,
                      "bcast:library": 9, "bcast:bcast_as_allgatherv": 18, "bcast:bcast_as_scatter_allgather": 23,
                      "reduce:library": 1}


@needs_smpi
def test_rules_of_a_simulated_layout_serve_that_layout_only(smpi_lib: mpi.MpiLibrary, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Per-layout rules from SMPI measurements (benchmarks/scale/README.md: 16 x 16 and 64 x 16):
    `check` of 1 KiB scatters on 16 ranks of `small` (4 nodes x 4) finds Scatterv faster (GL22),
    `tune --per-layout` writes it as a `nodes 4 ppn 4` rule; under that profile the world of
    tests/programs/cluster_layouts.c and its dup (4 x 4) take it, its node communicators (1 x 4),
    one rank per node (4 x 1) and ranks 0-2 (1 x 3) the library, every result checked exactly."""
    from interposer_support import PROGRAMS, Run

    from colltune.tune import profile as prof

    if shutil.which("patchelf") is None:
        pytest.skip("patchelf absent: run `make setup-smpi`")
    monkeypatch.setenv(smpi.PLATFORM_VAR, "small")  # --platform sets it for the process: restored after
    db, out = tmp_path / "c.duckdb", tmp_path / "layout.prof"
    # SMPI's own plan: one launch of one repetition, the exact ratios (docs/smpi.md "Deterministic times")
    checked = CliRunner().invoke(main, ["check", "--mpi", "smpi", "--platform", "small", "-n", "16", "-c", "scatter",
                                        "-s", "1KiB", "--no-barrier", "--no-aa", "--quiet", "--db", str(db)])
    assert checked.exit_code == 1, checked.output  # 1: violations found
    with duckdb.connect(str(db), read_only=True) as con:
        once = con.sql("select variant, count(*), count(distinct launch_idx) from measurements "
                       "where not warmup group by variant, msg_bytes").fetchall()
    assert {v for v, _, _ in once} >= {"default", "scatter_as_scatterv"}
    assert {(n, launches) for _, n, launches in once} == {(1, 1)}
    tuned = CliRunner().invoke(main, ["tune", "--db", str(db), "--out", str(out), "--per-layout"])
    assert tuned.exit_code == 0, tuned.output
    profile = prof.read_profile(out)
    assert profile.provenance["layout"] == "16:4x4"
    assert [(s.collective, b.procs_lo, b.layout, [(r.lo, r.hi, r.variant) for r in b.rules])
            for s in profile.sections for b in s.blocks] == [("scatter", 16, (4, 4), [(1024, 1024, "scatter_as_scatterv")])]
    app = build.compile_program(smpi_lib, [PROGRAMS / "cluster_layouts.c"], tmp_path / "cluster_layouts")
    plat = smpi.platform("small")
    run = subprocess.run([str(Path(sys.executable).with_name("colltune")), "run", "--mpi", "smpi", "--profile", str(out),
                          "--verbose", "--", "smpirun", "-np", "16", "-platform", str(plat.xml), "-hostfile",
                          str(plat.hostfile(16)), "--cfg=smpi/coll-selector:mpich",
                          "--cfg=smpi/simulate-computation:no", str(app), "256", "scatter"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "ok 15" in run.stdout, run.stdout + run.stderr
    assert "unknown setting" not in run.stderr  # COLLTUNE_SMPI_PLATFORM is the front end's, not the ranks'
    assert Run(run.returncode, run.stdout, run.stderr).counts == {
        ("scatter", "profile", "scatter_as_scatterv", "applied"): 6,  # world 5 + its dup 1: 4 x 4
        ("scatter", "profile", "library", "library"): 9}  # 1 x 4, 4 x 1, 1 x 3: no rule


@needs_smpi
def test_learning_loop_runs_on_simulated_ranks(smpi_lib: mpi.MpiLibrary, tmp_path: Path) -> None:
    """`colltune learn run --mpi smpi --platform small -- smpirun -np 16 ...` (docs/learn.md):
    the loop's batches run an unmodified smpicc program on 16 simulated ranks (4 x 4), their
    traces are ingested with the simulated layout, and with the seed fixed the loop repeats
    exactly (benchmarks/scale/README.md runs it at 256 ranks)."""
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf absent: run `make setup-smpi`")
    app = build.compile_program(smpi_lib, [Path(__file__).parents[1] / "benchmarks" / "scale" / "app.c"],
                                tmp_path / "app")
    db = tmp_path / "learn.duckdb"
    run = subprocess.run([str(Path(sys.executable).with_name("colltune")), "learn", "run", "--batches", "2",
                          "--db", str(db), "--table-out", str(tmp_path / "t.sel"), "--trace-root",
                          str(tmp_path / "traces"), "--mpi", "smpi", "--platform", "small", "--trees", "20",
                          "--min-timings", "5", "--min-cell-evidence", "2", "--replicate", "0", "--",
                          "smpirun", "-np", "16", "--cfg=smpi/coll-selector:mpich", "--cfg=smpi/simulate-computation:no",
                          str(app), "50"],
                         capture_output=True, text=True, check=False, env={**os.environ, "COLLTUNE_SELECT_SEED": "2"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no member serves" not in run.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        runs = con.sql("select mpi_name, world_size, nodes, ppn from trace_runs order by batch").fetchall()
        batches = con.sql("select batch, source, traced_calls, explored_calls, round(collective_s, 9) "
                          "from learn_batches order by batch").fetchall()
        calls = con.sql("select batch, collective, member, mode, count(*) from trace_calls join trace_runs "
                        "using (trace_run_id) group by all order by all").fetchall()
    assert runs == [("smpi", 16, 4, 4)] * 2
    # batch 1: an empty table, every call explored; SMPI's MPICH family is the fastest at every
    # point here, so batch 2 exploits the library and explores only the one unlisted Reduce (batch
    # 2's time moved by 1 ns when MPI_COMM_WORLD's layout stopped making a communicator of its own:
    # one SimGrid set-up ring less before the application's calls)
    assert batches == [(1, "app", 101, 101, 0.001721375), (2, "app", 101, 1, 0.001446901)]
    assert calls == [
        (1, "allreduce", "allreduce_as_reduce_bcast", "explore", 6),
        (1, "allreduce", "allreduce_as_reducescatter_allgatherv", "explore", 13),
        (1, "allreduce", "allreduce_as_reducescatterblock_allgather", "explore", 23),
        (1, "allreduce", "default", "explore", 8),
        (1, "bcast", "bcast_as_allgatherv", "explore", 18), (1, "bcast", "bcast_as_scatter_allgather", "explore", 23),
        (1, "bcast", "default", "explore", 9), (1, "reduce", "default", "explore", 1),
        (2, "allreduce", "default", "exploit", 50), (2, "bcast", "default", "exploit", 50),
        (2, "reduce", "default", "explore", 1)]
