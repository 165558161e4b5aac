"""Plug-in: FedMRUR (An, Shen, Hu, Luo, NeurIPS 2023) and MoFedSAM's bound, seed 003: Theorem 1 (Phi), Remark 2,
claims, the worst-case declarations of eq. (7) and MoFedSAM's Thm D.7 (``fedtheory worst``), and the statements
about its experiments.

* ``algorithms``: MoFedSAM, FedMRUR and its ablations (registered for ``fedtheory train``), built from the core's
  rules (``fedtheory.sim.hyperbolic``);
* ``records``: what the paper states (sympy records);
* ``checks``: the checks on the built-in problems;
* ``worst``: the worst-case search declarations;
* ``experiments``: the statements about the experiments and their checks on logged runs (``check --runs DIR``).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import algorithms  # noqa: F401 - registers MoFedSAM and FedMRUR
from . import records  # noqa: F401 - registers the records
from . import experiments  # noqa: F401 - registers the experiment statements and their checks on logged runs
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the worst-case declarations
# isort: on
