"""Plug-in: OledFL (Li, Zhang, Wang, Yin, Shen 2024), seed 002: stated orders, Definition 1, claims and tables.

* ``records``: what the paper states (sympy records);
* ``checks``: the checks on the built-in problems (gossip algorithms on the paper's topologies).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
# isort: on
