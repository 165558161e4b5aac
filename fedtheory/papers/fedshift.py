"""Plug-in: FedShift (Seo, Kim, Rong), seed 004: Theorems 1-2, eqs. (11), (12), (30), claims."""
from ..checks import fedshift as checks  # noqa: F401 - registers the checks
from ..theory import fedshift as records  # noqa: F401 - registers the records
