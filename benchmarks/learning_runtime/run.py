#!/usr/bin/env python3
"""Cost of the learning mode of libcolltune (docs/select.md): instructions per call when a call
is not explored and when it is (decision + draw + trace record), memory of selection tables,
bytes per trace record.

    .venv/bin/python benchmarks/learning_runtime/run.py [--mpi openmpi]

Instructions: callgrind on rank 0 of a 2-rank loop of 8-byte MPI_Allreduce
(benchmarks/passthrough/allreduce_loop.c, 20000 calls), collecting only inside MPI_Allreduce
(--toggle-collect: MPI_Init's one-time setup is not spread over the calls); exclusive costs of the
functions in libcolltune.so plus inclusive costs of the MPI calls the decision path makes (PMPI_Comm_get_attr,
PMPI_Wtime, PMPI_Type_size, ...). The member drawn is always `default` (the library), so the
variant's own work is excluded, as the issue asks; the library's Allreduce is not counted.
Table memory: ct_select_bytes (every byte the table allocates, malloc's own headers aside) of
parsed tables for all 10 collectives over the full default cube (24 x 4 x 8 cells), every member
weighted (explore) and best-only (exploit), measured by native/fuzz/select_unit built with gcc. Trace bytes: file size of a real run's trace per record.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from colltune import catalog
from colltune.learn import table as sel
from colltune.mpi import build, launch, runenv
from colltune.mpi import libraries as mpi

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LOOP = ROOT / "benchmarks" / "passthrough" / "allreduce_loop.c"
CALLS = 20_000
# calls outside libcolltune that the decision path may make (clock_gettime: the trace's clock)
QUERY = re.compile(r"^(P?MPI_(Comm_size|Comm_rank|Comm_test_inter|Comm_get_attr|Op_commutative|Wtime|Type_\w+)"
                   r"|(__)?clock_gettime(64)?(@@\S+)?)$")
# Functions that run only in MPI_Init / MPI_Finalize (discovery of the library's own algorithms,
# docs/select.md "Library members"): a one-time cost, reported apart, not spread over the calls.
ONCE = re.compile(r"^(ct_libalg_setup|ct_libalg_finish|ct_mpit_\w+|ct_select_add_library|ct_select_clear_library)$")
ANN = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(\S+)(?:\s+\[(.*)\])?\s*$")


def annotate(out: Path, inclusive: bool) -> list[tuple[int, str, str]]:
    """(instructions, function, object) rows. callgrind_annotate shows a function's lines inlined
    from a header (ct_core.h, ct_runtime.h, ...) as a row "header:function" without the object:
    exclusive, such a row takes the object of the function's own row (apps.annotate does the
    same); inclusive, it is already inside its function's cost."""
    text = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no",
                           f"--inclusive={'yes' if inclusive else 'no'}", str(out)],
                          capture_output=True, text=True, check=True).stdout
    rows = [(int(m.group(1).replace(",", "")), m.group(2).split(":")[-1], m.group(3) or "")
            for line in text.splitlines() if (m := ANN.match(line))]
    object_of = {fn: obj for _, fn, obj in rows if obj}
    return [(ir, fn, obj or object_of.get(fn, "")) for ir, fn, obj in rows if obj or not inclusive]


def callgrind(lib, art, exe: Path, extra: dict[str, str], args: tuple[str, ...] = (str(CALLS), "1"),
              function: str | tuple[str, ...] = "MPI_Allreduce",
              query: re.Pattern[str] | None = None, calls: int = CALLS) -> dict[str, float]:
    """Instructions per call inside `function` (or inside any of several: a nonblocking call and
    its MPI_Wait; `calls` calls on rank 0 of 2, as `args` says) by where they run; `query`: the
    calls outside libcolltune counted inclusively (default QUERY)."""
    functions = (function,) if isinstance(function, str) else function
    query = query or QUERY
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        env = runenv.rank_environment(lib, art, extra=extra)
        rank0 = ["valgrind", "--tool=callgrind", *(f"--toggle-collect={f}" for f in functions),
                 f"--callgrind-out-file={out}", str(exe), *args]
        argv = [str(lib.mpiexec), *launch.placement_flags(lib, 2),
                "-n", "1", *launch.rank_env_flags(lib, env), *rank0, ":",
                "-n", "1", *launch.rank_env_flags(lib, env), str(exe), *args]
        subprocess.run(argv, env=launch.launcher_env(lib), capture_output=True, text=True,
                       timeout=900, check=True, stdin=subprocess.DEVNULL)
        costs: dict[str, float] = {}
        for ir, where, obj in annotate(out, inclusive=False):
            if ONCE.match(where) and "libcolltune" in obj:
                costs["(once) " + where] = costs.get("(once) " + where, 0) + ir / calls
            elif ir / calls >= 0.5 and "libcolltune" in obj:
                costs[where] = costs.get(where, 0) + ir / calls
        for ir, where, obj in annotate(out, inclusive=True):
            if ir / calls >= 0.5 and "libcolltune" not in obj and query.match(where):
                costs[f"(inclusive) {where}"] = ir / calls
    return costs


def tls_calls(so: Path) -> int:
    """Calls to ld.so's __tls_get_addr in libcolltune's code: thread-locals outside the
    initial-exec model would cost ~20-40 instructions each in ld.so, outside the counts above."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], capture_output=True, text=True,
                          check=True).stdout
    return sum(1 for line in text.splitlines() if "call" in line and "<__tls_get_addr@plt>" in line)


def full_table(mode: str) -> str:
    cat = catalog.load()
    colls = {}
    for c in cat.collective_names():
        members = (catalog.DEFAULT, *(v.name for v in cat.variants_of(c)))
        weights = tuple(1.0 + i for i in range(len(members)))
        cells = {(s, n, p): sel.Cell(mode, weights) for s in range(24) for n in range(4) for p in range(8)}
        colls[c] = sel.CollectiveTable(c, members, cells)
    return sel.format_table(sel.SelectionTable(collectives=colls))


def select_unit(tmp: Path) -> Path:
    fuzz = ROOT / "native" / "fuzz"
    subprocess.run([sys.executable, str(fuzz / "gen_names.py"), str(tmp)], check=True)
    exe = tmp / "select_unit"
    subprocess.run(["gcc", "-std=c11", "-O2", f"-I{ROOT / 'native' / 'include'}", f"-I{tmp}", f"-I{ROOT / 'native' / 'generated'}", str(fuzz / "select_unit.c"),
                    str(ROOT / "native" / "core" / "select.c"), str(ROOT / "native" / "core" / "select_draw.c"), str(ROOT / "native" / "core" / "textformat.c"), str(tmp / "ct_catalog.c"), "-o", str(exe)], check=True)
    return exe


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", default=None)
    args = ap.parse_args()
    lib = mpi.resolve(args.mpi)
    art = build.ensure_built(lib)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        unit = select_unit(tmp)
        print("selection table memory (all 10 collectives, 24 x 4 x 8 cells each):")
        for mode in ("explore", "exploit"):
            path = tmp / f"{mode}.select"
            path.write_text(full_table(mode))
            nbytes = int(subprocess.run([str(unit), "bytes", str(path)], capture_output=True, text=True,
                                        check=True).stdout)
            print(f"  every cell {mode}: {nbytes} bytes = {nbytes / 1024:.1f} KiB in memory "
                  f"(file {path.stat().st_size / 1024:.0f} KiB)")
        exe = build.compile_program(lib, [LOOP], tmp / "allreduce_loop")
        # 8 bytes -> size bin 4; one node, 2 ranks -> nodes bin 0, ppn bin 1
        explore = tmp / "explore1.select"
        explore.write_text("colltune-select 1\nbudget 1000000000\ncellbudget 1000000000\n"
                           "collective allreduce\n  members default\n"
                           "  cell 4 0 1 explore 1\nend\n")
        exploit = tmp / "exploit1.select"
        exploit.write_text("colltune-select 1\ncollective allreduce\n  members default\n"
                           "  cell 4 0 1 exploit 1\nend\n")
        trace = tmp / "trace"
        trace.mkdir()
        cases = {
            "not explored (exploit cell)": {"COLLTUNE_SELECT": str(exploit)},
            "not explored (exploit cell), rank traced": {"COLLTUNE_SELECT": str(exploit),
                                                         "COLLTUNE_TRACE_DIR": str(trace),
                                                         "COLLTUNE_TRACE_RECORDS": str(2 * CALLS + 100)},
            "explored (draw), rank traced": {"COLLTUNE_SELECT": str(explore), "COLLTUNE_TRACE_DIR": str(trace),
                                             "COLLTUNE_TRACE_RECORDS": str(2 * CALLS + 100)},
            # A spent budget makes explore and unlisted cells pick as an exploit cell would:
            # these must cost what the exploit cell costs (issue 33).
            "explore cell, budget spent": {"COLLTUNE_SELECT": str(explore), "COLLTUNE_SELECT_BUDGET": "0"},
            "uniform table (-), budget spent": {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_BUDGET": "0"},
            "uniform table (-), cell budget spent": {"COLLTUNE_SELECT": "-", "COLLTUNE_SELECT_CELL_BUDGET": "0"},
        }
        if shutil.which("valgrind") is None:
            raise SystemExit("valgrind not found (apt-get install valgrind)")
        print(f"\ncallgrind: instructions per 8-byte MPI_Allreduce call, {lib.name}, rank 0, member = default "
              f"(libcolltune's calls to __tls_get_addr: {tls_calls(art.libcolltune)})")
        for label, extra in cases.items():
            costs = callgrind(lib, art, exe, extra)
            once = {k: v for k, v in costs.items() if k.startswith("(once)")}
            per_call = {k: v for k, v in costs.items() if k not in once}
            print(f"  {label}: {sum(per_call.values()):.1f} instructions "
                  f"(+ {sum(once.values()) * CALLS:.0f} once at MPI_Init/MPI_Finalize)")
            for func, ir in sorted(per_call.items(), key=lambda kv: -kv[1]):
                print(f"    {ir:8.2f}  {func}")
        f = trace / "rank-1.cttrace"
        from colltune.learn import traces

        t1 = traces.read_trace(f)
        n = len(t1.records)
        print(f"\ntrace: {f.stat().st_size} bytes for {n} records: {traces.RECORD_BYTES} bytes per record + "
              f"{f.stat().st_size - traces.RECORD_BYTES * n} bytes of header, members text and "
              "communicator table per rank file")


if __name__ == "__main__":
    main()
