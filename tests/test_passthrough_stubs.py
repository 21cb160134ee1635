"""Pass-through of every generated C collective wrapper stays under 10 instructions (issue 33),
read from the built libcolltune.so (objdump).

The wrappers with arguments on the stack (more than six: MPI_I{gatherv,scatterv,alltoallv,
alltoallw}, the *_init of the v/w forms...) are assembly stubs on x86-64 (native/gen/gen_forms.py
STUB_PRELUDE): the flag test, `jne ct_slow_<name>` and `jmp PMPI_<name>@plt`, exactly; those of
a served row's started forms (MPI_Iallreduce, MPI_Ialltoallv...) go on to `ct_serve_<name>` when
only serving is on (SERVED_STUB_PRELUDE), without the C slow path. So are the
served blocking ones (MPI_Allgatherv, MPI_Alltoallv, MPI_Reduce...: gen_wrappers.py
SERVE_STUB_PRELUDE): the collective's byte of ct_active, `jne ct_serve_<name>`, the PMPI jump. GCC 12.2
compiled the C shape of the 10- and 11-argument ones to 12-15 instructions before the jump. The
stubs' exactness is test_every.py's (every function run with its results checked, pass-through,
counting, profiling, force, profile, learning) and test_overlap.py's.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from colltune.mpi import build

GEN = Path(__file__).resolve().parents[1] / "native" / "gen"
sys.path.insert(0, str(GEN))
import gen_forms  # noqa: E402
import gen_p2p  # noqa: E402
import gen_wrappers  # noqa: E402

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("objdump") is None,
                                reason="x86-64 stubs, read with objdump")
FUNCTION = re.compile(r"^[0-9a-f]+ <(\w+)>:$")
INSN = re.compile(r"^\s+[0-9a-f]+:\s+(.*?)\s*$")


def disassembly(so: Path) -> dict[str, list[str]]:
    """Exported function -> its instructions (objdump, no raw bytes)."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], capture_output=True,
                          text=True, check=True).stdout
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if m := FUNCTION.match(line):
            current = out.setdefault(m.group(1), [])
        elif current is not None and (m := INSN.match(line)):
            current.append(m.group(1))
    return out


def straight_path(insns: list[str]) -> list[str]:
    """The instructions up to the first unconditional jump or return (branches not taken)."""
    for i, insn in enumerate(insns):
        if insn.startswith(("jmp", "ret")):
            return insns[:i + 1]
    return insns


def wrapped(family: str) -> list[gen_forms.Function]:
    """The table's functions this library's build defines (the _c bindings need MPI 4: MPICH)."""
    return [f for f in gen_forms.functions() if not f.large or family == "mpich"]


def check_build(art: build.Artifacts) -> None:
    code = disassembly(art.libcolltune)
    fns = wrapped(art.family)
    stubbed = [f for f in fns if gen_forms.stubbed(f) and not gen_forms.served(f)]
    assert {"MPI_Igatherv", "MPI_Ialltoallw", "MPI_Alltoallw_init"} <= {f.mpi for f in stubbed}
    for fn in stubbed:
        insns = code[fn.mpi]
        if gen_forms.served_started(fn):
            check_served_started(fn, insns)
            continue
        assert len(insns) >= 3, (fn.mpi, insns)
        # ct_watch is ct_p2p_line's second byte (ct_hot.h)
        assert re.match(r"testb\s+\$0x1,0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <ct_p2p_line\+0x1>$", insns[0]), \
            (fn.mpi, insns[:3])
        assert re.match(rf"jne\s+[0-9a-f]+ <ct_slow_{fn.mpi}>$", insns[1]), (fn.mpi, insns[:3])
        assert re.match(rf"jmp\s+[0-9a-f]+ <P{fn.mpi}@plt>$", insns[2]), (fn.mpi, insns[:3])
    served = [f for f in fns if gen_forms.stubbed(f) and gen_forms.served(f)]
    assert {"MPI_Allgatherv", "MPI_Alltoallv", "MPI_Reduce", "MPI_Allgather"} <= {f.mpi for f in served}
    for fn in served:
        insns = code[fn.mpi]
        byte = gen_wrappers.index(fn.coll)
        at = f"ct_coll_line\\+0x{byte:x}" if byte else "ct_coll_line"   # ct_active (ct_hot.h)
        assert re.match(rf"cmpb\s+\$0x0,0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <{at}>$", insns[0]), (fn.mpi, insns[:3])
        assert re.match(rf"jne\s+[0-9a-f]+ <ct_serve_{fn.mpi[4:].lower()}>$", insns[1]), (fn.mpi, insns[:3])
        assert re.match(rf"jmp\s+[0-9a-f]+ <P{fn.mpi}@plt>$", insns[2]), (fn.mpi, insns[:3])
    for fn in fns:   # every C wrapper of a collective, stub or C
        path = straight_path(code[fn.mpi])
        assert len(path) < 10 and re.search(rf"<P{fn.mpi}(@plt|@Base)?>", path[-1]), (fn.mpi, path)
    check_p2p(code)
    check_polls(code)


def check_polls(code: dict[str, list[str]]) -> None:
    """The Test family (requests.c, ct_poll_passes): one straight path for pass-through and a
    profiled poll's light path, the function's countdown in ct_p2p_line counted down, its branch,
    the jump to the library: three instructions, the countdowns consecutive (Test .. Testsome)."""
    offsets = []
    for name in ("MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"):
        insns = code[name]
        m = re.match(r"subl\s+\$0x1,0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <ct_p2p_line\+0x([0-9a-f]+)>$", insns[0])
        assert m, (name, insns[:3])
        offsets.append(int(m.group(1), 16))
        assert re.match(rf"jle\s+[0-9a-f]+ <{name}\+0x[0-9a-f]+>$", insns[1]), (name, insns[:3])
        assert re.match(rf"jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <P{name}(@Base)?>$", insns[2]), \
            (name, insns[:3])
    assert offsets == [offsets[0] + 4 * i for i in range(4)] and offsets[-1] + 4 <= 0x38, offsets


def check_served_started(fn: gen_forms.Function, insns: list[str]) -> None:
    """A served row's MPI_I<coll> or MPI_<Coll>_init with stack arguments (gen_forms.py
    SERVED_STUB_PRELUDE): ct_start_watch 0 -> PMPI_<name> in three instructions; then
    CT_START_SERVE (2) alone -> ct_serve_<name> in four, not through the C slow path; anything
    else (counted, profiled) -> ct_slow_<name>."""
    flag = r"0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <ct_start_watch>$"
    assert len(insns) >= 6, (fn.mpi, insns)
    assert re.match(rf"cmpb\s+\$0x0,{flag}", insns[0]), (fn.mpi, insns[:6])
    assert re.match(rf"jne\s+[0-9a-f]+ <{fn.mpi}\+0x[0-9a-f]+>$", insns[1]), (fn.mpi, insns[:6])
    assert re.match(rf"jmp\s+[0-9a-f]+ <P{fn.mpi}@plt>$", insns[2]), (fn.mpi, insns[:6])
    assert re.match(rf"cmpb\s+\$0x2,{flag}", insns[3]), (fn.mpi, insns[:6])
    assert re.match(rf"je\s+[0-9a-f]+ <ct_serve_{fn.name}>$", insns[4]), (fn.mpi, insns[:6])
    assert re.match(rf"jmp\s+[0-9a-f]+ <ct_slow_{fn.mpi}>$", insns[5]), (fn.mpi, insns[:6])


def check_p2p(code: dict[str, list[str]]) -> None:
    """The profiling mode's point-to-point wrappers (gen_p2p.py): the ones with stack arguments
    (MPI_Sendrecv, 15 instructions before its PMPI jump as C; Isend, Irecv, Recv...) are stubs
    that test ct_p2p_on and pass through in three instructions, and take the light path
    themselves (their countdown in ct_p2p_line counted down, the light calls counted, the same
    jump: nine instructions, one line of data), leaving the rest to their timed path; the others
    stay C, under 5."""
    calls = [c for c in gen_p2p.load() if c.wrapped]
    stubbed = {f"MPI_{c.name}" for c in calls if gen_p2p.stubbed(c)}
    assert {"MPI_Sendrecv", "MPI_Isend", "MPI_Irecv", "MPI_Recv"} <= stubbed
    assert "MPI_Send" not in stubbed
    for c in calls:
        name = f"MPI_{c.name}"
        insns = code[name]
        if name in stubbed:
            rip, left = r"0x[0-9a-f]+\(%rip\)", rf"\s+# [0-9a-f]+ <ct_p2p_line\+0x{4 + 4 * calls.index(c):x}>$"
            assert re.match(r"cmpb\s+\$0x0,0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <ct_p2p_line>$", insns[0]), insns[:3]
            # (off: the je to the stub's last instruction, the jump to the library)
            assert re.match(rf"je\s+[0-9a-f]+ <{name}\+0x[0-9a-f]+>$", insns[1]), (name, insns[:9])
            assert re.match(rf"mov\s+{rip},%eax{left}", insns[2]), (name, insns[:9])
            assert re.match(r"cmp\s+\$0x1,%eax$", insns[3]), (name, insns[:9])
            assert re.match(rf"jle\s+[0-9a-f]+ <ct_slow_{name}>$", insns[4]), (name, insns[:9])
            assert re.match(r"sub\s+\$0x1,%eax$", insns[5]), (name, insns[:9])
            assert re.match(rf"mov\s+%eax,{rip}{left}", insns[6]), (name, insns[:9])
            assert re.match(r"addq\s+\$0x1,0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <ct_p2p_line\+0x38>$", insns[7]), \
                (name, insns[:9])
            assert re.match(rf"jmp\s+\*0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <P{name}(@Base)?>$", insns[8]), \
                (name, insns[:9])
        else:
            path = straight_path(insns)
            assert len(path) < 5 and re.search(rf"<P{name}(@plt|@Base)?>", path[-1]), (name, path)


def test_openmpi_wrappers_pass_through_in_few_instructions(openmpi_build: build.Artifacts) -> None:
    check_build(openmpi_build)


def test_mpich_wrappers_pass_through_in_few_instructions(mpich_build: build.Artifacts) -> None:
    check_build(mpich_build)


def test_stubs_are_the_wrappers_with_stack_arguments() -> None:
    """The exception is one rule of the generator: more than six arguments (x86-64 SysV passes
    six in registers); the generated file has the C wrapper as the fallback of each."""
    fns = {f.mpi: f for f in gen_forms.functions()}
    assert gen_forms.stubbed(fns["MPI_Igatherv"]) and gen_forms.stubbed(fns["MPI_Iallreduce"])
    assert not gen_forms.stubbed(fns["MPI_Ibarrier"]) and not gen_forms.stubbed(fns["MPI_Ibcast"])
    text = (GEN.parent / "generated" / "ct_form_wrappers.c").read_text()
    for name, fn in fns.items():
        if gen_forms.served(fn) or not gen_forms.stubbed(fn):
            continue
        stub = (f"CT_SERVED_STUB({name}, ct_serve_{fn.name})" if gen_forms.served_started(fn)
                else f"CT_STUB({name}, ")
        assert stub in text and f"CT_HIDDEN int ct_slow_{name}(" in text, name
        assert re.search(rf"#else\nint {name}\(", text), name
        # the served stub's target: hidden under the stubs, static in the C fallback
        assert (f"#if CT_STUBS\nCT_HIDDEN __attribute__((noinline)) int ct_serve_{fn.name}(" in text) \
            == gen_forms.served_started(fn), name
    assert {n for n, f in fns.items() if gen_forms.served_started(f) and gen_forms.stubbed(f)} >= {
        "MPI_Iallreduce", "MPI_Iallgatherv", "MPI_Ialltoallv", "MPI_Allreduce_init", "MPI_Ineighbor_allgather"}
    # the served blocking wrappers (the decision point's) by the same rule
    text = (GEN.parent / "generated" / "ct_wrappers.c").read_text()
    # (the profiled call path's rows in the hot text: ct_profrun.h's CT_HOT_TEXT)
    for coll in gen_wrappers.load().collectives:
        hot = coll.name in gen_wrappers.BY_ARGS
        stub = (f"CT_SERVE_STUB_IN({coll.mpi}, {gen_wrappers.index(coll)}, ct_serve_{coll.name}, "
                "CT_HOT_TEXT_SECTION)" if hot
                else f"CT_SERVE_STUB({coll.mpi}, {gen_wrappers.index(coll)}, ct_serve_{coll.name})")
        assert (stub in text) == (len(coll.args) > 6), coll.mpi
        wrapper = f"{'CT_HOT_TEXT ' if hot else ''}int {coll.mpi}("
        assert (f"#if !CT_SERVE_STUBS\n{wrapper}" in text) == (len(coll.args) > 6), coll.mpi
    # the point-to-point wrappers by the same rule, with the C wrapper as the fallback
    text = (GEN.parent / "generated" / "ct_p2p_wrappers.c").read_text()
    for c in gen_p2p.load():
        if not c.wrapped:
            continue
        name = f"MPI_{c.name}"
        assert gen_p2p.stubbed(c) == (len(c.arg_names) > 6), name
        hot = c.name in gen_p2p.HOT
        section = "CT_HOT_TEXT_SECTION" if hot else '".text"'
        # (every stubbed call has a countdown: Send .. Waitall, its index in the table)
        stub = f"CT_LIGHT_STUB_IN({name}, {gen_p2p.load().index(c)}, {section})"
        assert (stub in text) == gen_p2p.stubbed(c), name
        wrapper = f"{'CT_HOT_TEXT ' if hot else ''}int {name}("
        assert (f"#if !CT_STUBS\n{wrapper}" in text) == gen_p2p.stubbed(c), name
