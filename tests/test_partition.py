"""Client partitions: deterministic, complete, and terminating at small Dirichlet concentrations."""
import time

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.sim.partition import dirichlet_label_skew, iid


@given(seed=st.integers(0, 10_000), alpha=st.sampled_from([0.01, 0.1, 1.0, 100.0]), n_clients=st.integers(1, 40))
def test_dirichlet_without_replacement_is_a_partition(seed, alpha, n_clients):
    labels = np.random.default_rng(seed).integers(0, 5, 400)
    parts = dirichlet_label_skew(labels, n_clients, alpha, random_state=seed)
    allidx = np.concatenate(parts)
    assert len(parts) == n_clients
    assert len(np.unique(allidx)) == len(allidx)  # no sample twice
    assert all(len(p) == 400 // n_clients for p in parts)  # every client gets its quota
    again = dirichlet_label_skew(labels, n_clients, alpha, random_state=seed)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))


def test_small_alpha_label_skew_is_strong_and_large_alpha_is_mild():
    labels = np.repeat(np.arange(10), 100)
    def purity(alpha):
        parts = dirichlet_label_skew(labels, 20, alpha, random_state=0)
        return np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in parts])
    assert purity(0.01) > 0.8 and purity(1000.0) < 0.3


def test_no_hang_with_many_clients_and_tiny_alpha():
    labels = np.random.default_rng(0).integers(0, 100, 50_000)
    t = time.perf_counter()
    parts = dirichlet_label_skew(labels, 1000, 0.001, random_state=0)
    assert time.perf_counter() - t < 30
    assert sum(len(p) for p in parts) == 50_000


def test_with_replacement_variant():
    labels = np.repeat(np.arange(4), 50)
    parts = dirichlet_label_skew(labels, 10, 0.1, samples_per_client=40, replace=True, random_state=0)
    assert all(len(p) == 40 for p in parts)  # quotas can exceed what sampling without replacement allows
    assert len(np.unique(np.concatenate(parts))) < 200  # some samples unused, some shared


def test_iid_and_errors():
    parts = iid(103, 10, random_state=0)
    assert sorted(np.concatenate(parts).tolist()) == list(range(103))
    with pytest.raises(ParameterError, match="alpha"):
        dirichlet_label_skew(np.zeros(10), 2, 0.0)
    with pytest.raises(ParameterError, match="samples_per_client"):
        dirichlet_label_skew(np.zeros(10), 2, 1.0, samples_per_client=6)
    with pytest.raises(ParameterError, match="n_clients"):
        iid(5, 6)
