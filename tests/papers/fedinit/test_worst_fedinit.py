"""Worst-case declarations of FedInit Thms 3, 4, 5 and Lemma 4: instances inside their classes (exact constants),
the measured left side against an independent computation, replay, weakened bounds found violated, settings
outside the conditions found not_applicable, and `check --worst-case` picking the declarations up."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fedtheory.cli import main
from fedtheory.sim import AdditiveNoise, LeastSquaresProblem, Minibatch, RunConfig, fedinit, simulate
from fedtheory.testing import scaled_bound
from fedtheory.theory.core import get
from fedtheory.worst import evaluate, make_spec, replay, worst_case
from fedtheory.worst.coupled import CoupledInstances, NeighbourClass
from fedtheory.worst.spec import worst_case_entries

# small and fast: every condition of Thms 4, 5 and Lemma 4 holds (checked below through the records)
SMALL = dict(L=2.0, mu=0.5, B=1.2, G=0.4, D=1.5, eta=0.005, K=2, T=20, beta=0.05, sigma_l=0.0, C=3, d=3)
PARTIAL = dict(SMALL, C=4, N=2, T=30, sigma_l=0.2, runs=3)  # partial participation: 2 of 4 clients
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "li2020_fedavg" / "src" / "li2020_fedavg"
STAB = dict(L=2.0, c=0.25, client_mu=0.2, K=2, T=8, beta=0.1, S=4, C=2, d=2, runs=4)


def test_every_fedinit_bound_with_a_worst_case_declaration_is_listed():
    ids = set(worst_case_entries())
    assert {"fedinit.thm1", "fedinit.thm2", "fedinit.thm3", "fedinit.thm3.rederived", "fedinit.thm4",
            "fedinit.thm4.rederived", "fedinit.thm5", "fedinit.lemma4"} <= ids


@pytest.mark.parametrize("rid,params", [("fedinit.thm4", SMALL), ("fedinit.thm4.rederived", PARTIAL),
                                        ("fedinit.thm5", SMALL), ("fedinit.lemma4", SMALL)])
def test_quadratic_specs_instances_inside_the_class_and_conditions_hold(rid, params):
    spec = make_spec(rid, params)
    inst = spec.space.decode(spec.space.random(12, np.random.default_rng(4)))
    assert spec.space.violations(inst) == [[] for _ in range(12)]
    k = inst.constants(params["B"])
    assert np.all(k["L"] <= params["L"]) and np.all(k["mu"] >= params["mu"])
    assert np.all(k["G2"] <= params["G"] ** 2 + 1e-14)
    np.testing.assert_allclose(k["D"], params["D"], rtol=1e-9)
    ev = evaluate(spec, inst)
    vals = {kk: v for kk, v in ev.values.items() if np.ndim(v) == 0}
    assert spec.record.conditions_failed(vals) == []
    assert np.all(np.isfinite(ev.bound)) and np.all(ev.mean >= 0)


def test_partial_participation_runs_through_the_engine_and_matches_separate_runs():
    """(1/T) sum_t Delta^t of one instance, batched in the search's population, equals the same quantity from
    separate simulate calls (one per seed) on a LeastSquaresProblem built from the instance's data alone."""
    spec = make_spec("fedinit.thm4.rederived", PARTIAL)
    assert spec.config.clients_per_round == 2 and spec.seeds == (0, 1, 2)
    assert spec.settings["full_participation"] is False
    inst = spec.space.decode(spec.space.random(5, np.random.default_rng(0)))
    ev = evaluate(spec, inst)
    p = 3
    lp = LeastSquaresProblem(inst.X[p], inst.y[p])
    by_hand = []
    for s in spec.seeds:
        tr = simulate(lp, fedinit(PARTIAL["beta"]),
                      RunConfig(rounds=PARTIAL["T"], local_steps=PARTIAL["K"], lr=PARTIAL["eta"], clients_per_round=2,
                                oracle=AdditiveNoise(PARTIAL["sigma_l"] ** 2)),
                      [s], w0=inst.w0[p], measures=("delta",))
        by_hand.append(np.mean(tr["delta"][:-1, 0]))
    np.testing.assert_allclose(ev.lhs[p], by_hand, rtol=1e-12)
    assert ev.se[p] > 0  # the client sampling makes the runs stochastic
    # N < C is what the theorem allows: the verdict is not 'not_applicable' for it
    rec = worst_case(spec, budget=10, popsize=5, seed=0)
    assert rec["verdict"] == "holds" and rec["conditions_failed"] == []


def test_lemma4_is_a_statement_per_round_with_the_runs_own_right_side():
    params = dict(SMALL, sigma_l=0.3, runs=3)
    spec = make_spec("fedinit.lemma4", params)
    assert spec.bound_per_run and spec.seeds == (0, 1, 2)
    inst = spec.space.decode(spec.space.random(4, np.random.default_rng(2)))
    ev = evaluate(spec, inst)
    T = params["T"]
    assert ev.lhs_all.shape == (4, 3, T) and ev.bound_all.shape == (4, T) and ev.bound_seeds.shape == (4, 3, T)
    # instance 1 by hand: one run per seed, the record evaluated at that run's own measurements
    lp = LeastSquaresProblem(inst.X[1], inst.y[1])
    lhs, rhs = [], []
    for s in spec.seeds:
        tr = simulate(lp, fedinit(params["beta"]), RunConfig(rounds=T, local_steps=params["K"], lr=params["eta"],
                                                             oracle=AdditiveNoise(params["sigma_l"] ** 2)),
                      [s], w0=inst.w0[1], measures=("delta", "grad_norm2", "local_grad_sum2"))
        vals = {k: params[k] for k in ("L", "mu", "sigma_l", "C", "K", "T", "eta", "beta", "D", "B", "G")}
        vals.update(N=params["C"], lam=0.5, Delta_t=tr["delta"][:-1, 0], grad_norm2_t=tr["grad_norm2"][:-1, 0],
                    local_grad_sum2=tr["local_grad_sum2"][:, 0])
        lhs.append(tr["delta"][1:, 0])
        rhs.append(get("fedinit.lemma4").evaluate(vals))
    lhs, rhs = np.array(lhs), np.array(rhs)
    np.testing.assert_allclose(ev.lhs_all[1], lhs, rtol=1e-12)
    np.testing.assert_allclose(ev.bound_all[1], rhs.mean(axis=0), rtol=1e-12)
    j = int(ev.statement[1])
    assert j == int(np.argmax(lhs.mean(axis=0) / rhs.mean(axis=0)))
    d = lhs[:, j] - rhs[:, j]  # the verdict's standard error: the paired difference's
    np.testing.assert_allclose(ev.se[1], d.std(ddof=1) / np.sqrt(3), rtol=1e-10)


def test_neighbour_pairs_inside_the_class_through_the_engine_problem():
    nc = NeighbourClass(3, 3, 5, L=2.0, client_mu=0.3, dist2_max=2.0)
    inst = nc.decode(nc.random(30, np.random.default_rng(3)))
    assert isinstance(inst, CoupledInstances) and nc.violations(inst) == [[] for _ in range(30)]
    k = inst.constants()
    assert np.all(k["samples_differing"] == 1) and np.all(k["dist2"] <= 2.0 * (1 + 1e-9))
    lp = inst.problem()  # 2P variants: the engine's own constants over both data sets of every pair
    assert lp.n_variants == 60 and float(np.max(np.linalg.eigvalsh(lp.H))) <= 2.0
    for p in (0, 17):
        a, b = LeastSquaresProblem(inst.X[p], inst.y[p]), LeastSquaresProblem(inst.X2[p], inst.y2[p])
        assert a.constants["L"].value <= 2.0 and b.constants["L"].value <= 2.0
        assert np.min(a.constants["mu_clients"].value) >= 0.3 * (1 - 1e-12)
        assert a.constants["mu"].value > 0 and b.constants["mu"].value > 0  # both f strongly convex, hence PL
        np.testing.assert_allclose(b.constants["mu"].value, k["mu_neighbour"][p], rtol=1e-10)
        i, j = inst.replaced[p]
        differ = np.argwhere(np.any(inst.X[p] != inst.X2[p], axis=-1) | (inst.y[p] != inst.y2[p]))
        assert differ.tolist() in ([[i, j]], [])


@given(seed=st.integers(0, 2**31), C=st.integers(2, 4), extra=st.integers(0, 3), d=st.integers(1, 4),
       tau=st.floats(0.0, 1.0), L=st.floats(0.5, 5.0), frac=st.floats(0.01, 0.9))
def test_neighbour_projection_property(seed, C, extra, d, tau, L, frac):
    """Any parameter vector (the replaced sample pushed to the largest size the L constraint allows included)
    decodes to a pair inside the class."""
    S = max(2, d) + extra
    nc = NeighbourClass(C, d, S, L=L, client_mu=frac * L)
    theta = nc.random(3, np.random.default_rng(seed))
    theta[:, C * S * d + C * S + C * d + 2 + d] = tau  # the new sample's size: tau of the largest admissible
    inst = nc.decode(theta)
    assert nc.violations(inst) == [[], [], []]


def test_stability_gap_equals_two_separate_runs_by_hand():
    spec = make_spec("fedinit.thm3.rederived", STAB)
    inst = spec.space.decode(spec.space.random(3, np.random.default_rng(5)))
    ev = evaluate(spec, inst)
    C, S = STAB["C"], STAB["S"]
    assert ev.lhs_all.shape == (3, STAB["runs"], C * S + 1)
    p = 2
    a, b = LeastSquaresProblem(inst.X[p], inst.y[p]), LeastSquaresProblem(inst.X2[p], inst.y2[p])
    cfg = RunConfig(rounds=STAB["T"], local_steps=STAB["K"], lr=STAB["c"], lr_schedule="inverse", oracle=Minibatch(1))
    i, j = inst.replaced[p]
    gaps, lg, u = [], [], []
    for s in spec.seeds:
        trs = [simulate(q, fedinit(STAB["beta"]), cfg, [s], w0=inst.w0[p],
                        measures=("visited_max_grad", "visited_max_loss")) for q in (a, b)]
        wA, wB = trs[0].final_w, trs[1].final_w
        la, lb = a.sample_losses(wA)[0], a.sample_losses(wB)[0]  # (C, S) on the original data set
        na, nb = b.sample_losses(wA)[0, i, j], b.sample_losses(wB)[0, i, j]  # the neighbour's new sample
        gaps.append(np.concatenate([np.abs(la - lb).ravel(), [abs(na - nb)]]))
        lg += [float(t["visited_max_grad"][0, 0]) for t in trs]
        u += [float(t["visited_max_loss"][0, 0]) for t in trs]
    gaps = np.array(gaps)
    np.testing.assert_allclose(ev.lhs_all[p], gaps, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(ev.mean[p], gaps.mean(axis=0).max(), rtol=1e-10)  # sup_z E|.| over the pooled z
    np.testing.assert_allclose(ev.values["L_G"][p, 0], max(lg), rtol=1e-12)
    np.testing.assert_allclose(ev.values["U"][p, 0], max(u), rtol=1e-12)
    assert np.any(gaps > 0)


def test_stability_search_replays_and_a_weakened_bound_is_violated(tmp_path):
    spec = make_spec("fedinit.thm3", STAB)
    path = str(tmp_path / "s.json")
    rec = worst_case(spec, budget=24, popsize=8, seed=1, final_seeds=8, instance_path=path)
    assert rec["verdict"] == "holds" and rec["conditions_failed"] == [] and rec["slack"] > 1
    assert rec["statements"] == STAB["C"] * STAB["S"] + 1 and rec["instance_constants"]["samples_differing"] == 1
    # stochastic: 4 finalists and the best random start re-evaluated on the final seeds; the worst of them reported
    assert len(rec["finalists"]) == 5 and rec["seeds"] == list(range(8))
    assert rec["slack"] == min(f["final_slack"] for f in rec["finalists"])
    assert rec["slack"] <= rec["random_start"]["best_slack_final_seeds"]
    rep = replay(path)
    assert rep["replay"]["reproduced"] and rep["replay"]["constraints_broken"] == []
    assert rep["worst_measured"] == rec["worst_measured"]
    weak = worst_case(scaled_bound(spec, 1e-4), budget=24, popsize=8, seed=1, final_seeds=8)
    assert weak["verdict"] == "violated" and weak["worst_measured"] - 3 * weak["worst_measured_se"] > weak["bound"]


def test_weakened_divergence_bounds_are_violated_and_the_stated_ones_hold(tmp_path):
    for rid, params, factor in (("fedinit.thm4", PARTIAL, 1e5), ("fedinit.lemma4", SMALL, 1e5)):
        spec = make_spec(rid, params)
        full = worst_case(spec, budget=16, popsize=8, seed=0, final_seeds=6)
        weak = worst_case(scaled_bound(spec, 1 / factor), budget=16, popsize=8, seed=0, final_seeds=6,
                          instance_path=str(tmp_path / f"{rid}.json"))
        assert full["verdict"] == "holds", rid
        assert full["slack"] < factor, f"{rid}: the factor must beat the stated bound's slack for the test to bite"
        assert weak["verdict"] == "violated" and weak["conditions_failed"] == [], rid


def test_settings_outside_the_conditions_are_not_applicable():
    # Lemma 4 requires full participation; Thm 5 needs eta <= 1/(N K L) among others
    lem = worst_case(make_spec("fedinit.lemma4", dict(PARTIAL)), budget=10, popsize=5, seed=0)
    assert lem["verdict"] == "not_applicable" and any("full_participation" in c for c in lem["conditions_failed"])
    thm5 = worst_case(make_spec("fedinit.thm5", dict(SMALL, eta=0.5)), budget=10, popsize=5, seed=0)
    assert thm5["verdict"] == "not_applicable" and any("eta_le_1_over_NKL" in c for c in thm5["conditions_failed"])


def test_replay_of_a_per_round_stochastic_instance(tmp_path):
    path = str(tmp_path / "l.json")
    rec = worst_case(make_spec("fedinit.lemma4", dict(SMALL, sigma_l=0.2, runs=2)), budget=10, popsize=5, seed=2,
                     final_seeds=4, instance_path=path)
    rep = replay(path)
    assert rep["replay"]["reproduced"] and rep["bound"] == rec["bound"] and rep["statement"] == rec["statement"]


@pytest.mark.parametrize("argv,name", [
    (["worst", "fedinit.thm4", "--no-reference", "--set", "N=7",
      *sum((["--set", f"{k}={v}"] for k, v in SMALL.items()), [])], "N"),
    (["worst", "fedinit.thm3", "--no-reference", "--set", "L=1", "--set", "c=0.1", "--set", "client_mu=2"],
     "client_mu"),
    (["worst", "li2020.thm1", "--plugin", str(EXAMPLE), "--setting", "x"], "--setting"),
])
def test_cli_bad_input_names_the_parameter(argv, name, capsys):
    assert main(argv) == 2
    assert f"{name}=" in capsys.readouterr().err


def test_check_worst_case_picks_up_the_stability_declarations(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--only", "fedinit.thm3", "--worst-case", "--worst-budget", "32", "--format", "json",
                 "--no-progress"])
    payload = json.loads(capsys.readouterr().out)
    ids = [w["id"] for w in payload["worst_case"]]
    assert ids == ["fedinit.thm3", "fedinit.thm3.rederived"] and code == payload["exit_code"]
    assert all(w["verdict"] == "holds" and w["random_ratio"] > 1 for w in payload["worst_case"])
    assert (tmp_path / "worst_instances" / "fedinit.thm3.rederived.json").exists()


def test_aligned_random_draws_reach_the_slowest_decay_the_class_allows():
    from fedtheory.worst import QuadraticClass

    qc = QuadraticClass(4, 3, L=2.0, mu=0.5, client_mu=0.1, B=1.2, G2=0.16, D=1.0, aligned_fraction=0.5)
    plain = dataclasses.replace(qc, aligned_fraction=0.0)
    a, b = qc.random(10, np.random.default_rng(1)), plain.random(10, np.random.default_rng(1))
    np.testing.assert_array_equal(a[5:], b[5:])  # the rest is the plain class's uniform draw, unchanged
    assert not np.array_equal(a[:5], b[:5])
    inst = qc.decode(a)
    assert qc.violations(inst) == [[] for _ in range(10)]
    np.testing.assert_allclose(inst.constants()["mu"][:5], 0.5, rtol=1e-6)  # lambda_min(mean Hessian) at mu
    Hbar = inst.H.mean(axis=1)[:5]
    u = inst.w0[:5] - inst.w_star[:5]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    Hu = np.einsum("pde,pe->pd", Hbar, u)  # the start lies on an eigenvector of the mean Hessian (the soft one)
    np.testing.assert_allclose(Hu, np.sum(Hu * u, axis=1, keepdims=True) * u, atol=1e-10)


def test_stability_sides_scale_as_the_docs_say():
    """Targets, labels and start times a: the gap, U and Delta scale like a^2, L_G and sigma_l like a; the re-derived
    bound is homogeneous of degree 2 like the left side (ratio unchanged), the printed one is not (its divergence
    term has no L_G)."""
    specs = {rid: make_spec(rid, STAB) for rid in ("fedinit.thm3", "fedinit.thm3.rederived")}
    inst = specs["fedinit.thm3"].space.decode(specs["fedinit.thm3"].space.random(2, np.random.default_rng(7)))
    a = 10.0
    big = CoupledInstances(inst.X, a * inst.y, a * inst.w0, inst.theta, X2=inst.X2, y2=a * inst.y2,
                           replaced=inst.replaced)
    ev = {rid: (evaluate(s, inst), evaluate(s, big)) for rid, s in specs.items()}
    e0, e1 = ev["fedinit.thm3.rederived"]
    np.testing.assert_allclose(e1.lhs_all, a**2 * e0.lhs_all, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(e1.values["U"], a**2 * e0.values["U"], rtol=1e-8)
    np.testing.assert_allclose(e1.values["L_G"], a * e0.values["L_G"], rtol=1e-8)
    np.testing.assert_allclose(e1.ratio, e0.ratio, rtol=1e-7)
    p0, p1 = ev["fedinit.thm3"]
    assert np.all(p1.ratio > p0.ratio * 1.01)  # printed: tighter at the larger scale
