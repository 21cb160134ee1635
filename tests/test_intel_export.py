"""`export --native intel` writes exactly the Intel MPI ids its real proof passed in every class.

benchmarks/intel_nonblocking/selftest-proof-2021.18.1-2ranks.txt is the proof.txt that `colltune
selftest --mpi intel -n 2 --nonblocking` wrote (every id of colltune's table, blocking and
nonblocking, each in a launch set to it against the library's results of a launch without).
A check whose verdicts make every id the fastest somewhere is exported against it: the settings
name exactly the ids without a failed class, and the file's header names every other one with
its failed classes. Runs without Intel MPI (the proof file is committed).
"""

from __future__ import annotations

from pathlib import Path

from test_native_export import _env_file, make_db, verdict

from colltune.measure import proof
from colltune.mpi.algorithms import LIBRARY_ALGORITHMS, NONBLOCKING_ALGORITHMS
from colltune.tune import native_export as ne

PROOF = (Path(__file__).resolve().parents[1] / "benchmarks" / "intel_nonblocking"
         / "selftest-proof-2021.18.1-2ranks.txt")
NPROCS = 2


def _table_members() -> list[str]:
    return ([f"lib:{c}:{a}" for c, ids in LIBRARY_ALGORITHMS["intel"].items() for a in ids]
            + [f"lib:{c}:{a}#nonblocking" for c, ids in NONBLOCKING_ALGORITHMS["intel"].items() for a in ids])


def _exported(settings: dict[str, str]) -> set[str]:
    """lib:<coll>:<id>[#nonblocking] of every range in I_MPI_ADJUST_[I]<COLL>=id:lo-hi@p-p;..."""
    out = set()
    for key, value in settings.items():
        name = key.removeprefix("I_MPI_ADJUST_").lower()
        known = name in LIBRARY_ALGORITHMS["intel"]
        coll, form = (name, "") if known else (name[1:], "#nonblocking")
        out |= {f"lib:{coll}:{part.split(':')[0]}{form}" for part in value.split(";")}
    return out


def test_the_real_proof_covers_the_whole_table_and_export_keeps_its_passed_ids(tmp_path: Path) -> None:
    members = _table_members()
    passed, failed = proof.read_passed(PROOF), proof.failed_members(PROOF)
    assert set(members) <= set(passed) | set(failed)   # every id proven or refused, none missing
    # each id the fastest at a message size of its own, so each is a choice of the export
    rows = [verdict(NPROCS, m.split(":")[1], m, 8 * (i + 1), 1.5) for i, m in enumerate(members)]
    out = ne.export(make_db(tmp_path / "every.duckdb", rows), "intel", tmp_path / "intel.env", proof_file=PROOF)
    proven = {m for m in members if m in passed and m not in failed}
    assert _exported(_env_file(out)) == proven
    header = next(line for line in out.read_text().splitlines() if "left out (failed the proof" in line)
    assert all(f"{m} (" in header for m in set(members) - proven)
    assert (len(proven), len(members)) == PROVEN_OF_TABLE


# Figures of the committed proof (benchmarks/intel_nonblocking/README.md, "The proof of each id").
PROVEN_OF_TABLE = (71, 93)   # 36 of the 51 blocking ids, 35 of the 42 nonblocking ones
