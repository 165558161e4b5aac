"""Worst-case search (fedtheory.worst): projection inside the class, monotone search, replay, a halved bound, CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

from fedtheory.cli import main
from fedtheory.sim import LeastSquaresProblem
from fedtheory.testing import scaled_bound
from fedtheory.worst import QuadraticClass, evaluate, make_spec, replay, worst_case
from fedtheory.worst.quadratic import B_min, heterogeneity_G2

# small and fast: C = 3 clients, d = 3, K = 2, T = 20, exact gradients (deterministic)
SMALL = dict(L=2.0, mu=0.5, B=1.2, G=0.4, D=1.5, eta=0.005,  # eta: every condition of Thm 2 holds
             K=2, T=20, beta=0.05, sigma_l=0.0, C=3, d=3)


@pytest.mark.parametrize("B,G2,client_mu", [(1.2, 0.16, 0.0), (1.05, 0.5, 0.1), (3.0, 0.0, 0.0)])
def test_projection_keeps_every_instance_inside_the_class(B, G2, client_mu):
    qc = QuadraticClass(4, 3, L=2.0, mu=0.5, client_mu=client_mu, B=B, G2=G2, D=1.0)
    inst = qc.decode(qc.random(40, np.random.default_rng(1)))
    assert qc.violations(inst) == [[] for _ in range(40)]
    k = inst.constants(B)
    assert np.all(k["L"] <= 2.0) and np.all(k["mu"] >= 0.5) and np.all(k["client_mu"] >= client_mu)
    assert np.all(k["B_min"] <= B) and np.all(k["G2"] <= G2 + 1e-14)
    np.testing.assert_allclose(k["D"], 1.0, rtol=1e-9)
    # the engine's own problem, built per instance, reports the same exact constants (reusing its G^2(B))
    for p in range(0, 40, 13):
        lp = LeastSquaresProblem(inst.X[p], inst.y[p])
        assert float(lp.heterogeneity_G2(B).value) <= G2 + 1e-14
        assert lp.constants["L"].value <= 2.0 and lp.constants["mu"].value >= 0.5
        np.testing.assert_allclose(float(lp.heterogeneity_G2(B).value), k["G2"][p], rtol=1e-8, atol=1e-14)
        np.testing.assert_allclose(lp.constants["f_star"].value, inst.f_star[p], rtol=1e-10, atol=1e-14)


def test_batched_G2_and_B_min_match_the_problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 4, 30, 3)) * np.array([1.0, 0.5, 0.2])
    y = rng.standard_normal((5, 4, 30))
    S = X.shape[2]
    H = np.einsum("pcsd,pcse->pcde", X, X) / S
    h = np.einsum("pcsd,pcs->pcd", X, y) / S
    for p in range(5):
        lp = LeastSquaresProblem(X[p], y[p])
        bm = lp.constants["B_min"].value
        np.testing.assert_allclose(B_min(H)[p], bm, rtol=1e-10)
        np.testing.assert_allclose(heterogeneity_G2(H, h, 1.3 * bm)[p], lp.heterogeneity_G2(1.3 * bm).value, rtol=1e-9)


def test_search_never_reports_less_than_its_random_start_and_replays(tmp_path):
    spec = make_spec("fedinit.thm2", SMALL)
    path = str(tmp_path / "w.json")
    rec = worst_case(spec, budget=48, popsize=16, seed=3, instance_path=path)
    assert rec["verdict"] == "holds" and rec["slack"] >= 1
    assert rec["worst_measured"] >= rec["random_start"]["best_measured"]
    assert rec["slack"] <= rec["random_start"]["best_slack"]
    assert rec["evaluations"] == 48
    # the same seed, the same search
    assert worst_case(spec, budget=48, popsize=16, seed=3)["worst_measured"] == rec["worst_measured"]
    rep = replay(path)
    assert rep["replay"]["reproduced"] and rep["worst_measured"] == rec["worst_measured"]
    assert rep["replay"]["constraints_broken"] == []
    assert main(["worst", "--replay", path]) == 0


def test_halved_bound_is_found_violated(tmp_path):
    spec = make_spec("fedinit.thm2", SMALL)
    hspec = scaled_bound(spec, 0.5)
    full = worst_case(spec, budget=64, popsize=16, seed=0)
    rec = worst_case(hspec, budget=64, popsize=16, seed=0, instance_path=str(tmp_path / "h.json"))
    assert full["verdict"] == "holds"
    assert full["slack"] < 2, "the setting is chosen so that the stated bound is within 2x of the worst found"
    assert rec["verdict"] == "violated" and rec["worst_measured"] > rec["bound"]
    assert rec["conditions_failed"] == []


def test_stochastic_runs_use_seeds_and_standard_errors():
    spec = make_spec("fedinit.thm2", dict(SMALL, sigma_l=0.3, runs=3))
    assert spec.seeds == (0, 1, 2)
    inst = spec.space.decode(spec.space.random(4, np.random.default_rng(0)))
    ev = evaluate(spec, inst)
    assert ev.lhs.shape == (4, 3) and np.all(ev.se > 0)
    rec = worst_case(spec, budget=16, popsize=8, seed=0, final_seeds=6)
    assert rec["seeds"] == [0, 1, 2, 3, 4, 5] and rec["worst_measured_se"] > 0


@pytest.mark.parametrize("argv,name", [
    (["worst", "nope.thm"], "ID"),
    (["worst", "fedinit.thm2", "--budget", "3"], "--budget"),
    (["worst", "fedinit.thm2", "--popsize", "2"], "--popsize"),
    (["worst", "fedinit.thm2", "--set", "T=abc"], "T"),
    (["worst", "fedinit.thm2", "--set", "T"], "--set"),
    (["worst", "fedinit.thm2", "--seconds", "0"], "--seconds"),
    (["worst", "fedinit.thm2", "--no-reference", "--set", "bogus=1"], "--set"),
    (["worst", "--replay", "/nonexistent/file.json"], "--replay"),
    (["worst"], "ID"),
])
def test_cli_bad_input_exits_2_naming_the_parameter(argv, name, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{name}=" in err


def test_cli_pep_without_the_extra_names_it(capsys, monkeypatch):
    """Without PEPit (simulated where the extra is installed: the import fails), --method pep is a usage error
    naming the extra, and the Python API raises MissingExtraError naming it."""
    import sys

    from fedtheory.worst import MissingExtraError, PEPSetting, pep_available, solve_pep

    monkeypatch.setitem(sys.modules, "PEPit", None)  # `import PEPit` raises ImportError
    assert not pep_available()
    assert main(["worst", "fedinit.thm2", "--method", "pep"]) == 2
    assert "fedtheory[pep]" in capsys.readouterr().err
    with pytest.raises(MissingExtraError, match=r"fedtheory\[pep\]"):
        solve_pep(PEPSetting(C=1, K=1, T=1, L=1.0, eta=0.5))


def test_cli_search_without_reference(tmp_path, capsys):
    sets = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
    code = main(["worst", "fedinit.thm2", "--no-reference", "--budget", "16", "--popsize", "8", "--no-progress",
                 "--out-dir", str(tmp_path), *sets])
    rec = json.loads(capsys.readouterr().out)
    assert code == 0 and rec["id"] == "fedinit.thm2" and rec["method"] == "search" and rec["random_ratio"] is None
    for key in ("worst_measured", "bound", "slack", "instance", "budget", "elapsed_s", "verdict"):
        assert key in rec
    assert (tmp_path / "fedinit.thm2.json").exists()


def test_check_worst_case_adds_the_search_to_a_check_run(tmp_path, monkeypatch, capsys):
    from fedtheory.cli import main

    monkeypatch.chdir(tmp_path)
    code = main(["check", "--only", "fedinit.thm2", "--worst-case", "--worst-budget", "32", "--format", "json",
                 "--no-progress"])
    payload = json.loads(capsys.readouterr().out)
    assert code == payload["exit_code"] == 0
    [w] = payload["worst_case"]
    assert w["id"] == "fedinit.thm2" and w["verdict"] == "holds" and w["evaluations"] == 32
    assert (tmp_path / "worst_instances" / "fedinit.thm2.json").exists()
    assert main(["check", "--only", "fedinit.eq3", "--worst-case", "--worst-budget", "0", "--no-progress"]) == 2
    assert "--worst-budget=" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ non-convex clients

from hypothesis import given, strategies as st  # noqa: E402

from fedtheory._validation import ParameterError  # noqa: E402


@given(client_mu=st.floats(-2.0, -1e-3), B=st.floats(1.05, 4.0), G2=st.floats(0.0, 2.0), seed=st.integers(0, 10**6))
def test_nonconvex_clients_stay_inside_the_class_with_exact_constants(client_mu, B, G2, seed):
    """client_mu < 0: spectra in [client_mu, L] (built with the ridge client_mu), the mean still mu-strongly convex,
    the exact G^2(B) and D: through the instance's own constants and the engine's LeastSquaresProblem."""
    qc = QuadraticClass(3, 3, L=2.0, mu=0.5, client_mu=client_mu, B=B, G2=G2, D=1.0)
    inst = qc.decode(qc.random(8, np.random.default_rng(seed)))
    assert inst.ridge < 0 and qc.violations(inst) == [[] for _ in range(8)]
    k = inst.constants(B)
    assert np.all(k["client_mu"] >= client_mu) and np.all(k["L"] <= 2.0) and np.all(k["mu"] >= 0.5)
    assert np.all(k["G2"] <= G2 + 1e-14)
    np.testing.assert_allclose(k["D"], 1.0, rtol=1e-9)
    for p in (0, 7):
        lp = inst.take(p).problem()
        assert lp.ridge == inst.ridge and not lp.nonnegative_losses
        c = lp.constants
        np.testing.assert_allclose(c["mu"].value, k["mu"][p], rtol=1e-10)
        np.testing.assert_allclose(c["mu_clients"].value.min(), k["client_mu"][p], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(float(lp.heterogeneity_G2(B).value), k["G2"][p], rtol=1e-8, atol=1e-14)
        np.testing.assert_allclose(c["f_star"].value, inst.f_star[p], rtol=1e-10, atol=1e-14)
        # the engine's client gradients (X'(Xw - y)/S + ridge w) against H_i w - h_i of the instance
        w = np.random.default_rng(p).standard_normal((2, 3))
        g = lp.client_grads(w, np.zeros(2, np.int64))
        np.testing.assert_allclose(g, np.einsum("cde,re->rcd", inst.H[p], w) - inst.h[p][None], rtol=1e-10, atol=1e-12)


def test_nonconvex_clients_reach_negative_curvature_and_a_non_convex_client_is_unbounded():
    qc = QuadraticClass(4, 3, L=2.0, mu=0.5, client_mu=-2.0, dist2=1.0)  # no B: nothing pulls the clients together
    inst = qc.decode(qc.random(64, np.random.default_rng(0)))
    k = inst.constants()
    assert qc.violations(inst) == [[] for _ in range(64)]
    assert k["client_mu"].min() < -0.5  # random instances: some client non-convex
    assert np.all(np.isinf(k["Gamma"][k["client_mu"] < 0]))  # f_i* = -inf there
    # one client at the bottom of the interval, three at L: the mean is (-2 + 3 * 2)/4 = 1 >= mu, nothing moves
    theta = qc.random(1, np.random.default_rng(1))
    blocks = theta[:, :3 * 4 * 3].reshape(1, 4, 3, 3)
    blocks[0, 0, 0], blocks[0, 1:, 0] = -2.0, 2.0
    theta[:, :36] = blocks.reshape(1, -1)
    one = qc.decode(theta)
    np.testing.assert_allclose(one.constants()["client_mu"], -2.0, rtol=2e-9)
    assert qc.violations(one) == [[]]


def test_nonconvex_bad_client_mu_names_the_parameter():
    with pytest.raises(ParameterError, match="client_mu="):
        QuadraticClass(3, 3, L=2.0, mu=0.5, client_mu=-2.5, D=1.0)
    with pytest.raises(ParameterError, match="client_mu="):
        QuadraticClass(3, 3, L=2.0, mu=0.5, client_mu=0.6, D=1.0)


def test_nonconvex_search_replays_bit_for_bit(tmp_path):
    spec = make_spec("fedinit.thm2", dict(SMALL, client_mu=-1.0, B=2.0, G=1.0))
    path = str(tmp_path / "nc.json")
    rec = worst_case(spec, budget=32, popsize=16, seed=1, instance_path=path)
    # the random start and the finalists are evaluated in different batches: equal instances may differ in the
    # last bit (batched BLAS sums in another order; seen with numpy 2.4 / OpenBLAS: 1.227846549068396 vs ...963)
    assert rec["worst_measured"] >= rec["random_start"]["best_measured"] * (1 - 1e-12)
    with open(path) as f:
        assert json.load(f)["instance"]["ridge"] < 0
    rep = replay(path)
    assert rep["replay"]["reproduced"] and rep["worst_measured"] == rec["worst_measured"]
    assert rep["replay"]["constraints_broken"] == []


def test_constants_of_an_exactly_singular_client_hessian():
    """client_mu = 0 at the bound: a client with H_i = 0 exactly (flat) still has its minimum (min-norm solution)."""
    qc = QuadraticClass(3, 2, L=2.0, mu=0.5, client_mu=0.0, dist2=1.0)
    theta = qc.random(1, np.random.default_rng(0))
    theta[0, 0:2] = 0.0  # client 0's spectrum: both eigenvalues 0; clients 1, 2 at L (the mean is >= mu: no shift)
    theta[0, 6:8] = theta[0, 12:14] = 2.0
    inst = qc.decode(theta)
    k = inst.constants()
    assert k["client_mu"][0] == 0.0 and np.isfinite(k["Gamma"][0])
    lp = inst.problem()
    np.testing.assert_allclose(k["Gamma"][0], lp.constants["Gamma"].value, rtol=1e-9, atol=1e-12)
