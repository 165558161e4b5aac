"""Issue 27 for OledFL: the sentence as written, the statistics policy, edges and divergence boundaries that are never
evidence, the readings of W and of the stripped threshold, negative controls, self-checks by design, errata.
Each test failed on the code before the change (see the docstrings)."""
from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest

from fedtheory.checks import Session, StatsPolicy, all_checks, claim_result, run_checks, run_control
from fedtheory.checks.results import group_findings
from fedtheory.papers.oledfl import records as T

BETAS = np.array([0.0, 0.3, 0.6, 0.9, 0.99, 1.0, 1.1])


@pytest.fixture(scope="module")
def quick():
    res = run_checks(paper="oledfl", profile="quick", parallel_symbolic=False)
    by: dict[str, list] = {}
    for r in res:
        by.setdefault(r.id, []).append(r)
    return res, by


def _grid(means, runs, noise=1e-4, seed=0, diverged=None):
    rng = np.random.default_rng(seed)
    m = np.asarray(means, float)
    return {"beta": BETAS, "samples": m[:, None] * (1 + noise * rng.standard_normal((len(m), runs))),
            "diverged": np.zeros(len(m), bool) if diverged is None else np.asarray(diverged, bool), "paired": True}


# ------------------------------------------------------------------------------------ rule 5: the sentence as written


def test_consistency_compares_ole_with_no_ole():
    """The issue's case: every beta > 0 well below beta = 0, and 0.99 0.85% above 0.9. The sentence ('by adopting this
    initialization ... the mutual consistency among them is naturally strengthened') compares Ole with no Ole:
    supported. The old check tested monotonicity in beta and refuted it on the 0.85% rise."""
    mm = _grid([0.114, 0.0937, 0.0823, 0.0786, 0.0793, 0.0797, 0.0828], runs=10)
    r = claim_result(T.CLAIM_CONSISTENCY, mm, seeds=10)
    assert r.verdict == "claim_supported", r.detail
    # Ole significantly worse than no Ole, by more than the declared effect, on 10 seeds: refuted
    worse = _grid([0.10, 0.13, 0.0823, 0.0786, 0.0793, 0.0797, 0.0828], runs=10)
    assert claim_result(T.CLAIM_CONSISTENCY, worse, seeds=10).verdict == "claim_refuted"
    assert T.CLAIM_CONSISTENCY.min_effect == T.MIN_EFFECT


def test_a_small_rise_on_few_seeds_refutes_nothing():
    """The statistics policy: the issue's 0.85% rise on 3 paired runs (z = 3, uncorrected) refuted the old
    'larger beta lowers the error'; it is below the declared minimum effect and rests on 3 < 10 seeds."""
    mm = _grid([7.0, 6.0, 5.0, 4.0, 4.034, 3.0, 9.0], runs=3)
    r = claim_result(T.CLAIM_ERROR, mm, seeds=3, settings=10)
    assert r.verdict != "claim_refuted", r.detail
    big = _grid([7.0, 6.0, 5.0, 4.0, 4.034, 3.0, 9.0], runs=10)
    assert claim_result(T.CLAIM_ERROR, big, seeds=10).verdict != "claim_refuted"  # 0.85% < the 5% min_effect
    large = _grid([7.0, 6.0, 5.0, 4.0, 4.8, 3.0, 9.0], runs=10)
    assert claim_result(T.CLAIM_ERROR, large, seeds=10).verdict == "claim_refuted"  # a 20% rise on 10 seeds


SEED_DECIDED = (T.CLAIM_ERROR, T.CLAIM_SPEED, T.CLAIM_CONSISTENCY, T.CLAIM_TOPOLOGY, T.CLAIM_OPT_BETA, T.CLAIM_K,
                T.CLAIM_STAB_BETA, T.CLAIM_STAB_TOPO, T.CLAIM_REMARK4)


@pytest.mark.parametrize("claim", SEED_DECIDED, ids=lambda c: c.id)
def test_claims_decided_from_seeds_use_the_statistics_policy(claim):
    """Every OledFL claim decided from per-seed values takes ``stats`` and declares a min_effect (the old predicates
    had their own z = 3 rule and no effect size)."""
    assert "stats" in inspect.signature(claim.predicate).parameters
    assert claim.min_effect is not None and claim.min_effect > 0 and "min_effect" in claim.note
    assert not {"z", "rtol"} & set(claim.parameters)


# ------------------------------------------------------------------------------------ edges and divergence boundaries


def _opt(best, diverged_after, lam=(0.979, 0.724, 0.39, 0.0), runs=10):
    """Per topology an optimum at grid index best[j], every beta after diverged_after[j] diverged (None: none)."""
    S = (np.full((len(lam), len(BETAS), runs), 10.0)
         + 0.01 * np.random.default_rng(4).standard_normal((len(lam), len(BETAS), runs)))
    div = np.zeros((len(lam), len(BETAS)), bool)
    for j, (i, d) in enumerate(zip(best, diverged_after)):
        S[j, i] -= 3.0
        if d is not None:
            div[j, d + 1:] = True
    return {"lam": list(lam), "beta": BETAS, "samples": S, "diverged": div, "names": ["ring", "grid", "exp", "full"],
            "paired": True}


def test_an_optimum_at_a_divergence_boundary_or_a_grid_edge_is_never_evidence():
    """The issue's Metropolis case: ring 0.6, grid 0.3, exponential 0.6 each next to a diverged beta, full at 0.99,
    the edge of the paper's range. The old rule refuted (exponential's 0.6 above grid's 0.3, 'significant' through the
    diverged neighbour); an optimum at a divergence boundary or a grid edge is never evidence of an interior optimum.
    Issue 36: read as Remark 2 argues (the optimal beta is the upper end of the stable range), the divergence onsets
    are bracketed, (0.6, 0.9] for ring and exponential, (0.3, 0.6] for grid: exponential's (smaller lambda) lies
    above grid's, against the claim, whatever the error does next to the diverged beta."""
    mm = _opt([2, 1, 2, 4], [2, 1, 2, None])
    assert claim_result(T.CLAIM_OPT_BETA, mm, seeds=10).verdict == "claim_refuted"
    out = T.CLAIM_OPT_BETA.evaluate(mm, stats=StatsPolicy(min_effect=T.MIN_EFFECT))
    assert "divergence boundary" in out.detail and "grid edge" in out.detail
    assert ("never evidence of an interior "
            "optimum" in out.detail and "inverted, exp (lambda 0.39) above grid" in out.detail)
    # the lazy W: larger beta better up to 0.99 everywhere: every optimum at the edge of the paper's range
    assert claim_result(T.CLAIM_OPT_BETA, _opt([4, 4, 4, 4], [None] * 4), seeds=10).verdict == "inconclusive"
    # beta >= 1 is outside the paper's range: an optimum there is not judged either
    assert claim_result(T.CLAIM_OPT_BETA, _opt([5, 6, 5, 6], [None] * 4), seeds=10).verdict == "inconclusive"


def test_optimal_beta_is_decided_under_both_readings_of_W(quick):
    """Which W the paper uses is not in the seed: the record declares the two readings (Definition 1's Metropolis W,
    the positive semi-definite lazy W under which beta < 1 is the stability limit) and the check joins them."""
    assert set(T.CLAIM_OPT_BETA.readings) == {"definition1", "psd"}
    (row,) = quick[1]["oledfl.claim.optimal_beta_vs_lambda"]
    assert set(row.extra["readings"]) == {"definition1", "psd"}
    assert row.verdict == "ambiguous" and not row.is_finding  # issue 36: the readings disagree (was inconclusive)
    assert "0.99 at the grid edge" in row.extra["readings"]["psd"]["detail"]
    assert "at the divergence boundary" in row.extra["readings"]["definition1"]["detail"]


# ------------------------------------------------------------------------------------ readings of the threshold


def test_divergence_threshold_readings_are_joined(quick):
    """'When [beta >= 1 | beta > 1] the algorithm diverges': both readings decided, joined by combine_readings; on
    W = 11^T/m beta = 1 is the consensus boundary (neither diverges nor converges), beta = 1.1 diverges: the readings
    disagree, 'ambiguous' (the old rule said 'inconclusive' by hand)."""
    rows = quick[1]["oledfl.claim.diverges_at_beta_ge_1"]
    full = next(r for r in rows if r.params["setting"] == "full, Metropolis W")
    assert full.verdict == "ambiguous" and set(full.extra["readings"]) == {"ge", "gt"}
    ring = next(r for r in rows if r.params["setting"] == "ring, Metropolis W")
    assert ring.verdict == "claim_supported" and "every reading (ge, gt)" in ring.detail
    assert all(r.scope == "extrapolation" and not r.is_finding for r in rows)


# ------------------------------------------------------------------------------------ controls and self-checks


OLEDFL_SPECS = {i: s for i, s in all_checks().items() if s.paper == "oledfl"}


def test_eq6_and_beta0_are_self_checks_by_design(quick):
    """eq. (6) is the tautology F - f* = (F - f) + (f - f*) (as fedinit.eq3); OledFL at beta = 0 runs DFedAvg's code
    path with x_i + 0 (x_i - x_i^{t-1,K}) = x_i. Neither can fail: both say why, and their rows are self-checks."""
    for cid in ("oledfl.eq6", "oledfl.claim.beta0_is_dfedavg"):
        assert OLEDFL_SPECS[cid].self_check and OLEDFL_SPECS[cid].control is None
        assert all(r.self_check and not r.is_finding for r in quick[1][cid])


def test_every_other_claim_or_identity_check_has_a_control():
    bare = [i for i, s in OLEDFL_SPECS.items() if s.kind in ("claim", "identity") and s.control is None
            and not s.self_check]
    assert bare == []


def test_the_tables_control_refutes_every_table_claim():
    """The control of oledfl.tables mutates one entry against each of the seven claims: each row must be refuted,
    not just one of them."""
    out = run_control(OLEDFL_SPECS["oledfl.tables"], Session("quick", 0))
    assert out.status == "fails_as_required"
    assert [r.verdict for r in out.rows] == ["claim_refuted"] * 7
    assert {r.id for r in out.rows} == set(OLEDFL_SPECS["oledfl.tables"].records)


# ------------------------------------------------------------------------------------ severity


def test_table_findings_are_errata_and_the_only_counted_findings(quick):
    """Table III's speed-ups against its own round counts and Sec. V-B's margin against Table II: errata (the paper's
    text or table against its own numbers), and the only counted OledFL findings of the quick profile (the old
    refutations of consistency and of the optimal beta are gone)."""
    res, by = quick
    for cid in ("oledfl.table.speedup_arithmetic", "oledfl.table.margin_vs_dfedsam"):
        (row,) = by[cid]
        assert row.verdict == "claim_refuted" and row.finding_class == "erratum" and row.is_finding
    assert sorted(group_findings(res)) == sorted(["oledfl.table.margin_vs_dfedsam|the paper's Tables II-IV|as printed",
                                                  "oledfl.table.speedup_arithmetic|the "
                                                  "paper's Tables II-IV|as printed"])


def test_corrected_tables_pass():
    """Positive controls of the two errata: with Table III's two speed-ups printed as their columns give, and Table
    II's CIFAR-10 non-IID margins at 4.5 points, both claims hold (under both readings of '%')."""
    t = copy.deepcopy(T.tables())
    cols = T.TABLE3_COLUMNS_DIR
    t["table3_dir"]["FedSAM"][1][cols.index("IID Acc@82")] = 1.4  # 500/363
    t["table3_dir"]["OledFL-SAM"][1][cols.index("Dir0.6 Acc@75")] = 3.4  # 152/45
    assert T.TCLAIM_ARITH.evaluate(t).supported is True
    for half, names in (("table2_dir", T.TABLE2_COLUMNS_DIR), ("table2_path", T.TABLE2_COLUMNS_PATH)):
        for j, col in enumerate(names):
            if col.startswith("C10") and col != "C10 IID":
                base = t[half]["DFedSAM"][0][j]
                t[half]["OledFL-SAM"][0][j] = max(t[half]["OledFL-SAM"][0][j], base + 4.5, base * 1.045)
    assert set(T.TCLAIM_MARGIN.readings) == {"points", "relative"}
    for reading in T.TCLAIM_MARGIN.readings:
        assert T.TCLAIM_MARGIN.evaluate(t, reading=reading).supported is True


# ------------------------------------------------------------------------------------ bounds


def test_every_bound_row_says_whether_it_is_vacuous(quick):
    """Lemma 3's rows compare with the trivial bound of a contraction (1); Theorems 1-2 have no bound to compare."""
    for r in quick[0]:
        if r.kind == "bound" and r.id.startswith("oledfl.lemma3"):
            assert r.extra["vacuity"] == "informative" and r.trivial_bound == 1.0
    assert T.LEMMA3.lhs_kind == T.LEMMA3_PRODUCT.lhs_kind == "contraction"
    for r in quick[1]["oledfl.thm1"] + quick[1]["oledfl.thm2"]:
        assert r.extra["vacuity"].startswith("no bound")


def test_every_claim_decided_on_both_mixing_matrices_counts_only_when_both_readings_agree():
    """The seed does not say which W it uses: the claims decided on the simulator's topologies are decided under both
    readings (Metropolis, lazy) and joined. Before, the lazy-W row of the connectivity claim counted on its own (the
    full profile refuted it for DFedAvg while the Metropolis row supported it)."""
    from fedtheory.checks import CheckResult
    from fedtheory.papers.oledfl.checks.common import LAZY, METROPOLIS, join_w

    def row(verdict, w):
        return CheckResult("oledfl.claim.connectivity_speeds_convergence", "oledfl", "claim", verdict,
                           params={"setting": f"DFedAvg (beta=0), {w}"})

    (joined,) = join_w({METROPOLIS[1]: [row("claim_supported", METROPOLIS[1])],
                         LAZY[1]: [row("claim_refuted", LAZY[1])]})
    assert joined.verdict == "ambiguous" and not joined.is_finding
    assert joined.params["setting"] == "DFedAvg (beta=0), W: both readings (Metropolis, lazy)"
    (both,) = join_w({METROPOLIS[1]: [row("claim_refuted", METROPOLIS[1])], LAZY[1]: [row("claim_refuted", LAZY[1])]})
    assert both.verdict == "claim_refuted" and both.is_finding
    for rec in (T.CLAIM_ERROR, T.CLAIM_SPEED, T.CLAIM_CONSISTENCY, T.CLAIM_TOPOLOGY, T.CLAIM_STAB_BETA,
                T.CLAIM_STAB_TOPO, T.CLAIM_OPT_BETA):
        assert set(rec.readings) == {"definition1", "psd"}, rec.id


# ------------------------------------------------------------------------------------ issue 36


def test_checks_that_compare_the_tool_with_itself_are_self_checks_by_rule():
    """Issue 36, item 1: oledfl.eq3 (the situation of fedinit.eq15), oledfl.ca_equivalence (eq. (3) plus the algebra
    of the simulator's doubly stochastic W), oledfl.def1 (the tool's own Metropolis matrices) and the derived laziness
    equivalence (two runs of the simulator) declared a control only, so their rows counted. And every identity check
    of a built-in paper is decided: a self-check by design, or one that compares the paper with something the tool
    does not build by the same rule (listed here with why)."""
    from fedtheory.checks import Session, all_checks
    from fedtheory.checks.execution import run_spec
    from fedtheory.plugins import BUILTIN_PAPERS

    specs = all_checks()
    for cid in ("oledfl.eq3", "oledfl.ca_equivalence", "oledfl.def1", "oledfl.derived.laziness_equivalence"):
        assert specs[cid].self_check and specs[cid].control is not None, cid
    s = Session("quick", 0)
    for cid in ("oledfl.eq3", "oledfl.ca_equivalence", "oledfl.def1"):
        rows = run_spec(specs[cid], s)
        assert rows and all(r.self_check and not r.is_finding for r in rows), cid
    compares_the_paper = {
        "fedshift.thm2": "eq. (12) and eq. (30) against D_FA^2 - D_FS^2 measured on the simulator's rounds: the "
                         "simulator builds the shift (eq. 10), not the paper's closed forms (eq. (30)'s rows are "
                         "self-checks row by row)",
        "fedmrur.alg1": "Algorithm 1's printed server sign against descent: the simulator runs the corrected sign",
    }
    identities = sorted(i for i, sp_ in specs.items() if sp_.paper in BUILTIN_PAPERS and sp_.kind == "identity"
                        and not sp_.needs_runs)
    undecided = [i for i in identities if not specs[i].self_check and i not in compares_the_paper]
    assert undecided == [], undecided


def test_the_speedup_sentence_is_decided_under_both_readings():
    """Issue 36, item 3: 'at least 3 speedup' was supported because one scope (Dir 0.3) was chosen; over all of Table
    III it fails (minimum 1.70x, Path2)."""
    from fedtheory.papers.oledfl import records as R
    from fedtheory.papers.oledfl.checks import tables as C

    row = C._table_row(R.TCLAIM_SPEEDUP, R.tables())
    assert row.verdict == "ambiguous" and not row.is_finding
    per = row.extra["readings"]
    assert per["table3"]["verdict"] == "claim_refuted" and "1.70x" in per["table3"]["detail"]
    assert "Path2" in per["table3"]["detail"]
    assert per["dir0.3"]["verdict"] == "claim_supported"


def test_the_optimal_beta_claim_is_ambiguous_between_the_two_readings_of_w():
    """Issue 36, item 4: with Metropolis W the divergence-onset brackets order against the claim, with the lazy W
    every optimum is at the grid edge: the readings disagree (before: both 'inconclusive', one row 'inconclusive')."""
    from fedtheory.checks import Session
    from fedtheory.papers.oledfl.checks import sweep as C

    row = C.claim_optimal_beta(Session("quick", 0))[0]
    assert row.verdict == "ambiguous" and not row.is_finding
    per = row.extra["readings"]
    assert per["definition1"]["verdict"] == "claim_refuted" and "inverted" in per["definition1"]["detail"]
    assert per["psd"]["verdict"] == "inconclusive" and "grid edge" in per["psd"]["detail"]



def test_topology_best_is_settled_by_the_papers_own_convention():
    """Issue 45, item 3: 002:171 'OledFL consistently achieves higher test set accuracy compared to other DFL
    baselines across various topologies' was 'ambiguous' over three readings. The paper's own comparisons with every
    baseline name OledFL-SAM (002:147-148), and the sentence's example is Ole on DFedSAM: under that reading Table IV
    (002:158-164) supports it in every column; the strict reading's exception (OledFL-SGD 78.73 < DFedSAM 78.88 on
    Exp) is reported, not decided."""
    from fedtheory.checks import claim_result
    from fedtheory.papers.oledfl import records as R

    row = claim_result(R.TCLAIM_TOPO_BEST, R.tables())
    assert row.verdict == "claim_supported" and not R.TCLAIM_TOPO_BEST.readings
    assert "Exp: OledFL-SGD 78.73 <= DFedSAM 78.88" in row.detail and "Not the sentence's reading" in row.detail
