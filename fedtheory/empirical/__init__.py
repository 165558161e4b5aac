"""Empirical layer: the sim layer's algorithms trained on real networks (torch), with Delta^t and the
generalization gap logged per round, checkpoints and resume; see ``fedtheory train --help``.

Submodules that do not need torch (``runs``: reading run directories) import without it; the
names below are loaded on first use.
"""
from __future__ import annotations

import importlib

_LAZY = {
    "TrainConfig": "config", "parse_hyperparameters": "config",
    "Trainer": "trainer", "TrainResult": "trainer", "train": "trainer",
    "load_dataset": "data", "ImageDataset": "data", "DataError": "data",
    "build_model": "models", "MODELS": "models",
    "register_algorithm": "algorithms", "build_algorithm": "algorithms", "algorithms": "algorithms",
    "make_partition": "partitions",
    "load_run": "runs", "find_runs": "runs", "runs_table": "runs", "RunLog": "runs",
    "train_sweep": "sweep", "SweepResult": "sweep", "cells_equal": "sweep",
    "FlatModel": "functional", "GradFn": "functional", "Workers": "functional",
    "StackedModel": "stacked", "NotStackable": "stacked",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
