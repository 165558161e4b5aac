"""Plug-in (zoo): Y. Drori and M. Teboulle, *Performance of first-order methods for smooth convex minimization: a
novel approach*, Math. Program. 145 (2014), arXiv:1206.3209, Theorem 3.1 (gradient descent on an L-smooth convex
function, tight). The statement is written once, in ``records``; the other files refer to it.

* ``records``: the bound and its source (a trusted theorem: ``register_paper(..., collection="zoo")``);
* ``checks``: least squares, Huber regression and D&T's one-dimensional Huber instance (where the bound is attained),
  inside the step condition, at its edge h = 1 and outside it;
* ``worst``: the PEP (exact for one client: plain GD) and the worst-case search over quadratics.
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the PEP and worst-case declarations
# isort: on
