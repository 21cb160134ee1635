#!/usr/bin/env python3
"""The proof of the algorithms of the libraries' nonblocking or persistent forms
(`lib:<coll>:<alg>#nonblocking`, `...#persistent`; docs/select.md "Nonblocking calls" and
"Persistent calls"): each one's launch, its time, and the classes refused.

    .venv/bin/python benchmarks/proof/forms.py openmpi [nonblocking|persistent] [--survey]
                                                                        (then: mpich)

Only these members, one launch each at the proof's process count (Open MPI 3, MPICH 2), against
the library's own call of that form: MPI_I<coll> + MPI_Wait, or MPI_<Coll>_init, two MPI_Start +
MPI_Wait and MPI_Request_free; `colltune selftest --nonblocking` (`--persistent`) proves them
together with everything else and writes proof.txt. Figures: docs/select.md. With `--survey`
each member gets its one launch and no more: a launch that crashes or hangs is reported with its
last line instead of being rerun class by class as the proof does (a launch per class it dies
in, resumed after it: docs/select.md "A member launch that crashes or hangs").
"""

from __future__ import annotations

import sys
import time

from colltune.measure import proof as pf
from colltune.measure import selftest as st
from colltune.mpi import build
from colltune.mpi import libraries as mpi


def survey(lib: mpi.MpiLibrary, argv: list[str], members: list[str]) -> pf.Proof:
    """One launch per member at the proof's process count; crashes and hangs as findings."""
    n = pf.default_nprocs(lib)[0]
    proven: dict[str, pf.MemberProof] = {}
    findings: list[str] = []
    fmt = pf.Format()
    for member in members:
        try:
            lines = st.run_launch_lines(lib, n, argv + ["--member", member], pf.MEMBER_TIMEOUT_S,
                                        idle=pf.MEMBER_IDLE_S)
        except st.SelftestError as exc:
            text = str(exc).strip().splitlines()
            findings.append(f"{member}: launch failed: {text[-1] if text else 'no output'}")
            continue
        pf.absorb(lines, proven, lambda name: name.split(":")[1], findings, fmt)
    return pf.Proof(lib, (n,), proven, findings, 0.0, fmt)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--survey"]
    lib = mpi.resolve(args[0] if args else None)
    form = args[1] if len(args) > 1 else "nonblocking"
    if form not in pf.STARTED_FORMS:
        sys.exit(f"form {form!r}: choose from {', '.join(pf.STARTED_FORMS)}")
    argv = st.driver_argv(build.ensure_built(lib)) + ["--sweep"]
    suffix = pf.STARTED_FORMS[form]
    members = [m for m in pf.library_members(lib, argv, forms=(form,)) if m.endswith(suffix)]
    started = time.time()
    proof = survey(lib, argv, members) if "--survey" in sys.argv else pf.prove(lib, only=members)
    print(f"{lib.short_version}: {len(members)} algorithms of the {form} forms, one launch each "
          f"at {proof.nprocs[0]} ranks, {time.time() - started:.0f} s")
    clean = [m for m in proof.members.values() if not m.failed]
    failed = sum(": launch failed: " in f for f in proof.findings)
    print(f"passed every class tested: {len(clean)} of {len(proof.members)}"
          + (f"; {failed} launches failed (below)" if failed else ""))
    for m in sorted(proof.members.values(), key=lambda m: m.member):
        refused = list(pf.compress(m.failed, proof.fmt.bands))
        if refused:
            evidence = next(iter(m.evidence.values()), "")
            print(f"  {m.member} refused {', '.join(refused)}\n    first: {evidence}")
    for finding in proof.findings:
        print(f"  {finding}")


if __name__ == "__main__":
    main()
