"""Plug-in: FedInit (Sun, Shen, Tao, NeurIPS 2023), seed 000/001: Theorems 1-6, Lemmas 2-4, eqs. (3), (15), claims,
the worst-case declarations of Thms 1-2 (``fedtheory worst``), and the claims about its CIFAR experiments.

* ``records``: what the paper states (sympy records);
* ``checks``: the checks on the built-in problems;
* ``worst``: the worst-case search and PEP declarations;
* ``experiments``: the claims about the paper's experiments and their checks on logged runs (``check --runs DIR``).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the worst-case declarations
from . import experiments  # noqa: F401 - registers the experiment claims and their checks on logged runs
# isort: on
