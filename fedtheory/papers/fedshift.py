"""Plug-in: FedShift (Seo, Kim, Rong), seed 004: Theorems 1-2, eqs. (11), (12), (30), claims, and the worst-case
declarations of Theorem 1 (``fedtheory worst``)."""
from ..checks import fedshift as checks  # noqa: F401 - registers the checks
from ..theory import fedshift as records  # noqa: F401 - registers the records
from ..worst import fedshift as worst_cases  # noqa: F401 - registers the worst-case declarations
