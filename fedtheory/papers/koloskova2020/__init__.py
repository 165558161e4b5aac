"""Zoo: Koloskova et al. 2020 (arXiv:2003.10422), decentralized SGD, Theorem 2 (strongly convex and non-convex) as
stated orders, unverified and not run (see records.py). Importing the package registers the records."""
from . import checks, records  # noqa: F401
