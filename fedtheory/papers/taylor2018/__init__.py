"""Plug-in (zoo): A. Taylor, J. Hendrickx, F. Glineur, *Exact worst-case convergence rates of the proximal gradient
method for composite convex minimization*, JOTA 178 (2018), arXiv:1705.04398, Theorem 3.1 with f_2 = 0 (gradient
descent on an L-smooth mu-strongly convex f, tight on quadratics). The statement is written once, in ``records``.

* ``records``: the bound and its source (``register_paper(..., collection="zoo")``);
* ``checks``: least squares (random, and the two-eigenvalue quadratic on which the bound is attained) at
  gamma = 2/(L + mu), 1/L and 1.9/L;
* ``worst``: the PEP (exact for one client) and the search over quadratics (the class where the bound is attained).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the PEP and worst-case declarations
# isort: on
