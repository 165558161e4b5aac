"""Topologies and mixing matrices: closed-form spectra, Metropolis properties, Definition 1, Lemma 3, random draws."""
import numpy as np
import pytest
import scipy.sparse as sps
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.papers.oledfl import records as T
from fedtheory.sim.gossip import Gossip
from fedtheory.sim.rng import RunStreams
from fedtheory.sim.topology import (
    Exponential,
    FullyConnected,
    Grid2D,
    RandomKNeighbour,
    Ring,
    canonical_edges,
    metropolis_matrix,
    mixing_lambda,
    mixing_lambda_norm,
    mixing_matrix_properties,
    paper_topologies,
    spectrum,
)

# ------------------------------------------------------------------------------------ closed-form spectra


def _sorted(x):
    return np.sort(np.asarray(x))[::-1]


@pytest.mark.parametrize("m", [3, 4, 7, 16, 25, 100])
def test_ring_spectrum_closed_form(m):
    j = np.arange(m)
    expected = (1 + 2 * np.cos(2 * np.pi * j / m)) / 3
    np.testing.assert_allclose(Ring(m).eigenvalues(), _sorted(expected), atol=1e-12)
    assert Ring(m).lam == pytest.approx(max(abs(x) for x in _sorted(expected)[1:]), abs=1e-12)


@pytest.mark.parametrize("rows,cols", [(3, 3), (4, 4), (5, 5), (3, 7), (10, 10)])
def test_torus_spectrum_closed_form(rows, cols):
    a, b = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    expected = (1 + 2 * np.cos(2 * np.pi * a / rows) + 2 * np.cos(2 * np.pi * b / cols)) / 5
    np.testing.assert_allclose(Grid2D(rows * cols, rows=rows).eigenvalues(), _sorted(expected.ravel()), atol=1e-12)


@pytest.mark.parametrize("m", [5, 16, 25, 36, 100])
def test_exponential_spectrum_closed_form(m):
    hops = [2**j for j in range(int(np.floor(np.log2(m - 1))) + 1)]
    offsets = sorted({h % m for h in hops} | {(-h) % m for h in hops} - {0})
    j = np.arange(m)
    expected = (1 + sum(np.cos(2 * np.pi * j * s / m) for s in offsets)) / (1 + len(offsets))
    np.testing.assert_allclose(Exponential(m).eigenvalues(), _sorted(expected), atol=1e-12)


@pytest.mark.parametrize("m", [2, 5, 30])
def test_fully_connected_is_averaging(m):
    np.testing.assert_allclose(FullyConnected(m).dense(), np.full((m, m), 1.0 / m), atol=1e-15)
    assert FullyConnected(m).lam < 1e-12


def test_open_grid_degrees_and_weights():
    g = Grid2D(12, rows=3, periodic=False)
    A = g.adjacency()
    assert sorted(np.unique(A.sum(axis=1)).tolist()) == [2, 3, 4]
    W = g.dense()
    i, j = 0, 1  # corner (degree 2) next to an edge node (degree 3)
    assert W[i, j] == pytest.approx(1 / 4)


@pytest.mark.parametrize("laziness", [0.0, 0.25, 0.5, 0.9])
def test_laziness_shifts_spectrum(laziness):
    e0 = Grid2D(16).eigenvalues()
    np.testing.assert_allclose(Grid2D(16, laziness=laziness).eigenvalues(), (1 - laziness) * e0 + laziness, atol=1e-12)


# ------------------------------------------------------------------------------------ Metropolis on random graphs


@st.composite
def graphs(draw):
    m = draw(st.integers(2, 14))
    pairs = draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)), max_size=40))
    i = np.array([p[0] for p in pairs], dtype=np.int64)
    j = np.array([p[1] for p in pairs], dtype=np.int64)
    return m, i, j


@given(graphs(), st.floats(0.0, 0.9))
def test_metropolis_properties(g, laziness):
    m, i, j = g
    a, b = canonical_edges(m, i, j)
    W = metropolis_matrix(m, a, b, laziness).toarray()
    assert np.all(a < b)
    np.testing.assert_allclose(W, W.T, atol=0)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    assert W.min() >= 0
    deg = np.bincount(a, minlength=m) + np.bincount(b, minlength=m)
    assert np.all(np.diag(W) >= (1 - laziness) / (1 + deg) + laziness - 1e-12)
    off = W - np.diag(np.diag(W))
    A = np.zeros((m, m), bool)
    A[a, b] = A[b, a] = True
    assert np.all((off > 0) == A)
    eig = np.linalg.eigvalsh(W)
    assert eig.max() <= 1 + 1e-12 and eig.min() > -1 + 1e-9


@given(graphs())
def test_lambda_two_routes_agree(g):
    """sim.topology.mixing_lambda (eigenvalues) = sim.topology.mixing_lambda_norm (||W - 11^T/m||_2)."""
    m, i, j = g
    W = metropolis_matrix(m, *canonical_edges(m, i, j))
    assert mixing_lambda(W) == pytest.approx(mixing_lambda_norm(W), abs=1e-10)


@st.composite
def connected_graphs(draw):
    """A random spanning path (so the graph is connected: lambda < 1, as Definition 1 needs) plus random edges."""
    m, i, j = draw(graphs())
    order = np.array(draw(st.permutations(range(m))), dtype=np.int64)
    return m, np.concatenate([i, order[:-1]]), np.concatenate([j, order[1:]])


@given(connected_graphs(), st.integers(1, 12))
def test_lemma3_is_tight_for_symmetric_w(g, k):
    m, i, j = g
    W = metropolis_matrix(m, *canonical_edges(m, i, j)).toarray()
    lam = mixing_lambda(W)
    assert lam < 1 - 1e-9
    gap = np.linalg.norm(np.linalg.matrix_power(W, k) - np.full((m, m), 1.0 / m), 2)
    assert gap == pytest.approx(float(T.LEMMA3.evaluate({"lam": lam, "k": k})), rel=1e-8, abs=1e-12)


def test_regular_graphs_have_equal_weights():
    for t in (Ring(9), Grid2D(16), Exponential(16), FullyConnected(6)):
        W = t.dense()
        deg = t.adjacency().sum(axis=1)
        assert np.all(deg == deg[0])
        np.testing.assert_allclose(W[W > 0], 1.0 / (deg[0] + 1), atol=1e-15)


# ------------------------------------------------------------------------------------ Definition 1


@pytest.mark.parametrize("topology", paper_topologies(30), ids=lambda t: t.label())
def test_definition1_holds_on_paper_topologies(topology):
    rng = np.random.default_rng(0)
    W, A = topology.draw(rng)
    res = mixing_matrix_properties(W, A)
    assert all(r.ok for r in res.values()), {k: r.detail for k, r in res.items()}


def test_definition1_detects_each_violation():
    ring = Ring(6)
    W, A = ring.dense(), ring.adjacency()
    asym = W.copy()
    asym[0, 1] += 0.1
    asym[0, 0] -= 0.1
    assert not mixing_matrix_properties(asym, A)["symmetry"].ok
    rows = W * 1.01
    assert not mixing_matrix_properties(rows, A)["null_space"].ok
    two = sps.block_diag([Ring(3).matrix(), Ring(3).matrix()]).toarray()  # disconnected
    assert not mixing_matrix_properties(two)["null_space"].ok
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])  # eigenvalue -1, zero diagonal
    r = mixing_matrix_properties(swap)
    assert not r["spectral"].ok and not r["graph"].ok
    offgraph = W.copy()
    offgraph[0, 3] = offgraph[3, 0] = 0.01
    offgraph[0, 0] -= 0.01
    offgraph[3, 3] -= 0.01
    assert not mixing_matrix_properties(offgraph, A)["graph"].ok
    assert mixing_matrix_properties(offgraph)["graph"].ok  # without a graph, the support of W is the graph


def test_definition1_bad_input():
    with pytest.raises(ParameterError, match="W"):
        mixing_matrix_properties(np.ones((2, 3)))
    with pytest.raises(ParameterError, match="adjacency"):
        mixing_matrix_properties(np.eye(3), np.ones((2, 2), bool))


# ------------------------------------------------------------------------------------ random k-neighbour


def test_random_picks_are_distinct_others():
    t = RandomKNeighbour(20, k=4)
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = t.picks(rng)
        assert p.shape == (20, 4)
        assert np.all(p != np.arange(20)[:, None])
        assert all(len(set(row)) == 4 for row in p.tolist())
    assert t.adjacency(rng).sum(axis=1).min() >= 4


def test_random_picks_uniform():
    m, k, n = 10, 3, 4000
    t = RandomKNeighbour(m, k)
    rng = np.random.default_rng(2)
    counts = np.zeros((m, m))
    for _ in range(n):
        p = t.picks(rng)
        np.add.at(counts, (np.repeat(np.arange(m), k), p.ravel()), 1)
    expected = n * k / (m - 1)
    off = counts[~np.eye(m, dtype=bool)]
    sd = np.sqrt(n * (k / (m - 1)) * (1 - k / (m - 1)))
    assert np.all(np.abs(off - expected) < 5 * sd)
    assert np.all(np.diag(counts) == 0)


def test_random_topology_same_seed_same_graph_and_k_all():
    t = RandomKNeighbour(12, k=3)
    A = t.dense(np.random.default_rng(5))
    B = t.dense(np.random.default_rng(5))
    np.testing.assert_array_equal(A, B)
    np.testing.assert_allclose(RandomKNeighbour(5, k=4).dense(np.random.default_rng(0)),
                               np.full((5, 5), 0.2), atol=1e-15)


def test_lambda_stats():
    assert Ring(8).lambda_stats()["mean"] == pytest.approx(Ring(8).lam)
    st_ = RandomKNeighbour(30, 3).lambda_stats(16, random_state=0)
    assert 0 < st_["min"] <= st_["mean"] <= st_["max"] < 1
    assert st_["rms"] <= st_["max"] + 1e-12  # sqrt(lambda_max E[(W-P)^T (W-P)]) <= max_t lambda_t


# ------------------------------------------------------------------------------------ the gossip's block matrix


def test_gossip_round_matrix_is_block_diagonal_of_run_matrices():
    m = 8
    tops = [Ring(m), RandomKNeighbour(m, 2), Grid2D(m, laziness=0.3), RandomKNeighbour(m, 3, laziness=0.5),
            FullyConnected(m)]
    g = Gossip(tops)
    from fedtheory.sim.rules import State

    state = State(w=np.zeros((len(tops), 3)))
    g.setup(state, len(tops), m, 3)
    streams = RunStreams(list(range(len(tops))))
    B = g.round_matrix(streams).toarray()
    gens = RunStreams(list(range(len(tops)))).generators("topology")
    blocks = [t.dense(gens[r]) if t.time_varying else t.dense() for r, t in enumerate(tops)]
    np.testing.assert_allclose(B, sps.block_diag(blocks).toarray(), atol=1e-15)


# ------------------------------------------------------------------------------------ validation


def test_topology_parameter_errors():
    with pytest.raises(ParameterError, match="n_clients"):
        Ring(1)
    with pytest.raises(ParameterError, match="k"):
        RandomKNeighbour(5, k=5)
    with pytest.raises(ParameterError, match="rows"):
        Grid2D(10, rows=3)
    with pytest.raises(ParameterError, match="laziness"):
        Ring(5, laziness=1.0)
    with pytest.raises(ParameterError, match="rng"):
        RandomKNeighbour(5, 2).matrix()
    with pytest.raises(ParameterError, match="topology"):
        RandomKNeighbour(5, 2).lam
    with pytest.raises(ParameterError, match="edges"):
        canonical_edges(3, np.array([0]), np.array([3]))


def test_spectrum_sorted_and_sparse_equals_dense():
    W = Exponential(20).matrix()
    np.testing.assert_allclose(spectrum(W), spectrum(W.toarray()))
    assert np.all(np.diff(spectrum(W)) <= 0)
