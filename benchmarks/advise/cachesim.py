#!/usr/bin/env python3
"""The profiling run's cache footprint (issue 34, fourteenth round): rank 0 of a 2-rank run under
callgrind's cache simulation, plain and profiled with one or more builds of libcolltune, and per
object its instructions and L1 misses (instruction reads, data reads, data writes).

The wall-time cost of OpenFOAM's profiled run (3.7% in session 13's window) is several times its
instruction share (0.95%): after the application's own work between two MPI calls, every cache
line the call path reads is an L1 miss, and each line it brings in evicts one the application or
the MPI library then misses again. Instruction counts do not weigh that; the simulation does,
whatever the machine's load. The geometry is fixed (this machine's L1d 48 KB 12-way, L2 as the
"last level": 2 MB 16-way; L1i valgrind's 32 KB 8-way), so figures compare across runs.

    bash benchmarks/advise/openfoam.sh OUT prepare 100
    nice -n 19 .venv/bin/python benchmarks/advise/cachesim.py OUT --app openfoam --steps 100 \\
        --lib plain --lib new=/path/libcolltune.so [--lib old=/path/other.so]
    nice -n 19 .venv/bin/python benchmarks/advise/cachesim.py OUT --app openfoam --steps 100 \\
        --env COLLTUNE_PROFILE_RUN_SAMPLE=0 --lib main=MAIN.so --lib new=NEW.so   # two call paths alone
    nice -n 19 .venv/bin/python benchmarks/advise/cachesim.py OUT --app lammps --steps 250 --lib plain --lib new=...
    .venv/bin/python benchmarks/advise/cachesim.py OUT --app openfoam --read   # the table again

The libraries must be built for Debian's Open MPI 4.1 (the applications' MPI; a build for the
embedded Open MPI 5 has the same soname and would load another MPI into them). Writes
OUT/cachesim-APP-NAME.out (callgrind) and OUT/cachesim-APP.json. "Others" is the misses of the
application's objects (all but libcolltune and the MPI library's, whose polling depends on
timing), against the plain run: what the call path's lines cost the application afterwards (the
lines it evicted). It moves by ~100,000 from run to run (libc's malloc and memcpy serve the MPI
library too); libcolltune's own misses are the steady figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEOMETRY = ["--I1=32768,8,64", "--D1=49152,12,64", "--LL=2097152,16,64"]
EVENTS = ["Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"]
MPI_OBJECTS = ("mca_", "libmpi", "libopen-", "libpmix", "libhwloc", "libevent", "libmca_")


def rank_script(out: Path, app: str, steps: int) -> tuple[Path, list[str], dict[str, str], str]:
    """The work directory, the command each rank runs, its environment and the script's set-up
    lines (valgrind must start the program itself: it does not follow an exec)."""
    if app == "openfoam":
        work = out / "cavity"
        if not (work / "processor0").is_dir():
            raise SystemExit(f"{work}: no decomposed case; run `bash benchmarks/advise/openfoam.sh {out} "
                             f"prepare {steps}` first")
        return work, ["icoFoam", "-parallel"], {}, "source /usr/share/openfoam/etc/bashrc 2>/dev/null\n"
    work = out / "lammps"
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "in.lj", work / "in.lj")
    return work, ["/usr/bin/lmp", "-in", "in.lj", "-var", "steps", str(steps), "-screen", "none", "-log",
                  "log.cachesim"], {"OMP_NUM_THREADS": "1"}, ""


def result_line(app: str, text: str) -> str:
    """The application's result, the same in every run (the profiling never changes results)."""
    if app == "openfoam":
        lines = [l for l in text.splitlines() if "continuity errors" in l]
    else:
        lines = [l for l in text.splitlines() if re.match(r"^\s*\d+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s*$", l)]
    return lines[-1].strip() if lines else ""


def run(out: Path, app: str, steps: int, name: str, lib: str | None, instr: bool = False,
        env: dict[str, str] | None = None) -> dict:
    work, cmd, env_extra, setup = rank_script(out, app, steps)
    env_extra = {**env_extra, **(env or {})}
    cg = out / f"cachesim-{app}-{name}.out"
    prof = out / f"cachesim-{app}-{name}-prof"
    shutil.rmtree(prof, ignore_errors=True)
    if app == "openfoam":
        for d in work.glob("processor*/[1-9]*"):
            shutil.rmtree(d, ignore_errors=True)
        for d in work.glob("processor*/0.*"):
            shutil.rmtree(d, ignore_errors=True)
    script = work / f"cachesim-{name}.sh"
    valgrind = ["valgrind", "--tool=callgrind", "--cache-sim=yes", *GEOMETRY, f"--callgrind-out-file={cg}",
                *(["--dump-instr=yes"] if instr else [])]
    script.write_text("#!/bin/bash\n" + setup
                      + (f"export LD_PRELOAD={lib} COLLTUNE_PROFILE_RUN={prof}\n" if lib else "")
                      + "".join(f"export {k}={v}\n" for k, v in env_extra.items())
                      + f'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec {" ".join(valgrind)} '
                      + " ".join(f"'{c}'" for c in cmd) + '; fi\nexec ' + " ".join(f"'{c}'" for c in cmd) + "\n")
    script.chmod(0o755)
    log = subprocess.run(["mpirun.openmpi", "--allow-run-as-root", "-np", "2", "--bind-to", "core", str(script)],
                         cwd=work, capture_output=True, text=True, timeout=7200)
    text = log.stdout + log.stderr
    if app == "lammps" and (work / "log.cachesim").exists():
        text += (work / "log.cachesim").read_text()
        (work / "log.cachesim").unlink()
    if log.returncode != 0:
        raise SystemExit(f"{name}: the run failed ({log.returncode}):\n{text[-3000:]}")
    return {"name": name, "lib": lib, "result": result_line(app, text), "objects": objects(cg)}


def objects(cg: Path) -> dict[str, list[int]]:
    """Exclusive events per object, summed from the callgrind file's cost lines: exact (the objects
    sum to its `totals:`). (Until session 15 this summed callgrind_annotate's function rows that
    name an object: a function's lines inlined from a header (`fi=`/`fe=`) make rows without the
    object, so libcolltune's call path, inlined from ct_profrun_impl.h, was undercounted: on a
    LAMMPS run 1,028,727 of its 1,305,148 instructions, on OpenFOAM ~43% of them.)"""
    per: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    positions, obj, call_cost = 1, None, False
    for line in cg.read_text(errors="replace").splitlines():
        if line.startswith("positions:"):
            positions = len(line.split()) - 1
        elif m := re.match(r"ob=\((\d+)\)(?: (.*))?", line):
            if m[2]:
                names[m[1]] = os.path.basename(m[2].strip())
            obj = names[m[1]]
        elif m := re.match(r"cob=\((\d+)\)(?: (.*))?", line):
            if m[2]:
                names[m[1]] = os.path.basename(m[2].strip())
        elif line.startswith("calls="):
            call_cost = True   # the next cost line is the call's inclusive cost, not this object's
        elif line[:1].isdigit() or line[:1] in "+-*":
            if call_cost:
                call_cost = False
                continue
            values = line.split()[positions:]   # trailing zero events are left out
            if obj is None or not values:
                continue
            row = per.setdefault(obj, [0] * len(EVENTS))
            for i, v in enumerate(values[:len(EVENTS)]):
                row[i] += int(v)
    return per


def summary(rows: list[dict]) -> list[dict]:
    plain = next((r for r in rows if r["lib"] is None), None)
    out = []
    for r in rows:
        objs = r["objects"]
        mine = objs.get(os.path.basename(r["lib"]), [0] * len(EVENTS)) if r["lib"] else [0] * len(EVENTS)
        ev = dict(zip(EVENTS, mine))
        others = {}
        if plain is not None and r is not plain:
            for i, e in enumerate(EVENTS):
                if e in ("I1mr", "D1mr", "D1mw"):
                    def total(o: dict[str, list[int]], lib: str | None) -> int:
                        return sum(v[i] for k, v in o.items() if not k.startswith(MPI_OBJECTS)
                                   and not (lib and k == os.path.basename(lib)))
                    others[e] = total(objs, r["lib"]) - total(plain["objects"], None)
        # overhead.py --cost's share: the call path's instructions (libcolltune's and the unwinder's,
        # libgcc_s) over the application's own (outside the MPI library, libcolltune, libgcc_s)
        unwinder = sum(v[0] for k, v in objs.items() if k.startswith("libgcc_s"))
        application = sum(v[0] for k, v in objs.items() if not k.startswith(MPI_OBJECTS + ("libgcc_s",))
                          and not (r["lib"] and k == os.path.basename(r["lib"])))
        out.append({"name": r["name"], "result": r["result"], "libcolltune": ev,
                    "unwinder_ir": unwinder, "application_ir": application,
                    "share_of_application": (ev["Ir"] + unwinder) / application if r["lib"] else 0.0,
                    "libcolltune_l1_misses": ev["I1mr"] + ev["D1mr"] + ev["D1mw"],
                    "others_extra": others, "others_extra_l1_misses": sum(others.values()) if others else None})
    return out


def show(app: str, rows: list[dict]) -> None:
    print(f"{app}, rank 0 (callgrind, I1 32K/8, D1 48K/12, LL 2M/16):")
    print(f"  {'run':10} {'Ir':>12} {'I1mr':>9} {'D1mr':>9} {'D1mw':>9} {'L1 misses':>10} {'others +':>10} "
          f"{'share':>7}")
    for s in summary(rows):
        ev = s["libcolltune"]
        extra = s["others_extra_l1_misses"]
        print(f"  {s['name']:10} {ev['Ir']:>12,} {ev['I1mr']:>9,} {ev['D1mr']:>9,} {ev['D1mw']:>9,} "
              f"{s['libcolltune_l1_misses']:>10,} {'' if extra is None else format(extra, ','):>10} "
              f"{100 * s['share_of_application']:>6.2f}%")
        if s["others_extra"]:
            print(f"  {'':10} others: " + ", ".join(f"{k} {v:+,}" for k, v in s["others_extra"].items()))
    results = {r["result"] for r in rows if r["result"] != "(earlier run)"}
    if results:
        print(f"  results: {'identical' if len(results) == 1 else 'DIFFER'}: {sorted(results)[0]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--app", choices=["openfoam", "lammps"], required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lib", action="append", default=[],
                    help="`plain` (no preload) or NAME=PATH of a libcolltune built for Debian's Open MPI")
    ap.add_argument("--read", action="store_true", help="print OUT/cachesim-APP.json again")
    ap.add_argument("--env", action="append", default=[],
                    help="K=V for every run, e.g. COLLTUNE_PROFILE_RUN_SAMPLE=0: no sampling "
                         "synchronisations, whose number follows the run's timing under valgrind "
                         "(the budget), so that two builds' call paths compare alone")
    ap.add_argument("--instr", action="store_true",
                    help="events per instruction too (callgrind --dump-instr=yes: which load misses)")
    ap.add_argument("--from", dest="earlier", action="append", default=[],
                    help="NAME=CALLGRIND_FILE[,LIB]: an earlier run of the same case and geometry (its "
                         "result not checked), e.g. `plain=OUT/cachesim-openfoam-plain.out`")
    a = ap.parse_args()
    js = a.out / f"cachesim-{a.app}.json"
    if a.read:
        show(a.app, json.loads(js.read_text())["runs"])
        return
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for spec in a.earlier:
        name, _, rest = spec.partition("=")
        cg, _, lib = rest.partition(",")
        if not Path(cg).is_file():
            raise SystemExit(f"--from {spec}: no callgrind file {cg}")
        rows.append({"name": name, "lib": lib or None, "result": "(earlier run)", "objects": objects(Path(cg))})
    for spec in a.lib:
        name, _, path = spec.partition("=")
        if name != "plain" and not Path(path).is_file():
            raise SystemExit(f"--lib {spec}: give NAME=PATH of a built libcolltune.so (or `plain`)")
        rows.append(run(a.out, a.app, a.steps, name, None if name == "plain" else str(Path(path).resolve()),
                        a.instr, dict(e.split("=", 1) for e in a.env)))
        print(f"  {name}: done, result {rows[-1]['result']!r}", flush=True)
    js.write_text(json.dumps({"app": a.app, "steps": a.steps, "geometry": GEOMETRY, "env": a.env, "runs": rows,
                              "summary": summary(rows)}, indent=1) + "\n")
    show(a.app, rows)


if __name__ == "__main__":
    main()
