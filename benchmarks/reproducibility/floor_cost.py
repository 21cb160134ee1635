"""What the variance floor (issue 36, session 10) costs a live check: each stored check's first look
judged without and with it, and the jobs the first adaptive round would then measure.

    python benchmarks/reproducibility/floor_cost.py /tmp/verd36/s10w1_quiet2.duckdb
"""
import sys, duckdb, numpy as np
from colltune.verify import check, decide, comparisons as cm
db=sys.argv[1]
ids=[r[0] for r in duckdb.connect(db, read_only=True).execute("select run_id from runs where status='complete' order by created").fetchall()]
tot=[]
for rid in ids:
    run=check.load_run(db, rid)
    meas=run.measurements
    first=meas[~meas.launch_idx.isin([i for i,r in run.rounds.items() if r>0])]
    out=[]
    for prior in (0.0, 4.0):
        sub=check.RunData(run.db_path, run.run_id, run.info, run.environment, run.launches, run.variants, first, [], {}, run.layouts)
        v=check.judge(sub, check.CheckSettings(variance_prior=prior), details=False)
        sel=decide.selection(v.verdicts, first, v.futile)
        jobs={(c,s) for n,j in sel.items() for (c,s,_) in j}
        open_=int((v.verdicts.kind.isin(decide.GUIDELINE_KINDS) & v.verdicts.verdict.isin(["undecided","untested"])).sum())
        out.append((open_, jobs))
    extra=out[1][1]-out[0][1]
    tot.append(len(extra))
    print(rid[-6:], "open at look 0:", out[0][0], "->", out[1][0], " round-1 jobs:", len(out[0][1]), "->", len(out[1][1]), sorted(extra))
print("extra jobs per check: mean", np.mean(tot))
