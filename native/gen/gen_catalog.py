#!/usr/bin/env python3
"""Generate the C catalog of collectives and variants from native/spec/collectives.toml.

Writes
  native/generated/ct_catalog.h   enums CT_COLL_* / CT_VAR_*, `needs` flags, the tables' types
  native/generated/ct_catalog.c   the tables, name lookups, scratch formulas, colltune_call_bytes,
                                  colltune_invoke (-> mock-up) and colltune_invoke_library (-> PMPI)
  native/include/ct_variants.h    the prototypes of the mock-ups (exact MPI signatures)

Usage: gen_catalog.py [--check]   (--check: write nothing, exit 1 if a file is stale)
Stdlib only: the generators must run before any dependency is installed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import table as tbl  # noqa: E402

GENERATOR = "gen_catalog.py"
SOURCE = "native/spec/collectives.toml"
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"

FIELD = tbl.CALL_FIELD

NEEDS = {
    "intra": ("CT_NEED_INTRA", "an intra-communicator"),
    "contiguous": ("CT_NEED_CONTIGUOUS", "every significant datatype has no gaps and lb 0"),
    "commutative": ("CT_NEED_COMMUTATIVE", "a commutative op (the variant reorders the reduction)"),
    "bitwise_or": ("CT_NEED_BITWISE_OR", "reduces raw bytes with MPI_BOR (informational)"),
    "predefined_op": ("CT_NEED_PREDEFINED_OP", "a predefined op (the variant pads or splits the count)"),
    "invertible": ("CT_NEED_INVERTIBLE", "the op has an exact inverse on the datatype"),
    "equal_counts": ("CT_NEED_EQUAL_COUNTS", "every block of the counts array holds the same bytes"),
}

IN_PLACE = {
    None: "CT_IN_PLACE_NONE",
    "sendbuf": "CT_IN_PLACE_SENDBUF",
    "sendbuf@root": "CT_IN_PLACE_SENDBUF_AT_ROOT",
    "recvbuf@root": "CT_IN_PLACE_RECVBUF_AT_ROOT",
}

# Variables a `scratch` expression may use (all int64_t, bytes unless said otherwise).
SCRATCH_VARS = {
    "n": "message bytes (colltune_call_bytes)",
    "p": "communicator size",
    "I": "sizeof(int)",
    "e": "element bytes (size of the datatype of a reduction, 1 for the other collectives)",
    "C": "chunk bytes: COLLTUNE_CHUNK_BYTES rounded down to whole elements (at least one)",
    "c": "padding bytes that make n a multiple of p*e",
}


class SpecError(Exception):
    pass


def ident(name: str) -> str:
    return name.upper()


def coll_enum(name: str) -> str:
    return f"CT_COLL_{ident(name)}"


def var_enum(name: str) -> str:
    return f"CT_VAR_{ident(name)}"


def validate(t: tbl.Table) -> None:
    names = [c.name for c in t.collectives]
    if len(set(names)) != len(names):
        raise SpecError("duplicate collective name")
    vnames = [v.name for v in t.variants]
    if len(set(vnames)) != len(vnames):
        raise SpecError("duplicate variant name")
    for c in t.collectives:
        for a in c.args:
            if a.role not in FIELD:
                raise SpecError(f"{c.name}: unknown role {a.role!r}")
        if c.in_place not in IN_PLACE:
            raise SpecError(f"{c.name}: unknown in_place {c.in_place!r}")
        roles = {a.role for a in c.args}
        for u in c.uniform:
            if u not in roles:
                raise SpecError(f"{c.name}: uniform names unknown argument {u!r}")
    for v in t.variants:
        if v.collective not in names:
            raise SpecError(f"{v.name}: unknown collective {v.collective!r}")
        if not v.name.startswith(v.collective.replace("_", "") + "_as_"):
            raise SpecError(f"{v.name}: variant names are <collective without _>_as_<rhs>")
        for need in v.needs:
            if need not in NEEDS:
                raise SpecError(f"{v.name}: unknown need {need!r}")
        for var in re.findall(r"[A-Za-z_]\w*", v.scratch):
            if var not in SCRATCH_VARS:
                raise SpecError(f"{v.name}: scratch uses unknown variable {var!r}")


# --------------------------------------------------------------------------------------------
# colltune_call_bytes: translate the `bytes` text of a collective into C.


def bytes_parts(c: tbl.Collective) -> tuple[str, str | None]:
    m = re.fullmatch(r"\s*(.*?)\s*(?:\[root with MPI_IN_PLACE:\s*(.*?)\s*\])?\s*", c.bytes)
    if not m:
        raise SpecError(f"{c.name}: cannot parse bytes {c.bytes!r}")
    return m.group(1), m.group(2)


# The communicator's size, once per function: `p` is the caller's when it knows it (> 0).
COMM_SIZE = ["if (p <= 0 && PMPI_Comm_size(call->comm, &p) != MPI_SUCCESS) return -1;"]


def bytes_expr_c(c: tbl.Collective, expr: str) -> tuple[list[str], str]:
    """(statements computing the operands, the C expression) for one `bytes` expression."""
    roles = {a.role for a in c.args}
    stmts: list[str] = []
    if expr.strip() == "0":   # no uniform argument carries a size (docs in the table)
        return ["(void)call;", "(void)p;"], "0"
    expr, per_rank, divisor = expr.partition("/")
    if per_rank and divisor.strip() != "p":
        raise SpecError(f"{c.name}: bytes may only be divided by p, not {divisor.strip()!r}")
    if per_rank:
        expr = expr + " * p"   # p is computed once; the product then divided by it
    factors = [f.strip() for f in expr.split("*")]
    out: list[str] = []
    for f in factors:
        if m := re.fullmatch(r"size\((\w+)\)", f):
            role = m.group(1)
            if role not in roles:
                raise SpecError(f"{c.name}: bytes uses unknown {role!r}")
            var = f"size_{role}"
            stmts.append(f"int64_t {var};")
            stmts.append(f"if (ct_size_of(call->{FIELD[role]}, &{var}) != MPI_SUCCESS) return -1;")
            out.append(var)
        elif m := re.fullmatch(r"sum\((\w+)\)", f):
            role = m.group(1)
            stmts += COMM_SIZE
            stmts.append("int64_t sum = 0;")
            stmts.append(f"for (int i = 0; i < p; i++) sum += call->{FIELD[role]}[i];")
            out.append("sum")
        elif f == "p":
            stmts += COMM_SIZE
            out.append("(int64_t)p")
        elif f in roles:
            out.append(f"(int64_t)call->{FIELD[f]}")
        else:
            raise SpecError(f"{c.name}: cannot translate bytes factor {f!r}")
    stmts = list(dict.fromkeys(stmts))   # the size query once, however many factors use p
    if not any(s is COMM_SIZE[0] for s in stmts):
        stmts.insert(0, "(void)p;")
    if per_rank:   # the mean block: the last factor is the p appended above
        return stmts, f"({' * '.join(out[:-1])}) / {out[-1]}"
    return stmts, " * ".join(out)


def bytes_form(c: tbl.Collective) -> str:
    """`{count offset, datatype offset}` of a plain `count * size(type)` collective,
    {CT_BYTES_ZERO, -1} of one whose bytes are 0, {CT_BYTES_SUM or CT_BYTES_MEAN (divided by p),
    datatype offset, counts offset, 1 if divided by p} of a `sum(counts) * size(type) [/ p]` one,
    else {-1, -1}."""
    main, alt = bytes_parts(c)
    if alt is None and main.strip() == "0":
        return "{CT_BYTES_ZERO, -1}"
    roles = {a.role for a in c.args}
    s = re.fullmatch(r"sum\((\w+)\)\s*\*\s*size\((\w+)\)\s*(/\s*p)?", main.strip())
    if alt is None and s is not None and s.group(1) in roles and s.group(2) in roles:
        mean = s.group(3) is not None
        return (f"{{{'CT_BYTES_MEAN' if mean else 'CT_BYTES_SUM'}, "
                f"(signed char)offsetof(ct_call, {FIELD[s.group(2)]}), "
                f"(signed char)offsetof(ct_call, {FIELD[s.group(1)]}), {int(mean)}}}")
    m = re.fullmatch(r"(\w+)\s*\*\s*size\((\w+)\)", main)
    if alt is not None or m is None or m.group(1) not in roles or m.group(2) not in roles:
        return "{-1, -1}"
    return (f"{{(signed char)offsetof(ct_call, {FIELD[m.group(1)]}), "
            f"(signed char)offsetof(ct_call, {FIELD[m.group(2)]})}}")


def gen_bytes_fn(c: tbl.Collective) -> str:
    main, alt = bytes_parts(c)
    lines = [f"static int64_t ct_bytes_{c.name}(const ct_call *call, int p)", "{"]
    if alt is not None:
        field = {"sendbuf@root": "sendbuf", "recvbuf@root": "recvbuf"}.get(c.in_place or "")
        if field is None:
            raise SpecError(f"{c.name}: bytes has an MPI_IN_PLACE form, in_place is {c.in_place!r}")
        stmts, expr = bytes_expr_c(c, alt)
        lines.append(f"    if (call->{field} == MPI_IN_PLACE) {{")
        lines += [f"        {s}" for s in stmts]
        lines.append(f"        return {expr};")
        lines.append("    }")
    stmts, expr = bytes_expr_c(c, main)
    lines += [f"    {s}" for s in stmts]
    lines.append(f"    return {expr};")
    lines.append("}")
    return "\n".join(lines)


def gen_counted(t: tbl.Table) -> list[str]:
    """colltune_call_counted_bytes: a row's `counted` rule where it has one, else its `bytes`."""
    L: list[str] = []
    rows = [c for c in t.collectives if c.counted]
    for c in rows:
        stmts, expr = bytes_expr_c(c, c.counted or "")
        L += [f"static int64_t ct_counted_{c.name}(const ct_call *call, int p)", "{",
              *(f"    {s}" for s in stmts), f"    return {expr};", "}", ""]
    L += ["int64_t colltune_call_counted_bytes(const ct_call *call)", "{", "    switch (call->coll) {"]
    for c in rows:
        L.append(f"    case {coll_enum(c.name)}: return ct_counted_{c.name}(call, 0);")
    L += ["    default: return colltune_call_bytes_in(call, 0);", "    }", "}", ""]
    return L


# --------------------------------------------------------------------------------------------
# Scratch formulas.


def gen_scratch_fn(v: tbl.Variant) -> str:
    used = set(re.findall(r"[A-Za-z_]\w*", v.scratch))
    lines = [
        f"/* {v.guideline} {v.name}: {v.scratch} */",
        f"static int64_t ct_scratch_{v.name}(const ct_scratch_args *a)",
        "{",
    ]
    if not used:
        lines.append("    (void)a;")
    for var in ("n", "p", "e", "C", "c"):
        if var in used:
            lines.append(f"    const int64_t {var} = a->{var};")
    if "I" in used:
        lines.append("    const int64_t I = (int64_t)sizeof(int);")
    lines.append(f"    return {v.scratch};")
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Prototypes and dispatch.


def params(c: tbl.Collective) -> str:
    out = []
    for a in c.args:
        ctype = a.ctype
        sep = "" if ctype.endswith("*") else " "
        out.append(f"{ctype}{sep}{a.name}")
    return ", ".join(out)


def call_args(c: tbl.Collective) -> str:
    return ", ".join(f"call->{FIELD[a.role]}" for a in c.args)


def pmpi_name(c: tbl.Collective) -> str:
    if not c.mpi.startswith("MPI_"):
        raise SpecError(f"{c.name}: mpi name {c.mpi!r} must start with MPI_")
    return "P" + c.mpi


def form_bit(form: str) -> str:
    return f"CT_ROW_{form.upper()}"


def elem_kind(c: tbl.Collective) -> str:
    """Only reductions have a datatype equal on all ranks (the op needs it); the others move
    bytes whose datatypes may differ between ranks as long as type signatures match."""
    if "op" in {a.role for a in c.args}:
        return "CT_ELEM_UNIFORM_TYPE"
    return "CT_ELEM_BYTES"


def gen_header(t: tbl.Table) -> str:
    L: list[str] = [tbl.banner(GENERATOR, source=SOURCE).rstrip("\n"), ""]
    L += [
        "/* The catalog of collectives and variants (native/spec/collectives.toml) for C. */",
        "#ifndef CT_CATALOG_H",
        "#define CT_CATALOG_H",
        "",
        '#include "colltune.h"',
        "",
        "enum ct_coll_id {",
    ]
    L += [f"    {coll_enum(c.name)} = {i}," for i, c in enumerate(t.collectives)]
    L += [f"    CT_NUM_COLLECTIVES = {len(t.collectives)}", "};", "", "enum ct_var_id {"]
    for i, v in enumerate(t.variants):
        L.append(f"    {var_enum(v.name)} = {i}, /* {v.guideline}: {v.rhs} */")
    L += [f"    CT_NUM_VARIANTS = {len(t.variants)}", "};", ""]
    L.append("/* What a variant needs to give the library's exact result (`needs`). */")
    L.append("enum ct_need {")
    for i, (_, (macro, text)) in enumerate(NEEDS.items()):
        L.append(f"    {macro} = 1u << {i}, /* {text} */")
    L += ["};", ""]
    L += [
        "/* Where MPI_IN_PLACE is allowed. */",
        "enum ct_in_place {",
        "    CT_IN_PLACE_NONE,",
        "    CT_IN_PLACE_SENDBUF,         /* as sendbuf, on all ranks */",
        "    CT_IN_PLACE_SENDBUF_AT_ROOT, /* as sendbuf, on the root only */",
        "    CT_IN_PLACE_RECVBUF_AT_ROOT, /* as recvbuf, on the root only */",
        "};",
        "",
        "/* What `e` (element bytes) of the scratch formulas is. */",
        "enum ct_elem_kind {",
        "    CT_ELEM_UNIFORM_TYPE, /* size of the datatype of a reduction (uniform) */",
        "    CT_ELEM_BYTES,        /* data movement (datatypes may differ by rank): 1 */",
        "};",
        "",
        "/* The forms a row has (`forms`), as bits of ct_collective_info.forms. */",
        "enum ct_row_form {",
        *(f"    {form_bit(f)} = 1u << {i}," for i, f in enumerate(tbl.FORMS)),
        "};",
        "",
        "typedef struct ct_collective_info {",
        "    const char *name;          /* \"allgather\" */",
        "    const char *mpi;           /* \"MPI_Allgather\" */",
        "    enum ct_in_place in_place;",
        "    enum ct_elem_kind elem;",
        "    int has_root;",
        "    int has_op;",
        "    unsigned forms;            /* enum ct_row_form */",
        "} ct_collective_info;",
        "",
        "/* Inputs of a scratch formula, all int64_t bytes except p (see gen_catalog.py). */",
        "typedef struct ct_scratch_args {",
    ]
    for var in ("n", "p", "e", "C", "c"):
        L.append(f"    int64_t {var}; /* {SCRATCH_VARS[var]} */")
    L += [
        "} ct_scratch_args;",
        "",
        "typedef struct ct_variant_info {",
        "    const char *name;          /* \"allgather_as_gather_bcast\" */",
        "    int coll;                  /* enum ct_coll_id */",
        "    const char *guideline;     /* \"GL1\" (PGMPITuneLib) or \"RS1\" (PGMPI) */",
        "    const char *rhs;           /* \"MPI_Gather + MPI_Bcast\" */",
        "    unsigned needs;            /* enum ct_need bits */",
        "    const char *scratch_expr;  /* the formula as written in the table */",
        "    int64_t (*scratch)(const ct_scratch_args *args); /* bytes, most demanding rank */",
        "} ct_variant_info;",
        "",
        "extern const ct_collective_info ct_collectives[CT_NUM_COLLECTIVES];",
        "extern const ct_variant_info ct_variants[CT_NUM_VARIANTS];",
        "",
        "/* Collectives whose bytes are count * size(datatype) of two fixed ct_call fields (no root,",
        " * MPI_IN_PLACE, p or sum form): the fields' offsets in ct_call; CT_BYTES_ZERO where no",
        " * uniform argument carries a size (the bytes are 0); CT_BYTES_SUM where they are",
        " * sum(counts over the p ranks) * size(datatype), CT_BYTES_MEAN where that is divided by p",
        " * (`mean` is then 1; the offsets in type_at and counts_at: the mean has a code of its own,",
        " * so that the learning path tells it by the test that finds the form); else -1 (then only",
        " * colltune_call_bytes knows). Lets the learning mode's call path skip the general function. */",
        "#define CT_BYTES_ZERO (-2)",
        "#define CT_BYTES_SUM (-3)",
        "#define CT_BYTES_MEAN (-4)",
        "typedef struct ct_bytes_form {",
        "    signed char count_at, type_at, counts_at;",
        "    unsigned char mean;",
        "} ct_bytes_form;",
        "extern const ct_bytes_form ct_bytes_forms[CT_NUM_COLLECTIVES];",
        "",
        "#endif /* CT_CATALOG_H */",
        "",
    ]
    return "\n".join(L)


def gen_source(t: tbl.Table) -> str:
    L: list[str] = [tbl.banner(GENERATOR, source=SOURCE).rstrip("\n"), ""]
    L += [
        '#include "ct_catalog.h"',
        '#include "ct_core.h"   /* ct_type_size: cached sizes of predefined datatypes */',
        '#include "ct_variants.h"',
        "",
        "#include <stddef.h>",
        "#include <string.h>",
        "",
        "const ct_collective_info ct_collectives[CT_NUM_COLLECTIVES] = {",
    ]
    for c in t.collectives:
        roles = {a.role for a in c.args}
        L.append(
            f'    [{coll_enum(c.name)}] = {{"{c.name}", "{c.mpi}", {IN_PLACE[c.in_place]}, '
            f'{elem_kind(c)}, {int("root" in roles)}, {int("op" in roles)}, '
            f'{" | ".join(form_bit(f) for f in c.forms)}}},'
        )
    L += ["};", ""]
    for v in t.variants:
        L += [gen_scratch_fn(v), ""]
    L.append("const ct_variant_info ct_variants[CT_NUM_VARIANTS] = {")
    for v in t.variants:
        needs = " | ".join(NEEDS[n][0] for n in v.needs) or "0u"
        L.append(
            f'    [{var_enum(v.name)}] = {{"{v.name}", {coll_enum(v.collective)}, "{v.guideline}", '
            f'"{v.rhs}", {needs}, "{v.scratch}", ct_scratch_{v.name}}},'
        )
    L += ["};", ""]
    L += [
        "int colltune_collective_index(const char *name)",
        "{",
        "    if (name == NULL) return -1;",
        "    for (int i = 0; i < CT_NUM_COLLECTIVES; i++)",
        "        if (strcmp(ct_collectives[i].name, name) == 0) return i;",
        "    return -1;",
        "}",
        "",
        "const char *colltune_collective_name(int coll)",
        "{",
        "    return coll >= 0 && coll < CT_NUM_COLLECTIVES ? ct_collectives[coll].name : NULL;",
        "}",
        "",
        "int colltune_variant_index(const char *name)",
        "{",
        "    if (name == NULL) return -1;",
        "    for (int i = 0; i < CT_NUM_VARIANTS; i++)",
        "        if (strcmp(ct_variants[i].name, name) == 0) return i;",
        "    return -1;",
        "}",
        "",
        "const char *colltune_variant_name(int variant)",
        "{",
        "    return variant >= 0 && variant < CT_NUM_VARIANTS ? ct_variants[variant].name : NULL;",
        "}",
        "",
        "int colltune_variant_collective(int variant)",
        "{",
        "    return variant >= 0 && variant < CT_NUM_VARIANTS ? ct_variants[variant].coll : -1;",
        "}",
        "",
        "static int ct_size_of(MPI_Datatype type, int64_t *bytes)",
        "{",
        "    return ct_type_size(type, bytes);",
        "}",
        "",
    ]
    for c in t.collectives:
        L += [gen_bytes_fn(c), ""]
    L += ["const ct_bytes_form ct_bytes_forms[CT_NUM_COLLECTIVES] = {"]
    for c in t.collectives:
        L.append(f"    [{coll_enum(c.name)}] = {bytes_form(c)},")
    L += ["};", ""]
    L += ["int64_t colltune_call_bytes_in(const ct_call *call, int comm_size)", "{",
          "    switch (call->coll) {"]
    for c in t.collectives:
        L.append(f"    case {coll_enum(c.name)}: return ct_bytes_{c.name}(call, comm_size);")
    L += ["    default: return -1;", "    }", "}", ""]
    L += ["int64_t colltune_call_bytes(const ct_call *call)", "{",
          "    return colltune_call_bytes_in(call, 0);", "}", ""]
    L += gen_counted(t)
    L += ["int colltune_invoke(int variant, const ct_call *call)", "{", "    switch (variant) {"]
    for v in t.variants:
        c = t.collective(v.collective)
        L.append(f"    case {var_enum(v.name)}:")
        L.append(f"        return colltune_{v.name}({call_args(c)});")
    L += ["    default: return MPI_ERR_ARG;", "    }", "}", ""]
    L += ["int colltune_invoke_library(const ct_call *call)", "{", "    switch (call->coll) {"]
    for c in t.collectives:
        L.append(f"    case {coll_enum(c.name)}:")
        L.append(f"        return {pmpi_name(c)}({call_args(c)});")
    L += ["    default: return MPI_ERR_ARG;", "    }", "}", ""]
    L += form_dispatch(t, "nonblocking", "colltune_start_library(const ct_call *call, MPI_Request *request)")
    L += form_dispatch(t, "persistent",
                       "colltune_init_library(const ct_call *call, MPI_Info info, MPI_Request *request)",
                       guard="CT_HAVE_PERSISTENT")
    return "\n".join(L)


def form_dispatch(t: tbl.Table, form: str, signature: str, guard: str | None = None) -> list[str]:
    """The library's call of every row that has `form`, with the form's extra arguments; the
    other rows (and every row where `guard` is false) are unsupported."""
    extra = ", ".join(name for _, name in tbl.FORM_EXTRA_ARGS[form])
    L = [f"int {signature}", "{"]
    L += [f"#if {guard}"] if guard else []
    L.append("    switch (call->coll) {")
    for c in t.collectives:
        if form in c.forms:
            L.append(f"    case {coll_enum(c.name)}:")
            L.append(f"        return P{tbl.Function(c, form, False).mpi}({call_args(c)}, {extra});")
    L += ["    default: return MPI_ERR_UNSUPPORTED_OPERATION;", "    }"]
    if guard:
        L += ["#else", *(f"    (void){name};" for name in ("call", *extra.split(", "))),
              "    return MPI_ERR_UNSUPPORTED_OPERATION;", "#endif"]
    L += ["}", ""]
    return L


def gen_variants_header(t: tbl.Table) -> str:
    L: list[str] = [tbl.banner(GENERATOR, source=SOURCE).rstrip("\n"), ""]
    L += [
        "/* The mock-ups: each has exactly the signature of the MPI function it replaces and calls",
        " * the library only through PMPI_*. Implementations: native/variants/<collective>.c. */",
        "#ifndef CT_VARIANTS_H",
        "#define CT_VARIANTS_H",
        "",
        "#include <mpi.h>",
        "",
    ]
    for c in t.collectives:
        vs = [v for v in t.variants if v.collective == c.name]
        if not vs:
            continue
        L.append(f"/* {c.mpi} */")
        for v in vs:
            L.append(f"int colltune_{v.name}({params(c)}); /* {v.guideline}: {v.rhs} */")
        L.append("")
    L += ["#endif /* CT_VARIANTS_H */", ""]
    return "\n".join(L)


def outputs() -> dict[Path, str]:
    t = tbl.load()
    validate(t)
    return {
        tbl.GENERATED_DIR / "ct_catalog.h": gen_header(t),
        tbl.GENERATED_DIR / "ct_catalog.c": gen_source(t),
        INCLUDE_DIR / "ct_variants.h": gen_variants_header(t),
    }


def main(argv: list[str] | None = None) -> int:
    try:
        return tbl.run(argv, __doc__, GENERATOR, outputs)
    except (SpecError, KeyError, StopIteration) as exc:
        print(f"gen_catalog: native/spec/collectives.toml: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
