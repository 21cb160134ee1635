#!/usr/bin/env python3
"""Generate both sides of the measurement driver's command line from native/spec/driver.toml.

Outputs
  native/generated/ct_driver_options.h    option table and defaults of colltune-bench (C)
  native/generated/ct_driver_record.h     the format of its raw records (C)
  src/colltune/measure/driver_options.py  StopSettings fields, driver flags, click options (Python)

`--check` writes nothing and exits 1 if an output is stale (the test suite runs it).
Stdlib only, like every generator.
"""

from __future__ import annotations

import json
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

from table import GENERATED_DIR, SPEC_DIR, banner, run

ROOT = SPEC_DIR.parent.parent
PY_OUT = ROOT / "src" / "colltune" / "measure" / "driver_options.py"
C_OUT = GENERATED_DIR / "ct_driver_options.h"
KINDS = ("double", "int", "u64", "path", "methods", "sync", "metric")
C_KIND = {k: f"CT_OPT_{k.upper()}" for k in KINDS}


@dataclass(frozen=True)
class Option:
    name: str
    kind: str
    field: str
    default: str
    help: str
    ge: float | None = None
    gt: float | None = None
    stop: str | None = None
    cli: str | None = None


@dataclass(frozen=True)
class RecordField:
    name: str
    format: str
    dtype: str
    help: str


@dataclass(frozen=True)
class Line:
    type: str
    keys: list[str]
    help: str


def load_lines(path: Path = SPEC_DIR / "driver.toml") -> list[Line]:
    with open(path, "rb") as f:
        lines = [Line(**entry) for entry in tomllib.load(f)["line"]]
    types = [entry.type for entry in lines]
    for entry in lines:
        if types.count(entry.type) != 1 or "type" in entry.keys or len(set(entry.keys)) != len(entry.keys):
            raise ValueError(f"{path}: line {entry.type}: duplicate type or key, or a key named type")
    return lines


def load_records(path: Path = SPEC_DIR / "driver.toml") -> list[RecordField]:
    with open(path, "rb") as f:
        return [RecordField(**r) for r in tomllib.load(f)["record"]]


def load(path: Path = SPEC_DIR / "driver.toml") -> list[Option]:
    with open(path, "rb") as f:
        options = [Option(**o) for o in tomllib.load(f)["option"]]
    names = [o.name for o in options]
    for o in options:
        if o.kind not in KINDS or names.count(o.name) != 1 or (o.ge is not None and o.gt is not None):
            raise ValueError(f"{path}: option {o.name}: bad kind, duplicate name or both ge and gt")
        if o.stop is None and o.cli is not None:
            raise ValueError(f"{path}: option {o.name}: only stopping settings are offered as cli options")
    return options


# --- C -----------------------------------------------------------------------------------------

def _c_default(o: Option) -> str:
    if o.kind == "path":
        return f"    st->{o.field} = NULL;"
    if o.kind == "methods":
        return f'    (void)ct_stop_parse_methods("{o.default}", &st->{o.field});'
    if o.kind == "sync":
        return f'    (void)ct_sync_parse("{o.default}", &st->{o.field});'
    if o.kind == "metric":
        return f"    st->{o.field} = {int(o.default == 'makespan')};"
    if o.kind == "u64":
        return f"    st->{o.field} = {int(o.default)}ull;"
    if o.kind == "int":
        return f"    st->{o.field} = {int(o.default)};"
    return f"    st->{o.field} = {float(o.default or 0)!r};"


def generate_c(options: list[Option], records: list[RecordField]) -> str:
    rows = []
    for o in options:
        bound = o.gt if o.gt is not None else o.ge
        rows.append(f'    {{"{o.name}", {C_KIND[o.kind]}, offsetof(ct_bench_settings, {o.field}), '
                    f'{int(bound is not None)}, {int(o.gt is not None)}, {float(bound or 0)!r}}},')
    defaults = "\n".join(_c_default(o) for o in options)
    usage = "\n".join(f'    "  --{o.name:<20} {o.help}\\n"' for o in options)
    return (banner("gen_driver.py", source="native/spec/driver.toml")
            + f'''
/* The options of `colltune-bench run`, one row each; bench_main.c parses them with this table.
 * Included once, by bench_main.c, after bench.h. */
#ifndef CT_DRIVER_OPTIONS_H
#define CT_DRIVER_OPTIONS_H

#include <stddef.h>

typedef enum ct_opt_kind {{
    {", ".join(C_KIND[k] for k in KINDS)}
}} ct_opt_kind;

typedef struct ct_driver_option {{
    const char *name;   /* --name */
    ct_opt_kind kind;
    size_t offset;      /* of the member in ct_bench_settings */
    int bounded;        /* value must be >= bound (or > bound when open) */
    int open;
    double bound;
}} ct_driver_option;

static const ct_driver_option ct_driver_options[] = {{
{chr(10).join(rows)}
}};

#define CT_NUM_DRIVER_OPTIONS (sizeof ct_driver_options / sizeof ct_driver_options[0])

static const char ct_driver_usage[] =
{usage};

static void ct_driver_defaults(ct_bench_settings *st)
{{
{defaults}
}}

#endif /* CT_DRIVER_OPTIONS_H */
''')


# --- Python ------------------------------------------------------------------------------------

def _py_type(o: Option) -> str:
    if o.kind == "methods":
        return 'list[Literal["rse", "cov_mean", "cov_median", "nrep1"]]'
    base = {"double": "float", "int": "int"}[o.kind]
    return f"{base} | None" if o.default == "" else base


def _py_default(o: Option) -> str:
    if o.kind == "methods":
        return f"default_factory=lambda: {json.dumps([m for m in o.default.split(',') if m != 'fixed'])}"
    if o.default == "":
        return "None"
    return str(float(o.default)) if o.kind == "double" else str(int(o.default))


def generate_record_h(records: list[RecordField]) -> str:
    fields = "\n".join(f" *   {r.name:<12} {r.help}" for r in records)
    return (banner("gen_driver.py", source="native/spec/driver.toml") + f'''
#ifndef CT_DRIVER_RECORD_H
#define CT_DRIVER_RECORD_H

/* One raw record per repetition (`R,` line); printf arguments in this order:
{fields}
 */
#define CT_RECORD_FORMAT "R,{",".join(r.format for r in records)}\\n"

#endif /* CT_DRIVER_RECORD_H */
''')


def _py_line(entry: Line) -> str:
    keys = textwrap.fill(", ".join(json.dumps(k) for k in entry.keys) + ",", width=98,
                         initial_indent=" " * 8, subsequent_indent=" " * 8)
    return f"    # {entry.help}\n    {json.dumps(entry.type)}: (\n{keys}\n    ),"


def generate_py(options: list[Option], records: list[RecordField], lines: list[Line]) -> str:
    stop = [o for o in options if o.stop]
    fields = []
    for o in stop:
        bounds = (f", gt={o.gt!r}" if o.gt is not None else "") + (f", ge={o.ge!r}" if o.ge is not None else "")
        if o.kind == "int":
            bounds = bounds.replace(".0", "")
        fields.append(f"    {o.stop}: {_py_type(o)} = Field(\n        {_py_default(o)}{bounds},\n"
                      f"        description={json.dumps(o.help)})")
    flags = "\n".join(f"    ({json.dumps(o.stop)}, {json.dumps('--' + o.name)}, {json.dumps(o.kind)})," for o in stop)
    cli = "\n".join(
        f"    CliOption({json.dumps('--' + o.cli)}, {json.dumps(o.stop)}, {({'double': 'float', 'int': 'int'})[o.kind]},\n"
        f"              {json.dumps(o.help + (f' ({o.default})' if o.default else ''))}),"
        for o in stop if o.cli)
    return ('"""' + f'''The front end's half of the driver's command line (native/spec/driver.toml).

Generated by native/gen/gen_driver.py from native/spec/driver.toml.
Do not edit: change the table and run `make generate`.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field


class StopFields(BaseModel):
    """When a job has been measured enough (PGMPI section 4.2, PGMPITuneLib section 4.2)."""

    model_config = ConfigDict(extra="forbid")

{chr(10).join(fields)}


# (StopSettings field, driver flag, kind) in table order: what the front end passes.
DRIVER_FLAGS: tuple[tuple[str, str, str], ...] = (
{flags}
)


class CliOption(NamedTuple):
    flag: str
    field: str
    type: type
    help: str


# The raw record of one repetition (`R,` lines), in the driver's order, and how to parse it.
RECORD_COLUMNS: tuple[str, ...] = (
{chr(10).join(f"    {json.dumps(r.name)}," for r in records)}
)
RECORD_DTYPES: dict[str, str] = {{
{chr(10).join(f"    {json.dumps(r.name)}: {json.dumps(r.dtype)}," for r in records)}
}}


# The JSON lines of `colltune-bench run`: for each "type", its other keys in the driver's order.
LINE_KEYS: dict[str, tuple[str, ...]] = {{
{chr(10).join(_py_line(entry) for entry in lines)}
}}


# The stopping settings offered by `colltune bench`, `check` and `validate`.
CLI_OPTIONS: tuple[CliOption, ...] = (
{cli}
)
''')


def outputs() -> dict[Path, str]:
    options, records, lines = load(), load_records(), load_lines()
    return {C_OUT: generate_c(options, records),
            GENERATED_DIR / "ct_driver_record.h": generate_record_h(records),
            PY_OUT: generate_py(options, records, lines)}


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__, "gen_driver.py", outputs)


if __name__ == "__main__":
    sys.exit(main())
