"""`fedtheory report`: the page parses, holds every record, draws every bound that has a series, loads nothing
from outside; and a real browser (headless Chromium) renders it without console errors."""
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from fedtheory.checks.series import SERIES_POINTS, compact_measurements, round_series
from fedtheory.cli import main
from fedtheory.report import parse_condition, write_report

ROOT = Path(__file__).resolve().parents[1]
# a small real run that gives every kind of figure: per-round bounds with series and not_applicable rows
# (fedinit.lemma4), a scalar bound swept over beta (fedinit.thm2), a measured rate and a not_applicable rate
# (fedshift.thm1.measured_rate), claims with measured curves (fedinit.claim.interior_optimal_K,
# fedmrur.claim.near_orthogonal)
ONLY = ["fedinit.lemma4", "fedinit.thm2", "fedshift.thm1.measured_rate", "fedinit.claim.interior_optimal_K",
        "fedmrur.claim.near_orthogonal"]
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Parser(HTMLParser):
    """Strict enough for the page: every non-void element closed in order; ids unique; every reference kept."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.ids, self.refs, self.tags = [], [], [], [], []
        self.svg_depth = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
        for k, v in attrs:
            if k in ("href", "src", "xlink:href", "action", "srcset", "poster", "data") and v is not None:
                self.refs.append((tag, k, v))
            if k == "style" and v and "url(" in v:
                self.refs += [(tag, "style", u) for u in re.findall(r"url\(([^)]*)\)", v)]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            if tag in self.stack:
                while self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    results, page = d / "r.json", d / "r.html"
    argv = ["check", "--no-progress", "--only", *ONLY, "--out", str(results), "--report", str(page)]
    saved = sys.argv  # the payload records sys.argv as the command: the command line, not pytest's
    sys.argv = ["fedtheory", *argv]
    try:
        code = main(argv)
    finally:
        sys.argv = saved
    assert code in (0, 1)
    return json.loads(results.read_text()), page.read_text(), page


def _parse(html):
    p = _Parser()
    p.feed(html)
    p.close()
    return p


def test_page_is_valid_html_with_every_record(run):
    payload, html, _ = run
    assert html.startswith("<!DOCTYPE html>")
    p = _parse(html)
    assert not p.errors, p.errors[:5]
    assert not p.stack, p.stack
    assert len(p.ids) == len(set(p.ids)), [i for i in p.ids if p.ids.count(i) > 1][:5]
    results = payload["results"]
    assert results
    for i, r in enumerate(results):  # every record: a table row and a section, both naming its id and verdict
        sec = re.search(rf'<section class="card rec" id="r{i}".*?</section>', html, re.S)
        assert sec, i
        assert r["id"] in sec.group(0) and r["verdict"] in sec.group(0)
        assert f'<a href="#r{i}">{r["id"]}</a>' in html
        assert "fedtheory check --only " in sec.group(0)


def test_every_bound_with_a_series_has_a_figure(run):
    payload, html, _ = run
    with_series = [i for i, r in enumerate(payload["results"]) if r["kind"] == "bound" and r["extra"].get("series")]
    assert with_series
    for i in with_series:
        sec = re.search(rf'<section class="card rec" id="r{i}".*?</section>', html, re.S).group(0)
        assert '<figure class="plot" data-figure="series"><svg' in sec and "measured vs bound over rounds" in sec, i
    kinds = {"sweep", "conditions", "rate", "claim", "tightness"}
    missing = [k for k in kinds if f'data-figure="{k}"><svg' not in html]
    assert not missing  # one of each kind of figure in this run
    assert "measured vs bound over beta" in html


def test_no_external_references(run):
    _, html, _ = run
    p = _parse(html)
    bad = [r for r in p.refs if not r[2].startswith("#")]
    assert not bad, bad[:5]
    assert "link" not in p.tags and "img" not in p.tags and "iframe" not in p.tags
    assert not re.search(r"<script[^>]+src=", html) and "@import" not in html
    # the only http(s) text left: SVG/XML namespace names, which load nothing
    assert set(re.findall(r"https?://[^\s\"')<]+", html)) <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def test_series_are_compact_and_drawable():
    lhs = np.abs(np.random.default_rng(0).normal(size=(1000, 4)))
    s = round_series(lhs, lhs + 1, keep=[777])
    assert len(s["x"]) <= SERIES_POINTS and s["x"][0] == 1 and s["x"][-1] == 1000 and 778 in s["x"]
    assert s["x"] == sorted(s["x"]) and len(s["measured"]) == len(s["bound"]) == len(s["x"])
    assert all(len(repr(v)) <= 12 for v in s["measured"])  # rounded
    assert round_series(np.full((3, 2), np.inf), np.ones((3, 2)))["measured"] == [None] * 3
    m = compact_measurements({"beta": [0, 0.5, 1.0], "samples": np.ones((3, 5)), "names": ["a", "b", "c"], "z": 2.0})
    assert m["x_label"] == "beta" and m["x"] == [0, 0.5, 1.0] and m["series"]["samples"]["y"] == [1, 1, 1]
    assert m["scalars"] == {"z": 2.0}


def test_condition_parsing():
    c = parse_condition("eta_le_1_over_KL: eta <= 1/(K*L) (0.1 vs 0.03739)")
    assert c == {"name": "eta_le_1_over_KL", "relation": "eta <= 1/(K*L)", "actual": 0.1, "required": 0.03739}
    assert parse_condition("C_max_positive: 3/4 - x > 0 (-1017 vs 0)")["actual"] == -1017
    assert parse_condition("requires lr_schedule=inverse_step (run has 'constant')") is None


def test_report_command_and_bad_input(run, tmp_path, capsys):
    payload, _, _ = run
    src = tmp_path / "r.json"
    src.write_text(json.dumps(payload))
    assert main(["report", str(src), "--out", str(tmp_path / "out.html")]) == 0
    assert "HTML report written" in capsys.readouterr().out
    assert (tmp_path / "out.html").read_text().count('<section class="card rec"') == len(payload["results"])
    (tmp_path / "bad.json").write_text("[1, 2]")
    assert main(["report", str(tmp_path / "bad.json")]) == 2
    assert main(["report", str(tmp_path / "missing.json")]) == 2
    assert "RESULTS" in capsys.readouterr().err
    assert write_report(payload, tmp_path / "sub" / "p.html").exists()  # a payload works as well as a path


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(_chromium() is None, reason="no Chromium on PATH (Debian: apt-get install chromium); "
                    ".ci/run installs it in CI, where a failed install skips this test")
def test_chromium_renders_the_page_without_console_errors(run, tmp_path):
    """Headless Chromium renders the page to a PNG; its console stays empty (no script error, no failed load)
    and the sorting/filtering script ran (it writes 'N of N rows'). FEDTHEORY_REPORT_SCREENSHOT=PATH keeps
    the PNG (README's docs/report.png is taken this way)."""
    payload, _, page = run
    exe = _chromium()
    png = Path(os.environ.get("FEDTHEORY_REPORT_SCREENSHOT") or tmp_path / "report.png").resolve()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = subprocess.run([exe, *flags, f"--screenshot={png}", "--window-size=1400,2000", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=180)
    dom = subprocess.run([exe, *flags, "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True,
                         timeout=180)
    for proc in (shot, dom):
        assert proc.returncode == 0, proc.stderr[-2000:]
        console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
        assert not console, console
    n = len(payload["results"])
    assert f">{n} of {n} rows<" in dom.stdout  # the inline script ran to its end
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
