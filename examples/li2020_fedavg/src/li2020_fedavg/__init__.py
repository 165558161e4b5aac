"""fedtheory plug-in: Li, Huang, Yang, Wang, Zhang, *On the Convergence of FedAvg on Non-IID Data* (ICLR 2020),
Theorem 1 (full participation) and Theorems 2-3 (partial participation); a paper of the zoo of trusted theorems.

Importing the package registers the records (``records.py``) and the checks (``checks.py``).
"""
from . import checks, records, worst  # noqa: F401
