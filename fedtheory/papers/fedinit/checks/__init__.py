"""FedInit's checks on problems with known constants, one file per seam of the paper:

* ``common``: the problems, the largest step all of Thms 1-6's conditions allow (``admissible_eta``), the runs at the
  admissible and practice settings the bounds share, the values a bound is evaluated at;
* ``bounds``: Thms 1, 2, 4, 5 and Lemmas 2-4 on those runs; Thm 4 at partial participation;
* ``stability``: Thm 3 on coupled runs over neighbouring data sets;
* ``excess_risk``: the bound composed from eq. (3), Thm 2 and Thm 3, and the claim that its divergence term dominates;
* ``identities``: eqs. (15) and (3) (implementation self-checks by design);
* ``claims``: the claims about beta, K and the unbiased start;
* ``rates``: the stated orders (symbolic), the poster's printing of Thm 3, Thm 1's measured rate.

Settings (quick profile; the full profile uses more seeds, rounds and problems): admissible, every client trains
(N = C = 10), K = 5, beta in {0, 0.05, 0.1}, additive gradient noise of exact variance sigma_l^2 = 0.05 and the
largest step all of Thms 1-6's step-size conditions allow at beta = 0.1; practice, the paper's experimental choices
(eta = 0.1, beta = 0.1, K = 5; seed 000 App. B.1, Table 6) on the same problems, where the conditions fail;
stability, coupled runs on neighbouring data sets (one sample replaced), single-sample SGD.

Every bound row's vacuity comes from its record's lhs_kind and the run's visited region (visited_max_dist2, L, K,
U); records that carry eq. (14)'s divergence factor are decided under both of its readings
(records.DIVERGENCE_READINGS) and joined with combine_readings; claims decided from seeds use the statistics policy;
every identity / claim / rate check declares a negative control or says why it is a self-check by design.
"""
# in the paper's order (the order of the results): bounds, stability, identities, excess risk, claims, rates
from . import bounds, stability, identities, excess_risk, claims, rates  # noqa: F401,I001 - registers the checks
from .common import admissible_eta
from .stability import stability_problem

__all__ = ["admissible_eta", "stability_problem"]
