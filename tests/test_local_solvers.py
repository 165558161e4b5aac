"""The simulator's exact proximal solve (FedProx, ``ProximalSolve``) and FedNova's per-client step counts and normalized
averaging (``ClientSteps``, ``NormalizedAveraging``): the engine against the naive reference, and each rule against
its definition."""
from __future__ import annotations

import numpy as np
import pytest

from fedtheory._validation import ParameterError
from fedtheory.sim import RunConfig, fedavg, fednova, fedprox, heterogeneous_least_squares, simulate
from fedtheory.sim.reference import reference_simulate


@pytest.fixture(scope="module")
def problem():
    return heterogeneous_least_squares(4, 5, 20, random_state=3)


@pytest.mark.parametrize("alg,K,N", [
    (fedprox(0.5, solve="exact"), 1, None), (fedprox(2.0, solve="exact", server_rule="algorithm1"), 3, 2),
    (fednova(np.array([1, 3, 2, 3]), weights=[0.1, 0.2, 0.3, 0.4], server_lr=0.9), 3, None),
    (fednova(np.array([1, 3, 2, 3])), 3, 2)])
def test_engine_equals_the_naive_reference(problem, alg, K, N):
    cfg = RunConfig(rounds=4, local_steps=K, lr=0.05, clients_per_round=N)
    tr = simulate(problem, alg, cfg, [0, 1], keep_iterates=True)
    _, hist = reference_simulate(problem, alg, cfg, [0, 1])
    np.testing.assert_allclose(tr.iterates, hist, rtol=0, atol=1e-13)
    assert np.abs(tr.iterates[-1] - tr.iterates[0]).max() > 1e-3  # the runs move


def test_exact_proximal_point_is_stationary(problem):
    """One round from w^0: each client's end point x_i satisfies grad f_i(x_i) + mu (x_i - w^0) = 0."""
    mu = 0.7
    w0 = problem.initial_point(0)
    tr = simulate(problem, fedprox(mu, solve="exact", server_rule="algorithm1"),
                  RunConfig(rounds=1, local_steps=2, lr=0.1), [0], w0=w0, keep_iterates=True)
    # the server's model is the mean of the proximal points: recompute them from the stationarity condition
    xs = []
    for i in range(problem.n_clients):
        H = problem.H[0, i] if problem.H.ndim == 4 else problem.H[i]
        h = problem.h[0, i] if problem.h.ndim == 3 else problem.h[i]
        xs.append(np.linalg.solve(H + mu * np.eye(problem.dim), h + mu * w0))
        np.testing.assert_allclose(H @ xs[-1] - h + mu * (xs[-1] - w0), 0, atol=1e-12)
    np.testing.assert_allclose(tr.iterates[1, 0], np.mean(xs, axis=0), atol=1e-12)


def test_fednova_with_equal_steps_is_fedavg(problem):
    """tau_i = K for every client and p uniform: tau_eff = K and FedNova's step is eta_g mean_i (w^t - w_{i,K})."""
    cfg = RunConfig(rounds=5, local_steps=3, lr=0.05)
    a = simulate(problem, fednova(np.full(4, 3), server_lr=0.8), cfg, [0], keep_iterates=True)
    b = simulate(problem, fedavg(server_rule="code", server_lr=0.8), cfg, [0], keep_iterates=True)
    np.testing.assert_allclose(a.iterates, b.iterates, rtol=0, atol=1e-14)


def test_fednova_client_stops_after_its_steps(problem):
    """A client with tau_i = 1 ends at one gradient step from w^t, whatever K."""
    w0 = problem.initial_point(0)
    cfg = RunConfig(rounds=1, local_steps=3, lr=0.05)
    one = simulate(problem, fednova(np.array([1, 1, 1, 1])), cfg, [0], w0=w0, keep_iterates=True)
    lr1 = RunConfig(rounds=1, local_steps=1, lr=0.05)
    ref = simulate(problem, fedavg(), lr1, [0], w0=w0, keep_iterates=True)
    np.testing.assert_allclose(one.iterates, ref.iterates, rtol=0, atol=1e-14)


def test_bad_input_names_the_parameter(problem):
    with pytest.raises(ParameterError, match="steps"):
        simulate(problem, fednova(np.array([1, 2])), RunConfig(rounds=1, local_steps=2, lr=0.1), [0])
    with pytest.raises(ParameterError, match="steps"):
        simulate(problem, fednova(np.array([1, 2, 5, 1])), RunConfig(rounds=1, local_steps=2, lr=0.1), [0])
    with pytest.raises(ParameterError, match="weights"):
        simulate(problem, fednova(np.array([1, 2, 2, 1]), weights=[1, 0, 1, 1]),
                 RunConfig(rounds=1, local_steps=2, lr=0.1), [0])
    with pytest.raises(ParameterError, match="solve"):
        fedprox(0.1, solve="newton")
    from fedtheory.sim import AdditiveNoise
    with pytest.raises(ParameterError, match="oracle"):
        simulate(problem, fedprox(0.1, solve="exact"), RunConfig(rounds=1, local_steps=1, lr=0.1,
                                                                 oracle=AdditiveNoise(0.1)), [0])
