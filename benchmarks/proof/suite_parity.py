"""Suite parity under the learning mode with every call exploring (issue 22).

Runs third-party and own correctness programs under `colltune run --learn -` with
COLLTUNE_SELECT_BUDGET and COLLTUNE_SELECT_CELL_BUDGET so large that every eligible call is drawn
uniformly over its portfolio, for several seeds, twice per library:

  gate open   a stand-in proof that passes every member in every class: what the interposer
              served before the proof gate (every registered member admitted);
  proof       the library's real proof (`colltune selftest`): what it serves now.

Programs: tests/programs/ct_collectives.c -t (every collective in every buffer mode, results
checked exactly, at the same rank counts), mpi4py's own collective tests (from its sdist, as tests/test_interposer_thirdparty.py
fetches them) at 2 ranks WITHOUT threads (MPI4PY_RC_THREADS=0: under MPI_THREAD_MULTIPLE the
library members are off, which hid the sparbit bug), and tests/programs/proof_calls.c (8-bit
sums: distinct results across ranks and runs; in-place allgather errors) at 2-5 ranks (MPICH at 2:
it busy-polls). Issue 33's rows: every collective test file of mpi4py (`mpi4py_all`: blocking,
nonblocking, persistent, neighborhood) and tests/programs/ct_every.c (every collective function
of MPI-4.1 once, its results checked by the program; ct_every.f90 too where the library has
mpifort), whose output must be the plain run's. Writes results/<library>.json and prints a
table; rerun:

    .venv/bin/python benchmarks/proof/suite_parity.py [--mpi openmpi|mpich] [--seeds 1,2,3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from colltune.measure import proof  # noqa: E402
from colltune.mpi import build  # noqa: E402
from colltune.mpi import libraries as mpi  # noqa: E402

COLLTUNE = str(Path(sys.executable).with_name("colltune"))
EXPLORE_ALL = {"COLLTUNE_SELECT_BUDGET": "1000000000", "COLLTUNE_SELECT_CELL_BUDGET": "1000000000"}
MPI4PY_TESTS = ["test_cco_buf", "test_cco_obj", "test_cco_vec", "test_cco_buf_inter", "test_cco_obj_inter"]
# issue 33: every collective test file of mpi4py 4.1.2, blocking, nonblocking (nb), persistent
# (pr) and neighborhood (ngh); a file whose functions the library lacks skips them itself
MPI4PY_ALL_TESTS = [*MPI4PY_TESTS, "test_cco_vec_inter", "test_cco_nb_buf", "test_cco_nb_vec",
                    "test_cco_pr_buf", "test_cco_pr_vec", "test_cco_ngh_buf", "test_cco_ngh_obj",
                    "test_cco_pr_ngh_buf"]


def mpi_arg(lib: mpi.MpiLibrary) -> str:
    """`--mpi` naming exactly this library: its name picks the first library of that name (the
    embedded Open MPI before Debian's), whose interposer would be preloaded into the other's
    programs."""
    try:
        if mpi.resolve(lib.name).mpicc == lib.mpicc:
            return lib.name
    except mpi.MpiError:
        pass
    return str(lib.mpicc)


def open_gate(real: Path, out: Path) -> Path:
    """Every member of the real proof, passed in every class either way saw."""
    classes: set[str] = set()
    members: set[str] = set()
    for line in real.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "member":
            members.add(parts[1])
            classes.update(c for c in parts[3].split(",") if c != "-")
        elif len(parts) >= 3 and parts[0] == "fail":
            members.add(parts[1])
            classes.add(parts[2])
    sizes = ",".join(str(n) for n in range(1, 64))
    out.write_text(f"{proof.HEADER}\nsizes {sizes}\n" + "".join(
        f"member {m} passed {','.join(sorted(classes))}\n" for m in sorted(members)))
    return out


def counts(stderr: str) -> dict[str, int]:
    """Explored calls served by a member, calls refused by the proof, and explored draws of an
    unproven (member, class) pair drawn again among the proven ones, from the counting table."""
    served = refused = redrawn = 0
    for line in stderr.splitlines():
        m = re.search(r"explore\s+(\S+)\s+(\S+)\s+(\d+)\s*$", line)
        if not m:
            continue
        if m.group(2) == "applied" and m.group(1) != "default":
            served += int(m.group(3))
        if m.group(2) == "not-applicable:unproven":
            refused += int(m.group(3))
        if m.group(2) == "redrawn:unproven":
            redrawn += int(m.group(3))
    return {"member_served": served, "refused_unproven": refused, "redrawn": redrawn}


def run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL, check=False, env={**os.environ, **env})


def mpi4py_case(lib: mpi.MpiLibrary, tests: Path, seed: str, proof_file: Path,
                files: list[str] = MPI4PY_TESTS, program: str = "mpi4py collective tests") -> dict:
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file),
           "MPI4PY_RC_THREADS": "0"}
    argv = [COLLTUNE, "run", "--mpi", mpi_arg(lib), "--verbose", "--learn", "-", "--",
            str(lib.mpiexec), "-n", "2", "-x" if lib.family == "openmpi" else "-genv",
            *(["MPI4PY_RC_THREADS=0"] if lib.family == "openmpi" else ["MPI4PY_RC_THREADS", "0"]),
            sys.executable, "main.py", "-f", *files]
    proc = run(argv, env, cwd=tests)
    text = proc.stdout + proc.stderr
    passed = proc.returncode == 0 and "FAILED" not in text and text.count("OK") >= 2
    ran = re.findall(r"Ran (\d+) tests?", text)
    skipped = re.findall(r"skipped=(\d+)", text)
    return {"program": program, "nprocs": 2, "seed": seed, "passed": passed,
            "returncode": proc.returncode, "tests_run": int(ran[0]) if ran else 0,
            "tests_skipped": int(skipped[0]) if skipped else 0,
            **counts(proc.stderr)}


def every_case(lib: mpi.MpiLibrary, exe: Path, n: int, seed: str, proof_file: Path,
               plain: str, program: str) -> dict:
    """tests/programs/ct_every.c (or .f90): every collective function once, each result checked
    against its closed form by the program; its output must be the plain run's."""
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file)}
    argv = [COLLTUNE, "run", "--mpi", mpi_arg(lib), "--verbose", "--learn", "-", "--",
            *_launch(lib, n, [str(exe)])]
    proc = run(argv, env)
    passed = proc.returncode == 0 and proc.stdout == plain
    return {"program": program, "nprocs": n, "seed": seed, "passed": passed,
            "returncode": proc.returncode, **counts(proc.stderr)}


def plain_output(lib: mpi.MpiLibrary, exe: Path, n: int) -> str:
    from colltune.mpi import launch

    proc = subprocess.run(_launch(lib, n, [str(exe)]), capture_output=True, text=True,
                          timeout=600, check=False, env=launch.launcher_env(lib, nprocs=n))
    if proc.returncode != 0:
        raise SystemExit(f"plain run of {exe.name} on {n} ranks failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def program_case(lib: mpi.MpiLibrary, exe: Path, n: int, seed: str, proof_file: Path,
                 plain: set[str]) -> dict:
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file)}
    argv = [COLLTUNE, "run", "--mpi", mpi_arg(lib), "--verbose", "--learn", "-", "--",
            str(lib.mpiexec), *(["--oversubscribe"] if lib.family == "openmpi" else []),
            "-n", str(n), str(exe)]
    proc = run(argv, env)
    lines = [ln.split() for ln in proc.stdout.splitlines() if ln.startswith("rank ")]
    hashes = {ln[3] for ln in lines}
    errors = sum(int(ln[5]) for ln in lines)
    passed = proc.returncode == 0 and len(lines) == n and hashes == plain and errors == 0
    return {"program": "proof_calls", "nprocs": n, "seed": seed, "passed": passed,
            "returncode": proc.returncode, "distinct_8bit_results": len(hashes),
            "allgather_errors": errors, **counts(proc.stderr)}


def collectives_case(lib: mpi.MpiLibrary, exe: Path, n: int, seed: str, proof_file: Path) -> dict:
    """tests/programs/ct_collectives.c -t: every collective, every buffer mode, checked exactly."""
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file)}
    argv = [COLLTUNE, "run", "--mpi", mpi_arg(lib), "--verbose", "--learn", "-", "--",
            str(lib.mpiexec), *(["--oversubscribe"] if lib.family == "openmpi" else []),
            "-n", str(n), str(exe), "-t"]
    proc = run(argv, env)
    passed = proc.returncode == 0 and f"ok {n} ranks" in proc.stdout and "FAIL" not in proc.stderr
    return {"program": "ct_collectives -t", "nprocs": n, "seed": seed, "passed": passed,
            "returncode": proc.returncode, **counts(proc.stderr)}


def _hash_lines(stdout: str) -> tuple[dict[str, str], dict[str, str]]:
    """reduction_hashes' output: rank -> hash of all its results, call index -> rank 0's hash."""
    ranks = {ln.split()[1]: ln.split()[3] for ln in stdout.splitlines() if ln.startswith("rank ")}
    calls = {ln.split()[1]: ln.split()[6] for ln in stdout.splitlines() if ln.startswith("call ")}
    return ranks, calls


def _launch(lib: mpi.MpiLibrary, n: int, argv: list[str]) -> list[str]:
    return [str(lib.mpiexec), *(["--oversubscribe"] if lib.family == "openmpi" else []),
            "-n", str(n), *argv]


def plain_results(lib: mpi.MpiLibrary, exe: Path, n: int, args: list[str]) -> tuple[dict, dict]:
    from colltune.mpi import launch

    proc = subprocess.run(_launch(lib, n, [str(exe), *args]), capture_output=True, text=True,
                          timeout=1800, check=False, env=launch.launcher_env(lib, nprocs=n))
    if proc.returncode != 0:
        raise SystemExit(f"plain run of {exe.name} on {n} ranks failed:\n{proc.stderr[-2000:]}")
    return _hash_lines(proc.stdout)


def hashes_case(lib: mpi.MpiLibrary, exe: Path, n: int, seed: str, proof_file: Path,
                plain: tuple[dict, dict], args: list[str]) -> dict:
    """tests/programs/reduction_hashes.c (issue 37): every call's result hash against a plain
    run's; the differing calls are counted by collective and datatype."""
    env = {**EXPLORE_ALL, "COLLTUNE_SELECT_SEED": seed, "COLLTUNE_PROOF": str(proof_file)}
    argv = [COLLTUNE, "run", "--mpi", mpi_arg(lib), "--verbose", "--learn", "-", "--",
            *_launch(lib, n, [str(exe), *args])]
    proc = run(argv, env)
    ranks, calls = _hash_lines(proc.stdout)
    plain_ranks, plain_calls = plain
    differ = [k for k in plain_calls if calls.get(k) != plain_calls[k]]
    kinds: dict[str, int] = {}
    lines = {ln.split()[1]: ln.split() for ln in proc.stdout.splitlines() if ln.startswith("call ")}
    for k in differ:
        key = f"{lines[k][2]}/{lines[k][3]}" if k in lines else "missing"
        kinds[key] = kinds.get(key, 0) + 1
    passed = proc.returncode == 0 and ranks == plain_ranks and not differ and len(ranks) == n
    return {"program": "reduction_hashes", "nprocs": n, "seed": seed, "passed": passed,
            "returncode": proc.returncode, "calls": len(plain_calls), "calls_differing": len(differ),
            "rank_hashes_equal": ranks == plain_ranks, "differing_by_kind": kinds,
            **counts(proc.stderr)}


def plain_hashes(lib: mpi.MpiLibrary, exe: Path, n: int) -> set[str]:
    argv = [str(lib.mpiexec), *(["--oversubscribe"] if lib.family == "openmpi" else []), "-n", str(n), str(exe)]
    from colltune.mpi import launch

    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False,
                          env=launch.launcher_env(lib, nprocs=n))
    return {ln.split()[3] for ln in proc.stdout.splitlines() if ln.startswith("rank ")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpi", default="openmpi")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--modes", default="gate open,proof",
                        help="which of 'gate open' and 'proof' to run; the other's rows stay as stored")
    parser.add_argument("--programs",
                        default="mpi4py,mpi4py_all,proof_calls,ct_collectives,reduction_hashes,ct_every",
                        help="which programs to run; the others' rows stay as stored")
    parser.add_argument("--rounds", type=int, default=240, help="rounds of reduction_hashes")
    parser.add_argument("--results", default=None,
                        help="results/<NAME>.json (default: the library's name; e.g. openmpi-debian "
                             "for --mpi /usr/bin/mpicc.openmpi, whose Fortran runs ct_every.f90)")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",")]
    programs = [p.strip() for p in args.programs.split(",")]
    lib = mpi.resolve(args.mpi)
    real = proof.ensure_proven(lib)
    tmp = Path(tempfile.mkdtemp(prefix="ct-parity-"))
    gate = open_gate(real, tmp / "open-gate.txt")
    exe = build.compile_program(lib, [ROOT / "tests" / "programs" / "proof_calls.c"], tmp / "proof_calls")
    colls = build.compile_program(lib, [ROOT / "tests" / "programs" / "ct_collectives.c"], tmp / "ct_collectives")
    hashes = build.compile_program(lib, [ROOT / "tests" / "programs" / "reduction_hashes.c"],
                                   tmp / "reduction_hashes")
    every = {}
    if "ct_every" in programs:
        every["ct_every"] = build.compile_program(lib, [ROOT / "tests" / "programs" / "ct_every.c"],
                                                  tmp / "ct_every")
        # Fortran where the library has it (Debian's Open MPI; the pip wheels have none)
        fort = lib.mpicc.parent / lib.mpicc.name.replace("mpicc", "mpifort")
        if fort.exists():
            subprocess.run([str(fort), "-O1", "-o", str(tmp / "ct_every_f"),
                            str(ROOT / "tests" / "programs" / "ct_every.f90")], check=True)
            every["ct_every.f90"] = tmp / "ct_every_f"
    tests = None
    if "mpi4py" in programs or "mpi4py_all" in programs:
        from test_interposer_thirdparty import mpi4py_tests

        tests = mpi4py_tests.__wrapped__()  # the fixture's body: fetch mpi4py's sdist tests once
    sizes = (2,) if lib.family == "mpich" else (2, 3, 4, 5)
    # issue 37: 3-5 ranks of Open MPI, 2-4 of MPICH (it busy-polls: slow, but the program is short)
    hash_sizes = (2, 3, 4) if lib.family == "mpich" else (3, 4, 5)
    rh_args = [str(args.rounds), "1"]
    plains = {n: plain_hashes(lib, exe, n) for n in sizes} if "proof_calls" in programs else {}
    hash_plains = ({n: plain_results(lib, hashes, n, rh_args) for n in hash_sizes}
                   if "reduction_hashes" in programs else {})
    out = HERE / "results" / f"{args.results or lib.name}.json"
    kept = json.loads(out.read_text())["rows"] if out.exists() else []
    every_sizes = (2,) if lib.family == "mpich" else (3, 4)
    every_plain = {(name, n): plain_output(lib, exe_, n) for name, exe_ in every.items()
                   for n in every_sizes}
    names = {"mpi4py": "mpi4py collective tests", "proof_calls": "proof_calls",
             "ct_collectives": "ct_collectives -t", "reduction_hashes": "reduction_hashes",
             "mpi4py_all": "mpi4py test_cco* (13 files)", "ct_every": "ct_every"}
    rerun = {names[p] for p in programs} | ({"ct_every.f90"} if "ct_every" in programs else set())
    rows = [r for r in kept if r["mode"] not in modes or r["program"] not in rerun]
    for label, proof_file in (("gate open", gate), ("proof", real)):
        if label not in modes:
            continue
        for seed in args.seeds.split(","):
            if tests is not None and "mpi4py" in programs:
                rows.append({"mode": label, **mpi4py_case(lib, tests, seed, proof_file)})
            if tests is not None and "mpi4py_all" in programs:
                rows.append({"mode": label, **mpi4py_case(lib, tests, seed, proof_file,
                                                          MPI4PY_ALL_TESTS, names["mpi4py_all"])})
            for (name, n), plain_out in every_plain.items():
                rows.append({"mode": label, **every_case(lib, every[name], n, seed, proof_file,
                                                         plain_out, name)})
            for n in sizes:
                if "proof_calls" in programs:
                    rows.append({"mode": label, **program_case(lib, exe, n, seed, proof_file, plains[n])})
                if "ct_collectives" in programs:
                    rows.append({"mode": label, **collectives_case(lib, colls, n, seed, proof_file)})
            for n in hash_sizes if "reduction_hashes" in programs else ():
                rows.append({"mode": label, **hashes_case(lib, hashes, n, seed, proof_file,
                                                          hash_plains[n], rh_args)})
            print(label, "seed", seed, "done", flush=True)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"library": lib.short_version, "rows": rows}, indent=1) + "\n")
    print(f"{'mode':10} {'program':26} {'n':>2} {'seed':>4} {'pass':>5} {'served':>7} {'unproven':>8} "
          f"{'redrawn':>7} {'differ':>6}")
    for r in rows:
        print(f"{r['mode']:10} {r['program']:26} {r['nprocs']:>2} {r['seed']:>4} "
              f"{'yes' if r['passed'] else 'NO':>5} {r['member_served']:>7} {r['refused_unproven']:>8} "
              f"{r.get('redrawn', 0):>7} {r.get('calls_differing', ''):>6}")
    print(f"written {out}")


if __name__ == "__main__":
    main()
