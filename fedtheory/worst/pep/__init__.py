"""Performance estimation (PEP): the exact worst case of a deterministic algorithm over a function class, built with
PEPit and solved as one semidefinite program (``fedtheory worst ID --method pep``, extra ``fedtheory[pep]``).

Any algorithm the round protocol runs: ``protocol_pep(algorithm, ProtocolSetting(...))`` runs its plug-ins on PEPit
points (``protocol.py``: the third backend of ``sim.rounds``); a worst case above a bound is rebuilt as concrete
functions, re-run by the simulator and written as a script (``instance.py``). The hand-written FedAvg / FedInit PEP
below (``build.py``) is the reference the protocol's is held to.

The algorithm is the simulator's, step for step (``fedtheory.sim``: ``RelaxedInit``, ``MeanModels``,
``MeanUpdates``), with full participation and exact gradients: in round t every client i starts from
w_{i,0} = w^t + beta (w^t - w_i^last) (w_i^last: its last local model, w^0 before its first round), takes K steps
w_{i,k+1} = w_{i,k} - eta grad f_i(w_{i,k}), and the server forms w^{t+1} = mean_i w_{i,K} (``algorithm1``) or
w^{t+1} = w^t - eta_g mean_i (w_{i,0} - w_{i,K}) (``code``, the authors' simulator). beta = 0 is FedAvg.

The class (``PEPSetting``; ``PEPSetting.describe()`` says it in words):

* ``convex``: every f_i L-smooth and client_mu-strongly convex (PEPit's ``SmoothStronglyConvexFunction``: its
  interpolation conditions are exact); when mu > client_mu, f = mean_i f_i also satisfies the mu-strongly convex
  interpolation inequalities between every two queried points (necessary for "f mu-strongly convex", not
  sufficient: a relaxation); w* a stationary point of f; f* = f(w*).
* ``smooth``: every f_i L-smooth, possibly non-convex (PEPit's ``SmoothFunction``); no w*. The initial condition
  f(w^0) - inf f <= D is replaced by f(w^0) - f(z) <= D at every queried point z (the local iterates, the server
  points the measure needs, and w^T), which it implies: a relaxation.
* Heterogeneity (seed 000, Assumption 3): (1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 imposed at
  every point where the PEP evaluates the clients (every local iterate of every client, the server points it
  measures, and w*): every client's gradient is evaluated at every such point. The assumption holds for all w;
  imposing it at these points only is a relaxation.

So the SDP's value is the exact worst case over the *relaxed* class, and an upper bound on the worst case over
the class with the assumptions as stated (any dimension). Every instance of the search's class
(``QuadraticClass``: quadratics, spectra in [client_mu, L], lambda_min(mean) >= mu, exact G^2(B) <= G^2,
f(w^0) - f* = D) lies in both, so search <= PEP. With C = 1 (or G = 0, B = 1: equal gradients at every queried
point) the convex class is exactly L-smooth mu-strongly convex gradient descent with K T steps.

Solving. PEPit's own ``PEP.solve`` (``solve_pep(..., method="pepit")``, the reference) hands every
interpolation inequality of every client to cvxpy one expression at a time; its Gram matrix has C + 1 rows per
queried point and the SDP outgrows Clarabel beyond a few dozen points (benchmarks/bench_pep.py measures it). The
default ``method="symmetric"`` solves the same program reduced by its symmetry: the PEP is invariant under
relabelling the clients (every client runs the same rule from the same start; the class, the heterogeneity
constraints and the measures are symmetric), so an optimal solution invariant under S_C exists (average any
optimal one over the group). An invariant Gram matrix is a combination of the orbit matrices of pairs of leaves;
it is PSD iff its blocks on the isotypic components of S_C are PSD (Schur's lemma): the trivial and the standard
representation, and (C-2, 2), (C-2, 1, 1) on the gradients of one client's function at another client's points.
The blocks' sizes do not grow with C, and only one representative per client orbit of each constraint is
generated (``PEPBuilder.canonical``): function 0's interpolation inequalities, read once from PEPit on symbols and
evaluated on every representative pair of points at once (``PairRows``; tests/test_pep.py holds them equal to
the rows PEPit writes one by one). Close points (small eta L) are solved over gradient differences from w^0
(``rebased``, an exact change of variables), which Clarabel resolves ~100x more accurately. After solving, the
full Gram matrix is rebuilt from the orbit values, and its eigenvalues and every generated constraint are checked
on it (``gram_min_eig``, ``max_violation``).
"""
import sys

from ..._deprecation import face_aliases

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
