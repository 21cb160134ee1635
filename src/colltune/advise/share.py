"""Finding 4: how much of the run is in collectives, and how much of that is waiting for late
ranks, so that a user knows whether tuning collectives can matter at all."""

from __future__ import annotations

from colltune.advise.findings import Finding
from colltune.advise.points import AppPoint
from colltune.advise.profile_run import ProfileRun

# Below this share of the run, collective tuning cannot pay for itself. Compared with the
# collectives' own cost (waiting for late ranks excluded): an algorithm cannot remove the wait.
NOT_WORTH = 0.03


def shares(run: ProfileRun, points: list[AppPoint]) -> dict[str, float]:
    wall = run.wall_ns / 1e9
    per_rank_coll = {r.rank: sum(p.total_ns for p in r.points if p.kind == "coll") / 1e9 for r in run.ranks}
    per_rank_p2p = {r.rank: sum(p.total_ns for p in r.points if p.kind == "p2p") / 1e9 for r in run.ranks}
    coll = max(per_rank_coll.values())
    # Each point's own cost is its slowest rank's; summed over points that can exceed any one
    # rank's time in collectives, which bounds it.
    own = min(sum(p.own_s for p in points), coll)
    wait = sum(p.wait_s for p in points)
    return {"wall_s": wall, "collective_s": coll, "collective_share": coll / wall if wall else 0.0,
            "own_s": own, "own_share": own / wall if wall else 0.0, "wait_s": wait, "wait_fraction": wait / (own + wait) if own + wait else 0.0,
            "p2p_s": max(per_rank_p2p.values()), "p2p_share": max(per_rank_p2p.values()) / wall if wall else 0.0}


def finding(run: ProfileRun, points: list[AppPoint]) -> Finding:
    s = shares(run, points)
    pct = 100 * s["collective_share"]
    evidence = [f"wall time {s['wall_s']:.3f} s (MPI_Init..MPI_Finalize, slowest rank)",
                f"collectives {s['collective_s']:.3f} s = {pct:.1f}% of it on the busiest rank; "
                f"{100 * s['wait_fraction']:.0f}% of their time is waiting for late ranks "
                "(load imbalance: an algorithm cannot remove it)",
                f"point-to-point {s['p2p_s']:.3f} s = {100 * s['p2p_share']:.1f}%"]
    # The brief is the terminal's row (at most 65 columns after its number and saving), so it
    # keeps the figures whole where the title would be cut in the middle.
    if s["collective_share"] < NOT_WORTH:
        title = f"collectives take {pct:.1f}% of the run: not worth tuning"
        brief = title
    elif s["own_share"] < NOT_WORTH:
        title = (f"collectives take {pct:.1f}% of the run, but their own cost only "
                 f"{100 * s['own_share']:.1f}%: the rest is waiting for late ranks (a matter of load "
                 "balance, not of algorithms): not worth tuning")
        brief = f"collectives {pct:.1f}% of the run, {100 * s['own_share']:.1f}% their own: not worth tuning"
    else:
        own_pct = 100 * s["own_s"] / s["wall_s"]
        title = (f"collectives take {pct:.1f}% of the run, at most {own_pct:.1f}% "
                 "is their own cost (the most any collective tuning can save)")
        brief = f"collectives {pct:.1f}% of the run: tuning saves at most {own_pct:.1f}%"
    return Finding("share", title, evidence, {}, None, data=s, brief=brief)
