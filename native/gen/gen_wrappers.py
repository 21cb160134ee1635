#!/usr/bin/env python3
"""Generate the PMPI wrappers of libcolltune from native/spec/collectives.toml.

Output: native/generated/ct_wrappers.c, for every collective of the table
  - MPI_<Coll>: one predictable branch on ct_active[coll] (pass-through straight to PMPI_<Coll>),
    else the arguments fill a ct_call by role and the decision point (ct_dispatch) runs, or
    while profiling the profiling mode's call path (ct_profrun_dispatch, which times the call
    and hands it to ct_dispatch itself; see `DISPATCH`);
  - MPI_<Coll>_c (MPI-4 large count, under `#if MPI_VERSION >= 4`): served like MPI_<Coll> when
    every significant count times its datatype size fits an int (a condition that is the same on
    all ranks, see `fit_conditions`), else passed to PMPI_<Coll>_c unchanged.

`--check` writes nothing and exits 1 if the committed file is stale (the test suite runs it).
Stdlib only, like every generator.
"""

from __future__ import annotations

import sys

from table import CALL_FIELD, GENERATED_DIR, Collective, banner, load, run

FIELD = CALL_FIELD
# Fields a collective does not have get a value no variant mistakes for a real argument.
UNSET = {
    "sendbuf": "NULL",
    "recvbuf": "NULL",
    "sendcount": "0",
    "recvcount": "0",
    "recvcounts": "NULL",
    "sendcounts": "NULL",
    "sdispls": "NULL",
    "rdispls": "NULL",
    "sendtype": "MPI_DATATYPE_NULL",
    "recvtype": "MPI_DATATYPE_NULL",
    "sendtypes": "NULL",
    "recvtypes": "NULL",
    "op": "MPI_OP_NULL",
    "root": "-1",
    "comm": "MPI_COMM_SELF",   # Reduce_local: a reduction over one process
}
FIELD_ORDER = ["sendbuf", "recvbuf", "sendcount", "recvcount", "sendcounts", "sdispls",
               "recvcounts", "rdispls", "sendtype", "recvtype", "sendtypes", "recvtypes", "op",
               "root", "comm"]
# ct_call's MPI_Aint displacements share a union with the int ones (colltune.h): a row that has
# them sets that member instead (one initializer per union member).
AINT_FIELD = {"sdispls": "sdispls_aint", "rdispls": "rdispls_aint"}
COUNT_TYPE = {"sendcount": "sendtype", "recvcount": "recvtype", "count": "datatype"}
# Reduce_scatter_c converts its count array on the stack, up to this communicator size.
MAX_STACK_COUNTS = 512


def enum(coll: Collective) -> str:
    return f"CT_COLL_{coll.name.upper()}"


def role_arg(coll: Collective) -> dict[str, str]:
    return {a.role: a.name for a in coll.args}


def params(coll: Collective, large: bool) -> str:
    """The C signature; `large`: the MPI-4 large-count one (counts MPI_Count, displacements
    MPI_Aint)."""
    out = []
    for a in coll.args:
        ctype = a.ctype
        if large and a.role in COUNT_TYPE:
            ctype = "MPI_Count"
        elif large and a.role in ("recvcounts", "sendcounts"):
            ctype = "const MPI_Count *"
        elif large and a.role in ("sdispls", "rdispls"):
            ctype = "const MPI_Aint *"
        sep = "" if ctype.endswith("*") else " "
        out.append(f"{ctype}{sep}{a.name}")
    return ", ".join(out)


def call_args(coll: Collective) -> str:
    return ", ".join(a.name for a in coll.args)


def fill_call(coll: Collective, value: dict[str, str], indent: str) -> list[str]:
    """Designated initializer of the ct_call; `value` maps a ct_call field to its expression."""
    lines = [f"{indent}const ct_call call = {{", f"{indent}    .coll = {enum(coll)},"]
    for fld in FIELD_ORDER:
        if AINT_FIELD.get(fld) in value:
            fld = AINT_FIELD[fld]
        lines.append(f"{indent}    .{fld} = {value.get(fld, UNSET.get(fld, '0'))},")
    lines.append(f"{indent}}};")
    return lines


# The end of every serving wrapper. The profiling mode's test is here rather than in ct_dispatch so
# that its call path calls the decision point and never the other way round (the test ct_dispatch
# made first, moved); ct_profrun_inside: a collective the serving code makes itself is not
# profiled again.
DISPATCH = [
    "    if (CT_UNLIKELY(ct_profrun_on && !ct_profrun_inside))",
    "        return ct_profrun_dispatch(&call);",
    "    return ct_dispatch(&call);",
]


# Rows whose serving function hands a profiled call to the profiling mode by its arguments
# (runtime/profcall.c's ct_profrun_<name>, the same arguments as MPI_<Coll>, by a tail jump): a
# memoised call's repetition is served there without the ct_call (its 16 stores were ~30
# instructions of a ~300-instruction path on OpenFOAM's reductions); any other call comes back
# to ct_full_<name>, which builds the ct_call for ct_profrun_dispatch as the other rows do.
BY_ARGS = ("allreduce", "reduce", "bcast")


def by_args(coll: Collective) -> list[str]:
    """A BY_ARGS row's serving body: the profiling test, then a tail jump either way (to the
    call path by arguments, or to ct_modes_<name>, which builds the ct_call for the other modes).
    With the ct_call built here, GCC set up its 136-byte frame before the test and the profiled
    path ran through three code lines of the function (OpenFOAM's Allreduce, callgrind); without
    it the function is a few instructions on one line, next to its wrapper and the call path in
    CT_HOT_TEXT."""
    if coll.name not in BY_ARGS:
        return []
    return [
        "    if (CT_LIKELY(ct_profrun_on && !ct_profrun_inside))",
        f"        return ct_profrun_{coll.name}({call_args(coll)});",
        f"    return ct_modes_{coll.name}({call_args(coll)});",
    ]


def _by_args_call(coll: Collective, head: str, target: str) -> list[str]:
    """A BY_ARGS row's function `head`(the collective's arguments) that fills the ct_call from
    them and hands it to `target`; nothing for the other rows."""
    if coll.name not in BY_ARGS:
        return []
    value = {FIELD[a.role]: a.name for a in coll.args}
    return [
        f"{head}({params(coll, False)})",
        "{",
        *fill_call(coll, value, "    "),
        f"    return {target}(&call);",
        "}",
        "",
    ]


def modes(coll: Collective) -> list[str]:
    """ct_modes_<name>: a BY_ARGS row's call while it is not profiled (the serving body tested
    that, so ct_dispatch directly), out of the hot text."""
    return _by_args_call(coll, f"static __attribute__((noinline)) int ct_modes_{coll.name}", "ct_dispatch")


def full(coll: Collective) -> list[str]:
    """ct_full_<name>: a BY_ARGS row's profiled call that its ct_profrun_<name> did not serve."""
    return _by_args_call(coll, f"int ct_full_{coll.name}", "ct_profrun_dispatch")


# x86-64 SysV passes the first six integer arguments in registers, the rest on the stack.
REGISTER_ARGS = 6

# The wrappers with arguments on the stack are assembly stubs where the target allows it (the
# conditions of gen_forms.py's STUB_PRELUDE, which this file cannot import: gen_forms imports
# it). In C, GCC 12.2 copies the stack arguments of the tail call to the serving function at the
# wrapper's entry (one load and one store each, before the test: 1-3 instructions of
# pass-through) and the serving function reads them again; the stub tests the collective's byte
# of ct_active and jumps, to ct_serve_<name> (hidden, the wrapper's signature) while it is set,
# else to PMPI_<name> through the PLT: the stack arguments and the return address stay the
# application's, so ct_serve_<name> takes the call site as its return address as before.
# .cfi_startproc gives the stub the entry frame rule, which holds at each of its instructions.
SERVE_STUB_PRELUDE = [
    "#if defined(__x86_64__) && defined(__ELF__) && (defined(__GNUC__) || defined(__clang__)) \\",
    "    && !defined(COLLTUNE_ABI_FAMILY_SMPI)",
    "#define CT_SERVE_STUBS 1",
    "#if defined(__CET__) && (__CET__ & 1)",
    '#define CT_SERVE_STUB_ENDBR "\\tendbr64\\n"',
    "#else",
    '#define CT_SERVE_STUB_ENDBR ""',
    "#endif",
    "/* MPI_<name>: to `serve` when ct_active[index] is set, else to PMPI_<name>; in `section`",
    " * (CT_SERVE_STUB: .text; CT_HOT_TEXT_SECTION for the BY_ARGS rows'). */",
    "#define CT_SERVE_STUB(name, index, serve) CT_SERVE_STUB_IN(name, index, serve, \".text\")",
    "#define CT_SERVE_STUB_IN(name, index, serve, section)                              \\",
    '    __asm__("\\t.pushsection " section "\\n\\t.globl " #name "\\n\\t.type " #name ", @function\\n" \\',
    '            "\\t.p2align 4\\n" #name ":\\n\\t.cfi_startproc\\n" CT_SERVE_STUB_ENDBR       \\',
    '            "\\tcmpb $0, ct_coll_line+" #index "(%rip)\\n\\tjne " #serve "\\n"          \\',
    '            "\\tjmp P" #name "@PLT\\n\\t.cfi_endproc\\n\\t.size " #name ", .-" #name \\',
    '            "\\n\\t.popsection\\n");',
    '_Static_assert(sizeof ct_active[0] == 1, "the stubs test one byte per collective");',
    "#else",
    "#define CT_SERVE_STUBS 0",
    "#endif",
    "",
]


def comm_arg(coll: Collective) -> str:
    """The name of the collective's communicator argument."""
    return next(a.name for a in coll.args if FIELD.get(a.role) == "comm")


def index(coll: Collective) -> int:
    """The collective's CT_COLL_ value: its place in the table (gen_catalog.py's enum)."""
    return next(i for i, c in enumerate(load().collectives) if c.name == coll.name)


def split(coll: Collective, name: str, large: bool, body: list[str]) -> list[str]:
    """MPI_<Coll>(_c) as one test and a tail call either way; the serving body is a noinline
    function of the same signature. Written inline, GCC loads the stack arguments of a 7-9
    argument collective (Alltoallv, Gatherv...) and saves registers before the test, which cost
    the pass-through 7-13 instructions instead of 4. The serving function is reached by a tail
    jump, so its return address is the application's call site: taking it there rather than in
    the wrapper leaves the wrapper no register to save. With arguments on the stack, an assembly
    stub is the wrapper where the target allows (SERVE_STUB_PRELUDE)."""
    sig, args = params(coll, large), call_args(coll)
    serve = f"ct_serve_{name[4:].lower()}"
    # a BY_ARGS row's int binding: the profiled repetition's code, CT_HOT_TEXT
    hot = coll.name in BY_ARGS and not large
    at = " CT_HOT_TEXT" if hot else ""
    # a BY_ARGS row's light path first (ct_profrun_impl.h's ct_light_collective): a repeated
    # call that only counts goes to the library before anything else is written
    light = [
        f"    if (CT_LIKELY(ct_light_collective({enum(coll)}, {comm_arg(coll)})))",
        f"        return P{name}({args});",
    ] if hot else []
    serving = [
        "{",
        *light,
        "    ct_profrun_site = __builtin_return_address(0);",
        *body,
        "}",
        "",
    ]
    c_wrapper = [
        f"{at.strip()} int {name}({sig})".strip(),
        "{",
        f"    if (CT_LIKELY(!ct_active[{enum(coll)}]))",
        f"        return P{name}({args});",
        f"    return {serve}({args});",
        "}",
    ]
    if len(coll.args) <= REGISTER_ARGS:
        # A BY_ARGS row's serving body needs no frame (by_args: a test and tail jumps), so it is
        # inline in its wrapper: the profiled call runs through one piece of code instead of
        # two functions on three lines, and the pass-through is still the test and a jump.
        kind = "inline __attribute__((always_inline))" if hot else "__attribute__((noinline))"
        return [f"static {kind} int {serve}({sig})", *serving, *c_wrapper, ""]
    i = index(coll)
    stub = (f"CT_SERVE_STUB_IN({name}, {i}, {serve}, CT_HOT_TEXT_SECTION)" if hot
            else f"CT_SERVE_STUB({name}, {i}, {serve})")
    return [
        "#if CT_SERVE_STUBS",
        f'_Static_assert({enum(coll)} == {i}, "{name}\'s stub tests ct_active[{i}]");',
        stub,
        f"CT_HIDDEN __attribute__((noinline)) int {serve}({sig});",
        f"CT_HIDDEN __attribute__((noinline)){at} int {serve}({sig})",
        "#else",
        f"static __attribute__((noinline)){at} int {serve}({sig})",
        "#endif",
        *serving,
        "#if !CT_SERVE_STUBS",
        *c_wrapper,
        "#endif",
        "",
    ]


def wrapper(coll: Collective) -> list[str]:
    value = {FIELD[a.role]: a.name for a in coll.args}
    if coll.name in BY_ARGS:
        return [*full(coll), *modes(coll), *split(coll, coll.mpi, False, by_args(coll))]
    return [*full(coll),
            *split(coll, coll.mpi, False, [*fill_call(coll, value, "    "), *DISPATCH])]


def ignored(coll: Collective, role: str) -> str | None:
    """C condition under which a count argument is ignored on the calling rank (None: never).
    Derived from `in_place`: "X" means X's count is ignored when X is MPI_IN_PLACE; "X@root"
    also means the root alone sends (scatter) or receives (gather) the p blocks."""
    side = {"sendcount": "send", "recvcount": "recv"}.get(role)
    if side is None or coll.in_place is None:
        return None
    buf, _, where = coll.in_place.partition("@")
    place_side = "send" if buf == "sendbuf" else "recv"
    in_place = f"{buf} == MPI_IN_PLACE"
    if side == place_side:
        return f"(rank == root && {in_place})" if where == "root" else in_place
    return "rank != root" if where == "root" else None


def fit_conditions(coll: Collective) -> list[str]:
    """Every significant count, times its datatype's size, must be in 1..INT_MAX. By the type
    matching rules each such product equals the block size in bytes, the same on all ranks, so
    the conjunction is true on all ranks or on none: serving or passing through is uniform.
    Then each count <= its product fits an int."""
    args = role_arg(coll)
    conds = []
    for role, type_role in COUNT_TYPE.items():
        if role not in args:
            continue
        dtype = args.get(type_role, args.get("datatype"))  # Reduce_scatter_block: recvcount
        fit = f"ct_fits({args[role]}, {dtype})"
        cond = ignored(coll, role)
        conds.append(fit if cond is None else f"({cond} || {fit})")
    return conds


def large_enum(coll: Collective) -> str:
    return f"CT_FN_{coll.name.upper()}_C"


def note_large(coll: Collective, bytes_expr: str) -> list[str]:
    """The large-count binding counted by function (watch.c tells the int binding's calls from
    the collective's by it)."""
    return ["    if (CT_UNLIKELY(ct_watch))", f"        ct_fn_note({large_enum(coll)}, {bytes_expr});"]


def served_large(coll: Collective) -> bool:
    """Its large-count blocking binding is served here (`large_count` and `serve_large` of the
    table); the others' MPI_X_c are watched (gen_forms.py)."""
    return coll.dispatch and coll.large_count and coll.serve_large


def narrowed(coll: Collective) -> dict[str, str]:
    """The ct_call fields of a large-count call whose counts fit (fit_conditions): each count
    narrowed to int."""
    args = role_arg(coll)
    value = {FIELD[a.role]: a.name for a in coll.args}
    for role in COUNT_TYPE:
        if role in args:
            value[FIELD[role]] = f"ct_narrow({args[role]})"
    return value


def large_wrapper(coll: Collective) -> list[str]:
    args = role_arg(coll)
    name = f"{coll.mpi}_c"
    if "recvcounts" in args:
        return split(coll, name, True, large_vector_body(coll))
    needs_rank = "root" in args
    value = narrowed(coll)
    conds = fit_conditions(coll)
    body = [
        "    int rank;",
        "    colltune_reason why = ct_large_comm(comm, &rank);",
    ]
    if not needs_rank:
        body.append("    (void)rank;")
    body += [
        "    if (why == COLLTUNE_APPLICABLE",
        "        && !(" + "\n             && ".join(conds) + "))",
        "        why = COLLTUNE_NA_OVERFLOW;",
        "    if (why != COLLTUNE_APPLICABLE) {",
        f"        ct_count_passthrough({enum(coll)}, why);",
        *("    " + x for x in note_large(coll, "-1")),
        f"        return P{name}({call_args(coll)});",
        "    }",
        *fill_call(coll, value, "    "),
        *note_large(coll, "colltune_call_bytes(&call)"),
        *DISPATCH,
    ]
    return split(coll, name, True, body)


def large_vector_body(coll: Collective) -> list[str]:
    """Reduce_scatter_c: the counts array is converted to int on the stack."""
    args = role_arg(coll)
    counts, dtype = args["recvcounts"], args["datatype"]
    value = {FIELD[a.role]: a.name for a in coll.args}
    value["recvcounts"] = "small"
    return [
        "    int rank, size, small[CT_MAX_STACK_COUNTS];",
        "    colltune_reason why = ct_large_comm(comm, &rank);",
        "    (void)rank;",
        "    if (why == COLLTUNE_APPLICABLE && PMPI_Comm_size(comm, &size) != MPI_SUCCESS)",
        "        why = COLLTUNE_NA_ERROR;",
        "    if (why == COLLTUNE_APPLICABLE && size > CT_MAX_STACK_COUNTS)",
        "        why = COLLTUNE_NA_SIZE;",
        "    /* recvcounts is identical on all ranks: so is its sum and whether it fits. */",
        f"    if (why == COLLTUNE_APPLICABLE && !ct_fits_counts({counts}, size, {dtype}, small))",
        "        why = COLLTUNE_NA_OVERFLOW;",
        "    if (why != COLLTUNE_APPLICABLE) {",
        f"        ct_count_passthrough({enum(coll)}, why);",
        *("    " + x for x in note_large(coll, "-1")),
        f"        return P{coll.mpi}_c({call_args(coll)});",
        "    }",
        *fill_call(coll, value, "    "),
        *note_large(coll, "colltune_call_bytes(&call)"),
        *DISPATCH,
    ]


def generate() -> str:
    table = load()
    lines = [banner("gen_wrappers.py", source="native/spec/collectives.toml").rstrip("\n"), ""]
    lines += [
        "/* The MPI_* collectives of libcolltune.so: pass-through, ct_dispatch or, while profiling,",
        " * ct_profrun_dispatch (runtime/). */",
        "#include <mpi.h>",
        "",
        '#include "../runtime/ct_profrun.h"',
        '#include "../runtime/ct_profrun_impl.h"',
        '#include "../runtime/ct_runtime.h"',
        '#include "../runtime/ct_watch.h"',
        "",
        *SERVE_STUB_PRELUDE,
    ]
    for coll in table.collectives:
        lines += wrapper(coll)
    lines += [
        "#if MPI_VERSION >= 4",
        "/* MPI-4 large-count bindings. */",
        f"#define CT_MAX_STACK_COUNTS {MAX_STACK_COUNTS}",
        "",
    ]
    for coll in table.collectives:
        if served_large(coll):
            lines += large_wrapper(coll)
    lines.append("#endif /* MPI_VERSION >= 4 */")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__, "gen_wrappers.py", lambda: {GENERATED_DIR / "ct_wrappers.c": generate()})


if __name__ == "__main__":
    sys.exit(main())
