"""`colltune validate`: the statistics on synthetic paired measurements (exact values), the
database table, the report section, and one real run through the benchmark's `tuned`."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from colltune.tune import profile as prof
from colltune.tune import validate as val

PROFILE = prof.parse_profile(
    "colltune-profile 1\nnprocs 4\ncollective bcast\nprocs 4 4\nbytes 8 64 bcast_as_allgatherv\nend\n")
NOW = dt.datetime(2026, 11, 22, 6, 0)


def measurements(factors: dict[int, list[float]], reps: int = 5, collective: str = "bcast") -> pd.DataFrame:
    """Per size: tuned_i = default_i / factor_i in launch i; launch effects differ a lot (x1..x8),
    which the pairing must cancel."""
    rows = []
    for nbytes, per_launch in factors.items():
        for launch, factor in enumerate(per_launch):
            base = 1e-5 * (1 + launch * 1.75)
            for rep in range(reps):
                jitter = 1 + 0.001 * rep
                rows.append((4, collective, "default", nbytes, launch, base * jitter))
                rows.append((4, collective, "tuned", nbytes, launch, base * jitter / factor))
    return pd.DataFrame(rows, columns=["nprocs", "collective", "variant", "msg_bytes", "launch_idx", "runtime_s"])


def test_paired_speedup_ci_and_flags_exact() -> None:
    m = measurements({
        8: [1.5, 1.6, 1.4, 1.5, 1.55, 1.45],  # replaced, clearly faster
        64: [0.8, 0.79, 0.81, 0.8, 0.82, 0.78],  # replaced, clearly slower
        1024: [1.0, 1.01, 0.99, 1.0, 1.02, 0.98],  # no rule: A/A
    })
    t = val.judge(m, PROFILE, val.ValidateSettings(), run_id="v1", profile_path="/p", now=NOW).set_index("msg_bytes")
    assert list(t.columns) == [c for c in val.VALIDATION_COLUMNS if c != "msg_bytes"]
    assert t.loc[8, "speedup"] == pytest.approx(1.5)  # median of the six per-launch ratios
    assert t.loc[64, "speedup"] == pytest.approx(0.8)
    assert t.loc[1024, "speedup"] == pytest.approx(1.0)
    assert t.loc[8, "n_launches"] == 6
    assert t.loc[8, "profile_variant"] == "bcast_as_allgatherv"
    assert not isinstance(t.loc[1024, "profile_variant"], str)  # no rule: the library
    assert t.loc[8, "ci_low"] <= 1.5 <= t.loc[8, "ci_high"]
    assert t.loc[8, "ci_low"] >= 1.4 and t.loc[8, "ci_high"] <= 1.6
    assert bool(t.loc[8, "faster"]) and not bool(t.loc[8, "slower"])
    assert bool(t.loc[64, "slower"]) and not bool(t.loc[64, "faster"])
    assert not bool(t.loc[1024, "slower"]) and not bool(t.loc[1024, "faster"])
    # Holm over 3 points: the smallest p is multiplied by 3, the next by 2 (monotone).
    p = t["p_slower"].to_numpy()
    assert t.loc[64, "p_slower_adjusted"] == pytest.approx(min(1.0, 3 * p.min()))
    assert t.loc[8, "profile_hash"] == f"{PROFILE.content_hash():016x}"
    assert t.loc[8, "judged_at"] == pd.Timestamp(NOW)


def test_small_significant_slowdown_below_tolerance_is_not_flagged() -> None:
    m = measurements({8: [0.97, 0.975, 0.965, 0.97, 0.972, 0.968]})
    t = val.judge(m, PROFILE, val.ValidateSettings(tolerance=0.05))
    assert t["p_slower_adjusted"].iloc[0] < 0.05
    assert not bool(t["slower"].iloc[0])
    t = val.judge(m, PROFILE, val.ValidateSettings(tolerance=0.01))
    assert bool(t["slower"].iloc[0])


def test_unpaired_launches_are_dropped_and_missing_side_is_an_error() -> None:
    m = measurements({8: [1.2, 1.2, 1.2]})
    m = m[~((m["variant"] == "tuned") & (m["launch_idx"] == 2))]
    t = val.judge(m, PROFILE)
    assert int(t["n_launches"].iloc[0]) == 2
    with pytest.raises(val.ValidateError, match="--variants default,tuned"):
        val.judge(m[m["variant"] == "default"], PROFILE)


def test_one_launch_gives_no_test_but_a_speedup() -> None:
    t = val.judge(measurements({8: [1.25]}), PROFILE)
    assert t["speedup"].iloc[0] == pytest.approx(1.25)
    assert math.isnan(t["p_slower"].iloc[0]) and math.isnan(t["p_slower_adjusted"].iloc[0])
    assert not bool(t["slower"].iloc[0])


def test_database_round_trip_and_summary(tmp_path: Path) -> None:
    db = tmp_path / "v.duckdb"
    t = val.judge(measurements({8: [1.5] * 3 + [1.6] * 3, 1024: [1.0] * 6}), PROFILE, run_id="v1", now=NOW)
    val.save(db, t)
    val.save(db, t)  # replacing, not duplicating
    back = val.load(db)
    assert len(back) == 2 and list(back["msg_bytes"]) == [8, 1024]
    assert back["speedup"].to_numpy() == pytest.approx(t["speedup"].to_numpy())
    s = val.summary(back)
    assert s["points"] == 2 and s["replaced_points"] == 1 and s["slower"] == 0
    assert s["geomean_speedup_replaced"] == pytest.approx(1.55)
    assert val.load(tmp_path / "missing.duckdb").empty


def test_default_scope_from_the_profile() -> None:
    assert val.default_scope(PROFILE) == (["bcast"], [4])
    p = prof.parse_profile("colltune-profile 1\ncollective scan\nprocs 2 2\nbytes 1 1 scan_as_exscan_reducelocal\n"
                           "procs 3 8\nbytes 1 1 scan_as_exscan_reducelocal\nend\n")
    assert val.default_scope(p) == (["scan"], [2])
    with pytest.raises(val.ValidateError, match="no rules"):
        val.default_scope(prof.parse_profile("colltune-profile 1\nend\n"))


def test_speedup_ci_mapping_is_monotone() -> None:
    assert val._speedup_from_rel(0.0) == 1.0
    assert val._speedup_from_rel(0.5) == 2.0
    assert val._speedup_from_rel(-1.0) == 0.5
    assert math.isinf(val._speedup_from_rel(1.0))
    rels = np.linspace(-2, 0.9, 20)
    speedups = [val._speedup_from_rel(r) for r in rels]
    assert speedups == sorted(speedups)


@pytest.mark.slow
def test_layout_rules_follow_the_runs_layout() -> None:
    """A layout block decides for the process count run on that layout (run_layouts); on another
    layout, or an unknown one, the layout-free block does."""
    p = prof.parse_profile("colltune-profile 1\ncollective bcast\nprocs 4 4\nbytes 8 8 bcast_as_allgatherv\n"
                           "nodes 2 ppn 2\nbytes 64 64 bcast_as_scatter_allgather\nend\n")
    m = measurements({8: [1.5] * 3, 64: [1.5] * 3})

    def chosen(layouts: dict[int, tuple[int, int]] | None) -> list[str | None]:
        t = val.judge(m, p, layouts=layouts).set_index("msg_bytes")["profile_variant"]
        return [None if pd.isna(t[n]) else t[n] for n in (8, 64)]

    assert chosen({4: (2, 2)}) == [None, "bcast_as_scatter_allgather"]
    assert chosen({4: (1, 4)}) == chosen(None) == ["bcast_as_allgatherv", None]


@pytest.mark.parametrize("block", ["procs 2 2", "nodes 1 ppn 2"])
def test_real_validation_with_the_benchmark(tmp_path: Path, openmpi_build: object, block: str) -> None:
    """A profile that replaces allreduce at 8 and 64 bytes on 2 ranks, measured for real; as a
    layout block too (2 ranks of one node are 1 x 2: the benchmark's `tuned` and the validation
    find the rule by the communicator's layout)."""
    from colltune.commands.validate import command

    profile = tmp_path / "p.prof"
    profile.write_text(f"colltune-profile 1\nnprocs 2\ncollective allreduce\n{block}\n"
                       "bytes 8 64 allreduce_as_reduce_bcast\nend\n")
    db = tmp_path / "v.duckdb"
    # No -s: the quick preset's sizes (8, 1 KiB, 32 KiB) plus the rule's bounds (8, 64).
    res = CliRunner().invoke(command, ["--profile", str(profile), "--db", str(db), "--preset", "quick", "-R", "3",
                                       "--max-reps", "60", "--time-budget", "0.3", "--quiet"])
    assert res.exit_code in (0, 1), res.output  # 1 = flagged slower: allowed, the numbers are real
    t = val.load(db)
    assert list(t["msg_bytes"]) == [8, 64, 1024, 32768]
    assert list(t["profile_variant"].fillna("library")) == ["allreduce_as_reduce_bcast"] * 2 + ["library"] * 2
    assert (t["n_launches"] == 3).all()
    assert (t["ci_low"] <= t["speedup"]).all() and (t["speedup"] <= t["ci_high"]).all()
    assert ("SLOWER" in res.output) == bool(t["slower"].any())

    from colltune.report import html as report

    html = report.render_html(report.ReportContext(db, _check_result(db), stored=False))
    assert "Tuned vs default" in html and "allreduce_as_reduce_bcast" in html


def _check_result(db: Path):  # noqa: ANN202
    from colltune.verify import check

    return check.judge(check.load_run(db))


def test_default_sizes_add_every_rule_bound() -> None:
    p = prof.parse_profile("colltune-profile 1\ncollective bcast\nprocs 4 4\nbytes 8 64 bcast_as_allgatherv\n"
                           "bytes 100000 100000 bcast_as_allgatherv\ncollective scan\nprocs 4 4\n"
                           "bytes 3 5 scan_as_exscan_reducelocal\nend\n")
    assert val.default_sizes(p, ["bcast"], [8, 1024, 32768]) == [8, 64, 1024, 32768, 100000]
    assert val.default_sizes(p, ["bcast", "scan"], [1024]) == [3, 5, 8, 64, 1024, 100000]
