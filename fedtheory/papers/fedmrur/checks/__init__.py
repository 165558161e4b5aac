"""FedMRUR's checks: Theorem 1 (eq. 7) and MoFedSAM's bound on problems with known constants, Remark 2, the
identities of normalized aggregation and of the Lorentz model, R's smoothness, the rate check, and the claims.
One file per seam:

* ``common``: the constants and step sizes Theorem 1 admits, the problems, the batches of runs per setting;
* ``bounds``: Theorem 1, MoFedSAM's Theorem D.7, Remark 2 on the runs, the regularizer's smoothness r;
* ``identities``: Fig. 2's norm identities and d_t >= 1, eq. (3)'s Lorentz distance;
* ``statement``: Theorem 1's hypotheses as printed;
* ``algorithm1``: Algorithm 1's server step as printed;
* ``claims``: the claims about the updates, the aggregation, the speed, the components and participation;
* ``symbolic``: eq. (8)'s order and printed sum against eq. (7), Remark 2 for every value.

Settings (quick profile; the full profile uses more seeds and rounds):
* problems: the PL non-convex problem (L = 8 and sigma_g^2 = (1/N) sum_p ||h_p||^2 exact; no representation,
  so FedMRUR runs without the regularizer there: FedMRUR-N, r = 0) and synthetic logistic regression (L a
  valid bound; sigma_g^2 a valid bound, see ``logistic_sigma_g2_bound``; the regularizer on the logits with
  gamma = 0.05, sigma = 10, beta = 1, and r the bound of ``fedtheory.sim.hyperbolic.r_bound`` over the region the
  runs visited). N = 10 clients, S = 5 per round, K = 5, alpha = 0.1, additive gradient noise of exact
  variance sigma_t^2 = 0.05.
* Two readings of the global step (the seed does not say which its proof uses; module note of
  fedtheory.papers.fedmrur.algorithms): A, Alg. 1 as printed, w^{t+1} = w^t - eta_g Delta^{t+1} with Delta in
  displacement units (the paper's eta_g = 1 is then plain averaging); B, Delta in gradient units (divided by K eta_l, as
  FedCM/MoFedSAM scale their momentum), i.e. the simulator's server step is eta_g/(K eta_l). The theorem's
  eta_g and eta_l are the same in both; each is run at settings where every condition of Theorem 1 holds
  (eta_g = 0.9 S/(2 alpha L (S-1)), eta_l leaving C_max at half its eta_l = 0 value).
* practice: the paper's Sec. 5.1 choices (eta_l = 0.1, eta_g = 1, alpha = 0.1, rho = 0.5; for the regularizer
  gamma = 0.005, sigma = 10^4, beta = 1) on the same problems, where Theorem 1's conditions fail.
* Theorem 1 holds 'for all T >= 1' and the step sizes do not depend on T, so the first T' rounds of a run are a
  run of horizon T': eq. (7) and MoFedSAM's bound are checked at every horizon T' (compare_rounds: violated when
  some horizon is significant after Holm-Bonferroni over the horizons, one-sided Student-t tests over the seeds at
  family-wise level 1.35e-3; the family size and the seeds are reported).
* Readings (the records' ``readings``): Assumption 3 (eq. 6, 'E||grad F_p(x) - grad F(x)||^2 <= sigma_g^2') as
  the client mean or per client (sigma_g^2 exact on the PL problem, a valid bound of each on the logistic one),
  times the index of eq. (7)'s average (t = 1..T as printed, or the rounds t = 0..T-1 as Algorithm 1 runs them).
  Each row is decided under all four and joined by ``combine_readings``: a verdict counts only when every reading
  gives it; otherwise the row is 'ambiguous', with each reading's verdict.
* Rule 8 (docs/verdict-rules.md): Theorem 1 is inconsistent in units under both readings of eta_g (under A eq. (7)'s
  first term D/(C alpha eta_g sum_t d_t) is a loss over a displacement step; under B Phi's terms and C_max's
  '1 - alpha L' are). Both readings are decided by the same rule: a row escalates the units erratum to false as
  stated where it is violated on the run as measured, or on a rescaled run inside rule 8's regime (every value of
  the statement within a factor 10 of the run's); the two readings of eta_g are then joined like any readings
  (``join_step_readings``): a violation counts only where both give it.
* Trivial bounds (vacuity): the left sides are averages of ||grad f(w^t)||^2, at most L^2 R^2 with R^2 the
  largest ||w - w*||^2 the run visited (the measure visited_max_dist2).
* Claims are decided under the statistics policy (``claim_result``: Student-t, Bonferroni over the check's rows,
  the record's min_effect, >= 10 seeds to refute); the quick profile runs 10 seeds per setting, the full one 24.
The three settings of one algorithm run as one batch (per-run step sizes).
"""

# in the order of the results: bounds, identities, the statement, Algorithm 1, claims, symbolic
from . import bounds, identities, statement, algorithm1, claims, symbolic  # noqa: F401,I001 - registers the checks
from .common import admissible_steps, bound_problems, c_max, logistic_sigma_g2_bound
from .bounds import join_step_readings

__all__ = ["admissible_steps", "bound_problems", "c_max", "join_step_readings", "logistic_sigma_g2_bound"]
