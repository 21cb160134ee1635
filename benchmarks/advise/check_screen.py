#!/usr/bin/env python3
"""Check `colltune advise`'s terminal output against issue 34's "What it must show" (fifteenth
round): one screen before the details, nothing wider than 80 columns, and every finding naming
a line of the application's own code (or saying why it cannot).

    .venv/bin/python benchmarks/advise/check_screen.py SCREEN.txt ADVISE.json [SCREEN2.txt JSON2 ...]
    .venv/bin/python benchmarks/advise/check_screen.py --exempt-commands ...   # `  $ ` lines may be wider

SCREEN.txt is advise's output from its `colltune advise:` line on (overhead.py --advise writes
OUT/advise-APP.txt and OUT/advise-APP.json; openfoam.sh OUT writes OUT/advise.txt and
OUT/advise/advise.json). The JSON gives each finding's call sites whole (`data.first`,
`data.second`: the application's frame first, then the layer frames below it, ` <- `); the
screen's rows are the JSON's findings in the same order. Criteria (exit 1 if one fails):

  lines     at most 40 lines (advise prints no details unless asked: the whole output counts)
  width     no line over 80 columns (`--exempt-commands`: the next steps' `  $ ` command lines,
            which are meant to be pasted whole, may be)
  names     every finding row shows one of its sites' application frame: its file:line, its
            function's own name (after the last `::`; whole, or cut in the middle after 6
            characters or more, reported as cut), or for a frame with no symbol its
            `object+0xoffset` whole; the frame must not be the MPI library's, colltune's or a
            known communication layer's. A row cut so that only a piece of a name or a bare
            offset is left fails, as does a row with no site that is not a run setting.
            Findings about the run's settings (placement, eager limit, algorithms, share) have
            no call site and pass as such.
  why       a row that names only an address (no symbol) needs a line of the output saying why
            (no symbols / no line table / stripped)

Prints per application the figures and per finding row its site(s) and verdict.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

MAX_LINES, MAX_WIDTH = 40, 80
FINDING_ROW = re.compile(r"^ ?(\d+) +(\S+(?: \S+)?)  (.*)$")
NO_SITE = {"mapping", "topology", "nodes", "eager", "share", "collectives"}   # run settings
# frames that are not the application's own code: the MPI library, colltune, known layers
NOT_APP = re.compile(r"libmpi|libopen-(pal|rte)|mca_|libcolltune|libPstream|Foam::(reduce|returnReduce|"
                     r"gSum|gMax|gMin|gAverage|gSumMag|gSumProd)\b|[UIO]*Pstream::|MPIU_|boost::mpi")
FILE_LINE = re.compile(r"([\w.+-]+\.\w+):(\d+)")
ADDRESS = re.compile(r"^(\S+)(\+0x[0-9a-f]+)$")
WHY = re.compile(r"no symbols?|no line table|no debug|stripped", re.I)


def app_frame(site: str) -> str:
    """The site's application frame: the label's first frame (the layer frames follow ` <- `)."""
    return site.split(" <- ")[0].strip()


def shown(frame: str, row: str) -> tuple[str, str]:
    """How the row shows the frame: ("named", what) if whole; ("cut-name", what is left) if its
    function's name is cut after 6 characters or more (it still names the function); ("cut",
    what is left) if only its offset or a piece of its object is; ("missing", "") if nothing."""
    if m := FILE_LINE.search(frame):
        file, line = m.groups()
        if f"{file}:{line}" in row or (file in row and f":{line}" in row):
            return "named", f"{file}:{line}"
    if m := ADDRESS.match(frame):
        obj, off = m.groups()
        if obj + off in row:
            return "named", obj + off
        return ("cut", off) if off in row else ("missing", "")
    function = frame.partition(" (")[0]
    name = re.sub(r"<.*>", "", function).split("::")[-1].strip()
    offset = re.search(r"\+0x[0-9a-f]+", frame)
    if name and re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", row):
        return "named", name
    piece = next((name[:n] for n in range(len(name) - 1, 5, -1) if name[:n] + "..." in row), "")
    if piece:   # the function's name cut after 6 characters or more: still names it (reported)
        return "cut-name", piece + "..."
    if offset and offset.group(0) in row:
        return "cut", offset.group(0)
    return "missing", ""


def check(screen: Path, advice: Path, exempt_commands: bool) -> dict:
    text = screen.read_text()
    lines = text.splitlines()
    data = json.loads(advice.read_text())
    wide = [(i + 1, len(x)) for i, x in enumerate(lines) if len(x) > MAX_WIDTH]
    commands = [(i, n) for i, n in wide if lines[i - 1].startswith("  $ ")]
    wide_counted = [w for w in wide if not (exempt_commands and w in commands)]
    start = next((i for i, x in enumerate(lines) if x.startswith("What to change")), None)
    rows = []
    if start is not None:
        for x in lines[start + 2:]:
            if not (m := FINDING_ROW.match(x)):
                break
            rows.append((int(m[1]), x))
    why_given = any(WHY.search(x) for x in lines)
    verdicts = []
    for number, row in rows:
        f = data["findings"][number - 1]
        sites = [f["data"][k] for k in ("first", "second") if isinstance(f.get("data", {}).get(k), str)]
        if not sites:
            ok = f["strategy"] in NO_SITE
            verdicts.append({"row": number, "strategy": f["strategy"], "sites": [], "shown": [],
                             "names": ok, "why": True,
                             "verdict": "run setting: no call site" if ok else "no call site, not a setting"})
            continue
        seen = []
        for s in sites:
            frame = app_frame(s)
            how, what = shown(frame, row)
            layer = bool(NOT_APP.search(frame))
            seen.append({"frame": frame, "how": how, "what": what, "layer": layer,
                         "address_only": bool(ADDRESS.match(frame))})
        named = [s for s in seen if not s["layer"] and (s["how"] == "named" or s["how"] == "cut-name")]
        why = not named or not all(s["address_only"] for s in named) or why_given
        verdict = ("names " + ", ".join(s["what"] + (" (cut)" if s["how"] == "cut-name" else "")
                                        for s in named) if named else
                   "names no application frame: " + "; ".join(
                       f"{s['frame']!r} {'is a layer frame' if s['layer'] else s['how']}"
                       + (f" (left: {s['what']!r})" if s["what"] else "") for s in seen))
        if named and not why:
            verdict += " (an address only; the output does not say why it names no line)"
        verdicts.append({"row": number, "strategy": f["strategy"], "sites": sites, "shown": seen,
                         "names": bool(named), "why": why, "verdict": verdict})
    result = {"screen": str(screen), "lines": len(lines), "wide": wide, "wide_commands": commands,
              "findings_shown": len(rows), "findings_json": len(data["findings"]), "rows": verdicts,
              "criteria": {"lines": len(lines) <= MAX_LINES, "width": not wide_counted,
                           "names": all(v["names"] for v in verdicts), "why": all(v["why"] for v in verdicts)}}
    result["ok"] = all(result["criteria"].values())
    return result


def show(r: dict) -> None:
    c = r["criteria"]
    print(f"{r['screen']}: {r['lines']} lines ({'ok' if c['lines'] else 'FAIL'}, <= {MAX_LINES}); "
          f"{len(r['wide'])} wider than {MAX_WIDTH} ({len(r['wide_commands'])} of them `  $ ` command lines, "
          f"widest {max((n for _, n in r['wide']), default=0)}; {'ok' if c['width'] else 'FAIL'}); "
          f"{r['findings_shown']} of {r['findings_json']} findings shown")
    for v in r["rows"]:
        mark = "ok  " if v["names"] and v["why"] else "FAIL"
        print(f"  {mark} #{v['row']} {v['strategy']}: {v['verdict']}")
    print(f"  criteria: " + ", ".join(f"{k} {'ok' if ok else 'FAIL'}" for k, ok in c.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path, help="pairs of SCREEN.txt ADVISE.json")
    ap.add_argument("--exempt-commands", action="store_true",
                    help="the next steps' `  $ ` command lines may be wider than 80 columns")
    ap.add_argument("--json", type=Path, help="write every result here")
    ap.add_argument("--write-trimmed", type=Path, metavar="DIR",
                    help="also write DIR/<screen's name>-findings.json: the findings' strategy, brief and "
                         "data alone (what this check reads; advise.json keeps the run's points too)")
    args = ap.parse_args()
    if len(args.files) % 2:
        ap.error("give the files in pairs: SCREEN.txt ADVISE.json")
    pairs = list(zip(args.files[::2], args.files[1::2]))
    if args.write_trimmed:
        for screen, advice in pairs:
            found = json.loads(advice.read_text())["findings"]
            keep = [{k: f.get(k) for k in ("strategy", "brief", "title", "data")} for f in found]
            (args.write_trimmed / f"{screen.stem}-findings.json").write_text(
                json.dumps({"findings": keep}, indent=1) + "\n")
    results = [check(s, j, args.exempt_commands) for s, j in pairs]
    for r in results:
        show(r)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    failed = [Path(r["screen"]).name for r in results if not r["ok"]]
    print(f"{len(results) - len(failed)} of {len(results)} pass" + (f"; failed: {', '.join(failed)}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
