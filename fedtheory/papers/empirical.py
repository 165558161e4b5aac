"""Plug-in: the papers' claims about their CIFAR experiments, checked on runs logged by `fedtheory train` (needs --runs)."""
from ..checks import empirical as checks  # noqa: F401 - registers the checks
from ..theory import experiments as records  # noqa: F401 - registers the records
