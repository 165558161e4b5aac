"""Zoo: Yuan, Ling & Yin 2016 (arXiv:1310.7063v3), decentralized gradient descent: Lemma 1 (consensus), Theorem 1
(the stacked gradient bound (10)) and Theorem 3 (linear convergence of the mean to a neighbourhood of x*). Importing the
package registers the records and the checks."""
from . import checks, measures, records, worst  # noqa: F401
