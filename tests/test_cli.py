"""The command line: subcommands, formats, exit codes (0 clean, 1 findings, 2 bad usage)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from fedtheory.cli import main


def test_list_and_explain(capsys):
    assert main(["list", "--paper", "fedinit"]) == 0
    out = capsys.readouterr().out
    assert "fedinit.thm1" in out and "fedinit.claim.unbiased" in out
    assert main(["list", "--format", "json", "--kind", "claim"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["kind"] == "claim" for r in rows)
    assert main(["list", "--checks"]) == 0
    assert "fedinit.rates" in capsys.readouterr().out
    assert main(["explain", "fedinit.thm2"]) == 0
    out = capsys.readouterr().out
    assert "conditions:" in out and "stated order" in out and "000_278c463b157eab5b.txt" in out


def test_list_assumptions_table_and_json(capsys, tmp_path):
    """issue 47: `list --assumptions`: every catalogue entry with its constants (dimension, direction) and what
    certifies it (globally, on a run's visited region, or nobody), a plug-in's own entry included."""
    from fedtheory.theory import CATALOGUE

    assert main(["list", "--assumptions", "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(CATALOGUE)
    g = rows["bounded_grad_norm"]
    assert g["subject"] == "problem" and g["constants"] == [{"name": "G", "dimension": "f/w", "direction": "upper",
                                                             "meaning": ""}]
    assert g["certified_by"] == ["Huber"] and g["answers"]["Huber"]["constants"]["G"] > 0
    assert {"by": "least squares", "measure": "visited_client_grad2"} in g["visited_only"]
    assert "least squares" not in g["refused_by"]
    assert rows["mixing_matrix"]["certified_by"] == ["ring", "grid3x3", "exponential", "full"]
    assert rows["consensus_rate"]["unknown_by"] == ["random(k=3)"]
    assert rows["regularizer_smooth"]["certified_by"] == ["FedAvg"]
    assert rows["sampling_with_replacement"]["certified_by"] == []
    assert rows["strongly_convex"]["constants"][0]["direction"] == "lower"
    assert main(["list", "--assumptions"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["assumption", "about", "constants", "statement,", "and", "what",
                                           "certifies", "it"]
    assert "mu [f/w^2] (lower)" in out and "on the visited region of a run that records 'visited_client_grad2'" in out
    # a plug-in's own assumption is listed, certified by none of the shipped representatives
    plug = tmp_path / "ownassume.py"
    plug.write_text("from fedtheory.theory import register_assumption\n"
                    "register_assumption('bounded_second_moment', 'E||g||^2 <= M^2', subject='oracle', "
                    "constants=[('M', 'f/w')])\n")
    assert main(["list", "--assumptions", "--plugin", str(plug), "--format", "json"]) == 0
    own = {r["name"]: r for r in json.loads(capsys.readouterr().out)}["bounded_second_moment"]
    assert own["certified_by"] == [] and set(own["refused_by"]) | set(own["unknown_by"]) and \
        own["constants"][0]["dimension"] == "f/w"


def _header_is_words(line: str) -> bool:
    """A table's header line made of words: each cell's tokens letters (or hyphenated words), at least three letters
    unless an English function word (no 'id', 's', 'equiv.')."""
    import re

    small = {"a", "an", "by", "it", "of", "on", "or", "to", "in"}
    tokens = [t.strip(",():") for t in line.split()]
    return all(re.fullmatch(r"[A-Za-z]+(-[A-Za-z]+)*", t) and (len(t) >= 3 or t in small) for t in tokens if t)


@pytest.mark.parametrize("argv", [["list"], ["list", "--checks"], ["list", "--measures"], ["list", "--plugins"],
                                  ["list", "--assumptions"], ["check", "--controls", "--only", "fedshift.thm1.rate",
                                                              "--no-progress"]])
def test_table_headers_are_words(argv, capsys):
    """issue 47: the headers of the `list` tables and the controls table are words ('record', 'check', 'measure',
    'plug-in', 'outcome'), not 'id'."""
    assert main(argv) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert _header_is_words(header), header


def test_the_controls_table_prints_each_control_whole(capsys):
    """issue 47: a control's description was cut at 48 characters ('... every stated order claimed one power of T
    faste~') and its outcome printed as an identifier; now the outcome is words and the description wraps whole, before
    its counted row."""
    from fedtheory.checks import all_checks

    assert main(["check", "--controls", "--only", "fedshift.thm1.rate", "--no-progress"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    description = " ".join(all_checks()["fedshift.thm1.rate"].control.description.split())
    assert len(description) > 48 and description in flat
    assert "fails as required" in out and "Counted row: fedshift.thm1.rate.rate rate_inconsistent" in flat


@pytest.mark.parametrize("argv, needle", [
    (["explain", "nope.thm1"], "ID="),
    (["list", "--paper", "fedavgx"], "--paper="),
    (["list", "--kind", "lemma"], "--kind="),
    (["check", "--only", "fedinit.nothing"], "--only="),
    (["check", "--seed", "-3"], "--seed="),
    (["check", "--runs", "/nonexistent/dir"], "--runs="),
])
def test_bad_input_exits_2_with_the_parameter_named(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("extra, needle", [
    (["--algorithm", "FedInit", "--hp", "beta=abc"], "beta='abc'"),
    (["--algorithm", "FedSAM", "--hp", "rho=abc"], "rho='abc'"),
    (["--algorithm", "FedInit", "--hp", "nonsense=1"], "'nonsense'"),
    (["--algorithm", "FedAvg", "--rounds", "0"], "rounds=0"),
    (["--algorithm", "FedAvg", "--partition", "dirichlet", "--alpha", "-1"], "alpha=-1"),
])
def test_train_bad_input_exits_2_with_the_parameter_named(tmp_path, extra, needle, capsys):
    argv = ["train", "--out", str(tmp_path / "run"), "--dataset", "digits", "--rounds", "1", "--no-progress", *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_argparse_errors_exit_2():
    with pytest.raises(SystemExit) as e:
        main(["check", "--profile", "huge"])
    assert e.value.code == 2


def test_check_json_and_exit_codes(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["check", "--only", "fedshift.thm1.denominator", "fedinit.claim.unbiased", "--format", "json",
                 "--out", str(out)])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1  # FedShift Thm 1's denominator under "eps > 0": a finding
    assert payload["exit_code"] == 1 and json.loads(out.read_text()) == payload
    verdicts = [r["verdict"] for r in payload["results"]]
    assert "violated" in verdicts and "claim_supported" in verdicts and "ambiguous" in verdicts
    code = main(["check", "--only", "fedinit.eq15", "fedinit.eq3", "--seed", "3"])
    assert code == 0
    assert "holds" in capsys.readouterr().out


def test_check_timings_table_and_json(tmp_path, capsys):
    """Every selected check's seconds: a table with --timings, always in the JSON (issue 26)."""
    out = tmp_path / "r.json"
    only = ["fedinit.eq15", "fedinit.eq3", "fedshift.eq11", "fedshift.thm1.rate"]
    assert main(["check", "--only", *only, "--timings", "--out", str(out), "--no-progress"]) in (0, 1)
    text = capsys.readouterr().out
    table = text[text.index("seconds per check:"):]
    assert all(c in table for c in only) and "loading the plug-ins" in table and "s CPU" in table
    payload = json.loads(out.read_text())
    timings = {t["check"]: t for t in payload["timings"]}
    # the records' rows of fedshift.units: fedshift.eq11.units, fedshift.thm1.rate.units (issue 43, item 6)
    assert sorted(timings) == sorted(only + ["fedshift.units"])
    units = sorted(r["id"] for r in payload["results"] if r["id"].endswith(".units"))
    assert units == ["fedshift.eq11.units", "fedshift.thm1.rate.units"]
    rows = {c: sum(1 for r in payload["results"] if r["id"].startswith(c) and not r["id"].endswith(".units"))
            for c in only}
    rows["fedshift.units"] = len(units)
    for c, t in timings.items():
        assert t["seconds"] >= 0 and t["cpu_seconds"] >= 0 and t["rows"] == rows[c]
        symbolic = c in ("fedshift.thm1.rate", "fedshift.units")
        assert t["where"] in (("symbolic worker", "here") if symbolic else ("here", "worker"))
        assert (t["simulations"] == 0) if symbolic else (t["simulations"] >= 1)
    assert abs(sum(t["seconds"] for t in timings.values())
               - sum(r["elapsed_s"] for r in payload["results"])) < 1e-2
    assert payload["load_s"] is not None and payload["load_s"] >= 0


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "fedtheory.cli", "explain", "fedinit.eq15"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "eq. (15)" in r.stdout


def test_parameter_error_shows_short_values_and_survives_ragged_ones():
    from fedtheory._validation import ParameterError

    assert str(ParameterError("seeds", np.array([-1]), "non-negative")).startswith("seeds=[-1] is invalid")
    assert "array(shape=(100,))" in str(ParameterError("w", np.zeros(100), "finite"))
    assert str(ParameterError("x", [[1], [2, 3]], "rectangular")).startswith("x=[[1], [2, 3]] is invalid")


def test_checks_run_with_one_blas_thread(tmp_path):
    """issue 26: `fedtheory check` runs its checks with one BLAS thread, as its --workers do: small matrices gain
    nothing from threads (a 100 x 100 eigvalsh took 35x longer with two on a loaded 2-core machine) and the numbers
    do not depend on the host's core count. (On a one-core host this holds before the change too.)"""
    plug = tmp_path / "probe.py"
    plug.write_text(
        "from threadpoolctl import threadpool_info\n"
        "from fedtheory.checks import CheckResult, check\n\n"
        "@check('blasprobe.threads', 'blasprobe', 'bound')\n"
        "def threads(s):\n"
        "    \"\"\"The BLAS threads the check runs with.\"\"\"\n"
        "    n = max([i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'] or [1])\n"
        "    return [CheckResult('blasprobe.threads', 'blasprobe', 'bound', 'holds', measured=float(n), bound=1.0)]\n")
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(plug), "--only",
                        "blasprobe", "--format", "json"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["results"][0]["measured"] == 1.0


def test_list_and_explain_import_no_heavy_library():
    """issue 26: `fedtheory list` and `explain` load the plug-ins (their records need sympy) but not scipy, torch,
    scikit-learn, pandas or matplotlib: those are imported where a check, a report or training uses them."""
    code = ("import sys\nfrom fedtheory.cli import main\n"
            "assert main(['list']) == 0 and main(['explain', 'fedinit.thm1']) == 0\n"
            "heavy = ('scipy', 'torch', 'sklearn', 'pandas', 'matplotlib')\n"
            "print('LOADED', sorted(m for m in heavy if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "LOADED []"


def test_one_process_runs_every_check_here(tmp_path, capsys):
    """issue 26: --one-process keeps every check in this process (no second lane, no symbolic worker)."""
    out = tmp_path / "r.json"
    assert main(["check", "--only", "fedinit.eq3", "fedshift.thm1.rate", "--one-process", "--out", str(out),
                 "--no-progress"]) in (0, 1)
    assert {t["where"] for t in json.loads(out.read_text())["timings"]} == {"here"}
    capsys.readouterr()
    assert main(["check", "--only", "fedinit.eq3", "--one-process", "--workers", "2"]) == 2
    assert "--one-process" in capsys.readouterr().err
