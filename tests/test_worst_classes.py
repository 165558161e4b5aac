"""Issue 43, item 5: the search reaches the worst cases that matter. A plain convex quadratic class
(``QuadraticClass(mu=0)``, refused before) and a non-quadratic one (``HuberClass``: Huber regressions sharing one
minimiser, with exact L, mu = 0, w*, f* = 0 and ||w^0 - w*||^2), each instance checked against an independent
computation; and a user's own statement, Drori & Teboulle's bound halved, declared with the public API and found
violated by ``fedtheory worst`` at its default budget, the instance reported and replayed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedtheory.sim import Exact, RunConfig, fedavg, simulate
from fedtheory.validation import ParameterError
from fedtheory.worst import HuberClass, HuberInstances, QuadraticClass


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), C=st.integers(1, 3), d=st.integers(1, 3), S=st.integers(1, 4),
       dist2=st.floats(0.1, 10.0))
def test_huber_instances_are_inside_the_class_with_exact_constants(seed, C, d, S, dist2):
    S = max(S, -(-d // C))  # C S >= d: the class's w* is the only minimiser
    space = HuberClass(C, d, S, L=2.0, dist2=dist2)
    inst = space.decode(space.random(4, np.random.default_rng(seed)))
    assert space.violations(inst) == [[]] * 4
    k = inst.constants()
    p = inst.problem()
    for i in range(4):
        # L exact: each f_i's Hessian at w* (every residual inside the kink) by central differences of the engine's
        # client gradients, steps small against the kink; its largest eigenvalue over the clients is L, attained
        w = inst.w_star[i]
        eps = min(1e-4, 1e-3 * float(inst.delta[i]) / max(float(np.linalg.norm(inst.X[i], axis=-1).max()), 1e-300))
        var = np.array([i])
        G = np.stack([(p.client_grads((w + eps * e)[None], var)[0] - p.client_grads((w - eps * e)[None], var)[0])
                      / (2 * eps) for e in np.eye(d)], axis=-1)  # (C, d, d)
        Hs = 0.5 * (G + np.swapaxes(G, -1, -2))
        assert np.max(np.linalg.eigvalsh(Hs)) == pytest.approx(k["L"][i], rel=1e-5)
        assert np.min(np.linalg.eigvalsh(Hs.mean(axis=0))) == pytest.approx(k["mu_local"][i], rel=1e-5, abs=1e-8)
        # w* minimises every f_i: zero gradients there, f* = 0, and f >= 0 everywhere (residuals enter |.|)
        assert np.linalg.norm(p.client_grads(w[None], var)[0]) <= 1e-12 * (1 + np.abs(inst.X[i]).max() ** 2)
        assert abs(p.loss(w[None], var)[0]) <= 1e-14 * (1 + float(k["D"][i]))
        assert k["D"][i] == pytest.approx(float(p.loss(inst.w0[i][None], var)[0]), rel=1e-12)
    assert np.allclose(k["dist2"], dist2, rtol=1e-12)
    # the engine's variant optima are the instances' own (w*, f* = 0)
    W, F = p.variant_optima()
    np.testing.assert_allclose(W, inst.w_star, atol=1e-7)
    np.testing.assert_allclose(F, 0.0, atol=1e-12)


def test_huber_class_holds_drori_teboulles_attaining_function():
    """One client, one sample, d = 1: x = sqrt(L), kink delta = sqrt(L) R/(2 N + 1), start at distance R: GD with step
    1/L ends at L R^2/(4 N + 2) exactly (the D&T function is a member of the class)."""
    L, R2, N = 2.0, 4.0, 30
    space = HuberClass(1, 1, 1, L=L, dist2=R2)
    R = np.sqrt(R2)
    kink = np.sqrt(L) * R / (2 * N + 1)
    theta = np.array([[1.0, 1.0, np.log10(kink / (np.sqrt(L) * R)), 0.0, 1.0]])
    inst = space.decode(theta)
    assert inst.delta[0] == pytest.approx(kink, rel=1e-12)
    tr = simulate(inst.problem(), fedavg(), RunConfig(rounds=N, local_steps=1, lr=1.0 / L, oracle=Exact()), [0],
                  w0=inst.w0[0], measures=("opt_error",))
    assert tr["opt_error"][-1, 0] == pytest.approx(L * R2 / (4 * N + 2), rel=1e-6)


def test_convex_quadratic_class_accepts_mu_zero():
    """QuadraticClass(mu=0): every instance convex with spectra in [0, L] and ||w^0 - w*||^2 exact (before:
    ParameterError 'mu')."""
    space = QuadraticClass(3, 2, L=2.0, mu=0.0, client_mu=0.0, dist2=4.0)
    inst = space.decode(space.random(8, np.random.default_rng(0)))
    assert space.violations(inst) == [[]] * 8
    k = inst.constants()
    assert np.all(k["client_mu"] >= -1e-14) and np.all(k["L"] <= 2.0) and np.allclose(k["dist2"], 4.0)
    with pytest.raises(ParameterError, match="^aligned_fraction="):
        QuadraticClass(1, 1, L=2.0, mu=0.0, aligned_fraction=0.5, dist2=1.0)
    with pytest.raises(ParameterError, match="^mu="):
        QuadraticClass(1, 1, L=2.0, mu=-0.1, client_mu=-0.2, dist2=1.0)


@pytest.mark.parametrize("kw, name", [({"samples": 0}, "samples"), ({"L": 0.0}, "L"), ({"dist2": -1.0}, "dist2"),
                                      ({"s_min": 2.0}, "s_min"), ({"dim": 3}, "samples")])
def test_huber_class_bad_input_names_the_parameter(kw, name):
    base = {"n_clients": 1, "dim": 1, "samples": 1, "L": 2.0, "dist2": 4.0}
    with pytest.raises(ParameterError, match=f"^{name}="):
        HuberClass(**{**base, **kw})


def test_huber_instance_file_round_trip():
    space = HuberClass(2, 2, 2, L=1.0, dist2=1.0)
    inst = space.decode(space.random(2, np.random.default_rng(1))).take(1)
    back = HuberInstances.from_json(json.loads(json.dumps(inst.to_json())))
    for a in ("X", "w_star", "delta", "w0", "y"):
        assert np.array_equal(getattr(back, a), getattr(inst, a))
    with pytest.raises(ParameterError, match="instance"):
        HuberInstances.from_json({"X": [[[1.0]]], "w_star": [0.0], "w0": [1.0], "delta": -1.0})


USER = textwrap.dedent('''
    """A user's plug-in: Drori & Teboulle's bound halved, declared with the public API (issue 43)."""
    import numpy as np
    import sympy as sp
    from fedtheory.sim import Exact, RunConfig, fedavg
    from fedtheory.theory import Bound, Condition, SymbolSet, register, register_paper
    from fedtheory.worst import HuberClass, WorstCaseSpec, register_worst_case

    register_paper("mydt", collection="zoo", citation="my halved reading of Drori & Teboulle 2014")
    S = SymbolSet("mydt", strict=True)
    L, R2, N, lr = S.table("""
        L   f/w^2  positive     smoothness
        R2  w^2    nonnegative  ||x_0 - x*||^2
        N   1      count        gradient steps
        lr  w^2/f  positive     the step h/L
    """)
    HALVED = Bound(id="mydt.halved", paper="mydt", title="GD, convex L-smooth: the bound halved", source="mine",
                   symbols=S, assumptions=("L_smooth_global", "convex_global", "lower_bounded"), lhs="opt_error",
                   lhs_kind="opt_error", expr=L * R2 / (8 * N * L * lr + 4),
                   conditions=(Condition("step", sp.Le(lr * L, 1), source="mine"),))
    register(HALVED)

    def make(record_id="mydt.halved", *, L: float = 2.0, R2: float = 4.0, N: int = 50):
        space = HuberClass(1, 1, 1, L=L, dist2=R2)
        config = RunConfig(rounds=N, local_steps=1, lr=1.0 / L, oracle=Exact())

        def measure(tr, inst, which):
            return inst.loss(tr.final_w, which) - inst.f_star[which]

        return WorstCaseSpec(record_id, space, fedavg(), config, measure,
                             lambda inst, tr, which: {"L": L, "R2": R2, "N": N, "lr": 1.0 / L},
                             params={"record_id": record_id, "L": L, "R2": R2, "N": N})

    register_worst_case("mydt.halved", make, description="GD on Huber regressions")
''')


def test_a_users_halved_drori_teboulle_bound_is_violated_by_fedtheory_worst(tmp_path):
    plug = tmp_path / "mydt.py"
    plug.write_text(USER)
    run = lambda *a: subprocess.run([sys.executable, "-m", "fedtheory.cli", "worst", *a, "--plugin", str(plug)],
                                    capture_output=True, text=True, env=dict(os.environ), timeout=600, cwd=tmp_path)
    p = run("mydt.halved", "--out-dir", str(tmp_path / "inst"), "--no-progress")  # the default budget (2000)
    assert p.returncode == 1, p.stderr
    rec = json.loads(p.stdout)
    assert rec["verdict"] == "violated" and rec["budget"]["evaluations"] == 2000
    assert rec["slack"] < 0.51 and rec["instance_constants"]["L"] <= 2.0
    assert "violated on the instance" in p.stderr and os.path.isfile(rec["instance"])
    again = run("--replay", rec["instance"])
    replayed = json.loads(again.stdout)
    assert replayed["replay"]["reproduced"] and replayed["replay"]["constraints_broken"] == []
    assert replayed["verdict"] == "violated"
