"""Random streams: one SeedSequence per run, one child stream per concern.

A run's random numbers depend only on its own seed, never on the other runs of the batch:
run ``r`` of a 64-run sweep is bit-identical to the same seed run alone, and two runs with the
same seed (the coupled runs of a stability measurement) share every stream.

Draw-ahead (``RunStreams(seeds, rounds_ahead=T)``, what ``simulate`` uses): a concern's per-round draws
(``normal`` / ``uniform`` of one shape, or the participants of ``choose_clients``, once per round) are taken for many
rounds in one call per run and handed out round by round. numpy's generators fill an array element after element,
so a block of B rounds holds exactly the numbers B calls would have drawn, and ``choice_rounds`` computes B rounds of
``Generator.choice`` without replacement from one call for the generator's raw output, by numpy's own algorithm:
the streams are the same bits as without draw-ahead. Should a concern
then be asked for another kind or shape of draw, or its generators be used directly, the generators are put back
where the draws handed out so far leave them (their state before the block, advanced by those draws) and the
concern is drawn call by call from there on: the same bits either way. Runs whose generators are in the same state
when a block is drawn (the same seed, e.g. the paired seeds of a sweep over a parameter) draw it once: the others copy
it and take the first one's state, the numbers their own generators would have drawn.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .._validation import ParameterError, check_int

CONCERNS = ("sampling", "batch", "noise", "init", "topology")  # append only: earlier streams keep their bits
AHEAD_ELEMENTS = 1 << 13  # at most this many numbers per run in one block (64 KiB of float64: the block stays in cache)


class _Generators(dict):
    """concern -> the runs' generators, each concern's made when first asked for: child ``i`` of a run's
    SeedSequence (``SeedSequence(seed, spawn_key=(i,))``, what ``SeedSequence(seed).spawn(n)[i]`` gives), so a
    concern's stream does not depend on when it is made. A simulation that draws nothing (exact gradients, every
    client) makes none: 5 R generators cost ~19 ms at R = 64. Iterating, or asking what it holds, makes them all
    (checkpoints list every concern); a concern may be added (a subclass's own)."""

    def __init__(self, seeds: np.ndarray, concerns: Sequence[str]):
        super().__init__()
        self._seeds, self._index = seeds, {c: i for i, c in enumerate(concerns)}

    def __missing__(self, concern: str) -> list[np.random.Generator]:
        i = self._index[concern]  # KeyError: not a concern
        gens = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(s), spawn_key=(i,))))
                for s in self._seeds]
        self[concern] = gens
        return gens

    def _made(self) -> "_Generators":
        """Every concern made, held in the order of the concerns (then any added one), as when made at once."""
        held = list(dict.keys(self))
        order = list(self._index) + [c for c in held if c not in self._index]
        if held != order:
            made = {c: self[c] for c in order}  # __missing__ makes the ones not asked for yet
            dict.clear(self)
            dict.update(self, made)
        return self

    def __iter__(self):
        return dict.__iter__(self._made())

    def __len__(self) -> int:
        return dict.__len__(self._made())

    def __contains__(self, concern) -> bool:
        return concern in self._index or dict.__contains__(self, concern)

    def keys(self):
        return dict.keys(self._made())

    def values(self):
        return dict.values(self._made())

    def items(self):
        return dict.items(self._made())


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
            raise ParameterError("seeds", seeds.tolist() if seeds.ndim else seeds,
                                 "a non-empty list of non-negative integers")
        self.seeds = seeds.astype(np.int64)
        self._gens: dict[str, list[np.random.Generator]] = _Generators(self.seeds, CONCERNS)
        self._ahead = check_int("rounds_ahead", rounds_ahead, 0)
        self._blocks: dict[str, _Block] = {}
        self._taken: dict[str, int] = {}  # rounds handed out from blocks, per concern
        self._direct: set[str] = set()  # concerns drawn call by call (never ahead) from now on

    @property
    def runs(self) -> int:
        return len(self.seeds)

    def choose_clients(self, n_clients: int, per_round: int) -> np.ndarray:
        """Uniform sampling of ``per_round`` of ``n_clients`` without replacement, per run: (R, N): each run's
        ``Generator.choice(n_clients, per_round, replace=False)`` (drawn ahead: ``choice_rounds``)."""
        return self._draw("sampling", "choice", (int(n_clients), int(per_round)))

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
            return np.stack([_call(g, method, shape) for g in self._gens[concern]])
        if block is None or block.pos == len(block.data):
            block = self._refill(concern, method, shape)
        out = block.data[block.pos]
        block.pos += 1
        self._taken[concern] = self._taken.get(concern, 0) + 1
        return out

    def _refill(self, concern: str, method: str, shape: tuple[int, ...]) -> _Block:
        gens = self._gens[concern]
        per_round = 2 * shape[1] if method == "choice" else max(int(np.prod(shape, dtype=np.int64)), 1)
        left = self._ahead - self._taken.get(concern, 0)
        rounds = int(max(1, min(left, AHEAD_ELEMENTS // per_round)))
        states = [g.bit_generator.state for g in gens]
        if method == "choice":
            data = np.empty((rounds, len(gens), shape[1]), dtype=np.int64)
        else:
            data = np.empty((rounds, len(gens)) + shape)
        first: dict = {}  # a generator's state -> the first run in that state: runs in the same state draw the same
        for r, g in enumerate(gens):
            key = state_key(states[r])
            lead = first.setdefault(key, r)
            if lead != r:  # the same seed (e.g. the paired seeds of a sweep): its draws are the leader's, copied
                data[:, r] = data[:, lead]
                g.bit_generator.state = gens[lead].bit_generator.state
            elif method == "choice":
                data[:, r] = choice_rounds(g, shape[0], shape[1], rounds)
            else:
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
            if block.method == "choice":
                for _ in range(block.pos):
                    _call(g, "choice", block.shape)
            elif block.pos:
                getattr(g, block.method)((block.pos,) + block.shape)


def state_key(state: dict):
    """A hashable form of a bit generator's state: two generators of one kind with equal keys draw the same numbers
    (another kind of bit generator: a key equal to no other)."""
    if state.get("bit_generator") != "PCG64":
        return None, object()
    inner = state["state"]
    return "PCG64", inner["state"], inner["inc"], state["has_uint32"], state["uinteger"]


def _call(g: np.random.Generator, method: str, shape: tuple[int, ...]) -> np.ndarray:
    """One round's draw of one run."""
    if method == "choice":
        return g.choice(shape[0], shape[1], replace=False)
    return getattr(g, method)(shape)


CHOICE_EMULATED_MAX = 10_000  # numpy's Generator.choice without replacement uses Floyd's algorithm up to this size


def choice_rounds(g: np.random.Generator, n: int, k: int, rounds: int) -> np.ndarray:
    """``rounds`` successive ``g.choice(n, k, replace=False)`` of a PCG64 generator, (rounds, k), from one call for
    its raw output: the same numbers, and the generator left in the same state.

    numpy's choice without replacement (n <= 10000, no weights) draws, by Floyd's algorithm, one bounded integer in
    [0, j] for j = n - k .. n - 1 (j itself when the draw was taken before), then shuffles them (a bounded integer in
    [0, i] for i = k - 1 .. 1); every bounded integer is Lemire's product of one 32-bit draw and the range, rejected
    and drawn again with probability < n / 2^32. Without a rejection a round takes 2k - 1 32-bit draws (PCG64's
    halves of its 64-bit outputs, low half first); should one be rejected, or n exceed what is emulated, or the bit
    generator not be PCG64, the rounds are drawn call by call instead (the generator is put back first)."""
    bg = g.bit_generator
    state = bg.state
    if n > CHOICE_EMULATED_MAX or k < 1 or k > n or state.get("bit_generator") != "PCG64":
        return np.stack([g.choice(n, k, replace=False) for _ in range(rounds)])
    floyd = np.arange(n - k, n)
    bounds = np.concatenate([floyd[floyd > 0], np.arange(k - 1, 0, -1)]).astype(np.uint64)  # a bound 0 draws nothing
    per = bounds.size
    need = rounds * per
    held = int(state["has_uint32"])  # a 32-bit half kept from the last 64-bit output
    raw = bg.random_raw((need - held + 1) // 2).astype(np.uint64)
    u32 = np.empty(held + 2 * raw.size, dtype=np.uint64)
    if held:
        u32[0] = state["uinteger"]
    u32[held::2] = raw & np.uint64(0xFFFFFFFF)
    u32[held + 1::2] = raw >> np.uint64(32)
    m = u32[:need].reshape(rounds, per) * (bounds + np.uint64(1))
    threshold = (np.uint64(0xFFFFFFFF) - bounds) % (bounds + np.uint64(1))
    if np.any((m & np.uint64(0xFFFFFFFF)) < threshold):  # a rejection: numpy would draw again (p < n / 2^32)
        bg.state = state
        return np.stack([g.choice(n, k, replace=False) for _ in range(rounds)])
    vals = (m >> np.uint64(32)).astype(np.int64)
    zero = int((floyd == 0).sum())  # Floyd's first bound is 0 when k == n: the value 0, no draw
    vals = np.concatenate([np.zeros((rounds, zero), dtype=np.int64), vals], axis=1)
    out = np.empty((rounds, k), dtype=np.int64)
    for c in range(k):  # Floyd's algorithm
        v = vals[:, c]
        out[:, c] = np.where((out[:, :c] == v[:, None]).any(axis=1), n - k + c, v)
    rows = np.arange(rounds)
    for t, i in enumerate(range(k - 1, 0, -1)):  # the shuffle: swap positions i and j = the draw in [0, i]
        j = vals[:, k + t]
        a = out[rows, j]
        out[rows, j] = out[:, i]
        out[:, i] = a
    # PCG64 keeps the high half of its last 64-bit output for the next 32-bit draw: held (1) when one half is left
    new = bg.state
    new["has_uint32"] = int(u32.size - need)
    new["uinteger"] = int(raw[-1] >> np.uint64(32)) if raw.size else state["uinteger"]
    bg.state = new
    return out
