"""The HTML report in a real browser: Debian's headless Chromium (`make setup-chromium`) renders the
check, validation and advice pages; no console error, every image loads, the tables are readable at
1280 px and on a narrow window (the page never scrolls sideways: a wide table scrolls in its own
box), and the test fails when an image is missing. Screenshots: docs/images/report-*.png
(`COLLTUNE_SCREENSHOTS=docs/images` writes them again)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from check_synth import Truth, simulate, write_db
from test_validate import PROFILE, measurements

from colltune.advise import output, profile_run
from colltune.advise.analyze import analyze
from colltune.report import html as report
from colltune.store import Store
from colltune.tune import validate as val
from colltune.verify import check

DATA = Path(__file__).resolve().parent / "data"
BROWSERS = ("chromium-headless-shell", "chromium")
WIDE, NARROW = 1280, 420

# Injected first in <head>: collects load errors of images (and any other resource) and script
# errors, console.error/warn, then on load what the test asserts, as JSON in a <pre> of the DOM.
PROBE = """<script>
(function () {
  var seen = {errors: [], console: []};
  window.addEventListener('error', function (e) {
    var t = e.target;
    seen.errors.push(t && t.tagName ? t.tagName + ' failed to load: ' + (t.alt || '') : 'script error: ' + e.message);
  }, true);
  ['error', 'warn'].forEach(function (level) {
    var f = console[level];
    console[level] = function () { seen.console.push(level + ': ' + [].join.call(arguments, ' ')); f.apply(console, arguments); };
  });
  window.addEventListener('load', function () {
    var view = document.documentElement.clientWidth;
    var imgs = [].slice.call(document.images);
    var cells = [].slice.call(document.querySelectorAll('td, th'));
    var out = document.createElement('pre');
    out.id = 'ct-probe';
    out.textContent = JSON.stringify({
      view: view, page: document.documentElement.scrollWidth, images: imgs.length,
      broken: imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).map(function (i) { return i.alt; }),
      tables: document.querySelectorAll('table').length,
      outside: [].slice.call(document.querySelectorAll('table')).filter(function (t) {
        return t.getBoundingClientRect().right > view + 1; }).length,
      smallest_font: Math.min.apply(null, cells.map(function (c) { return parseFloat(getComputedStyle(c).fontSize); }).concat([99])),
      errors: seen.errors, console: seen.console});
    document.body.appendChild(out);
  });
})();
</script>"""


def browser() -> str:
    for name in BROWSERS:
        if path := shutil.which(name):
            return path
    pytest.skip("no headless Chromium (make setup-chromium installs Debian's chromium-headless-shell)")


def run_browser(page: Path, width: int, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--window-size={width},1000", "--virtual-time-budget=5000", *extra, page.as_uri()]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "HOME": str(page.parent)})


def probe(page: Path, width: int) -> dict:
    """The page rendered at `width` px with the probe injected."""
    probed = page.with_name(f"{page.stem}-probe-{width}.html")
    probed.write_text(page.read_text(encoding="utf-8").replace("<head>", "<head>" + PROBE, 1), encoding="utf-8")
    proc = run_browser(probed, width, "--dump-dom")
    m = re.search(r'<pre id="ct-probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"no probe result from {page} (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(m[1].replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A checked run, a validation run and an advice (a real analysis of tests/data's profiling
    run against the checked run's database), each rendered as `colltune report` writes it."""
    base = tmp_path_factory.mktemp("browser")
    db = base / "r.duckdb"
    truth = Truth(base={"allreduce": 4e-6}, factors={("allreduce", "lib:allreduce:ring"): {1024: 0.6},
                                                     ("bcast", "bcast_as_scatter_allgather"): {65536: 0.75}})
    plan = {"bcast": ["default", "default#aa", "bcast_as_scatter_allgather"],
            "allreduce": ["default", "default#aa", "lib:allreduce:ring"]}
    # a validation run (its runs row says so, its paired comparison is in the validation table),
    # then the checked run
    write_db(db, simulate(truth, {"bcast": ["default", "default#aa"]}, [8], launches=2, reps=4, seed=6),
             run_id="val-1")
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE runs SET kind = 'validate' WHERE run_id = 'val-1'")
    write_db(db, simulate(truth, plan, [8, 1024, 65536], launches=6, reps=12, seed=5), run_id="check-1")
    check.check_db(db, "check-1")
    val.save(db, val.judge(measurements({8: [1.5] * 3, 64: [1.2] * 3}), PROFILE, run_id="val-1"))
    run = profile_run.read(DATA / "advise-imbalance")
    advice = analyze(run, db)
    with Store(db) as store:
        store.add_advice(output.as_json(advice, {}), command="mpiexec -n 2 ./app", out_dir=base / "advise")
    out = {}
    for name, kind in (("check", "check"), ("validate", "validate")):
        out[name] = report.write_report(db, base / name, kind=kind)
    sections = [s for s in report.discover_sections() if s.id == "advise"]
    out["advise"] = report.write_report(db, base / "advise-page", sections=sections)
    return out


@pytest.mark.parametrize("name", ["check", "validate", "advise"])
@pytest.mark.parametrize("width", [WIDE, NARROW])
def test_page_renders_clean_and_readable(pages, name, width):
    seen = probe(pages[name], width)
    assert seen["errors"] == [] and seen["console"] == [], seen
    assert seen["broken"] == [], seen
    assert seen["tables"] > 0 and seen["outside"] == 0, seen
    # the page itself never scrolls sideways; a wide table scrolls in its box
    assert seen["page"] <= seen["view"], seen
    assert seen["smallest_font"] >= 11, seen
    if name == "check":
        assert seen["images"] >= 3, seen   # the check's plots, embedded
    if width == WIDE and (keep := os.environ.get("COLLTUNE_SCREENSHOTS")):
        shot = Path(keep).resolve() / f"report-{name}.png"
        proc = run_browser(pages[name], WIDE, f"--screenshot={shot}")
        assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]


def test_missing_image_fails(pages, tmp_path):
    # The probe must see an image that does not load: one plot's data cut off.
    text = pages["check"].read_text(encoding="utf-8")
    broken = tmp_path / "report.html"
    broken.write_text(re.sub(r'src="data:image/png;base64,[^"]{200}', 'src="data:image/png;base64,AAAA', text, count=1),
                      encoding="utf-8")
    seen = probe(broken, WIDE)
    assert len(seen["broken"]) == 1 and seen["errors"] == ["IMG failed to load: " + seen["broken"][0]], seen


def test_screenshots_in_docs_are_pages_of_the_report():
    for name in ("check", "validate", "advise"):
        shot = Path(__file__).resolve().parents[1] / "docs" / "images" / f"report-{name}.png"
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", shot
