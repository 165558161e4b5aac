"""The torch training engine: the sim layer's round protocol on real networks, all clients at once.

A batch of R runs (a seed sweep and/or a hyperparameter grid) with C clients, N per round, K local
steps, is state shaped (R, C, dim) / (R, N, dim): one row per (run, client) network. A round follows
``sim.engine.simulate`` step by step and calls the same plug-ins (``sim/rules.py``):

  participants -> anchor -> round_start hooks -> init -> K x [minibatch gradient of every (run, client)
  -> local transforms (SAM, control variates, momentum, prox) -> step] -> compress -> combine
  (aggregate) -> round_end hooks -> measures -> last local models -> new global model.

The local objective of client i is mean cross-entropy on its minibatch + (weight_decay/2)||w||^2
(gradient clipping, when asked, applies to the cross-entropy gradient before the decay term, as
torch's clip_grad_norm_ followed by SGD(weight_decay) does). Per-(run, client) gradients come
from ``functional.GradFn`` (batched: the stacked engine on a CPU, checked against vmap on a probe, vmap
elsewhere; sequential: the per-client reference).

Every row is checked against the columns' declared ranges (runs.MEASURE_RANGES) before it is written. The run
directory's lifecycle (its manifest, checkpoints, resume, an interrupted run's status) is ``run_directory.py``'s,
which ``runs.py`` reads back; where the run executes (device, gradient path, engine, versions) ``device.py``'s.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._validation import ParameterError
from ..deprecation import moved_name
from ..sim.rounds import StepSchedule, commit_round, divergence_flags, park_runs, run_round
from ..sim.rules import RoundState, State
from . import algorithms as A, device as _device, run_directory as _run_directory
from .augment import crop_flip
from .config import TrainConfig
from .data import ImageDataset, load_dataset

# what the trainer uses of the modules split from this one, under private names: the public names resolve through
# __getattr__ below, with a warning naming the module that has them now
from .device import (
    CPU_WORKERS as _CPU_WORKERS,
    choose_engine as _choose_engine,
    choose_path as _choose_path,
    resolve_device as _resolve_device,
    versions as _versions,
)
from .functional import FlatModel, GradFn, Workers, per_sample_eval
from .models import build_model
from .objectives import adapter_for
from .partitions import partition_with_groups, summarize
from .run_directory import (
    Consistency as _Consistency,
    RunDirectory as _RunDirectory,
    TrainingInterrupted as _TrainingInterrupted,
    fault as _fault,
    finish as _finish,
    install_stop_handlers as _install_stop_handlers,
    now as _now,
)
from .runs import MEASURES, METRICS, ROUND_COLUMNS, SCHEMA, STATE_COLUMNS, MetricsWriter, RunDirLock, out_of_range
from .sampling import TrainStreams, draw_augmentation, draw_minibatches, local_steps_for

__all__ = ["GRAM_CHUNK_ELEMENTS", "ImpossibleMeasure", "NetworkOracle", "TrainResult", "Trainer", "pairwise_cosines",
           "train"]

#: where the rest of this module went: a name imported from here resolves, with a warning naming its module
_MODULES = (_device, _run_directory)


def __getattr__(name: str):
    return moved_name(__name__, name, _MODULES, sys.modules[__package__])

class ImpossibleMeasure(RuntimeError):
    """The trainer computed a value outside its column's declared range (runs.MEASURE_RANGES): a bug of the tool,
    never written to metrics.csv (the rounds before it are on disk and the run resumes from its checkpoint)."""


@dataclass
class TrainResult:
    run_dir: Path | None
    metrics: Any  # pandas DataFrame
    manifest: dict[str, Any]
    final_w: torch.Tensor  # (R, dim)


class Trainer:
    """One training batch. ``Trainer(config, out_dir).run()``; see ``train`` for the one-call API."""

    def __init__(self, config: TrainConfig, out_dir: str | os.PathLike | None = None, *, resume: bool = False,
                 progress: bool = False, dataset: ImageDataset | None = None):
        self.config = config.validated()
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.resume = resume
        self.progress = progress
        cfg = self.config
        self.device = _resolve_device(cfg.device)
        self.dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
        if cfg.deterministic and self.device.type == "cuda":
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
        self.run_specs = cfg.runs()
        self.R = len(self.run_specs)
        self.lr_runs = np.full(self.R, float(cfg.lr))
        # data, partition, model
        self.data = dataset if dataset is not None else load_dataset(cfg.dataset, cfg.data_dir, **cfg.dataset_options)
        self.parts, self.client_groups = partition_with_groups(
            self.data.y_train, cfg.partition, cfg.n_clients, alpha=cfg.alpha, classes_per_client=cfg.classes_per_client,
            samples_per_client=cfg.samples_per_client, random_state=cfg.partition_seed)
        self.sizes = np.array([len(p) for p in self.parts], dtype=np.int64)
        if np.any(self.sizes == 0):
            raise ParameterError("partition", cfg.partition, f"a partition where every client has data (client "
                                 f"{int(np.argmin(self.sizes))} got none; use fewer clients or a larger alpha)")
        self.C = cfg.n_clients
        self.N = cfg.clients_per_round or self.C
        self.K = local_steps_for(self.sizes, cfg.batch_size, cfg.local_epochs, cfg.local_steps)
        self.B = cfg.batch_size
        # the step size goes through the sim layer's schedules: lr * lr_decay**t
        self.schedule = StepSchedule("exponential" if cfg.lr_decay != 1 else "constant", self.K, cfg.lr_decay)
        self.module = build_model(cfg.model, self.data.image_shape, self.data.n_classes, **cfg.model_options)
        self.module.to(device=self.device, dtype=self.dtype)
        self.flat = FlatModel(self.module)
        self.d = self.flat.dim
        self.context = {"n_clients": self.C, "layer_sizes": list(self.flat.numels), "client_groups": self.client_groups}
        self.alg = A.build_algorithm(cfg.algorithm, cfg.algorithm_arguments(), self.context)
        self._objective_terms()
        self.path, self.path_reason = _choose_path(cfg.path, self.device, cfg.model, self.data.image_shape)
        engine, self.engine_rule = _choose_engine(self.device)
        cpu = self.device.type == "cpu"
        n_threads = cfg.threads if cfg.threads is not None else torch.get_num_threads()
        self.workers = Workers(self.flat, _CPU_WORKERS, max(1, n_threads // _CPU_WORKERS)) \
            if cpu and n_threads >= _CPU_WORKERS else None
        self.grad_fn = GradFn(self.flat, self.path, cfg.client_chunk, [a.term for _, a in self.objectives],
                              [len(a.names) for _, a in self.objectives], engine=engine, channels_last=cpu,
                              parts=_CPU_WORKERS if cpu else 1, workers=self.workers,
                              weight_decay=cfg.weight_decay if cfg.max_grad_norm is None else 0.0)
        self._engine_checked = False
        self.alg.comm.participants(TrainStreams([0]), 1, self.C, self.N)  # validated now (throw-away streams)
        self._to_device_data()
        self.hp_columns = sorted({k for r in self.run_specs for k in r["hyperparameters"]})
        self.beta = A.relaxed_beta(self.alg, self.R)
        self.plugin_measures: dict[str, tuple[Any, str]] | None = None  # known after the plug-ins' setup
        self.columns: list[str] | None = None

    # ------------------------------------------------------------------ setup helpers
    def _objective_terms(self):
        """Local plug-ins that add a term to the client objective get it through its network form
        (objectives.py); their sim-layer hooks, which read the problem's client view, are not called."""
        self.objectives = [(p, adapter_for(p)) for p in self.alg.local if getattr(p, "objective", False)]
        skip = {id(p) for p, _ in self.objectives}
        self.hooked = [p for p in self.alg.plugins() if id(p) not in skip]

    def _to_device_data(self):
        dev, data = self.device, self.data
        self.x_train = torch.as_tensor(data.x_train, device=dev)
        self.y_train = torch.as_tensor(data.y_train, device=dev)
        self.x_test = torch.as_tensor(data.x_test, device=dev)
        self.y_test = torch.as_tensor(data.y_test, device=dev)
        self.mean = torch.as_tensor(np.asarray(data.mean), device=dev, dtype=self.dtype)[None, :, None, None]
        self.std = torch.as_tensor(np.asarray(data.std), device=dev, dtype=self.dtype)[None, :, None, None]
        n_max = int(self.sizes.max())
        idx = np.zeros((self.C, n_max), dtype=np.int64)
        for i, p in enumerate(self.parts):
            idx[i, :len(p)] = p
        self.client_index = idx
        used = np.unique(np.concatenate(self.parts))
        self.x_used = self.x_train[torch.as_tensor(used, device=dev)]
        self.y_used = self.y_train[torch.as_tensor(used, device=dev)]
        pad = np.zeros((self.C, n_max), dtype=np.int64)  # client i's samples as positions in `used`, padded
        for i, p in enumerate(self.parts):
            pad[i, :len(p)] = np.searchsorted(used, p)
        self.owner_pos = torch.as_tensor(pad, device=dev)
        self.owner_mask = torch.as_tensor(np.arange(n_max)[None, :] < self.sizes[:, None], device=dev)

    def _scale(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(self.dtype) / 255.0 if x.dtype == torch.uint8 else x.to(self.dtype)

    def _prepare(self, x: torch.Tensor) -> torch.Tensor:
        return (self._scale(x) - self.mean) / self.std

    def _path_without_stacked(self):
        """--path auto's choice once the stacked engine has refused the model (batched with vmap, or sequential)."""
        cfg = self.config
        path, why = _choose_path(cfg.path, self.device, cfg.model, self.data.image_shape, stacked=False)
        if path != self.path:
            self.path, self.path_reason = path, why
            self.grad_fn = GradFn(self.flat, path, cfg.client_chunk, [a.term for _, a in self.objectives],
                                  [len(a.names) for _, a in self.objectives],
                                  weight_decay=cfg.weight_decay if cfg.max_grad_norm is None else 0.0)
        elif cfg.path == "auto":
            self.path_reason = why

    def _probe(self, rows: int = 3, per_row: int = 4):
        """A fixed probe for GradFn.verify_stacked: ``rows`` different parameter rows (a model initialised from
        seed 0, perturbed per row) on different training images, with the objective terms' anchor and
        parameters; independent of the runs' seeds and of torch's global random state."""
        cfg = self.config
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            m = build_model(cfg.model, self.data.image_shape, self.data.n_classes, **cfg.model_options)
            w = self.flat.flat(m).to(device=self.device, dtype=self.dtype)
            noise = torch.randn((rows, w.numel()), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
        W = w + 0.1 * w.abs().mean() * noise.to(device=self.device, dtype=self.dtype)
        idx = torch.arange(rows * per_row, device=self.device) % len(self.y_train)
        X = self._prepare(self.x_train[idx]).reshape(rows, per_row, *self.data.image_shape)
        Y = self.y_train[idx].reshape(rows, per_row)
        extra = ()
        if self.objectives:
            par = torch.cat([a.params(p, W) for p, a in self.objectives], dim=1)  # (R, P)
            extra = (w.expand(rows, -1), par[torch.arange(rows) % par.shape[0]])
        return (W, X, Y, *extra)

    def _init_weights(self, streams: TrainStreams) -> torch.Tensor:
        ws = []
        for s in streams.model_seeds():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(s)
                m = build_model(self.config.model, self.data.image_shape, self.data.n_classes,
                                **self.config.model_options)
            ws.append(self.flat.flat(m).to(device=self.device, dtype=self.dtype))
        return torch.stack(ws)

    # ------------------------------------------------------------------ one round
    def _oracle(self, W: torch.Tensor, x: torch.Tensor, y: torch.Tensor, anchor, tparams):
        R, N, d = W.shape
        extra = () if not self.objectives else (anchor.reshape(R * N, d), tparams)
        g, loss = self.grad_fn(W.reshape(R * N, d), x, y, *extra)
        g = g.reshape(R, N, d)
        if self.config.max_grad_norm is not None:
            norm = torch.linalg.vector_norm(g, dim=-1, keepdim=True)
            g = g * torch.clamp(self.config.max_grad_norm / torch.clamp(norm, min=1e-30), max=1.0)
        if self.config.weight_decay and self.config.max_grad_norm is not None:  # else grad_fn added it
            g.add_(W * self.config.weight_decay)  # g is the oracle's own: = g + wd W, one temporary fewer
        return g, loss.reshape(R, N)

    def _round(self, t: int, state: State, streams: TrainStreams, alive: np.ndarray) -> tuple[dict, RoundState]:
        """Round t through the shared protocol (sim.rounds.run_round), with the network's minibatch oracle."""
        R = self.R
        lr_t = self.schedule.at_round(t, self.lr_runs)
        lr = torch.as_tensor(lr_t[:, None, None], dtype=self.dtype, device=self.device)
        oracles: list[NetworkOracle] = []

        def make_oracle(rs: RoundState) -> NetworkOracle:
            oracles.append(NetworkOracle(self, rs))
            return oracles[0]

        step_lr = None
        if self.schedule.per_step:
            step_lr = lambda k: torch.as_tensor(self.schedule.at_step(t, k, self.lr_runs)[:, None, None],  # noqa: E731
                                                dtype=self.dtype, device=self.device)
        rs = run_round(self.alg, state, streams, t, n_runs=R, n_clients=self.C, per_round=self.N, local_steps=self.K,
                       lr=lr, make_oracle=make_oracle, step_lr=step_lr, hooked=self.hooked, writable_sel=True)
        m = self._round_measures(rs)
        m["lr"] = np.asarray(lr_t, dtype=float)
        m["local_loss"] = (oracles[0].loss_sum / self.K).mean(dim=1).cpu().numpy()
        by_plugin: dict[int, tuple[Any, list[tuple[str, str]]]] = {}
        for column, (p, _, name) in self.plugin_measures.items():
            by_plugin.setdefault(id(p), (p, []))[1].append((column, name))
        for p, names in by_plugin.values():  # once per plug-in per round, whatever it reports
            values = p.measure(rs)
            for column, name in names:
                m[column] = _np(values[name])
        return m, rs

    def _round_measures(self, rs: RoundState) -> dict[str, np.ndarray]:
        w, w1, w0, wK = rs.state.w, rs.w_next, rs.w0, rs.wK
        R, N = wK.shape[:2]
        out = {"delta_code": (wK - w1[:, None, :]).pow(2).sum(-1).mean(1),
               "drift": (wK - w[:, None, :]).pow(2).sum(-1).mean(1),
               "update_norm": torch.linalg.vector_norm(w1 - w, dim=-1),
               "unbiased_gap": torch.linalg.vector_norm(w0.mean(1) - w, dim=-1)}
        U = wK - w0
        norms = torch.linalg.vector_norm(U, dim=-1)  # (R, N)
        out["d_t"] = norms.sum(1) / torch.linalg.vector_norm(U.sum(1), dim=-1)
        if N > 1:
            vals = pairwise_cosines(U)
            out.update(cos_mean=vals.mean(1), cos_abs_mean=vals.abs().mean(1), cos_min=vals.amin(1),
                       cos_max=vals.amax(1))
        else:
            nan = torch.full((R,), float("nan"), dtype=U.dtype, device=U.device)
            out.update(cos_mean=nan, cos_abs_mean=nan, cos_min=nan, cos_max=nan)
        return {k: _np(v) for k, v in out.items()}

    def _state_measures(self, state: State, evaluate: bool, alive: np.ndarray) -> dict[str, np.ndarray]:
        R = self.R
        w = state.w
        out = {"delta": _np((state.clients["last_local"] - w[:, None, :]).pow(2).sum(-1).mean(1))}
        nan = np.full(R, np.nan)
        for c in ("train_loss", "train_acc", "test_loss", "test_acc"):
            out[c] = nan.copy()
        if evaluate:
            bs = self.config.eval_batch_size

            def evaluate_run(r):
                flat = self.workers.flat() if self.workers is not None else self.flat
                return (per_sample_eval(flat, w[r], self.x_used, self.y_used, self._prepare, bs),
                        per_sample_eval(flat, w[r], self.x_test, self.y_test, self._prepare, bs))

            runs = [r for r in range(R) if alive[r]]
            results = self.workers.map(evaluate_run, runs) if self.workers is not None else map(evaluate_run, runs)
            for r, ((l_tr, a_tr), (l_te, a_te)) in zip(runs, results):
                out["train_loss"][r] = self._client_average(l_tr)
                out["train_acc"][r] = self._client_average(a_tr)
                out["test_loss"][r] = float(l_te.mean())
                out["test_acc"][r] = float(a_te.mean())
        out["gen_gap"] = out["test_loss"] - out["train_loss"]
        out["gen_gap_acc"] = out["train_acc"] - out["test_acc"]
        return out

    def _client_average(self, per_sample: torch.Tensor) -> float:
        """(1/C) sum_i mean over client i's samples (no atomics: the same bits on every call)."""
        vals = torch.where(self.owner_mask, per_sample[self.owner_pos], torch.zeros((), dtype=per_sample.dtype,
                                                                                      device=per_sample.device))
        sizes = torch.as_tensor(self.sizes, device=vals.device, dtype=vals.dtype)
        return float((vals.sum(dim=1) / sizes).mean())

    def initial_weights(self) -> torch.Tensor:
        """w^0 of every run, (R, dim): each run's model initialised from its own seed."""
        return self._init_weights(TrainStreams([r["seed"] for r in self.run_specs]))

    def initial_state(self) -> tuple[State, TrainStreams, torch.Tensor]:
        """(state at round 0, the runs' random streams, w^0): what ``run`` starts from."""
        R, C, d = self.R, self.C, self.d
        streams = TrainStreams([r["seed"] for r in self.run_specs])
        w0 = self._init_weights(streams)
        state = State(w=w0.clone())
        state.clients["last_local"] = w0[:, None, :].expand(R, C, d).clone()
        for p in self.alg.plugins():
            p.setup(state, R, C, d)
        if self.grad_fn.engine == "stacked" and not self._engine_checked:  # needs the plug-ins' parameters
            if not self.grad_fn.verify_stacked(*self._probe()):
                self._path_without_stacked()
            self._engine_checked = True
        # plug-in measures; a name the trainer logs itself is prefixed with the plug-in's name
        own = set(ROUND_COLUMNS) | set(STATE_COLUMNS) | {"round", "run", "seed", "beta", "diverged", "time_s"}
        self.plugin_measures = {}
        for p in self.hooked:
            for name, desc in p.measures().items():
                self.plugin_measures[f"{p.name}.{name}" if name in own else name] = (p, desc, name)
        self.columns = (["round", "run", "seed"] + [f"hp.{k}" for k in self.hp_columns] + ["beta"] + list(ROUND_COLUMNS)
                        + list(STATE_COLUMNS) + sorted(self.plugin_measures) + ["diverged", "time_s"])
        return state, streams, w0

    def advance(self, t: int, state: State, streams: TrainStreams) -> dict[str, np.ndarray]:
        """Round t on every run (no evaluation, no divergence handling): returns the round measures."""
        rm, rs = self._round(t, state, streams, np.ones(self.R, dtype=bool))
        commit_round(state, rs)
        return rm

    # ------------------------------------------------------------------ the loop
    def run(self) -> TrainResult:
        """Train (into the run directory when there is one, which this process holds for the whole run: a second
        writer is refused, see runs.RunDirLock)."""
        lock = contextlib.nullcontext()
        if self.out_dir is not None:
            if self.resume and not self.out_dir.is_dir():
                raise ParameterError("out", str(self.out_dir), "a run directory with manifest.json to resume (none "
                                     "found)")
            self.out_dir.mkdir(parents=True, exist_ok=True)
            lock = RunDirLock(self.out_dir)
        threads = torch.get_num_threads()
        with lock:
            if self.config.threads is not None:
                torch.set_num_threads(self.config.threads)
            try:
                return self._run()
            finally:
                torch.set_num_threads(threads)

    def _run(self) -> TrainResult:
        cfg = self.config
        R = self.R
        state, streams, w0 = self.initial_state()
        alive = np.ones(R, dtype=bool)
        diverged_at = np.full(R, -1, dtype=np.int64)
        start_round = 0
        manifest = self._manifest()
        writer = None
        rows_mem: list[dict] = []
        dropped: list[dict] = []
        if self.out_dir is not None:
            run_dir = _RunDirectory(self.out_dir, cfg, R, self.device, self.dtype, resume=self.resume)
            start_round, manifest, dropped = run_dir.open(manifest, state, streams, alive, diverged_at)
            writer = MetricsWriter(self.out_dir / METRICS, self.columns)
        threshold = cfg.divergence_threshold * max(1.0, float(w0.abs().max()))
        stop = {"flag": False}
        restore = _install_stop_handlers(stop) if writer is not None else (lambda: None)
        t_start = time.perf_counter()
        bar = None
        try:
            if start_round == 0:
                rows = self._rows(0, self._state_measures(state, True, alive), {}, alive, diverged_at, 0.0)
                self._emit(rows, writer, rows_mem)
            if self.progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=cfg.rounds, initial=start_round, desc=f"{cfg.algorithm} on {cfg.dataset}",
                           unit="round", dynamic_ncols=True)
            consistency = _Consistency(dropped)
            for t in range(start_round, cfg.rounds):
                t0 = time.perf_counter()
                rm, rs = self._round(t, state, streams, alive)
                commit_round(state, rs)
                # as sim.engine: the global model or any local end point non-finite or beyond the threshold
                w_ok, local_ok = divergence_flags(state.w, rs.wK, threshold)
                bad = alive & ~(w_ok & local_ok)
                if bad.any():
                    diverged_at[bad] = t + 1
                    alive &= ~bad
                    park_runs(state, ~alive, w0)
                evaluate = (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds
                sm = self._state_measures(state, evaluate, alive)
                if self.device.type == "cuda":
                    torch.cuda.synchronize(self.device)
                rows = self._rows(t + 1, sm, rm, alive, diverged_at, time.perf_counter() - t0)
                consistency.compare(rows)
                self._emit(rows, writer, rows_mem)
                _fault("kill_after_round", t + 1)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(_postfix(rows))
                last = t + 1 == cfg.rounds
                if writer is not None and ((t + 1) % cfg.checkpoint_every == 0 or last or stop["flag"]):
                    writer.sync()
                    run_dir.checkpoint(t + 1, state, streams, alive, diverged_at)
                if stop["flag"] and not last:
                    name = signal.Signals(stop["signum"]).name
                    if self.out_dir is not None:
                        manifest = run_dir.interrupted(manifest, t + 1, name)
                    raise _TrainingInterrupted(f"{name}: stopped after round {t + 1} (checkpoint written; continue "
                                               "with --resume)", stop["signum"], t + 1)
            manifest = _finish(manifest, consistency, time.perf_counter() - t_start, start_round, cfg.rounds,
                               self.out_dir)
        finally:
            restore()
            if bar is not None:
                bar.close()
            if writer is not None:
                writer.close()
        metrics = self._load_metrics(rows_mem)
        return TrainResult(self.out_dir, metrics, manifest, state.w)

    def _rows(self, t, sm, rm, alive, diverged_at, dt) -> list[dict]:
        rows = []
        for r, spec in enumerate(self.run_specs):
            row = {"round": t, "run": r, "seed": spec["seed"], "beta": float(self.beta[r]),
                   **{f"hp.{k}": spec["hyperparameters"].get(k) for k in self.hp_columns}}
            dead = not alive[r]
            for c in ROUND_COLUMNS + tuple(sorted(self.plugin_measures)):
                row[c] = float("nan") if (dead or c not in rm) else float(rm[c][r])
            for c in STATE_COLUMNS:
                row[c] = float("nan") if dead else float(sm[c][r])
            row["diverged"] = int(dead)
            row["time_s"] = round(dt, 4)
            rows.append(row)
        return rows

    def _emit(self, rows, writer, rows_mem):
        bad = out_of_range({c: [r[c] for r in rows] for c in rows[0]}) if rows else []
        if bad:
            c, i, v, rng = bad[0]
            raise ImpossibleMeasure(f"round {rows[i]['round']}, run {rows[i]['run']}: {c} = {v!r} is outside its "
                                    f"range, {rng.text()} (not written; a bug of fedtheory: please report it)")
        if writer is not None:
            writer.write_rows(rows)
        else:
            rows_mem.extend(rows)

    def _load_metrics(self, rows_mem):
        import pandas as pd

        if self.out_dir is not None:
            return pd.read_csv(self.out_dir / METRICS)
        return pd.DataFrame(rows_mem, columns=self.columns)

    # ------------------------------------------------------------------ the manifest: what the run is
    def _manifest(self) -> dict[str, Any]:
        cfg = self.config
        labels = self.data.y_train
        runs = [dict(r, beta=float(b)) for r, b in zip(self.run_specs, self.beta)]
        return {
            "schema": SCHEMA, "status": "running", "config": cfg.to_dict(), "runs": runs,
            "algorithm": A.describe(self.alg), "algorithm_source": A.resolve(cfg.algorithm)[0].source,
            "dataset": self.data.describe(),
            "partition": {"scheme": cfg.partition, "alpha": cfg.alpha, "classes_per_client": cfg.classes_per_client,
                          "seed": cfg.partition_seed, **summarize(self.parts, labels, self.data.n_classes)},
            "model": {"name": cfg.model, "options": cfg.model_options, "n_parameters": self.d,
                      "parameter_tensors": [[n, int(k)] for n, k in zip(self.flat.names, self.flat.numels)]},
            "client_groups": None if self.client_groups is None else self.client_groups.astype(int).tolist(),
            "plugins": _plugin_info(self.alg),
            "local_steps": self.K, "clients_per_round": self.N, "augment": cfg.augment_on,
            "measures": {**MEASURES, **{k: v[1] for k, v in self.plugin_measures.items()}},
            "objective_terms": [{"plugin": p.name, "parameters": list(a.names)} for p, a in self.objectives],
            "columns": self.columns, "versions": _versions(self.device),
            "execution": {"path": self.path, "path_requested": cfg.path, "path_reason": self.path_reason,
                          "engine": self.grad_fn.engine,
                          "engine_reason": f"{self.engine_rule}; {self.grad_fn.engine_reason}"
                          if self.path == "batched" else self.grad_fn.engine_reason},
            "started_at": _now(), "resumes": [],
        }


# ------------------------------------------------------------------------------------ helpers


GRAM_CHUNK_ELEMENTS = 1 << 24  #: float64 elements of one slice of the updates (128 MiB) in :func:`pairwise_cosines`


def pairwise_cosines(U: torch.Tensor) -> torch.Tensor:
    """cos(U_i, U_j) for every ordered pair i != j of each run's client updates ``U`` (runs, clients, d), shape
    (runs, clients * (clients - 1)), from the Gram matrix accumulated in float64 over slices of the coordinates.

    In float32 a normalized dot product of d ~ 10^7 coordinates is off by up to ~1e-4 (a ResNet-18 run once measured
    cos_max = 1.000195 and stopped); here each product of two float32 numbers is exact in float64 and the sum's
    rounding is at most d * 2^-53 ~ 1e-9 of the norms' product, so every cosine lies within 1e-9 of [-1, 1]
    whatever the run's dtype. A zero update has cosine 0 with every other."""
    R, N, d = U.shape
    G = torch.zeros(R, N, N, dtype=torch.float64, device=U.device)
    step = max(1, GRAM_CHUNK_ELEMENTS // max(1, R * N))
    for s in range(0, d, step):
        u = U[..., s:s + step].to(torch.float64)
        G += u @ u.transpose(1, 2)
    n = torch.sqrt(torch.clamp(torch.diagonal(G, dim1=1, dim2=2), min=0.0))  # (R, N)
    C = G / torch.clamp(n[:, :, None] * n[:, None, :], min=torch.finfo(torch.float64).tiny)
    off = ~torch.eye(N, dtype=torch.bool, device=U.device)
    return C[:, off].reshape(R, N * (N - 1))


def _plugin_info(alg) -> dict[str, Any]:
    """Structure a check needs to evaluate a plug-in's measures (e.g. FedShift's layer blocks and groups)."""
    out: dict[str, Any] = {}
    for p in alg.plugins():
        blocks = getattr(p, "blocks", None)
        if blocks is not None and hasattr(blocks, "sizes"):
            out.setdefault(p.name, {})["block_sizes"] = [int(x) for x in blocks.sizes]
        mask = getattr(p, "inferior_mask", None)
        if mask is not None:
            out.setdefault(p.name, {})["inferior"] = np.asarray(mask, bool).astype(int).tolist()
    return out


def _np(v) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        return v.detach().to("cpu", torch.float64).numpy()
    return np.asarray(v, dtype=float)


class NetworkOracle:
    """The torch backend's LocalOracle for one round: minibatch gradients of the network (plus weight decay,
    clipping and the objective terms) for the participating clients; the round's minibatch positions and
    augmentation are drawn when it is made, after the participants (as the numpy oracle draws its noise)."""

    def __init__(self, trainer: "Trainer", rs: RoundState):
        tr, cfg = trainer, trainer.config
        self.tr, self.anchor = tr, rs.anchor
        R, N, K, B = tr.R, rs.sel.shape[1], tr.K, tr.B
        self.shape = (R, N, B)
        pos = draw_minibatches(rs.streams.generators("batch"), tr.sizes[rs.sel], K, B)  # (R, K, N, B)
        self.gidx = torch.as_tensor(tr.client_index[rs.sel[:, None, :, None], pos], device=tr.device)  # (R, K, N, B)
        self.augment = cfg.augment_on
        if self.augment:
            offs, flips = draw_augmentation(rs.streams.generators("augment"), K, N, B, cfg.crop_padding)
            self.offs = torch.as_tensor(offs, device=tr.device)
            self.flips = torch.as_tensor(flips, device=tr.device)
        self.loss_sum = torch.zeros((R, N), dtype=tr.dtype, device=tr.device)
        self.weight = None  # the objective terms' per-run parameters, one row per (run, client)
        if tr.objectives:
            par = torch.cat([a.params(p, rs.anchor) for p, a in tr.objectives], dim=1)  # (R, P)
            self.weight = par[:, None, :].expand(R, N, par.shape[1]).reshape(R * N, par.shape[1])
        self._k, self._xy = -1, None

    def _batch(self, k: int):
        if k != self._k:
            tr = self.tr
            R, N, B = self.shape
            idx = self.gidx[:, k].reshape(R * N * B)
            x = tr._scale(tr.x_train[idx])
            if self.augment:
                x = crop_flip(x, self.offs[:, k].reshape(-1, 2), self.flips[:, k].reshape(-1), tr.config.crop_padding)
            x = ((x - tr.mean) / tr.std).reshape(R * N, B, *x.shape[1:])
            self._k, self._xy = k, (x, tr.y_train[idx].reshape(R * N, B))
        return self._xy

    def grad(self, k: int, w: torch.Tensor) -> torch.Tensor:
        x, y = self._batch(k)
        g, loss = self.tr._oracle(w, x, y, self.anchor, self.weight)
        self.loss_sum += loss.detach()
        return g

    def grad_at(self, k: int):
        x, y = self._batch(k)
        return lambda z: self.tr._oracle(z, x, y, self.anchor, self.weight)[0]


def _postfix(rows) -> str:
    acc = [r["test_acc"] for r in rows if np.isfinite(r["test_acc"])]
    loss = [r["local_loss"] for r in rows if np.isfinite(r["local_loss"])]
    parts = []
    if loss:
        parts.append(f"loss {np.mean(loss):.3f}")
    if acc:
        parts.append(f"test acc {np.mean(acc):.3f}")
    dead = sum(r["diverged"] for r in rows)
    if dead:
        parts.append(f"{dead} diverged")
    return ", ".join(parts)


def train(config: TrainConfig, out_dir: str | os.PathLike | None = None, *, resume: bool = False,
          progress: bool = False, dataset: ImageDataset | None = None) -> TrainResult:
    """Train ``config``'s runs; log to ``out_dir`` when given (see ``runs.py``), else keep rows in memory."""
    return Trainer(config, out_dir, resume=resume, progress=progress, dataset=dataset).run()
