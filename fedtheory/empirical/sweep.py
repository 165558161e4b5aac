"""A training sweep as cells: one run directory per grid point x seed, each trained as its own unit of work.

``fedtheory train --workers N`` (or ``--scheduler ADDRESS``) trains a sweep this way instead of as one batch::

    DIR/sweep.json          the sweep: its settings, its cells (run index, seed, hyperparameters, directory),
                            status, the executor and its summary of retried / failed tasks (written atomically)
    DIR/cell-000/ ...       one ordinary run directory per cell (manifest.json, metrics.csv, checkpoint.pt,
                            checkpoint.prev.pt), exactly what ``fedtheory train`` writes for a one-run batch
    DIR/.locks/cell-000.lock  held (flock) while a task trains the cell

A cell is idempotent: a completed cell is never trained or written again; a partial one (its worker died) resumes
from its checkpoint, recomputing only the rounds after it (the trainer's resume: the same bits as an uninterrupted
run, recorded in the cell's manifest under ``resumes``); a new one starts. So a retried task loses only its
unfinished rounds, and the cells' final files equal an uninterrupted run's (see :func:`cells_equal`).

Cells vs one batch: run r of a batch and the cell of run r draw the same random numbers (per-run streams,
``TrainStreams``), so they compute the same thing; on the sequential path bit for bit, on the batched path up to the
order its kernels sum (they are picked by the batch's shape: ``tests/test_parallel.py`` holds the metrics to 1e-5
relative in float32, a generalization gap to 1e-5 of the losses it subtracts). Cells trained serially or on any
number of workers with the same threads per worker give the same bits.

``fedtheory check --runs DIR`` reads the cells like any run directories (runs from different directories that
share every setting but beta and the seed form one sweep).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._jsonutil import jsonable
from .._validation import FedTheoryError, ParameterError
from ..files import FileRefused, read_json, write_atomic
from .config import EXTENSIBLE_FIELDS, TrainConfig
from .runs import CHECKPOINT, MANIFEST, MAX_MANIFEST_BYTES, METRICS, NON_REPRODUCIBLE, PREV_CHECKPOINT

__all__ = ["SWEEP", "SWEEP_SCHEMA", "SweepResult", "cell_configs", "cell_name", "cells_equal", "is_sweep",
           "train_cell", "train_sweep"]

SWEEP = "sweep.json"
SWEEP_SCHEMA = "fedtheory.empirical.sweep/1"
LOCKS = ".locks"
# manifest fields that record when and how long, not what was computed (a retried cell also has ``resumes``)
TIMING_FIELDS = ("started_at", "finished_at", "elapsed_s", "resumes")


@dataclass
class SweepResult:
    """run_dir: the sweep directory; metrics: every cell's rows, ``run`` = the cell's index in the sweep;
    manifest: sweep.json's content with ``runs`` (one per cell); outcome: the executor's
    :class:`~fedtheory.parallel.Outcome` (retried / failed cells)."""

    run_dir: Path
    metrics: Any
    manifest: dict[str, Any]
    outcome: Any


def cell_name(index: int) -> str:
    return f"cell-{index:03d}"


def cell_configs(config: TrainConfig) -> list[TrainConfig]:
    """One config per run of ``config`` (grid point x seed, in ``config.runs()`` order): that run's hyperparameters
    as values and its seed alone."""
    out = []
    for r in config.runs():
        d = config.to_dict()
        d["hyperparameters"] = dict(r["hyperparameters"])
        d["seeds"] = [r["seed"]]
        out.append(TrainConfig.from_dict(d))
    return out


def is_sweep(path: str | os.PathLike) -> bool:
    return (Path(path) / SWEEP).is_file()


def _cell_state(d: Path, config: TrainConfig) -> str:
    """'completed' (nothing to do), 'partial' (resume it) or 'new'."""
    mpath = d / MANIFEST
    if not mpath.is_file():
        return "new"
    try:
        man = read_json(mpath, MAX_MANIFEST_BYTES, "run manifest")
    except FileRefused as exc:
        raise FedTheoryError(f"{mpath}: unreadable manifest ({exc.why}; written atomically, so not by a killed "
                             f"task); move the cell away to retrain it") from None
    if not isinstance(man, dict):
        raise FedTheoryError(f"{mpath}: not a run manifest (a JSON {type(man).__name__}); move the cell away to "
                             "retrain it")
    done = man.get("status") == "completed" and int(man.get("config", {}).get("rounds", -1)) == config.rounds
    return "completed" if done else "partial"


def _remove_temporaries(d: Path) -> list[str]:
    """Temp files a killed writer left (``.NAME.*.tmp``): the atomic writes never renamed them, nothing reads them."""
    gone = []
    if d.is_dir():
        for p in d.iterdir():
            if p.name.startswith(".") and p.name.endswith(".tmp") and p.is_file():
                p.unlink()
                gone.append(p.name)
    return gone


class _Lock:
    """An exclusive flock on a file: released by the kernel when its holder dies, so a retry never waits on a
    dead task, and waits for a live one (a task the scheduler believed lost) to finish the cell."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        import fcntl

        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def train_cell(config: dict[str, Any], cell_dir: str, lock: str) -> dict[str, Any]:
    """The unit of work of a sweep: train one cell to ``config['rounds']`` in ``cell_dir`` (idempotent).
    Returns {'cell', 'state' (what it found: new | partial | completed), 'status', 'removed_temporaries'}."""
    from .trainer import Trainer

    cfg = TrainConfig.from_dict(config)
    d = Path(cell_dir)
    with _Lock(Path(lock)):
        state = _cell_state(d, cfg)
        if state == "completed":
            return {"cell": d.name, "state": state, "status": "completed", "removed_temporaries": []}
        removed = _remove_temporaries(d)
        res = Trainer(cfg, d, resume=state == "partial").run()
        return {"cell": d.name, "state": state, "status": res.manifest.get("status"), "removed_temporaries": removed}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _identity(cfg: dict[str, Any]) -> dict[str, Any]:
    ident = TrainConfig.from_dict(cfg).identity()
    return json.loads(json.dumps({k: v for k, v in ident.items() if k not in EXTENSIBLE_FIELDS}, sort_keys=True,
                                 default=str))


def train_sweep(config: TrainConfig, out_dir: str | os.PathLike, executor: Any, *, resume: bool = False,
                progress: bool = False, retries: int = 1) -> SweepResult:
    """Train every cell of ``config`` as its own task on ``executor`` (a :class:`fedtheory.parallel.Executor`).

    out_dir: new or empty; with ``resume``, a sweep directory of the same settings (``rounds`` may grow): its
    completed cells are kept as they are, partial ones resume, missing ones start. A cell whose task fails every
    attempt is named in ``outcome.failures`` and sweep.json (status 'incomplete'); the others still finish.
    Training tasks ask for a ``GPU`` resource when the device is CUDA, or 'auto' and some worker advertises one."""
    config = config.validated()
    d = Path(out_dir)
    spath = d / SWEEP
    if (d / MANIFEST).is_file():
        raise ParameterError("--out", str(d), "a sweep directory (cells, sweep.json) or a new one: it holds a "
                             "one-batch run (continue it without --workers/--scheduler)")
    if resume:
        if not spath.is_file():
            raise ParameterError("--out", str(d), f"a sweep directory with {SWEEP} to resume (none found)")
        try:
            stored = read_json(spath, MAX_MANIFEST_BYTES, "sweep file")
        except FileRefused as exc:
            raise ParameterError("--out", str(d), f"a sweep directory with a readable {SWEEP} ({exc.why})") from None
        if not isinstance(stored, dict) or not isinstance(stored.get("config"), dict):
            raise ParameterError("--out", str(d), f"a sweep directory whose {SWEEP} is an object with a 'config' "
                                 "object")
        there, here = _identity(stored["config"]), _identity(config.to_dict())
        diff = sorted(k for k in set(there) | set(here) if there.get(k) != here.get(k))
        if diff:
            raise ParameterError("resume", str(d), "the same settings as the sweep it continues; differing: " +
                                 ", ".join(f"{k} ({there.get(k)!r} there, {here.get(k)!r} here)" for k in diff))
        started = stored.get("started_at", _now())
    else:
        if d.exists() and any(d.iterdir()):
            raise ParameterError("out", str(d), "a new or empty directory (it holds files; pass --resume to continue "
                                 "a sweep there, or choose another directory)")
        d.mkdir(parents=True, exist_ok=True)
        started = _now()
    cells = cell_configs(config)
    threads = getattr(executor, "threads", None)
    gpu = config.device.startswith("cuda") or (config.device == "auto" and executor.resources().get("GPU", 0) >= 1)
    runs, tasks = [], []
    from ..parallel import Task

    for i, (c, r) in enumerate(zip(cells, config.runs())):
        if c.threads is None and threads is not None:
            c.threads = threads
        name = cell_name(i)
        runs.append({"run": i, "seed": r["seed"], "hyperparameters": r["hyperparameters"], "dir": name})
        tasks.append(Task(name, train_cell, (c.to_dict(), str(d / name), str(d / LOCKS / f"{name}.lock")),
                          resources={"GPU": 1} if gpu else {}))
    manifest = {"schema": SWEEP_SCHEMA, "status": "running", "config": config.to_dict(), "cells": runs,
                "executor": executor.to_json(), "started_at": started}
    write_atomic(spath, json.dumps(jsonable(manifest, nonfinite="null"), indent=1))
    from .run_directory import TrainingInterrupted

    try:
        outcome = executor.run(tasks, retries=retries, progress=progress, desc=f"train {len(tasks)} cells",
                               fatal=(TrainingInterrupted,))
    except TrainingInterrupted as exc:  # a cell stopped by a signal: the sweep says so (continue with --resume)
        import signal

        manifest.update(status="interrupted", interrupted={"signal": signal.Signals(exc.signum).name, "at": _now()})
        write_atomic(spath, json.dumps(jsonable(manifest, nonfinite="null"), indent=1))
        raise
    manifest.update(status="completed" if outcome.ok else "incomplete", finished_at=_now(), outcome=outcome.to_json())
    write_atomic(spath, json.dumps(jsonable(manifest, nonfinite="null"), indent=1))
    return SweepResult(d, _sweep_metrics(d, runs), dict(manifest, runs=_runs_with_beta(d, runs)), outcome)


def _runs_with_beta(d: Path, runs: list[dict]) -> list[dict]:
    out = []
    for r in runs:
        beta = 0.0
        try:
            beta = json.loads((d / r["dir"] / MANIFEST).read_text())["runs"][0].get("beta", 0.0)
        except (OSError, ValueError, KeyError, IndexError):
            pass
        out.append(dict(r, beta=beta))
    return out


def _sweep_metrics(d: Path, runs: list[dict]):
    """Every completed cell's metrics, ``run`` renumbered to the cell's index (cells without metrics are left out)."""
    import pandas as pd

    frames = []
    for r in runs:
        p = d / r["dir"] / METRICS
        if p.is_file():
            f = pd.read_csv(p)
            f["run"] = r["run"]
            frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def cells_equal(a: str | os.PathLike, b: str | os.PathLike) -> list[str]:
    """The differences between two run directories as results (empty: equal): the same files; metrics.csv
    identical but for ``time_s``; the checkpoints' tensors and streams identical; the manifests identical but for
    the timing fields (started/finished, elapsed, the resume history) and the versions' thread count."""
    import numpy as np
    import pandas as pd
    import torch

    a, b = Path(a), Path(b)
    diffs = []
    fa = sorted(p.name for p in a.iterdir())
    fb = sorted(p.name for p in b.iterdir())
    if fa != fb:
        diffs.append(f"files differ: {fa} vs {fb}")
    ma, mb = (pd.read_csv(x / METRICS).drop(columns=list(NON_REPRODUCIBLE)) for x in (a, b))
    if list(ma.columns) != list(mb.columns) or ma.shape != mb.shape:
        diffs.append(f"metrics shape/columns differ: {ma.shape} vs {mb.shape}")
    else:
        same = (ma.to_numpy(dtype=object) == mb.to_numpy(dtype=object)) | (ma.isna() & mb.isna()).to_numpy()
        if not same.all():
            i, j = np.argwhere(~same)[0]
            diffs.append(f"metrics differ: {int((~same).sum())} cells, first row {i} {ma.columns[j]}: "
                         f"{ma.iat[i, j]!r} vs {mb.iat[i, j]!r}")
    for name in (CHECKPOINT, PREV_CHECKPOINT):
        if (a / name).is_file() and (b / name).is_file():
            ca, cb = (torch.load(x / name, weights_only=True) for x in (a, b))
            bad = _tensor_diff(ca, cb, name)
            diffs.extend(bad)
    ja, jb = (json.loads((x / MANIFEST).read_text()) for x in (a, b))
    for m in (ja, jb):
        for k in TIMING_FIELDS:
            m.pop(k, None)
        m.get("versions", {}).pop("cpu_threads", None)
        m.get("config", {}).pop("threads", None)
    if ja != jb:
        keys = sorted(k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k))
        diffs.append(f"manifests differ in {keys}")
    return diffs


def _tensor_diff(x, y, where: str) -> list[str]:
    import torch

    if isinstance(x, dict) and isinstance(y, dict):
        if set(x) != set(y):
            return [f"{where}: keys differ"]
        return [d for k in x for d in _tensor_diff(x[k], y[k], f"{where}.{k}")]
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):  # bit for bit, NaNs included
        same = x.shape == y.shape and x.dtype == y.dtype and \
            x.detach().cpu().contiguous().numpy().tobytes() == y.detach().cpu().contiguous().numpy().tobytes()
        return [] if same else [f"{where}: tensors differ"]
    return [] if x == y else [f"{where}: {x!r} vs {y!r}"]

