"""fedtheory plug-in: S. U. Stich, *Local SGD Converges Fast and Communicates Little* (ICLR 2019), Theorem 2.2, a
theorem stated per local iteration.

Importing the package registers the records (``records.py``) and the checks (``checks.py``).
"""
from . import checks, records  # noqa: F401
