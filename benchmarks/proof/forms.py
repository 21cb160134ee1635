#!/usr/bin/env python3
"""The proof of the algorithms of the libraries' nonblocking or persistent forms
(`lib:<coll>:<alg>#nonblocking`, `...#persistent`; docs/select.md "Nonblocking calls" and
"Persistent calls"): each one's launch, its time, and the classes refused.

    .venv/bin/python benchmarks/proof/forms.py openmpi [nonblocking|persistent]   (then: mpich)

Only these members, one launch each at the proof's process count (Open MPI 3, MPICH 2), against
the library's own call of that form: MPI_I<coll> + MPI_Wait, or MPI_<Coll>_init, two MPI_Start +
MPI_Wait and MPI_Request_free; `colltune selftest --nonblocking` (`--persistent`) proves them
together with everything else and writes proof.txt. Figures: docs/select.md.
"""

from __future__ import annotations

import sys
import time

from colltune.measure import proof as pf
from colltune.measure import selftest as st
from colltune.mpi import build
from colltune.mpi import libraries as mpi


def main() -> None:
    lib = mpi.resolve(sys.argv[1] if len(sys.argv) > 1 else None)
    form = sys.argv[2] if len(sys.argv) > 2 else "nonblocking"
    if form not in pf.STARTED_FORMS:
        sys.exit(f"form {form!r}: choose from {', '.join(pf.STARTED_FORMS)}")
    argv = st.driver_argv(build.ensure_built(lib)) + ["--sweep"]
    suffix = pf.STARTED_FORMS[form]
    members = [m for m in pf.library_members(lib, argv, forms=(form,)) if m.endswith(suffix)]
    started = time.time()
    proof = pf.prove(lib, only=members)
    print(f"{lib.short_version}: {len(members)} algorithms of the {form} forms, one launch each "
          f"at {proof.nprocs[0]} ranks, {time.time() - started:.0f} s")
    clean = [m for m in proof.members.values() if not m.failed]
    print(f"passed every class tested: {len(clean)} of {len(proof.members)}")
    for m in sorted(proof.members.values(), key=lambda m: m.member):
        refused = list(pf.compress(m.failed, proof.fmt.bands))
        if refused:
            evidence = next(iter(m.evidence.values()), "")
            print(f"  {m.member} refused {', '.join(refused)}\n    first: {evidence}")


if __name__ == "__main__":
    main()
