#!/usr/bin/env python3
"""Generate the Fortran (mpif.h / `use mpi`) wrappers of libcolltune from collectives.toml.

Output: native/generated/ct_fortran_wrappers.c. Open MPI's Fortran bindings call PMPI_* directly,
so a Fortran application's collectives never reach the C wrappers (ct_wrappers.c). For every
collective of the table this file defines the Fortran symbols in the manglings compilers use
(mpi_x_, mpi_x__, mpi_x, MPI_X): each converts the handles (MPI_*_f2c) and Fortran's MPI_IN_PLACE
to C and calls the C wrapper MPI_<Coll> of the same library, so the Fortran call takes exactly
the C call's path (counting, force, profile). While the C wrapper would pass the call straight
through (its flag is 0), the entry goes to the library's own binding instead, in six
instructions (Short, F_STUB): translating first would pay the handles' translation twice.

When in doubt the call goes to the library's own Fortran symbol unchanged (dlsym RTLD_NEXT):
  - the library's Fortran sentinels are unknown (only Open MPI's `mpi_fortran_in_place_` /
    `mpi_fortran_bottom_` are recognised), or a buffer is MPI_BOTTOM;
  - a Fortran INTEGER is not a C int (MPI_Fint differs, e.g. -fdefault-integer-8 builds).
`use mpi_f08`'s mpi_x_f08_ symbols get the same code where its buffers are plain addresses (their
optional ierror may be NULL); descriptor bindings (mpi_x_f08ts_) are not wrapped, and
runtime/fortran_f08.c says so (docs/interposer.md, "Fortran").

The point-to-point calls of native/spec/p2p.toml are wrapped too, so that a Fortran
application's messages reach the profiling mode like a C application's:
  - a point-to-point call goes to the library's own Fortran symbol with the same arguments (no
    translation of statuses, requests or Fortran's 1-based indices to get wrong); profiling
    only adds the clock around it and records (call, the application's call site, bytes), where
    the library is Open MPI (its bindings call PMPI_*; another library's may reach the C
    wrappers, which then record the call).

`--check` writes nothing and exits 1 if the committed file is stale. Stdlib only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import gen_forms
import gen_p2p
import gen_wrappers
from table import GENERATED_DIR, Collective, Function, banner, load, run

BUFFERS = {"sendbuf", "recvbuf", "buffer"}
# INTEGER arrays a C int array can alias (ct_f_translatable: MPI_Fint is int).
INT_ARRAYS = {"recvcounts", "sendcounts", "sdispls", "rdispls"}
# Arrays of handles would need converting one by one (MPI_Type_f2c): Alltoallw's Fortran call
# goes to the library's own symbol, watched (counted and profiled) but not served.
HANDLE_ARRAYS = {"sendtypes", "recvtypes"}


def untranslatable(coll: Collective) -> bool:
    """Arrays of handles (Alltoallw's datatypes): the C wrapper is not called from Fortran."""
    return any(a.role in HANDLE_ARRAYS for a in coll.args)


def fortran_params(coll: Collective) -> str:
    out = []
    for a in coll.args:
        if a.role in BUFFERS:
            out.append(f"void *{a.name}")
        else:  # counts, datatypes, ops, roots, comms: Fortran passes INTEGERs by reference
            out.append(f"MPI_Fint *{a.name}")
    return ", ".join(out + ["MPI_Fint *ierr"])


def c_args(coll: Collective) -> str:
    """The C wrapper's arguments. Only the buffer the table allows MPI_IN_PLACE for is compared
    with Fortran's sentinel (the standard allows it nowhere else)."""
    in_place_role = (coll.in_place or "").split("@")[0]
    out = []
    for a in coll.args:
        if a.role in BUFFERS:
            out.append(f"ct_f_in_place({a.name})" if a.role == in_place_role else a.name)
        elif a.role in ("sendtype", "recvtype", "datatype"):
            out.append(f"PMPI_Type_f2c(*{a.name})")
        elif a.role == "op":
            out.append(f"PMPI_Op_f2c(*{a.name})")
        elif a.role == "comm":
            out.append(f"PMPI_Comm_f2c(*{a.name})")
        elif a.role in INT_ARRAYS:
            out.append(f"(const int *){a.name}")
        else:
            out.append(f"(int)*{a.name}")
    return ", ".join(out)


def pass_flag(coll: Collective) -> str:
    """What the C wrapper of the row's blocking function tests before it passes the call straight
    to PMPI (gen_wrappers.py for a served row, gen_forms.py for a watched one): 0 there means the
    Fortran call can go to the library's own binding, with the same results and nothing to see."""
    fn = Function(coll, "blocking", False)
    return f"ct_active[{gen_wrappers.enum(coll)}]" if gen_forms.served(fn) else WATCH_SEE.flag


@dataclass(frozen=True)
class Flag:
    flag: str   # C
    test: str   # x86-64, ZF set when the flag is 0


WATCH_SEE = Flag("(ct_watch & CT_WATCH_SEE)", "testb $1, ct_p2p_line+1(%rip)")   # (ct_hot.h)


def pass_test(coll: Collective) -> str:
    """pass_flag's test in assembly: ct_active's byte of the row (ct_coll_line's, ct_hot.h; its
    index checked at compile
    time by active_index_checks)."""
    if pass_flag(coll) == WATCH_SEE.flag:
        return WATCH_SEE.test
    return f"cmpb $0, ct_coll_line+{served_rows().index(coll.name)}(%rip)"


def served_rows() -> list[str]:
    return [c.name for c in load().collectives]


def active_index_checks() -> list[str]:
    return [f'_Static_assert({gen_wrappers.enum(c)} == {i}, "ct_coll_line+{i} in the stubs (gen_fortran.py)");'
            for i, c in enumerate(load().collectives)]


def wrapper(coll: Collective) -> list[str]:
    names = [a.name for a in coll.args]
    bufs = [a.name for a in coll.args if a.role in BUFFERS]
    fargs = ", ".join(names + ["ierr"])
    bottom = "".join(f" || ct_f_is_bottom({b})" for b in bufs)
    fn = f"ct_f_{coll.name}"
    flag = pass_flag(coll)
    lines = [
        f"typedef void {fn}_fn({fortran_params(coll)});",
        "",
        *next_cache(fn),
        f"static void {fn}({fortran_params(coll)}, const char *symbol, const void *caller)",
        "{",
        f"    int translate = ct_f_translatable(){bottom.replace(' || ', ' && !')};",
        f"    if (!{flag} || !translate) {{",
        f"        {fn}_fn *next = {fn}_next;",
        "        if (next == NULL)",
        f"            next = {fn}_next = ({fn}_fn *)ct_f_next(symbol);",
        "        if (next != NULL) {",
        f"            next({fargs});",
        "            return;",
        "        }",
        "        if (!translate) {",
        "            *ierr = MPI_ERR_INTERN;",
        "            return;",
        "        }",
        "    }",
        "    ct_profrun_caller = caller;",
        f"    *ierr = (MPI_Fint){coll.mpi}({c_args(coll)});",
        "    ct_profrun_caller = NULL;",
        "}",
        "",
    ]
    return lines + entries(coll.name, fortran_params(coll),
                           f'{fn}({fargs}, "{{sym}}", __builtin_return_address(0));',
                           Short(fn, flag, fargs, pass_test(coll)))


PRELUDE = """\
/* Fortran bindings of the table's collectives: translate, then the C wrapper (ct_wrappers.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../runtime/ct_profrun.h"
#include "../runtime/ct_runtime.h"
#include "../runtime/ct_watch.h"

/* A profiled call's site is the application's line that called the Fortran symbol (its return
 * address, passed down as `caller`), not this file's call of the C wrapper. */

/* Open MPI's Fortran MPI_IN_PLACE and MPI_BOTTOM (common blocks exported by libmpi); weak, so
 * that under another library they are NULL and every call passes through unchanged. */
extern char mpi_fortran_in_place_ __attribute__((weak));
extern char mpi_fortran_bottom_ __attribute__((weak));

/* Can this library's Fortran arguments be translated exactly? */
static int ct_f_translatable(void)
{
    return &mpi_fortran_in_place_ != NULL && &mpi_fortran_bottom_ != NULL &&
           sizeof(MPI_Fint) == sizeof(int);
}

/* MPI_Init, MPI_Init_thread and MPI_Finalize of `use mpi_f08` (`mpi_x_f08_`) take the C path
 * under every library: an MPICH-family library's own are exactly the C calls with argc and argv
 * NULL and the optional ierror written (objdump of MPICH 4.0.2's libmpichfort and Intel MPI
 * 2021.18's libmpifort: `PMPI_Init(NULL, NULL)`), made through PMPI_*, so handing them on would
 * leave colltune's runtime unstarted in every `use mpi_f08` program there. */
static int ct_f_lifecycle_in_c(const char *symbol)
{
    size_t n = strlen(symbol);
    return ct_f_translatable() || (n > 5 && strcmp(symbol + n - 5, "_f08_") == 0);
}

static int ct_f_is_bottom(const void *buf)
{
    return buf == (const void *)&mpi_fortran_bottom_;
}

static void *ct_f_in_place(void *buf)
{
    return buf == (void *)&mpi_fortran_in_place_ ? MPI_IN_PLACE : buf;
}

/* The library's own Fortran symbol of that name (the next definition after libcolltune). */
static void *ct_f_next(const char *symbol)
{
    return dlsym(RTLD_NEXT, symbol);
}
"""


# MPI_Init/_thread/_Finalize: Open MPI's Fortran versions call PMPI_* too, so colltune's runtime
# (native/runtime/init.c) would never start. Open MPI's do nothing Fortran-specific (argc 0,
# argv NULL), so where the arguments translate they become the C calls; elsewhere (MPICH's
# Fortran init sets up its sentinels) the library's own symbol runs unchanged, except `use
# mpi_f08`'s, which are the C calls there too (ct_f_lifecycle_in_c).
LIFECYCLE = [
    ("init", "MPI_Fint *ierr", "ierr", "MPI_Init(NULL, NULL)"),
    ("init_thread", "MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr",
     "required, provided, ierr", None),
    ("finalize", "MPI_Fint *ierr", "ierr", "MPI_Finalize()"),
]


# A Fortran entry's stub: the flag's test, then the library's binding through its cached
# address when that is known, else the entry's C body (ct_slow_<symbol>).
F_STUB = [
    "#if CT_STUBS",
    "#define CT_F_STUB(name, test, next)                                             \\",
    '    __asm__("\\t.pushsection .text\\n\\t.globl " #name "\\n\\t.type " #name ", @function\\n" \\',
    '            "\\t.p2align 4\\n" #name ":\\n\\t.cfi_startproc\\n" CT_STUB_ENDBR             \\',
    '            "\\t" test "\\n\\tjne ct_slow_" #name "\\n\\tmovq " #next "(%rip), %rax\\n"      \\',
    '            "\\ttestq %rax, %rax\\n\\tje ct_slow_" #name "\\n\\tjmp *%rax\\n"             \\',
    '            "\\t.cfi_endproc\\n\\t.size " #name ", .-" #name "\\n\\t.popsection\\n");',
    "#endif",
    "",
]


def lifecycle() -> list[str]:
    lines: list[str] = []
    for name, params, args, call in LIFECYCLE:
        if call is None:  # init_thread: the provided level comes back through a C int
            body = ["    int provided_c = 0;",
                    "    *ierr = (MPI_Fint)MPI_Init_thread(NULL, NULL, (int)*required, &provided_c);",
                    "    *provided = (MPI_Fint)provided_c;"]
        else:
            body = [f"    *ierr = (MPI_Fint){call};"]
        lines += [
            f"typedef void ct_f_{name}_fn({params});",
            "",
            f"static void ct_f_{name}({params}, const char *symbol)",
            "{",
            "    if (!ct_f_lifecycle_in_c(symbol)) {",
            f"        ct_f_{name}_fn *next = (ct_f_{name}_fn *)ct_f_next(symbol);",
            f"        if (next != NULL) next({args});",
            "        else *ierr = MPI_ERR_INTERN;",
            "        return;",
            "    }",
            *body,
            "}",
            "",
        ]
        lines += entries(name, params, f'ct_f_{name}({args}, "{{sym}}");')
    return lines


def manglings(name: str) -> tuple[str, ...]:
    low = f"mpi_{name.lower()}"
    return (f"{low}_", f"{low}__", low, low.upper(), f"{low}_f08_")


def next_cache(fn: str) -> list[str]:
    """The library's own Fortran binding of the function: looked up once by name (dlsym
    RTLD_NEXT, any of its manglings: they share one ABI) and kept for the entries' short path."""
    return [f"static {fn}_fn *_Atomic {fn}_next __attribute__((used));   /* named in its stubs */",
            f"static {fn}_fn *_Atomic {fn}_next_f08 __attribute__((used));   /* `use mpi_f08`'s own binding */", ""]


def next_lookup(fn: str) -> list[str]:
    """The opening of a wrapper that calls the library's own Fortran symbol: `next`, looked up
    once per wrapper function (MPI_ERR_INTERN where the library has none)."""
    return [
        f"    {fn}_fn *next = {fn}_next;",
        "    if (next == NULL) {",
        f"        next = ({fn}_fn *)ct_f_next(symbol);",
        "        if (next == NULL) {",
        "            *ierr = MPI_ERR_INTERN;",
        "            return;",
        "        }",
        f"        {fn}_next = next;",
        "    }",
    ]


@dataclass(frozen=True)
class Short:
    """An entry's short path: while `flag` is 0 (the C wrapper would pass the call straight to
    the library too) and the library's binding `fn`_next is known, the entry tail-calls that
    binding with the application's own arguments: pass-through costs a few instructions, not a
    translation and the C wrapper's call. `test` is the flag's test in x86-64 assembly (ZF set
    when it is 0), for the entries with arguments on the stack (gen_forms.STUB_PRELUDE: GCC
    reloads and stores back a stack argument around a C tail call)."""

    fn: str
    flag: str
    args: str
    test: str


def short_stub(sym: str, short: Short, params: str, cache: str) -> list[str]:
    """The entry as an assembly stub in front of its C body, where CT_STUBS."""
    return ["#if CT_STUBS",
            f'CT_F_STUB({sym}, "{short.test}", {cache})',
            f"CT_HIDDEN void ct_slow_{sym}({params});",
            f"CT_HIDDEN void ct_slow_{sym}({params})",
            "#else",
            f"void {sym}({params})",
            "#endif"]


def entries(name: str, params: str, call: str, short: Short | None = None) -> list[str]:
    """The Fortran symbols of `name` (manglings), each calling `call` (its `{sym}` replaced by
    the symbol), after the short path where there is one. `use mpi_f08`'s `mpi_x_f08_` has the
    same arguments where its buffers are plain addresses (a library whose mpi_f08 passes
    descriptors names those `mpi_x_f08ts_`: not wrapped, runtime/fortran_f08.c says so), but its
    ierror is OPTIONAL: NULL when omitted (f08_entry)."""
    lines = []
    stack_args = params.count(",") + 1 > gen_forms.REGISTER_ARGS
    for sym in manglings(name):
        if sym.endswith("_f08_"):
            lines += f08_entry(sym, params, call, short)
            continue
        fast = []
        if short is not None:
            fast = [f"    {short.fn}_fn *next = {short.fn}_next;",
                    f"    if (CT_LIKELY(!{short.flag}) && CT_LIKELY(next != NULL)) {{",
                    f"        next({short.args});",
                    "        return;",
                    "    }"]
        head = (short_stub(sym, short, params, f"{short.fn}_next") if short is not None and stack_args
                else [f"void {sym}({params})"])
        lines += [f"void {sym}({params});", *head, "{", *fast, "    " + call.replace("{sym}", sym), "}", ""]
    return lines


def f08_entry(sym: str, params: str, call: str, short: Short | None) -> list[str]:
    """`mpi_x_f08_`: its short path goes to the library's own `mpi_x_f08_` (its own cache: the
    other manglings' bindings need an ierror), with the application's arguments as they are. The
    rest (the first lookup; an ierror to write where the application gave none) is a function
    of its own, so that the entry stays a test and a tail call."""
    caller = "__builtin_return_address(0)"
    rest = f"ct_{sym}rest"
    names = ", ".join(p.rsplit("*", 1)[-1].strip() for p in params.split(","))
    stack_args = params.count(",") + 1 > gen_forms.REGISTER_ARGS
    lines = [f"static __attribute__((noinline)) void {rest}({params}, const void *caller)", "{",
             "    (void)caller;"]
    if short is not None:
        lines += [f"    if (!{short.flag} && {short.fn}_next_f08 == NULL) {{",
                  f'        {short.fn}_fn *next = ({short.fn}_fn *)ct_f_next("{sym}");',
                  "        if (next != NULL) {",
                  f"            {short.fn}_next_f08 = next;",
                  f"            next({short.args});",
                  "            return;",
                  "        }",
                  "    }"]
    lines += ["    MPI_Fint ierr_here = MPI_SUCCESS;", "    if (ierr == NULL)", "        ierr = &ierr_here;",
              "    " + call.replace("{sym}", sym).replace(caller, "caller"), "}", "",
              f"void {sym}({params});",
              *(short_stub(sym, short, params, f"{short.fn}_next_f08") if short is not None and stack_args
                else [f"void {sym}({params})"]),
              "{"]
    if short is not None:
        lines += [f"    {short.fn}_fn *next = {short.fn}_next_f08;",
                  f"    if (CT_LIKELY(!{short.flag}) && CT_LIKELY(next != NULL)) {{",
                  f"        next({short.args});",
                  "        return;",
                  "    }"]
    return lines + [f"    {rest}({names}, {caller});", "}", ""]


# MPI_Start, MPI_Startall, MPI_Request_free: the library's Fortran binding runs; a followed
# persistent collective request's start (or its end) is recorded as requests.c does in C (a
# request the learning mode made in C and started here gets no reward for that operation).
# (name, parameters, arguments, before the call, after a successful call)
REQUEST_CALLS = [
    ("start", "MPI_Fint *request, MPI_Fint *ierr", "request, ierr",
     ["uint64_t t0 = ct_watch_clock();"], ["ct_req_started(PMPI_Request_f2c(*request), t0, 0, 0);"]),
    ("startall", "MPI_Fint *count, MPI_Fint *array_of_requests, MPI_Fint *ierr",
     "count, array_of_requests, ierr", ["uint64_t t0 = ct_watch_clock();"],
     ["for (int i = 0; i < (int)*count; i++)",
      "    ct_req_started(PMPI_Request_f2c(array_of_requests[i]), t0, 0, 0);"]),
    ("request_free", "MPI_Fint *request, MPI_Fint *ierr", "request, ierr",
     ["MPI_Request before = PMPI_Request_f2c(*request);"], ["ct_req_freed(before);"]),
]


def request_calls() -> list[str]:
    lines: list[str] = []
    for name, params, args, before, after in REQUEST_CALLS:
        lines += [
            f"typedef void ct_f_{name}_fn({params});",
            "",
            *next_cache(f"ct_f_{name}"),
            f"static void ct_f_{name}({params}, const char *symbol)",
            "{",
            *next_lookup(f"ct_f_{name}"),
            "    if (CT_LIKELY(!ct_watch) || !ct_f_translatable()) {",
            f"        next({args});",
            "        return;",
            "    }",
            *(f"    {x}" for x in before),
            f"    next({args});",
            "    if (*ierr == MPI_SUCCESS) {",
            *(f"        {x}" for x in after),
            "    }",
            "}",
            "",
        ]
        lines += entries(name, params, f'ct_f_{name}({args}, "{{sym}}");', Short(f"ct_f_{name}", "ct_watch", args,
                                                                      "cmpb $0, ct_p2p_line+1(%rip)"))
    return lines


def p2p_params(c: gen_p2p.Call) -> str:
    """Fortran passes everything by reference: buffers as they are, every other argument
    (counts, handles, status arrays, request arrays, indices) as INTEGERs."""
    out = [f"void *{n}" if "buf" in n else f"MPI_Fint *{n}" for n in c.arg_names]
    return ", ".join(out + ["MPI_Fint *ierr"])


# The Wait/Test family (p2p.toml `completes`): (number of requests, the request argument, which
# completed: all of them, the one at an index, or the listed ones). Fortran's indices are 1-based.
OK = "*ierr == MPI_SUCCESS"
ANY = "(int)*indx != MPI_UNDEFINED ? (int)*indx - 1 : -1"
COMPLETES = {
    "wait": ("1", "request", OK, "-1", False),
    "waitall": ("(int)*count", "array_of_requests", OK, "-1", False),
    "waitany": ("(int)*count", "array_of_requests", "0", f"{OK} && {ANY}", False),
    "waitsome": ("(int)*incount", "array_of_requests", "0", "-1", True),
    "test": ("1", "request", f"{OK} && *flag", "-1", False),
    "testall": ("(int)*count", "array_of_requests", f"{OK} && *flag", "-1", False),
    "testany": ("(int)*count", "array_of_requests", "0", f"{OK} && *flag && {ANY}", False),
    "testsome": ("(int)*incount", "array_of_requests", "0", "-1", True),
}


def completion(c: gen_p2p.Call, args: str) -> list[str]:
    """The call with its collective requests followed (runtime/requests.c): translated with
    MPI_Request_f2c before it runs (a completed one's Fortran handle is gone after), then the C
    wrappers' path around it (ct_watch_enter/ct_watch_leave: a polling loop's memo, the own time
    in the profiling budget, the point-to-point part of its time)."""
    count, reqs, done_all, done_at, some = COMPLETES[c.completes]
    lines = [
        "    MPI_Request requests_c[CT_REQ_BATCH];",
        f"    int n = {count};",
        "    if (n < 0 || n > CT_REQ_BATCH)",
        "        n = 0;   /* not followed */",
        "    for (int i = 0; i < n; i++)",
        f"        requests_c[i] = PMPI_Request_f2c({reqs}[i]);",
        "    ct_watchcall c;",
        f"    ct_watch_enter(&c, {c.enum}, caller, __builtin_frame_address(0), n, requests_c);",
        f"    next({args});",
    ]
    if some:
        lines += [
            "    int done[CT_REQ_BATCH], n_done = 0;",
            f"    if ({OK} && (int)*outcount != MPI_UNDEFINED)",
            "        for (int k = 0; k < (int)*outcount && k < CT_REQ_BATCH; k++)",
            "            done[n_done++] = (int)array_of_indices[k] - 1;",
            "    ct_watch_leave(&c, n, requests_c, n_done > 0, 0, -1, done, n_done);",
        ]
    else:
        lines += [f"    int all = {done_all}, at = {done_at};",
                  "    ct_watch_leave(&c, n, requests_c, all || at >= 0, all, at, NULL, 0);"]
    return lines


def p2p_wrapper(c: gen_p2p.Call) -> list[str]:
    params = p2p_params(c)
    args = ", ".join(c.arg_names + ["ierr"])
    name = c.name.lower()
    size = (f"*ierr == MPI_SUCCESS ? ct_profrun_bytes((int)*{c.count}, PMPI_Type_f2c(*{c.type})) : 0"
            if c.count else "0")
    # the Wait/Test family runs its slow path while collective requests may be followed
    switch = "ct_watch" if c.completes else "ct_p2p_on"
    lines = [
        f"typedef void ct_f_{name}_fn({params});",
        "",
        *next_cache(f"ct_f_{name}"),
        f"static void ct_f_{name}({params}, const char *symbol, const void *caller)",
        "{",
        *next_lookup(f"ct_f_{name}"),
        "    /* where the library's Fortran calls are not Open MPI's (whose bindings call PMPI_*),",
        "     * they may reach the C wrappers themselves: not timed twice */",
        f"    if (CT_LIKELY(!{switch}) || !ct_f_translatable()) {{",
        f"        next({args});",
        "        return;",
        "    }",
    ]
    if c.completes:
        lines += completion(c, args)
    else:
        lines += [
            "    uint64_t t0 = ct_profrun_ticks();",
            f"    next({args});",
            "    uint64_t ticks = ct_profrun_ticks() - t0;",
            f"    ct_profrun_p2p({c.enum}, caller, {size}, ticks);",
        ]
    lines += ["}", ""]
    return lines + entries(c.name, params,
                           f'ct_f_{name}({args}, "{{sym}}", __builtin_return_address(0));',
                           Short(f"ct_f_{name}", switch, args,
                                 f"cmpb $0, {'ct_p2p_line+1' if c.completes else 'ct_p2p_line'}(%rip)"))


def watched_params(fn: Function) -> list[tuple[str, str]]:
    """(C type, name) of a watched function's Fortran binding: buffers as they are, MPI_Aint
    displacement arrays (INTEGER(KIND=MPI_ADDRESS_KIND)) as MPI_Aint, the rest as INTEGERs."""
    out = []
    for a in fn.coll.args:
        if a.role in BUFFERS:
            out.append(("void *", a.name))
        elif "MPI_Aint" in a.ctype:
            out.append(("MPI_Aint *", a.name))
        else:
            out.append(("MPI_Fint *", a.name))
    return out + [("MPI_Fint *", name) for _, name in fn.extra] + [("MPI_Fint *", "ierr")]


def watched_arg(fn: Function):
    """The C value of a Fortran argument by role, for the bytes rule."""
    names = {a.role: a.name for a in fn.coll.args}

    def arg(role: str) -> str:
        name = names[role]
        if role in ("sendtype", "recvtype", "datatype"):
            return f"PMPI_Type_f2c(*{name})"
        if role == "comm":
            return f"PMPI_Comm_f2c(*{name})"
        if role in ("recvcounts", "sendcounts"):
            return f"(const int *){name}"
        return f"*{name}"

    return arg, (lambda role: f"{names[role]} == (void *)&mpi_fortran_in_place_")


def watched_bytes(fn: Function, arg: Callable[[str], str], in_place: Callable[[str], str]) -> list[str]:
    """`bytes` of a watched call as its C wrapper counts them (gen_forms.bytes_code): the row's
    rule, or the v/w rows' counts arrays, here Fortran integers and datatype handles (blocking
    MPI_Alltoallw too: served in C, only watched from Fortran, HANDLE_ARRAYS)."""
    return gen_forms.bytes_code(fn, arg, in_place, fortran=True)


def watched_wrapper(fn: Function) -> list[str]:
    """A watched function's Fortran symbols: the library's own Fortran binding runs the call
    unchanged (nothing to translate), then the call is counted and profiled as the C wrapper
    would (ct_form_wrappers.c), its request translated with MPI_Request_f2c. Where the library's
    Fortran is not Open MPI's (its bindings may reach the C wrappers) it is not counted twice."""
    pairs = watched_params(fn)
    params = ", ".join(f"{t}{n}" for t, n in pairs)
    args = ", ".join(n for _, n in pairs)
    has_comm = any(a.role == "comm" for a in fn.coll.args)
    comm = "PMPI_Comm_f2c(*comm)" if has_comm else "MPI_COMM_NULL"
    arg, in_place = watched_arg(fn)
    name = fn.name
    if fn.form == "blocking":
        seen = [f"    ct_fn_seen({fn.enum}, caller, {comm}, bytes, t0, NULL);"]
    else:
        seen = ["    MPI_Request request_c = PMPI_Request_f2c(*request);",
                f"    ct_fn_seen({fn.enum}, caller, {comm}, bytes, t0, &request_c);"]
    lines = [
        f"typedef void ct_fw_{name}_fn({params});",
        "",
        *next_cache(f"ct_fw_{name}"),
        f"static void ct_fw_{name}({params}, const char *symbol, const void *caller)",
        "{",
        *next_lookup(f"ct_fw_{name}"),
        "    if (CT_LIKELY(!(ct_watch & CT_WATCH_SEE)) || !ct_f_translatable()) {",
        f"        next({args});",
        "        return;",
        "    }",
        "    uint64_t t0 = ct_watch_clock();",
        f"    next({args});",
        "    if (*ierr != MPI_SUCCESS) {",
        f"        ct_fn_seen({fn.enum}, caller, {comm}, -1, t0, NULL);",
        "        return;",
        "    }",
        *(f"    {s}" for s in watched_bytes(fn, arg, in_place)),
        *seen,
        "}",
        "",
    ]
    lines += entries(fn.name, params, f'ct_fw_{name}({args}, "{{sym}}", __builtin_return_address(0));',
                     Short(f"ct_fw_{name}", WATCH_SEE.flag, args, WATCH_SEE.test))
    return (["#if CT_HAVE_PERSISTENT", *lines, "#endif", ""] if fn.form == "persistent" else lines)


def generate() -> str:
    table = load()
    lines = [banner("gen_fortran.py", source="native/spec/collectives.toml and p2p.toml").rstrip("\n"), ""]
    lines += PRELUDE.splitlines() + [""] + gen_forms.STUB_PRELUDE + F_STUB + active_index_checks() + [""]
    lines += lifecycle()
    for coll in table.collectives:
        if not untranslatable(coll):
            lines += wrapper(coll)
    # the watched functions: Fortran has no large-count bindings in mpif.h / `use mpi`; a served
    # row whose handle arrays are not translated (Alltoallw) is watched from Fortran
    for fn in load().functions():
        if not fn.large and (not gen_forms.served(fn) or untranslatable(fn.coll)):
            lines += watched_wrapper(fn)
    lines += request_calls()
    for c in gen_p2p.load():
        lines += p2p_wrapper(c)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__, "gen_fortran.py", lambda: {GENERATED_DIR / "ct_fortran_wrappers.c": generate()})


if __name__ == "__main__":
    sys.exit(main())
