#!/usr/bin/env python3
"""Generate the watched wrappers: every MPI function of native/spec/collectives.toml that the
decision point does not serve (gen_wrappers.py's): the nonblocking (MPI_I*) and persistent
(*_init) forms of every row, every function of a row with `dispatch = false` (the neighborhood
collectives), each in its large-count binding (_c) too.

Outputs
  native/generated/ct_functions.h        enum CT_FN_* of every function of the table (the served
                                         ones too), the table's type
  native/generated/ct_form_wrappers.c    the function table; per watched function an MPI_<Name>
                                         that is one predictable branch on ct_watch (pass-through
                                         straight to PMPI_<Name>), else calls the library and hands
                                         (function, call site, communicator, bytes, start time,
                                         request) to ct_fn_seen (runtime/watch.c); the started
                                         calls of a row with dispatch (served_started) also a
                                         ct_serve_<name> that describes the call (ct_call) for
                                         modes.c's ct_dispatch_started / ct_dispatch_init

A watched call is never changed: the library runs it with the caller's arguments. Its bytes
follow the row's `bytes` rule, computed from the arguments after the call succeeded (-1 where the
rule is "-" or a size cannot be taken); the v/w rows' from their counts arrays (COUNTED_VW). Persistent and large-count bindings are compiled where the
library declares them (CT_HAVE_PERSISTENT, MPI_VERSION >= 4).

`--check` writes nothing and exits 1 if a committed file is stale. Stdlib only.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from gen_wrappers import FIELD, fill_call, fit_conditions, narrowed, served_large
from table import GENERATED_DIR, Collective, Function, banner, load, run

# A role's C type in the large-count binding (MPI-4: counts MPI_Count, displacements MPI_Aint).
LARGE_CTYPE = {
    "sendcount": "MPI_Count",
    "recvcount": "MPI_Count",
    "count": "MPI_Count",
    "recvcounts": "const MPI_Count *",
    "sendcounts": "const MPI_Count *",
    "sdispls": "const MPI_Aint *",
    "rdispls": "const MPI_Aint *",
}
FORM_ENUM = {"blocking": "CT_FORM_BLOCKING", "nonblocking": "CT_FORM_NONBLOCKING",
             "persistent": "CT_FORM_PERSISTENT"}


def served(fn: Function) -> bool:
    """Served by gen_wrappers.py's wrappers (the decision point): the blocking form of a row
    with dispatch, and its large-count binding where gen_wrappers serves that one too."""
    return fn.form == "blocking" and fn.coll.dispatch and (not fn.large or served_large(fn.coll))


# The dispatcher of each started form's call (modes.c): MPI_I<coll> and MPI_<Coll>_init.
DISPATCH_STARTED = {"nonblocking": "ct_dispatch_started(&call, request)",
                    "persistent": "ct_dispatch_init(&call, info, request)"}


def served_started(fn: Function) -> bool:
    """The nonblocking or persistent call of a row the decision point serves: started or
    initialized by a forced member of its form, or the learning mode's (nonblocking), where there
    is one (modes.c ct_dispatch_started / ct_dispatch_init), tested on ct_start_watch instead of
    ct_watch. Its large-count binding too where the blocking one is served and no count is an
    array: an array narrowed to int would have to live until the call completes."""
    if fn.form not in DISPATCH_STARTED or not fn.coll.dispatch:
        return False
    arrays = any(a.role in ("sendcounts", "recvcounts") for a in fn.coll.args)
    return not fn.large or (served_large(fn.coll) and not arrays)


def params(fn: Function) -> list[tuple[str, str]]:
    """(C type, name) of every parameter, in the standard's order."""
    out = []
    for a in fn.coll.args:
        ctype = LARGE_CTYPE.get(a.role, a.ctype) if fn.large else a.ctype
        out.append((ctype, a.name))
    return out + list(fn.extra)


def decl(pairs: list[tuple[str, str]]) -> str:
    return ", ".join(f"{t}{'' if t.endswith('*') else ' '}{n}" for t, n in pairs)


def guard(fn: Function) -> str | None:
    conds = []
    if fn.form == "persistent":
        conds.append("CT_HAVE_PERSISTENT")
    if fn.large:
        conds.append("MPI_VERSION >= 4")
    return " && ".join(conds) or None


# The irregular rows whose calls are counted by their counts arrays (runtime/watch.c
# ct_watch_vw_bytes: every form and binding, the blocking int binding's served call too), not by
# the row's uniform `bytes` rule, which has no size for them ("0", "-": decisions must not depend
# on per-rank counts).
COUNTED_VW = {"gatherv": "CT_VW_GATHERV", "scatterv": "CT_VW_SCATTERV",
              "alltoallv": "CT_VW_ALLTOALLV", "alltoallw": "CT_VW_ALLTOALLW",
              "neighbor_alltoallv": "CT_VW_NEIGHBOR_ALLTOALLV",
              "neighbor_alltoallw": "CT_VW_NEIGHBOR_ALLTOALLW"}
VW_ROLES = ("comm", "root", "sendcount", "recvcount", "sendcounts", "recvcounts", "sendtype",
            "recvtype", "sendtypes", "recvtypes")


def vw_bytes_code(fn: Function, arg: Callable[[str], str], fortran: bool) -> list[str]:
    """`bytes` of a v/w call: its arguments described for ct_watch_vw_bytes. Fortran passes its
    count arrays and datatype handles as they are (MPI_Fint, translated there)."""
    names = {a.role: a.name for a in fn.coll.args}
    fields = [f".kind = {COUNTED_VW[fn.coll.name]}"]
    for role in VW_ROLES:
        if role in names:
            raw = fortran and role in ("sendtypes", "recvtypes", "sendcounts", "recvcounts")
            fields.append(f".{role} = {names[role] if raw else arg(role)}")
    if fn.large:
        fields.append(".large = 1")
    if fortran:
        fields.append(".fortran = 1")
    return ["int64_t bytes = ct_watch_vw_bytes(&(const ct_vw){",
            *(f"    {f}," for f in fields),
            "});"]


def bytes_code(fn: Function, arg: Callable[[str], str] | None = None,
               in_place: Callable[[str], str] | None = None, fortran: bool = False) -> list[str]:
    """Statements that set `bytes` from the row's `bytes` rule (after a successful call), or
    from its counts arrays (COUNTED_VW). `arg(role)` is the C expression of an argument
    (default: its name), `in_place(role)` the condition that it is MPI_IN_PLACE (the Fortran
    wrappers translate both; `fortran`: their arrays hold Fortran integers and handles)."""
    coll = fn.coll
    names = {a.role: a.name for a in coll.args}
    arg = arg or names.__getitem__
    in_place = in_place or (lambda r: f"{names[r]} == MPI_IN_PLACE")
    if coll.name in COUNTED_VW:
        return vw_bytes_code(fn, arg, fortran)
    rule = (coll.counted or coll.bytes).strip()
    if rule == "-":
        return ["int64_t bytes = -1;"]
    if rule == "0":   # the barrier; the size-blind irregular forms (collectives.toml)
        return ["int64_t bytes = 0;"]
    rule, per_rank, _ = rule.partition("/")   # "... / p": the mean block
    m = re.fullmatch(r"(.*?)\s*(?:\[root with MPI_IN_PLACE:\s*(.*?)\s*\])?", rule)
    assert m is not None
    main, alt = m.group(1), m.group(2)

    def expr(text: str) -> str:
        terms = []
        for f in (x.strip() for x in text.split("*")):
            if mm := re.fullmatch(r"size\((\w+)\)", f):
                terms.append(f"ct_watch_size({arg(mm.group(1))})")
            elif mm := re.fullmatch(r"sum\((\w+)\)", f):
                helper = "ct_watch_sum_large" if fn.large else "ct_watch_sum"
                terms.append(f"{helper}({arg(mm.group(1))}, {arg('comm')})")
            elif f == "p":
                terms.append(f"ct_watch_comm_size({arg('comm')})")
            elif f in names:
                terms.append(f"(int64_t){arg(f)}")
            else:
                raise ValueError(f"{coll.name}: cannot translate bytes factor {f!r}")
        return "ct_watch_product((int64_t[]){" + ", ".join(terms) + f"}}, {len(terms)})"

    if alt is None and per_rank:
        return [f"int64_t bytes = {expr(main)};",
                f"if (bytes > 0) bytes /= ct_watch_comm_size({arg('comm')});"]
    if alt is None:
        return [f"int64_t bytes = {expr(main)};"]
    buf = (coll.in_place or "").split("@")[0]
    return [f"int64_t bytes = {in_place(buf)} ? {expr(alt)} : {expr(main)};"]


def start_code(fn: Function, names: str) -> list[str]:
    """The watched path's library call; a served row's nonblocking or persistent call goes
    through its form's dispatcher while a member of a started form is forced, and is counted or
    profiled only where ct_watch says so."""
    if not served_started(fn):
        return [f"    int rc = P{fn.mpi}({names});"]
    return [
        f"    int rc = ct_start_watch & CT_START_SERVE ? ct_serve_{fn.name}({names})",
        f"                                             : P{fn.mpi}({names});",
        "    if (!(ct_watch & CT_WATCH_SEE))",
        "        return rc;",
    ]


def serve(fn: Function) -> list[str]:
    """A served row's started call while it is served and neither counted nor profiled: the
    call's description and its form's dispatcher, without the watched path's clock, call site
    and counters (what gen_wrappers' ct_serve_<coll> is to the blocking call)."""
    pairs = params(fn)
    value = {FIELD[a.role]: a.name for a in fn.coll.args}
    fit = []
    if fn.large:
        # served where every count fits an int, as gen_wrappers' blocking _c (the test is true on
        # every rank or on none); else the library's own _c call, on every rank
        value = narrowed(fn.coll)
        rooted = any(a.role == "root" for a in fn.coll.args)
        fit = [
            "    int rank;",
            "    if (ct_large_comm(comm, &rank) != COLLTUNE_APPLICABLE",
            "        || !(" + "\n             && ".join(fit_conditions(fn.coll)) + "))",
            f"        return P{fn.mpi}({', '.join(n for _, n in pairs)});",
            *([] if rooted else ["    (void)rank;"]),
        ]
    # the stub jumps to it (served_stub): hidden, not static, where there is a stub
    head = [f"static __attribute__((noinline)) int ct_serve_{fn.name}({decl(pairs)})"]
    if stubbed(fn):
        head = ["#if CT_STUBS",
                f"CT_HIDDEN __attribute__((noinline)) int ct_serve_{fn.name}({decl(pairs)});",
                f"CT_HIDDEN __attribute__((noinline)) int ct_serve_{fn.name}({decl(pairs)})",
                "#else", *head, "#endif"]
    return [
        *head,
        "{",
        *fit,
        *fill_call(fn.coll, value, "    "),
        f"    return {DISPATCH_STARTED[fn.form]};",
        "}",
        "",
    ]


# x86-64 SysV passes the first six integer arguments in registers, the rest on the stack.
REGISTER_ARGS = 6

# The wrappers with arguments on the stack are assembly stubs where the target allows it (x86-64
# ELF, GCC or Clang, not SMPI, whose smpicc builds rank code differently): GCC 12.2 loads every
# stack argument into a register (saving callee-saved ones to hold them) before the watch test
# and stores them back for the tail call, 12-15 instructions of pass-through for the 10- and
# 11-argument functions, whatever the C shape. The stub tests the flag byte and jumps: to the
# C wrapper (renamed ct_slow_<MPI name>, hidden, same signature) while the flag is set, else to
# PMPI_<name> through the PLT; the stack arguments and the return address are the application's
# in both, so the C wrapper works as before (its own first test is then redundant, and it takes
# the call site as its return address). .cfi_startproc gives the stub the entry frame rule
# (CFA rsp+8, return address at CFA-8), which holds at each of its three instructions.
STUB_PRELUDE = [
    "#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) \\",
    "    && !defined(COLLTUNE_ABI_FAMILY_SMPI)",
    "#define CT_STUBS 1",
    "#if defined(__CET__) && (__CET__ & 1)",
    '#define CT_STUB_ENDBR "\\tendbr64\\n"',
    "#else",
    '#define CT_STUB_ENDBR ""',
    "#endif",
    "/* MPI_<name>: `test` sets ZF when the wrapper passes through. In .text, or `section`",
    " * (CT_STUB_IN: gen_p2p.py's hot calls, ct_profrun.h's CT_HOT_TEXT_SECTION). */",
    '#define CT_STUB(name, test) CT_STUB_IN(name, test, ".text")',
    "#define CT_STUB_IN(name, test, section)                                         \\",
    '    __asm__("\\t.pushsection " section "\\n\\t.globl " #name "\\n\\t.type " #name ", @function\\n" \\',
    '            "\\t.p2align 4\\n" #name ":\\n\\t.cfi_startproc\\n" CT_STUB_ENDBR             \\',
    '            "\\t" test "\\n\\tjne ct_slow_" #name "\\n\\tjmp P" #name "@PLT\\n"            \\',
    '            "\\t.cfi_endproc\\n\\t.size " #name ", .-" #name "\\n\\t.popsection\\n");',
    '_Static_assert(CT_WATCH_SEE == 1 && offsetof(ct_hot_p2p_line, watch) == 1,',
    '               "the stubs test bit 0 of ct_watch, ct_p2p_line+1");',
    "#else",
    "#define CT_STUBS 0",
    "#endif",
    "",
]

# gen_forms.py's own stub (gen_p2p.py and gen_fortran.py share STUB_PRELUDE only): a served
# row's started call (served_started) has one more way out, taken while its form is served and
# nothing counts or profiles (ct_start_watch == CT_START_SERVE: the learning mode, a forced or
# profiled member of the form): straight to ct_serve_<name> (hidden, not static, there), as
# gen_wrappers.py's SERVE_STUB_PRELUDE does for the blocking calls. Through the C slow path the
# stack arguments were copied once more: ct_slow_MPI_Iallreduce took 8 instructions per call,
# ct_slow_MPI_Ialltoallv 18 (Open MPI 5.0.11, benchmarks/learning_runtime). The pass-through keeps
# its three instructions, the serving path takes four; the C wrapper stays behind the stub for
# the counted and profiled calls (its own first tests are then redundant).
SERVED_STUB_PRELUDE = [
    "#if CT_STUBS",
    "/* MPI_<name> of a served started form: to PMPI_<name> when ct_start_watch is 0, to `serve`",
    " * when it is CT_START_SERVE alone, else to the C wrapper (counted or profiled). */",
    "#define CT_SERVED_STUB(name, serve)                                             \\",
    '    __asm__("\\t.pushsection .text\\n\\t.globl " #name "\\n\\t.type " #name ", @function\\n" \\',
    '            "\\t.p2align 4\\n" #name ":\\n\\t.cfi_startproc\\n" CT_STUB_ENDBR             \\',
    '            "\\tcmpb $0, ct_start_watch(%rip)\\n\\tjne 1f\\n\\tjmp P" #name "@PLT\\n"        \\',
    '            "1:\\tcmpb $2, ct_start_watch(%rip)\\n\\tje " #serve "\\n"                    \\',
    '            "\\tjmp ct_slow_" #name "\\n\\t.cfi_endproc\\n\\t.size " #name ", .-" #name     \\',
    '            "\\n\\t.popsection\\n");',
    '_Static_assert(CT_START_SERVE == 2 && sizeof ct_start_watch == 1,',
    '               "the served stubs compare the byte ct_start_watch with 2");',
    "#endif",
    "",
]


def stubbed(fn: Function) -> bool:
    """Its wrapper is an assembly stub where CT_STUBS: it has arguments on the stack."""
    return len(params(fn)) > REGISTER_ARGS


def entry(fn: Function, pairs: list[tuple[str, str]]) -> list[str]:
    """The C wrapper's first line: the exported function, or the stub's slow path."""
    if not stubbed(fn):
        return [f"int {fn.mpi}({decl(pairs)})"]
    # the watched forms test the C wrapper's flag (ct_watch's bit CT_WATCH_SEE, ZF set when it
    # passes through); the served started forms have their own stub
    stub = (f"CT_SERVED_STUB({fn.mpi}, ct_serve_{fn.name})" if served_started(fn)
            else f'CT_STUB({fn.mpi}, "testb $1, ct_p2p_line+1(%rip)")')
    return [
        "#if CT_STUBS",
        stub,
        f"CT_HIDDEN int ct_slow_{fn.mpi}({decl(pairs)});",
        f"CT_HIDDEN int ct_slow_{fn.mpi}({decl(pairs)})",
        "#else",
        f"int {fn.mpi}({decl(pairs)})",
        "#endif",
    ]


def wrapper(fn: Function) -> list[str]:
    """Pass-through is one test and a tail call: the watched path has the wrapper's signature and
    takes the call site as its own return address (see gen_wrappers.split). With arguments on
    the stack, an assembly stub in front of it where the target allows (STUB_PRELUDE)."""
    pairs = params(fn)
    names = ", ".join(n for _, n in pairs)
    comm = "comm" if any(a.role == "comm" for a in fn.coll.args) else "MPI_COMM_NULL"
    request = "request" if fn.form != "blocking" else "NULL"
    # counting and profiling only: the learning mode's bit (CT_WATCH_LEARN) is for Wait/Test
    flag = "ct_start_watch" if served_started(fn) else "(ct_watch & CT_WATCH_SEE)"
    body = [
        *(serve(fn) if served_started(fn) else []),
        f"static __attribute__((noinline)) int ct_watched_{fn.name}({decl(pairs)})",
        "{",
        "    const void *site = ct_watch_site(__builtin_return_address(0));",
        "    uint64_t t0 = ct_watch_clock();",
        *start_code(fn, names),
        "    if (rc != MPI_SUCCESS) {",
        f"        ct_fn_seen({fn.enum}, site, {comm}, -1, t0, NULL);",
        "        return rc;",
        "    }",
        *(f"    {s}" for s in bytes_code(fn)),
        f"    ct_fn_seen({fn.enum}, site, {comm}, bytes, t0, {request});",
        "    return rc;",
        "}",
        "",
        *entry(fn, pairs),
        "{",
        f"    if (CT_LIKELY(!{flag}))",
        f"        return P{fn.mpi}({names});",
        *([f"    if (ct_start_watch == CT_START_SERVE)",
           f"        return ct_serve_{fn.name}({names});"] if served_started(fn) else []),
        f"    return ct_watched_{fn.name}({names});",
        "}",
        "",
    ]
    g = guard(fn)
    return [f"#if {g}", *body, "#endif", ""] if g else body


def functions() -> tuple[Function, ...]:
    return load().functions()


def header() -> str:
    fns = functions()
    enum = "".join(f"    {f.enum} = {i},   /* {f.mpi} */\n" for i, f in enumerate(fns))
    return (
        banner("gen_forms.py", source="native/spec/collectives.toml")
        + "/* Every MPI function of the table's rows (forms x bindings), for the counting and\n"
        " * profiling modes (runtime/watch.c). */\n"
        "#ifndef CT_FUNCTIONS_H\n#define CT_FUNCTIONS_H\n\n"
        f"enum ct_fn_id {{\n{enum}    CT_NUM_FUNCTIONS = {len(fns)}\n}};\n\n"
        "enum ct_form { CT_FORM_BLOCKING, CT_FORM_NONBLOCKING, CT_FORM_PERSISTENT };\n\n"
        "typedef struct ct_fn_info {\n"
        "    const char *name;      /* \"iallreduce\", \"neighbor_alltoall_init_c\" */\n"
        "    const char *row;       /* its row of collectives.toml: \"allreduce\" */\n"
        "    int coll;              /* CT_COLL_* where the decision point serves the row, else -1 */\n"
        "    unsigned char form;    /* enum ct_form */\n"
        "    unsigned char large;   /* the _c binding */\n"
        "    unsigned char served;  /* its wrapper is gen_wrappers.py's (ct_dispatch) */\n"
        "} ct_fn_info;\n\n"
        "extern const ct_fn_info ct_fns[CT_NUM_FUNCTIONS];\n\n"
        "#endif /* CT_FUNCTIONS_H */\n"
    )


def info(fn: Function) -> str:
    coll = f"CT_COLL_{fn.coll.name.upper()}" if fn.coll.dispatch else "-1"
    return (f'    [{fn.enum}] = {{"{fn.name}", "{fn.coll.name}", {coll}, {FORM_ENUM[fn.form]}, '
            f"{int(fn.large)}, {int(served(fn))}}},")


def generate() -> str:
    fns = functions()
    lines = [banner("gen_forms.py", source="native/spec/collectives.toml").rstrip("\n"), ""]
    lines += [
        "/* The watched MPI functions of libcolltune.so: pass-through, or counted and profiled",
        " * around the library's own call (runtime/watch.c). */",
        "#include <mpi.h>",
        "#include <stdint.h>",
        "",
        '#include "../runtime/ct_runtime.h"',
        '#include "../runtime/ct_watch.h"',
        "",
        "const ct_fn_info ct_fns[CT_NUM_FUNCTIONS] = {",
        *(info(f) for f in fns),
        "};",
        "",
        *STUB_PRELUDE,
        *SERVED_STUB_PRELUDE,
    ]
    for fn in fns:
        if not served(fn):
            lines += wrapper(fn)
    return "\n".join(lines).rstrip("\n") + "\n"


def outputs() -> dict[Path, str]:
    return {GENERATED_DIR / "ct_functions.h": header(),
            GENERATED_DIR / "ct_form_wrappers.c": generate()}


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__, "gen_forms.py", outputs)


if __name__ == "__main__":
    sys.exit(main())
