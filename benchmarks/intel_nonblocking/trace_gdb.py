"""gdb script (run.sh): a silent breakpoint on every PMPI_I<coll>, PMPI_<Coll>_init and on
every algorithm function of Intel MPI's libmpi (MPIR_I<coll>_intra_{sched,nbc}_<name>, from its
symbol table), and the names hit, in order, written to $TRACE_OUT when the program ends."""
import os
import re
import subprocess

import gdb

COLLS = ("allreduce|bcast|reduce|gather|allgather|alltoall|alltoallv|alltoallw|gatherv|scatterv|"
         "barrier|scatter|allgatherv|exscan|scan|reduce_scatter|reduce_scatter_block")
WANTED = re.compile(rf"^(PMPI_I({COLLS})|PMPI_[A-Z][a-z_]+_init|MPIR_I[a-z_]+_(intra|allcomm)_(sched|nbc)_[a-z_]+)$")
symbols = subprocess.run(["nm", os.environ["IMPI_LIB"]], capture_output=True, text=True, check=True).stdout
functions = sorted({f[2] for f in (line.split() for line in symbols.splitlines())
                    if len(f) == 3 and f[1] in "tT" and WANTED.match(f[2])
                    and not f[2].endswith(("_impl", "_auto")) and "neighbor" not in f[2]})
hits = []


class Seen(gdb.Breakpoint):
    def stop(self) -> bool:
        hits.append(self.location)
        return False


gdb.execute("set pagination off")
gdb.execute("start")          # libmpi is loaded now
for name in functions:
    Seen(name, internal=True)
gdb.execute("continue")
with open(os.environ["TRACE_OUT"], "w") as out:
    out.write("\n".join(hits) + "\n")
