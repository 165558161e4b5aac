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

Checkpoints every ``checkpoint_every`` rounds (atomic; the one before is kept as checkpoint.prev.pt);
``resume`` continues from the last one (from the one before when the last cannot be read, or when metrics.csv
lacks rows from before its round: a torn or lost last line; from round 0 when neither checkpoint is early enough;
saying so), recomputing the rounds after it, and records how far the recomputed rows differ from the ones
the killed process had written (0 on a deterministic device). One process writes a run directory at a time (an
flock, runs.RunDirLock): a second ``train --out D`` is refused while the first runs. Every row is checked against
the columns' declared ranges (runs.MEASURE_RANGES) before it is written. A resume may raise ``rounds`` (and lower
it down to the checkpoint's round): the rows logged so far are those of a run trained to the new T.
"""
from __future__ import annotations

import contextlib
import json
import os
import pickle
import platform
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..files import FileRefused, fsync_dir, open_regular, parse_json, write_error_text
from .._signals import note_signal, raise_if_received
from .._validation import FedTheoryError, ParameterError
from ..sim.rules import RoundState, State
from ..sim.rounds import StepSchedule, commit_round, divergence_flags, park_runs, run_round
from ..sim.rounds import versions as _base_versions
from . import algorithms as A
from .augment import crop_flip
from .config import EXTENSIBLE_FIELDS, TrainConfig
from .data import ImageDataset, load_dataset
from .functional import FlatModel, GradFn, Workers, per_sample_eval
from .models import build_model
from .objectives import adapter_for
from .partitions import partition_with_groups, summarize
from .runs import (CHECKPOINT, MANIFEST, MAX_CHECKPOINT_BYTES, MEASURES, METRICS, NON_REPRODUCIBLE, PREV_CHECKPOINT, ROUND_COLUMNS, SCHEMA,
                   STATE_COLUMNS, MetricsWriter, RunDirError, RunDirLock, out_of_range, read_manifest, scan_metrics,
                   truncate_metrics, write_manifest)
from .sampling import TrainStreams, draw_augmentation, draw_minibatches, local_steps_for

FAULT_ENV = "FEDTHEORY_FAULT"  # crash-test hook: 'kill_after_round:R', 'kill_in_checkpoint:R', 'sigterm_after_round:R'
FAULT_ONCE_ENV = "FEDTHEORY_FAULT_ONCE"  # a file path: the fault fires only in the process that creates it


class TrainingInterrupted(FedTheoryError):
    """A signal stopped the training after a round (its checkpoint written, the manifest saying 'interrupted'):
    ``signum`` is the signal, ``round`` the last round completed."""

    def __init__(self, message: str, signum: int = signal.SIGINT, round: int | None = None):
        super().__init__(message)
        self.signum, self.round = signum, round

    def __reduce__(self):  # crosses process boundaries (a sweep's workers) intact
        return (type(self), (str(self), self.signum, self.round))


class ImpossibleMeasure(RuntimeError):
    """The trainer computed a value outside its column's declared range (runs.MEASURE_RANGES): a bug of the tool,
    never written to metrics.csv (the rounds before it are on disk and the run resumes from its checkpoint)."""


@dataclass
class TrainResult:
    run_dir: Path | None
    metrics: Any  # pandas DataFrame
    manifest: dict[str, Any]
    final_w: torch.Tensor  # (R, dim)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ParameterError("device", name, "'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError("device", name, "'cpu' or 'auto' (no CUDA device is available)")
    return dev


def versions(device: torch.device) -> dict[str, str]:
    """The sim layer's versions plus torch, pandas, the platform and the device."""
    import pandas

    v = {**_base_versions(), "torch": torch.__version__, "pandas": pandas.__version__, "platform": platform.platform(),
         "device": str(device)}
    commit = _git_commit()
    if commit:
        v["fedtheory_git"] = commit
    if device.type == "cuda":
        v["cuda"] = str(torch.version.cuda)
        v["gpu"] = torch.cuda.get_device_name(device)
    else:
        v["cpu_threads"] = str(torch.get_num_threads())
        v["thp_mem_alloc"] = os.environ.get("THP_MEM_ALLOC_ENABLE", "")  # read by torch at its first allocation
    return v


def _git_commit() -> str | None:
    """The commit (and '+dirty') of the fedtheory checkout, when it is one."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


# --path auto is a rule, not a timed probe: the two paths agree only to float rounding, so a choice that followed
# a timing could differ between two launches of the same settings (same seed, same bits needs a deterministic
# choice). The rule follows benchmarks/bench_empirical.py (results/empirical.json): on a GPU the batched path (vmap)
# wins. On a CPU, one round of 10 clients: ResNet-18-GN (width 32, 32x32) batched with the stacked engine beat
# client-by-client calls (x1.23, x1.33 in two runs) and vmap lost (x0.49, x0.40); CNN2 on 32x32 images lost with
# both engines (stacked x0.81, x0.85; vmap x0.76, x0.86); on 8x8 digits and for the linear model batching wins (per-
# call overhead dominates; README's digits sweep end to end, 20 rounds: stacked 28.6-29.5 s, vmap 32.6-33.4 s).
# So on a CPU: batched for small images, the linear model and ResNet-18-GN; sequential for the other convnets on
# larger images (CNN2 measured, VGG-11 not); vmap where the stacked engine refuses the model, on small images only.
CPU_BATCHED_MAX_PIXELS = 16 * 16
CPU_STACKED_MODELS = ("resnet18gn",)  # batched on larger images too, with the stacked engine only
# On a CPU the stacked engine trains the rows in two blocks and evaluates the runs on two worker threads (one per
# core of the 2-core development machine), whatever --threads is (so the numbers do not depend on it); with
# --threads >= 2 the blocks run in parallel, each worker with --threads // 2 torch threads.
CPU_WORKERS = 2


def choose_engine(device: torch.device) -> tuple[str, str]:
    """(engine of the batched path, why): 'stacked' (rows folded into the channels, channels-last) on a CPU, where
    it measured faster than vmap (benchmarks/bench_empirical.py), 'vmap' elsewhere (not measured against it)."""
    if device.type == "cpu":
        return "stacked", "stacked on a CPU (faster than vmap there: benchmarks/results/empirical.json)"
    return "vmap", f"vmap on {device.type}"


def choose_path(requested: str, device: torch.device, model: str, image_shape, stacked: bool = True) -> tuple[str, str]:
    """(path, why): ``requested`` itself unless it is 'auto'. ``stacked``: whether the batched path would use the
    stacked engine (False once it has refused the model)."""
    if requested != "auto":
        return requested, "asked for"
    if device.type != "cpu":
        return "batched", f"auto: batched on {device.type} (vmap over the clients; benchmarks/bench_empirical.py)"
    h, w = image_shape[-2:]
    small = model == "linear" or h * w <= CPU_BATCHED_MAX_PIXELS
    if stacked and (small or model in CPU_STACKED_MODELS):
        return "batched", (f"auto: batched for {model} on {h}x{w} images on a CPU with the stacked engine (faster "
                           f"than client-by-client calls there: benchmarks/results/empirical.json)")
    if small:
        return "batched", (f"auto: batched for {model} on {h}x{w} images on a CPU with vmap (per-call overhead "
                           f"dominates; vmap over the clients is faster there: benchmarks/results/empirical.json)")
    why = ("the stacked engine cannot take the model, and vmap lost to client-by-client calls on 32x32 images"
           if model in CPU_STACKED_MODELS else "client by client measured faster than either batched engine for CNN2 on "
           f"32x32 images; the stacked engine is used for {', '.join(CPU_STACKED_MODELS)} only")
    return "sequential", f"auto: sequential for {model} on {h}x{w} images on a CPU ({why}: benchmarks/results/empirical.json)"


class Trainer:
    """One training batch. ``Trainer(config, out_dir).run()``; see ``train`` for the one-call API."""

    def __init__(self, config: TrainConfig, out_dir: str | os.PathLike | None = None, *, resume: bool = False,
                 progress: bool = False, dataset: ImageDataset | None = None):
        self.config = config.validated()
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.resume = resume
        self.progress = progress
        cfg = self.config
        self.device = resolve_device(cfg.device)
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
        self.path, self.path_reason = choose_path(cfg.path, self.device, cfg.model, self.data.image_shape)
        engine, self.engine_rule = choose_engine(self.device)
        cpu = self.device.type == "cpu"
        n_threads = cfg.threads if cfg.threads is not None else torch.get_num_threads()
        self.workers = Workers(self.flat, CPU_WORKERS, max(1, n_threads // CPU_WORKERS)) \
            if cpu and n_threads >= CPU_WORKERS else None
        self.grad_fn = GradFn(self.flat, self.path, cfg.client_chunk, [a.term for _, a in self.objectives],
                              [len(a.names) for _, a in self.objectives], engine=engine, channels_last=cpu,
                              parts=CPU_WORKERS if cpu else 1, workers=self.workers,
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
        path, why = choose_path(cfg.path, self.device, cfg.model, self.data.image_shape, stacked=False)
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
                m = build_model(self.config.model, self.data.image_shape, self.data.n_classes, **self.config.model_options)
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
        cfg, R = self.config, self.R
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
            out.update(cos_mean=vals.mean(1), cos_abs_mean=vals.abs().mean(1), cos_min=vals.amin(1), cos_max=vals.amax(1))
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
            start_round, manifest, dropped = self._open_dir(manifest, state, streams, alive, diverged_at)
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
                    self._checkpoint(t + 1, state, streams, alive, diverged_at)
                if stop["flag"] and not last:
                    name = signal.Signals(stop["signum"]).name
                    if self.out_dir is not None:
                        manifest = dict(manifest, status="interrupted", interrupted={
                            "after_round": t + 1, "signal": name, "at": _now()})
                        write_manifest(self.out_dir, manifest)
                    raise TrainingInterrupted(f"{name}: stopped after round {t + 1} (checkpoint written; continue with "
                                              "--resume)", stop["signum"], t + 1)
            manifest = self._finish(manifest, consistency, time.perf_counter() - t_start, start_round)
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

    # ------------------------------------------------------------------ run directory
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
            "columns": self.columns, "versions": versions(self.device),
            "execution": {"path": self.path, "path_requested": cfg.path, "path_reason": self.path_reason,
                          "engine": self.grad_fn.engine, "engine_reason": f"{self.engine_rule}; {self.grad_fn.engine_reason}"
                          if self.path == "batched" else self.grad_fn.engine_reason},
            "started_at": _now(), "resumes": [],
        }

    def _open_dir(self, manifest, state, streams, alive, diverged_at):
        d = self.out_dir
        mpath, cpath, ppath, xpath = d / MANIFEST, d / CHECKPOINT, d / PREV_CHECKPOINT, d / METRICS
        if not self.resume:
            if mpath.exists() or cpath.exists() or ppath.exists() or xpath.exists():
                raise ParameterError("out", str(d), "a new or empty directory (it holds a run; pass --resume to continue "
                                     "it, or choose another directory)")
            d.mkdir(parents=True, exist_ok=True)
            write_manifest(d, manifest)
            return 0, manifest, []
        if not mpath.exists():
            raise ParameterError("out", str(d), "a run directory with manifest.json to resume (none found)")
        old = read_manifest(d)
        there = _normalized(TrainConfig.from_dict(old["config"]).identity())
        here = _normalized(self.config.identity())
        diff = sorted(k for k in set(there) | set(here) if there.get(k) != here.get(k) and k not in EXTENSIBLE_FIELDS)
        if diff:
            raise ParameterError("resume", str(d), "the same settings as the run it continues; differing: " +
                                 ", ".join(f"{k} ({there.get(k)!r} there, {here.get(k)!r} here)" for k in diff))
        # the rows on disk decide how far back to go: a checkpoint past the last complete round of metrics.csv (a
        # torn or lost last line) cannot restore the rows it lacks
        scan = scan_metrics(xpath, self.R) if xpath.exists() else None
        complete = scan.complete_through if scan is not None else -1
        ck, used, fallback, unreadable = self._read_checkpoint(cpath, ppath, complete, scan)
        start = int(ck["round"]) if ck is not None else 0
        old_rounds = int(old["config"]["rounds"])
        if self.config.rounds < start:
            raise ParameterError("--rounds", self.config.rounds,
                                 f"an integer >= {start} to resume {d} (its checkpoint is at round {start}; rounds up "
                                 f"to {start} are logged and stay; fewer rounds need a new run directory)")
        manifest = dict(old, config=self.config.to_dict())
        if ck is not None:
            self._restore(ck, used, state, streams, alive, diverged_at)
        if start == self.config.rounds and old.get("status") == "completed" and old_rounds == self.config.rounds:
            return start, manifest, []  # nothing left to do
        resume_note: dict[str, Any] = {}
        if fallback is not None:
            # the unreadable file must not become checkpoint.prev.pt at the next checkpoint
            if unreadable and cpath.exists():
                os.replace(cpath, d / (CHECKPOINT + ".unreadable"))
            resume_note["checkpoint_fallback"] = fallback
            print(f"fedtheory: warning: {fallback}", file=sys.stderr)
        if old_rounds != self.config.rounds:
            change = {"at": _now(), "from_rounds": old_rounds, "to_rounds": self.config.rounds, "from_round": start}
            if (start == old_rounds and old.get("status") == "completed" and start % self.config.eval_every != 0
                    and start < self.config.rounds):
                change["note"] = (f"round {start} was evaluated as the last round of the run before (eval_every "
                                  f"{self.config.eval_every}); a run trained to {self.config.rounds} from the start "
                                  f"leaves its train/test measures NaN")
            manifest["rounds_changes"] = list(manifest.get("rounds_changes", [])) + [change]
            resume_note["rounds"] = [old_rounds, self.config.rounds]
        dropped = truncate_metrics(xpath, start if start > 0 else -1) if xpath.exists() else []
        if start == 0 and xpath.exists():
            xpath.unlink()
        manifest["resumes"] = list(manifest.get("resumes", [])) + [
            {"at": _now(), "from_round": start, "rows_to_recompute": len(dropped), **resume_note,
             "versions": versions(self.device)}]
        manifest["status"] = "running"
        write_manifest(d, manifest)
        return start, manifest, dropped

    def _checkpoint(self, t, state, streams, alive, diverged_at):
        """Write checkpoint.pt atomically; the one it replaces becomes checkpoint.prev.pt (a crash between the
        two renames leaves only checkpoint.prev.pt, the newest complete one, which a resume then reads)."""
        payload = {"schema": SCHEMA, "round": t, "w": state.w, "server": dict(state.server),
                   "clients": dict(state.clients), "streams": streams.state_json(), "alive": torch.as_tensor(alive),
                   "diverged_at": torch.as_tensor(diverged_at), "identity": json.dumps(self._checkpoint_identity(),
                                                                                        sort_keys=True)}
        path = self.out_dir / CHECKPOINT
        fd, tmp = tempfile.mkstemp(dir=self.out_dir, prefix=f".{CHECKPOINT}.", suffix=".tmp")
        sink = _WriteErrors(os.fdopen(fd, "wb"))
        try:
            with sink.file:
                torch.save(payload, sink)  # torch reports a failed write as a RuntimeError without its cause
                sink.file.flush()
                os.fsync(sink.file.fileno())
        except (OSError, RuntimeError) as exc:
            _unlink(tmp)
            cause = sink.error if sink.error is not None else exc if isinstance(exc, OSError) else None
            if cause is None:
                raise
            raise RunDirError(f"{path}: the checkpoint of round {t} could not be written ("
                              f"{write_error_text(cause, self.out_dir)}); its temporary file was removed, any earlier "
                              "checkpoint and the logged rounds are kept: make room and continue with --resume") \
                from None
        except BaseException:
            _unlink(tmp)
            raise
        _fault("kill_in_checkpoint", t)
        if path.exists():
            os.replace(path, self.out_dir / PREV_CHECKPOINT)
        _fault("kill_in_checkpoint_rotation", t)
        os.replace(tmp, path)
        fsync_dir(self.out_dir)

    def _checkpoint_identity(self) -> dict[str, Any]:
        return {k: v for k, v in self.config.identity().items() if k not in EXTENSIBLE_FIELDS}

    def _read_checkpoint(self, cpath: Path, ppath: Path, complete: int | None = None, scan=None):
        """(checkpoint, its path, note or None, whether checkpoint.pt was unreadable): the newest readable checkpoint
        (checkpoint.pt, else checkpoint.prev.pt) whose round is at most ``complete``, the last round metrics.csv
        holds complete (None: any); (None, None, note, ...) when there is no checkpoint, or only ones past
        ``complete`` (the run then restarts at round 0, deterministic from its seeds); a RunDirError when no
        checkpoint can be read at all."""
        if not cpath.exists() and not ppath.exists():
            return None, None, None, False
        errors, too_new = [], []
        for path in (cpath, ppath):
            if not path.exists():
                errors.append(f"{path.name}: missing")
                continue
            try:
                with open_regular(path, MAX_CHECKPOINT_BYTES, "checkpoint") as fh:  # never a FIFO or a device
                    ck = torch.load(fh, map_location=self.device, weights_only=True)
                if not isinstance(ck, dict) or "round" not in ck:
                    raise ValueError("not a fedtheory checkpoint")
            except FileRefused as exc:
                errors.append(f"{path.name}: cannot be read ({exc.why})")
                continue
            except pickle.UnpicklingError:  # torch's own message advises weights_only=False: never for a file of others
                errors.append(f"{path.name}: cannot be read (not a checkpoint fedtheory wrote: its contents are not "
                              "the tensors and plain values of one, so it is not unpickled)")
                continue
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{path.name}: cannot be read ({type(exc).__name__}: {str(exc)[:200]})")
                continue
            r = int(ck["round"])
            if complete is not None and r > complete:
                too_new.append(f"{path.name} is at round {r}, past metrics.csv's last complete round ({complete}: "
                               f"{scan.describe() if scan is not None else 'no metrics.csv'})")
                continue
            note = None
            if errors or too_new:
                note = "; ".join(errors + too_new) + f"; falling back to {path.name} (round {r}): the rounds after it " \
                                                      "are recomputed"
            return ck, path, note, bool(errors) and path == ppath
        if too_new:
            return None, None, "; ".join(errors + too_new) + "; no checkpoint at or before it: recomputing from " \
                                                             "round 0", False
        raise RunDirError(f"{cpath.parent}: no readable checkpoint ({'; '.join(errors)}); start a new run directory")

    def _restore(self, ck, path, state, streams, alive, diverged_at) -> int:
        try:  # a checkpoint may be someone else's: its JSON parts are read like any JSON file
            ident = parse_json(ck["identity"], path, "checkpoint") if isinstance(ck.get("identity"), str) else None
        except FileRefused as exc:
            raise RunDirError(f"{path}: its settings cannot be read ({exc.why})") from None
        mine = json.loads(json.dumps(self._checkpoint_identity(), sort_keys=True))
        if ident is not None:  # checkpoints written before rounds could change carry it; it may differ
            ident = {k: v for k, v in ident.items() if k not in EXTENSIBLE_FIELDS}
        if ck.get("schema") != SCHEMA or ident != mine:
            raise RunDirError(f"{path}: the checkpoint belongs to different settings")
        state.w = ck["w"].to(self.dtype)
        if set(ck["server"]) != set(state.server) or set(ck["clients"]) != set(state.clients):
            raise RunDirError(f"{path}: the checkpoint's algorithm state ({sorted(ck['server'])}, {sorted(ck['clients'])}) "
                              f"does not match this algorithm's ({sorted(state.server)}, {sorted(state.clients)})")
        state.server.update(ck["server"])
        state.clients.update(ck["clients"])
        try:
            streams.load_state_json(ck["streams"])
        except (ValueError, TypeError, KeyError) as exc:
            raise RunDirError(f"{path}: its random streams cannot be restored ({exc})") from None
        alive[:] = ck["alive"].numpy()
        diverged_at[:] = ck["diverged_at"].numpy()
        return int(ck["round"])

    def _finish(self, manifest, consistency, elapsed, start_round):
        if start_round == self.config.rounds and manifest.get("status") == "completed":
            return manifest  # nothing was left to do
        manifest = dict(manifest, status="completed", finished_at=_now())
        manifest["elapsed_s"] = round(float(manifest.get("elapsed_s", 0.0)) + elapsed, 3)
        if manifest.get("resumes"):
            manifest["resumes"][-1].update(consistency.report())
        if self.out_dir is not None:
            write_manifest(self.out_dir, manifest)
        return manifest


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


def _normalized(d: dict) -> dict:
    return json.loads(json.dumps(d, sort_keys=True))


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


class _Consistency:
    """Compares recomputed rows with the rows a killed process had written after the checkpoint."""

    def __init__(self, dropped: list[dict[str, str]]):
        self.old = {(int(r["round"]), int(r["run"])): r for r in dropped}
        self.max_abs = 0.0
        self.compared = 0
        self.mismatched: list[str] = []

    def compare(self, rows: list[dict]) -> None:
        for row in rows:
            old = self.old.get((row["round"], row["run"]))
            if old is None:
                continue
            self.compared += 1
            for k, v in row.items():
                if k in NON_REPRODUCIBLE or not isinstance(v, (int, float)):
                    continue
                try:
                    o = float(old[k])
                except (KeyError, ValueError):
                    continue
                v = float(v)
                if np.isnan(o) and np.isnan(v):
                    continue
                diff = abs(o - v) if np.isfinite(o) and np.isfinite(v) else float("inf")
                if diff > self.max_abs:
                    self.max_abs = diff
                if diff > 0 and len(self.mismatched) < 20:
                    self.mismatched.append(f"round {row['round']} run {row['run']} {k}: {o!r} -> {v!r}")

    def report(self) -> dict[str, Any]:
        return {"rows_compared": self.compared, "max_abs_difference": self.max_abs,
                "bit_identical": self.max_abs == 0.0, "mismatches": self.mismatched}


def _fault(point: str, t: int) -> None:
    """Crash-test hook (FEDTHEORY_FAULT='POINT:ROUND'): SIGKILL this process at a named point, or send it
    SIGTERM ('sigterm_after_round'), so tests can interrupt a run exactly where they mean to; with
    FEDTHEORY_FAULT_ONCE=PATH only the first process to get there (it creates PATH) is hit."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    fires = spec == f"{point}:{t}" or (point == "kill_after_round" and spec == f"sigterm_after_round:{t}")
    if not fires:
        return
    once = os.environ.get(FAULT_ONCE_ENV)
    if once:  # one crash among many processes (a retried task must get through)
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL if spec.startswith("kill") else signal.SIGTERM)


class _WriteErrors:
    """A binary file for torch.save that remembers the OSError of a failed write (a full disk), which torch turns
    into a RuntimeError that does not say why."""

    def __init__(self, file):
        self.file, self.error = file, None

    def write(self, data):
        try:
            return self.file.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self):
        try:
            self.file.flush()
        except OSError as exc:
            self.error = exc
            raise


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _install_stop_handlers(stop: dict):
    """SIGINT/SIGTERM: finish the current round, checkpoint, then stop (a second signal stops at once)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {}

    def handler(signum, frame):
        note_signal(signum)  # the command line's exit status says which signal stopped the run
        if stop["flag"]:
            raise_if_received()  # the second: at once (KeyboardInterrupt, or Terminated for SIGTERM)
            raise KeyboardInterrupt
        stop["flag"], stop["signum"] = True, signum

    for s in (signal.SIGINT, signal.SIGTERM):
        old[s] = signal.getsignal(s)
        signal.signal(s, handler)

    def restore():
        for s, h in old.items():
            signal.signal(s, h)
    return restore


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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def train(config: TrainConfig, out_dir: str | os.PathLike | None = None, *, resume: bool = False,
          progress: bool = False, dataset: ImageDataset | None = None) -> TrainResult:
    """Train ``config``'s runs; log to ``out_dir`` when given (see ``runs.py``), else keep rows in memory."""
    return Trainer(config, out_dir, resume=resume, progress=progress, dataset=dataset).run()
