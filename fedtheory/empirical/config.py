"""Training settings, validated up front; a sweep's runs; the identity a resumed run must match."""
from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import ParameterError, check_choice, check_float, check_int
from . import algorithms as A
from .data import DATASETS
from .models import MODELS
from .partitions import SCHEMES

PATHS = ("auto", "batched", "sequential")
DTYPES = ("float32", "float64")
# settings that do not change what is computed (a resumed run may change them)
RUNTIME_FIELDS = ("data_dir", "device", "eval_batch_size", "checkpoint_every", "threads")
# settings a resumed run may change without changing the rows already logged: ``rounds`` only says where the
# loop stops (the step size of round t is lr * lr_decay**t, whatever T is; no plug-in sees T), plus the
# evaluation and checkpoint of the last round. A run trained to T, then extended to T' > T, logs what a run
# trained to T' logs (rounds <= T as they were, the rest computed from the checkpoint at T).
EXTENSIBLE_FIELDS = ("rounds",)


@dataclass
class TrainConfig:
    """Everything a training batch depends on. ``hyperparameters`` maps an algorithm hyperparameter to a
    value or a list of values; lists of numbers are swept (product over swept names x ``seeds``), and
    the whole sweep trains as one batch of runs.

    Defaults follow seed 000 App. B.1 Table 6 where it gives one (batch 50, lr 0.1, decay 0.998 per round,
    weight decay 1e-3, K = 5 local epochs); the data set, model, clients and rounds default to a small CPU run.
    """

    dataset: str = "digits"
    data_dir: str | None = None
    dataset_options: dict[str, Any] = field(default_factory=dict)
    model: str = "cnn2"
    model_options: dict[str, Any] = field(default_factory=dict)
    algorithm: str = "FedAvg"
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    n_clients: int = 10
    clients_per_round: int | None = None
    partition: str = "dirichlet"
    alpha: float = 0.5
    classes_per_client: int = 2
    samples_per_client: int | None = None
    partition_seed: int = 0
    rounds: int = 10
    local_epochs: float | None = 5.0
    local_steps: int | None = None
    batch_size: int = 50
    lr: float = 0.1
    lr_decay: float = 0.998
    weight_decay: float = 1e-3
    max_grad_norm: float | None = None
    augment: bool | None = None  # None: on for CIFAR, off otherwise
    crop_padding: int = 4
    eval_every: int = 1
    checkpoint_every: int = 5
    path: str = "auto"  # auto: the faster of batched/sequential for the device and model (device.choose_path)
    client_chunk: int | None = None
    device: str = "auto"
    threads: int | None = None  # CPU intra-op threads while training (None: torch's default)
    dtype: str = "float32"
    deterministic: bool = True
    eval_batch_size: int = 1000
    divergence_threshold: float = 1e6

    def __post_init__(self):
        self.seeds = tuple(int(s) if isinstance(s, numbers.Integral) and not isinstance(s, bool) else s for s in
                           (self.seeds if isinstance(self.seeds, (list, tuple)) else [self.seeds]))
        self.hyperparameters = dict(self.hyperparameters)
        self.dataset_options = dict(self.dataset_options)
        self.model_options = dict(self.model_options)

    # ------------------------------------------------------------------ validation
    def validated(self) -> "TrainConfig":
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("model", self.model, tuple(MODELS))
        check_choice("partition", self.partition, SCHEMES)
        check_choice("path", self.path, PATHS)
        check_choice("dtype", self.dtype, DTYPES)
        A.resolve(self.algorithm)
        if not self.seeds or any(not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ParameterError("seeds", list(self.seeds), "a non-empty list of non-negative integers")
        if len(set(self.seeds)) != len(self.seeds):
            raise ParameterError("seeds", list(self.seeds), "distinct seeds")
        check_int("n_clients", self.n_clients, 1)
        if self.clients_per_round is not None:
            check_int("clients_per_round", self.clients_per_round, 1, self.n_clients)
        check_float("alpha", self.alpha, 0.0, low_inclusive=False)
        check_int("classes_per_client", self.classes_per_client, 1)
        if self.samples_per_client is not None:
            check_int("samples_per_client", self.samples_per_client, 1)
        check_int("partition_seed", self.partition_seed, 0)
        check_int("rounds", self.rounds, 1)
        if self.local_steps is None and self.local_epochs is None:
            raise ParameterError("local_epochs", None, "given when local_steps is not")
        if self.local_steps is not None:
            check_int("local_steps", self.local_steps, 1)
        else:
            check_float("local_epochs", self.local_epochs, 0.0, low_inclusive=False)
        check_int("batch_size", self.batch_size, 1)
        check_float("lr", self.lr, 0.0, low_inclusive=False)
        check_float("lr_decay", self.lr_decay, 0.0, 1.0, low_inclusive=False)
        check_float("weight_decay", self.weight_decay, 0.0)
        if self.max_grad_norm is not None:
            check_float("max_grad_norm", self.max_grad_norm, 0.0, low_inclusive=False)
        check_int("crop_padding", self.crop_padding, 0)
        check_int("eval_every", self.eval_every, 1)
        check_int("checkpoint_every", self.checkpoint_every, 1)
        if self.client_chunk is not None:
            check_int("client_chunk", self.client_chunk, 1)
        check_int("eval_batch_size", self.eval_batch_size, 1)
        if self.threads is not None:
            check_int("threads", self.threads, 1)
        check_float("divergence_threshold", self.divergence_threshold, 0.0, low_inclusive=False)
        self.runs()  # validates the hyperparameters
        return self

    @property
    def augment_on(self) -> bool:
        return self.dataset in ("cifar10", "cifar100") if self.augment is None else bool(self.augment)

    # ------------------------------------------------------------------ sweep
    def swept(self) -> dict[str, list]:
        return {k: list(v) for k, v in self.hyperparameters.items() if isinstance(v, (list, tuple))}

    def runs(self) -> list[dict[str, Any]]:
        """One dict per run: {'run', 'seed', 'hyperparameters'}; sweep order: hyperparameter grid (in the
        order given), then seeds (so a run's index is grid_index * len(seeds) + seed_index)."""
        allowed = A.hyperparameter_names(self.algorithm)
        for k, v in self.hyperparameters.items():
            if k not in allowed:
                raise ParameterError(f"hyperparameter {k!r}", v, f"one of {', '.join(allowed) or '(none)'} for "
                                     f"{self.algorithm}")
            vals = v if isinstance(v, (list, tuple)) else [v]
            if not vals:
                raise ParameterError(f"hyperparameter {k!r}", v, "a value or a non-empty list of values")
            if isinstance(v, (list, tuple)) and len(vals) > 1 and not all(_is_number(x) for x in vals):
                raise ParameterError(f"hyperparameter {k!r}", v, "numbers when swept (one value per run)")
        grid_keys = list(self.swept())
        grid = list(itertools.product(*(self.swept()[k] for k in grid_keys))) or [()]
        out = []
        for combo in grid:
            for s in self.seeds:
                hp = {k: (v if not isinstance(v, (list, tuple)) else v[0]) for k, v in self.hyperparameters.items()}
                hp.update(dict(zip(grid_keys, combo)))
                out.append({"run": len(out), "seed": s, "hyperparameters": hp})
        return out

    def algorithm_arguments(self) -> dict[str, Any]:
        """Factory arguments: swept numbers as (R,) arrays, the rest as given."""
        runs = self.runs()
        args = {}
        for k, v in self.hyperparameters.items():
            if isinstance(v, (list, tuple)) and len(runs) > 1 and all(_is_number(x) for x in v):
                args[k] = np.array([r["hyperparameters"][k] for r in runs], dtype=float)
            else:
                args[k] = v[0] if isinstance(v, (list, tuple)) else v
        return args

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["seeds"] = list(self.seeds)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ParameterError("config", unknown, "known TrainConfig fields (" + ", ".join(sorted(names)) + ")")
        return cls(**d)

    def identity(self) -> dict[str, Any]:
        """The settings that determine the numbers (what a resumed run must share)."""
        return {k: v for k, v in self.to_dict().items() if k not in RUNTIME_FIELDS}


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(float(x))


def parse_hyperparameters(items) -> dict[str, Any]:
    """CLI 'name=value' or 'name=v1,v2,...' -> {name: value or [values]}; numbers parsed, else strings."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise ParameterError("--hp", item, "NAME=VALUE or NAME=V1,V2,... (e.g. beta=0,0.05,0.1)")
        k, v = item.split("=", 1)
        k = k.strip()
        if not k or k in out:
            raise ParameterError("--hp", item, "a new hyperparameter name")
        parts = [p.strip() for p in v.split(",")]
        vals = [_parse_value(p) for p in parts]
        out[k] = vals if len(vals) > 1 else vals[0]
    return out


def _parse_value(s: str):
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    return s
