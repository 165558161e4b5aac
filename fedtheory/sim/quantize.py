"""Weight quantizers of FedShift (seed 004, Sec. III-C) and the uplink compressors built on them.

* Uniform, range-based asymmetric (ASYM), eqs. (5)-(6):
  Q(w) = round((w - w_min) / (w_max - w_min) * (2^N - 1)),  DeQ = Q * (w_max - w_min) / (2^N - 1) + w_min.
  A constant block (w_max = w_min) is sent as level 0 and restored exactly as w_min (no division).
* K-means, Algorithm 1: 1-D k-means with 2^N centroids; the index of the nearest centroid is sent
  with the codebook. Lloyd's algorithm from a deterministic quantile start (centroid j starts at the
  sorted value of rank floor((j + 1/2) n / k)), iterated until the assignment no longer changes (a
  Lloyd fixed point: every centroid is the mean of its points, every point is at its nearest
  centroid; ties go to the lower centroid) or max_iter = 300 iterations (scikit-learn's default).
  An empty cluster keeps its centroid; a start equal to its neighbour (repeated values, or more
  centroids than values) is retired and its codebook entry left at +inf. At a fixed point DeQ(Q(w)) has exactly the mean
  of w, layer by layer (each centroid is the mean of its points).
  In 1-D the clusters are runs of the sorted data, so one sort plus prefix sums make an iteration
  cost O(k log n) (binary search of the k - 1 midpoints) instead of O(n k).

Both work per block: a :class:`Blocks` partition of a flat vector stands in for the layers of a
network (the paper quantizes and shifts layer by layer). Rows of a batch (..., d) are independent,
and the number of bits may differ per row (a bit-width grid runs as one batch).

Arrays may be numpy arrays or torch tensors. The uniform quantizer runs natively on either; the
k-means quantizer runs on the host in float64 (a torch tensor is copied to numpy and the result
copied back to its device and dtype).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import ParameterError, check_choice, check_int
from .backend import ops
from .rules import Compressor, RoundState

MAX_BITS = 16
METHODS = ("uniform", "kmeans")


# ------------------------------------------------------------------------------------ blocks (layers)


@dataclass(frozen=True)
class Blocks:
    """A partition of a flat parameter vector of length ``dim`` into contiguous blocks (layers)."""

    sizes: tuple[int, ...]

    @property
    def dim(self) -> int:
        return int(sum(self.sizes))

    @property
    def n_blocks(self) -> int:
        return len(self.sizes)

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(int(s) for s in np.concatenate([[0], np.cumsum(self.sizes)[:-1]]))

    @property
    def slices(self) -> list[slice]:
        return [slice(s, s + n) for s, n in zip(self.starts, self.sizes)]

    @classmethod
    def of(cls, layers, dim: int) -> "Blocks":
        """``layers``: None (one block), an int n (n contiguous blocks of near-equal size), a
        sequence of positive block sizes summing to ``dim``, or a Blocks."""
        dim = check_int("dim", dim, 1)
        if isinstance(layers, Blocks):
            if layers.dim != dim:
                raise ParameterError("layers", list(layers.sizes), f"block sizes summing to the model dimension {dim}")
            return layers
        if layers is None:
            return cls((dim,))
        if np.ndim(layers) == 0:
            n = check_int("layers", layers, 1, dim)
            return cls(tuple(int(len(a)) for a in np.array_split(np.arange(dim), n)))
        sizes = list(layers)
        if not sizes or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                and s >= 1 for s in sizes) \
                or sum(sizes) != dim:
            raise ParameterError("layers", sizes, f"positive integer block sizes summing to the model dimension {dim}")
        return cls(tuple(int(s) for s in sizes))

    def means(self, w):
        """Per-block means: (..., dim) -> (..., n_blocks)."""
        self._check(w)
        xp = ops(w)
        cols = [xp.mean(w[..., s], axis=-1, keepdims=True) for s in self.slices]
        return _concat(cols, w)

    def expand(self, v):
        """Per-block values (..., n_blocks) -> (..., dim), each repeated over its block."""
        if isinstance(v, np.ndarray):
            return np.repeat(v, self.sizes, axis=-1)
        import torch

        return torch.repeat_interleave(v, torch.as_tensor(self.sizes, device=v.device), dim=-1)

    def _check(self, w):
        if w.shape[-1] != self.dim:
            raise ParameterError("w", tuple(w.shape), f"an array whose last axis has the partition's length {self.dim}")


def _concat(parts, like):
    if isinstance(like, np.ndarray):
        return np.concatenate(parts, axis=-1)
    import torch

    return torch.cat(parts, dim=-1)


# ------------------------------------------------------------------------------------ validation


def check_bits(bits, rows: int | None = None) -> np.ndarray:
    """Bits as an int64 array: a scalar, or one value per row; every value an integer in [1, 16]."""
    arr = np.asarray(bits)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ParameterError("bits", bits, f"an integer in [1, {MAX_BITS}] (or one per row)")
    if arr.ndim > 1 or (arr.ndim == 1 and rows is not None and arr.shape[0] != rows):
        raise ParameterError("bits", bits, f"an integer in [1, {MAX_BITS}], or {rows} of them (one per row)")
    bad = ~np.isfinite(arr.astype(float)) | (arr != np.round(arr)) | (arr < 1) | (arr > MAX_BITS)
    if np.any(bad):
        shown = arr if arr.ndim == 0 else arr[np.argmax(bad)]
        raise ParameterError("bits", shown.item(), f"an integer in [1, {MAX_BITS}]")
    return arr.astype(np.int64)


def _rows_bits(bits, lead_shape) -> np.ndarray:
    """bits (scalar, or shaped like the leading axes) -> int64 array of shape lead_shape."""
    arr = np.asarray(bits)
    b = check_bits(arr.reshape(-1) if arr.ndim else arr)
    b = b.reshape(arr.shape) if arr.ndim else b
    try:
        return np.broadcast_to(b, lead_shape).astype(np.int64)
    except ValueError:
        raise ParameterError("bits", bits, f"an integer in [1, {MAX_BITS}] or an array broadcastable to "
                                           f"{lead_shape}") from None


def _check_finite(x) -> None:
    a = x if isinstance(x, np.ndarray) else x.detach()
    ok = bool(np.all(np.isfinite(a))) if isinstance(a, np.ndarray) else bool(a.isfinite().all())
    if not ok:
        raise ParameterError("w", "non-finite values", "finite weights (quantizing NaN or inf is undefined)")


# ------------------------------------------------------------------------------------ uniform (eqs. 5-6)


@dataclass
class UniformCode:
    """What an ASYM-quantized vector sends: integer levels plus each block's (w_min, w_max)."""

    levels: Any  # (..., dim) integers in [0, 2^bits - 1]
    w_min: Any  # (..., n_blocks)
    w_max: Any  # (..., n_blocks)
    bits: np.ndarray  # broadcast to the leading shape
    blocks: Blocks


def uniform_quantize(w, bits, layers=None) -> UniformCode:
    """Eq. (5) per block: round((w - w_min)/(w_max - w_min) * (2^bits - 1)); level 0 on a constant block."""
    _check_finite(w)
    blocks = Blocks.of(layers, w.shape[-1])
    lead = tuple(w.shape[:-1])
    b = _rows_bits(bits, lead)
    F = _funcs(w)
    n_levels = F.like((2.0 ** b - 1.0)[..., None], w)
    lev, mins, maxs = [], [], []
    for s in blocks.slices:
        x = w[..., s]
        lo, hi = F.amin(x), F.amax(x)
        span = hi - lo
        flat = span == 0
        q = F.round((x - lo) / F.where(flat, 1.0 + 0.0 * span, span) * n_levels)
        q = F.clip(F.where(flat, 0.0 * q, q), n_levels)
        lev.append(q)
        mins.append(lo)
        maxs.append(hi)
    return UniformCode(F.to_int(_concat(lev, w)), _concat(mins, w), _concat(maxs, w), b, blocks)


def uniform_dequantize(code: UniformCode):
    """Eq. (6): DeQ = Q * (w_max - w_min)/(2^bits - 1) + w_min (exactly w_min on a constant block)."""
    lo, hi = code.w_min, code.w_max
    F = _funcs(lo)
    n_levels = F.like((2.0 ** code.bits - 1.0)[..., None], lo)
    step = code.blocks.expand((hi - lo) / n_levels)
    return F.to_float(code.levels, lo) * step + code.blocks.expand(lo)


class _NumpyFuncs:
    like = staticmethod(lambda a, ref: np.asarray(a, dtype=np.float64))
    amin = staticmethod(lambda x: np.min(x, axis=-1, keepdims=True))
    amax = staticmethod(lambda x: np.max(x, axis=-1, keepdims=True))
    where = staticmethod(np.where)
    round = staticmethod(np.round)  # half to even, as torch.round
    clip = staticmethod(lambda q, hi: np.minimum(np.maximum(q, 0.0), hi))
    to_int = staticmethod(lambda q: q.astype(np.int64))
    to_float = staticmethod(lambda q, ref: q.astype(np.float64))


class _TorchFuncs:
    def __init__(self):
        import torch

        self.t = torch

    def like(self, a, ref):
        return self.t.as_tensor(np.asarray(a), dtype=ref.dtype, device=ref.device)

    def amin(self, x):
        return x.amin(dim=-1, keepdim=True)

    def amax(self, x):
        return x.amax(dim=-1, keepdim=True)

    def where(self, c, a, b):
        return self.t.where(c, a, b)

    def round(self, x):
        return x.round()

    def clip(self, q, hi):
        return self.t.minimum(self.t.clamp(q, min=0.0), hi)

    def to_int(self, q):
        return q.to(self.t.int64)

    def to_float(self, q, ref):
        return q.to(ref.dtype)


def _funcs(x):
    return _NumpyFuncs if isinstance(x, np.ndarray) else _TorchFuncs()


# ------------------------------------------------------------------------------------ k-means (Algorithm 1)


@dataclass
class KMeansCode:
    """What a k-means-quantized vector sends: centroid indices plus each block's codebook.

    codebook (..., n_blocks, 2^max_bits): sorted centroids; a row with fewer bits pads with +inf
    (entries no index points to)."""

    indices: Any  # (..., dim) integers
    codebook: Any  # (..., n_blocks, k_max)
    bits: np.ndarray
    blocks: Blocks
    iterations: int = 0  # Lloyd iterations of the slowest row


def kmeans_quantize(w, bits, layers=None, *, max_iter: int = 300) -> KMeansCode:
    """Algorithm 1 per block: 1-D k-means with 2^bits centroids (deterministic start; see module doc)."""
    max_iter = check_int("max_iter", max_iter, 1)
    _check_finite(w)
    blocks = Blocks.of(layers, w.shape[-1])
    lead = tuple(w.shape[:-1])
    b = _rows_bits(bits, lead)
    x, back = _to_host(w)
    rows = x.reshape(-1, x.shape[-1])
    k_rows = (2 ** b).reshape(-1)
    k_max = int(k_rows.max()) if k_rows.size else 1
    idx = np.empty(rows.shape, dtype=np.int64)
    book = np.empty((rows.shape[0], blocks.n_blocks, k_max))
    its = 0
    for j, s in enumerate(blocks.slices):
        c, lab, it = lloyd_1d(rows[:, s], k_rows, max_iter=max_iter)
        idx[:, s] = lab
        book[:, j, :] = c
        its = max(its, it)
    idx = idx.reshape(x.shape)
    book = book.reshape(lead + (blocks.n_blocks, k_max))
    return KMeansCode(back(idx, integer=True), back(book), b, blocks, its)


def kmeans_dequantize(code: KMeansCode):
    """Replace each index by its centroid (Algorithm 1, DeQ)."""
    blocks = code.blocks
    cb, idx = code.codebook, code.indices
    if isinstance(cb, np.ndarray):
        parts = [np.take_along_axis(cb[..., j, :], idx[..., s], axis=-1) for j, s in enumerate(blocks.slices)]
        return np.concatenate(parts, axis=-1)
    import torch

    parts = [torch.gather(cb[..., j, :], -1, idx[..., s]) for j, s in enumerate(blocks.slices)]
    return torch.cat(parts, dim=-1)


def lloyd_1d(x: np.ndarray, k, *, max_iter: int = 300) -> tuple[np.ndarray, np.ndarray, int]:
    """Batched 1-D Lloyd: x (B, n) float64, k an int or (B,) ints (clusters per row).

    Returns (centroids (B, k_max) sorted, +inf past a row's k; labels (B, n); iterations).
    Stops when no row's assignment changed (every row then sits at a Lloyd fixed point).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ParameterError("x", x.shape, "a non-empty 2-D array (rows, values)")
    B, n = x.shape
    k = np.broadcast_to(np.asarray(k, dtype=np.int64), (B,))
    if np.any(k < 1):
        raise ParameterError("k", int(k.min()), "a positive number of clusters")
    k_max = int(k.max()) if B else 1
    xs = np.sort(x, axis=1)
    base = xs[:, :1]
    cs = np.zeros((B, n + 1))
    np.cumsum(xs - base, axis=1, out=cs[:, 1:])  # prefix sums, shifted by the row min (exact on constant rows)
    j = np.arange(k_max)
    active = j[None, :] < k[:, None]
    start = np.minimum(((2 * j[None, :] + 1) * n) // (2 * k[:, None]), n - 1)
    c = np.where(active, np.take_along_axis(xs, np.where(active, start, 0), axis=1), np.inf)
    if k_max > 1:  # a start equal to its left neighbour could never win a point (ties go left): retire it
        c[:, 1:] = np.where(c[:, 1:] == c[:, :-1], np.inf, c[:, 1:])
        c = np.sort(c, axis=1)
    edges = np.empty((B, k_max + 1), dtype=np.int64)
    edges[:, 0], edges[:, -1] = 0, n
    moving = np.arange(B)  # the rows whose centroids changed in the last update (every row at first)
    it = 0
    for it in range(1, max_iter + 1):
        # a row whose centroids did not change keeps its edges and centroids from then on (the update is a
        # function of the row's edges and centroids alone): only the moving rows are searched and updated
        cm = c[moving]
        em = edges[moving]
        if k_max > 1:
            em[:, 1:-1] = _search_rows(xs[moving], 0.5 * cm[:, :-1] + 0.5 * cm[:, 1:], side="right")  # ties go left
        if it > 1 and np.array_equal(em, edges[moving]):
            break
        edges[moving] = em
        cnt = em[:, 1:] - em[:, :-1]
        rows = moving[:, None]
        sums = cs[rows, em[:, 1:]] - cs[rows, em[:, :-1]]
        new = np.where(cnt > 0, base[moving] + sums / np.maximum(cnt, 1), cm)
        if np.any(new[:, 1:] < new[:, :-1]):  # an empty cluster kept its place between moved neighbours
            new = np.sort(new, axis=1)
        changed = np.any(new != cm, axis=1)
        c[moving] = new
        moving = moving[changed]
    labels = _search_rows(0.5 * c[:, :-1] + 0.5 * c[:, 1:], x, side="left") if k_max > 1 else np.zeros((B, n), np.int64)
    return c, labels, it


LOOP_ROWS = 4096  # _search_rows: up to this many rows one searchsorted per row, beyond it one call for all rows


def _search_rows(sorted_rows: np.ndarray, q: np.ndarray, side: str) -> np.ndarray:
    """np.searchsorted(sorted_rows[i], q[i], side) for every row i: (B, m) and (B, n) -> (B, n) int64."""
    B = sorted_rows.shape[0]
    if B > LOOP_ROWS:
        return _RowSearch(sorted_rows)(q, side=side)
    out = np.empty(q.shape, dtype=np.int64)
    for i in range(B):
        out[i] = sorted_rows[i].searchsorted(q[i], side=side)
    return out


class _RowSearch:
    """searchsorted in every row of a row-sorted (B, m) array at once: one call for all rows (the
    rows are keyed lexicographically by (row, value) as complex numbers; exact, no offsets)."""

    def __init__(self, sorted_rows: np.ndarray):
        self.B, self.m = sorted_rows.shape
        self.keys = sorted_rows[0] if self.B == 1 else _row_keys(sorted_rows)

    def __call__(self, q: np.ndarray, side: str) -> np.ndarray:
        if self.B == 1:
            return np.searchsorted(self.keys, q[0], side=side)[None]
        pos = np.searchsorted(self.keys, _row_keys(q), side=side).reshape(self.B, -1)
        return np.clip(pos - (np.arange(self.B) * self.m)[:, None], 0, self.m)


def _row_keys(values: np.ndarray) -> np.ndarray:
    """Flattened complex keys row + i value (set part by part: 1j * inf would give a NaN real part)."""
    keys = np.empty(values.shape, dtype=np.complex128)
    keys.real = np.arange(values.shape[0])[:, None]
    keys.imag = values
    return keys.ravel()


def _to_host(w):
    """(float64 numpy copy, function mapping numpy results back to w's library, device, dtype)."""
    if isinstance(w, np.ndarray):
        return np.asarray(w, dtype=np.float64), lambda a, integer=False: a
    import torch

    dev, dt = w.device, w.dtype

    def back(a, integer=False):
        return torch.as_tensor(a, device=dev, dtype=torch.int64 if integer else dt)

    return w.detach().to("cpu", torch.float64).numpy(), back


# ------------------------------------------------------------------------------------ one call


def quantize_dequantize(w, method: str, bits, layers=None, **kw):
    """DeQ(Q(w)) with ``method`` 'uniform' (eqs. 5-6) or 'kmeans' (Algorithm 1)."""
    check_choice("method", method, METHODS)
    if method == "uniform":
        return uniform_dequantize(uniform_quantize(w, bits, layers))
    return kmeans_dequantize(kmeans_quantize(w, bits, layers, **kw))


# ------------------------------------------------------------------------------------ compressors


def client_mask(inferior, n_clients: int, name: str = "inferior") -> np.ndarray:
    """A boolean mask over the clients from a mask, a list of client ids, or None (every client)."""
    if inferior is None:
        return np.ones(n_clients, dtype=bool)
    arr = np.asarray(inferior)
    if arr.dtype == bool:
        if arr.shape != (n_clients,):
            raise ParameterError(name, arr.shape, f"a boolean mask of length {n_clients} "
                                                  "(one entry per client) or client ids")
        return arr.copy()
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or np.any(arr < 0) or np.any(arr >= n_clients) \
            or len(np.unique(arr)) != arr.size:
        raise ParameterError(name, arr.tolist() if arr.ndim else arr.item(),
                             f"distinct client ids in [0, {n_clients - 1}] or a boolean mask of length {n_clients}")
    m = np.zeros(n_clients, dtype=bool)
    m[arr] = True
    return m


class Quantize(Compressor):
    """Mixed-precision uplink (seed 004, eq. (4); Algorithm 2 lines 10-16): each selected client in
    ``inferior`` sends DeQ(Q(w_{i,K})) at ``bits`` (a scalar, or one value per run); the others send
    w_{i,K} in full precision.

    method: 'uniform' (eqs. 5-6) or 'kmeans' (Algorithm 1); layers: the block partition (None: the
    whole vector is one layer). target: 'weights' (the paper: the model itself is quantized) or
    'updates' (Q is applied to w_{i,K} - w_{i,0} and the server receives w_{i,0} + DeQ(Q(.)), as in
    update-compression methods such as Fed-EF's original form).
    """

    name = "quantize"

    def __init__(self, method: str = "kmeans", bits=8, inferior=None, layers=None, *, target: str = "weights",
                 max_iter: int = 300):
        self.method = check_choice("method", method, METHODS)
        self.bits = bits
        check_bits(np.ravel(bits)[0] if np.ndim(bits) else bits)
        self.inferior = inferior
        self.layers = layers
        self.target = check_choice("target", target, ("weights", "updates"))
        self.max_iter = check_int("max_iter", max_iter, 1)

    def params(self):
        return {"bits": self.bits, "method": self.method, "target": self.target}

    def setup(self, state, runs, n_clients, dim):
        b = np.asarray(self.bits)
        self._bits = check_bits(b, runs) if b.ndim else check_bits(b)
        self._bits_runs = np.broadcast_to(self._bits, (runs,)).copy()
        self.set_param("bits", self._bits_runs.astype(np.float64))
        self.inferior_mask = client_mask(self.inferior, n_clients)
        self.blocks = Blocks.of(self.layers, dim)

    def inferior_selected(self, rs: RoundState) -> np.ndarray:
        """(R, N) bool: which of this round's clients quantize."""
        return self.inferior_mask[np.asarray(rs.sel)]

    def apply(self, rs: RoundState, values):
        """What the server receives when the selected clients hold ``values`` (R, N, d)."""
        sent = ops(values).copy(values)
        mask = self.inferior_selected(rs)
        if not mask.any():
            return sent
        bits_rows = np.broadcast_to(self._bits_runs[:, None], mask.shape)[mask]
        idx = mask if isinstance(values, np.ndarray) else _torch_mask(mask, values)
        x = values[idx]
        base = rs.w0[idx] if self.target == "updates" else None
        if base is not None:
            x = x - base
        deq = quantize_dequantize(x, self.method, bits_rows, self.blocks, **({"max_iter": self.max_iter}
                                                                            if self.method == "kmeans" else {}))
        sent[idx] = deq + base if base is not None else deq
        return sent

    def compress(self, rs: RoundState):
        out = self.apply(rs, rs.wK)
        rs.extra["quantize_diff"] = out - rs.wK
        return out

    def measures(self):
        return {"quant_error2": "(1/|I^t|) sum_{i in I^t} ||sent_i - w_{i,K}^t||^2 over the selected inferior clients "
                                "(0 when none is selected)"}

    def measure(self, rs):
        diff = rs.extra["quantize_diff"]
        xp = ops(diff)
        total = xp.sum(xp.sum(diff * diff, axis=-1), axis=1)
        count = np.maximum(self.inferior_selected(rs).sum(axis=1), 1).astype(np.float64)
        return {"quant_error2": total / xp.asarray(count, like=total)}


class ErrorFeedback(Compressor):
    """Error feedback (Fed-EF, Li & Li 2023; seed 004 Sec. V-A5 adapts it to weights): client i sends
    C(x_i) with x_i = w_{i,K} + e_i and keeps e_i <- x_i - C(x_i) (e_i = 0 at the start; clients that
    send in full precision keep e_i = 0). ``inner`` is the Quantize compressor C."""

    name = "error_feedback"

    def __init__(self, inner: Quantize):
        if not isinstance(inner, Quantize):
            raise ParameterError("inner", type(inner).__name__, "a Quantize compressor")
        self.inner = inner

    def params(self):
        return self.inner.params()

    def setup(self, state, runs, n_clients, dim):
        self.inner.setup(state, runs, n_clients, dim)
        state.clients["ef_error"] = ops(state.w).zeros((runs, n_clients, dim), like=state.w)

    def compress(self, rs: RoundState):
        e = rs.gather("ef_error")
        x = rs.wK + e
        sent = self.inner.apply(rs, x)
        rs.scatter("ef_error", x - sent)
        rs.extra["quantize_diff"] = sent - rs.wK
        return sent

    def measures(self):
        return self.inner.measures()

    def measure(self, rs):
        return self.inner.measure(rs)


def _torch_mask(mask: np.ndarray, like):
    import torch

    return torch.as_tensor(mask, device=like.device)
