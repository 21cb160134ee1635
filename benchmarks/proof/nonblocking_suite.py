"""mpi4py's nonblocking collective tests under the learning mode deciding MPI_I<coll> (issue 33).

mpi4py 4.1.2's `test_cco_nb_buf` and `test_cco_nb_vec` (unmodified, from its sdist as
tests/test_interposer_thirdparty.py fetches them) at 2 ranks without threads
(MPI4PY_RC_THREADS=0: under MPI_THREAD_MULTIPLE the library members are off), under
`colltune run --learn -` with budgets of 10^9 (every eligible call explores, the nonblocking ones
drawn over their portfolio: docs/select.md "Nonblocking calls") and a trace directory, with
every algorithm of the library's nonblocking forms proven first (one launch each, merged into the
build's proof). Per seed: passed or not, explored calls a nonblocking member served, the trace's
nonblocking records and how many have no reward (completed with other requests). Rerun:

    .venv/bin/python benchmarks/proof/nonblocking_suite.py [--mpi openmpi|mpich] [--seeds 1,2,3]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from suite_parity import COLLTUNE, EXPLORE_ALL, run

from colltune import catalog
from colltune.learn import traces
from colltune.measure import proof
from colltune.measure import selftest as st
from colltune.mpi import build
from colltune.mpi import libraries as mpi

TESTS = ["test_cco_nb_buf", "test_cco_nb_vec"]


def nonblocking_proof(lib: mpi.MpiLibrary, out: Path) -> Path:
    argv = st.driver_argv(build.ensure_built(lib)) + ["--sweep"]
    members = [m for m in proof.library_members(lib, argv, forms=("nonblocking",)) if m.endswith(proof.NONBLOCKING)]
    out.write_text(proof.merged(proof.ensure_proven(lib).read_text(), proof.prove(lib, only=members)))
    return out


def case(lib: mpi.MpiLibrary, tests: Path, seed: str, proof_file: Path, trace_dir: Path) -> dict:
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file), "MPI4PY_RC_THREADS": "0"}
    flag = ["-x", "MPI4PY_RC_THREADS=0"] if lib.family == "openmpi" else ["-genv", "MPI4PY_RC_THREADS", "0"]
    argv = [COLLTUNE, "run", "--mpi", lib.name, "--verbose", "--learn", "-", "--trace-dir", str(trace_dir), "--",
            str(lib.mpiexec), "-n", "2", *flag, sys.executable, "main.py", "-f", *TESTS]
    proc = run(argv, env, cwd=tests)
    text = proc.stdout + proc.stderr
    served = sum(int(m.group(2)) for m in re.finditer(r"explore\s+(\S+#nonblocking)\s+applied\s+(\d+)\s*$",
                                                      proc.stderr, re.M))
    t = traces.read_trace(trace_dir / "rank-0.cttrace") if (trace_dir / "rank-0.cttrace").exists() else None
    # a nonblocking call's record names its portfolio past the collectives (trace version 4)
    started = 0 if t is None else int((t.records["collective"] >= len(catalog.load().collective_names())).sum())
    return {"seed": seed, "passed": proc.returncode == 0 and "FAILED" not in text and text.count("OK") >= 2,
            "returncode": proc.returncode, "nonblocking_served": served, "nonblocking_records": started,
            "unrewarded": None if t is None else t.unrewarded}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    ap.add_argument("--seeds", default="1,2,3")
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    from test_interposer_thirdparty import mpi4py_tests
    tests = mpi4py_tests.__wrapped__()
    with tempfile.TemporaryDirectory() as tmp:
        proof_file = nonblocking_proof(lib, Path(tmp) / "proof.txt")
        print(f"{lib.name} ({lib.short_version}), 2 ranks, {' '.join(TESTS)}, --learn - (budgets 10^9)")
        for seed in args.seeds.split(","):
            row = case(lib, tests, seed, proof_file, Path(tmp) / f"traces-{seed}")
            print("  " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
