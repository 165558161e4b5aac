"""`fedtheory report` (issue 34, sections 3 and 4): the tightness table of a collection of papers (the zoo) and the
mutation-score section, each drawn from a small payload written here with numbers worked by hand; absent data shown
'-'; a malformed mutation file refused (exit 2, naming it); and one run end to end on drori2014."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fedtheory.checks.schema import SchemaError, check_mutation_payload
from fedtheory.cli import main
from fedtheory.report import render_report, tightness_markdown, tightness_table, write_report

ROOT = Path(__file__).resolve().parents[1]


def _row(rid, verdict, ratio, problem="p", setting="s", kind="bound", paper="pz", **kw):
    return {"id": rid, "paper": paper, "kind": kind, "verdict": verdict, "ratio": ratio, "problem": problem,
            "params": {"setting": setting}, "source": "Z. Author, A classic theorem, Thm 1", "extra": {}, **kw}


def _payload(worst=True):
    """pz.thm1: rows holding with bound/measured 2, 1.25 and 'inf' (nothing measured), one violated at 0.5 (not a
    holding row), one not applicable; tightest measured/bound = max(1/2, 1/1.25, 0) = 0.8 on problem 'quad', setting
    'eta=0.1'. Search: 0.3 / 0.5 = 0.6 (the better of two searches; 0.2 / 0.5 = 0.4 the other); PEP: 0.45 / 0.5 = 0.9.
    pz.thm2: no holding row, no worst case: every number '-'. other.thm1: a paper outside the collection."""
    rows = [
        _row("pz.thm1", "holds", 2.0, extra={"transcription": "checked against the paper's Thm 1"}),
        _row("pz.thm1", "holds", 1.25, problem="quad", setting="eta=0.1"),
        _row("pz.thm1", "holds", "inf", problem="flat"),
        _row("pz.thm1", "violated", 0.5, problem="bad", scope="outside_conditions"),
        _row("pz.thm1", "not_applicable", None),
        _row("pz.thm1.rate", "rate_consistent", None, kind="symbolic"),
        _row("pz.thm1.units", "holds", None, kind="symbolic"),
        _row("pz.thm2", "violated", 0.9, scope="unverified_transcription"),
        _row("other.thm1", "holds", 1.0, paper="other"),
    ]
    p = {"results": rows, "collections": {"zoo": {"papers": ["pz"], "rows": 8, "counted": 0, "unverified": 1}},
         "profile": "quick", "seed": 0}
    if worst:
        p["worst_case"] = [
            {"id": "pz.thm1", "method": "search", "worst_measured": 0.2, "bound": 0.5, "slack": 2.5, "verdict": "holds",
             "evaluations": 64, "note": "quadratics"},
            {"id": "pz.thm1", "method": "search", "worst_measured": 0.3, "bound": 0.5, "slack": 5 / 3,
             "verdict": "holds", "evaluations": 256, "note": "quadratics"},
            {"id": "pz.thm1", "method": "pep", "worst_measured": 0.45, "bound": 0.5, "slack": 0.5 / 0.45,
             "verdict": "holds", "exact": True},
        ]
    return p


def test_tightness_table_numbers_by_hand():
    t = tightness_table(_payload())
    assert [r["record"] for r in t] == ["pz.thm1", "pz.thm2"]  # bound records of the collection only
    a, b = t
    assert a["collection"] == "zoo" and a["paper"] == "pz" and a["rows"] == 5
    assert a["verdicts"] == {"holds": 3, "not_applicable": 1, "violated": 1}
    assert a["other"] == {"rate": "rate_consistent", "units": "holds"}
    assert a["source"].startswith("Z. Author") and a["transcription"].startswith("checked against")
    assert a["simulation"]["ratio"] == pytest.approx(0.8) and a["simulation"]["problem"] == "quad"
    assert a["simulation"]["setting"] == "eta=0.1" and a["simulation"]["index"] == 1
    assert a["worst_case"]["ratio"] == pytest.approx(0.6) and a["worst_case"]["evaluations"] == 256
    assert a["pep"]["ratio"] == pytest.approx(0.9) and a["pep"]["value"] == 0.45 and a["pep"]["exact"] is True
    assert b["simulation"] is None and b["worst_case"] is None and b["pep"] is None
    assert b["transcription"] == "unverified"  # only the row's scope says so
    json.dumps(t)  # JSON values only
    md = tightness_markdown(_payload())
    line = next(ln for ln in md.splitlines() if "`pz.thm1`" in ln)
    assert "**0.800** (quad; eta=0.1)" in line and "| 0.600 |" in line and "0.900 (value 0.45, exact)" in line
    line2 = next(ln for ln in md.splitlines() if "`pz.thm2`" in ln)
    assert line2.endswith("| - | - | - |") and "unverified" in line2


def test_absent_worst_case_and_collections_show_dashes():
    t = tightness_table(_payload(worst=False))
    assert t[0]["simulation"]["ratio"] == pytest.approx(0.8)
    assert t[0]["worst_case"] is None and t[0]["pep"] is None
    md = tightness_markdown(_payload(worst=False))
    assert next(ln for ln in md.splitlines() if "`pz.thm1`" in ln).endswith("| - | - |")
    bare = _payload()
    del bare["collections"]
    assert tightness_table(bare) == [] and tightness_markdown(bare) == ""


def _cells(html, rid):
    row = re.search(rf'<tr data-record="{re.escape(rid)}">(.*?)</tr>', html, re.S).group(1)
    return {cls: re.sub(r"<[^>]+>", "", m).strip() for cls, m in
            re.findall(r'<td class="num (sim|worst|pep)"[^>]*>(.*?)</td>', row, re.S)}


def test_tightness_section_on_the_page():
    html = render_report(_payload())
    assert 'id="tightness"' in html and 'data-collection="zoo"' in html
    assert _cells(html, "pz.thm1") == {"sim": "0.800", "worst": "0.600", "pep": "0.900"}
    assert _cells(html, "pz.thm2") == {"sim": "-", "worst": "-", "pep": "-"}
    assert 'data-record="other.thm1"' not in html
    html = render_report(_payload(worst=False))
    assert _cells(html, "pz.thm1") == {"sim": "0.800", "worst": "-", "pep": "-"}
    bare = _payload()
    del bare["collections"]
    assert 'id="tightness"' not in render_report(bare)


def _mutation():
    """Two records: 3 killed (units 1, simulation 2) + 1 survived + 1 weaker; 0 killed + 0 survived + 1 equivalent.
    Score 3 / (3 + 1) = 0.75 overall and for pz.thm1; None (shown '-') for pz.thm2."""
    out1 = [{"kind": "scale", "mutant": "the whole bound x 1/2", "status": "killed", "layer": "simulation",
             "reason": "", "rows": ["quad (eta=0.1): violated"]},
            {"kind": "term", "mutant": "the term L*R**2 dropped", "status": "killed", "layer": "simulation",
             "reason": "", "rows": []},
            {"kind": "exponent", "mutant": "T moved by -1", "status": "killed", "layer": "units", "reason": "",
             "rows": []},
            {"kind": "scale", "mutant": "the whole bound x 1/10", "status": "survived", "layer": "",
             "reason": "looser than the mutation on every instance tried: 12.5x", "rows": []},
            {"kind": "swap", "mutant": "mu replaced by L", "status": "weaker", "layer": "", "reason": "not below",
             "rows": []}]
    rec1 = {"record": "pz.thm1", "mutants": 5, "killed": 3, "survived": 1, "equivalent": 0, "weaker": 1,
            "undecided": 0, "score": 0.75, "killed_by": {"units": 1, "rate": 0, "simulation": 2}, "seconds": 0.5,
            "note": "", "outcomes": out1}
    rec2 = {"record": "pz.thm2", "mutants": 1, "killed": 0, "survived": 0, "equivalent": 1, "weaker": 0,
            "undecided": 0, "score": None, "killed_by": {"units": 0, "rate": 0, "simulation": 0}, "seconds": 0.1,
            "note": "units and rate layers only",
            "outcomes": [{"kind": "coefficient", "mutant": "2 -> 1", "status": "equivalent", "layer": "",
                          "reason": "sympy proves the mutant equal to the statement", "rows": []}]}
    return {"command": ["fedtheory", "check", "--mutants", "--only", "pz"], "profile": "quick", "seed": 0,
            "elapsed_s": 0.6, "overall": {"records": 2, "mutants": 6, "killed": 3, "survived": 1, "equivalent": 1,
                                          "weaker": 1, "undecided": 0, "score": 0.75,
                                          "killed_by": {"units": 1, "rate": 0, "simulation": 2}},
            "records": [rec1, rec2]}


def test_mutation_section_on_the_page(tmp_path, capsys):
    check_mutation_payload(_mutation())
    res, mut, out = tmp_path / "r.json", tmp_path / "m.json", tmp_path / "page.html"
    res.write_text(json.dumps(_payload()))
    mut.write_text(json.dumps(_mutation()))
    assert main(["report", str(res), "--mutants", str(mut), "--out", str(out)]) == 0
    html = out.read_text()
    sec = html[html.index('<h2 id="mutation">'):html.index('<h2 id="table">')]
    assert '<b class="mscore">0.750</b>' in sec
    assert "6 mutants: 3 killed, 1 survived, 1 equivalent, 1 weaker (discarded), 0 undecided" in sec
    assert re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", sec)).count("units 1 rate 0 simulation 2") == 1
    row1 = re.search(r'<tr data-record="pz.thm1">(.*?)</tr>', sec, re.S).group(1)
    assert [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row1)] == \
        ["pz.thm1", "5", "3", "units 1, rate 0, simulation 2", "1", "0", "1", "0", "0.750"]
    row2 = re.search(r'<tr data-record="pz.thm2">(.*?)</tr>', sec, re.S).group(1)
    assert row2.rstrip().endswith('<td class="num">-</td>') and "units and rate layers only" in row2
    assert "Survivors and why (1)" in sec and "the whole bound x 1/10: looser than the mutation on every instance " \
                                                 "tried: 12.5x" in sec
    assert "x 1/2" not in sec.split("Survivors and why")[1]  # only survivors are listed
    assert 'href="#mutation"' in html
    assert 'id="mutation"' not in render_report(_payload())  # no --mutants: no section


@pytest.mark.parametrize("break_it, names", [
    (lambda m: m.pop("records"), "no 'records'"),
    (lambda m: m["overall"].update(score=1.5), "'score' is 1.5"),
    (lambda m: m["records"][0]["outcomes"][0].update(status="zombie"), "outcome 0: 'status' is 'zombie'"),
    (lambda m: m["records"][1].update(killed=-1), "'pz.thm2'"),
    (lambda m: m["records"][0]["killed_by"].update(units="1"), "killed_by['units']"),
    (lambda m: m["records"][0].pop("outcomes"), "no 'outcomes'"),
])
def test_malformed_mutation_file_exits_2_naming_it(tmp_path, capsys, break_it, names):
    res, mut = tmp_path / "r.json", tmp_path / "broken-mutants.json"
    res.write_text(json.dumps(_payload()))
    m = _mutation()
    break_it(m)
    mut.write_text(json.dumps(m))
    with pytest.raises(SchemaError):
        check_mutation_payload(m)
    assert main(["report", str(res), "--mutants", str(mut), "--out", str(tmp_path / "p.html")]) == 2
    err = capsys.readouterr().err
    assert "--mutants" in err and "broken-mutants.json" in err and names in err, err
    assert not (tmp_path / "p.html").exists()


def test_mutation_file_that_is_not_one(tmp_path, capsys):
    res = tmp_path / "r.json"
    res.write_text(json.dumps(_payload()))
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "dir.json").mkdir()
    for bad in ("text.json", "dir.json", "missing.json", "r.json"):
        assert main(["report", str(res), "--mutants", str(tmp_path / bad), "--out", str(tmp_path / "p.html")]) == 2
        err = capsys.readouterr().err
        assert "--mutants" in err and bad in err, (bad, err)
    mut = tmp_path / "m.json"
    mut.write_text(json.dumps(_mutation()))
    assert main(["report", str(mut), "--out", str(tmp_path / "p.html")]) == 2  # a mutation file as RESULTS
    assert "it is a mutation file" in capsys.readouterr().err


def test_report_help_documents_mutants(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--mutants M.json" in out and "mutation score" in out and "tightest" in out


def test_end_to_end_drori2014(tmp_path, capsys):
    """`fedtheory check --profile quick --only drori2014 --out R.json`, then the report: drori2014.thm3_1's tightest
    ratio is 1.000 (the Drori-Teboulle Huber instance attains the bound); with its mutation file, the score."""
    res, mut, page = tmp_path / "R.json", tmp_path / "M.json", tmp_path / "page.html"
    assert main(["check", "--no-progress", "--profile", "quick", "--only", "drori2014", "--out", str(res)]) == 0
    assert main(["check", "--mutants", "--profile", "quick", "--only", "drori2014", "--out", str(mut)]) == 0
    assert main(["report", str(res), "--mutants", str(mut), "--out", str(page)]) == 0
    capsys.readouterr()
    payload = json.loads(res.read_text())
    row = next(r for r in tightness_table(payload) if r["record"] == "drori2014.thm3_1")
    assert row["simulation"]["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert row["simulation"]["problem"].startswith("dt_huber")
    assert row["transcription"].startswith("checked against") and row["worst_case"] is None and row["pep"] is None
    html = page.read_text()
    assert _cells(html, "drori2014.thm3_1") == {"sim": "1.000", "worst": "-", "pep": "-"}
    assert re.search(r'<b class="mscore">[01]\.\d{3}</b>', html)
    assert '<tr data-record="drori2014.thm3_1"><td>drori2014.thm3_1' in html  # its mutation row
    md = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "zoo_tightness.py"), str(res)], capture_output=True,
                        text=True, timeout=120, cwd=ROOT)
    assert md.returncode == 0, md.stderr
    assert re.search(r"\| `drori2014\.thm3_1` \|.*\| \*\*1\.000\*\* \(dt_huber", md.stdout)
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "zoo_tightness.py"), str(mut)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 2 and "M.json" in bad.stderr
    assert write_report(payload, tmp_path / "p2.html", mutants=json.loads(mut.read_text())).exists()


def test_a_bound_searched_without_simulation_rows_is_listed():
    p = _payload()
    p["worst_case"].append({"id": "pz.thm9", "method": "search", "worst_measured": 1.0, "bound": 4.0,
                            "verdict": "holds"})
    p["worst_case"].append({"id": "elsewhere.thm1", "method": "search", "worst_measured": 1.0, "bound": 2.0})
    row = next(r for r in tightness_table(p) if r["record"] == "pz.thm9")
    assert row["rows"] == 0 and row["simulation"] is None and row["worst_case"]["ratio"] == pytest.approx(0.25)
    assert "elsewhere.thm1" not in [r["record"] for r in tightness_table(p)]
