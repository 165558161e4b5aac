"""Plug-in: FedShift (Seo, Kim, Rong), seed 004: Theorems 1-2, eqs. (11), (12), (30), claims, the worst-case
declarations of Theorem 1 (``fedtheory worst``), and Theorem 2 on logged runs.

* ``algorithms``: FedShift on any base algorithm (registered for ``fedtheory train``; the core's mixed-precision
  uplink, ``fedtheory.sim.mixed_precision``) and the digits problem with the paper's label-parity split;
* ``records``: what the paper states (sympy records);
* ``checks``: the checks on the built-in problems;
* ``worst``: the worst-case search declarations;
* ``experiments``: Theorem 2 on runs logged by ``fedtheory train`` (``check --runs DIR``).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import algorithms  # noqa: F401 - registers FedShift
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the worst-case declarations
from . import experiments  # noqa: F401 - registers Theorem 2's check on logged runs
# isort: on
