"""Random streams: one SeedSequence per run, one child stream per concern.

A run's random numbers depend only on its own seed, never on the other runs of the batch:
run ``r`` of a 64-run sweep is bit-identical to the same seed run alone, and two runs with the
same seed (the coupled runs of a stability measurement) share every stream.

Draw-ahead (``RunStreams(seeds, rounds_ahead=T)``, what ``simulate`` uses): a concern's per-round draws
(``normal`` / ``uniform`` of one shape, once per round) are taken for many rounds in one call per run and handed
out round by round. numpy's generators fill an array element after element, so a block of B rounds holds exactly
the numbers B calls would have drawn: the streams are the same bits as without draw-ahead. Should a concern
then be asked for another kind or shape of draw, or its generators be used directly, the generators are put back
where the draws handed out so far leave them (their state before the block, advanced by those draws) and the
concern is drawn call by call from there on: the same bits either way.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .._validation import ParameterError, check_int

CONCERNS = ("sampling", "batch", "noise", "init", "topology")  # append only: earlier streams keep their bits
AHEAD_ELEMENTS = 1 << 13  # at most this many numbers per run in one block (64 KiB of float64: the block stays in cache)


class _Block:
    """The draws of one concern for the next rounds: data (B, R, *shape), the next row to hand out, and the
    generators' states before the block (to put them back)."""

    __slots__ = ("method", "shape", "data", "pos", "states")

    def __init__(self, method: str, shape: tuple[int, ...], data: np.ndarray, states: list[dict]):
        self.method, self.shape, self.data, self.pos, self.states = method, shape, data, 0, states


class RunStreams:
    """Per-run generators for each concern; draws are stacked on a leading runs axis.

    rounds_ahead: how many rounds of per-round draws a concern may take ahead (0: none; see the module docstring).
    """

    def __init__(self, seeds: Sequence[int], rounds_ahead: int = 0):
        seeds = np.asarray(seeds)
        if seeds.ndim != 1 or seeds.size == 0 or not np.issubdtype(seeds.dtype, np.integer) or np.any(seeds < 0):
            raise ParameterError("seeds", seeds.tolist() if seeds.ndim else seeds, "a non-empty list of non-negative integers")
        self.seeds = seeds.astype(np.int64)
        self._gens: dict[str, list[np.random.Generator]] = {c: [] for c in CONCERNS}
        for s in self.seeds:
            children = np.random.SeedSequence(int(s)).spawn(len(CONCERNS))
            for concern, child in zip(CONCERNS, children):
                self._gens[concern].append(np.random.Generator(np.random.PCG64(child)))
        self._ahead = check_int("rounds_ahead", rounds_ahead, 0)
        self._blocks: dict[str, _Block] = {}
        self._taken: dict[str, int] = {}  # rounds handed out from blocks, per concern
        self._direct: set[str] = set()  # concerns drawn call by call (never ahead) from now on

    @property
    def runs(self) -> int:
        return len(self.seeds)

    def choose_clients(self, n_clients: int, per_round: int) -> np.ndarray:
        """Uniform sampling of ``per_round`` of ``n_clients`` without replacement, per run: (R, N)."""
        return np.stack([g.choice(n_clients, per_round, replace=False) for g in self.generators("sampling")])

    def generators(self, concern: str) -> list[np.random.Generator]:
        """The per-run generators of one concern (for draws that are not one array per run)."""
        if concern in self._blocks:
            self._put_back(concern)
        self._direct.add(concern)
        return self._gens[concern]

    def uniform(self, concern: str, shape: tuple[int, ...]) -> np.ndarray:
        return self._draw(concern, "random", tuple(shape))

    def normal(self, concern: str, shape: tuple[int, ...]) -> np.ndarray:
        return self._draw(concern, "standard_normal", tuple(shape))

    # ---- draw-ahead

    def _draw(self, concern: str, method: str, shape: tuple[int, ...]) -> np.ndarray:
        block = self._blocks.get(concern)
        if block is not None and (block.method, block.shape) != (method, shape):
            self._put_back(concern)  # another kind of draw: call by call from here, the same bits
            block = None
        if concern in self._direct or self._ahead <= 1:
            return np.stack([getattr(g, method)(shape) for g in self._gens[concern]])
        if block is None or block.pos == len(block.data):
            block = self._refill(concern, method, shape)
        out = block.data[block.pos]
        block.pos += 1
        self._taken[concern] = self._taken.get(concern, 0) + 1
        return out

    def _refill(self, concern: str, method: str, shape: tuple[int, ...]) -> _Block:
        gens = self._gens[concern]
        per_round = max(int(np.prod(shape, dtype=np.int64)), 1)
        left = self._ahead - self._taken.get(concern, 0)
        rounds = int(max(1, min(left, AHEAD_ELEMENTS // per_round)))
        data = np.empty((rounds, len(gens)) + shape)
        states = [g.bit_generator.state for g in gens]
        for r, g in enumerate(gens):
            data[:, r] = getattr(g, method)((rounds,) + shape)
        block = self._blocks[concern] = _Block(method, shape, data, states)
        return block

    def _put_back(self, concern: str) -> None:
        """Leave the concern's generators where the rounds handed out so far would have left them drawn call by
        call, and draw it call by call from now on."""
        block = self._blocks.pop(concern)
        self._direct.add(concern)
        for g, state in zip(self._gens[concern], block.states):
            g.bit_generator.state = state
            if block.pos:
                getattr(g, block.method)((block.pos,) + block.shape)
