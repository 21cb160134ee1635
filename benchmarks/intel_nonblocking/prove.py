"""The proof of every id of Intel MPI's nonblocking algorithms in colltune's one table
(colltune.mpi.algorithms.NONBLOCKING_ALGORITHMS["intel"]), one member at a time: each in a launch
with I_MPI_ADJUST_I<COLL> set, against the library's results of a launch without
(measure/proof.py member_lines). One line per member: classes tested, failed, their names.
Usage: python benchmarks/intel_nonblocking/prove.py OUT.tsv [NPROCS]   (Intel MPI installed)"""
import sys
import time

from colltune.measure import proof
from colltune.mpi import libraries as mpi
from colltune.mpi.algorithms import NONBLOCKING_ALGORITHMS


def main(out_path: str, nprocs: int) -> None:
    lib = mpi.resolve("intel")
    members = [f"lib:{c}:{a}#nonblocking" for c, algs in NONBLOCKING_ALGORITHMS["intel"].items() for a in algs]
    with open(out_path, "a") as out:
        for member in members:
            started = time.time()
            p = proof.prove(lib, (nprocs,), only=[member])
            m = p.members[member]
            failed = sorted(proof.compress(m.failed, p.fmt.bands))
            out.write(f"{member}\ttested {len(m.tested)}\tfailed {len(m.failed)}\t{','.join(failed)}"
                      f"\t{time.time() - started:.0f}s\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
