"""FedShift's quantizers: eqs. (5)-(6) against a per-element transcription, k-means against a naive O(nk)
Lloyd loop, fixed-point properties, layers, bit validation, constant tensors, torch inputs, compressors."""
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from fedtheory._validation import ParameterError
from fedtheory.sim.quantize import (
    Blocks,
    ErrorFeedback,
    Quantize,
    check_bits,
    kmeans_dequantize,
    kmeans_quantize,
    lloyd_1d,
    quantize_dequantize,
    uniform_dequantize,
    uniform_quantize,
)


def _naive_uniform(v, bits):
    """Eqs. (5)-(6) for one vector, one element at a time."""
    lo, hi = min(v), max(v)
    n = 2**bits - 1
    out = []
    for w in v:
        q = 0 if hi == lo else round((w - lo) / (hi - lo) * n)  # Python's round: half to even, as numpy
        out.append(q * ((hi - lo) / n) + lo)
    return np.array(out)


def _naive_kmeans(v, k, max_iter=300):
    """Lloyd with the O(n k) assignment, from the same quantile start; ties to the lower centroid."""
    xs = np.sort(v)
    n = len(v)
    c = np.array([xs[min((2 * j + 1) * n // (2 * k), n - 1)] for j in range(k)])
    lab = None
    for _ in range(max_iter):
        new = np.argmin(np.abs(v[:, None] - c[None, :]), axis=1)
        if lab is not None and np.array_equal(new, lab):
            break
        lab = new
        c = np.array([v[lab == j].mean() if np.any(lab == j) else c[j] for j in range(k)])
        order = np.argsort(c, kind="stable")
        c, lab = c[order], np.argsort(order)[lab]
    return c[lab]


finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


# ------------------------------------------------------------------------------------ partition, bits


def test_blocks_from_layers_spec():
    assert Blocks.of(None, 7).sizes == (7,)
    assert Blocks.of(3, 10).sizes == (4, 3, 3)
    assert Blocks.of([2, 5], 7).slices == [slice(0, 2), slice(2, 7)]
    w = np.arange(14.0).reshape(2, 7)
    b = Blocks.of([2, 5], 7)
    np.testing.assert_allclose(b.means(w), [[0.5, 4.0], [7.5, 11.0]])
    np.testing.assert_allclose(b.expand(b.means(w)), [[0.5] * 2 + [4.0] * 5, [7.5] * 2 + [11.0] * 5])
    for bad in ([2, 4], [0, 7], 8, 0, [2.5, 4.5], [True, 6]):
        with pytest.raises(ParameterError, match="layers"):
            Blocks.of(bad, 7)


@pytest.mark.parametrize("bad", [0, 17, 2.5, -1, np.nan, True, "4"])
def test_bits_outside_1_to_16_are_refused(bad):
    with pytest.raises(ParameterError, match="bits"):
        check_bits(bad)
    with pytest.raises(ParameterError, match="bits"):
        quantize_dequantize(np.ones((1, 4)), "uniform", bad)
    with pytest.raises(ParameterError, match="bits"):
        Quantize("kmeans", bad)


def test_bits_1_and_16_accepted_and_per_row():
    x = np.random.default_rng(0).standard_normal((3, 50))
    for method in ("uniform", "kmeans"):
        q1 = quantize_dequantize(x, method, 1)
        assert all(len(np.unique(r)) <= 2 for r in q1)
        q16 = quantize_dequantize(x, method, 16)
        assert np.abs(q16 - x).max() < (1e-3 if method == "uniform" else 1e-12)  # k-means: 50 values, 65536 centroids
        mixed = quantize_dequantize(x, method, np.array([1, 3, 5]))
        for r, b in enumerate((1, 3, 5)):
            np.testing.assert_array_equal(mixed[r], quantize_dequantize(x[r:r + 1], method, b)[0])
    with pytest.raises(ParameterError, match="bits"):
        quantize_dequantize(x, "uniform", np.array([1, 2]))
    with pytest.raises(ParameterError, match="method"):
        quantize_dequantize(x, "lloyd", 4)


def test_non_finite_weights_are_refused():
    for method in ("uniform", "kmeans"):
        with pytest.raises(ParameterError, match="finite"):
            quantize_dequantize(np.array([[0.0, np.nan, 1.0]]), method, 4)


# ------------------------------------------------------------------------------------ uniform


@given(x=hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 30)), elements=finite),
       bits=st.integers(1, 16))
def test_uniform_equals_eqs_5_6_elementwise(x, bits):
    got = quantize_dequantize(x, "uniform", bits)
    for r in range(x.shape[0]):
        np.testing.assert_allclose(got[r], _naive_uniform(list(x[r]), bits), rtol=0, atol=1e-12 * (1 + np.abs(x).max()))


@given(x=hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(2, 40)), elements=finite),
       bits=st.integers(1, 12), n_blocks=st.integers(1, 2))
def test_uniform_levels_and_error_per_layer(x, bits, n_blocks):
    code = uniform_quantize(x, bits, n_blocks)
    assert code.levels.min() >= 0 and code.levels.max() <= 2**bits - 1
    deq = uniform_dequantize(code)
    for j, s in enumerate(code.blocks.slices):
        span = code.w_max[..., j:j + 1] - code.w_min[..., j:j + 1]
        err = np.abs(deq[..., s] - x[..., s])
        assert np.all(err <= span / (2 * (2**bits - 1)) + 1e-12 * (1 + np.abs(x).max()))
        np.testing.assert_array_equal(code.w_min[..., j], x[..., s].min(axis=-1))
        np.testing.assert_array_equal(code.w_max[..., j], x[..., s].max(axis=-1))


@pytest.mark.parametrize("method", ["uniform", "kmeans"])
def test_constant_tensor_is_exact_and_silent(method):
    x = np.full((2, 9), 0.1)
    x[1, 4:] = -3.7  # second layer constant too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for bits in (1, 4, 16):
            got = quantize_dequantize(x, method, bits, [4, 5])
            np.testing.assert_array_equal(got, x)
    assert np.all(uniform_quantize(x, 4).levels[0] == 0)


# ------------------------------------------------------------------------------------ k-means


@given(seed=st.integers(0, 10_000), n=st.integers(1, 120), bits=st.integers(1, 6), scale=st.floats(0.01, 10))
def test_kmeans_equals_naive_lloyd(seed, n, bits, scale):
    v = scale * np.random.default_rng(seed).standard_normal(n)
    got = quantize_dequantize(v[None], "kmeans", bits)[0]
    np.testing.assert_allclose(got, _naive_kmeans(v, 2**bits), rtol=0, atol=1e-12 * scale)


@given(seed=st.integers(0, 10_000), bits=st.integers(1, 5), decimals=st.integers(0, 2))
def test_kmeans_fixed_point_with_ties(seed, bits, decimals):
    """Data with many repeated values: every point is at a nearest centroid, every used centroid is the mean of
    its points, so each layer's mean is preserved exactly (up to rounding)."""
    x = np.round(np.random.default_rng(seed).standard_normal((2, 80)) * 3, decimals)
    c, lab, it = lloyd_1d(x, 2**bits)
    assert it < 300
    for r in range(2):
        cr = c[r]
        dist = np.abs(x[r][:, None] - cr[None, :])
        assert np.all(dist[np.arange(80), lab[r]] <= dist.min(axis=1) + 1e-12)
        for j in np.unique(lab[r]):
            assert cr[j] == pytest.approx(x[r][lab[r] == j].mean(), abs=1e-12)
        assert cr[lab[r]].mean() == pytest.approx(x[r].mean(), abs=1e-12)
        assert np.all(cr[1:] >= cr[:-1])  # sorted; retired or unused entries are +inf at the end


def _lloyd_every_row(x, k, max_iter=300):
    """The straightforward batched Lloyd (every row searched and updated every iteration, row by row), the form
    lloyd_1d had before it updated only the rows still moving (issue 26)."""
    B, n = x.shape
    k = np.broadcast_to(np.asarray(k, dtype=np.int64), (B,))
    k_max = int(k.max())
    xs = np.sort(x, axis=1)
    base = xs[:, :1]
    cs = np.zeros((B, n + 1))
    np.cumsum(xs - base, axis=1, out=cs[:, 1:])
    j = np.arange(k_max)
    active = j[None, :] < k[:, None]
    start = np.minimum(((2 * j[None, :] + 1) * n) // (2 * k[:, None]), n - 1)
    c = np.where(active, np.take_along_axis(xs, np.where(active, start, 0), axis=1), np.inf)
    if k_max > 1:
        c[:, 1:] = np.where(c[:, 1:] == c[:, :-1], np.inf, c[:, 1:])
        c = np.sort(c, axis=1)
    rows = np.arange(B)[:, None]
    edges = np.empty((B, k_max + 1), dtype=np.int64)
    edges[:, 0], edges[:, -1] = 0, n
    prev = None
    it = 0
    for it in range(1, max_iter + 1):
        mid = 0.5 * c[:, :-1] + 0.5 * c[:, 1:]
        for r in range(B):
            edges[r, 1:-1] = np.searchsorted(xs[r], mid[r], side="right")
        if prev is not None and np.array_equal(edges, prev):
            break
        cnt = edges[:, 1:] - edges[:, :-1]
        sums = cs[rows, edges[:, 1:]] - cs[rows, edges[:, :-1]]
        c = np.where(cnt > 0, base + sums / np.maximum(cnt, 1), c)
        if np.any(c[:, 1:] < c[:, :-1]):
            c = np.sort(c, axis=1)
        prev = edges.copy()
    mid = 0.5 * c[:, :-1] + 0.5 * c[:, 1:]
    labels = np.stack([np.searchsorted(mid[r], x[r], side="left") for r in range(B)])
    return c, labels, it


@given(seed=st.integers(0, 10_000), rows=st.integers(1, 12), n=st.integers(1, 70), decimals=st.sampled_from([0, 1, 8]))
def test_lloyd_updating_the_moving_rows_equals_updating_every_row(seed, rows, n, decimals):
    """issue 26 (speed2): lloyd_1d searches and updates only the rows whose centroids moved in the last update, one
    searchsorted per row (or one call for all rows beyond LOOP_ROWS): the same centroids, labels and iteration
    count, bit for bit, as every row updated every iteration (ties, constant rows, a different k per row)."""
    from fedtheory.sim import quantize

    g = np.random.default_rng(seed)
    x = np.round(g.standard_normal((rows, n)) * g.uniform(0.1, 5, (rows, 1)), decimals)
    x[0] = x[0, 0]  # a constant row
    k = 2 ** g.integers(0, 7, rows)
    for kk in (k, int(k.max())):
        rc, rlab, rit = _lloyd_every_row(x, kk)
        for loop_rows in (quantize.LOOP_ROWS, 0):
            saved, quantize.LOOP_ROWS = quantize.LOOP_ROWS, loop_rows
            try:
                c, lab, it = lloyd_1d(x, kk)
            finally:
                quantize.LOOP_ROWS = saved
            assert np.array_equal(c, rc) and np.array_equal(lab, rlab) and it == rit


def test_kmeans_layers_codebook_and_lossless_when_few_values():
    x = np.random.default_rng(1).standard_normal((3, 40))
    code = kmeans_quantize(x, 3, [10, 30])
    assert code.codebook.shape == (3, 2, 8) and code.indices.max() < 8
    deq = kmeans_dequantize(code)
    for s in code.blocks.slices:
        assert all(len(np.unique(r)) <= 8 for r in deq[:, s])
        np.testing.assert_allclose(deq[:, s].mean(axis=1), x[:, s].mean(axis=1), atol=1e-13)  # per-layer mean kept
    np.testing.assert_allclose(quantize_dequantize(x, "kmeans", 6), x, atol=1e-15)  # 40 values, 64 centroids
    np.testing.assert_array_equal(quantize_dequantize(x, "kmeans", 3, [10, 30]), deq)  # deterministic


def test_kmeans_is_never_worse_than_its_start():
    """Lloyd does not increase the squared error of the quantile start it begins from."""
    x = np.random.default_rng(2).standard_normal((1, 500)) ** 3
    xs = np.sort(x[0])
    for k in (2, 4, 16):
        start = xs[np.minimum((2 * np.arange(k) + 1) * 500 // (2 * k), 499)]
        sse0 = np.sum(np.min((x[0][:, None] - start[None]) ** 2, axis=1))
        c, lab, _ = lloyd_1d(x, k)
        assert np.sum((c[0][lab[0]] - x[0]) ** 2) <= sse0 + 1e-12


def test_torch_tensors_give_the_numpy_result():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((2, 3, 20))
    for method in ("uniform", "kmeans"):
        ref = quantize_dequantize(x, method, 4, [5, 15])
        t = torch.as_tensor(x)
        got = quantize_dequantize(t, method, 4, [5, 15])
        assert isinstance(got, torch.Tensor) and got.dtype == t.dtype and got.shape == t.shape
        np.testing.assert_allclose(got.numpy(), ref, atol=1e-12)
        t32 = torch.as_tensor(x, dtype=torch.float32)
        assert quantize_dequantize(t32, method, 4).dtype == torch.float32


# ------------------------------------------------------------------------------------ compressors


class _RS:
    """A minimal round state for compressor unit tests."""

    def __init__(self, wK, w0, sel, state):
        self.wK, self.w0, self.sel, self.state, self.extra = wK, w0, sel, state, {}

    def gather(self, key):
        return np.take_along_axis(self.state.clients[key], self.sel[..., None], axis=1)

    def scatter(self, key, values):
        np.put_along_axis(self.state.clients[key], self.sel[..., None], values, axis=1)


def test_quantize_touches_only_inferior_clients_and_error_feedback_keeps_the_residual():
    from fedtheory.sim.rules import State

    rng = np.random.default_rng(4)
    R, C, N, d = 2, 5, 3, 12
    inferior = np.array([False, True, False, True, True])
    sel = np.array([[0, 1, 3], [4, 2, 0]])
    state = State(w=np.zeros((R, d)))
    q = Quantize("uniform", 2, inferior)
    q.setup(state, R, C, d)
    wK = rng.standard_normal((R, N, d))
    rs = _RS(wK, np.zeros((R, N, d)), sel, state)
    sent = q.compress(rs)
    mask = inferior[sel]
    np.testing.assert_array_equal(sent[~mask], wK[~mask])
    assert np.all(np.abs(sent[mask] - wK[mask]).max(axis=-1) > 0)
    err = q.measure(rs)["quant_error2"]
    np.testing.assert_allclose(err, [np.sum((sent[r] - wK[r])[mask[r]] ** 2) / mask[r].sum() for r in range(R)])
    ef = ErrorFeedback(Quantize("uniform", 2, inferior))
    ef.setup(state, R, C, d)
    sent1 = ef.compress(_RS(wK, np.zeros((R, N, d)), sel, state))
    e = np.take_along_axis(state.clients["ef_error"], sel[..., None], axis=1)
    np.testing.assert_allclose(e, wK - sent1, atol=1e-15)  # e = x - C(x), zero for full-precision clients
    assert np.all(e[~mask] == 0)
    sent2 = ef.compress(_RS(wK, np.zeros((R, N, d)), sel, state))
    np.testing.assert_allclose(sent2[mask], quantize_dequantize((wK + e)[mask], "uniform", 2), atol=1e-15)
    with pytest.raises(ParameterError, match="inferior"):
        Quantize("uniform", 2, [0, 9]).setup(state, R, C, d)
    with pytest.raises(ParameterError, match="inner"):
        ErrorFeedback("uniform")
