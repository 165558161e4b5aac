"""Plug-in: FedMRUR (An, Shen, Hu, Luo, NeurIPS 2023) and MoFedSAM's bound, seed 003: Theorem 1 (Phi), Remark 2, claims."""
from ..checks import fedmrur as checks  # noqa: F401 - registers the checks
from ..theory import fedmrur as records  # noqa: F401 - registers the records
