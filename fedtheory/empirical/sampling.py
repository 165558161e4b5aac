"""Per-run random streams for training and the per-round draws made from them.

Each run's randomness comes from its own seed (``sim/rng.py``: one SeedSequence per run, one child
stream per concern), so run r of a sweep is bit-identical to the same seed run alone, and the
batched and sequential paths consume identical draws. Every draw is made in numpy on the host
once per round, then moved to the device: the two paths cannot differ in what they sample.
The generators' states go into checkpoints as JSON, so a resumed run continues the same streams.
"""
from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from ..files import parse_json
from ..sim.rng import CONCERNS, RunStreams

TRAIN_CONCERNS = CONCERNS + ("augment",)


class TrainStreams(RunStreams):
    """RunStreams with an extra 'augment' stream. The first four concerns are the sim layer's
    (SeedSequence children are indexed, so spawning more leaves them unchanged)."""

    def __init__(self, seeds: Sequence[int]):
        super().__init__(seeds)
        for concern in TRAIN_CONCERNS[len(CONCERNS):]:
            self._gens[concern] = []
        for s in self.seeds:
            children = np.random.SeedSequence(int(s)).spawn(len(TRAIN_CONCERNS))
            for concern, child in zip(TRAIN_CONCERNS[len(CONCERNS):], children[len(CONCERNS):]):
                self._gens[concern].append(np.random.Generator(np.random.PCG64(child)))

    def generators(self, concern: str) -> list[np.random.Generator]:
        return self._gens[concern]

    def model_seeds(self) -> list[int]:
        """One torch seed per run for the model's initial weights (drawn once, from the 'init' stream)."""
        return [int(g.integers(0, 2**62)) for g in self._gens["init"]]

    def state_json(self) -> str:
        return json.dumps({c: [g.bit_generator.state for g in gens] for c, gens in self._gens.items()})

    def load_state_json(self, text: str) -> None:
        states = parse_json(text, "checkpoint", "checkpoint's random streams")  # FileRefused is a ValueError
        if not isinstance(states, dict) or set(states) != set(self._gens) \
                or any(len(states[c]) != len(self._gens[c]) for c in states):
            raise ValueError("checkpoint random streams do not match this run's seeds")
        for c, gens in self._gens.items():
            for g, st in zip(gens, states[c]):
                g.bit_generator.state = st


def local_steps_for(sizes: np.ndarray, batch_size: int, local_epochs: float | None, local_steps: int | None) -> int:
    """K, the same for every client (the clients of a round train as one batch): ``local_steps`` if
    given, else local_epochs x ceil(mean client size / batch_size), at least 1."""
    if local_steps is not None:
        return int(local_steps)
    return max(1, int(round(local_epochs * np.ceil(float(np.mean(sizes)) / batch_size))))


def draw_minibatches(gens: list[np.random.Generator], sizes: np.ndarray, K: int, B: int) -> np.ndarray:
    """Positions within each selected client's data for K steps of B samples: (R, K, N, B).

    sizes: (R, N) sizes of the selected clients. Each client walks through a fresh uniform
    permutation of its data, then the next one (epoch-wise shuffling, as a DataLoader with
    shuffle=True does, without dropping a partial batch: batches run across epoch boundaries).
    """
    R, N = sizes.shape
    total = K * B
    out = np.empty((R, K, N, B), dtype=np.int64)
    n_max = int(sizes.max())
    for r, g in enumerate(gens):
        s = sizes[r].astype(np.int64)
        P = int(-(-total // int(s.min())))
        keys = g.random((N, P, n_max))
        keys = np.where(np.arange(n_max)[None, None, :] >= s[:, None, None], 2.0, keys)  # padding sorts last
        perm = np.argsort(keys, axis=-1, kind="stable")
        p = np.arange(total)
        q, j = p[None, :] // s[:, None], p[None, :] % s[:, None]
        pos = perm[np.arange(N)[:, None], q, j]  # (N, total)
        out[r] = pos.reshape(N, K, B).transpose(1, 0, 2)
    return out


def draw_augmentation(gens: list[np.random.Generator], K: int, N: int, B: int,
                      padding: int) -> tuple[np.ndarray, np.ndarray]:
    """Random-crop offsets in [0, 2 padding] (R, K, N, B, 2) and horizontal-flip bits (R, K, N, B)."""
    offs = np.stack([g.integers(0, 2 * padding + 1, size=(K, N, B, 2)) for g in gens])
    flips = np.stack([g.random((K, N, B)) < 0.5 for g in gens])
    return offs, flips
