"""The adaptive rounds' judgements with and without one effect cache (issue 36, session 6).

    python benchmarks/reproducibility/effect_cache.py /tmp/repro-final.duckdb [--runs 3 --repeat 2]

A quick check judges its run after the first launches, after round 1 and at the end (with the
bootstrap intervals); each judgement judges every earlier look again. For stored checks, the three
judgements replayed (the run cut to the launches of rounds <= k) without a cache and with one cache
kept across them, as verify/adaptive.rounds now does: CPU seconds of the three, and whether the
final verdicts are identical. Pure reading.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import duckdb

from colltune.verify import check, decide


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with duckdb.connect(str(args.db), read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created")
               .fetchall()][:args.runs]
    for run_id in ids:
        run = check.load_run(args.db, run_id)
        looks = [dataclasses.replace(run, measurements=run.measurements[
            [run.rounds.get(int(i), 0) <= k for i in run.measurements["launch_idx"]]].reset_index(drop=True))
            for k in range(run.looks - 1)] + [run]
        for _ in range(args.repeat):
            for cached in (False, True):
                cache: decide.EffectCache | None = {} if cached else None
                t0 = time.process_time()
                results = [check.judge(part, details=k == len(looks) - 1, cache=cache) for k, part in enumerate(looks)]
                cpu = time.process_time() - t0
                final = results[-1].verdicts.drop(columns=["judged_at"])
                if not cached:
                    reference = final
                same = "" if not cached else f", final verdicts identical: {final.equals(reference)}"
                print(f"{run_id}: {'one cache' if cached else 'no cache'} {cpu:.3f} CPU s{same}", flush=True)


if __name__ == "__main__":
    main()
