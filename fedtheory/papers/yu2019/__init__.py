"""Zoo: Yu, Yang & Zhu 2019 (arXiv:1807.06629), parallel restarted SGD (local SGD) on non-convex objectives, Theorem 1.
Importing the package registers the record and the check."""
from . import checks, records, worst  # noqa: F401
