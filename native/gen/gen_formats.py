#!/usr/bin/env python3
"""Generate both sides' declarations of the shared file formats from native/spec/formats.toml.

Outputs
  native/generated/ct_formats.h   text-format limits, the trace header's and communicator
                                  table's offsets, the trace record struct (with _Static_asserts),
                                  the profiling run's line formats (printf)
  src/colltune/formats.py         the same facts as Python constants and field tables

`--check` writes nothing and exits 1 if an output is stale (the test suite runs it).
Stdlib only, like every generator.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from table import GENERATED_DIR, SPEC_DIR, banner, run

ROOT = SPEC_DIR.parent.parent
PYTHON_OUT = ROOT / "src" / "colltune" / "formats.py"
# type -> (bytes, C type, struct code, numpy code)
TYPES = {
    "char8": (8, None, "8s", None),
    "u8": (1, "uint8_t", "B", "u1"),
    "u16": (2, "uint16_t", "H", "<u2"),
    "u32": (4, "uint32_t", "I", "<u4"),
    "u64": (8, "uint64_t", "Q", "<u8"),
    "f32": (4, "float", "f", "<f4"),
    "f64": (8, "double", "d", "<f8"),
}


def layout(fields: list[dict], what: str) -> list[tuple[str, str, int, str]]:
    """(name, type, offset, doc) packed in order; every field naturally aligned, so that a C
    struct of them has no padding and the offsets are the same on both sides."""
    out, at = [], 0
    for f in fields:
        size = TYPES[f["type"]][0]
        if at % min(size, 8):
            sys.exit(f"formats.toml: {what}.{f['name']} at offset {at} is not aligned to {size}")
        out.append((f["name"], f["type"], at, f.get("doc", "")))
        at += size
    return out


def size_of(fields: list[tuple[str, str, int, str]]) -> int:
    name, typ, at, _ = fields[-1]
    return at + TYPES[typ][0]


# profiling-run line field type -> (printf conversion, C argument type)
LINE_TYPES = {"word": ("%s", "const char *"), "ptr": ("%p", "const void *"), "int": ("%d", "int"),
              "u64": ("%llu", "unsigned long long")}


def line_format(fields: list[dict]) -> str:
    return " ".join(LINE_TYPES[f["type"]][0] for f in fields)


def profile_run_c(run: dict) -> list[str]:
    """The point and pattern lines as printf formats and the argument order as a comment; the
    writer passes its values in that order (gcc's -Wformat checks their types)."""
    lines = ["/* Profiling runs (native/runtime/profrun.c, profcall.c, profcomm.c): dir/rank-N. */",
             f'#define CT_PROFRUN_MAGIC "{run["magic"]}"',
             f"#define CT_PROFRUN_VERSION {run['version']}"]
    for kind in ("point", "pattern", "request"):
        names = ", ".join(f["name"] for f in run[kind])
        lines += [f"/* {kind}: {names} */",
                  f'#define CT_PROFRUN_{kind.upper()}_FORMAT "{line_format(run[kind])}"',
                  f"#define CT_PROFRUN_{kind.upper()}_FIELDS {len(run[kind])}"]
    return lines + [""]


def c_header(spec: dict) -> str:
    text, trace = spec["text"], spec["trace"]
    head, comm, rec = layout(trace["header"], "header"), layout(trace["comm"], "comm"), layout(trace["record"], "record")
    lines = [banner("gen_formats.py", source="native/spec/formats.toml"),
             "#ifndef CT_FORMATS_H", "#define CT_FORMATS_H", "", "#include <stddef.h>", "#include <stdint.h>", "",
             "/* Tuning profiles and selection tables (native/core/textformat.c). */",
             f"#define CT_TEXT_MAX_LINE {text['max_line']}",
             f"#define CT_TEXT_MAX_FILE_BYTES {text['max_file_bytes']}u",
             f"#define CT_TEXT_SHOW {text['show']}", "",
             "/* Learning-mode traces (native/runtime/trace.c). */",
             f'#define CT_TRACE_MAGIC "{trace["magic"]}"',
             f"#define CT_TRACE_VERSION {trace['version']}",
             f"#define CT_TRACE_TICKS_PER_SECOND {trace['ticks_per_second']}", ""]
    for prefix, fields, total in (("CT_TRACE_H_", head, "CT_TRACE_HEADER_BYTES"),
                                  ("CT_TRACE_C_", comm, "CT_TRACE_COMM_BYTES")):
        lines.append("enum {")
        lines += [f"    {prefix}{n.upper()} = {at},{f'   /* {d} */' if d else ''}" for n, _, at, d in fields]
        lines += [f"    {total} = {size_of(fields)}", "};", ""]
    lines.append("enum {")
    lines += [f"    CT_TRACE_STOP_{s.upper()} = {i}," for i, s in enumerate(trace["stops"])]
    lines += [f"    CT_TRACE_OUTCOME_{s.upper()} = {i}," for i, s in enumerate(trace["outcomes"])]
    lines += ["};", "", "/* One traced call, in the host's byte order (little-endian where we build). */",
              "typedef struct ct_trace_record {"]
    lines += [f"    {TYPES[t][1]} {n};{f'   /* {d} */' if d else ''}" for n, t, _, d in rec]
    lines += ["} ct_trace_record;", f"#define CT_TRACE_RECORD_BYTES {size_of(rec)}",
              '_Static_assert(sizeof(ct_trace_record) == CT_TRACE_RECORD_BYTES, "trace record layout");']
    lines += [f'_Static_assert(offsetof(ct_trace_record, {n}) == {at}, "trace record layout");' for n, _, at, _ in rec]
    lines += [""] + profile_run_c(spec["profile_run"])
    jobs = spec["jobs"]
    lines += ["/* The job file's vocabulary (native/bench/bench_jobs.c): X(name, MPI handle, bytes) and",
              " * X(name, MPI handle); expanded where mpi.h is included. */",
              "#define CT_JOB_DATATYPES(X) \\"]
    lines += [f'    X("{d["name"]}", {d["mpi"]}, {d["bytes"]}) \\' for d in jobs["datatypes"]]
    lines += ["", "#define CT_JOB_OPS(X) \\"]
    lines += [f'    X("{o["name"]}", {o["mpi"]}) \\' for o in jobs["ops"]]
    lines += ["", "#endif /* CT_FORMATS_H */", ""]
    return "\n".join(lines)


def py_module(spec: dict) -> str:
    text, trace = spec["text"], spec["trace"]
    head, comm, rec = layout(trace["header"], "header"), layout(trace["comm"], "comm"), layout(trace["record"], "record")
    fmt = lambda fields: "<" + "".join(TYPES[t][2] for _, t, _, _ in fields)  # noqa: E731
    names = lambda fields: "(\n" + "".join(f'    "{n}",\n' for n, *_ in fields) + ")"  # noqa: E731
    lines = [banner("gen_formats.py", comment="#", end="", source="native/spec/formats.toml").rstrip("\n"),
             '"""The file formats the C core and Python share (native/spec/formats.toml)."""', "",
             "# Tuning profiles and selection tables (colltune.textformat)",
             f"TEXT_MAX_LINE = {text['max_line']}",
             f"TEXT_MAX_FILE_BYTES = {text['max_file_bytes']}",
             f"TEXT_SHOW = {text['show']}", "",
             "# Learning-mode traces (colltune.learn.traces), version " + str(trace["version"]),
             f'TRACE_MAGIC = b"{trace["magic"]}"',
             f"TRACE_VERSION = {trace['version']}",
             f"TRACE_TICKS_PER_SECOND = {trace['ticks_per_second']}",
             f'TRACE_HEADER = "{fmt(head)}"  # struct format, {size_of(head)} bytes',
             f"TRACE_HEADER_FIELDS = {names(head)}",
             f'TRACE_COMM = "{fmt(comm)}"  # {size_of(comm)} bytes',
             f"TRACE_COMM_FIELDS = {names(comm)}",
             "# (field, numpy type, offset) of a record",
             "TRACE_RECORD_FIELDS: tuple[tuple[str, str, int], ...] = ("]
    lines += [f'    ("{n}", "{TYPES[t][3]}", {at}),' for n, t, at, _ in rec]
    lines += [")", f"TRACE_RECORD_BYTES = {size_of(rec)}",
              f"TRACE_STOPS = {tuple(trace['stops'])!r}",
              f"TRACE_OUTCOMES = {tuple(trace['outcomes'])!r}", "",
              "# Profiling runs (colltune.advise.profile_run): (field, type) of the point and pattern",
              "# lines after their first word; types: word, ptr (hex or \"(nil)\"), int, u64",
              f'PROFILE_RUN_MAGIC = "{spec["profile_run"]["magic"]}"',
              f"PROFILE_RUN_VERSION = {spec['profile_run']['version']}",
              "PROFILE_RUN_POINT: tuple[tuple[str, str], ...] = ("]
    lines += [f'    ("{f["name"]}", "{f["type"]}"),' for f in spec["profile_run"]["point"]]
    lines += [")", "PROFILE_RUN_PATTERN: tuple[tuple[str, str], ...] = ("]
    lines += [f'    ("{f["name"]}", "{f["type"]}"),' for f in spec["profile_run"]["pattern"]]
    lines += [")", "PROFILE_RUN_REQUEST: tuple[tuple[str, str], ...] = ("]
    lines += [f'    ("{f["name"]}", "{f["type"]}"),' for f in spec["profile_run"]["request"]]
    lines += [")", "",
              "# The job file vocabulary (colltune.measure.settings): datatype -> bytes, op names",
              "JOB_DATATYPE_SIZES = {"]
    lines += [f'    "{d["name"]}": {d["bytes"]},' for d in spec["jobs"]["datatypes"]]
    lines += ["}", "JOB_OPS = (" + ", ".join(f'"{o["name"]}"' for o in spec["jobs"]["ops"]) + ")", ""]
    return "\n".join(lines).replace("'", '"')


def outputs() -> dict[Path, str]:
    spec = tomllib.loads((SPEC_DIR / "formats.toml").read_text())
    return {GENERATED_DIR / "ct_formats.h": c_header(spec), PYTHON_OUT: py_module(spec)}


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__, "gen_formats.py", outputs)


if __name__ == "__main__":
    sys.exit(main())
