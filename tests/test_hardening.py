"""Bad input that used to crash or pass silently (issue 'hardening'): each case gives exit 2 naming the
parameter or file, or a reported divergence, never a traceback or a 'holds' built on NaN."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedtheory._validation import ParameterError
from fedtheory.checks import compare_mean, compare_rounds
from fedtheory.cli import main
from fedtheory.empirical.config import TrainConfig
from fedtheory.empirical.runs import MANIFEST, METRICS
from fedtheory.empirical.trainer import train
from fedtheory.sim import (
    LeastSquaresProblem,
    LogisticProblem,
    PLNonconvexProblem,
    RunConfig,
    fedavg,
    heterogeneous_least_squares,
    simulate,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs") / "ok"
    cfg = TrainConfig(dataset="digits", model="linear", algorithm="FedAvg", n_clients=4, clients_per_round=2, rounds=2,
                      local_steps=1, batch_size=8, seeds=(0,))
    train(cfg, d)
    return d


def _check_runs(path, capsys):
    code = main(["check", "--runs", str(path), "--only", "empirical", "--format", "json", "--no-progress"])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_all_nan_metrics_are_not_a_complete_run(run_dir, tmp_path, capsys):
    d = tmp_path / "nan"
    shutil.copytree(run_dir, d)
    m = pd.read_csv(d / METRICS)
    for c in m.columns:
        if c not in ("round", "run", "seed", "diverged", "time_s", "beta", "lr") and not c.startswith("hp."):
            m[c] = np.nan
    m.to_csv(d / METRICS, index=False)
    code, out, err = _check_runs(d, capsys)
    assert code == 2 and "no finite measurement" in err and str(d / METRICS) in err and "holds" not in out


def test_empty_and_corrupt_run_directories_are_bad_input(run_dir, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _check_runs(empty, capsys)
    assert code == 2 and "--runs=" in err and "none found" in err
    bad = tmp_path / "mixed" / "bad"
    bad.mkdir(parents=True)
    (bad / MANIFEST).write_text("{ not json")
    code, _, err = _check_runs(bad.parent, capsys)
    assert code == 2 and str(bad / MANIFEST) in err
    # a valid run beside the corrupt one is still checked, and the corrupt one is named
    shutil.copytree(run_dir, tmp_path / "mixed" / "good")
    code, out, err = _check_runs(tmp_path / "mixed", capsys)
    assert code == 2 and str(bad / MANIFEST) in err
    rows = json.loads(out)["results"]
    assert any(r["verdict"] == "holds" and "good" in r["extra"].get("dir", "") for r in rows)
    assert any("unusable run directory" in r["detail"] for r in rows)


def test_a_diverged_run_contradicts_a_finite_bound():
    lhs = np.ones((5, 4))
    lhs[3:, 1] = np.nan  # run 1 diverged at round 3
    verdict, info = compare_rounds(lhs, np.full((5, 4), 2.0))
    assert verdict == "violated" and info["diverged_runs"] == 1 and info["first_diverged_round"] == 3
    assert "diverged" in info["detail"]
    verdict, info = compare_mean(np.array([1.0, np.inf, 1.0]), 2.0)
    assert verdict == "violated" and info["diverged_runs"] == 1
    # where the bound itself is undefined the round is counted, not judged
    rhs = np.full((5, 4), 2.0)
    rhs[0] = np.nan
    verdict, info = compare_rounds(np.ones((5, 4)), rhs)
    assert verdict == "holds" and info["rounds_excluded"] == 1


def test_unwritable_out_is_a_parameter_error(capsys):
    code = main(["check", "--only", "fedinit.eq3", "--out", "/proc/fedtheory-x.json", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "--out=" in err and "Traceback" not in err


def test_train_out_an_existing_file(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert main(["train", "--out", str(f), "--dataset", "digits", "--rounds", "1", "--no-progress"]) == 2
    assert "--out=" in capsys.readouterr().err


def test_closed_pipe_exits_quietly():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(f"{sys.executable} -m fedtheory.cli list | head -1", shell=True, capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr


@pytest.mark.parametrize("make, name", [
    (lambda X: LeastSquaresProblem(X, np.ones(X.shape[:2])), "X"),
    (lambda X: PLNonconvexProblem(X), "Z"),
    (lambda X: LogisticProblem([X[0], X[1]], [np.zeros(5, int), np.ones(5, int)], 2), "X_clients[1]"),
])
def test_non_finite_problem_data_is_named(make, name):
    X = np.ones((2, 5, 3))
    X[1, 2, 0] = np.nan
    with pytest.raises(ParameterError, match=rf"^{name.replace('[', '.').replace(']', '.')}=.*non-finite"):
        make(X)


def test_non_finite_start_is_bad_input_not_a_divergence():
    p = heterogeneous_least_squares(3, 3, 5)
    with pytest.raises(ParameterError, match="^w0="):
        simulate(p, fedavg(), RunConfig(rounds=2, local_steps=1, lr=0.1), [0], w0=np.array([np.nan, 0.0, 0.0]))
