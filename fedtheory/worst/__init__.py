"""Worst case within a bound's assumptions: adversarial instance search and PEP (``fedtheory worst ID``).

``worst_case(spec)`` searches a :class:`WorstCaseSpec`'s problem class for the instance with the largest left
side (relative to the bound) and returns one JSON record (the classes: federated quadratics, ``QuadraticClass``,
convex at mu = 0; Huber regressions, ``HuberClass``; the separable PL family; coupled neighbours); ``run_worst(ID)``
builds the spec from today's check constants; ``replay(FILE)`` re-runs a stored instance. ``run_pep(ID)`` / ``solve_pep(PEPSetting(...))``: the exact
worst case by performance estimation (PEPit + cvxpy, the extra ``fedtheory[pep]``). See docs/worst-case.md.
"""
from .coupled import CoupledInstances, NeighbourClass, coupled_runner, pooled_loss_gaps
from .huber import HuberClass, HuberInstances
from .nonconvex import PLInstances, SeparablePLClass
from .pep import (PEP_EXTRA, PEP_PROFILES, FederatedPEP, MissingExtraError, PEPRefusal, PEPResult, PEPSetting, PEPSpec,
                  ProtocolSetting, SpectralMixing, build_pep, check_reference, isotypic_bases, pep_available,
                  pep_entries, pep_sizes, pep_worst_case, protocol_pep, register_pep, run_pep, solve_pep)
from .search import (Evaluation, evaluate, instance_scales, instance_verdict, load_worst, rebound, replay, run_worst,
                     worst_case, worst_spec, write_instance, z_threshold)
from .quadratic import Instances, QuadraticClass, B_min, check_theta, heterogeneity_G2, uniform_in_box
from .spec import WorstCaseSpec, entry, make_spec, parse_sets, register_worst_case, worst_case_entries

__all__ = ["CoupledInstances", "Evaluation", "FederatedPEP", "HuberClass", "HuberInstances", "Instances", "MissingExtraError", "NeighbourClass",
           "PEPRefusal", "PEPResult", "PEPSetting", "PEPSpec", "PEP_EXTRA", "PEP_PROFILES", "ProtocolSetting", "SpectralMixing",
           "protocol_pep", "PLInstances", "QuadraticClass", "SeparablePLClass",
           "WorstCaseSpec", "B_min", "build_pep", "check_reference", "check_theta", "coupled_runner", "entry", "evaluate", "heterogeneity_G2",
           "instance_scales", "instance_verdict", "isotypic_bases", "load_worst", "make_spec", "parse_sets", "pep_available", "pep_entries", "pep_sizes", "pep_worst_case",
           "pooled_loss_gaps", "rebound", "register_pep", "register_worst_case", "replay", "run_pep", "run_worst", "solve_pep",
           "uniform_in_box", "worst_case", "worst_case_entries", "worst_spec", "write_instance",
           "z_threshold"]
