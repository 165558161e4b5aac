"""Worst case within a bound's assumptions: adversarial instance search and PEP (``fedtheory worst ID``).

``worst_case(spec)`` searches a :class:`WorstCaseSpec`'s problem class for the instance with the largest left
side (relative to the bound) and returns one JSON record (the classes: federated quadratics, ``QuadraticClass``,
convex at mu = 0; Huber regressions, ``HuberClass``; the separable PL family; coupled neighbours); ``run_worst(ID)``
builds the spec from today's check constants; ``replay(FILE)`` re-runs a stored instance. ``run_pep(ID)`` /
``solve_pep(PEPSetting(...))``: the exact worst case by performance estimation (PEPit + cvxpy, the extra
``fedtheory[pep]``). See docs/worst-case.md.
"""
import sys

from ..deprecation import face_aliases
from .coupled import CoupledInstances, NeighbourClass, coupled_runner, pooled_loss_gaps
from .huber import HuberClass, HuberInstances
from .nonconvex import PLInstances, SeparablePLClass
from .pep import (
                  FederatedPEP,
                  MissingExtraError,
                  PEPRefusal,
                  PEPResult,
                  PEPSetting,
                  PEPSpec,
                  ProtocolSetting,
                  SpectralMixing,
                  build_pep,
                  check_reference,
                  pep_available,
                  pep_worst_case,
                  protocol_pep,
                  register_pep,
                  run_pep,
                  solve_pep,
)
from .quadratic import B_min, Instances, QuadraticClass, check_theta, heterogeneity_G2, uniform_in_box
from .search import Evaluation, evaluate, instance_scales, load_worst, replay, run_worst, worst_case, z_threshold
from .spec import WorstCaseSpec, make_spec, register_worst_case

__all__ = [
    # a bound's worst-case search: the declaration, the search, its record and its replay
    "WorstCaseSpec", "make_spec", "register_worst_case", "worst_case", "run_worst", "load_worst", "replay",
    "evaluate", "Evaluation", "instance_scales", "z_threshold",
    # the problem classes searched and their instances
    "QuadraticClass", "Instances", "B_min", "check_theta", "heterogeneity_G2", "uniform_in_box",
    "HuberClass", "HuberInstances", "SeparablePLClass", "PLInstances",
    "NeighbourClass", "CoupledInstances", "coupled_runner", "pooled_loss_gaps",
    # the exact worst case by performance estimation (fedtheory.worst.pep; the extra fedtheory[pep])
    "PEPSpec", "register_pep", "check_reference", "run_pep", "pep_worst_case", "PEPSetting", "build_pep", "solve_pep",
    "PEPResult", "FederatedPEP", "ProtocolSetting", "SpectralMixing", "protocol_pep", "PEPRefusal",
    "pep_available", "MissingExtraError",
]

_MOVED = {  # not part of the plug-in API since 0.2: name -> the module of fedtheory.worst that has it
    "PEP_EXTRA": "pep.setting", "isotypic_bases": "pep.reduction",
    **dict.fromkeys(("PEP_PROFILES", "pep_entries", "pep_sizes"), "pep.record"),
    **dict.fromkeys(("instance_verdict", "rebound", "worst_spec", "write_instance"), "search"),
    **dict.fromkeys(("entry", "parse_sets", "worst_case_entries"), "spec"),
}
__getattr__ = face_aliases(__name__, {
    name: ((lambda n=name, m=module: getattr(sys.modules[f"{__name__}.{m}"], n)),
           f"not part of the API: import it from {__name__}.{module}") for name, module in _MOVED.items()})
