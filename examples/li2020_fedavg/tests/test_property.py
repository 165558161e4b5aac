"""The property-based test of docs/extending.md, section 6 (kept verbatim there)."""
import numpy as np
from hypothesis import given, settings

from fedtheory.sim import Exact, RunConfig, fedavg, simulate
from fedtheory.testing import assert_bound_holds, least_squares_problems

from li2020_fedavg.records import THM1


@settings(max_examples=20, deadline=None, derandomize=True)
@given(least_squares_problems(n_clients=(2, 5), dim=(2, 5), heterogeneity=(0.0, 1.0)))
def test_thm1_one_local_step(problem):
    c = problem.constants
    L, mu = float(np.max(c["L_clients"].value)), float(np.min(c["mu_clients"].value))
    gamma = max(8 * L / mu, 1.0)
    w0 = problem.initial_point(0, scale=2.0)
    cfg = RunConfig(rounds=50, local_steps=1, lr=2 / mu, lr_schedule="inverse_step", lr_offset=gamma, oracle=Exact())
    tr = simulate(problem, fedavg(), cfg, [0], w0=w0, measures=("opt_error",))
    values = {"L": L, "mu": mu, "E": 1, "T": 51, "sum_p2_sigma2": 0.0, "Gamma": c["Gamma"].value, "G": 0.0,
              "Delta1": float(np.sum((w0 - c["w_star"].value) ** 2)), "lr": 2 / mu, "lr_offset": gamma}
    assert_bound_holds(THM1, tr["opt_error"][-1], values, instance=problem)
