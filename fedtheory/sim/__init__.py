"""Simulation layer: problems with exact constants, algorithm plug-ins, the vectorized engine.

The modules that write algorithms register them into ``algorithms``' registry when imported; this face imports them
all, so the core's algorithms are registered once any part of ``fedtheory.sim`` is imported. A paper plug-in registers
its own (FedMRUR's, FedShift's) when it loads: ``fedtheory.plugins.load_plugins()`` completes the table."""
from ..deprecation import face_aliases
from . import gossip  # noqa: F401 - registers the gossip algorithms
from .algorithms import (
    Algorithm,
    AlgorithmSpec,
    algorithms,
    build_algorithm,
    fedavg,
    fedcm,
    fedinit,
    fednova,
    fedprox,
    fedsam,
    register_algorithm,
    resolve,
    scaffold,
    unregister_algorithm,
)
from .certificates import Certificate, ClientSampling, certified, from_visited, refused, unknown
from .config import RunConfig, StepWeights
from .engine import simulate
from .gossip import (
    Gossip,
    LocalMomentum,
    d_psgd,
    dfedavg,
    dfedavgm,
    dfedsam,
    oledfl_sam,
    oledfl_sgd,
    reference_gossip,
    with_ole,
)
from .hyperbolic import HyperbolicRegularizer, NormalizedAggregation
from .measure_tables import DEFAULT_MEASURES, ROUND_MEASURES, STATE_MEASURES, STEP_MEASURES, VISITED_MEASURES
from .measures import TrackGradients, measure_catalogue, register_measure, registered_measures
from .mixed_precision import WeightShift, mixed_precision, reference_mixed_precision
from .problem_oracle import ProblemOracle
from .problems import (
    Constant,
    Constants,
    HuberProblem,
    InterpolatedProblem,
    LeastSquaresProblem,
    LogisticProblem,
    PLNonconvexProblem,
    Problem,
    SeparablePLProblem,
    digits_logistic,
    heterogeneous_least_squares,
    huber_regression,
    identical_least_squares,
    least_squares_noise_at_optimum,
    opposed_huber,
    pl_nonconvex,
    pl_ratio_infimum,
    quadratic_B_min,
    quadratic_G2,
    synthetic_logistic,
)
from .rng import RunStreams
from .rounds import LocalOracle, StepSchedule, commit_round, run_round
from .rules import (
    SAM,
    AdditiveNoise,
    Aggregator,
    ClientMomentum,
    ClientSteps,
    Communication,
    Compressor,
    ControlVariates,
    Exact,
    LocalTransform,
    MeanModels,
    MeanUpdates,
    Minibatch,
    NormalizedAveraging,
    Oracle,
    PlainInit,
    Plugin,
    Prox,
    ProximalSolve,
    RelaxedInit,
    RoundState,
    Server,
    State,
)
from .stability import StabilityResult, coupled_runs, measured_heterogeneity_G2
from .topology import (
    Exponential,
    FullyConnected,
    Grid2D,
    RandomKNeighbour,
    Ring,
    Topology,
    exponential,
    fully_connected,
    grid,
    paper_topologies,
    random_k_neighbour,
    ring,
)
from .trace import Trace

__all__ = [
    # algorithms: each a composition of rules (below); register_algorithm adds one, build_algorithm / resolve find one
    "Algorithm", "fedavg", "fedinit", "fedprox", "fednova", "fedsam", "fedcm", "scaffold", "mixed_precision", "d_psgd",
    "dfedavg", "dfedavgm", "dfedsam", "oledfl_sgd", "oledfl_sam", "register_algorithm", "build_algorithm", "resolve",
    # the rules of the round protocol an algorithm is made of (fedtheory.sim.rules)
    "Plugin", "State", "RoundState", "LocalTransform", "Aggregator", "Communication", "PlainInit", "RelaxedInit",
    "ClientMomentum", "LocalMomentum", "SAM", "Prox", "ProximalSolve", "ControlVariates", "ClientSteps", "MeanModels",
    "MeanUpdates", "NormalizedAveraging", "NormalizedAggregation", "TrackGradients",
    # gradients: the oracles
    "Oracle", "Exact", "AdditiveNoise", "Minibatch",
    # running: the engine
    "simulate", "RunConfig", "Trace", "StepWeights", "coupled_runs", "ClientSampling", "register_measure",
    # problems with exact constants
    "Problem", "Constant", "LeastSquaresProblem", "LogisticProblem", "HuberProblem", "SeparablePLProblem",
    "PLNonconvexProblem", "heterogeneous_least_squares", "identical_least_squares", "least_squares_noise_at_optimum",
    "huber_regression", "opposed_huber", "pl_nonconvex", "synthetic_logistic", "digits_logistic",
    # decentralized FL: topologies
    "Topology", "ring", "grid", "exponential", "fully_connected", "random_k_neighbour",
    # what a problem, oracle, topology, sampling or algorithm certifies (fedtheory.sim.certificates)
    "Certificate", "certified", "refused", "unknown", "from_visited",
]

_MOVED = {  # not part of the plug-in API since 0.2: name -> the module that has it
    **dict.fromkeys(("AlgorithmSpec", "unregister_algorithm"), "algorithms"),
    **dict.fromkeys(("LocalOracle", "StepSchedule", "commit_round", "run_round"), "rounds"),
    "ProblemOracle": "problem_oracle",
    **dict.fromkeys(("DEFAULT_MEASURES", "ROUND_MEASURES", "STATE_MEASURES", "STEP_MEASURES", "VISITED_MEASURES"),
                    "measure_tables"),
    **dict.fromkeys(("Compressor", "Server"), "rules"),
    **dict.fromkeys(("Constants", "InterpolatedProblem", "pl_ratio_infimum", "quadratic_B_min", "quadratic_G2"),
                    "problems"),
    **dict.fromkeys(("measure_catalogue", "registered_measures"), "measures"),
    "RunStreams": "rng",
    **dict.fromkeys(("StabilityResult", "measured_heterogeneity_G2"), "stability"),
    "HyperbolicRegularizer": "hyperbolic",
    **dict.fromkeys(("WeightShift", "reference_mixed_precision"), "mixed_precision"),
    **dict.fromkeys(("Gossip", "reference_gossip", "with_ole"), "gossip"),
    **dict.fromkeys(("Exponential", "FullyConnected", "Grid2D", "RandomKNeighbour", "Ring", "paper_topologies"),
                    "topology"),
}


def _moved(name: str, module: str):
    import sys

    return lambda: getattr(sys.modules[f"{__name__}.{module}"], name)  # every one imported above


__getattr__ = face_aliases(__name__, {
    "OppositeLookahead": (lambda: RelaxedInit, "use RelaxedInit(beta): the same rule (OledFL's Ole is FedInit's "
                                               "relaxed start on each client's mixed model)"),
    "algorithms": (lambda: _moved("algorithms", "algorithms")(), "use fedtheory.plugins.algorithms() (it loads the "
                   "plug-ins first)"),
    **{name: (_moved(name, module), f"not part of the plug-in API: import it from {__name__}.{module}")
       for name, module in _MOVED.items()},
})
for _name in _MOVED:  # imported above for the aliases and the face's own use: without the global, the alias warns
    globals().pop(_name, None)
