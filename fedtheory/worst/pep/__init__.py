"""Performance estimation (PEP): the exact worst case of a deterministic algorithm over a function class, built with
PEPit and solved as one semidefinite program (``fedtheory worst ID --method pep``, extra ``fedtheory[pep]``).

``protocol_pep(algorithm, ProtocolSetting(...))`` runs any algorithm of the round protocol on PEPit's points (the
third backend of ``sim.rounds``); ``build_pep`` / ``solve_pep`` are the hand-written FedAvg / FedInit PEP the
protocol's is held to; ``counterexample`` rebuilds a worst case above a bound as concrete functions the simulator
re-runs; ``register_pep`` / ``run_pep`` declare and run a record's PEP. The classes, the relaxations and the
symmetric reduction that solves the SDP: docs/worst-case.md ("PEP: exact worst cases" and "Solving, in detail").
"""
import sys

from ...deprecation import face_aliases

# the names of _MOVED are imported for their deprecated aliases and the face's own use (hence the noqa: F401)
from .build import FederatedPEP, PairRows, build_pep  # noqa: F401
from .instance import Counterexample, counterexample, counterexample_script, write_counterexample  # noqa: F401
from .protocol import PEPRefusal, ProtocolSetting, SpectralMixing, protocol_pep
from .record import (  # noqa: F401
    PEP_PROFILES,
    RTOL,
    PEPSpec,
    check_reference,
    pep_entries,
    pep_sizes,
    pep_spec,
    pep_worst_case,
    register_pep,
    run_pep,
)
from .reduction import isotypic_bases, rebased, sparsified  # noqa: F401
from .setting import (  # noqa: F401
    FUNCTION_CLASSES,
    INITIALS,
    MAX_STEPS,
    METRICS,
    PEP_EXTRA,
    SERVER_RULES,
    MissingExtraError,
    PEPSetting,
    pep_available,
)
from .solve import (  # noqa: F401
    ACCEPT_GAP,
    ACCEPT_MIN_EIG,
    ACCEPT_VIOLATION,
    BASES,
    DIFFERENCES_BELOW,
    METHODS,
    SOLVERS,
    PEPResult,
    solve_pep,
)

__all__ = [
    # a record's PEP: the declaration and its run
    "PEPSpec", "register_pep", "check_reference", "run_pep", "pep_worst_case",
    # any algorithm of the round protocol, run on PEPit's points
    "ProtocolSetting", "SpectralMixing", "protocol_pep", "PEPRefusal",
    # the hand-written FedAvg / FedInit PEP the protocol's is held to, and the solver
    "PEPSetting", "build_pep", "FederatedPEP", "solve_pep", "PEPResult",
    # a worst case above a bound as concrete functions the simulator re-runs
    "counterexample", "Counterexample",
    "pep_available", "MissingExtraError",
]

_MOVED = {  # not part of the plug-in API since 0.2: name -> the module of fedtheory.worst.pep that has it
    **dict.fromkeys(("PairRows",), "build"),
    **dict.fromkeys(("counterexample_script", "write_counterexample"), "instance"),
    **dict.fromkeys(("PEP_PROFILES", "RTOL", "pep_entries", "pep_sizes", "pep_spec"), "record"),
    **dict.fromkeys(("isotypic_bases", "rebased", "sparsified"), "reduction"),
    **dict.fromkeys(("FUNCTION_CLASSES", "INITIALS", "MAX_STEPS", "METRICS", "PEP_EXTRA", "SERVER_RULES"), "setting"),
    **dict.fromkeys(("ACCEPT_GAP", "ACCEPT_MIN_EIG", "ACCEPT_VIOLATION", "BASES", "DIFFERENCES_BELOW", "METHODS",
                     "SOLVERS"), "solve"),
}
__getattr__ = face_aliases(__name__, {
    name: ((lambda n=name, m=module: getattr(sys.modules[f"{__name__}.{m}"], n)),
           f"not part of the API: import it from {__name__}.{module}") for name, module in _MOVED.items()})
for _name in _MOVED:  # imported above for the aliases: without the global, the alias warns
    globals().pop(_name, None)
