"""Per-rank layouts of one type signature under the interposer on MPICH 5.0.2: colltune must not
hand them to MPICH's MPI_Allgatherv ring, which cuts blocks by each rank's own extent and fails
("Message truncated") or hangs where the application's own call does not (docs/variants.md,
"MPICH's Allgatherv ring"; benchmarks/proof/allgatherv_layouts.c).

tests/programs/layout_calls.c checks every element it receives; on 2 ranks MPICH picks its ring
for MPI_Allgatherv from 524,288 bytes in all: Allgather of 40,000 and 70,000 pairs of ints per
block (640,000 and 1,120,000 bytes through allgather_as_allgatherv) and Bcast of 70,000 (560,000
bytes through bcast_as_allgatherv) would reach it, Allgatherv of 20,000 (320,000 bytes) reaches
it only through lib:allgatherv:ring.

A launch that moves MPICH's own choice (MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM=ring, a selection
tuning file) runs the ring at any size: then GL4, GL9 and the ring members serve no call, and
the counting table names the setting as the reason."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from colltune import interposer
from colltune.measure import selftest as st
from colltune.mpi import build

from interposer_support import mpmd_argv, run_argv, run_mpi

pytestmark = pytest.mark.mpich

PROGRAM = Path(__file__).parent / "programs" / "layout_calls.c"
BLOCKS = "7,4099,40000,70000"   # Allgather and Bcast, pairs of ints per block
V_BLOCKS = "20000"              # Allgatherv
RING_POW2, RING_OTHER = 524288, 81920   # MPICH 5.0.2's maint/tuning/coll/mpir/generic.json


def _ring(p: int, total: int) -> bool:
    """MPICH's default selection runs MPI_Allgatherv's ring from these bytes in all on."""
    return total >= (RING_POW2 if p & (p - 1) == 0 else RING_OTHER)


@pytest.fixture(scope="module")
def program(mpich, mpich_build, tmp_path_factory) -> Path:
    return build.compile_program(mpich, [PROGRAM], tmp_path_factory.mktemp("layouts") / "layout_calls",
                                 ["-Wextra"])


@pytest.fixture(scope="module")
def plain(mpich, program) -> list[str]:
    run = run_mpi(mpich, 2, [program, BLOCKS, V_BLOCKS], {})
    assert run.returncode == 0, run.describe()
    lines = sorted(run.stdout.splitlines())
    assert len(lines) == 2 * (3 * 4 + 1) and all(line.endswith(" ok") for line in lines), lines
    return lines


def _rows(stderr: str) -> Counter[tuple[str, str, str, str]]:
    rows: Counter[tuple[str, str, str, str]] = Counter()
    for line in stderr.splitlines():
        f = line.split()
        if line.startswith("colltune:   ") and len(f) == 6 and f[5].isdigit():
            rows[f[1], f[2], f[3], f[4]] += int(f[5])
    return rows


def test_the_bound_is_mpichs_ring_selection():
    """The rule's bytes, stated here a third time (the core and the selftest's rules are the
    others; the selftest probes both sides of the bound on every size it runs), exactly where
    benchmarks/proof/allgatherv_layouts.c found MPICH 5.0.2 failing: 2 ranks 32,767 pairs ok,
    32,768 truncated; 3 ranks 3,413 / 3,414; 4 ranks 16,383 / 16,384; root only, 3 ranks
    10,239 / 10,240 and 2 ranks 65,535 / 65,536."""
    assert [_ring(2, 2 * 8 * n) for n in (32767, 32768)] == [False, True]
    assert [_ring(3, 3 * 8 * n) for n in (3413, 3414)] == [False, True]
    assert [_ring(4, 4 * 8 * n) for n in (16383, 16384)] == [False, True]
    assert [_ring(3, 8 * n) for n in (10239, 10240)] == [False, True]
    assert [_ring(2, 8 * n) for n in (65535, 65536)] == [False, True]


def test_forced_mockups_keep_mpichs_outcome(mpich, mpich_build, program, plain):
    """allgather_as_allgatherv and bcast_as_allgatherv forced: the same lines as the plain run;
    they serve below MPICH's ring and step aside (`size`) from it on. Without the rule this run
    aborts ("Message truncated") in the Allgather of 40,000 and hangs in the Bcast of 70,000."""
    env = interposer.rank_environment(mpich, mpich_build, verbose=True,
                                      force="allgather=allgather_as_allgatherv,bcast=bcast_as_allgatherv")
    run = run_mpi(mpich, 2, [program, BLOCKS, V_BLOCKS], env, timeout=180)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert sorted(run.stdout.splitlines()) == plain
    rows = _rows(run.stderr)
    # Allgather: 7 and 4099 pairs (T = 112, 65,584 bytes) served, 40,000 and 70,000 refused
    assert rows["allgather", "force", "allgather_as_allgatherv", "applied"] == 2, run.describe()
    assert rows["allgather", "force", "allgather_as_allgatherv", "not-applicable:size"] == 2
    # Bcast from two roots: 7, 4099 and 40,000 pairs (T = n < 524,288) served, 70,000 refused
    assert rows["bcast", "force", "bcast_as_allgatherv", "applied"] == 6, run.describe()
    assert rows["bcast", "force", "bcast_as_allgatherv", "not-applicable:size"] == 2


def test_forced_ring_member_only_where_mpich_picks_it(mpich, mpich_build, program, plain):
    """lib:allgatherv:ring forced on an Allgatherv of 320,000 bytes, where MPICH itself runs
    recursive doubling: refused (`size`), the same lines as the plain run. Without the rule the
    ring gets the call (the proof passed it there on equal layouts) and aborts."""
    env = interposer.rank_environment(mpich, mpich_build, verbose=True,
                                      force="allgatherv=lib:allgatherv:ring")
    run = run_mpi(mpich, 2, [program, "", V_BLOCKS], env, timeout=180)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert sorted(run.stdout.splitlines()) == [line for line in plain if " allgatherv " in line]
    rows = _rows(run.stderr)
    assert rows["allgatherv", "force", "lib:allgatherv:ring", "not-applicable:size"] == 1, run.describe()
    assert not rows["allgatherv", "force", "lib:allgatherv:ring", "applied"]


@pytest.mark.parametrize("seed", ["1", "2"])
def test_learning_with_every_call_exploring_keeps_mpichs_outcome(mpich, mpich_build, program, plain,
                                                                   seed):
    """Every call exploring (`--learn -`, budgets 10^9): the same lines as the plain run."""
    env = interposer.rank_environment(mpich, mpich_build, verbose=True)
    env.update(COLLTUNE_SELECT="-", COLLTUNE_SELECT_SEED=seed,
               COLLTUNE_SELECT_BUDGET="1000000000", COLLTUNE_SELECT_CELL_BUDGET="1000000000")
    run = run_mpi(mpich, 2, [program, BLOCKS, V_BLOCKS], env, timeout=180)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert sorted(run.stdout.splitlines()) == plain
    rows = _rows(run.stderr)
    served = {(c, v) for (c, mode, v, outcome) in rows if mode == "explore" and outcome == "applied"}
    assert served, run.describe()


# ---- a launch that moves MPICH's own choice --------------------------------------------------

SETTING = "MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM"
TUNING = "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"
# Under the ring, MPICH's own Allgatherv of these layouts truncates from 2,731 pairs on 2 ranks:
# the application's Allgatherv stays at 7 (the ring keeps a block of 7 whole).
MOVED_V_BLOCKS = "7"


@pytest.fixture(scope="module")
def ring_tuning_file(mpich, tmp_path_factory) -> Path:
    """MPICH's own selection tree with the ring as Allgatherv's only intra-communicator leaf."""
    from colltune.tune import native_export

    tree = native_export.mpich_default_tree(mpich)
    tree["collective=allgatherv"]["comm_type=intra"] = {"algorithm=MPIR_Allgatherv_intra_ring": {}}
    path = tmp_path_factory.mktemp("ring_tuning") / "ring.json"
    path.write_text(json.dumps(tree))
    return path


def _moved_env(setting: str, tuning: Path) -> dict[str, str]:
    return {SETTING: "ring"} if setting == SETTING else {TUNING: str(tuning)}


@pytest.fixture(scope="module")
def plain_moved(mpich, program, ring_tuning_file) -> dict[str, list[str]]:
    """The plain runs under each moved launch: the application's own Allgather and Bcast never
    meet the ring, so every line is `ok` at every size."""
    lines = {}
    for setting in (SETTING, TUNING):
        run = run_mpi(mpich, 2, [program, BLOCKS, MOVED_V_BLOCKS], _moved_env(setting, ring_tuning_file))
        assert run.returncode == 0, run.describe()
        lines[setting] = sorted(run.stdout.splitlines())
        assert len(lines[setting]) == 2 * (3 * 4 + 1) and all(x.endswith(" ok") for x in lines[setting])
    return lines


@pytest.mark.parametrize("setting", [SETTING, TUNING])
def test_a_launch_that_moves_mpichs_ring_keeps_gl4_gl9_and_the_ring_out(mpich, mpich_build, program,
                                                                          plain_moved, ring_tuning_file,
                                                                          setting):
    """GL4, GL9 and lib:allgatherv:ring forced under a launch that makes MPICH's ring its choice
    at every size: not one call served, each `not-applicable:<the setting>`, and the plain run's
    lines. Without the rule (main before this change) GL4 hands the ring Allgather's layouts of
    4,099 pairs (T = 65,584 bytes, below the default bound) and the run aborts."""
    env = interposer.rank_environment(mpich, mpich_build, verbose=True,
                                      force="allgather=allgather_as_allgatherv,bcast=bcast_as_allgatherv,"
                                            "allgatherv=lib:allgatherv:ring")
    env.update(_moved_env(setting, ring_tuning_file))
    run = run_mpi(mpich, 2, [program, BLOCKS, MOVED_V_BLOCKS], env, timeout=180)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert sorted(run.stdout.splitlines()) == plain_moved[setting]
    value = "ring" if setting == SETTING else str(ring_tuning_file)
    assert any(f"{setting}={value} moves MPICH's Allgatherv ring" in line
               for line in run.stderr.splitlines()), run.describe()
    rows = _rows(run.stderr)
    reason = f"not-applicable:{setting}"
    assert {k: n for k, n in rows.items() if k[1] == "force"} == {
        ("allgather", "force", "allgather_as_allgatherv", reason): 4,
        ("bcast", "force", "bcast_as_allgatherv", reason): 8,
        ("allgatherv", "force", "lib:allgatherv:ring", reason): 1,
    }, run.describe()


@pytest.mark.parametrize("seed", ["1", "2"])
def test_learning_under_a_moved_ring_serves_no_gl4_gl9(mpich, mpich_build, program, plain_moved, seed):
    """Every call exploring under MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM=ring: the plain run's lines;
    GL4, GL9 and the ring members are never applied, wherever drawn they are
    `not-applicable:MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM`, and the other members still serve."""
    env = interposer.rank_environment(mpich, mpich_build, verbose=True)
    env.update(COLLTUNE_SELECT="-", COLLTUNE_SELECT_SEED=seed,
               COLLTUNE_SELECT_BUDGET="1000000000", COLLTUNE_SELECT_CELL_BUDGET="1000000000")
    env[SETTING] = "ring"
    run = run_mpi(mpich, 2, [program, BLOCKS, MOVED_V_BLOCKS], env, timeout=180)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    assert sorted(run.stdout.splitlines()) == plain_moved[SETTING]
    rows = _rows(run.stderr)
    ring = {"allgather_as_allgatherv", "bcast_as_allgatherv", "lib:allgatherv:ring"}
    outcomes = {outcome for (_, _, v, outcome) in rows if v in ring}
    assert outcomes <= {f"not-applicable:{SETTING}"}, run.describe()
    served = {v for (c, mode, v, outcome) in rows if mode == "explore" and outcome == "applied"}
    assert served and not served & ring, run.describe()


def test_ranks_that_read_different_settings_turn_colltune_off(mpich, mpich_build, program, plain):
    """One rank launched with the setting, the other without: they would answer GL4 differently
    (an Allgatherv on one rank, an Allgather on the other: a hang), so MPI_Init compares what they
    read and every call goes to the library."""
    env = interposer.rank_environment(mpich, mpich_build, verbose=True,
                                      force="allgather=allgather_as_allgatherv,bcast=bcast_as_allgatherv")
    argv = [program, "7,4099", ""]
    # Hydra: -genv (the interposer's settings) reaches every rank, -env only its own block's
    launch = mpmd_argv(mpich, [(1, argv, env), (1, argv, {})])
    first = launch.index(str(program))
    launch[first:first] = ["-env", SETTING, "ring"]
    run = run_argv(mpich, launch, timeout=180)
    assert run.returncode == 0 and not run.timed_out, run.describe()
    want = sorted(line for line in plain if line.split()[3] in ("7", "4099") and " allgatherv " not in line)
    assert sorted(run.stdout.splitlines()) == want
    assert "MPICH's Allgatherv settings differ across ranks; libcolltune is off" in run.stderr, run.describe()
    assert not [k for k in _rows(run.stderr) if k[3] == "applied"], run.describe()


@pytest.mark.parametrize(("collective", "variant"), [("allgather", "allgather_as_allgatherv"),
                                                     ("bcast", "bcast_as_allgatherv")])
def test_the_selftest_states_the_moved_rule(mpich, mpich_build, monkeypatch, collective, variant):
    """The selftest driver launched with MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM=ring (Hydra passes
    the environment on): every case and probe of GL4 / GL9 that passes the earlier rules is
    `MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM`, none applicable, and the core agrees with the
    driver's second statement of the rule (st_expect.c) on every one."""
    monkeypatch.setenv(SETTING, "ring")
    report = st.run(mpich, [2], quick=True, big=False, collective=collective, timeout=300)
    assert report.ok, st.report_json(report)
    v = next(x for x in report.variants if x.variant == variant)
    assert v.failures == v.reason_mismatches == v.nonuniform == 0
    assert v.not_applicable[SETTING] > 0 and sum(v.not_applicable.values()) == v.cases, v
    assert v.probe_reasons.get(SETTING, 0) >= 2 and "applicable" not in v.probe_reasons, v
