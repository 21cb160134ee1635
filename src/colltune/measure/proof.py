"""The proof (docs/select.md, "The proof"): every member, proven per case class on this library.

`colltune selftest` runs the mock-ups in one launch per process count and each of the library's
own algorithms (`lib:<collective>:<algorithm>`) in a launch of its own, so that an algorithm that
crashes or hangs takes only its own verdict with it; such a launch is run again class by class to
tell which class does it. The verdicts go to `proof.txt` in the build directory of the library
(the build cache is keyed by library identity; a rebuild deletes it), which the runtime reads at
MPI_Init: a member serves a call only in the classes it passed. The class names come from the C
core (native/core/proof.c); this module only drops the size band of a class whose every band
passed (or failed), as the driver's `proof_format` line names the bands.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from colltune.measure import selftest as st
from colltune.measure.protocol import json_record
from colltune.mpi import build
from colltune.mpi.algorithms import LIBRARY_ALGORITHMS, algorithm_key, launch_setting, started_algorithms
from colltune.mpi.libraries import MpiError, MpiLibrary

PROOF_FILE = "proof.txt"
HEADER = "colltune-proof 2"
# A forced algorithm's launch normally ends in seconds (the sweep's included; MPICH busy-polls,
# so a loaded machine stretches it, at load 16-20 past a minute). The driver's rank 0 prints a
# line at least every 0.5 s while cases end (`tick`), so a member launch is judged by its silence,
# not its length: MEMBER_TIMEOUT_S until its first line (the launch and MPI_Init), then
# MEMBER_IDLE_S without a line means it hung, however long it has run. A member whose launch hung
# once gets MEMBER_HUNG_IDLE_S in its later launches: its hang is the finding, and a shorter wait
# can only refuse it a class more, never serve it one more.
MEMBER_TIMEOUT_S = 60.0
MEMBER_IDLE_S = 20.0
MEMBER_HUNG_IDLE_S = 5.0


@dataclass
class MemberProof:
    """One member's verdict per class, over every launch (process count) that tested it."""

    member: str
    collective: str
    tested: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    evidence: dict[str, str] = field(default_factory=dict)  # class -> first failing case

    @property
    def passed(self) -> list[str]:
        return sorted(self.tested - self.failed)

    def fail(self, cls: str, evidence: str) -> None:
        self.tested.add(cls)
        self.failed.add(cls)
        self.evidence.setdefault(cls, evidence)


@dataclass
class Format:
    """What the driver says about its class names: the size bands, and the communicator sizes
    the sized classes (order-sensitive sums and products, ct_proof.h) were swept on."""

    bands: list[str] = field(default_factory=list)
    sizes: set[int] = field(default_factory=set)


@dataclass
class Proof:
    library: MpiLibrary
    nprocs: tuple[int, ...]
    members: dict[str, MemberProof]
    findings: list[str]
    seconds: float
    fmt: Format = field(default_factory=Format)

    def member(self, name: str) -> MemberProof | None:
        return self.members.get(name)


def _evidence(record: dict[str, object]) -> str:
    case = record.get("case", {})
    where = ", ".join(f"{k}={v}" for k, v in case.items()) if isinstance(case, dict) else ""
    return f"{record.get('what')} on rank {record.get('rank')}: {record.get('detail')} ({where})"


def absorb(lines: Iterable[str], members: dict[str, MemberProof], collective_of: Callable[[str], str],
           findings: list[str], fmt: Format | None = None) -> list[str]:
    """Fold a launch's proof lines into `members` (and its format into `fmt`); returns the
    classes a member launch announced."""
    classes: list[str] = []
    for line in lines:
        record = json_record(line)
        if record is None:
            continue
        kind = record.get("type")
        if kind == "classes":
            classes = list(record["classes"])
        elif kind == "proof_format" and fmt is not None:
            fmt.bands = [str(b) for b in record["bands"]]
            fmt.sizes.update(int(n) for n in record["sizes"])
        elif kind == "proof":
            name = str(record["member"])
            m = members.setdefault(name, MemberProof(name, collective_of(name)))
            m.tested.update(record["tested"])
            m.failed.update(record["failed"])
        elif kind == "proof_fail":
            name = str(record["member"])
            m = members.setdefault(name, MemberProof(name, collective_of(name)))
            m.evidence.setdefault(str(record["class"]), _evidence(record))
        elif kind == "library_finding":
            text = f"{record['what']}: {record['detail']}"
            if text not in findings:
                findings.append(text)
    return classes


NONBLOCKING = "#nonblocking"
PERSISTENT = "#persistent"
# The forms whose algorithms are proven only on request (one launch each), by their suffix.
STARTED_FORMS = {"nonblocking": NONBLOCKING, "persistent": PERSISTENT}


def library_members(lib: MpiLibrary, argv: list[str], forms: Collection[str] = (),
                    at_launch: bool = False) -> list[str]:
    """The library's own algorithms as the runtime registers them: listed by the library through
    MPI_T (the driver asks it), without those the runtime keeps out (native/core/libalg.c); with
    `forms` ("nonblocking", "persistent"), also the algorithms of those forms
    (`lib:<coll>:<alg>#nonblocking` and `...#persistent`, which COLLTUNE_FORCE may name for
    MPI_I<coll> and MPI_<Coll>_init). Intel MPI's are fixed per launch, never members of a
    mode: only with `at_launch` (for its I_MPI_ADJUST_* settings, `colltune selftest`), its
    algorithms of colltune.mpi.algorithms' one table (none of the persistent form), each
    proven in a launch set to it against the results of a launch without (member_lines)."""
    if algorithm_key(lib) == "intel":
        if not at_launch:
            return []
        members = [f"lib:{c}:{a}" for c, algs in LIBRARY_ALGORITHMS["intel"].items() for a in algs]
        return members + [f"lib:{c}:{a}{STARTED_FORMS[form]}" for form in forms
                          for c in LIBRARY_ALGORITHMS["intel"] for a in started_algorithms("intel", c, form)]
    members = []
    for line in st.run_launch_lines(lib, 1, [argv[0], "--list-members"], MEMBER_TIMEOUT_S):
        if line.startswith('{"type":"members"'):
            record = json.loads(line)
            form = record.get("form", "blocking")
            if form != "blocking" and form not in forms:
                continue
            suffix = STARTED_FORMS.get(form, "")
            members += [f"lib:{record['collective']}:{name}{suffix}" for name in record["names"]]
    return members


def launch_env(lib: MpiLibrary, member: str) -> dict[str, str]:
    """What a member's launch sets where the library fixes algorithms per launch (Intel MPI's
    I_MPI_ADJUST_<COLL>, ..._I<COLL> for `#nonblocking`); nothing elsewhere."""
    key = algorithm_key(lib)
    if key != "intel":   # SMPI's are set on the smpirun line, which no member launch has
        return {}
    _, collective, algorithm = member.split(":", 2)
    return launch_setting(key, collective, algorithm)


# Where the library's results of a member fixed per launch go between its two launches
# (--reference-out/-in, a file per rank, each written and read by its own rank, wherever it
# runs): a directory every node of the launch can write. Default: the build's directory, which
# every rank already runs the driver from; elsewhere `colltune selftest --reference-dir` or this
# variable. /tmp is no default: on several nodes it is another directory on each.
REFERENCE_DIR_ENV = "COLLTUNE_REFERENCE_DIR"
# What a rank of the driver prints when it cannot open its file (native/selftest/selftest.c).
REFERENCE_UNOPENED = "cannot open this rank's reference file"


class ReferenceDirError(MpiError):
    """The directory of the reference results cannot be written (on this node or another)."""


def _reference_fix(root: Path) -> str:
    return (f"the proof of an algorithm the library fixes per launch (Intel MPI's I_MPI_ADJUST_*) "
            f"passes the library's results from a launch without the setting to the launch with it "
            f"through a file per rank in {root}; give `colltune selftest --reference-dir DIR` (or "
            f"{REFERENCE_DIR_ENV}=DIR) a directory every rank can write, on several nodes one on a "
            f"file system they share")


def reference_root(lib: MpiLibrary, directory: Path | None = None) -> Path:
    """The directory of the reference results (REFERENCE_DIR_ENV), made and tried on this node:
    ReferenceDirError, naming the fix, when it cannot be written."""
    chosen = directory or (Path(os.environ[REFERENCE_DIR_ENV]) if os.environ.get(REFERENCE_DIR_ENV)
                           else build.ensure_built(lib).dir / "reference")
    root = Path(chosen).absolute()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="colltune-reference-", dir=root):
            pass
    except OSError as exc:
        raise ReferenceDirError(f"cannot write the reference directory {root} ({exc.strerror or exc}): "
                                + _reference_fix(root)) from None
    return root


def member_lines(lib: MpiLibrary, n: int, argv: list[str], member: str, timeout: float | None,
                 idle: float | None = None, reference_dir: Path | None = None) -> list[str]:
    """The driver's lines of a member's launch (`argv` names it with --member). Where the library
    fixes the member per launch, its launch's own library call is the member: the library's
    results it is judged against come first from a launch without the setting, same cases,
    through a file per rank (--reference-out/-in) in `reference_dir` (reference_root)."""
    env = launch_env(lib, member)
    if not env:
        return st.run_launch_lines(lib, n, argv, timeout, idle=idle)
    root = reference_root(lib, reference_dir)
    with tempfile.TemporaryDirectory(prefix="colltune-reference-", dir=root) as tmp:
        reference = str(Path(tmp) / "library")
        try:
            st.run_launch_lines(lib, n, argv + ["--reference-out", reference], timeout, idle=idle)
        except st.SelftestError as exc:
            # A rank that cannot open its file (another node without this directory) is no
            # verdict on the member: nothing of it ran yet.
            if REFERENCE_UNOPENED in exc.stderr:
                raise ReferenceDirError(f"a rank could not write its reference file in {tmp}: "
                                        + _reference_fix(root) + f"\n{exc}") from None
            raise
        return st.run_launch_lines(lib, n, argv + ["--reference-in", reference], timeout,
                                   launch_env=env, idle=idle)


def default_nprocs(lib: MpiLibrary) -> tuple[int, ...]:
    """A non-power-of-two count (where algorithms take their irregular paths); busy-polling
    MPICH-family libraries at 2, as more ranks than cores there cost seconds per call."""
    return (2,) if lib.family == "mpich" else (3,)


def _mockup_collective(name: str) -> str:
    from colltune import catalog
    for v in catalog.load().variants:
        if v.name == name:
            return v.collective
    return name.split("_as_")[0]


def _member_launch(lib: MpiLibrary, n: int, argv: list[str], member: str,
                   members: dict[str, MemberProof], findings: list[str], fmt: Format,
                   reference_dir: Path | None = None) -> None:
    collective = member.split(":")[1]
    try:
        launch = member_lines(lib, n, argv + ["--member", member], member, MEMBER_TIMEOUT_S,
                              idle=MEMBER_IDLE_S, reference_dir=reference_dir)
    except st.SelftestError as exc:
        _isolate(lib, n, argv, member, collective, members, findings, exc, fmt, reference_dir)
        return
    absorb(launch, members, lambda _n: collective, findings, fmt)


def _failure(exc: st.SelftestError, n: int) -> str:
    text = str(exc).strip().splitlines()
    return f"{'hung' if exc.hung else 'crashed'} on {n} ranks: {text[-1] if text else 'no output'}"


def class_progress(lines: Iterable[str]) -> tuple[list[str], str | None]:
    """The classes a `--by-class` launch finished (their verdicts are in its `proof` lines), in
    order, and the class it was running when it ended (None: between classes)."""
    done: list[str] = []
    running = None
    for line in lines:
        record = json_record(line)
        if record is None:
            continue
        if record.get("type") == "class":
            running = str(record["class"])
        elif record.get("type") == "class_done":
            done.append(str(record["class"]))
            running = None
    return done, running


def _isolate(lib: MpiLibrary, n: int, argv: list[str], member: str, collective: str,
             members: dict[str, MemberProof], findings: list[str], error: st.SelftestError,
             fmt: Format, reference_dir: Path | None = None) -> None:
    """The member's launch crashed or hung: run it again class by class, in one launch
    (`--by-class`) that prints each class's verdict as soon as the class is done. When that launch
    fails too, the class it was running is failed with what the launch said as evidence and the
    next launch resumes after it; so a member costs one launch per failing class, not per class."""
    m = members.setdefault(member, MemberProof(member, collective))
    classes = _classes_of(lib, argv, member)
    if len(classes) == 1:   # nothing to isolate: the one class did it
        m.fail(classes[0], _failure(error, n))
        return
    hung = error.hung
    start = 0
    while start < len(classes):
        resume = ["--member", member, "--by-class", classes[start]]
        try:
            lines = member_lines(lib, n, argv + resume, member, MEMBER_TIMEOUT_S,
                                 idle=MEMBER_HUNG_IDLE_S if hung else MEMBER_IDLE_S,
                                 reference_dir=reference_dir)
            failure = None
        except st.SelftestError as exc:
            lines, failure, hung = exc.lines, exc, hung or exc.hung
        absorb(lines, members, lambda _n: collective, findings, fmt)
        done, running = class_progress(lines)
        if failure is None:
            return
        if running is not None:   # the launch's failure is the class's evidence, then its own
            first = m.evidence.pop(running, None)
            m.fail(running, _failure(failure, n) + (f"; first: {first}" if first else ""))
            start = classes.index(running) + 1
        elif not done:   # before its first class (MPI_Init, the member's setup): every class alike
            for cls in classes[start:]:
                m.fail(cls, _failure(failure, n))
            return
        else:   # after a class's verdict (e.g. in MPI_Finalize): its classes one launch each
            for cls in done:
                _single_class(lib, n, argv, member, collective, cls, members, findings, fmt,
                              reference_dir)
            start = classes.index(done[-1]) + 1


def _single_class(lib: MpiLibrary, n: int, argv: list[str], member: str, collective: str,
                  cls: str, members: dict[str, MemberProof], findings: list[str],
                  fmt: Format, reference_dir: Path | None = None) -> None:
    """One class in a launch of its own; failed if that launch fails."""
    try:
        lines = member_lines(lib, n, argv + ["--member", member, "--classes", cls], member,
                             MEMBER_TIMEOUT_S, idle=MEMBER_IDLE_S, reference_dir=reference_dir)
    except st.SelftestError as exc:
        members[member].fail(cls, _failure(exc, n))
        return
    absorb(lines, members, lambda _n: collective, findings, fmt)


_CLASSES: dict[str, list[str]] = {}


def _classes_of(lib: MpiLibrary, argv: list[str], member: str) -> list[str]:
    """The classes of a member's collective, as the C core names them (asked of the driver once,
    with that member where the library fixes it per launch)."""
    collective = member.split(":")[1]
    if collective not in _CLASSES:
        probe = member if launch_env(lib, member) else next(
            m for m in library_members(lib, argv) if m.split(":")[1] == collective)
        lines = st.run_launch_lines(lib, 2, argv + ["--member", probe, "--classes", "none"],
                                    MEMBER_TIMEOUT_S, launch_env=launch_env(lib, probe))
        for line in lines:
            if line.startswith('{"type":"classes"'):
                _CLASSES[collective] = list(json.loads(line)["classes"])
    return _CLASSES.get(collective, [])


def prove(lib: MpiLibrary, nprocs: Sequence[int] | None = None, quick: bool = False,
          on_step: Callable[[int, int, str], None] | None = None,
          forms: Collection[str] = (), only: Sequence[str] | None = None,
          at_launch: bool = False, reference_dir: Path | None = None) -> Proof:
    """Run the whole portfolio through the matrix and return the proof (not yet written); with
    `forms` the algorithms of those forms too: "nonblocking" each against the library's own
    MPI_I<coll> + MPI_Wait (one launch each: 44 s more for Open MPI's 17, 32 s for MPICH's 64
    at load 4, so only on request), "persistent" each against the library's own
    MPI_<Coll>_init, two MPI_Start + MPI_Wait, MPI_Request_free (as many launches again); with
    `only`, just those library members (no mock-ups), to add to a proof with `merged`; with
    `at_launch`, also the algorithms a library fixes per launch (Intel MPI: library_members),
    their reference results in `reference_dir` (reference_root: checked before any launch)."""
    started = datetime.datetime.now()
    artifacts = build.ensure_built(lib)
    argv = st.driver_argv(artifacts, quick=quick) + ["--sweep"]
    counts = tuple(nprocs or default_nprocs(lib))
    members: dict[str, MemberProof] = {}
    findings: list[str] = []
    fmt = Format()
    libs = list(only) if only is not None else library_members(lib, argv, forms, at_launch)
    if any(launch_env(lib, m) for m in libs):
        reference_dir = reference_root(lib, reference_dir)
    mockups = only is None
    steps = len(counts) * (mockups + len(libs))
    done = 0
    for n in counts:
        if mockups:
            if on_step:
                on_step(done, steps, f"{n} ranks: mock-ups")
            lines = st.run_launch_lines(lib, n, argv, None)
            absorb(lines, members, _mockup_collective, findings, fmt)
            done += 1
        for member in libs:
            if on_step:
                on_step(done, steps, f"{n} ranks: {member}")
            _member_launch(lib, n, argv, member, members, findings, fmt, reference_dir)
            done += 1
    if on_step:
        on_step(done, steps, "done")
    seconds = (datetime.datetime.now() - started).total_seconds()
    return Proof(lib, counts, members, findings, seconds, fmt)


def compress(classes: Iterable[str], bands: Sequence[str]) -> dict[str, list[str]]:
    """Class names as the proof writes them -> the full names each stands for: a class present in
    every band is written without its band (`separate/builtin/int`), the others with it
    (`separate/builtin/int8/0-15B`)."""
    by_base: dict[str, list[str]] = {}
    for cls in classes:
        base, _, band = cls.rpartition("/")
        by_base.setdefault(base if band in bands else cls, []).append(cls)
    out: dict[str, list[str]] = {}
    for base, full in sorted(by_base.items()):
        if bands and len(full) == len(bands) and base not in full:
            out[base] = sorted(full)
        else:
            out.update({cls: [cls] for cls in sorted(full)})
    return out


@dataclass
class FuzzReport:
    """The differential fuzzer's run: seeded random cases, every member against the default."""

    library: MpiLibrary
    seed: int
    cases: int  # per launch (the mock-ups' launch, then each library member's)
    nprocs: int
    launches: int
    members: dict[str, MemberProof]
    seconds: float

    @property
    def tried(self) -> int:
        """Cases drawn (a case whose op is invalid for its datatype is drawn and skipped)."""
        return self.cases * self.launches

    def differences(self) -> dict[str, dict[str, str]]:
        """member -> class -> the first case where it gave other bits than the default."""
        return {name: {c: m.evidence.get(c, "failed") for c in sorted(m.failed)}
                for name, m in sorted(self.members.items()) if m.failed}

    def holes(self, passed: dict[str, set[str]]) -> dict[str, dict[str, str]]:
        """Differences in classes the proof passed (written with or without their band): cases the
        proof's matrix misses, each to become a fixed case of it."""
        def covered(member: str, cls: str) -> bool:
            names = passed.get(member, set())
            return cls in names or cls.rpartition("/")[0] in names
        return {m: {c: e for c, e in found.items() if covered(m, c)}
                for m, found in self.differences().items()
                if any(covered(m, c) for c in found)}


def fuzz(lib: MpiLibrary, seed: int, cases: int, nprocs: int | None = None,
         only: Sequence[str] | None = None,
         on_step: Callable[[int, int, str], None] | None = None) -> FuzzReport:
    """Run the differential fuzzer (`colltune-selftest --fuzz SEED --cases N`) for the mock-ups
    and each of the library's own algorithms (or those named in `only`), one launch each."""
    started = datetime.datetime.now()
    artifacts = build.ensure_built(lib)
    argv = st.driver_argv(artifacts) + ["--fuzz", str(seed), "--cases", str(cases)]
    n = nprocs or default_nprocs(lib)[0]
    members: dict[str, MemberProof] = {}
    findings: list[str] = []
    libs = list(only) if only is not None else library_members(lib, argv[:1])
    for i, member in enumerate([None, *libs]):
        if on_step:
            on_step(i, 1 + len(libs), member or "mock-ups")
        extra = [] if member is None else ["--member", member]
        collective = (lambda _n, m=member: m.split(":")[1]) if member else _mockup_collective
        try:
            lines = (st.run_launch_lines(lib, n, argv + extra, None) if member is None
                     else member_lines(lib, n, argv + extra, member, 4 * MEMBER_TIMEOUT_S))
        except st.SelftestError as exc:
            assert member is not None, exc
            text = str(exc).strip().splitlines()
            m = members.setdefault(member, MemberProof(member, member.split(":")[1]))
            m.fail(f"{member.split(':')[1]}: crashed", f"crashed on {n} ranks: {text[-1] if text else ''}")
            continue
        absorb(lines, members, collective, findings)
    seconds = (datetime.datetime.now() - started).total_seconds()
    return FuzzReport(lib, seed, cases, n, 1 + len(libs), members, seconds)


def render(proof: Proof) -> str:
    """proof.txt: what the runtime reads (sizes/member/fail lines) and what people read
    (comments)."""
    sizes = ",".join(map(str, sorted(proof.fmt.sizes))) or "-"
    out = [HEADER,
           f"# library: {proof.library.short_version} ({proof.library.identity})",
           f"# proven on {', '.join(map(str, proof.nprocs))} ranks in {proof.seconds:.0f} s, "
           f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
           "# sums and products of floats and of 8- and 16-bit integers depend on the order of "
           "combination, which changes with the communicator's size: members serve them only on "
           "communicators of the sizes below (docs/select.md, \"The proof\")",
           f"sizes {sizes}"]
    out += [f"# library finding: {f}" for f in proof.findings]
    for name in sorted(proof.members):
        m = proof.members[name]
        out.append(f"member {name} passed {','.join(compress(m.passed, proof.fmt.bands)) or '-'}")
        for cls, full in compress(m.failed, proof.fmt.bands).items():
            evidence = next((m.evidence[c] for c in full if c in m.evidence), "failed")
            out.append(f"fail {name} {cls} {evidence}")
    return "\n".join(out) + "\n"


def merged(text: str, extra: Proof) -> str:
    """The proof `text` with `extra`'s members added (their earlier lines replaced): members
    proven one by one (prove(..., only=...)) at the process counts of the proof they join."""
    names = set(extra.members)
    kept = [line for line in text.splitlines()
            if not (line.startswith(("member ", "fail ")) and line.split()[1] in names)]
    added = [line for line in render(extra).splitlines() if line.startswith(("member ", "fail "))]
    return "\n".join(kept + added) + "\n"


def is_current(path: Path) -> bool:
    """Whether `path` is a proof of this format (an older one's classes meant less: redo it)."""
    if not path.exists():
        return False
    with path.open() as f:
        return f.readline().rstrip("\n") == HEADER


def proof_path(artifacts: build.Artifacts) -> Path:
    return artifacts.dir / PROOF_FILE


def write(proof: Proof) -> Path:
    path = proof_path(build.ensure_built(proof.library))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render(proof))
    tmp.replace(path)
    return path


def read_passed(path: Path) -> dict[str, set[str]]:
    """member -> classes it passed, from a proof file (empty if there is none)."""
    passed: dict[str, set[str]] = {}
    if not path.exists():
        return passed
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "member" and parts[2] == "passed":
            passed[parts[1]] = set() if parts[3] == "-" else set(parts[3].split(","))
    return passed


def failed_members(path: Path) -> dict[str, list[str]]:
    """member -> classes it failed (a native tuning file applies a member to every class)."""
    failed: dict[str, list[str]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split(maxsplit=3)
            if len(parts) >= 3 and parts[0] == "fail":
                failed.setdefault(parts[1], []).append(parts[2])
    return failed


def refusals(members: Iterable[str], path: Path | None) -> dict[str, list[str]]:
    """Of `members`, those the proof at `path` refuses somewhere: member -> classes it failed, or
    ["not proven"] (no proof, or the member not in it)."""
    if path is None or not path.exists():
        return {m: ["not proven"] for m in members}
    passed, failed = read_passed(path), failed_members(path)
    out = {m: sorted(failed[m]) for m in members if m in failed}
    out.update({m: ["not proven"] for m in members if m not in passed and m not in failed})
    return out


def proof_of_run(environment: dict[str, str]) -> Path | None:
    """The proof of the build that measured a run: next to its bench binary."""
    binary = environment.get("bench_binary")
    return Path(binary).parent / PROOF_FILE if binary else None


def ensure_proven(lib: MpiLibrary, on_step: Callable[[int, int, str], None] | None = None) -> Path:
    """The proof of `lib`, made first if this build has none (a few minutes, once per build)."""
    path = proof_path(build.ensure_built(lib))
    if not is_current(path):
        write(prove(lib, on_step=on_step))
    return path


def ensure_proven_shown(lib: MpiLibrary) -> Path:
    """ensure_proven with a progress bar on stderr and the time it took, for commands that are
    about to let the interposer serve calls."""
    path = proof_path(build.ensure_built(lib))
    if is_current(path):
        return path
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    why = "the proof is of an older format" if path.exists() else "no proof yet"
    console.print(f"colltune: {why} for {lib.short_version}: proving every member first "
                  "(once per build; `colltune selftest` does the same)")
    started = datetime.datetime.now()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("proof", total=None)
        path = ensure_proven(lib, lambda d, t, w: progress.update(task, completed=d, total=t,
                                                                   description=f"proof: {w}"))
    seconds = (datetime.datetime.now() - started).total_seconds()
    console.print(f"colltune: proof written to {path} ({seconds:.0f} s)")
    return path


__all__ = ["Format", "FuzzReport", "MemberProof", "fuzz", "Proof", "absorb", "class_progress", "compress",
           "default_nprocs", "ensure_proven", "failed_members", "is_current", "library_members", "merged", "prove",
           "read_passed", "render", "write"]
