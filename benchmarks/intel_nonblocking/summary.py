"""The table of run.sh's traces: per collective and id, the algorithm functions that served its
MPI_I<coll> call, and those of its MPI_<Coll>_init where they differ.
Usage: python3 benchmarks/intel_nonblocking/summary.py OUT"""
import sys
from pathlib import Path


def calls(path: Path) -> dict[tuple[str, str], list[str]]:
    """(form, collective) -> algorithm functions hit after that call's entry point."""
    out: dict[tuple[str, str], list[str]] = {}
    current = None
    for name in path.read_text().split():
        if name.startswith("PMPI_"):
            call = name[len("PMPI_"):].lower()
            current = ("persistent", call[:-len("_init")]) if call.endswith("_init") else ("nonblocking", call[1:])
            out.setdefault(current, [])
        elif current is not None:
            out[current].append(name.replace("MPIR_", "").replace("_intra", ""))
    return out


def main(out: Path) -> None:
    ranges = dict(line.split("=") for line in (out / "ranges.txt").read_text().split())
    traces = {int(p.stem[2:]): calls(p) for p in out.glob("id*.txt")}
    for var, top in sorted(ranges.items()):
        coll = var[len("I_MPI_ADJUST_I"):].lower()
        print(var)
        for k in range(int(top) + 1):
            nb = traces[k].get(("nonblocking", coll), [])
            pers = traces[k].get(("persistent", coll), [])
            extra = "" if pers == nb else f"   | persistent: {' '.join(pers) or '-'}"
            print(f"  {k:2d}: {' '.join(nb) or '-'}{extra}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
