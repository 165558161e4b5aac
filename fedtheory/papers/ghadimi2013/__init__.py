"""Plug-in (zoo): S. Ghadimi and G. Lan, *Stochastic first- and zeroth-order methods for nonconvex stochastic
programming*, SIAM J. Optim. 23 (2013), arXiv:1309.5549, Theorem 2.1(a) and Corollary 2.2: SGD with a random output
index (the RSG method) on an L-smooth, possibly non-convex f. The statements are written once, in ``records``.

* ``records``: Thm 2.1(a) with a constant step, Cor. 2.2 (``register_paper(..., collection="zoo")``);
* ``checks``: a one-dimensional quadratic (exact gradients: the bound attained at gamma = 1/L), a non-convex
  separable PL function and least squares with additive noise, at gamma = 1/L and 1.9/L (the edge of gamma < 2/L)
  and outside (2/L); Cor. 2.2 at its step rule for three horizons;
* ``worst``: the PEP of Thm 2.1(a) at sigma = 0 (L-smooth non-convex class).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the PEP declaration
# isort: on
