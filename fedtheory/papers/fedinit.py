"""Plug-in: FedInit (Sun, Shen, Tao, NeurIPS 2023), seed 000/001: Theorems 1-6, Lemmas 2-4, eqs. (3), (15), claims,
and the worst-case declarations of Thms 1-2 (``fedtheory worst``)."""
from ..checks import fedinit as checks  # noqa: F401 - registers the checks
from ..theory import fedinit as records  # noqa: F401 - registers the records
from ..worst import fedinit as worst_cases  # noqa: F401 - registers the worst-case declarations
