#!/usr/bin/env python3
"""The learning mode's cost per collective call on a CFD code (issue 33): OpenFOAM's icoFoam
(Debian's openfoam, built against Debian's Open MPI 4.1.4) on the lid-driven cavity of
openfoam-examples (40x40 cells, 2 subdomains: benchmarks/advise/openfoam.sh's case), rank 0 under
callgrind, with

  uniform-spent  COLLTUNE_SELECT=- (the uniform table, `colltune run --learn -`) whose
                 exploration budget is spent from the first call (COLLTUNE_SELECT_BUDGET=0)
  uniform        COLLTUNE_SELECT=- with its default budget (1000 explored calls per
                 communicator): explored at first, spent during the run
  exploit        a table whose every cell exploits `default` (`unlisted exploit`)
  pass           libcolltune preloaded, nothing set (the pass-through floor)

Instructions per collective call = the inclusive cost of libcolltune's MPI_<collective> wrappers
minus the inclusive cost of the PMPI_<collective> calls (the library's own work), over the
collective calls of rank 0, counted by a counting run (COLLTUNE_VERBOSE=1) of the same case:
apps.py's method (benchmarks/learning_runtime/README.md), load-independent. Every run's last
continuity line must equal the plain run's (the learning mode never changes results).

    .venv/bin/python benchmarks/learning_runtime/openfoam.py OUT [--steps 20] [--modes ...]
    .venv/bin/python benchmarks/learning_runtime/openfoam.py OUT --reread   # figures again from OUT

Writes OUT/openfoam-<mode>.callgrind and OUT/openfoam-learning.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from colltune.interposer import counted_functions
from colltune.mpi import build, libraries

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import apps  # noqa: E402  (its annotate: costs by object and function)

CAVITY = Path("/usr/share/doc/openfoam-examples/examples/incompressible/icoFoam/cavity/cavity")
BASHRC = "/usr/share/openfoam/etc/bashrc"
MODES = ("uniform-spent", "exploit", "uniform", "pass")
DECOMPOSE = """FoamFile { version 2.0; format ascii; class dictionary; object decomposeParDict; }
numberOfSubdomains 2;
method simple;
coeffs { n (2 1 1); }
simpleCoeffs { n (2 1 1); delta 0.001; }
"""


def case(out: Path, steps: int) -> Path:
    """openfoam.sh's cavity: 40x40 cells, `steps` time steps of 0.0005, 2 subdomains."""
    work = out / "cavity"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(CAVITY, work)
    mesh = work / "system" / "blockMeshDict"
    mesh.write_text(mesh.read_text().replace("(20 20 1)", "(40 40 1)"))
    ctl = work / "system" / "controlDict"
    text = ctl.read_text()
    for key, value in (("endTime", f"{steps * 0.0005:g}"), ("deltaT", "0.0005"), ("writeInterval", "100000")):
        text = re.sub(rf"^{key} .*$", f"{key:<16}{value};", text, flags=re.M)
    ctl.write_text(text)
    (work / "system" / "decomposeParDict").write_text(DECOMPOSE)
    subprocess.run(["bash", "-c", f"source {BASHRC} 2>/dev/null; blockMesh > log.blockMesh 2>&1 && "
                    "decomposePar -force > log.decompose 2>&1"], cwd=work, check=True)
    return work


def run(work: Path, env: dict[str, str], callgrind: Path | None = None) -> subprocess.CompletedProcess[str]:
    """icoFoam on 2 ranks, rank 0 under callgrind where asked; the environment on both ranks."""
    script = work / "rank.sh"
    wrap = f"valgrind --tool=callgrind --callgrind-out-file={callgrind} " if callgrind else ""
    script.write_text("#!/bin/bash\n"
                      f"source {BASHRC} 2>/dev/null\n"
                      f'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec {wrap}icoFoam -parallel; fi\n'
                      "exec icoFoam -parallel\n")
    script.chmod(0o755)
    for d in work.glob("processor*/0.*"):
        shutil.rmtree(d)
    flags = [x for k, v in env.items() for x in ("-x", f"{k}={v}")]
    return subprocess.run(["mpirun.openmpi", "--allow-run-as-root", "-np", "2", *flags, str(script)], cwd=work,
                          capture_output=True, text=True, timeout=3600, check=True)


def continuity(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if "continuity errors" in line]
    if not lines:
        raise SystemExit(f"icoFoam printed no continuity line:\n{stdout[-2000:]}")
    return lines[-1].strip()


def mode_env(mode: str, so: Path, exploit: Path) -> dict[str, str]:
    env = {"LD_PRELOAD": str(so)}
    if mode.startswith("uniform"):
        env["COLLTUNE_SELECT"] = "-"
    if mode == "uniform-spent":
        env["COLLTUNE_SELECT_BUDGET"] = "0"
    if mode == "exploit":
        env["COLLTUNE_SELECT"] = str(exploit)
    return env


def per_call(cg: Path, calls: dict[str, int]) -> dict[str, object]:
    """Instructions per collective call (wrappers minus the library's inclusive cost, which also
    counts the polling of the PMPI_Allreduce calls libcolltune makes at MPI_Init: a few
    instructions per call that vary from run to run), per function; libcolltune's own
    instructions over the whole run per call (exclusive, MPI_Init's included: the same code path
    gives the same figure) and its costliest functions per call."""
    inc, exc = apps.annotate(cg, True), apps.annotate(cg, False)
    total = sum(calls.values())
    by_fn = {fn: (inc.get(f"libcolltune:{fn}", 0) - inc.get(f"other:P{fn}", 0)) / n for fn, n in calls.items() if n}
    own = sum(v for k, v in exc.items() if k.startswith("libcolltune:")) / total
    return {"per_call": round(sum(by_fn[fn] * n for fn, n in calls.items() if n) / total, 1),
            "by_function": {k: round(v, 1) for k, v in by_fn.items()},
            "libcolltune_per_call": round(own, 1),
            "libcolltune": apps.heaviest(exc, total, lambda k, v: k.startswith("libcolltune:"), 10)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--reread", action="store_true", help="read OUT's callgrind files again, run nothing")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.reread:
        rows = json.loads((out / "openfoam-learning.json").read_text())
        for row in rows:
            row.update(per_call(out / f"openfoam-{row['mode']}.callgrind", row["calls"]))
        (out / "openfoam-learning.json").write_text(json.dumps(rows, indent=1))
        return
    lib = libraries.resolve("/usr/bin/mpicc.openmpi")
    so = build.ensure_built(lib).libcolltune
    from colltune.measure import proof
    proof.ensure_proven(lib)   # the learning mode serves nothing unproven (its members: docs/select.md)
    exploit = out / "exploit.select"
    exploit.write_text("colltune-select 1\nunlisted exploit\nend\n")
    work = case(out, args.steps)
    plain = continuity(run(work, {}).stdout)
    counted = run(work, {"LD_PRELOAD": str(so), "COLLTUNE_VERBOSE": "1"})
    calls = {fn: row[0] for fn, row in counted_functions(counted.stderr).items()}
    if continuity(counted.stdout) != plain or not calls:
        raise SystemExit(f"the counting run differs or counted nothing:\n{counted.stderr[-3000:]}")
    print(f"OpenFOAM icoFoam, {args.steps} steps, rank 0's collective calls: {calls}", flush=True)
    rows = []
    for mode in args.modes.split(","):
        cg = out / f"openfoam-{mode}.callgrind"
        res = run(work, mode_env(mode, so, exploit), callgrind=cg)
        same = continuity(res.stdout) == plain
        row = {"mode": mode, **per_call(cg, calls), "result_as_plain": same, "calls": calls, "steps": args.steps}
        rows.append(row)
        print(f"  {mode}: {row['per_call']} instructions per collective call {row['by_function']}; libcolltune's "
              f"own {row['libcolltune_per_call']} per call; result as plain: {same}; {row['libcolltune']}", flush=True)
    (out / "openfoam-learning.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
