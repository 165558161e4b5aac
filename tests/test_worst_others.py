"""Worst-case declarations of FedShift Thm 1 and FedMRUR eq. (7) / MoFedSAM Thm D.7, and the separable PL class:
instances inside their class with exact constants, the measured left sides against independent computations,
replay, weakened (and strengthened) bounds, the printed FedShift bound outside its denominator, bad input."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.checks import Session
from fedtheory.cli import main
from fedtheory.papers.fedmrur import records as TM
from fedtheory.papers.fedmrur.checks import admissible_steps, bound_problems
from fedtheory.papers.fedmrur.worst import check_start
from fedtheory.papers.fedshift import records as TS
from fedtheory.papers.fedshift.checks import EPS_GRID
from fedtheory.papers.fedshift.worst import inferior_mask
from fedtheory.sim import SeparablePLProblem, fedavg, pl_nonconvex
from fedtheory.sim.mixed_precision import reference_mixed_precision
from fedtheory.sim.problems import pl_ratio_infimum
from fedtheory.sim.reference import reference_simulate
from fedtheory.testing import scaled_bound
from fedtheory.worst import SeparablePLClass, evaluate, make_spec, replay, worst_case, z_threshold

SHIFT = dict(L=2.0, mu=0.25, Delta1_max=2.0, E=2, T=15, sigma2=0.05, C=4, d=3, alpha=0.5, runs=3)
_G, _L = admissible_steps(8.0, 0.0, 0.1, 2, 4, 2)
MRUR = dict(D=1.5, sigma_g=0.8, eta_l=_L, eta_g=_G, K=2, S=2, N=4, T=15, d=3, runs=3)


# ------------------------------------------------------------------------------------ the separable PL class


@given(seed=st.integers(0, 10**6), reading=st.sampled_from(["mean", "max"]), sigma_g2=st.floats(0.0, 3.0),
       D=st.floats(0.1, 20.0), a_max=st.floats(0.0, 3.0))
def test_separable_pl_instances_are_inside_the_class_with_exact_constants(seed, reading, sigma_g2, D, a_max):
    qc = SeparablePLClass(4, 3, L=8.0, sigma_g2=sigma_g2, D=D, reading=reading, a_max=a_max)
    inst = qc.decode(qc.random(6, np.random.default_rng(seed)))
    assert qc.violations(inst) == [[] for _ in range(6)]
    k = inst.constants(1.0)
    np.testing.assert_allclose(k["D"], D, rtol=1e-12)
    assert np.all(k["L"] <= 8.0) and np.all(k["mu"] > 0)
    het = k["sigma_g2"] if reading == "mean" else k["sigma_g2_max"]
    assert np.all(het <= sigma_g2 * (1 + 1e-12) + 1e-15)
    p = inst.problem()
    rng = np.random.default_rng(seed + 1)
    W = 3 * rng.standard_normal((6, 3))
    v = np.arange(6)
    G = p.client_grads(W, v)  # (R, C, d)
    # Assumption 3 with B = 1 is an identity for every w: the heterogeneity is the linear terms
    np.testing.assert_allclose(np.mean(np.sum(G**2, axis=2), axis=1) - np.sum(G.mean(axis=1) ** 2, axis=1),
                               k["sigma_g2"], rtol=1e-9, atol=1e-12)
    # the PL inequality ||grad f||^2 >= 2 mu (f - f*) at random points, independently of how mu was found
    f = p.loss(W, v)
    assert np.all(np.sum(G.mean(axis=1) ** 2, axis=1) >= 2 * k["mu"] * f * (1 - 1e-9))
    # L: the largest second derivative of g on a dense grid (it is attained at x = 0)
    xs = np.linspace(-np.pi, np.pi, 8001)  # holds 0 and +-pi/2, where g'' is largest and smallest
    gpp = inst.c[:, :, None] * (2 + 2 * inst.a[:, :, None] * np.cos(2 * xs))
    np.testing.assert_allclose(gpp.max(axis=(1, 2)), k["L"], rtol=1e-12)
    np.testing.assert_allclose(gpp.min(axis=(1, 2)), k["client_mu"], rtol=1e-12, atol=1e-15)


def test_pl_nonconvex_is_the_member_c_1_a_3_and_the_check_instance_encodes():
    pl = pl_nonconvex(10, 10, 50, heterogeneity=0.5, random_state=0)
    q = SeparablePLProblem(1.0, 3.0, pl.h[0])
    W = np.random.default_rng(0).standard_normal((5, 10))
    v = np.zeros(5, np.int64)
    assert np.array_equal(q.client_grads(W, v), pl.client_grads(W, v))
    assert np.array_equal(q.loss(W), pl.loss(W))
    np.testing.assert_allclose(q.constants["mu"].value, pl.constants["mu"].value, rtol=1e-12)  # its 1-D minimisation
    assert pl_ratio_infimum(0.0) == 2.0
    # the PL ratio's infimum: attained (up to the tolerance) on a fine grid, and never undercut
    xs = np.linspace(1e-3, 20, 400_001)
    for a in (0.5, 1.5, 3.0):
        ratio = (2 * xs + a * np.sin(2 * xs)) ** 2 / (2 * (xs**2 + a * np.sin(xs) ** 2))
        m = float(pl_ratio_infimum(a))
        assert ratio.min() >= m * (1 - 1e-12) and ratio.min() <= m * (1 + 1e-8)
    e = [x for x in bound_problems(Session(seed=0)) if x["key"] == "pl_nonconvex"][0]
    qc = SeparablePLClass(10, 10, L=8.0, sigma_g2=e["sigma_g2"], D=e["D"])
    inst = qc.decode(check_start(qc, 0))
    np.testing.assert_allclose(inst.h[0], e["problem"].h[0], rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(inst.w0[0], e["w0"], rtol=1e-8)
    np.testing.assert_allclose(inst.c, 1.0, rtol=2e-9)
    assert qc.violations(inst) == [[]]


@pytest.mark.parametrize("kw,name", [(dict(c=0.0), "c"), (dict(a=3.5), "a"), (dict(h="uncentred"), "h")])
def test_separable_pl_problem_bad_input_names_the_parameter(kw, name):
    h = np.array([[1.0, -2.0], [-1.0, 2.0]])
    args = dict(c=1.0, a=3.0, h=h)
    args.update(kw)
    if isinstance(args["h"], str):
        args["h"] = h + 1.0
    with pytest.raises(ParameterError, match=f"{name}="):
        SeparablePLProblem(args["c"], args["a"], args["h"])


# ------------------------------------------------------------------------------------ FedMRUR / MoFedSAM


def _grad_f(inst, p, w):
    """grad f(w) of instance p from its closed form: c (2w + a sin 2w) + mean_i h_i."""
    return inst.c[p] * (2 * w + inst.a[p] * np.sin(2 * w)) + inst.h[p].mean(axis=0)


def test_mofedsam_left_side_and_bound_against_the_naive_reference():
    spec = make_spec("fedmrur.mofedsam_thmD7", MRUR)
    inst = spec.space.decode(spec.space.random(2, np.random.default_rng(3)))
    ev = evaluate(spec, inst)
    T = MRUR["T"]
    for p in range(2):
        _, hist = reference_simulate(inst.problem(), spec.algorithm, spec.config, list(spec.seeds),
                                     variants=np.full(len(spec.seeds), p), w0=inst.w0[p])
        for s in range(len(spec.seeds)):
            g2 = [float(np.sum(_grad_f(inst, p, hist[t, s]) ** 2)) for t in range(T)]
            lhs = [sum(g2[:t + 1]) / (t + 1) for t in range(T)]
            np.testing.assert_allclose(ev.lhs_all[p, s], lhs, rtol=1e-9)
    vals = dict(ev.values)
    for t in (0, T - 1):
        b = float(TM.MOFEDSAM.evaluate(dict(vals, T=float(t + 1))))
        np.testing.assert_allclose(ev.bound_all[0, t], b, rtol=1e-12)
    from fedtheory.papers.fedmrur.checks import c_max

    assert vals["C"] == c_max(vals) > 0


def test_eq7_weighted_left_side_and_each_runs_own_bound():
    spec = make_spec("fedmrur.thm1", MRUR)
    assert spec.bound_per_run
    inst = spec.space.decode(spec.space.random(2, np.random.default_rng(4)))
    ev = evaluate(spec, inst)
    from fedtheory.sim import simulate

    S, T = len(spec.seeds), MRUR["T"]
    which = np.repeat(np.arange(2), S)
    tr = simulate(inst.problem(), spec.algorithm, spec.config, np.tile(spec.seeds, 2), variants=which,
                  w0=inst.w0[which], measures=("d_t",))
    for p in range(2):
        _, hist = reference_simulate(inst.problem(), spec.algorithm, spec.config, list(spec.seeds),
                                     variants=np.full(S, p), w0=inst.w0[p])
        for s in range(S):
            r = p * S + s
            d = tr["d_t"][:, r]
            assert np.all(d >= 1 - 1e-12)
            g2 = np.array([np.sum(_grad_f(inst, p, hist[t, s]) ** 2) for t in range(T)])
            for t in (0, 6, T - 1):
                lhs = float(np.sum(d[:t + 1] * g2[:t + 1]) / np.sum(d[:t + 1]))
                np.testing.assert_allclose(ev.lhs_all[p, s, t], lhs, rtol=1e-9)
                b = float(TM.THM1.evaluate(dict(ev.values, sum_d=float(np.sum(d[:t + 1])))))
                np.testing.assert_allclose(ev.bound_seeds[p, s, t], b, rtol=1e-12)


def test_fedmrur_replays_and_a_loosened_bound_holds_a_weakened_one_is_violated(tmp_path):
    spec = make_spec("fedmrur.thm1", MRUR)
    path = str(tmp_path / "m.json")
    rec = worst_case(spec, budget=16, popsize=8, seed=0, instance_path=path, final_seeds=6)
    rep = replay(path)
    assert rep["replay"]["reproduced"] and rep["worst_measured"] == rec["worst_measured"]
    assert rep["replay"]["constraints_broken"] == [] and rec["conditions_failed"] == []
    slack = rec["slack"]
    loose = worst_case(scaled_bound(spec, 1e3 / slack), budget=16, popsize=8, seed=0, final_seeds=6)
    tight = worst_case(scaled_bound(spec, 1e-2 / slack), budget=16, popsize=8, seed=0, final_seeds=6)
    assert loose["verdict"] == "holds" and tight["verdict"] == "violated"
    assert rec["z_threshold"] == z_threshold(MRUR["T"], 6) > 3


def test_fedmrur_search_starts_from_the_check_instance_and_reports_it():
    e = [x for x in bound_problems(Session(seed=0)) if x["key"] == "pl_nonconvex"][0]
    g, l = admissible_steps(8.0, 0.0, 0.1, 5, 10, 5)
    spec = make_spec("fedmrur.thm1", dict(D=e["D"], sigma_g=float(np.sqrt(e["sigma_g2"])), eta_l=l, eta_g=g, T=40,
                                          runs=2, check_seed=0))
    rec = worst_case(spec, budget=6, popsize=6, seed=0, final_seeds=2)
    [start] = rec["declared_starts"]
    assert rec["random_start"]["instances"] == 5
    assert rec["worst_measured"] >= start["measured"] and rec["slack"] <= start["slack"]


def test_z_threshold_is_bonferroni_over_statements_with_students_t():
    from scipy.stats import norm, t

    assert z_threshold(1) == pytest.approx(3.0, abs=1e-12)
    assert 4.3 < z_threshold(300) < 4.6 and z_threshold(10) < z_threshold(300)
    assert z_threshold(300, 32) > z_threshold(300) and z_threshold(1, 10**6) == pytest.approx(3.0, abs=1e-4)
    # the level: P(t_31 > threshold) = Phi(-3) / 300
    assert t.sf(z_threshold(300, 32), df=31) == pytest.approx(norm.sf(3.0) / 300, rel=1e-9)


# ------------------------------------------------------------------------------------ FedShift


def test_fedshift_left_side_and_measured_constants_against_the_naive_reference():
    spec = make_spec("fedshift.thm1.rederived", SHIFT)
    inst = spec.space.decode(spec.space.random(2, np.random.default_rng(5)))
    ev = evaluate(spec, inst)
    C = SHIFT["C"]
    mask = inferior_mask(C, SHIFT["alpha"])
    assert list(mask) == [False, True, False, True]  # the check's odd-indexed inferior clients
    for p in range(2):
        one = inst.take(p)
        hist = reference_mixed_precision(one.problem(), fedavg(), spec.config, list(spec.seeds), mask, quantizer=None,
                                         shift=True, w0=one.w0[0])
        fT = one.loss(hist[-1], np.zeros(len(spec.seeds), np.int64)) - one.f_star[0]
        np.testing.assert_allclose(ev.lhs_all[p, :, 0], fT, rtol=1e-9, atol=1e-13)
        # M: eq. (11) gives the pre-shift mean m^{t+1} = (K/S) mean(w_hat^{t+1}); K = C, S = C - I
        m_next = hist[1:].mean(axis=2) * C / (C - mask.sum())
        np.testing.assert_allclose(ev.values["M"][p], np.max(np.mean(m_next**2, axis=1)), rtol=1e-9)
        # G^2 - sigma^2 covers every client gradient at the global iterates (a subset of the visited points)
        H, h = one.H[0], one.h[0]
        cg = np.einsum("cde,tse->tscd", H, hist) - h[None, None]
        assert ev.values["G"][p] ** 2 - SHIFT["sigma2"] >= np.max(np.sum(cg**2, axis=-1)) * (1 - 1e-12)
        # Gamma exact, through the engine's own per-client minima
        np.testing.assert_allclose(ev.values["Gamma"][p], one.problem().constants["Gamma"].value, rtol=1e-9, atol=1e-12)
    # eps: the grid's smallest bound among positive denominators, by brute force through the records
    vals = {k: (v[0] if np.ndim(v) else v) for k, v in ev.values.items()}
    best = min((float(TS.THM1_REDERIVED.evaluate(dict(vals, eps=e))), e) for e in EPS_GRID
               if float(TS.THM1_REDERIVED.evaluate_expr(TS.THM1_DEN, dict(vals, eps=e))) > 0)
    assert best[1] == vals["eps"]
    np.testing.assert_allclose(ev.bound_all[0, 0], best[0], rtol=1e-12)


def test_fedshift_replays_and_a_weakened_bound_is_found_violated(tmp_path):
    spec = make_spec("fedshift.thm1.rederived", SHIFT)
    path = str(tmp_path / "s.json")
    rec = worst_case(spec, budget=16, popsize=8, seed=0, instance_path=path, final_seeds=6)
    assert rec["verdict"] == "holds" and rec["slack"] > 1
    rep = replay(path)
    assert rep["replay"]["reproduced"] and rep["worst_measured"] == rec["worst_measured"]
    weak = worst_case(scaled_bound(spec, 0.1 / rec["slack"]), budget=16, popsize=8, seed=0, final_seeds=6)
    assert weak["verdict"] == "violated" and weak["conditions_failed"] == []


def test_printed_fedshift_bound_outside_its_denominator_is_not_applicable():
    ok = worst_case(make_spec("fedshift.thm1", SHIFT), budget=8, popsize=8, seed=0)
    assert ok["verdict"] == "holds" and ok["values"]["eps"] > 0
    out = worst_case(make_spec("fedshift.thm1", dict(SHIFT, eps=1.0)), budget=8, popsize=8, seed=0)
    assert out["verdict"] == "not_applicable"
    assert any(c.startswith("denominator_positive") for c in out["conditions_failed"])


@pytest.mark.parametrize("rid,kw,name", [
    ("fedshift.thm1", dict(SHIFT, alpha=0.0), "alpha"),
    ("fedshift.thm1", dict(SHIFT, eps=-1.0), "eps"),
    ("fedshift.thm1", dict(SHIFT, Delta1_max=0.0), "Delta1_max"),
    ("fedshift.thm1", dict(SHIFT, mu=3.0), "mu"),
    ("fedmrur.thm1", dict(MRUR, gradient_units=2), "gradient_units"),
    ("fedmrur.thm1", dict(MRUR, client_max=3), "client_max"),
    ("fedmrur.thm1", dict(MRUR, S=0), "S"),
    ("fedmrur.thm1", dict(MRUR, eta_l=0.0), "eta_l"),
    ("fedmrur.mofedsam_thmD7", dict(MRUR, a_max=4.0), "a_max"),
    ("fedmrur.mofedsam_thmD7", dict(MRUR, D=-1.0), "D"),
])
def test_bad_input_names_the_parameter(rid, kw, name):
    with pytest.raises(ParameterError, match=f"{name}="):
        make_spec(rid, kw)


def test_cli_lists_and_searches_the_new_declarations(tmp_path, capsys):
    assert main(["worst", "--list"]) == 0
    out = capsys.readouterr().out
    for rid in ("fedshift.thm1", "fedshift.thm1.rederived", "fedmrur.thm1", "fedmrur.mofedsam_thmD7"):
        assert rid in out
    sets = [a for k, v in SHIFT.items() for a in ("--set", f"{k}={v}")]
    assert main(["worst", "fedshift.thm1", "--no-reference", "--budget", "8", "--popsize", "8", "--no-progress",
                 "--out-dir", str(tmp_path), *sets]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["id"] == "fedshift.thm1" and rec["verdict"] == "holds"
    assert main(["worst", "fedshift.thm1", "--no-reference", *sets, "--set", "alpha=3"]) == 2
    assert "alpha=" in capsys.readouterr().err


def test_run_worst_reference_follows_the_reading_and_keeps_the_search_options():
    from fedtheory.worst import run_worst

    rec = run_worst("fedmrur.mofedsam_thmD7", sets={"gradient_units": 0, "T": 12, "runs": 2}, budget=6, popsize=6,
                    final_seeds=3)
    assert "A (displacement)" in rec["reference"] and "constants changed here (T, runs)" in rec["reference"]
    assert rec["evaluations"] == 6 and rec["seeds"] == [0, 1, 2] and rec["params"]["gradient_units"] == 0
    assert len(rec["declared_starts"]) == 1  # the check's instance


@pytest.mark.parametrize("shift,want", [(-1e-3, "holds"), (1e-3, "inconclusive"), (1.0, "violated")])
def test_stochastic_verdict_holds_inconclusive_violated(shift, want):
    """The paired gap (left side - bound) per seed at the worst statement: <= 0 on average holds, positive within
    the threshold is inconclusive, beyond it violated (as the checks' compare_mean decides)."""
    from fedtheory.worst.search import Evaluation, _verdict

    spec = make_spec("fedmrur.mofedsam_thmD7", MRUR)
    ev = evaluate(spec, spec.space.decode(spec.space.random(1, np.random.default_rng(0))))
    noise = 0.01 * np.random.default_rng(1).standard_normal(32)
    noise -= noise.mean()
    lhs = ev.bound_all[:, None, :] + shift + noise[None, :, None]
    synthetic = Evaluation(lhs, ev.bound_all, ev.values, np.zeros(1, bool))
    assert _verdict(spec, synthetic, 0) == (want, [])


def test_a_declared_start_outside_the_box_is_bad_input():
    spec = make_spec("fedmrur.thm1", MRUR)
    bad = dataclasses.replace(spec, starts=np.full((1, spec.space.n_params), 10.0))
    with pytest.raises(ParameterError, match="starts="):
        worst_case(bad, budget=8, popsize=8)
