"""Outputs of `colltune advise`: terminal summary, JSON, and the files that apply the advice
(a tuning profile restricted to the application's points, library-native settings). The advice
itself is kept in the results database (colltune.store, table `advice`)."""

from __future__ import annotations

import dataclasses
import json
import re
import statistics
import textwrap
from pathlib import Path
from typing import Any

from rich.console import Console

from colltune.advise import collectives, patterns, symbols, topology, where
from colltune.advise.analyze import Advice
from colltune.advise.findings import Finding
from colltune.advise.profile_run import ProfileRun
from colltune.advise.points import AppPoint
from colltune.advise.verify import Comparison, PointFigure, Verification, fmt_time
from colltune.errors import ColltuneError
from colltune.tune import native_export
from colltune.tune import profile as prof


PROFILE_NAME = "advise.prof"
# What the files of write_files are, as the summary names them (their keys are advise.json's).
FILE_LABELS = {"profile": "tuning profile", "rules": "Open MPI rules file", "json": "MPICH selection file",
               "env": "settings to export"}


def as_json(advice: Advice, files: dict[str, str]) -> dict[str, Any]:
    return {
        "library": advice.run.ranks[0].library, "family": advice.family, "nprocs": advice.run.nprocs,
        "wall_s": advice.run.wall_ns / 1e9, "shares": advice.shares,
        "predicted_saving_s": advice.predicted_saving_s,
        "where": where.as_json(advice.run, advice.time_table, advice.tunability),
        "patterns": [{**p.__dict__, "saving_s": p.saving_s} for p in advice.call_patterns],
        "findings": [f.as_dict() for f in advice.findings],
        "points": [{"collective": p.collective, "nprocs": p.nprocs, "bin": p.bin, "calls": p.calls,
                    **({"calls_interval": list(p.calls_interval)} if p.calls_interval else {}),
                    "mean_bytes": p.mean_bytes, "total_s": p.total_s, "own_s": p.own_s,
                    "wait_s": p.wait_s, "sites": p.sites,
                    "per_rank_s": {str(k): v for k, v in p.per_rank_s.items()}}
                   for p in advice.points],
        "missing_points": [{"collective": p.collective, "nprocs": p.nprocs, "bin": p.bin, "own_s": p.own_s,
                            "back_to_back": p.loop}
                           for p in advice.missing],
        "environment": advice.environment,
        "files": files,
    }


def write_files(advice: Advice, out: Path, lib: Any = None) -> dict[str, str]:
    """advise.prof, the tuning profile of the mock-up choices (`.prof` like every tuning profile;
    `.prf` is PGMPITuneLib's format), and advise.env: the library algorithms' settings (with
    advise.rules for Open MPI, advise.json's tree for MPICH) and the eager threshold, in
    environment form; each only when there is something in it."""
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    profile = collectives.profile_for(advice.choices, {
        "generator": "colltune advise", "source": str(advice.run.directory),
        "nprocs": str(advice.run.nprocs), "min-gain": str(collectives.MIN_GAIN)})
    if profile.sections:
        files["profile"] = str(prof.write_profile(profile, out / PROFILE_NAME))
    choices = collectives.library_choices(advice.choices)
    env: dict[str, str] = {}
    if choices and advice.family == "openmpi":
        rules = out / "advise.rules"
        rules.write_text(native_export.openmpi_rules(choices, native_export.ompi_params(lib)))
        env.update(native_export.openmpi_settings(rules))
        files["rules"] = str(rules)
    elif choices and advice.family == "mpich" and lib is not None:
        path = out / "advise.json"
        path.write_text(json.dumps(native_export.mpich_tree(choices, native_export.mpich_default_tree(lib)),
                                   indent=1) + "\n")
        env.update(native_export.mpich_settings(path))
        files["json"] = str(path)
    elif choices and advice.family == "intel":
        env.update(native_export.intel_settings(choices))
    for f in advice.findings:
        if f.strategy == "eager":
            var, value = f.data["variable"], str(f.data["recommended"])
            env[f"OMPI_MCA_{var}" if advice.family == "openmpi" else var] = value
    if env:
        path = out / "advise.env"
        path.write_text("".join(f"export {k}='{v}'\n" for k, v in env.items()))
        files["env"] = str(path)
    return files


def env_settings(files: dict[str, str]) -> dict[str, str]:
    """advise.env as a mapping (what --verify gives the ranks)."""
    if "env" not in files:
        return {}
    out = {}
    for line in Path(files["env"]).read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        out[key] = value.strip("'")
    return out


SHOWN_FINDINGS = 6     # the one-line list's length in the terminal (the JSON has every finding)


def _saving(f: Finding, wall_s: float, share: bool = True) -> str:
    if f.saving_s is None:
        return "-"
    if share and wall_s:
        return f"{fmt_time(f.saving_s)} ({100 * f.saving_s / wall_s:.2f}% of the run)"
    return fmt_time(f.saving_s)


def finding_row(f: Finding, width: int) -> str:
    """A finding's brief in `width` columns: a call pattern's sites lose their namespaces, then
    their names are cut in the middle (patterns.fit_brief); a run setting's brief is cut in the
    middle."""
    if f.strategy == "pattern":
        return patterns.fit_brief(f, width)
    return where.shorten(f.brief or f.title, width)


def finding_lines(findings: list[Finding], wall_s: float, shown: int = SHOWN_FINDINGS) -> list[str]:
    """One line per finding (what, where, the change; its predicted saving first), 80 columns:
    the details are `--explain N`'s and the report's."""
    if not findings:
        return []
    lines = ["What to change, safe first, by predicted saving (--explain N: the details)",
             f"{'#':>2} {'saving':>9}  finding: what, where, the change"]
    # rows that would read alike but for their counts name where their chains part
    apart = patterns.told_apart(findings[:shown])
    for i, f in enumerate(findings[:shown], 1):
        f = dataclasses.replace(f, brief=apart[i - 1]) if i - 1 in apart else f
        head = f"{i:>2} {_saving(f, wall_s, share=False):>9}  "
        lines.append(head + finding_row(f, where.WIDTH - len(head)))
    if len(findings) > shown:
        lines.append(f"   ... {len(findings) - shown} more findings (--explain N, advise.json)")
    return lines


# An address shown as a site (`hpcc+0x19a82`, `examl-avx2+0x43b9e, +0x43bbe`): an object and an
# offset not inside a function's parentheses.
_ADDRESS = re.compile(r"(?:^|(?<=[\s,]))([\w][\w.+-]*?)\+0x[0-9a-f]+\b")
# A named function's site without a line (`LAMMPS_NS::Input::file (liblammps.so.0+0x459668)`): its
# object and offset, as the site's whole label has them.
_NAMED = re.compile(r"^[^(]+ \(([^()\s]+?)(\+0x[0-9a-f]+)\)")


def _debug_fix(names: list[str], paths: dict[str, str]) -> str:
    """How to get the objects' debug info where their packages ship it apart: Debian's -dbgsym
    packages (the object has a .gnu_debuglink and dpkg knows its package), else ""."""
    packages = [symbols.debian_package(paths[n]) if n in paths else None for n in names]
    if not names or None in packages:
        return ""
    return "apt install " + " ".join(f"{p}-dbgsym" for p in dict.fromkeys(packages))


def why_addresses(lines: list[str], run: ProfileRun, labels: list[str] | None = None) -> list[str]:
    """One line per kind of object whose sites the screen shows as addresses only, or (`labels`:
    the sites' whole labels) as functions without a file:line, saying why (from the object's own
    sections, symbols.object_info) and how to see names and lines: a stripped binary has no symbol
    for its static functions and no line table; a library's exported functions are named from its
    dynamic symbols, with no line. Where the object's debug info is packaged apart
    (.gnu_debuglink) and dpkg knows its package: the -dbgsym package that has it."""
    objects = list(dict.fromkeys(m[1] for line in lines for m in _ADDRESS.finditer(line)))
    text = "\n".join(lines)
    named = list(dict.fromkeys(m[1] for label in labels or [] if (m := _NAMED.match(label))
                               and m[2] in text and m[1] not in objects))
    if not objects and not named:
        return []
    paths = {Path(m.path).name: m.path for r in run.ranks for m in r.maps}
    groups: dict[tuple[str, str], list[str]] = {}
    for name in objects + named:
        info = symbols.object_info(paths[name]) if name in paths else None
        if name in named:
            if info is None or info.lines:
                continue   # its lines are elsewhere (a separate debug file addr2line found) or unknown
            why, fix = "functions named, no line table (no file:line)", "rebuild with -g"
        elif info is None:
            why, fix = "no symbols (not readable here)", ""
        elif not info.symbols and not info.lines:
            why, fix = "no symbols (stripped, no debug info)", "rebuild with -g"
        elif not info.lines:
            why, fix = "no symbol at these addresses, no debug info", "rebuild with -g"
        else:
            why, fix = "no symbol at these addresses", ""
        if fix and info is not None and info.debuglink:
            fix = _debug_fix([name], paths) or fix
        groups.setdefault((why, fix), []).append(name)
    out = []
    for (why, fix), names in groups.items():
        objs = ", ".join(names)
        stripped, apt = why.startswith("no symbols (stripped"), fix.startswith("apt ")
        addresses = "functions without file:line" if why.startswith("functions") else "sites are addresses"
        forms = [f"{objs}: {why}: sites are addresses; {fix}" if fix else f"{objs}: {why}: sites are addresses"]
        if why.startswith("functions"):
            forms = [f"{objs}: {why}; {fix}"]
            if apt:
                forms += [f"{objs}: no line table: {fix} (Debian's debug archive)",
                          f"{objs}: no line table: {fix} (debug archive)", f"{objs}: no line table: {fix}",
                          f"{objs}: no file:line: {fix}"]
            forms += [f"{objs}: no line table: {addresses}"]
        elif apt:
            forms += [f"{objs}: stripped, {addresses}: {fix} (Debian's debug archive)",
                      f"{objs}: stripped: {fix} (Debian's debug archive)",
                      f"{objs}: stripped: {fix} (debug archive)", f"{objs}: stripped: {fix}"]
        if stripped:
            forms += [f"{objs}: stripped, no debug info: sites are addresses; rebuild with -g",
                      f"{objs}: stripped (no symbols): sites are addresses"]
        out.append(next((t for t in forms if len(t) <= where.WIDTH), where.shorten(forms[-1])))
    return out


def explain_lines(f: Finding, number: int, wall_s: float) -> list[str]:
    """Finding `number` in full, wrapped at 80 columns: evidence, what to check, the change."""
    wrap = textwrap.TextWrapper(width=where.WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    out = wrap.wrap(f"{number}. {f.title}")
    out += wrap.wrap(f"  predicted saving: {_saving(f, wall_s)}")
    for e in f.evidence:
        out += wrap.wrap(f"  - {e}")
    if f.warning:
        out += wrap.wrap(f"  warning: {f.warning}")
    if f.check:
        out += wrap.wrap(f"  check before changing the source: {f.check}")
    for k, v in f.changes.items():
        out += wrap.wrap(f"  change ({k}): {v}")
    return out


def _own_cost(advice: Advice) -> str:
    """The profiling run's own time as its budget measured it (the costliest rank's own time over
    its wall time; libcolltune's own_cost line), or nothing where the files do not say. Named
    "own time", not its cost: the wall time pays more than the account sees (page faults, caches,
    the preload; benchmarks/advise/README.md, the twentieth round)."""
    costs = [r.own_cost_ns / r.wall_ns for r in advice.run.ranks if r.own_cost_ns is not None and r.wall_ns]
    return f", profiling's own time ~{100 * max(costs):.1f}%" if costs else ""


def _head_line(nprocs: int, library: str, wall: str, own_cost: str) -> str:
    """The summary's first line in 80 columns: where it is too wide the library loses its version
    first (the JSON keeps it whole), so that the wall time and the profiling's own time are never
    cut in the middle ("Open MPI v4.1...all 9.16 s")."""
    short = re.sub(r"[\s,:;]*\S*\d\S*$", "", library) or library
    for name in (library, short):
        line = f"colltune advise: {nprocs} ranks, {name}; wall {wall}{own_cost}"
        if len(line) <= where.WIDTH:
            return line
    return where.shorten(line)


SCREEN = 40   # lines: advise's output before any details (--explain N, --verify's table)
# What gives way when the next steps need the room, in order (call sites per collective, finding
# rows, point-to-point rows, placement lines): finding rows down to 4, the second call site of
# each collective, the second point-to-point row, rank 0's placement line, a fourth finding row.
# The JSON and the report have all of them.
FITS = ((2, SHOWN_FINDINGS, 2, 3), (2, 5, 2, 3), (2, 4, 2, 3), (1, 4, 2, 3), (1, 4, 1, 3), (1, 4, 1, 1),
        (1, 3, 1, 1))


def summary_lines(advice: Advice, files: dict[str, str], top: int = where.DEFAULT_TOP,
                  room: int | None = None) -> list[str]:
    """The terminal summary: at most 80 columns, one screen before any details. `room`: the lines
    it may take where the next steps follow it (they take the rest of SCREEN, and say what
    `advise --measure` would measure): the rows give way as FITS says."""
    s = advice.shares
    library = advice.run.ranks[0].library.split(",")[0]
    head = [_head_line(advice.run.nprocs, library, where.fmt_s(s["wall_s"]), _own_cost(advice)),
            where.shorten(f"collectives {100 * s['collective_share']:.1f}% of the run "
                          f"({100 * s['wait_fraction']:.0f}% of it waiting); point-to-point "
                          f"{100 * s['p2p_share']:.1f}%")]
    tail = []
    if advice.missing and room is None:
        tail.append(f"{len(advice.missing)} point(s) not in the database: `advise --measure` measures them")
    if not advice.actionable:
        tail.append("no advice: nothing to change")
    if files:
        names = ", ".join(Path(p).name for p in files.values())
        tail.append(where.shorten(f"written: {names} (in {Path(next(iter(files.values()))).parent})"))

    # the sites' whole labels (the screen shows them without their objects): which objects the
    # functions shown without a file:line are in
    labels = [site.label for row in advice.time_table for site in row.sites]
    labels += [f.data[k] for f in advice.findings for k in ("first", "second") if isinstance(f.data.get(k), str)]

    def screen(sites: int, shown: int, p2p_rows: int, placement: int) -> list[str]:
        table = where.text(advice.run, advice.time_table, top, sites=sites, compact=True,
                           tunability=advice.tunability, p2p_rows=p2p_rows)
        lines = head + table + topology.screen_lines(advice.environment, where.WIDTH)[:placement]
        found = finding_lines(advice.findings, s["wall_s"], shown)
        return lines + found + why_addresses(table + found, advice.run, labels) + tail

    for fit in FITS:
        lines = screen(*fit)
        if room is None or len(lines) <= room:
            break
    return lines


def print_summary(advice: Advice, files: dict[str, str], console: Console | None = None,
                  top: int = where.DEFAULT_TOP, room: int | None = None) -> None:
    console = console or Console()
    # Plain text of <= 80 columns (not a rich table): the same lines on any terminal and in logs.
    for line in summary_lines(advice, files, top, room):
        console.out(line, highlight=False)


def print_explained(findings: list[dict[str, Any]] | list[Finding], numbers: tuple[int, ...], wall_s: float,
                    console: Console | None = None) -> None:
    """`--explain N` (repeatable): those findings in full (from the analysis or advise.json)."""
    console = console or Console()
    items = [f if isinstance(f, Finding) else Finding(**f) for f in findings]
    for n in numbers:
        if not 1 <= n <= len(items):
            raise ColltuneError(f"--explain {n}: there are {len(items)} findings (1..{len(items)})")
        for line in explain_lines(items[n - 1], n, wall_s):
            console.out(line, highlight=False)


# --verify's table rows named in a few words (their labels in full are the JSON's and the report's)
VERIFY_LABELS = {"in-situ own cost at the advised points": "in-situ own cost",
                 "in-situ time in MPI calls": "in-situ MPI time"}


def _finding_number(findings: list[Finding], strategy: str, data: dict[str, Any]) -> int | None:
    """The number of the finding (in the list above the table) whose data has `data`'s values."""
    for i, f in enumerate(findings, 1):
        if f.strategy == strategy and all(f.data.get(k) == v for k, v in data.items()):
            return i
    return None


def _point_label(f: PointFigure, number: int | None) -> str:
    collective, nprocs, _ = f.key
    lo, hi = collectives.bin_range(AppPoint(collective, nprocs, f.key[2]))
    text = f"{collective.title()} {where.fmt_bytes(lo)}-{where.fmt_bytes(hi + 1)} @{nprocs}"
    return f"#{number} {text}" if number else text


def verification_lines(v: Verification, findings: list[Finding] | None = None) -> list[str]:
    """--verify in <= 80 columns: a row per figure (the wall time, the in-situ figure, each changed
    point when there are several, each call pattern advised) with both sides' medians, the gain and
    its noise, the prediction and the verdict in a word; points and patterns named by their
    finding's number above; then what the figures conclude (Verification.agreement's lines after
    its first two, which the rows say). The verdicts in full are in the JSON and the report."""
    findings = findings or []
    rows: list[tuple[str | Finding, Comparison, float | None, str]] = [
        ("wall time", v.wall, v.predicted_s, v.wall.word(v.predicted_s, v.changed)),
        (VERIFY_LABELS.get(v.insitu.label, v.insitu.label), v.insitu, v.predicted_s,
         v.insitu.word(v.predicted_s, v.changed))]
    for pf in v.points if len(v.points) > 1 else ():
        number = _finding_number(findings, "collectives", dict(zip(("collective", "nprocs", "bin"), pf.key)))
        rows.append((_point_label(pf, number), pf.comparison, pf.predicted_s, pf.comparison.word(pf.predicted_s)))
    for tf in v.patterns:
        p = tf.pattern
        number = _finding_number(findings, "pattern", {"pattern": p.name, "first": p.first, "second": p.second,
                                                       "nprocs": p.nprocs, "bin": p.bin})
        label: str | Finding = findings[number - 1] if number else p.name
        rows.append((label, tf.comparison, p.saving_s, tf.word()))
    cells = [[fmt_time(statistics.median(c.default_s)), fmt_time(statistics.median(c.tuned_s)),
              f"{fmt_time(c.gain_s)} +- {fmt_time(c.noise_s)}", "-" if predicted is None else fmt_time(predicted),
              word] for _, c, predicted, word in rows]
    head = ["default", "advised", "measured gain", "predicted", "verdict"]
    widths = [max(len(r[i]) for r in [head, *cells]) for i in range(len(head))]
    # the label takes what the figures leave (at least a cut name's 15 characters)
    room = max(where.WIDTH - sum(widths) - len(widths), 15)

    def line(label: str, figures: list[str]) -> str:
        numbers = " ".join(f"{x:>{w}}" for x, w in zip(figures[:-1], widths))
        return f"{label:<{room}} {numbers} {figures[-1]}".rstrip()

    out = [f"--verify: {len(v.wall.default_s)} runs per side, alternating; medians, +- ~95% noise of the gain",
           line("", head)]
    for (label, *_), figures in zip(rows, cells):
        if isinstance(label, Finding):
            # a pattern: its finding's number and brief (its sites) on a line of their own, as
            # the where-table's long names: cut to the label's room they no longer name a site
            number = f"#{findings.index(label) + 1} "
            out.append(number + finding_row(label, where.WIDTH - len(number)))
            out.append(line("", figures))
        else:
            out.append(line(where.shorten(label, room), figures))
    wrap = textwrap.TextWrapper(width=where.WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    for said in v.agreement().splitlines()[2:]:
        out += wrap.wrap(said)
    if v.patterns:
        out.append("both sides run a pattern's calls (a source change): it saves at most their cost")
    out.append('the verdicts in full: advise.json ("verification"), colltune report')
    return out


def print_verification(v: Verification, console: Console | None = None, findings: list[Finding] | None = None) -> None:
    console = console or Console()
    # Plain text of <= 80 columns, as the summary: the same lines on any terminal and in logs.
    for line in verification_lines(v, findings):
        console.out(line, highlight=False)


def verification_json(v: Verification) -> dict[str, Any]:
    return dict(v.as_json())
