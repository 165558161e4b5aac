"""Worst case within a bound's assumptions: adversarial instance search (``fedtheory worst ID``).

``worst_case(spec)`` searches a :class:`WorstCaseSpec`'s problem class for the instance with the largest left
side (relative to the bound) and returns one JSON record; ``run_worst(ID)`` builds the spec from today's check
constants; ``replay(FILE)`` re-runs a stored instance. See docs/worst-case.md.
"""
from .coupled import CoupledInstances, NeighbourClass, coupled_runner, pooled_loss_gaps
from .nonconvex import PLInstances, SeparablePLClass
from .search import Evaluation, evaluate, load_worst, replay, run_worst, worst_case, write_instance, z_threshold
from .space import Instances, QuadraticClass, B_min, heterogeneity_G2
from .spec import WorstCaseSpec, entry, make_spec, parse_sets, register_worst_case, worst_case_entries

PEP_EXTRA = "pep"


def pep_available() -> bool:
    try:
        import PEPit  # noqa: F401
        import cvxpy  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = ["CoupledInstances", "Evaluation", "Instances", "NeighbourClass", "PLInstances", "QuadraticClass",
           "SeparablePLClass", "WorstCaseSpec", "B_min", "coupled_runner", "entry", "evaluate", "heterogeneity_G2",
           "load_worst", "make_spec", "parse_sets", "pep_available", "pooled_loss_gaps", "register_worst_case",
           "replay", "run_worst", "worst_case", "worst_case_entries", "write_instance", "z_threshold"]
