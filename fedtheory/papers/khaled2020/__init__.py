"""Plug-in (zoo): A. Khaled, K. Mishchenko, P. Richtarik, *Tighter theory for local SGD on identical and
heterogeneous data*, AISTATS 2020, arXiv:1909.04746: local SGD with a constant step on identical data (strongly
convex) and on heterogeneous data (convex).

No public copy of the theorems could be read: both records are written from memory and marked
``transcription='unverified: ...'`` (a finding on them is shown, listed apart, not counted).

* ``records``: the two bounds (with additive noise, the oracle they require: see records.py);
* ``checks``: identical and heterogeneous least squares with additive gradient noise, inside the step conditions,
  at their edge and outside;
* ``worst``: the PEP of each bound at sigma = 0 (local GD; exact classes).
"""
# the order of these imports is the order the records and checks register in (and `fedtheory list` shows)
# isort: off
from . import records  # noqa: F401 - registers the records
from . import checks  # noqa: F401 - registers the checks
from . import worst  # noqa: F401 - registers the PEP declarations
# isort: on
