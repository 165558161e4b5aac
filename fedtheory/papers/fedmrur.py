"""Plug-in: FedMRUR (An, Shen, Hu, Luo, NeurIPS 2023) and MoFedSAM's bound, seed 003: Theorem 1 (Phi), Remark 2, claims,
and the worst-case declarations of eq. (7) and MoFedSAM's Thm D.7 (``fedtheory worst``)."""
from ..checks import fedmrur as checks  # noqa: F401 - registers the checks
from ..theory import fedmrur as records  # noqa: F401 - registers the records
from ..worst import fedmrur as worst_cases  # noqa: F401 - registers the worst-case declarations
