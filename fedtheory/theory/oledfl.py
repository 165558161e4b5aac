"""OledFL (Li, Zhang, Wang, Yin, Shen 2024): decentralized FL with the opposite-lookahead initialisation (Ole).

Source: ``002_750e045df608fece.txt`` ("002" below). The text conversion stripped **every formula**: prose,
remarks, proof structure and the tables survive; equations, theorem statements, conditions and constants do
not. What is encoded, and how each piece is known:

* Ole, eq. (3): x_{i,0}^t = x_i^t + beta (x_i^t - x_i^{t-1,K}), x_i^t the model after gossip mixing. Known
  from the shared seeds README (outside the seed); the seed's prose around eq. (3) agrees ("clients obtain
  the opposite direction of the most recent iteration").
* Definition 1 (mixing matrix): the seed keeps the property names (graph, symmetry, null space, spectral)
  and the sentence "Under these properties, the eigenvalues of W satisfy ... we define lambda and 1 - lambda
  as the spectral gap", cited as [Definition 1, [15]] (DFedAvg, Sun, Li, Wang). The formulas are that
  source's: w_ij > 0 iff (i, j) in E or i = j; W = W^T; null(I - W) = span(1); I >= W > -I;
  lambda = max{|lambda_2(W)|, |lambda_m(W)|}.
* Lemma 3 (App. B-A1), cited as [Lemma 4, [13]] (Lian et al. 2017): ||W^k - 11^T/m||_op <= lambda^k. The
  seed keeps "For any k ... where ... and for a matrix A, we denote its spectral norm as ||A||" and the
  remark on [Proposition 1, [56]] (the C lambda^k form for time-varying W).
* beta < 1: Sec. III-C ("With the relationship to CA, we will constrain [beta < 1] in Algorithm 1") and
  Sec. V-D ("When [beta >= 1] the algorithm diverges"); the README states beta < 1. The bracketed text was
  stripped: whether the divergence statement is at beta = 1 or beyond is not readable.
* Theorems 1 and 2: only the prose survives (assumptions used, step-size and beta conditions exist,
  "optimal rate", a negative consistency term, beta = 0 gives DFedAvg, stability falls with beta and with
  smaller lambda). They are encoded as statements without formulas and marked as such; their checkable
  consequences are the claims below (Remarks 1-4).
* Tables II-IV: numbers transcribed (means, and the +- stds where printed); the claims of Sec. V are checked
  against them as printed, and against simulations.

Derived here, not in the seed (titles say "derived"): the CA form of Ole, x_{i,0}^t = [((1+beta) W - beta I)
X^{t-1,K}]_i (the seed: "The update form of Ole is equivalent to aggregation using the communication matrix
[...]"), and the consensus contraction of that matrix, max_{i>=2} |(1+beta) lambda_i - beta|, which is < 1
iff beta < (1 + lambda_m)/(1 - lambda_m). For lambda_m = 0 (e.g. W = 11^T/m) that is exactly beta < 1; for
W with negative eigenvalues (ring, grid with Metropolis weights) it is smaller than 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import sympy as sp

from .core import (Bound, Claim, ClaimOutcome, Condition, Definition, Identity, OrderStatement, Record, SymbolSet,
                   register)
from .dimensions import Units

PAPER = "oledfl"
SEED = "002_750e045df608fece.txt"
README = "seeds/README.md (shared)"
NA = "[formulas not available]"

S_ = SymbolSet(PAPER, strict=True)
_unit = sp.Interval.Ropen(0, 1)
m = S_.add("m", "number of clients", sp.Interval(1, sp.oo), dim="1")
K = S_.add("K", "local steps per round", sp.Interval(1, sp.oo), dim="1")
T = S_.add("T", "communication rounds", sp.Interval(1, sp.oo), dim="1")
eta = S_.add("eta", "local learning rate", dim="w^2/f")
beta = S_.add("beta", "Ole coefficient", sp.Interval(0, sp.oo), dim="1")
rho = S_.add("rho", "SAM perturbation radius", sp.Interval(0, sp.oo), dim="w")
n = S_.add("n", "samples per client", sp.Interval(1, sp.oo), dim="1")
lam = S_.add("lam", "lambda = max{|lambda_2(W)|, |lambda_m(W)|} (Definition 1)", _unit, dim="1")
lam2 = S_.add("lam2", "second largest eigenvalue of W", sp.Interval.open(-1, 1), dim="1")
lam_min = S_.add("lam_min", "smallest eigenvalue lambda_m(W) of W", sp.Interval.open(-1, 1), dim="1")
k = S_.add("k", "number of gossip steps (matrix power)", sp.Interval(1, sp.oo), integer=True, dim="1")
lam_prod = S_.add("lam_prod", "prod_{t<k} lambda(W_t) over a sequence of mixing matrices (in [0, 1] for W of "
                  "Definition 1)", sp.Interval(0, sp.oo), dim="1")
SYMBOLS = S_

# records whose theorem-level formulas did not survive the conversion
FORMULAS_NOT_AVAILABLE = ("oledfl.thm1", "oledfl.thm2", "oledfl.remark4")

# ------------------------------------------------------------------------------------ Definition 1


@dataclass
class MixingMatrixDefinition(Record):
    """Definition 1 of seed 002: properties a mixing matrix W must have, each checkable on a given W."""

    properties: tuple[tuple[str, str], ...] = ()
    kind: str = "definition"

    def explain(self) -> str:
        lines = [f"{self.id}  [definition]  {self.title}", f"source: {self.source}"]
        lines += [f"  ({i}) {name}: {text}" for i, (name, text) in enumerate(self.properties, 1)]
        lines.append("lambda := max{|lambda_2(W)|, |lambda_m(W)|}; spectral gap 1 - lambda")
        if self.note:
            lines.append("transcription note: " + self.note)
        return "\n".join(lines)


DEF1 = MixingMatrixDefinition(
    id="oledfl.def1", paper=PAPER, title="Definition 1: gossip / mixing matrix (formulas from [15])",
    source=f"{SEED}, Sec. IV-B, Definition 1 ('[Definition 1, [15]]')", symbols=S_,
    properties=(("graph", "w_ij > 0 if i = j or (i, j) in E, and w_ij = 0 otherwise"),
                ("symmetry", "W = W^T"),
                ("null_space", "null(I - W) = span(1): W 1 = 1 and 1 is the only fixed direction"),
                ("spectral", "I >= W > -I: every eigenvalue in (-1, 1]")),
    note="The seed keeps the property names and the words around them; the formulas are those of the cited "
         "Definition 1 of DFedAvg [15] (Sun, Li, Wang), whose sentences the seed reproduces. Together the "
         "properties give 1 = lambda_1 > lambda_2 >= ... >= lambda_m > -1.")
LAMBDA = Definition(
    "oledfl.lambda", PAPER, lam, None, f"{SEED}, Sec. IV-B, after Definition 1",
    "lambda = max{|lambda_2(W)|, |lambda_m(W)|} in [0, 1), 1 - lambda the spectral gap; computed from W "
    "(``mixing_lambda``). The text after Assumption 4 says lambda 'measures the speed of convergence to the "
    "equilibrium state'.", title="spectral quantity lambda of W")
register(DEF1, LAMBDA)


# ------------------------------------------------------------------------------------ Lemma 3

LEMMA3 = Bound(
    id="oledfl.lemma3", paper=PAPER, title="Lemma 3: ||W^k - 11^T/m|| <= lambda^k (formula from [13])",
    source=f"{SEED}, App. B-A1, Lemma 3 ('[Lemma 4, [13]]')", symbols=S_, assumptions=("mixing_matrix",),
    units=Units(lhs="1"),
    lhs="mixing_power_gap", lhs_description="||W^k - 11^T/m||_op (spectral norm)",
    expr=lam**k, conditions=(Condition("k_at_least_1", k >= 1),),
    note="Stripped; re-supplied from Lian et al. [13]: for W of Definition 1, ||W^k - P|| <= lambda^k with "
         "P = 11^T/m. For a symmetric W it is an equality (the non-unit eigenvalues of W^k - P are lambda_i^k). The "
         "seed adds that for a non-symmetric or time-varying W [Proposition 1, [56]] gives C lambda^k.")
LEMMA3_PRODUCT = Bound(
    id="oledfl.lemma3.product", paper=PAPER,
    title="Lemma 3 for a time-varying W: ||W_k...W_1 - 11^T/m|| <= prod_t lambda(W_t) (derived)",
    source=f"{SEED}, App. B-A1, remark after Lemma 3 ('[Proposition 1, [56]] ... C lambda^k'); product form derived",
    symbols=S_, assumptions=("mixing_matrix",),
    units=Units(lhs="1"),
    lhs="mixing_product_gap", lhs_description="||W_k ... W_1 - 11^T/m||_op over k rounds of a time-varying topology",
    expr=lam_prod,
    note="Derived: for doubly stochastic symmetric W_t, W_k...W_1 - P = (W_k - P)...(W_1 - P), and ||W_t - P|| = "
         "lambda(W_t), so the product bound holds with C = 1. A round whose graph is disconnected has lambda = 1.")
register(LEMMA3, LEMMA3_PRODUCT)

# ------------------------------------------------------------------------------------ Ole and its CA form

BETA_LT_1 = Condition("beta_lt_1", beta < 1, f"{SEED}, Sec. III-C (Chebyshev acceleration) and Sec. V-D; {README}",
                      "the admissible range the paper states for the Ole coefficient")

EQ3 = Identity(
    id="oledfl.eq3", paper=PAPER, title="Ole initialisation, eq. (3) (formula from the seeds README)",
    source=f"{SEED}, Sec. III-C, eq. (3); {README}", symbols=S_,
    lhs_text="x_{i,0}^t", rhs_text="x_i^t + beta (x_i^t - x_i^{t-1,K})  (x_i^t: client i's model after gossip mixing)",
    note="The formula is stripped from the seed and given by the README. The check verifies that the engine's "
         "anchor is the mixed model and that its 'last_local' is the previous round's local end point x_i^{t-1,K} "
         "(x^0 before round 0), against copies kept independently of the engine.")
CA_FORM = Identity(
    id="oledfl.ca_equivalence", paper=PAPER,
    title="Ole is one aggregation with W_beta = (1+beta) W - beta I (derived; the CA remark)",
    source=f"{SEED}, Sec. III-C ('The update form of Ole is equivalent to aggregation using the communication "
           "matrix [...]'); matrix derived from eq. (3)", symbols=S_,
    lhs_text="x_{i,0}^t", rhs_text="sum_l [(1+beta) W^{t-1} - beta I]_{il} x_{l,K}^{t-1}",
    note="Derived: x_i^t = sum_l w_il x_{l,K}^{t-1}, so eq. (3) gives the row i of ((1+beta) W - beta I) X^{t-1,K}. "
         "W_beta is doubly stochastic, hence the average of the starting points is x_bar^t (the check reports that "
         "residual too). Its eigenvalues off the consensus direction are (1+beta) lambda_i - beta.")
register(EQ3, CA_FORM)

_rho_beta = S_.add("rho_beta", "consensus contraction of W_beta = (1+beta) W - beta I", dim="1")
_beta_max = S_.add("beta_max", "largest beta with rho_beta < 1", dim="1")
_beta_cons = S_.add("beta_cons", "beta minimising rho_beta", sp.Interval(0, sp.oo), dim="1")
RHO_BETA = Definition(
    "oledfl.derived.rho_beta", PAPER, _rho_beta,
    sp.Max(sp.Abs((1 + beta) * lam2 - beta), sp.Abs((1 + beta) * lam_min - beta)),
    f"derived from {SEED} eq. (3) and Definition 1",
    "Spectral radius of W_beta on the complement of span(1) (for symmetric W): the factor by which Ole's starting "
    "points contract the disagreement of the previous local end points, before any local step. Not in the seed.",
    title="consensus contraction of the Ole aggregation (derived)")
BETA_MAX = Definition(
    "oledfl.derived.beta_max", PAPER, _beta_max, (1 + lam_min) / (1 - lam_min),
    f"derived from {SEED} eq. (3) and Definition 1",
    "rho_beta < 1 iff beta < (1 + lambda_m)/(1 - lambda_m) (the lambda_2 side never binds for lambda_2 < 1). "
    "Equals 1 when lambda_m = 0 (W = 11^T/m, or the limit of a lazy W), i.e. the paper's beta < 1; smaller than 1 "
    "when W has negative eigenvalues (Metropolis ring: 1/2, torus grid: 1/4). Local steps with a contracting "
    "gradient map can stabilise a beta slightly above it. Not in the seed.", title="stability limit of beta (derived)")
BETA_CONS = Definition(
    "oledfl.derived.beta_consensus_opt", PAPER, _beta_cons,
    sp.Max(0, (lam2 + lam_min) / (2 - lam2 - lam_min)), f"derived from {SEED} eq. (3) and Definition 1",
    "argmin_beta rho_beta (equalises the two ends of the spectrum): 0 when lambda_2 + lambda_m <= 0 (e.g. the "
    "fully connected W). A pure-consensus prediction of the optimal beta, shown next to the measured one; gradients "
    "are ignored. Not in the seed.", title="consensus-optimal beta (derived)")
LAZY_EQUIV = Identity(
    id="oledfl.derived.laziness_equivalence", paper=PAPER,
    title="Ole(beta) on a lazy W_a equals Ole((1+beta)(1-a) - 1) on W (derived)",
    source=f"derived from {SEED} eq. (3) and the CA form (oledfl.ca_equivalence)", symbols=S_,
    lhs_text="x_{i,k}^t of OledFL with beta on W_a = (1-a) W + a I",
    rhs_text="x_{i,k}^t of OledFL with beta' = (1+beta)(1-a) - 1 on W (every local iterate, every round)",
    note="(1+beta) W_a - beta I = (1+beta') W - beta' I, so both runs start every round from the same points and, by "
         "induction from x^0, train identically; only the mixed models x_i^t differ. E.g. a = 1/2, beta = 1 is DFedAvg "
         "on W. Hence the admissible and the optimal beta depend on how W is scaled, not on the graph alone. Not in "
         "the seed.")
register(RHO_BETA, BETA_MAX, BETA_CONS, LAZY_EQUIV)


def evaluate_definition(defn: Definition, values: Mapping[str, Any]) -> np.ndarray:
    """Numeric value of one of this module's derived definitions (lambdified once)."""
    from .core import _Evaluator

    if defn.id not in _DEF_EVAL:
        _DEF_EVAL[defn.id] = _Evaluator(defn.expr, S_, defn.id)
    return _DEF_EVAL[defn.id](values)


_DEF_EVAL: dict[str, Any] = {}

# ------------------------------------------------------------------------------------ theorems (prose only)

THM1 = OrderStatement(
    id="oledfl.thm1", paper=PAPER, title=f"Theorem 1: convergence of OledFL-SGD / OledFL-SAM {NA}",
    source=f"{SEED}, Sec. IV-C, Theorem 1; App. B-A3 (restated as Theorem 3); Remarks 1-2", symbols=S_,
    assumptions=("L_smooth", "bounded_variance", "heterogeneity(G,B)", "mixing_matrix"),
    statement="Under Assumptions 1-3, a step-size condition ('where [...]') and a condition on the Ole parameter "
              "beta, (1/T) sum_t E||grad f(x_bar^t)||^2 is bounded by an initialization-bias term, variance and "
              "heterogeneity terms involving lambda, a SAM term in rho, and a consistency term with a negative "
              "coefficient in beta; with a proper step size it gives the 'optimal rate of stochastic DFL'. beta = 0 "
              "recovers DFedAvg's bound. [Every formula, the rate, and both conditions are stripped.]",
    order=None, explicit=None,
    note="Nothing numeric survives: the bound, kappa, the step-size condition, the beta condition and the stated "
         "rate are all stripped (also in the appendix: Lemmas 1, 2, 4, 5 and eqs. (8)-(27)). Remark 1: a choice of "
         "rho (stripped) makes the SAM term negligible; the dominant term improves with better connectivity and with more local "
         "steps K. Remark 2: a larger beta gives a smaller error, the beta condition bounds it, and 'better-connected "
         "topology (smaller lambda) corresponds to a smaller optimal beta'. These are checked as claims "
         "(oledfl.claim.*). No bound or rate check is possible.")
THM2 = OrderStatement(
    id="oledfl.thm2", paper=PAPER, title=f"Theorem 2: uniform stability / generalization of OledFL {NA}",
    source=f"{SEED}, Sec. IV-D, Theorem 2 and Definition 2; App. B-B (Lemmas 6-10); Remarks 3-4", symbols=S_,
    assumptions=("bounded_variance", "heterogeneity(G,B)", "lipschitz(L_G)", "L_smooth", "mixing_matrix"),
    statement="With a step size decayed by communication round (a constant c; the form is stripped), a first round "
              "t0 at which the differing sample is drawn and a loss bound U, sup_z E|f(x^T; z) - f(x~^T; z)| is bounded by terms in the per-client sample "
              "count n, T, K, lambda and beta; choosing t0 optimally gives an order in these. [Every formula is "
              "stripped.]",
    order=None, explicit=None,
    note="Only the proof outline survives (Hardt et al. [47] Lemma 3.11 for the t0 split, Lemma 1.1/1.2 of [29] for "
         "equal/different samples, Lemma 9 for the consensus of the two coupled runs). Remark 3: the terms that "
         "depend on beta decrease as beta grows, and smaller lambda gives a smaller generalization error. Checked "
         "as claims on coupled runs.")
register(THM1, THM2)

EQ6 = Identity(
    id="oledfl.eq6", paper=PAPER, title="Excess-risk decomposition, eq. (6)", source=f"{SEED}, Sec. IV-A, eq. (6)",
    symbols=S_, lhs_text="E[F(x^T)] - f(x*)",
    rhs_text="E[F(x^T) - f(x^T)] + E[f(x^T) - f(x*)]  (generalization + optimization)",
    note="The formula is stripped; the prose names the two terms ('the different performance between the training "
         "dataset and the test dataset' and 'the similarity between x^T and the optimum'). An algebraic identity; "
         "checked on the average model x_bar^T in floating point.")
register(EQ6)

# ------------------------------------------------------------------------------------ claim predicates


def _diff(A, B, paired: bool) -> tuple[float, float, float]:
    """mean(B) - mean(A) and its standard error: from the per-run differences when the runs are coupled (same
    seeds, data and start; only the compared setting differs), else from the two samples' standard errors.
    Also returns max(|mean A|, |mean B|) for the relative tolerance."""
    A = np.asarray(A, float).ravel()
    B = np.asarray(B, float).ravel()
    ma, mb = float(np.nanmean(A)), float(np.nanmean(B))
    if paired and A.shape == B.shape:
        ok = np.isfinite(A) & np.isfinite(B)
        d = B[ok] - A[ok]
        se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    else:
        sa = [float(np.std(x[np.isfinite(x)], ddof=1) / np.sqrt(np.isfinite(x).sum())) if np.isfinite(x).sum() > 1 else 0.0
              for x in (A, B)]
        se = float(np.hypot(*sa))
    return mb - ma, se, max(abs(ma), abs(mb))


def _rises(A, B, paired, z, rtol) -> bool:
    """B's mean is significantly above A's: by more than z standard errors and rtol relative."""
    d, se, scale = _diff(A, B, paired)
    return bool(d > z * se + rtol * scale)


def _means(samples) -> np.ndarray:
    with np.errstate(all="ignore"):
        S = np.asarray(samples, float)
        return np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan for r in S.reshape(S.shape[0], -1)])


def _decreasing_in_beta(mm, z=3.0, rtol=1e-9):
    """Judged inside the stable range only: the grid's beta < 1 below the smallest beta at which a run diverged
    (divergence itself is the divergence claim's subject: one cause, one finding). Refuted when the mean at some
    stable beta is above the mean at a smaller one by more than z standard errors (paired over coupled runs when
    'paired') and rtol relative; supported when nothing is refuted and the mean at the largest stable beta is
    significantly below the mean at beta = 0; inconclusive otherwise (also when the stable range holds fewer than
    two betas). Diverged betas and beta >= 1 are reported, not judged."""
    b = np.asarray(mm["beta"], float)
    S = np.asarray(mm["samples"], float)
    div = np.asarray(mm["diverged"], bool)
    paired = bool(mm.get("paired", False))
    order = np.argsort(b)
    b, S, div = b[order], S[order], div[order]
    v = _means(S)
    text = "; ".join(f"beta={bb:g}: " + ("diverged" if dd else f"{vv:.4g}") for bb, vv, dd in zip(b, v, div))
    first_div = float(b[div].min()) if div.any() else np.inf
    stable = (b < min(1.0, first_div)) & ~div
    rng = f"judged over the stable range beta in [0, {min(1.0, first_div):g})"
    if first_div < 1:
        rng += f" (a run diverged at beta = {first_div:g} < 1: left to oledfl.claim.diverges_at_beta_ge_1)"
    if b[0] != 0 or div[0] or stable.sum() < 2:
        return ClaimOutcome(None, "needs converged runs at beta = 0 and at some stable beta > 0. " + rng + ". " + text,
                            None)
    bad = []
    live = np.flatnonzero(stable)
    for i, p in enumerate(live):
        for q in live[i + 1:]:
            if _rises(S[p], S[q], paired, z, rtol):
                bad.append(f"rises from beta={b[p]:g} to beta={b[q]:g}")
    best = float(b[live[np.argmin(v[live])]])
    if bad:
        return ClaimOutcome(False, "; ".join(bad) + ". " + rng + ". " + text, best)
    last = live[-1]
    better = last > 0 and _rises(S[last], S[0], paired, z, rtol)
    return ClaimOutcome(True if better else None, rng + ". " + text, best)


def _monotone(mm, direction="increasing", z=3.0, rtol=1e-9):
    """Mean against an ordering variable x (lambda, or K): for 'increasing' the mean must not fall as x grows
    (better connectivity = smaller lambda = smaller value), for 'decreasing' it must not rise. Refuted when some pair
    goes the other way by more than z standard errors (paired when 'paired') and rtol relative; supported when
    nothing is refuted and the two ends differ significantly in the stated direction; inconclusive otherwise."""
    x = np.asarray(mm["x"], float)
    S = np.asarray(mm["samples"], float)
    paired = bool(mm.get("paired", False))
    names = list(mm.get("names", [f"{xx:g}" for xx in x]))
    order = np.argsort(x)
    x, S = x[order], S[order]
    names = [names[i] for i in order]
    v = _means(S)
    text = "; ".join(f"{nm} (x={xx:.3g}): {vv:.4g}" for nm, xx, vv in zip(names, x, v))
    idx = np.flatnonzero(np.isfinite(v))
    if idx.size < 2:
        return ClaimOutcome(None, "fewer than two finite values. " + text, None)
    sign = 1.0 if direction == "increasing" else -1.0
    bad = [f"{names[a]} vs {names[c]}" for a in idx for c in idx
           if x[a] < x[c] and _rises(sign * S[c], sign * S[a], paired, z, rtol)]
    if bad:
        return ClaimOutcome(False, "goes the other way: " + ", ".join(bad) + ". " + text, len(bad))
    lo, hi = idx[0], idx[-1]
    ends = _rises(sign * S[lo], sign * S[hi], paired, z, rtol)
    return ClaimOutcome(True if ends else None, text, 0)


def _optimal_beta_order(mm, z=3.0, rtol=1e-9):
    """Per topology, beta* = the beta of the grid with the smallest mean among the non-diverged; beta* at the largest
    beta of the grid is censored (the optimum may lie beyond). For a better-connected topology a (smaller lambda)
    and a worse-connected c: inverted when beta*_a > beta*_c (or beta*_a censored above beta*_c); the inversion is
    significant when, on a, c's beta* is significantly worse than a's own (z standard errors, paired when 'paired',
    rtol relative; or diverged). Refuted by a significant inversion; supported when beta* is non-decreasing in lambda,
    no pair is censored at the edge, and at least one pair with beta*_a < beta*_c is significant in the same sense;
    inconclusive otherwise (near-tie inversions, optima beyond the grid, or beta* not identified)."""
    lamv = np.asarray(mm["lam"], float)
    b = np.asarray(mm["beta"], float)
    S = np.asarray(mm["samples"], float)  # (topologies, betas, runs)
    div = np.asarray(mm["diverged"], bool)
    paired = bool(mm.get("paired", False))
    names = list(mm["names"])
    top = int(np.argmax(b))
    best = []
    for j in range(len(lamv)):
        e = np.where(div[j], np.inf, _means(S[j]))
        e = np.where(np.isfinite(e), e, np.inf)
        best.append(int(np.argmin(e)) if np.isfinite(e).any() else -1)
    text = "; ".join(f"{nm} (lambda={lv:.3g}): beta*={b[i]:g}{' (grid edge)' if i == top else ''}" if i >= 0
                     else f"{nm}: all diverged" for nm, lv, i in zip(names, lamv, best))
    strong, weak, evidence = [], [], []
    worse = lambda j, own, other: bool(div[j, other]) or _rises(S[j, own], S[j, other], paired, z, rtol)
    for a in range(len(lamv)):
        for c in range(len(lamv)):
            ia, ic = best[a], best[c]
            if not (lamv[a] < lamv[c] and ia >= 0 and ic >= 0):
                continue
            if ia == top and ic == top:
                weak.append(f"{names[a]} and {names[c]} both at the grid edge")
            elif b[ia] > b[ic]:
                (strong if worse(a, ia, ic) else weak).append(f"{names[a]} beta*={b[ia]:g} > {names[c]} beta*={b[ic]:g}")
            elif b[ia] < b[ic] and (worse(a, ia, ic) or worse(c, ic, ia)):
                evidence.append(f"{names[a]} < {names[c]}")
    out = [float(b[i]) if i >= 0 else None for i in best]
    if strong:
        return ClaimOutcome(False, "inverted: " + ", ".join(strong) + ". " + text, out)
    if weak:
        return ClaimOutcome(None, "undecided: " + ", ".join(weak) + ". " + text, out)
    if not evidence:
        return ClaimOutcome(None, "beta* does not differ significantly across lambda. " + text, out)
    return ClaimOutcome(True, "significantly ordered: " + ", ".join(evidence) + ". " + text, out)


def _divergence_at_one(mm):
    """Tests what the seed states (002, line 177, for the random bidirectional topology): beyond the threshold
    the algorithm diverges. The threshold was stripped: it reads 'beta >= 1' or 'beta > 1', so each reading is
    evaluated on the grid's betas it covers. A beta counts as diverged when a majority of its runs diverged
    ('runs_diverged' of 'runs'; 'diverged' alone: as given). Supported when both readings hold (every covered beta
    diverged); inconclusive when only one does (the text decides, not the runs); otherwise inconclusive with
    'not reproduced (N rounds, R runs)': no divergence within the horizon is weaker evidence than a refutation.
    The converse (that beta < 1 does not diverge) is not stated and not judged: divergence below 1 is reported."""
    b = np.asarray(mm["beta"], float)
    if "runs_diverged" in mm:
        k = np.asarray(mm["runs_diverged"], float)
        R = int(mm["runs"])
        div = k > R / 2
        counts = ", ".join(f"{x:g}: {int(c)}/{R}" for x, c in zip(b, k))
    else:
        div = np.asarray(mm["diverged"], bool)
        R, counts = mm.get("runs"), ""
    Tn = mm.get("rounds")
    text = ("diverged (majority of runs) at beta = " + (", ".join(f"{x:g}" for x, d in zip(b, div) if d) or "none")
            + (f"; runs diverged by beta: {counts}" if counts else ""))
    below = [f"{x:g}" for x, d in zip(b, div) if x < 1 and d]
    if below:
        text += f"; also diverged below 1 (not a clause of the sentence): {', '.join(below)}"
    if not (b > 1).any():
        return ClaimOutcome(None, "no beta > 1 in the grid. " + text, None)
    ge = bool(all(d for x, d in zip(b, div) if x >= 1))
    gt = bool(all(d for x, d in zip(b, div) if x > 1))
    text += f" (reading 'beta >= 1': {'diverges' if ge else 'not reproduced'}; reading 'beta > 1': " \
            f"{'diverges' if gt else 'not reproduced'})"
    first = float(b[div].min()) if div.any() else None
    if ge and gt:
        return ClaimOutcome(True, text, first)
    if gt:
        return ClaimOutcome(None, text + "; the two readings of the stripped threshold disagree", first)
    return ClaimOutcome(None, f"not reproduced ({Tn} rounds, {R} runs per beta): " + text, first)


def _smaller(mm, z=3.0, rtol=1e-9):
    """Supported when mean(samples_a) is below mean(samples_b) by more than z standard errors (paired when 'paired')
    and rtol relative; refuted when it is above by that margin; inconclusive otherwise."""
    A, B = np.asarray(mm["samples_a"], float), np.asarray(mm["samples_b"], float)
    paired = bool(mm.get("paired", False))
    d, se, _ = _diff(A, B, paired)
    text = (f"{mm.get('name_a', 'a')} {np.nanmean(A):.4g} vs {mm.get('name_b', 'b')} {np.nanmean(B):.4g} "
            f"(difference {-d:.3g}, se {se:.2g}{', paired' if paired else ''})")
    if _rises(A, B, paired, z, rtol):
        return ClaimOutcome(True, text, -d)
    if _rises(B, A, paired, z, rtol):
        return ClaimOutcome(False, text, -d)
    return ClaimOutcome(None, text, -d)


def _identical(mm, atol=0.0):
    """Supported when the largest absolute difference between the two trajectories is <= atol; refuted otherwise."""
    d = float(mm["max_abs_diff"])
    return ClaimOutcome(d <= atol, f"max |difference| over rounds, runs and coordinates = {d:.3g} (tolerance {atol:g})", d)


def _strictly_ordered(mm):
    """Supported when the values strictly decrease along the given order; refuted otherwise."""
    v = np.asarray(mm["value"], float)
    names = list(mm["names"])
    text = " > ".join(f"{nm} {vv:.4g}" for nm, vv in zip(names, v))
    ok = bool(np.all(np.diff(v) < 0))
    return ClaimOutcome(ok, ("" if ok else "not strictly decreasing: ") + text, v.tolist())


# ------------------------------------------------------------------------------------ claims on simulations

_c = dict(paper=PAPER, symbols=S_)
CLAIM_BETA0 = Claim(
    id="oledfl.claim.beta0_is_dfedavg", quote="002_750e045df608fece.txt:78: 'When [beta = 0], it degrades to the vanilla DFedAvg method [15].' (symbol stripped); 002_750e045df608fece.txt:111: 'When [beta = 0], it reduces to the vanilla DFedAvg [15]'", title="beta = 0 recovers DFedAvg", source=f"{SEED}, Remark 2 and Remark 4",
    statement="OledFL with beta = 0 is DFedAvg (and OledFL-SAM with beta = 0 is DFedSAM)", predicate=_identical,
    parameters={"atol": 0.0}, measurements=("max_abs_diff",), **_c,
    note="A property of the method (eq. (3) with beta = 0 starts at x_i^t); checked bit for bit on the engine.")
CLAIM_ERROR = Claim(
    id="oledfl.claim.beta_lowers_error", quote="002_750e045df608fece.txt:109: 'Firstly, from the negative coefficient in the last term of Theorem 1, it can be inferred that a larger [beta] value will reduce the optimization error, thereby accelerating the convergence rate.' (symbol stripped)", title="Larger beta lowers the optimization error (beta < 1)",
    source=f"{SEED}, Remark 2 ('a larger beta leads to a smaller optimization error'), Remark 3, Fig. 8(a)",
    statement="(1/T) sum_t ||grad f(x_bar^t)||^2 decreases as beta grows over the admissible beta < 1",
    predicate=_decreasing_in_beta, parameters={"z": 3.0, "rtol": 1e-9},
    measurements=("beta", "samples", "diverged"), **_c,
    note="The measured quantity is Theorem 1's left side as usually stated in DFL analyses (the average squared "
         "gradient norm at the average model); Theorem 1 itself is stripped.")
CLAIM_SPEED = Claim(
    id="oledfl.claim.beta_speeds_convergence", quote="002_750e045df608fece.txt:109: 'As depicted in Figure 8 (a), with the increase in [beta], the convergence curve becomes steeper, demonstrating a faster convergence speed.' (symbol stripped)", title="Larger beta speeds convergence (beta < 1)",
    source=f"{SEED}, Remark 3 ('with the increase in beta, the convergence curve becomes steeper'), Fig. 8(a), Sec. V-D",
    statement="the number of rounds until f(x_bar^t) - f* <= eps decreases as beta grows over beta < 1",
    predicate=_decreasing_in_beta, parameters={"z": 3.0, "rtol": 1e-9},
    measurements=("beta", "samples", "diverged"), **_c,
    note="eps is a fixed fraction of the initial error (the check says which); runs that never reach it count T+1.")
CLAIM_DIVERGE = Claim(
    id="oledfl.claim.diverges_at_beta_ge_1", title="Training diverges beyond beta = 1 (stripped threshold)",
    source=f"{SEED}, Sec. V-D ('When [beta >= 1], the algorithm diverges, which is consistent with the upper bound "
           "of beta ... in Section III-C'), Sec. III-C; issue text",
    statement="beyond the threshold (beta >= 1 or beta > 1; stripped) the algorithm diverges",
    quote="002_750e045df608fece.txt:177: 'It can be seen that under the random bidirectional topology, the optimal "
          "is 0.99. ... When , the algorithm diverges, which is consistent with the upper bound of obtained in the "
          "discussion of its relationship with CA in Section III-C.'",
    predicate=_divergence_at_one, measurements=("beta", "diverged"), **_c,
    note="The stripped condition may be beta >= 1 or beta > 1; the grid holds both 1.0 and 1.1 and each reading is "
         "evaluated. The sentence is about the random bidirectional topology; other topologies are extrapolations. "
         "It does not say that beta < 1 never diverges: that converse is not judged. Compare with the derived limit "
         "oledfl.derived.beta_max.")
CLAIM_CONSISTENCY = Claim(
    id="oledfl.claim.ole_improves_consistency", quote="002_750e045df608fece.txt:8: 'By adopting this initialization operation for each client before optimization, the mutual consistency among them is naturally strengthened.'", title="Ole strengthens consistency among clients",
    source=f"{SEED}, Sec. I and III-C, Fig. 1 ('the mutual consistency among them is naturally strengthened')",
    statement="the spread of the local models (1/m) sum_i ||x_{i,K}^{t-1} - x_bar^t||^2 decreases as beta grows over "
              "beta < 1",
    predicate=_decreasing_in_beta, parameters={"z": 3.0, "rtol": 1e-9},
    measurements=("beta", "samples", "diverged"), **_c,
    note="The DFL analogue of FedInit's Delta^t (local end points against the average they are mixed into), averaged "
         "over the second half of the rounds. The consensus distance of the mixed models (1/m) sum_i ||x_i - x_bar||^2 "
         "and the spread of the starting points are reported beside it (the first is 0 on the fully connected W for "
         "every beta).")
CLAIM_TOPOLOGY = Claim(
    id="oledfl.claim.connectivity_speeds_convergence", quote="002_750e045df608fece.txt:76: 'Additionally, in the dominant term of the convergence rate [...], it can be observed that better topological connectivity leads to a faster convergence rate.' (formula stripped)", title="Better connectivity (smaller lambda) converges faster",
    source=f"{SEED}, Remark 1 ('better topological connectivity leads to a faster convergence rate'), Sec. V-C, Fig. 6",
    statement="rounds to reach eps do not decrease as lambda grows", predicate=_monotone,
    parameters={"direction": "increasing", "z": 3.0, "rtol": 1e-9}, measurements=("x", "samples"), **_c,
    note="x = lambda of each topology (the mean over draws for the random one).")
CLAIM_OPT_BETA = Claim(
    id="oledfl.claim.optimal_beta_vs_lambda", quote="002_750e045df608fece.txt:78: 'better-connected communication topology (implying a smaller [lambda]) corresponds to a smaller optimal value of [beta] for the algorithm.' (symbols stripped)", title="Smaller lambda has a smaller optimal beta",
    source=f"{SEED}, Remark 2 ('better-connected communication topology (implying a smaller lambda) corresponds to a "
           "smaller optimal value of beta'), Sec. V-C, Fig. 7", statement="beta*(topology) is non-decreasing in lambda",
    predicate=_optimal_beta_order, parameters={"z": 3.0, "rtol": 1e-9},
    measurements=("lam", "beta", "samples", "diverged", "names"), **_c,
    note="beta* over the grid {0, 0.3, 0.6, 0.9, 0.99, 1.0, 1.1} by the final optimization error. Compare with the "
         "derived consensus-only optimum oledfl.derived.beta_consensus_opt.")
CLAIM_K = Claim(
    id="oledfl.claim.local_steps_speed", quote="002_750e045df608fece.txt:76: 'Moreover, a larger number of local epochs also leads to a faster convergence rate, as confirmed in Section V-D (see Figure 8 (b)).'", title="More local steps K converge faster",
    source=f"{SEED}, Remark 1 ('a larger number of local epochs also leads to a faster convergence rate'), Sec. V-D, "
           "Fig. 8(b)", statement="rounds to reach eps do not increase with K", predicate=_monotone,
    parameters={"direction": "decreasing", "z": 3.0, "rtol": 1e-9}, measurements=("x", "samples"), **_c)
CLAIM_STAB_BETA = Claim(
    id="oledfl.claim.ole_lowers_stability_gap", quote="002_750e045df608fece.txt:109: 'This implies that with an increase in [beta], the generalization error of the algorithm will decrease, thereby enhancing its generalization performance.' (symbol stripped)", title="Larger beta lowers the generalization (stability) error",
    source=f"{SEED}, Remark 3 ('as beta increases, the terms ... decrease ... the generalization error of the "
           "algorithm will decrease'), Theorem 2",
    statement="the coupled-run stability gap decreases in beta over beta < 1",
    predicate=_decreasing_in_beta, parameters={"z": 3.0, "rtol": 1e-9},
    measurements=("beta", "samples", "diverged"), **_c,
    note="Stability gap = max over the pooled samples z of |f(x_bar^T; z) - f(x~_bar^T; z)| for data sets that differ "
         "in one sample, averaged over coupled pairs that share every random stream (uniform stability's definition).")
CLAIM_STAB_TOPO = Claim(
    id="oledfl.claim.connectivity_lowers_stability_gap", quote="002_750e045df608fece.txt:109: 'Furthermore, from Theorem 2, it can be observed that better topological connectivity (smaller [lambda]) leads to a smaller generalization error, which is validated in Section V-C (see Figure 6).' (symbol stripped)", title="Smaller lambda gives a smaller generalization error",
    source=f"{SEED}, Remark 3 ('better topological connectivity (smaller lambda) leads to a smaller generalization "
           "error'), Fig. 6", statement="the stability gap does not decrease as lambda grows", predicate=_monotone,
    parameters={"direction": "increasing", "z": 3.0, "rtol": 1e-9}, measurements=("x", "samples"), **_c)
CLAIM_REMARK4 = Claim(
    id="oledfl.remark4", quote="002_750e045df608fece.txt:111: 'Compared with the generalization bound of D-SGD proposed by [43], [...], the local epochs in DFedAvg can enhance its generalization, which is consistent with the observation in Figure 2&3.' (formula stripped)", title=f"Remark 4: local steps improve generalization over D-SGD {NA}",
    source=f"{SEED}, Remark 4 (compares with the D-SGD bound of [43]) and Figs. 2-3",
    statement="DFedAvg (K local steps) has a smaller generalization (stability) error than D-PSGD (one step per round) "
              "after the same number of rounds",
    predicate=_smaller, parameters={"z": 3.0, "rtol": 1e-9}, measurements=("samples_a", "samples_b"), **_c,
    note="Both bounds (DFedAvg's at beta = 0 and D-SGD's from [43]) are stripped; the remark compares bounds obtained "
         "through uniform stability, so the measured counterpart is the coupled-run stability gap (as in "
         "oledfl.claim.ole_lowers_stability_gap) at equal rounds. The check also reports the population risk.")
CLAIM_SPARSITY = Claim(
    id="oledfl.claim.sparsity_order", quote="002_750e045df608fece.txt:171: 'In Table V, the degree of sparse connectivity follows the order: Ring Grid Exponential Full-connected [16, 45, 55].'", title="Sparse connectivity order Ring > Grid > Exponential > Full",
    source=f"{SEED}, Sec. V-C and Table V (lambda per topology; the entries are stripped except Full: 0)",
    statement="lambda(ring) > lambda(grid) > lambda(exponential) > lambda(full) = 0", predicate=_strictly_ordered,
    measurements=("value", "names"), **_c)
register(CLAIM_BETA0, CLAIM_ERROR, CLAIM_SPEED, CLAIM_DIVERGE, CLAIM_CONSISTENCY, CLAIM_TOPOLOGY, CLAIM_OPT_BETA,
         CLAIM_K, CLAIM_STAB_BETA, CLAIM_STAB_TOPO, CLAIM_REMARK4, CLAIM_SPARSITY)

# ------------------------------------------------------------------------------------ the paper's tables

TABLE2_COLUMNS_DIR = ("C10 Dir0.3", "C10 Dir0.6", "C10 IID", "C100 Dir0.3", "C100 Dir0.6", "C100 IID")
TABLE2_COLUMNS_PATH = ("C10 Path2", "C10 Path4", "C10 Path6", "C100 Path10", "C100 Path20", "C100 Path30")
TABLE2_DIR = {  # test accuracy (%) mean, +- std; seed 002 Table II, first half
    "FedAvg": ([78.10, 79.00, 81.16, 54.50, 55.69, 56.94], [0.81, 1.04, 0.20, 0.70, 0.72, 0.41]),
    "FedSAM": ([80.22, 81.43, 82.83, 57.76, 58.62, 59.97], [0.70, 0.28, 0.23, 0.36, 0.51, 0.19]),
    "SCAFFOLD": ([78.39, 79.85, 81.75, 60.23, 61.42, 62.75], [0.35, 0.18, 0.23, 0.30, 0.52, 0.31]),
    "D-PSGD": ([59.76, 60.03, 62.93, 55.68, 56.68, 57.60], [0.04, 0.13, 0.12, 0.20, 0.10, 0.12]),
    "DFedAvg": ([77.25, 77.83, 79.97, 58.17, 58.22, 59.00], [0.12, 0.11, 0.08, 0.10, 0.50, 0.31]),
    "DFedAvgM": ([79.30, 80.66, 82.72, 57.79, 58.13, 58.90], [0.24, 0.07, 0.20, 0.29, 0.39, 0.47]),
    "DFedSAM": ([79.37, 80.47, 82.14, 57.67, 58.55, 59.53], [0.07, 0.09, 0.09, 0.20, 0.23, 0.24]),
    "OledFL-SGD": ([82.20, 82.72, 84.10, 60.00, 60.65, 62.58], [0.20, 0.22, 0.24, 0.15, 0.30, 0.21]),
    "OledFL-SAM": ([84.45, 84.70, 85.75, 61.22, 61.78, 63.55], [0.19, 0.10, 0.20, 0.12, 0.22, 0.20]),
}
TABLE2_PATH = {  # seed 002 Table II, second half
    "FedAvg": ([69.01, 75.80, 76.76, 52.12, 55.70, 57.14], [0.96, 1.01, 1.11, 0.70, 0.63, 0.26]),
    "FedSAM": ([69.33, 75.78, 77.55, 52.46, 55.75, 57.60], [1.32, 1.04, 0.68, 0.69, 0.55, 0.36]),
    "SCAFFOLD": ([64.28, 78.08, 80.35, 54.17, 58.32, 60.50], [2.12, 0.39, 0.19, 0.51, 0.67, 0.35]),
    "D-PSGD": ([59.53, 63.80, 64.86, 52.66, 55.79, 56.82], [0.40, 0.22, 0.48, 0.58, 0.11, 0.35]),
    "DFedAvg": ([74.73, 77.50, 79.00, 54.72, 57.57, 58.30], [0.26, 0.25, 0.25, 0.19, 0.11, 0.24]),
    "DFedAvgM": ([75.10, 79.50, 81.07, 48.19, 53.60, 53.95], [0.27, 0.33, 0.27, 0.45, 0.64, 0.85]),
    "DFedSAM": ([75.08, 79.85, 81.36, 53.86, 57.58, 58.80], [0.11, 0.09, 0.11, 0.17, 0.22, 0.21]),
    "OledFL-SGD": ([78.20, 81.54, 83.10, 55.03, 58.87, 59.75], [0.24, 0.25, 0.30, 0.11, 0.13, 0.10]),
    "OledFL-SAM": ([79.58, 83.45, 84.90, 56.68, 60.22, 61.57], [0.18, 0.21, 0.18, 0.16, 0.24, 0.21]),
}
TABLE3_COLUMNS_DIR = ("Dir0.3 Acc@75", "Dir0.3 Acc@77", "Dir0.3 Acc@80", "Dir0.6 Acc@75", "Dir0.6 Acc@77",
                      "Dir0.6 Acc@80", "IID Acc@78", "IID Acc@80", "IID Acc@82")
TABLE3_COLUMNS_PATH = ("Path2 Acc@55", "Path2 Acc@65", "Path2 Acc@70", "Path4 Acc@65", "Path4 Acc@70",
                       "Path4 Acc@75", "Path6 Acc@70", "Path6 Acc@75", "Path6 Acc@80")
_ = None  # '>500' (not reached within the 500 rounds)
TABLE3_DIR = {  # CIFAR-10 rounds to reach the accuracy, (printed speed-up); seed 002 Table III, first half
    "FedAvg": ([141, 244, _, 111, 166, 485, 150, 243, _], [1.3, 1.7, _, 1.4, 1.7, 1.0, 1.2, 2.0, _]),
    "FedSAM": ([141, 202, 402, 121, 165, 296, 142, 199, 363], [1.3, 2.1, 1.2, 1.3, 1.7, 1.7, 1.2, 2.4, 0.8]),
    "SCAFFOLD": ([264, 356, _, 202, 262, 470, 180, 273, _], [0.7, 1.2, _, 0.8, 1.1, 1.1, 1.0, 1.8, _]),
    "D-PSGD": ([_] * 9, [_] * 9),
    "DFedAvg": ([179, 419, _, 152, 283, _, 176, 479, _], [1.0, 1.0, _, 1.0, 1.0, _, 1.0, 1.0, _]),
    "DFedAvgM": ([93, 141, _, 64, 99, 305, 59, 117, 303], [1.9, 3.0, _, 2.4, 2.9, 1.6, 3.0, 4.1, 1.7]),
    "DFedSAM": ([187, 265, _, 155, 203, 414, 143, 212, 452], [1.0, 1.6, _, 1.0, 1.4, 1.2, 1.2, 2.3, 1.1]),
    "OledFL-SGD": ([54, 77, 146, 41, 58, 110, 37, 59, 91], [3.3, 5.4, 3.4, 3.7, 4.9, 4.5, 4.8, 8.1, 5.5]),
    "OledFL-SAM": ([57, 68, 104, 45, 53, 82, 48, 63, 90], [3.1, 6.2, 4.8, 2.9, 5.3, 6.1, 3.7, 7.6, 5.6]),
}
TABLE3_PATH = {  # seed 002 Table III, second half
    "FedAvg": ([137, 283, _, 113, 180, 327, 129, 208, _], [0.5, 0.5, _, 0.5, 0.5, 0.6, 0.5, 0.5, _]),
    "FedSAM": ([156, 313, 453, 119, 172, 333, 132, 225, _], [0.4, 0.4, 0.5, 0.5, 0.5, 0.6, 0.4, 0.5, _]),
    "SCAFFOLD": ([183, 439, _, 122, 172, 287, 114, 182, 439], [0.3, 0.3, _, 0.5, 0.5, 0.7, 0.5, 0.6, 1.1]),
    "D-PSGD": ([340, _, _, _, _, _, _, _, _], [0.2, _, _, _, _, _, _, _, _]),
    "DFedAvg": ([62, 139, 223, 59, 92, 187, 59, 113, _], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, _]),
    "DFedAvgM": ([126, 179, 244, 46, 64, 119, 32, 65, 257], [0.5, 0.8, 0.9, 1.3, 1.4, 1.6, 1.8, 1.7, 1.9]),
    "DFedSAM": ([75, 157, 248, 75, 111, 187, 84, 128, 328], [0.8, 0.9, 0.9, 0.8, 0.8, 1.0, 0.7, 0.9, 1.5]),
    "OledFL-SGD": ([34, 66, 94, 25, 36, 57, 24, 37, 89], [1.8, 2.1, 2.4, 2.4, 2.6, 3.3, 2.5, 3.1, 5.6]),
    "OledFL-SAM": ([44, 88, 117, 30, 41, 63, 31, 43, 83], [1.4, 1.6, 1.9, 2.0, 2.2, 3.0, 1.9, 2.6, 6.0]),
}
TABLE3_HORIZON = 500  # '>500' is read as 500 for the speed-ups, as the printed ones do (e.g. 500/146 = 3.4)
TABLE4_COLUMNS = ("Ring", "Grid", "Exp", "Full")
TABLE4 = {  # CIFAR-10, Dirichlet (value stripped), test accuracy (%); seed 002 Table IV
    "D-PSGD": [51.24, 52.06, 55.58, 65.46],
    "DFedAvg": [63.30, 74.72, 77.11, 78.52],
    "DFedAvgM": [65.49, 76.89, 78.01, 80.14],
    "DFedSAM": [65.12, 77.86, 78.88, 81.04],
    "OledFL-SGD": [71.78, 81.05, 78.73, 81.52],
    "OledFL-SAM": [74.48, 82.95, 79.99, 83.13],
}
DFL_BASELINES = ("D-PSGD", "DFedAvg", "DFedAvgM", "DFedSAM")
OLEDFL = ("OledFL-SGD", "OledFL-SAM")


def tables() -> dict[str, Any]:
    """The transcribed tables, as the table claims receive them."""
    return {"table2_dir": TABLE2_DIR, "table2_path": TABLE2_PATH, "table3_dir": TABLE3_DIR, "table3_path": TABLE3_PATH,
            "table4": TABLE4}


def _t2(mm):
    return [(TABLE2_COLUMNS_DIR, mm["table2_dir"]), (TABLE2_COLUMNS_PATH, mm["table2_path"])]


def _ole_beats_base(mm):
    """Supported when, in every column of both halves of Table II, OledFL-SGD > DFedAvg and OledFL-SAM > DFedSAM
    (means), and OledFL-SAM has the best mean of all nine methods; refuted otherwise (the failures are listed)."""
    fails, margins = [], []
    for cols, tab in _t2(mm):
        for j, col in enumerate(cols):
            for ole, base in (("OledFL-SGD", "DFedAvg"), ("OledFL-SAM", "DFedSAM")):
                d = tab[ole][0][j] - tab[base][0][j]
                margins.append(d)
                if d <= 0:
                    fails.append(f"{col}: {ole} {tab[ole][0][j]} <= {base} {tab[base][0][j]}")
            top = max(tab, key=lambda a: tab[a][0][j])
            if top != "OledFL-SAM":
                fails.append(f"{col}: best is {top}")
    text = f"Ole's gain over its base: min {min(margins):.2f}, max {max(margins):.2f} points over 24 comparisons"
    return ClaimOutcome(not fails, "; ".join(fails) + ("; " if fails else "") + text, min(margins))


def _margin_vs_dfedsam(mm, cifar10_noniid=4.5, cifar10_iid=3.5, cifar100_dir=3.0, cifar100_path=2.6):
    """Sec. V-B: OledFL-SAM beats DFedSAM (means) 'by at least X%' in every CIFAR-10 Dirichlet and Pathological
    column (X = cifar10_noniid), CIFAR-10 IID (cifar10_iid), CIFAR-100 Dirichlet incl. IID / Pathological
    (cifar100_dir / cifar100_path). '%' may mean accuracy points or percent relative to DFedSAM: both readings are
    evaluated. Supported when every column holds under both; refuted when some column fails under both (those
    columns listed; measured = their number); inconclusive when the readings disagree on every failing column
    (the text decides, not the table)."""
    need = {}
    for j, col in enumerate(TABLE2_COLUMNS_DIR):
        thr = cifar100_dir if col.startswith("C100") else cifar10_iid if col == "C10 IID" else cifar10_noniid
        need[("dir", j)] = (col, thr)
    for j, col in enumerate(TABLE2_COLUMNS_PATH):
        need[("path", j)] = (col, cifar100_path if col.startswith("C100") else cifar10_noniid)
    fails_pts, fails_rel, rows, both = [], [], [], []
    for (half, j), (col, thr) in need.items():
        tab = mm["table2_dir"] if half == "dir" else mm["table2_path"]
        base = tab["DFedSAM"][0][j]
        d = tab["OledFL-SAM"][0][j] - base
        rel = 100.0 * d / base
        rows.append(f"{col} {d:.2f} pts ({rel:.2f}% rel.)")
        if d < thr - 1e-9:
            fails_pts.append(f"{col}: {d:.2f} < {thr:g} points")
        if rel < thr - 1e-9:
            fails_rel.append(f"{col}: {rel:.2f}% < {thr:g}% relative")
        if d < thr - 1e-9 and rel < thr - 1e-9:
            both.append(f"{col} ({d:.2f} points, {rel:.2f}% relative < {thr:g})")
    text = ("reading 'points': " + ("; ".join(fails_pts) if fails_pts else "all hold")
            + ". reading 'relative %': " + ("; ".join(fails_rel) if fails_rel else "all hold")
            + ". gains: " + ", ".join(rows))
    if not fails_pts and not fails_rel:
        return ClaimOutcome(True, text, 0)
    if both:
        return ClaimOutcome(False, "below the stated margin under both readings: " + "; ".join(both) + ". " + text,
                            len(both))
    return ClaimOutcome(None, "the two readings of '%' disagree on every failing column: " + text, 0)


def _speedup_arithmetic(mm, tol=0.05):
    """Every printed speed-up in Table III equals DFedAvg's rounds / the method's rounds ('>500' read as 500), rounded
    to one decimal: supported when all |printed - ratio| <= tol (+1e-9); refuted otherwise (entries listed)."""
    fails, count = [], 0
    for half, cols in (("table3_dir", TABLE3_COLUMNS_DIR), ("table3_path", TABLE3_COLUMNS_PATH)):
        tab = mm[half]
        base = tab["DFedAvg"][0]
        for alg, (rounds, printed) in tab.items():
            for j, p in enumerate(printed):
                if p is None:
                    continue
                count += 1
                ratio = (base[j] or TABLE3_HORIZON) / (rounds[j] or TABLE3_HORIZON)
                if abs(ratio - p) > tol + 1e-9:
                    fails.append(f"{alg} {cols[j]}: printed {p:g}, {base[j] or '>' + str(TABLE3_HORIZON)}/"
                                 f"{rounds[j] or '>' + str(TABLE3_HORIZON)} = {ratio:.2f}")
    return ClaimOutcome(not fails, (f"{len(fails)} of {count} printed speed-ups disagree with their rounds: "
                                    + "; ".join(fails)) if fails else f"all {count} printed speed-ups match", len(fails))


def _speedup_claim(mm, at_least=3.0, up_to=8.0, scope="Dir0.3"):
    """Sec. V-B: Ole gives 'at least 3x' speed-up to both DFedAvg (OledFL-SGD vs DFedAvg) and DFedSAM (OledFL-SAM vs
    DFedSAM) in the stated scope (the sentence's example, CIFAR-10 Dir 0.3; censored '>500' entries give lower
    bounds) and 'up to 8x' somewhere in Table III. Supported when both hold; the detail also gives the minimum over
    all of Table III."""
    def ratios(half, cols):
        tab = mm[half]
        out = []
        for ole, base in (("OledFL-SGD", "DFedAvg"), ("OledFL-SAM", "DFedSAM")):
            for j, col in enumerate(cols):
                r, b = tab[ole][0][j], tab[base][0][j]
                if r is None:
                    continue
                out.append((f"{ole}/{base} {col}", (b or TABLE3_HORIZON) / r, b is None))
        return out
    allr = ratios("table3_dir", TABLE3_COLUMNS_DIR) + ratios("table3_path", TABLE3_COLUMNS_PATH)
    scoped = [x for x in allr if scope in x[0]]
    low = min(scoped, key=lambda x: x[1])
    low_all = min(allr, key=lambda x: x[1])
    top = max(allr, key=lambda x: x[1])
    ok = low[1] >= at_least - 1e-9 and top[1] >= up_to - 0.05
    text = (f"in {scope}: min {low[1]:.2f}x ({low[0]}{', lower bound' if low[2] else ''}); max over Table III "
            f"{top[1]:.2f}x ({top[0]}); min over all of Table III {low_all[1]:.2f}x ({low_all[0]})")
    return ClaimOutcome(ok, text, low[1])


def _robustness_drops(mm, stated=None, tol=0.01):
    """Sec. V-B: the IID -> Dir 0.3 accuracy drops on CIFAR-10 stated in the text equal the Table II differences
    (tolerance 0.01: two values rounded to 0.01), and OledFL-SAM's is the smallest of those listed."""
    stated = stated or {"OledFL-SAM": 1.3, "DFedSAM": 2.76, "DFedAvgM": 3.42, "DFedAvg": 2.72, "D-PSGD": 3.17,
                        "FedAvg": 3.06}
    tab = mm["table2_dir"]
    rows, fails = [], []
    for alg, s in stated.items():
        d = tab[alg][0][2] - tab[alg][0][0]
        rows.append(f"{alg} {d:.2f} (stated {s:g})")
        if abs(d - s) > tol + 1e-9:
            fails.append(f"{alg}: table gives {d:.2f}, text {s:g}")
    drops = {a: tab[a][0][2] - tab[a][0][0] for a in stated}
    if min(drops, key=drops.get) != "OledFL-SAM":
        fails.append("OledFL-SAM's drop is not the smallest")
    return ClaimOutcome(not fails, "; ".join(fails + rows), len(fails))


SGD_BASELINES = ("D-PSGD", "DFedAvg", "DFedAvgM")  # the baselines without SAM (like-for-like for OledFL-SGD)


def _topology_best(mm):
    """Sec. V-C: 'OledFL consistently achieves higher test set accuracy compared to other DFL baselines across
    various topologies' (Table IV, no standard deviations). Three readings: (strict) each OledFL variant beats every
    DFL baseline in every column; (like for like) OledFL-SGD beats the non-SAM baselines and OledFL-SAM beats all;
    (best variant) OledFL's best variant beats every baseline. Supported when every reading holds, refuted when
    none does, inconclusive when they disagree (the text decides, not the table). measured: the number of
    exceptions under each reading; the exceptions are listed."""
    tab = mm["table4"]
    ex = {"strict": [], "like for like": [], "best variant": []}
    for j, col in enumerate(TABLE4_COLUMNS):
        for ole in OLEDFL:
            for base in DFL_BASELINES:
                if tab[ole][j] <= tab[base][j]:
                    e = f"{col}: {ole} {tab[ole][j]} <= {base} {tab[base][j]}"
                    ex["strict"].append(e)
                    if ole == "OledFL-SAM" or base in SGD_BASELINES:
                        ex["like for like"].append(e)
        best = max(OLEDFL, key=lambda a: tab[a][j])
        for base in DFL_BASELINES:
            if tab[best][j] <= tab[base][j]:
                ex["best variant"].append(f"{col}: {best} {tab[best][j]} <= {base} {tab[base][j]}")
    held = {k: not v for k, v in ex.items()}
    gain = tab["OledFL-SAM"][0] - tab["DFedSAM"][0]
    text = ("; ".join(f"reading '{k}': " + ("holds" if not v else f"{len(v)} exception(s): " + "; ".join(v))
                      for k, v in ex.items())
            + f". Ring gain of Ole on DFedSAM {gain:.2f} points (text: 'over 9%')")
    verdict = True if all(held.values()) else False if not any(held.values()) else None
    return ClaimOutcome(verdict, text, {k: len(v) for k, v in ex.items()})


def _kendall_S(x) -> int:
    """Kendall's S = concordant - discordant pairs of (position, x)."""
    x = list(x)
    return sum((1 if x[j] > x[i] else -1 if x[j] < x[i] else 0) for i in range(len(x)) for j in range(i + 1, len(x)))


def _topology_trend(mm, algorithms=OLEDFL, alpha=0.05):
    """Sec. V-C: 'there is a general trend: as the sparse connectivity decreases, the accuracy of our proposed
    algorithm on the test set increases' (connectivity order Ring, Grid, Exp, Full). Read as a trend, not as
    monotonicity: Kendall's S between the connectivity rank and Table IV's accuracy, summed over the listed algorithms
    (stratified), tau = S / S_max, with its exact one-sided p-value under the no-trend null (every ordering of each
    algorithm's entries equally likely; exact enumeration). Supported: tau > 0 and p <= alpha; refuted: tau <= 0 (the
    trend is absent or contrary); inconclusive: a positive trend the entries cannot establish (p > alpha). The
    exceptions (discordant pairs) are listed, and the baselines' taus are shown for contrast. measured: tau."""
    from itertools import permutations

    tab = mm["table4"]
    S_obs, S_max, dists, exc, rows = 0, 0, [], [], []
    for alg in tab:
        acc = list(tab[alg])
        n = len(acc)
        Sa = _kendall_S(acc)
        rows.append(f"{alg} tau {Sa / (n * (n - 1) / 2):+.2f}")
        if alg not in algorithms:
            continue
        S_obs += Sa
        S_max += n * (n - 1) // 2
        dists.append([_kendall_S(p) for p in permutations(range(n))])
        exc += [f"{alg}: {TABLE4_COLUMNS[i]} {acc[i]} > {TABLE4_COLUMNS[j]} {acc[j]}" for i in range(n)
                for j in range(i + 1, n) if acc[i] > acc[j]]
    tot, offset = np.ones(1, int), 0  # exact distribution of the stratified S: convolution of the per-algorithm ones
    for d in dists:
        lo = min(d)
        tot = np.convolve(tot, np.bincount(np.asarray(d) - lo))
        offset += lo
    vals = np.arange(tot.size) + offset
    p = float(tot[vals >= S_obs].sum() / tot.sum())
    tau = S_obs / S_max
    text = (f"stratified Kendall tau {tau:+.3f} (S = {S_obs} of {S_max}) over {', '.join(algorithms)}; exact one-sided "
            f"p = {p:.3g} (alpha {alpha:g}); exceptions: " + ("; ".join(exc) if exc else "none")
            + "; per algorithm: " + ", ".join(rows))
    if tau <= 0:
        return ClaimOutcome(False, text, tau)
    return ClaimOutcome(True if p <= alpha else None, text, tau)


_t = dict(paper=PAPER, symbols=S_, measurements=("table2_dir", "table2_path", "table3_dir", "table3_path", "table4"))
TCLAIM_BEATS = Claim(
    id="oledfl.table.ole_beats_base", quote="002_750e045df608fece.txt:147: 'The results show that under various non-IID settings, our method consistently outperforms other methods'", title="Ole improves DFedAvg and DFedSAM in every setting; OledFL-SAM is best",
    source=f"{SEED}, Sec. V-B 'Performance Analysis' ('our method consistently outperforms other methods'), Table II",
    statement="OledFL-SGD > DFedAvg and OledFL-SAM > DFedSAM in all 12 columns; OledFL-SAM best in each",
    predicate=_ole_beats_base, **_t)
TCLAIM_MARGIN = Claim(
    id="oledfl.table.margin_vs_dfedsam", title="Margins over DFedSAM stated in Sec. V-B",
    source=f"{SEED}, Sec. V-B ('outperforms ... DFedSAM by at least 4.5% in both Dirichlet and Pathological "
           "distributions ... IID ... at least 3.5% ... CIFAR-100 ... at least 3% ... at least 2.6%'), Table II",
    statement="OledFL-SAM - DFedSAM >= 4.5 (CIFAR-10 non-IID), 3.5 (CIFAR-10 IID), 3 (CIFAR-100 Dir), 2.6 (CIFAR-100 Path)",
    predicate=_margin_vs_dfedsam,
    parameters={"cifar10_noniid": 4.5, "cifar10_iid": 3.5, "cifar100_dir": 3.0, "cifar100_path": 2.6},
    quote="002_750e045df608fece.txt:147: 'on the CIFAR-10 dataset, our method outperforms the previous SOTA method "
          "DFedSAM by at least 4.5% in both Dirichlet and Pathological distributions. Even in the IID case, our method "
          "also outperforms DFedSAM by at least 3.5%.'",
    note="Read over every non-IID column; '%' read both as accuracy points and as percent relative to DFedSAM, decided "
         "only where the readings agree. Restricted to the most heterogeneous columns (Dir 0.3, Path 2) the CIFAR-10 "
         "margins are 5.08 and 4.50 points.", **_t)
TCLAIM_ARITH = Claim(
    id="oledfl.table.speedup_arithmetic", quote="002_750e045df608fece.txt:150: 'In terms of convergence speed, parameter initialization helps both the DFedAvg and DFedSAM algorithms achieve at least 3 speedup, and in some cases, even up to 8 speedup' (the printed speed-ups of Table III are what this row recomputes)", title="Table III's printed speed-ups match its round counts",
    source=f"{SEED}, Table III (speed-up in parentheses, relative to DFedAvg)",
    statement="printed speed-up = rounds(DFedAvg) / rounds(method), '>500' read as 500", predicate=_speedup_arithmetic,
    parameters={"tol": 0.05}, **_t)
TCLAIM_SPEEDUP = Claim(
    id="oledfl.table.speedup", quote="002_750e045df608fece.txt:150: 'In terms of convergence speed, parameter initialization helps both the DFedAvg and DFedSAM algorithms achieve at least 3 speedup, and in some cases, even up to 8 speedup, which coincides with our theoretical analysis'", title="Ole gives at least 3x and up to 8x speed-up",
    source=f"{SEED}, Sec. V-B 'Impact of Ole Parameter' and abstract ('up to ... 8x speedup'), Table III",
    statement="OledFL-SGD/DFedAvg and OledFL-SAM/DFedSAM speed-ups >= 3 on CIFAR-10 Dir 0.3; max >= 8",
    predicate=_speedup_claim, parameters={"at_least": 3.0, "up_to": 8.0, "scope": "Dir0.3"}, **_t)
TCLAIM_ROBUST = Claim(
    id="oledfl.table.robustness", quote="002_750e045df608fece.txt:148: 'For instance, on the CIFAR-10 dataset, under the Dirichlet distribution, the performance of our algorithm OledFL-SAM only decreases by 1.3% from the IID to Dir 0.3, which significantly outperforms DFedSAM (2.76%), DFedAvgM (3.42%), DFedAvg (2.72%), D-PSGD (3.17%), and FedAvg (3.06%), respectively.'", title="Accuracy drops from IID to Dir 0.3 quoted in Sec. V-B",
    source=f"{SEED}, Sec. V-B 'Impact of non-IID levels', Table II",
    statement="1.3, 2.76, 3.42, 2.72, 3.17, 3.06 as printed",
    predicate=_robustness_drops, parameters={"tol": 0.01}, **_t)
TCLAIM_TOPO_BEST = Claim(
    id="oledfl.table.topology_best", title="OledFL beats the DFL baselines on every topology",
    source=f"{SEED}, Sec. V-C 'Impact of Sparse Connectivity', Table IV",
    statement="OledFL > each DFL baseline, per topology (three readings of 'OledFL', see the predicate)",
    predicate=_topology_best,
    quote="002_750e045df608fece.txt:171: 'Furthermore, OledFL consistently achieves higher test set accuracy compared "
          "to other DFL baselines across various topologies.'",
    note="Table IV has no standard deviations, so no seed-noise rule can be applied; the one strict exception "
         "(OledFL-SGD vs DFedSAM on Exp, 0.15 points) compares an SGD variant with a SAM baseline.", **_t)
TCLAIM_TOPO_TREND = Claim(
    id="oledfl.table.topology_trend", title="OledFL's accuracy increases with connectivity",
    source=f"{SEED}, Sec. V-C ('as the sparse connectivity decreases, the accuracy ... increases'; 'OledFL generally "
           "increases with better topological connectivity, confirming Remarks 1&3'), Table IV",
    statement="OledFL-SGD and OledFL-SAM accuracy trends upward along Ring, Grid, Exp, Full (a trend, not monotone)",
    predicate=_topology_trend, parameters={"alpha": 0.05},
    quote="002_750e045df608fece.txt:171: 'It can be observed that there is a general trend: as the sparse "
          "connectivity decreases, the accuracy of our proposed algorithm on the test set increases.'",
    note="Read as a trend (stratified Kendall tau with an exact permutation p-value), not as monotonicity; the "
         "exceptions (Grid above Exp for both variants) are listed. The p-value measures how far 8 entries can "
         "establish a trend, not seed noise (Table IV gives none).", **_t)
register(TCLAIM_BEATS, TCLAIM_MARGIN, TCLAIM_ARITH, TCLAIM_SPEEDUP, TCLAIM_ROBUST, TCLAIM_TOPO_BEST, TCLAIM_TOPO_TREND)
