"""OledFL's checks: mixing matrices, Ole's identities, the Remarks' claims on gossip simulations, the paper's tables.

Theorems 1 and 2 of seed 002 lost their formulas (records.py): no bound or rate can be evaluated, and their check says
so (``tables``). One file per seam:

* ``common``: the problem and run settings, the per-topology helpers, the join over the two readings of W;
* ``mutations``: the mutated simulators the negative controls run;
* ``sweep``: the Remarks' claims on the beta x topology sweep (error, speed, consistency, divergence at beta >= 1,
  optimal beta against lambda, connectivity);
* ``stability``: Remark 3's stability claims on coupled runs;
* ``local_steps``: more local steps converge faster (Remark 1); DFedAvg generalizes better than D-PSGD (Remark 4);
* ``identities``: eq. (3), the CA form, the laziness equivalence, beta = 0 is DFedAvg, eq. (6) on the engine;
* ``mixing``: Definition 1 and Lemma 3 on the five topologies at the paper's m = 100 (exact linear algebra), the
  sparsity order;
* ``tables``: Theorems 1-2 (no formulas) and the paper's Tables II-IV against the text's claims about them.

The claims run on heterogeneous least squares with known constants (L, mu, f*, exact population risk), every client
training every round, the paper's step size 0.1 decayed by 0.998 per round, K = 5, additive gradient noise of exact
variance sigma^2 = 0.01, the beta grid {0, 0.3, 0.6, 0.9, 0.99, 1.0, 1.1} and the five topologies, each with
Metropolis weights and with the lazy Metropolis W (a = 1/2, positive semi-definite). Runs of one sweep share seeds,
data and start, so comparisons across beta or topology are paired. Claims are decided under the statistics policy
(``StatsPolicy``: Student-t, Bonferroni over a claim's comparisons and rows, the records' min_effect, >= 10 seeds to
refute). Quick: m = 25 clients, 10 seeds, 150 rounds; full: m = 49, 12 seeds, 400 rounds. Every check of a claim or an
identity declares a negative control (a mutated simulator, record, setting or table under which it must report a
finding), or says why it is a self-check by design.
"""
# in the order of the results: sweep, stability, local steps, identities, mixing matrices, theorems and tables
from . import sweep, stability, local_steps, identities, mixing, tables  # noqa: F401,I001 - registers the checks
