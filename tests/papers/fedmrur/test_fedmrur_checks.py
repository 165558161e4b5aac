"""FedMRUR's checks on the built-in settings: the verdicts the report states, and well-formed records."""
import pytest

from fedtheory.checks import run_checks
from fedtheory.papers.fedmrur import records as T
from fedtheory.papers.fedmrur.records import READINGS


@pytest.fixture(scope="module")
def results():
    return run_checks(paper="fedmrur", profile="quick", seed=0, parallel_symbolic=False)


def _by(results, rid):
    return [r for r in results if r.id == rid]


def _one(results, rid, problem, setting_prefix):
    out = [r for r in _by(results, rid) if r.problem == problem
                                           and r.params.get("setting", "").startswith(setting_prefix)]
    assert len(out) == 1, (rid, problem, setting_prefix)
    return out[0]


def test_theorem_1_and_mofedsam_bounds(results):
    A, B, P = "A (", "B (", "practice"
    # PL problem (every constant exact), every horizon checked with Holm over the horizons, each row decided under
    # the four readings (Assumption 3: client mean / max; the average over t = 1..T / 0..T-1). Reading A of eta_g
    # violates both bounds in the transient under every reading, on the run as measured. Rule 8 (issue 45) decides
    # reading A as it decides B: the units erratum escalates where the run as measured fails.
    for rid in ("fedmrur.thm1", "fedmrur.mofedsam_thmD7"):
        r = _one(results, rid, "pl_nonconvex", A)
        assert r.ratio is None or r.ratio < 1
        assert set(r.extra["readings"]) == set(READINGS)
        assert all(x["verdict"] == "violated" and "rescaled" not in x["detail"] for x in r.extra["readings"].values())
        assert r.family_size in (r.params["rounds"] - 1, r.params["rounds"], None)
        assert r.seeds in (None, 10) and r.params["runs"] == 10
    # Reading B, MoFedSAM: no reading is violated on the run as measured; inside rule 8's regime only one reading is
    # (before issue 45: every reading, on rescaled instances up to loss x 0.001): ambiguous, and with it reading A's
    # violation (rule 3 over the readings of eta_g), not counted
    mo = _one(results, "fedmrur.mofedsam_thmD7", "pl_nonconvex", B)
    assert mo.verdict == "ambiguous" and not mo.is_finding
    assert _one(results, "fedmrur.mofedsam_thmD7", "pl_nonconvex", A).verdict == "ambiguous"
    assert "rule 3 over the readings of eta_g" in _one(results, "fedmrur.mofedsam_thmD7", "pl_nonconvex", A).detail
    # Reading B, FedMRUR-N: violated at the late horizons with the client-mean sigma_g^2 under both indexings, on
    # every seed, and with the per-client max when w^0 enters the average, on the run as measured; as printed
    # (t = 1..T) with the per-client max on a rescaled run inside rule 8's regime (loss x 0.355, parameters x 0.5).
    # Readings A and B both violated: counted, the units finding escalated to false as stated
    fb = _one(results, "fedmrur.thm1", "pl_nonconvex", B)
    rd = fb.extra["readings"]
    assert fb.verdict == "violated" and fb.is_finding and fb.scope == "inside" and fb.finding == T.UNITS_FINDING
    assert rd["client-mean, t=1..T"]["verdict"] == rd["client-mean, t=0..T-1"]["verdict"] == "violated"
    assert rd["client-max, t=0..T-1"]["verdict"] == "violated"
    assert rd["client-max, "
              "t=1..T"]["verdict"] == "violated" and "rescaled instance" in rd["client-max, t=1..T"]["detail"]
    assert "inside the regime" in rd["client-max, t=1..T"]["detail"]
    assert "rescaled instance" not in rd["client-mean, t=1..T"]["detail"]
    assert rd["client-mean, t=1..T"]["ratio"] < 0.8
    assert "10 of 10 seeds" in rd["client-mean, t=1..T"]["detail"]
    assert fb.extra["sigma_g2_readings"]["client_max"] > fb.extra["sigma_g2_readings"]["client_mean"]
    fa = _one(results, "fedmrur.thm1", "pl_nonconvex", A)
    assert fa.verdict == "violated" and fa.is_finding and fa.finding == T.UNITS_FINDING
    for rid in ("fedmrur.thm1", "fedmrur.mofedsam_thmD7"):
        for prob in ("pl_nonconvex", "synthetic_logistic"):
            prac = _one(results, rid, prob, P)
            assert prac.verdict == "not_applicable"
            assert any(c.startswith("C_max_positive") for c in prac.conditions_failed)
            assert prac.measured is not None  # the run is reported even though the theorem does not apply
        r = _one(results, rid, "synthetic_logistic", A)
        assert r.verdict == "holds" and r.ratio >= 1 and r.scope == "inside"
        # holds as measured and on every rescaled run inside rule 8's regime (issue 45; before: violated on the run
        # rescaled by loss x 3e-17, C = C_max = 1387, only at T' = 1)
        r = _one(results, rid, "synthetic_logistic", B)
        assert r.verdict == "holds" and not r.finding
        assert all("regime" in x["detail"] for x in r.extra["readings"].values())
    for r in _by(results, "fedmrur.thm1") + _by(results, "fedmrur.mofedsam_thmD7"):
        if r.verdict in ("holds", "violated"):
            assert r.conditions_failed == [] and r.params["sum_d_mean"] >= r.params["rounds"]
        if r.verdict != "not_applicable":  # vacuity by rule: L^2 R^2, R^2 the run's visited_max_dist2
            assert r.extra["vacuity"] in ("informative", "vacuous") and r.trivial_bound > 0
    # the PL bound is far below L^2 R^2; on the logistic problem eq. (7) holds as measured, above it (its Phi
    # dominates): vacuous under reading A
    assert not _one(results, "fedmrur.thm1", "pl_nonconvex", B).vacuous
    assert _one(results, "fedmrur.thm1", "synthetic_logistic", A).vacuous


def test_identities_remark2_and_r(results):
    for rid in ("fedmrur.remark2", "fedmrur.eq_dt", "fedmrur.eq3", "fedmrur.assumption1_r", "fedmrur.remark2.symbolic"):
        rs = _by(results, rid)
        assert rs and all(r.verdict == "holds" for r in rs), rid
        assert all(r.self_check and not r.is_finding for r in rs), rid  # by design (a tautology / construction)
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
    fedavg = [r for r in _by(results, "fedmrur.claim.near_orthogonal") if r.params["algorithm"] == "FedAvg"]
    # issue 45: the runs (120 and 300 rounds) are short of a quarter of the paper's 1600 and their gap still falls:
    # too early to say; on the rounds there are the predicate supports it
    assert [r.verdict for r in fedavg] == ["inconclusive"] * 2
    assert all(r.extra["regime"]["predicate_verdict"] == "claim_supported" for r in fedavg)
    for r in claims:  # the statistics policy: the check's rows are the family, 10 seeds each
        assert r.seeds == 10 and r.extra["stats_policy"]["min_effect"] is not None
        assert r.family_size == len(_by(results, r.id))
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
