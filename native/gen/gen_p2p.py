#!/usr/bin/env python3
"""Generate the point-to-point wrappers of the profiling mode from native/spec/p2p.toml.

Output: native/generated/ct_p2p_wrappers.c, for every call of the table an MPI_<name> that
  - goes straight to PMPI_<name> when profiling is off (one predictable branch on ct_p2p_on);
  - else notes its call site, times PMPI_<name> and hands (call, bytes, time) to
    ct_profrun_p2p (runtime/profcall.c), which records it without allocating.

`--check` writes nothing and exits 1 if the committed file is stale (the test suite runs it).
Stdlib only, like every generator.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gen_forms import REGISTER_ARGS, STUB_PRELUDE
from table import GENERATED_DIR, SPEC_DIR, banner, run


@dataclass(frozen=True)
class Call:
    name: str
    args: str
    count: str | None
    type: str | None
    wrapped: bool = True
    completes: str | None = None

    @property
    def arg_names(self) -> list[str]:
        """Parameter names in order: the last identifier of each parameter declaration."""
        return [re.findall(r"[A-Za-z_]\w*", p)[-1] for p in self.args.split(",")]

    @property
    def enum(self) -> str:
        return f"CT_P2P_{self.name.upper()}"


def load(path: Path = SPEC_DIR / "p2p.toml") -> list[Call]:
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    calls = [Call(c["name"], c["args"], c.get("count"), c.get("type"), c.get("wrapped", True),
                  c.get("completes")) for c in raw["call"]]
    for c in calls:
        if (c.count is None) != (c.type is None):
            raise ValueError(f"{path}: {c.name}: give both `count` and `type` or neither")
        for field in (c.count, c.type):
            if field is not None and field not in c.arg_names:
                raise ValueError(f"{path}: {c.name}: `{field}` is not an argument")
    return calls


def stubbed(c: Call) -> bool:
    """Its wrapper is gen_forms' assembly stub where CT_STUBS: it has arguments on the stack
    (MPI_Sendrecv's twelve: GCC loaded its six stack arguments into registers, saving three, before
    the test and stored them back for the tail jump, 15 instructions before PMPI_Sendrecv; Isend's,
    Irecv's and Recv's seventh cost one more load, and one more store on the profiled path)."""
    return len(c.arg_names) > REGISTER_ARGS


# The calls whose profiled path is in ct_profrun.h's CT_HOT_TEXT (next to the collectives' call
# path): the ones an iterative code repeats every step (OpenFOAM's halo exchanges: Isend, Irecv).
HOT = ("Send", "Recv", "Isend", "Irecv")


# The light path of repeated calls (runtime/requests.c, ct_light_call) in the stub itself: a call
# on it is the pass-through's compare of ct_p2p_line's first byte, its function's countdown (the
# same line) counted down and the light calls counted (ditto), then the jump to the library. It
# was the jump to ct_slow_MPI_<name> and there GCC's frame for the full path (six registers saved
# and restored around the test: two more lines of code a call, each a miss at OpenFOAM's rate of a
# call every few microseconds of the application's own work). A countdown at 1 (the function's
# sample) or below (shut: the light path not open, MPI_THREAD_MULTIPLE) goes to ct_slow_MPI_<name>,
# whose ct_light_call then says no. %eax is free at a call's entry (SysV: no argument in it for a
# prototyped function). The library's function is reached through its GOT entry, not the PLT (a
# line of code less a call, as CT_NOPLT in ct_profrun.h: MPI-1 functions only, bound at load).
# LEFT and CALLS: ct_hot.h's offsets, asserted below.
P2P_LINE_LEFT, P2P_LINE_CALLS = 4, 56
LIGHT_STUB_PRELUDE = [
    "#if CT_STUBS",
    "/* MPI_<name> with its light path (gen_p2p.py): `slot` is its countdown in ct_p2p_line.left. */",
    "#define CT_LIGHT_STUB_IN(name, slot, section)                                  \\",
    '    __asm__("\\t.pushsection " section "\\n\\t.globl " #name "\\n\\t.type " #name ", @function\\n" \\',
    '            "\\t.p2align 4\\n" #name ":\\n\\t.cfi_startproc\\n" CT_STUB_ENDBR             \\',
    '            "\\tcmpb $0, ct_p2p_line(%rip)\\n\\tje 1f\\n"                             \\',
    f'            "\\tmovl ct_p2p_line+{P2P_LINE_LEFT}+4*" #slot "(%rip), %eax\\n"                       \\',
    '            "\\tcmpl $1, %eax\\n\\tjle ct_slow_" #name "\\n\\tsubl $1, %eax\\n"              \\',
    f'            "\\tmovl %eax, ct_p2p_line+{P2P_LINE_LEFT}+4*" #slot "(%rip)\\n"                       \\',
    f'            "\\taddq $1, ct_p2p_line+{P2P_LINE_CALLS}(%rip)\\n"                             \\',
    '            "1:\\tjmp *P" #name "@GOTPCREL(%rip)\\n"                              \\',
    '            "\\t.cfi_endproc\\n\\t.size " #name ", .-" #name "\\n\\t.popsection\\n");',
    f"_Static_assert(offsetof(ct_hot_p2p_line, left) == {P2P_LINE_LEFT} && sizeof(int32_t) == 4,",
    '               "the light stubs count ct_p2p_line.left down at this offset (gen_p2p.py)");',
    f"_Static_assert(offsetof(ct_hot_p2p_line, calls) == {P2P_LINE_CALLS},",
    '               "the light stubs count ct_p2p_line.calls at this offset (gen_p2p.py)");',
    "#endif",
    "",
]


def wrapper(c: Call, index: int, light: bool) -> list[str]:
    """The profiled path is a separate function so that the pass-through path stays a compare and
    a tail jump (no register saves: the compiler would otherwise set up the profiled path's frame
    before the test). The profiled path has the wrapper's signature, so it is reached by a tail
    jump and its return address is the application's call site; passing the site as a seventh
    argument made GCC copy Isend's/Irecv's/Sendrecv's stack arguments before the test.
    Every call is counted; its time is taken for a sample (profcall.c), the end's call only for
    it (the record passed by value is four stores and a call on every call otherwise); the
    record is two words, returned in registers, and the count and type are passed as they are
    (begin compares them with the chain's last call's instead of sizing them). The chain is
    found inline (the wrapper's CFA its anchor: the same for the same stack depth at the call),
    and so is the common call, its chain's last call again and untimed
    (ct_profrun_p2p_again): counted, then a tail jump to the library; begin takes the others.
    Before all that, once the light path is open (requests.c), a call that is not its function's
    sample is only counted down (ct_light_call) and jumps to the library; the sample takes the
    full path and is noted at its point (ct_light_noted).
    Where `stubbed`, the stub (LIGHT_STUB_PRELUDE) tests ct_p2p_on, takes the light path itself
    and jumps to the timed path (ct_slow_MPI_<name>) or to the library, and the C wrapper is the
    fallback elsewhere."""
    args = ", ".join(c.arg_names)
    size = f"{c.count}, {c.type}" if c.count else "0, MPI_DATATYPE_NULL"
    hot = c.name in HOT
    at = " CT_HOT_TEXT" if hot else ""
    timed = f"static __attribute__((noinline)){at} int ct_timed_{c.name}({c.args})"
    head = [timed]
    if stubbed(c):
        section = "CT_HOT_TEXT_SECTION" if hot else '".text"'
        stub = ([f'_Static_assert({c.enum} == {index} && {c.enum} <= CT_P2P_WAITALL, '
                 f'"MPI_{c.name}\'s stub counts ct_p2p_line.left[{index}] down (ct_p2p_slot)");',
                 f"CT_LIGHT_STUB_IN(MPI_{c.name}, {index}, {section})"] if light
                else [f'CT_STUB_IN(MPI_{c.name}, "cmpb $0, ct_p2p_line(%rip)", {section})'])
        head = [
            "#if CT_STUBS",
            *stub,
            f"CT_HIDDEN int ct_slow_MPI_{c.name}({c.args});",
            f"CT_HIDDEN{at} int ct_slow_MPI_{c.name}({c.args})",
            "#else",
            timed,
            "#endif",
        ]
    fallback = [
        f"{at.strip()} int MPI_{c.name}({c.args})".strip(),
        "{",
        "    if (CT_LIKELY(!ct_p2p_on))",
        f"        return PMPI_{c.name}({args});",
        f"    return ct_timed_{c.name}({args});",
        "}",
        "",
    ]
    if stubbed(c):
        fallback = ["#if !CT_STUBS", *fallback[:-1], "#endif", ""]
    return [
        *head,
        "{",
        f"    if (CT_LIKELY(ct_light_call({c.enum})))",
        f"        return PMPI_{c.name}({args});",
        f"    const int sampled = ct_light_sample({c.enum});",
        "    uint64_t t_in = ct_own_entry();",
        "    const void *chain = ct_profchain_shared(__builtin_return_address(0), __builtin_dwarf_cfa());",
        f"    if (CT_LIKELY(!sampled && ct_profrun_p2p_again({c.enum}, chain, {size})))",
        f"        return PMPI_{c.name}({args});",
        f"    ct_p2p_rec rec = ct_profrun_p2p_begin({c.enum}, chain, {size}, t_in);",
        "    if (CT_UNLIKELY(sampled))",
        f"        ct_light_noted({c.enum}, (ct_point *)rec.slot);",
        "    if (CT_LIKELY(rec.t0 == 0))",
        f"        return PMPI_{c.name}({args});",
        f"    int rc = PMPI_{c.name}({args});",
        "    ct_profrun_p2p_end(rec);",
        "    return rc;",
        "}",
        "",
        *fallback,
    ]


def generate() -> str:
    calls = load()
    lines = [banner("gen_p2p.py", source="native/spec/p2p.toml").rstrip("\n"), ""]
    lines += [
        "/* Point-to-point calls timed by the profiling mode (runtime/profcall.c). */",
        "#include <mpi.h>",
        "#include <stdint.h>",
        "",
        '#include "../runtime/ct_profrun_impl.h"',
        '#include "../runtime/ct_runtime.h"',
        '#include "../runtime/ct_watch.h"',
        "",
        *STUB_PRELUDE,
        *LIGHT_STUB_PRELUDE,
        f"_Static_assert(CT_P2P_COUNT == {len(calls)}, \"ct_p2p_calls.h is stale: run native/gen/gen_p2p.py\");",
        "",
        "const char *const ct_p2p_names[CT_P2P_COUNT] = {",
        *(f'    [{c.enum}] = "{c.name}",' for c in calls),
        "};",
        "",
    ]
    # the functions with a countdown (ct_hot.h's ct_p2p_slot): Send .. Waitall, in the table's order
    last_light = [c.name for c in calls].index("Waitall")
    for index, c in enumerate(calls):
        if c.wrapped:
            lines += wrapper(c, index, index <= last_light)
    return "\n".join(lines).rstrip("\n") + "\n"


def enum_header() -> str:
    """The enum of the calls (ct_p2p_calls.h, included by runtime/ct_profrun.h)."""
    calls = load()
    body = "".join(f"    {c.enum},\n" for c in calls)
    return f"typedef enum ct_p2p_call {{\n{body}    CT_P2P_COUNT\n}} ct_p2p_call;\n"


def outputs() -> dict[Path, str]:
    return {GENERATED_DIR / "ct_p2p_wrappers.c": generate(),
            GENERATED_DIR / "ct_p2p_calls.h": banner("gen_p2p.py", source="native/spec/p2p.toml")
            + "#ifndef CT_P2P_CALLS_H\n#define CT_P2P_CALLS_H\n\n" + enum_header()
            + "\n#endif /* CT_P2P_CALLS_H */\n"}


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__, "gen_p2p.py", outputs)


if __name__ == "__main__":
    sys.exit(main())
