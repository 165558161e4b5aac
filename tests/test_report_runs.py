"""The pictures of a training run (issue 47 item 6): `fedtheory report` draws, from run directories (`--runs DIR`) and
from the results file of `fedtheory check --runs DIR` alike, Delta^t, the generalization gap and the test accuracy over
the rounds (a line per setting, mean +- 2 SE over its seeds), each axis naming its quantity and unit; claim figures
name theirs too, one panel per unit, and titles wrap instead of being cut."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from fedtheory.cli import main
from fedtheory.empirical.runs import METRICS, find_runs, round_curves
from fedtheory.report import render_report

TINY = ["--dataset", "digits", "--model", "cnn2", "--model-option", "channels=2,4", "--model-option", "hidden=8",
        "--algorithm", "FedInit", "--hp", "beta=0,0.1", "--seeds", "0", "1", "--clients", "4",
        "--clients-per-round", "2", "--rounds", "4", "--local-steps", "2", "--batch-size", "16", "--lr", "0.1",
        "--checkpoint-every", "4", "--no-progress"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    assert main(["train", "--out", str(root / "sweep"), *TINY]) == 0
    return root


def _svgs(html: str, kind: str) -> list[str]:
    return re.findall(rf'<figure class="plot" data-figure="{kind}">(.*?)</figure>', html, flags=re.S)


def _texts(svg: str) -> str:
    """The text an SVG figure shows (matplotlib keeps text as text: svg.fonttype none), lines joined by spaces."""
    return " ".join(" ".join(re.sub(r"<[^>]+>", " ", t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg,
                                                                        flags=re.S)).split())


def test_round_curves_are_the_mean_and_standard_error_over_each_settings_seeds(runs):
    """Against pandas on metrics.csv: per (beta, round), the mean and the standard error over the seeds."""
    (block,) = round_curves(find_runs(runs))
    frame = pd.read_csv(runs / "sweep" / METRICS)
    assert [s["setting"] for s in block["settings"]] == ["beta=0", "beta=0.1"]
    for st in block["settings"]:
        beta = float(st["setting"].split("=")[1])
        assert st["seeds"] == [0, 1] and st["diverged"] == []
        for c in ("delta", "gen_gap", "test_acc"):
            g = frame[frame["beta"] == beta].groupby("round")[c]
            mean, se = g.mean(), g.std(ddof=1) / np.sqrt(g.count())
            cur = st["curves"][c]
            assert cur["round"] == list(range(5)) and cur["n"] == [2] * 5
            np.testing.assert_allclose(cur["mean"], mean.to_numpy(), rtol=1e-5, atol=1e-12)
            np.testing.assert_allclose(cur["se"], se.to_numpy(), rtol=1e-5, atol=1e-12)
    assert block["units"] == {"delta": "squared parameter distance", "gen_gap": "nats", "test_acc": "fraction correct"}


def test_report_draws_training_runs_from_run_directories(runs, tmp_path, capsys):
    out = tmp_path / "runs.html"
    assert main(["report", "--runs", str(runs), "--out", str(out)]) == 0
    html = out.read_text()
    (svg,) = _svgs(html, "training")
    text = _texts(svg)
    for label in ("Delta^t, the clients' divergence (squared parameter distance)",
                  "generalization gap, test - train loss (nats)", "test accuracy (fraction correct)",
                  "round t (communication rounds; 0 is the initial model)", "beta=0 (2 seeds)", "beta=0.1 (2 seeds)"):
        assert label in text, label
    assert "measured value" not in html and "\u2026" not in text  # nothing cut
    assert "1 training run directory" in html and 'id="table"' not in html  # no empty verdict table


def test_report_draws_the_same_pictures_from_check_results(runs, tmp_path, capsys):
    """`check --runs DIR --out R.json` keeps the curves; `report R.json` draws them as `report --runs DIR` does."""
    res = tmp_path / "r.json"
    assert main(["check", "--runs", str(runs), "--only", "empirical", "fedinit.exp", "--out", str(res),
                 "--no-progress"]) in (0, 1)
    capsys.readouterr()
    payload = json.loads(res.read_text())
    assert payload["runs"] == json.loads(json.dumps(round_curves(find_runs(runs))))
    assert main(["report", str(res), "--out", str(tmp_path / "a.html")]) == 0
    assert main(["report", "--runs", str(runs), "--out", str(tmp_path / "b.html")]) == 0
    a, b = ((tmp_path / n).read_text() for n in ("a.html", "b.html"))
    same = lambda svg: re.sub(r"\bf\d+-", "f-", svg)  # noqa: E731 - the figures' id prefixes count the page's figures
    assert [same(x) for x in _svgs(a, "training")] == [same(x) for x in _svgs(b, "training")]
    # the rows decided on these runs are listed under the picture, linked to their sections
    assert "checked on these runs" in a and 'href="#r0">empirical.runs</a>' in a


@pytest.mark.parametrize("argv, needle", [
    (["report"], "RESULTS=None is invalid"),
    (["report", "--runs", "{empty}"], "--runs="),
    (["report", "--runs", "{missing}"], "--runs="),
])
def test_report_without_input_or_with_no_runs_is_refused(argv, needle, tmp_path, capsys):
    argv = [a.format(empty=tmp_path, missing=tmp_path / "nope") for a in argv] + ["--out", str(tmp_path / "x.html")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_malformed_curves_in_a_results_file_are_refused(runs, tmp_path, capsys):
    bad = {"results": [], "runs": [{"dir": "d", "quantities": {"delta": "Delta^t"},
                                     "settings": [{"setting": "x", "curves": {"delta": {"round": [0, 1],
                                                                                        "mean": [1.0]}}}]}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["report", str(path), "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert "runs[0].settings[0].curves['delta']" in err and "1 mean value(s) for 2 round(s)" in err


def _claim_row(**extra_measurements):
    return {"id": "toy.claim", "paper": "toy", "kind": "claim", "verdict": "claim_supported",
            "problem": "a problem whose name is long enough that a title of one line could never hold it whole",
            "params": {"setting": "a setting described at length, with every word of it kept in the title"},
            "extra": {"measurements": {"x_label": "beta", "x": [0.0, 0.1, 0.2],
                                       "series": {"gen_gap": {"y": [0.1, 0.2, 0.3]}, "acc": {"y": [0.5, 0.6, 0.7]},
                                                  "score": {"y": [3.0, 2.0, 1.0]}}, **extra_measurements}}}


def test_claim_figures_name_each_quantity_and_unit_on_panels_of_one_unit():
    """'measured value' was every claim figure's y axis, with series of different units on one axis; a title was cut
    at 54 characters."""
    html = render_report({"results": [_claim_row(units={"acc": "fraction correct"})]})
    (svg,) = _svgs(html, "claim")
    text = _texts(svg)
    assert "measured value" not in text
    assert "generalization gap, test - train loss (nats)" in text  # a catalogued quantity: its words and unit
    assert "acc (fraction correct)" in text  # the claim's own declaration (Claim.measurement_units)
    assert "score (unit not declared)" in text  # said, not guessed
    assert text.count("(the swept setting)") == 1  # three panels, one shared abscissa
    for word in ("long", "enough", "whole", "every", "word", "kept", "title"):
        assert word in text
    assert "\u2026" not in text


def test_a_bound_stated_over_the_rounds_of_logged_runs_is_drawn_on_its_quantitys_panel(runs):
    """A check on logged runs that states a bound over the rounds (a plug-in's: assess_bound's series, the run
    directory in extra.dir) has its curve drawn on the panel of its left side."""
    (block,) = round_curves(find_runs(runs))
    row = {"id": "toy.delta_bound", "paper": "toy", "kind": "bound", "verdict": "holds", "problem": block["label"],
           "params": {}, "extra": {"dir": block["dir"], "lhs": "delta",
                                   "series": {"x": [1, 2, 3, 4], "measured": [0.1, 0.2, 0.2, 0.2],
                                              "bound": [1.0, 1.0, 1.0, 1.0], "x_label": "round t", "runs": 4}}}
    html = render_report({"results": [row]}, runs=[block])
    (svg,) = _svgs(html, "training")
    assert "bound: toy.delta_bound (holds)" in _texts(svg)
    assert "bound: toy" not in _texts(_svgs(render_report({"results": []}, runs=[block]), "training")[0])


def test_a_claims_declared_units_reach_the_results_and_the_axes():
    from fedtheory.checks import claim_result
    from fedtheory.theory import Claim, ClaimOutcome, SymbolSet

    claim = Claim(id="unitsclaim.c", paper="unitsclaim", title="t", source="s", symbols=SymbolSet("unitsclaim"),
                  predicate=lambda m: ClaimOutcome(True, "ok", None), measurements=("beta", "acc", "other"),
                  measurement_units={"acc": "fraction correct", "beta": "relaxation coefficient", "unused": "x"})
    row = claim_result(claim, {"beta": [0.0, 0.1], "acc": [0.5, 0.6], "other": [1.0, 2.0]}).to_json()
    assert row["extra"]["measurements"]["units"] == {"acc": "fraction correct", "beta": "relaxation coefficient"}
    text = _texts(_svgs(render_report({"results": [row]}), "claim")[0])
    assert "acc (fraction correct)" in text and "beta (relaxation coefficient)" in text
    assert "other (unit not declared)" in text
