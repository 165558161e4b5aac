"""FedShift's checks: Theorem 2 (both printed forms) and eq. (11) as identities on measured rounds, the sign
conditions (31)/(32), Theorem 1 on a problem with known constants, the empirical claims, and the algebra. One file
per seam:

* ``common``: the profile sizes and the mixed-precision batches the identities and claims share;
* ``theorem2``: Theorem 2, eq. (11) and conditions (31)/(32) on measured rounds;
* ``algebra``: Theorem 2's algebra from the definitions (symbolic);
* ``theorem1_symbolic``: Theorem 1's denominator, proof, printings and stated rate (symbolic);
* ``theorem1``: Theorem 1's bound on runs, and its measured rate;
* ``claims``: the claims about divergence, drift, the weight mean and every bit width.

Settings (quick profile; the full profile uses more seeds, rounds and bit widths):
* divergence runs: heterogeneous least squares (10 clients, d = 32), 4 of 10 clients per round, the
  odd-indexed clients inferior with 4-bit k-means, additive gradient noise; each seed runs with and
  without the shift (same client sampling). D_FA and D_FS come from the same round of the same run.
* digits runs: scikit-learn digits, logistic regression, FedShift's label-parity split (Fig. 6), odd-label
  clients inferior, 4 of 10 clients per round, layers = (pixel weights, bias), bits 4..8, uniform and
  k-means, with and without the shift.
* Theorem 1: least squares (10 clients, d = 10), full participation, half the clients inferior, no
  quantization (the theorem has none), eta_tau = beta/(tau + gamma) at every local step with the
  paper's beta = 2/mu and gamma = max{8L/mu, E} - 1; and the paper's practice (a constant step).

What shows that each check can fail (docs/verdict-rules.md, rule 2): Theorem 1's bound rows are judged against
the run's trivial bound (L/2) max ||w - w*||^2 over every visited point; the appendix form of Theorem 2 has the
printed eq. (12) as its negative control; the denominator check has the condition at the first step only; the rate
checks have the stated order one power of tau faster; the claims have the same least-squares problem with its
optimum translated by 2 RMS(w*) 1_P, where the shift works against local training every round. Eq. (11) and the
measured sign rule (31)/(32) are self-checks by design (arithmetic of the simulator's own shift).
"""

# in the order of the results: Theorem 2 on rounds, its algebra, Theorem 1 symbolically and on runs, the claims
from . import theorem2, algebra, theorem1_symbolic, theorem1, claims  # noqa: F401,I001 - registers the checks
from .theorem1 import EPS_GRID
from .theorem2 import counterexample_text

__all__ = ["EPS_GRID", "counterexample_text"]
