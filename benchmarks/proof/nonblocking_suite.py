"""mpi4py's nonblocking (persistent) collective tests under the learning mode deciding MPI_I<coll>
(MPI_<Coll>_init) (issue 33).

mpi4py 4.1.2's `test_cco_nb_buf` and `test_cco_nb_vec` (`--form persistent`: `test_cco_pr_buf`
and `test_cco_pr_vec`; unmodified, from its sdist as tests/test_interposer_thirdparty.py fetches
them) at 2 ranks without threads (MPI4PY_RC_THREADS=0: under MPI_THREAD_MULTIPLE the library
members are off), under `colltune run --learn -` with budgets of 10^9 (every eligible call
explores, the started ones drawn over their form's portfolio: docs/select.md "Nonblocking calls",
"Persistent calls") and a trace directory, with every algorithm of the library's form proven
first (one launch each, merged into the build's proof; `--members` names fewer). Per seed:
passed or not, explored calls (inits) a member of the form served, the trace's records of the
form and how many have no reward (completed with other requests). Rerun:

    .venv/bin/python benchmarks/proof/nonblocking_suite.py [--mpi openmpi|mpich] [--seeds 1,2,3]
        [--form nonblocking|persistent] [--members lib:allreduce:ring#persistent,...]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
from suite_parity import COLLTUNE, EXPLORE_ALL, run

from colltune import catalog
from colltune.learn import traces
from colltune.measure import proof
from colltune.measure import selftest as st
from colltune.mpi import build
from colltune.mpi import libraries as mpi

TESTS = {"nonblocking": ["test_cco_nb_buf", "test_cco_nb_vec"], "persistent": ["test_cco_pr_buf", "test_cco_pr_vec"]}


def started_proof(lib: mpi.MpiLibrary, form: str, out: Path, only: list[str] | None = None) -> Path:
    argv = st.driver_argv(build.ensure_built(lib)) + ["--sweep"]
    suffix = proof.STARTED_FORMS[form]
    members = only or [m for m in proof.library_members(lib, argv, forms=(form,)) if m.endswith(suffix)]
    out.write_text(proof.merged(proof.ensure_proven(lib).read_text(), proof.prove(lib, only=members)))
    return out


def case(lib: mpi.MpiLibrary, tests: Path, form: str, seed: str, proof_file: Path, trace_dir: Path) -> dict:
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file), "MPI4PY_RC_THREADS": "0"}
    flag = ["-x", "MPI4PY_RC_THREADS=0"] if lib.family == "openmpi" else ["-genv", "MPI4PY_RC_THREADS", "0"]
    argv = [COLLTUNE, "run", "--mpi", lib.name, "--verbose", "--learn", "-", "--trace-dir", str(trace_dir), "--",
            str(lib.mpiexec), "-n", "2", *flag, sys.executable, "main.py", "-f", *TESTS[form]]
    proc = run(argv, env, cwd=tests)
    text = proc.stdout + proc.stderr
    served = sum(int(m.group(2)) for m in re.finditer(rf"explore\s+(\S+#{form})\s+applied\s+(\d+)\s*$",
                                                      proc.stderr, re.M))
    t = traces.read_trace(trace_dir / "rank-0.cttrace") if (trace_dir / "rank-0.cttrace").exists() else None
    # a started call's record names its form's portfolio: + the number of collectives for the
    # nonblocking form, + twice that for the persistent one (trace versions 4, 5)
    n, k = len(catalog.load().collective_names()), catalog.FORMS.index(form)
    records = 0 if t is None else int(((t.records["collective"] // n) == k).sum())
    unrewarded = None if t is None else int(np.isnan(t.records["duration"][(t.records["collective"] // n) == k]).sum())
    return {"seed": seed, "passed": proc.returncode == 0 and "FAILED" not in text and text.count("OK") >= 2,
            "returncode": proc.returncode, f"{form}_served": served, f"{form}_records": records,
            "unrewarded": unrewarded}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--form", choices=sorted(TESTS), default="nonblocking")
    ap.add_argument("--members", default=None,
                    help="prove only these algorithms of the form (comma-separated), not all of them")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    from test_interposer_thirdparty import mpi4py_tests
    tests = mpi4py_tests.__wrapped__()
    with tempfile.TemporaryDirectory() as tmp:
        only = args.members.split(",") if args.members else None
        proof_file = started_proof(lib, args.form, Path(tmp) / "proof.txt", only)
        print(f"{lib.name} ({lib.short_version}), 2 ranks, {' '.join(TESTS[args.form])}, --learn - (budgets 10^9)")
        for seed in args.seeds.split(","):
            row = case(lib, tests, args.form, seed, proof_file, Path(tmp) / f"traces-{seed}")
            print("  " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
