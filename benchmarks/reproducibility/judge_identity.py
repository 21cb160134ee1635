"""Two trees judge stored checks alike (issue 36): every judgement of the adaptive rounds, field for field.

    git archive <base-commit> src | tar -x -C /tmp/base && ln -s $PWD/native /tmp/base/native
    python benchmarks/reproducibility/judge_identity.py --base-src /tmp/base/src DB [DB ...]

Each complete run of each database is judged as `colltune check` judges it, look by look (the
looks that choose a round's jobs on the launches measured by then, `details=False`, one effect
cache, and the looks memo where the tree has one; then the last judgement), once by the tree at
--base-src and once by this tree, each in a fresh interpreter. Compared exactly: every verdict
column but `judged_at`, the futility flags, the messages (this tree's scheduler-bound note is
counted apart: it is new), the jobs each look chooses, the summary. Prints the judging CPU time
of both. Exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r'''
import inspect, pickle, sys, time
import duckdb
from colltune.verify import check, decide
out_path, dbs = sys.argv[1], sys.argv[2:]
memo = "looks_memo" in inspect.signature(check.judge).parameters
out, cpu = {}, 0.0
for db in dbs:
    with duckdb.connect(db, read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE status = 'complete' ORDER BY created").fetchall()]
    for run_id in ids:
        try:
            full = check.load_run(db, run_id)
        except Exception as exc:  # e.g. a run killed while judging: the same error from both trees
            out[(db, run_id)] = repr(exc)
            continue
        rounds = sorted(set(full.rounds.values()) | {0})
        cache, kw, judged = {}, ({"looks_memo": {}} if memo else {}), []
        started = time.process_time()
        for k in rounds:
            keep = {i for i, r in full.rounds.items() if r <= k} | {
                int(i) for i in full.measurements["launch_idx"].unique() if int(i) not in full.rounds}
            m = full.measurements
            part = full if k == rounds[-1] else check.RunData(
                **{**full.__dict__, "measurements": m[m["launch_idx"].isin(keep)].reset_index(drop=True)})
            r = check.judge(part, details=(k == rounds[-1]), cache=cache, **kw)
            chosen = decide.selection(r.verdicts, part.measurements, r.futile)
            judged.append((r.verdicts.drop(columns=["judged_at"]), r.futile, list(r.messages),
                           {key: sorted(map(repr, v)) for key, v in chosen.items()}, r.summary))
        cpu += time.process_time() - started
        out[(db, run_id)] = judged
pickle.dump((out, cpu), open(out_path, "wb"))
'''

NEW_NOTE = "scheduler-bound launches:"


def judge_all(src: Path, dbs: list[str], out: Path) -> tuple[dict[object, object], float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    subprocess.run([sys.executable, "-c", _CHILD, str(out), *dbs], env=env, check=True)
    result: tuple[dict[object, object], float] = pickle.loads(out.read_bytes())
    return result


def main() -> None:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-src", type=Path, required=True)
    ap.add_argument("db", nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base, base_cpu = judge_all(args.base_src.resolve(), args.db, Path(tmp) / "base.pkl")
        new, new_cpu = judge_all(Path(__file__).resolve().parent.parent.parent / "src", args.db, Path(tmp) / "new.pkl")
    checks = judgements = noted = 0
    for key, before in base.items():
        after = new[key]
        if isinstance(before, str) or isinstance(after, str):
            assert before == after, (key, before, after)
            continue
        assert len(before) == len(after), key
        for (v1, f1, m1, s1, su1), (v2, f2, m2, s2, su2) in zip(before, after, strict=True):
            pd.testing.assert_frame_equal(v1, v2, check_exact=True)
            pd.testing.assert_series_equal(f1, f2, check_exact=True)
            extra = [x for x in m2 if x.startswith(NEW_NOTE) and x not in m1]
            assert m1 == [x for x in m2 if x not in extra], (key, m1, m2)
            noted += bool(extra)
            assert s1 == s2, key
            pd.testing.assert_frame_equal(su1, su2, check_exact=True)
            judgements += 1
        checks += 1
    print(f"{checks} checks, {judgements} judgements: verdicts (every column but judged_at), futility, messages, "
          f"the jobs each look chose and the summaries identical; {noted} judgements with the new "
          f"scheduler-bound note; judging CPU {base_cpu:.2f} s (base) -> {new_cpu:.2f} s (this tree)")


if __name__ == "__main__":
    main()
