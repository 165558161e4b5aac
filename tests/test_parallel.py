"""The execution layer (fedtheory.parallel) and the three commands on it: the same answers serially and on 2 Dask
workers (check: JSON records field by field; train: cells bit for bit, and against one batch; worst: the search
record), a worker killed mid-task (train: the cell resumes from its checkpoint, the directory equals an uninterrupted
run's; check: the unit is retried), a task failing twice reported by name while the others finish, bad input, and
the missing extra (simulated). One LocalCluster of 2 worker processes is shared by the module."""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from fedtheory._validation import ParameterError
from fedtheory.checks import run_checks
from fedtheory.checks.registry import CheckSpec, select
from fedtheory.checks.results import exit_code
from fedtheory.checks.scheduling import CheckUnit, plan_units, run_units
from fedtheory.cli import main
from fedtheory.parallel import INSTALL_DASK, Progress, SerialExecutor, Task, dask_available, make_executor

needs_dask = pytest.mark.skipif(not dask_available(), reason=f"Dask distributed is not installed ({INSTALL_DASK})")


# ------------------------------------------------------------------------------------ tasks used below


def _square(x):
    return x * x


def _fail_always(x):
    raise RuntimeError(f"no luck with {x}")


def _fail_once(marker):
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return "second time lucky"
    raise OSError("transient")


def _bad_input():
    raise ParameterError("x", -1, "an integer >= 0")


def _strip(results):
    out = []
    for r in results:
        d = r.to_json()
        d.pop("elapsed_s")
        out.append(d)
    return out


@pytest.fixture(scope="module")
def cluster():
    if not dask_available():
        pytest.skip(f"Dask distributed is not installed ({INSTALL_DASK})")
    with make_executor(workers=2) as ex:
        yield ex


# ------------------------------------------------------------------------------------ the executor itself


def test_serial_executor_orders_results_retries_and_names_failures(tmp_path):
    ex = SerialExecutor()
    tasks = [Task(f"sq{i}", _square, (i,), cost=i) for i in range(4)]
    tasks += [Task("flaky", _fail_once, (str(tmp_path / "m"),)), Task("doomed", _fail_always, (7,)),
              Task("bad", _bad_input)]
    out = ex.run(tasks, retries=1)
    assert out.results[:5] == [0, 1, 4, 9, "second time lucky"] and out.results[5:] == [None, None]
    assert [f.name for f in out.failures] == ["doomed", "bad"]
    doomed, bad = out.failures
    assert doomed.attempts == 2 and doomed.error == "RuntimeError: no luck with 7"
    assert bad.attempts == 1 and isinstance(bad.exception, ParameterError)  # bad input fails alike: not retried
    assert out.retried == {"flaky": ["OSError: transient"], "doomed": ["RuntimeError: no luck with 7"]}
    text = out.summary()
    assert "7 task(s)" in text and "FAILED doomed after 2 attempt(s): RuntimeError: no luck with 7" in text
    assert "retried flaky (succeeded on attempt 2" in text
    with pytest.raises(ParameterError, match="distinct names"):
        ex.run([Task("a", _square, (1,)), Task("a", _square, (2,))])
    with pytest.raises(ParameterError, match="retries"):
        ex.run([Task("a", _square, (1,))], retries=-1)


def test_fatal_errors_stop_a_serial_run():
    with pytest.raises(RuntimeError):
        SerialExecutor().run([Task("a", _fail_always, (1,)), Task("b", _square, (2,))], fatal=(RuntimeError,))


@needs_dask
def test_dask_executor_orders_results_and_names_a_task_failing_twice(cluster, tmp_path):
    tasks = [Task(f"sq{i}", abs, (-i,), cost=i) for i in range(6)]  # builtins pickle by reference
    tasks.insert(2, Task("doomed", int, ("not a number",)))
    out = cluster.run(tasks, retries=1)
    assert out.results == [0, 1, None, 2, 3, 4, 5]
    (f,) = out.failures
    assert f.name == "doomed" and f.attempts == 2 and f.error.startswith("ValueError: invalid literal")
    assert list(out.retried) == ["doomed"] and out.workers == 2
    assert "1 failed" in out.summary() and "FAILED doomed after 2 attempt(s)" in out.summary()
    # a task asking for a resource no worker has is bad input, not a task waiting forever
    with pytest.raises(ParameterError, match="resources"):
        cluster.run([Task("gpu", abs, (1,), resources={"GPU": 1})])


@needs_dask
def test_scheduler_address_joins_a_running_cluster(cluster):
    with make_executor(scheduler=cluster.client.scheduler.address) as ex:
        assert ex.workers == 2 and ex.description.startswith("Dask scheduler tcp://")
        assert ex.run([Task("a", abs, (-3,))]).results == [3]
    assert cluster.run([Task("b", abs, (-4,))]).results == [4]  # closing that client left the cluster alone


@needs_dask
@pytest.mark.slow
def test_one_worker_per_gpu_each_seeing_its_own_device():
    """--workers on a machine with GPUs: worker i sees only device i and advertises GPU=1 (here on CPU workers,
    with made-up device ids: the routing, not CUDA, is what is tested)."""
    from fedtheory.parallel import DaskExecutor

    with DaskExecutor.local(2, gpus=["7"]) as ex:
        assert ex.resources() == {"GPU": 1.0}
        assert sorted(ex.client.run(os.getenv, "CUDA_VISIBLE_DEVICES").values()) == ["", "7"]
        out = ex.run([Task(f"g{i}", os.getenv, ("CUDA_VISIBLE_DEVICES",), resources={"GPU": 1}) for i in range(3)])
        assert out.results == ["7"] * 3


# ------------------------------------------------------------------------------------ check


SELECTION = ["oledfl.eq3", "oledfl.claim.beta0_is_dfedavg",  # share a cheap memo key: each unit computes it again
             "oledfl.claim.beta_speeds_convergence",         # these two share an expensive sweep: one unit
             "oledfl.claim.diverges_at_beta_ge_1",
             "fedshift.cond31_32", "fedinit.eq3", "fedshift.algebra"]  # the last one symbolic


def test_units_follow_shared_simulations():
    specs = select(only=SELECTION, profile="quick")
    units = plan_units(specs, "quick")
    assert sorted(c for u in units for c in u.check_ids) == sorted(SELECTION)
    assert ("oledfl.claim.beta_speeds_convergence",
            "oledfl.claim.diverges_at_beta_ge_1") in [u.check_ids for u in units]
    assert plan_units(specs, "quick") == units  # nothing but the selection and the recorded run decides them
    fn = specs[0].fn
    mk = lambda i, g="": CheckSpec(i, "p", "bound", fn, (i,), group=g)  # noqa: E731
    recorded = {"a": {"s": 5.0, "computes": {"K": 4.0, "k": 0.1}, "reuses": []},
                "b": {"s": 1.0, "computes": {}, "reuses": ["K"]},
                "c": {"s": 2.0, "computes": {}, "reuses": ["k"]},     # shares only a cheap key: alone
                "d": {"s": 0.5, "computes": {}, "reuses": []}}
    units = plan_units([mk("a"), mk("b"), mk("c"), mk("d", "G"), mk("e", "G")], "quick", recorded=recorded)
    assert units == [CheckUnit("a", ("a", "b"), 6.0), CheckUnit("c", ("c",), 2.0), CheckUnit("G", ("d", "e"), 1.5)]


def test_check_same_records_in_one_process_and_in_two_lanes():
    """issue 26: on a machine with more than one core, run_checks runs the symbolic checks and a share of the units
    of work in one worker process beside this one: the same records, field by field, as all in this process."""
    selection = ["fedinit.claim.divergence_threshold", "oledfl.remark4", "fedinit.eq3", "fedmrur.eq3",
                 "fedshift.algebra"]
    timings = []
    lanes = run_checks(only=selection, profile="quick", seed=3, timings=timings)
    one = run_checks(only=selection, profile="quick", seed=3, parallel_symbolic=False)
    a, b = _strip(one), _strip(lanes)
    assert len(a) == len(b) > 5
    for x, y in zip(a, b):
        assert x == y, (x["id"], [k for k in x if x[k] != y[k]])
    where = {t.check: t.where for t in timings}
    assert sorted(where) == sorted(selection)
    if (os.cpu_count() or 1) > 1:
        assert {"here", "worker", "symbolic worker"} == set(where.values())
        assert where["fedshift.algebra"] == "symbolic worker"


@needs_dask
def test_check_same_records_serially_and_on_two_workers(cluster):
    serial = run_checks(only=SELECTION, profile="quick", seed=3)
    parallel = run_checks(only=SELECTION, profile="quick", seed=3, executor=cluster)
    assert len(serial) == len(parallel) > 10
    a, b = _strip(serial), _strip(parallel)
    for x, y in zip(a, b):  # field by field, timing excepted: verdicts and every number, in the same order
        assert x == y, (x["id"], [k for k in x if x[k] != y[k]])
    assert json.dumps(a) == json.dumps(b)


CRASH_PLUGIN = '''
"""A test plug-in whose one check kills its own process: once (the 'mode' file says 'once'), or every time."""
import os
import signal
from pathlib import Path

from fedtheory.checks import CheckResult, check

HERE = Path(__file__).parent


@check("crashtest.check", "crashtest", "identity")
def crash(session):
    """Kills its process as the mode file says."""
    mode = (HERE / "mode").read_text().strip() if (HERE / "mode").exists() else ""
    if mode == "always":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "once":
        try:
            os.close(os.open(HERE / "fired", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            os.kill(os.getpid(), signal.SIGKILL)
        except FileExistsError:
            pass
    return [CheckResult("crashtest.check", "crashtest", "identity", "holds", measured=float(session.seed))]
'''


@pytest.fixture(scope="module")
def crash_plugin(tmp_path_factory):
    d = tmp_path_factory.mktemp("crashtest")
    (d / "crashtest_plugin.py").write_text(textwrap.dedent(CRASH_PLUGIN))
    # the check is registered on the workers only (they load the plug-in); here it is described by its spec
    spec = CheckSpec("crashtest.check", "crashtest", "identity", lambda s: [], ("crashtest.check",))
    return d, spec


@needs_dask
@pytest.mark.parametrize("mode", ["once", pytest.param("always", marks=pytest.mark.slow)])
def test_check_worker_killed_mid_unit(cluster, crash_plugin, mode):
    """A worker process killed inside a unit: retried once (same records as a serial run); killed again, the unit
    gets an 'error' row naming it and its error, and the other units still finish."""
    d, crash = crash_plugin
    (d / "fired").unlink(missing_ok=True)
    (d / "mode").write_text(mode)
    real = select(only=["fedinit.eq3", "oledfl.eq3"], profile="quick")
    res = run_units([crash] + real, cluster, profile="quick", seed=1, plugins=[str(d / "crashtest_plugin.py")])
    out = cluster.outcomes[-1]
    assert _strip(res[1:]) == _strip(run_checks(only=["fedinit.eq3", "oledfl.eq3"], profile="quick", seed=1))
    assert list(out.retried) == ["crashtest.check"] and "KilledWorker" in out.retried["crashtest.check"][0]
    if mode == "once":
        assert out.ok and res[0].verdict == "holds" and res[0].measured == 1.0
    else:
        (f,) = out.failures
        assert f.name == "crashtest.check" and f.attempts == 2 and "KilledWorker" in f.error
        assert res[0].verdict == "error" and "unit of work crashtest.check failed on every attempt (2)" in res[0].detail
        assert exit_code(res) == 3  # a failed unit is an error, never a finding
    (d / "mode").write_text("")


# ------------------------------------------------------------------------------------ train


def _cfg(**kw):
    from fedtheory.empirical.config import TrainConfig

    base = dict(dataset="digits", model="cnn2", model_options={"channels": (2, 4), "hidden": 8}, algorithm="FedInit",
                hyperparameters={"beta": [0.0, 0.1]}, seeds=(0, 1), n_clients=4, clients_per_round=2, rounds=4,
                local_steps=2, batch_size=8, checkpoint_every=2, threads=1)
    base.update(kw)
    return TrainConfig(**base)


@pytest.fixture(scope="module")
def serial_cells(tmp_path_factory):
    """The uninterrupted reference: the sweep's cells trained one after the other in this process."""
    from fedtheory.empirical.sweep import train_sweep

    d = tmp_path_factory.mktemp("cells") / "serial"
    res = train_sweep(_cfg(), d, SerialExecutor())
    assert res.outcome.ok
    return d, res


def _frame(m):
    return m.drop(columns=["time_s"]).sort_values(["round", "run"]).reset_index(drop=True)


@pytest.mark.parametrize("path", ["batched", "sequential"])
def test_cells_equal_the_runs_of_one_batch(tmp_path, serial_cells, path):
    """A cell draws what its run draws inside the batch (per-run streams): same numbers. The sequential path computes
    every (run, client) alone, so the bits agree; the batched (vmap) path may sum across the batch in another order,
    so it is held to float32 rounding: 1e-5 relative, and a difference of two losses (a generalization gap) to 1e-5 of
    the losses it subtracts (the stacked CPU engine picks its kernels by the batch's shape; measured: 3e-7 absolute
    on a gap of 8e-3 between losses near 2.3)."""
    from fedtheory.empirical.sweep import train_sweep
    from fedtheory.empirical.trainer import train

    batch = _frame(train(_cfg(path=path), tmp_path / "batch").metrics)
    cells = _frame((serial_cells[1] if path == "batched" else train_sweep(_cfg(path=path), tmp_path / "cells",
                                                                          SerialExecutor())).metrics)
    assert list(batch.columns) == list(cells.columns) and batch.shape == cells.shape == (4 * 5, len(batch.columns))
    if path == "sequential":
        pd.testing.assert_frame_equal(batch, cells, check_exact=True)
    else:
        losses = [c for c in batch.columns if "loss" in c]
        scale = float(np.nanmax(batch[losses].abs().to_numpy(float)))
        for c in batch.columns:
            gap = "gap" in c
            np.testing.assert_allclose(cells[c].to_numpy(float), batch[c].to_numpy(float), rtol=1e-5,
                                       atol=1e-5 * scale if gap else 1e-7, err_msg=c)


def test_cell_tasks_ask_for_a_gpu_where_one_is_advertised(tmp_path):
    from fedtheory.empirical.sweep import train_sweep

    class Recording(SerialExecutor):
        def __init__(self, gpus):
            super().__init__()
            self.gpus, self.asked = gpus, None

        def resources(self):
            return {"GPU": self.gpus} if self.gpus else {}

        def run(self, tasks, **kw):
            self.asked = [dict(t.resources) for t in tasks]
            return super().run([], **kw)

    for gpus, device, want in ((2, "auto", {"GPU": 1}), (0, "auto", {}), (0, "cpu", {}), (2, "cpu", {})):
        ex = Recording(gpus)
        train_sweep(_cfg(device=device), tmp_path / f"{gpus}{device}", ex)
        assert ex.asked == [want] * 4, (gpus, device)


@needs_dask
def test_train_cells_on_two_workers_equal_serial_cells_bit_for_bit(cluster, serial_cells, tmp_path):
    from fedtheory.empirical.sweep import SWEEP, cells_equal, train_sweep

    ref, ref_res = serial_cells
    res = train_sweep(_cfg(), tmp_path / "dask", cluster)
    assert res.outcome.ok and [r["state"] for r in res.outcome.results] == ["new"] * 4
    for i in range(4):
        assert cells_equal(ref / f"cell-{i:03d}", tmp_path / "dask" / f"cell-{i:03d}") == []
    pd.testing.assert_frame_equal(_frame(res.metrics), _frame(ref_res.metrics), check_exact=True)
    sweep = json.loads((tmp_path / "dask" / SWEEP).read_text())
    assert sweep["status"] == "completed" and [c["dir"] for c in sweep["cells"]] == [f"cell-{i:03d}" for i in range(4)]
    # a second pass over a finished sweep trains nothing and writes nothing into the cells
    stamp = {p: p.stat().st_mtime_ns for p in (tmp_path / "dask").rglob("cell-*/*")}
    again = train_sweep(_cfg(), tmp_path / "dask", cluster, resume=True)
    assert [r["state"] for r in again.outcome.results] == ["completed"] * 4
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "dask").rglob("cell-*/*")} == stamp


@needs_dask
def test_train_worker_killed_mid_cell_resumes_from_its_checkpoint(cluster, serial_cells, tmp_path):
    """SIGKILL one worker process after round 3 of whichever cell gets there first (checkpoint at round 2): the cell
    is retried, resumes from round 2, and every cell's directory equals the uninterrupted run's."""
    from fedtheory.empirical.run_directory import FAULT_ENV, FAULT_ONCE_ENV
    from fedtheory.empirical.runs import MANIFEST
    from fedtheory.empirical.sweep import cells_equal, train_sweep

    marker = str(tmp_path / "fired")
    cluster.client.run(lambda: os.environ.update({FAULT_ENV: "kill_after_round:3", FAULT_ONCE_ENV: marker}))
    try:
        res = train_sweep(_cfg(), tmp_path / "killed", cluster)
    finally:
        cluster.client.run(lambda: [os.environ.pop(k, None) for k in (FAULT_ENV, FAULT_ONCE_ENV)])
    assert os.path.exists(marker)
    out = res.outcome
    assert out.ok and len(out.retried) == 1
    (name, errors), = out.retried.items()
    assert "KilledWorker" in errors[0]
    states = {r["cell"]: r["state"] for r in out.results}
    assert states[name] == "partial" and sorted(states.values()) == ["new"] * 3 + ["partial"]
    man = json.loads((tmp_path / "killed" / name / MANIFEST).read_text())
    assert [r["from_round"] for r in man["resumes"]] == [2] and man["resumes"][0]["bit_identical"]
    assert man["resumes"][0]["rows_compared"] == 1  # round 3 was on disk, recomputed with the same bits
    for i in range(4):
        assert cells_equal(serial_cells[0] / f"cell-{i:03d}", tmp_path / "killed" / f"cell-{i:03d}") == []


def test_sweep_directories_refuse_mixing(tmp_path, serial_cells):
    from fedtheory.empirical.sweep import train_sweep
    from fedtheory.empirical.trainer import train

    with pytest.raises(ParameterError, match="new or empty"):
        train_sweep(_cfg(), serial_cells[0], SerialExecutor())
    with pytest.raises(ParameterError, match="differing: lr"):
        train_sweep(_cfg(lr=0.3), serial_cells[0], SerialExecutor(), resume=True)
    train(_cfg(rounds=1, seeds=(0,), hyperparameters={"beta": 0.0}), tmp_path / "batch")
    with pytest.raises(ParameterError, match="one-batch run"):
        train_sweep(_cfg(), tmp_path / "batch", SerialExecutor(), resume=True)


# ------------------------------------------------------------------------------------ worst

SMALL = dict(L=2.0, mu=0.5, B=1.2, G=0.4, D=1.5, eta=0.005, K=2, T=20, beta=0.05, sigma_l=0.0, C=3, d=3)


def _search(**kw):
    from fedtheory.worst import make_spec, worst_case

    rec = worst_case(make_spec("fedinit.thm2", SMALL), budget=48, popsize=16, seed=3, **kw)
    return {k: v for k, v in rec.items() if k not in ("elapsed_s", "evals_per_s")}


@needs_dask
def test_worst_same_record_serially_and_on_two_workers(cluster):
    serial = _search(chunk=5)  # uneven chunks: 5, 5, 5, 1
    parallel = _search(chunk=5, executor=cluster)
    assert json.dumps(serial, sort_keys=True) == json.dumps(parallel, sort_keys=True)
    assert parallel["evaluations"] == 48 and parallel["budget"]["chunk"] == 5
    whole = _search()  # one batch per generation: here the same bits as well
    assert whole["worst_measured"] == serial["worst_measured"] and whole["slack"] == serial["slack"]
    assert len(cluster.outcomes[-1].names) == 4  # the last generation: 4 chunks


STOCHASTIC = dict(SMALL, sigma_l=0.3, runs=3)  # noisy clients: finalists re-evaluated on the final seeds


def _stochastic_search(**kw):
    from fedtheory.worst import make_spec, worst_case

    rec = worst_case(make_spec("fedinit.thm2", STOCHASTIC), budget=32, popsize=8, seed=2, final_seeds=5, **kw)
    return {k: v for k, v in rec.items() if k not in ("elapsed_s", "evals_per_s")}


@needs_dask
def test_stochastic_worst_same_finalists_serially_and_on_two_workers(cluster):
    serial = _stochastic_search(chunk=3)
    parallel = _stochastic_search(chunk=3, executor=cluster)
    assert json.dumps(serial, sort_keys=True) == json.dumps(parallel, sort_keys=True)
    assert len(serial["finalists"]) == 5 and serial["seeds"] == [0, 1, 2, 3, 4]  # 4 finalists + the best random start


class _FailingChunk(SerialExecutor):
    """Serial, except that the first chunk of generation 1 raises on every attempt."""

    def run(self, tasks, **kw):
        tasks = [dataclasses.replace(t, fn=_raise) if t.name.endswith("/gen1/chunk0") else t for t in tasks]
        return super().run(tasks, **kw)


def _raise(*_a, **_k):
    raise RuntimeError("injected failure")


def test_worst_failed_chunk_is_recorded_and_ranks_last():
    rec = _stochastic_search(chunk=3, executor=_FailingChunk())
    assert len(rec["failed_tasks"]) == 1 and "injected failure" in json.dumps(rec["failed_tasks"])
    assert rec["evaluations"] == 32 - 3  # the failed chunk's 3 instances were not evaluated
    assert rec["verdict"] in ("holds", "inconclusive", "violated") and math.isfinite(rec["worst_measured"])


def test_worst_chunk_is_validated():
    with pytest.raises(ParameterError, match="chunk"):
        _search(chunk=0)


# ------------------------------------------------------------------------------------ CLI: bad input, missing extra


@pytest.mark.parametrize("argv,needle", [
    (["check", "--only", "fedinit.eq3", "--workers", "0"], "--workers=0"),
    (["check", "--only", "fedinit.eq3", "--workers", "2", "--worker-threads", "0"], "--worker-threads=0"),
    (["worst", "fedinit.thm2", "--chunk", "0", "--no-reference", "--budget", "40"], "--chunk=0"),
    (["train", "--out", "X", "--workers", "-1"], "--workers=-1"),
])
def test_cli_bad_execution_flags_exit_2_naming_them(argv, needle, capsys):
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


def test_cli_workers_and_scheduler_are_exclusive(capsys):
    with pytest.raises(SystemExit) as e:
        main(["check", "--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err


@needs_dask
def test_cli_unreachable_scheduler_exits_2_naming_it(capsys, monkeypatch):
    import fedtheory.parallel as P

    monkeypatch.setattr(P, "CONNECT_TIMEOUT_S", 1.0)
    assert main(["check", "--only", "fedinit.eq3", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler=" in err and "tcp://127.0.0.1:9" in err and "connecting failed" in err


def test_cli_without_the_extra_names_it(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if fedtheory[dask] were not installed
    assert not dask_available()
    for argv in (["check", "--only", "fedinit.eq3", "--workers", "2"],
                 ["worst", "fedinit.thm2", "--no-reference", "--workers", "2"],
                 ["check", "--only", "fedinit.eq3", "--scheduler", "tcp://127.0.0.1:8786"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "pip install 'fedtheory[dask]'" in err and ("--workers" in err or "--scheduler" in err)


@needs_dask
def test_cli_check_on_workers_prints_the_summary_and_records_it(cluster, tmp_path, capsys, monkeypatch):
    import fedtheory.parallel as P

    monkeypatch.setattr(P, "make_executor", lambda workers, scheduler, threads=1: _Borrowed(cluster))
    out = tmp_path / "r.json"
    code = main(["check", "--only", "fedinit.eq3", "oledfl.eq3", "--workers", "2", "--out", str(out), "--no-progress"])
    assert code in (0, 1)
    err = capsys.readouterr().err
    assert "task(s) on Dask LocalCluster (" in err and "0 failed" in err
    payload = json.loads(out.read_text())
    assert payload["execution"]["workers"] >= 1 and payload["execution"]["failed"] == []


@needs_dask
def test_cli_train_on_workers_then_resume_without_them(cluster, tmp_path, capsys, monkeypatch):
    import fedtheory.parallel as P

    monkeypatch.setattr(P, "make_executor", lambda workers, scheduler, threads=1: _Borrowed(cluster))
    tiny = ["--dataset", "digits", "--model", "cnn2", "--model-option", "channels=2,4", "--model-option", "hidden=8",
            "--algorithm", "FedInit", "--hp", "beta=0,0.1", "--seeds", "0", "--clients", "4", "--clients-per-round",
            "2", "--rounds", "2", "--local-steps", "2", "--batch-size", "8", "--no-progress"]
    d = tmp_path / "sweep"
    assert main(["train", "--out", str(d), "--workers", "2", *tiny]) == 0
    out, err = capsys.readouterr()
    assert "logged to" in out and "2 task(s) on Dask LocalCluster (" in err and "0 failed" in err
    assert sorted(p.name for p in d.iterdir()) == [".locks", "cell-000", "cell-001", "sweep.json"]
    # resumed without workers, longer: the cells continue from their checkpoints (serially, here)
    assert main(["train", "--out", str(d), "--resume", "--rounds", "3", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "2 task(s) on this process (serial)" in err
    m = pd.read_csv(d / "cell-001" / "metrics.csv")
    assert m["round"].tolist() == [0, 1, 2, 3]


class _Borrowed:
    """The module's cluster lent to a CLI call (which closes what it is given)."""

    def __init__(self, ex):
        self.ex = ex
        self._since = len(getattr(ex, "outcomes", []))

    def __getattr__(self, name):
        return getattr(self.ex, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def close(self):
        pass

    def combined(self, since=0):
        return self.ex.combined(self._since + since)

    @property
    def outcomes(self):
        return self.ex.outcomes[self._since:]


def test_progress_bar_counts_tasks_and_workers(capsys):
    bar = Progress(3, "demo", 2)
    bar.retried = 1
    bar.update(2)
    bar.close()
    err = capsys.readouterr().err
    assert "demo [2 workers]" in err and "1 retried" in err
