"""FedMRUR's checks on the built-in settings: the verdicts the report states, and well-formed records."""
import pytest

from fedtheory.checks import run_checks


@pytest.fixture(scope="module")
def results():
    return run_checks(paper="fedmrur", profile="quick", seed=0, parallel_symbolic=False)


def _by(results, rid):
    return [r for r in results if r.id == rid]


def _one(results, rid, problem, setting_prefix):
    out = [r for r in _by(results, rid) if r.problem == problem and r.params.get("setting", "").startswith(setting_prefix)]
    assert len(out) == 1, (rid, problem, setting_prefix)
    return out[0]


def test_theorem_1_and_mofedsam_bounds(results):
    A, B, P = "A (", "B (", "practice"
    # PL problem (every constant exact), every horizon T' = 1..T checked with Holm over the horizons. Reading A
    # violates both bounds in the transient (eq. 7's first term lacks 1/(K eta_l)): a units artifact, not counted.
    for rid in ("fedmrur.thm1", "fedmrur.mofedsam_thmD7"):
        r = _one(results, rid, "pl_nonconvex", A)
        assert r.verdict == "violated" and r.ratio < 1 and r.conditions_failed == []
        assert r.scope == "units_artifact" and not r.is_finding and r.finding == "fedmrur.eq7.reading_A_units"
        assert r.family_size == r.params["rounds"] and r.seeds == r.params["runs"]
    # Reading B: MoFedSAM's bound fails only briefly in the momentum transient, nothing survives Holm
    mo = _one(results, "fedmrur.mofedsam_thmD7", "pl_nonconvex", B)
    assert mo.verdict == "inconclusive" and mo.extra["rounds_significant_uncorrected"] > 0
    assert mo.extra["rounds_significant_holm"] == 0
    # FedMRUR's fails at the late horizons (normalized update fed into the momentum: a floor above Phi) with the
    # client-mean sigma_g^2 on every seed; with the per-client max it is not significant: fragile, not counted
    fb = _one(results, "fedmrur.thm1", "pl_nonconvex", B)
    T = fb.params["rounds"]
    assert fb.verdict == "violated" and fb.extra["tightest_round"] > T // 2 and fb.extra["runs_violating_at_worst"] == 6
    assert fb.extra["sigma_g2_readings"]["verdict_client_max"] != "violated" and fb.scope == "fragile"
    for rid in ("fedmrur.thm1", "fedmrur.mofedsam_thmD7"):
        for prob in ("pl_nonconvex", "synthetic_logistic"):
            prac = _one(results, rid, prob, P)
            assert prac.verdict == "not_applicable" and any(c.startswith("C_max_positive") for c in prac.conditions_failed)
            assert prac.measured is not None  # the run is reported even though the theorem does not apply
        for s in (A, B):
            r = _one(results, rid, "synthetic_logistic", s)
            assert r.verdict == "holds" and r.ratio >= 1
    for r in _by(results, "fedmrur.thm1") + _by(results, "fedmrur.mofedsam_thmD7"):
        if r.verdict in ("holds", "violated"):
            assert r.conditions_failed == [] and r.params["sum_d_mean"] >= r.params["rounds"]


def test_identities_remark2_and_r(results):
    for rid in ("fedmrur.remark2", "fedmrur.eq_dt", "fedmrur.eq3", "fedmrur.assumption1_r", "fedmrur.remark2.symbolic"):
        rs = _by(results, rid)
        assert rs and all(r.verdict == "holds" for r in rs), rid
    assert all(r.measured <= 1e-12 for r in _by(results, "fedmrur.eq_dt"))


def test_rate_checks(results):
    rate = _by(results, "fedmrur.thm1.rate")[0]
    assert rate.verdict == "rate_inconsistent"
    assert "sigma_g**2" in rate.detail and "rho**2" in rate.detail and "K^1/2" in rate.detail
    assert len(rate.extra["terms"]) == 14 and sum(t["covered_by"] is None for t in rate.extra["terms"]) == 2
    assert _by(results, "fedmrur.thm1.rate_T")[0].verdict == "rate_consistent"


def test_claims_and_records(results):
    claims = [r for r in results if r.kind == "claim"]
    assert {r.id for r in claims} == {"fedmrur.claim.near_orthogonal", "fedmrur.claim.enlarges_step",
                                      "fedmrur.claim.faster_than_mofedsam", "fedmrur.claim.components_help",
                                      "fedmrur.claim.participation"}
    assert all(r.verdict == "claim_supported" for r in _by(results, "fedmrur.claim.enlarges_step"))
    fedavg_pl = [r for r in _by(results, "fedmrur.claim.near_orthogonal")
                 if r.problem == "pl_nonconvex" and r.params["algorithm"] == "FedAvg"]
    assert fedavg_pl[0].verdict == "claim_supported"
    for r in results:
        assert r.verdict != "error", r.detail
        d = r.to_json()
        for key in ("id", "paper", "kind", "verdict", "measured", "bound", "ratio", "conditions_failed", "problem",
                    "params", "seed", "source"):
            assert key in d
        assert "003_7cb41999359df859.txt" in r.source


def test_components_help_reports_the_regularizer_strength():
    """At the paper's constants the hyperbolic regulariser's gradient is negligible next to the loss gradient; at
    gamma = 0.5, sigma = 1 it is not (the measurement can tell them apart). Every row is an extrapolation."""
    from fedtheory.checks import run_checks
    res = run_checks(paper="fedmrur", only=["fedmrur.claim.components_help"], profile="quick", seed=0,
                     parallel_symbolic=False)
    assert res and all(r.scope == "extrapolation" for r in res)
    comps = {r.params["component"] for r in res}
    assert comps == {"normalized aggregation alone", "hyperbolic regulariser alone", "both"}
    h = [r for r in res if r.params["component"] == "hyperbolic regulariser alone"]
    st = h[0].extra["regularizer_to_loss_grad"]
    assert st["paper"]["ratio_max"] < 1e-3 and st["paper"]["weight_dist"] < 1e-4
    assert st["gamma=0.5,sigma=1"]["ratio_median"] > 0.1 and st["gamma=0.5,sigma=1"]["weight_dist"] > 1e-2
    assert "negligible" in h[0].detail
