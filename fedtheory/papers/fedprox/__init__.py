"""Zoo: Li et al. 2020, FedProx (arXiv:1812.06127), Theorem 4: the expected decrease per iteration under B-local
dissimilarity and gamma-inexact local solvers. Importing the package registers the record, its measure and the check."""
from . import checks, measures, records, worst  # noqa: F401
