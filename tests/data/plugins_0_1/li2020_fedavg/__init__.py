"""fedtheory plug-in: Li, Huang, Yang, Wang, Zhang, *On the Convergence of FedAvg on Non-IID Data* (ICLR 2020).

Importing the package registers the records (``records.py``) and the checks (``checks.py``).
"""
from . import checks, records, worst  # noqa: F401
