"""Algorithms: the composition of plug-ins (:class:`Algorithm`), the factories, and the name registry that
``fedtheory train`` and the contract tests use. One place for all of them; ``empirical.algorithms`` re-exports it.

Each registered entry is a factory of ``Algorithm`` (a composition of the plug-ins in ``plugins.py``). The
numpy engine and the torch trainer run those very plug-ins, so every algorithm's rule has one implementation
shared by the two layers. A factory's keyword arguments are its hyperparameters (``fedtheory train --hp
beta=0.1``); numeric ones accept one value per run (a sweep trains as one batch). Any registered name takes a
'+RI' suffix (seed 000 Table 2): the same algorithm with FedInit's relaxed initialisation, hyperparameter ``beta``.

Adding an algorithm whose plug-ins exist is one line, where its factory is written (registration flows one way:
a module registers into this registry when it is imported; ``fedtheory/sim/__init__.py`` imports the core's, and a
paper plug-in registers its own when it loads, as FedMRUR's does in ``fedtheory/papers/fedmrur/algorithms.py``)::

    register_algorithm("FedMRUR", fedmrur, source="seed 003 Alg. 1")

A local plug-in that adds a term to the client objective (``objective = True``, e.g. FedMRUR's hyperbolic
regulariser) also needs the term's network form in ``empirical/objectives.py``; the trainer refuses one
without it rather than training without the term.

Keyword-only factory parameters named in ``CONTEXT`` are not hyperparameters: the caller supplies them
from the setting (``n_clients``; ``layer_sizes``, the network's parameter tensors in order, FedShift's
layers; ``client_groups``, the partition's inferior-client mask when it has one, e.g. label parity).
"""
from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from .._validation import ParameterError, check_choice, check_float
from .certificates import Certificate, certified, undeclared
from .rules import (
    SAM,
    Aggregator,
    ClientMomentum,
    ClientSteps,
    Communication,
    Compressor,
    ControlVariates,
    LocalTransform,
    MeanModels,
    MeanUpdates,
    NormalizedAveraging,
    PlainInit,
    Plugin,
    Prox,
    ProximalSolve,
    RelaxedInit,
    Server,
)
from .topology import TOPOLOGIES, topology_by_name  # noqa: F401 - re-exported (they lived here)

CONTEXT = ("n_clients", "layer_sizes", "client_groups")


# ------------------------------------------------------------------------------------ the composition


@dataclass(frozen=True)
class Algorithm:
    """A composition of plug-ins. ``dataclasses.replace(alg, init=RelaxedInit(0.1))`` adds RI to anything.

    The numpy engine (``simulate``) and the torch trainer run the same rules, so an algorithm has one implementation.
    The factories (:func:`fedavg`, :func:`scaffold`, ...) build the shipped ones.

    Parameters
    ----------
    name : str
        The algorithm's name, as printed.
    init : Plugin, default PlainInit()
        Where each client's local run starts (``PlainInit``: the anchor; ``RelaxedInit``: FedInit's relaxed start).
    local : tuple of LocalTransform, default ()
        The local-step rules, applied in order to the stochastic gradient (``SAM``, ``Prox``, ``ClientMomentum``,
        ...; none: plain SGD steps).
    aggregate : Aggregator or None, default MeanModels()
        The server's rule (None under gossip, whose communication combines the models itself).
    comm : Communication, default Server()
        Who trains each round, where they start and how their results combine (``Server``; ``Gossip`` on a
        topology).
    compress : Compressor, optional
        What the clients send in place of their local models (quantization).
    """

    name: str
    init: Plugin = field(default_factory=PlainInit)
    local: tuple[LocalTransform, ...] = ()
    aggregate: Aggregator | None = field(default_factory=MeanModels)
    comm: Communication = field(default_factory=Server)
    compress: Compressor | None = None

    def plugins(self) -> list[Plugin]:
        out = [self.comm, self.init, *self.local]
        out += [self.aggregate] if self.aggregate is not None else []
        return out + ([self.compress] if self.compress is not None else [])

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "init": repr(self.init), "local": [repr(p) for p in self.local],
                "aggregate": repr(self.aggregate) if self.aggregate else None, "comm": repr(self.comm),
                "compress": repr(self.compress) if self.compress else None}

    def with_relaxed_init(self, beta) -> "Algorithm":
        """The "+RI" of seed 000 Table 2: the same algorithm with relaxed initialisation."""
        return dataclasses.replace(self, name=self.name + "+RI", init=RelaxedInit(beta))

    def certify(self, name: str, problem=None, visited: Any = None) -> Certificate:
        """The algorithm's answer to a catalogue assumption about it (subject 'algorithm'): a regularizer added to the
        local objectives is answered by the plug-ins that add one (``objective = True``); none added: r = 0."""
        if name != "regularizer_smooth":
            return undeclared(name, self.name)
        terms = [p for p in self.local if getattr(p, "objective", False)]
        if not terms:
            return certified(name, f"{self.name} adds no term to the local objectives", r=0.0).with_by(self.name)
        certs = [p.certify(name, problem, visited) for p in terms]
        bad = [c for c in certs if c.status != "certified"]
        if bad:
            return bad[0].with_by(self.name)
        r = sum(np.asarray(c.constants["r"], dtype=float) for c in certs)
        region = "visited" if any(c.region == "visited" for c in certs) else "global"
        return certified(name, "; ".join(c.how for c in certs), region=region, kind=certs[0].kind,
                         r=r).with_by(self.name)


def fedavg(server_rule: str = "algorithm1", server_lr=1.0) -> Algorithm:
    """FedAvg (McMahan et al. 2017): K local SGD steps from w^t on each participating client, then the server rule.

    Parameters
    ----------
    server_rule : {"algorithm1", "code"}, default "algorithm1"
        The server's rule: ``"algorithm1"`` averages the local models (``MeanModels``, seed 000 Alg. 1 line 13);
        ``"code"`` applies the mean local update with the server step ``server_lr`` (``MeanUpdates``, the FedInit
        authors' simulator).
    server_lr : float or array_like, default 1.0
        eta_g of ``"code"`` (> 0; one value per run allowed); unused by ``"algorithm1"``.

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    return Algorithm("FedAvg", aggregate=_server_rule(server_rule, server_lr))


def fedinit(beta, server_rule: str = "algorithm1", server_lr=1.0) -> Algorithm:
    """FedInit (seed 000 Alg. 1): FedAvg whose clients start from w^t + beta (w^t - w_i^last) (``RelaxedInit``).

    Parameters
    ----------
    beta : float or array_like
        The relaxation coefficient (one value per run allowed: a beta grid runs as one batch).
    server_rule : {"algorithm1", "code"}, default "algorithm1"
        The server's rule: ``"algorithm1"`` averages the local models (``MeanModels``, seed 000 Alg. 1 line 13);
        ``"code"`` applies the mean local update with the server step ``server_lr`` (``MeanUpdates``, the FedInit
        authors' simulator).
    server_lr : float or array_like, default 1.0
        eta_g of ``"code"`` (> 0; one value per run allowed); unused by ``"algorithm1"``.

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    return Algorithm("FedInit", init=RelaxedInit(beta), aggregate=_server_rule(server_rule, server_lr))


def scaffold(server_rule: str = "code", server_lr=1.0) -> Algorithm:
    """SCAFFOLD (Karimireddy et al. 2020, option II): local steps corrected by control variates, g - c_i + c.

    Parameters
    ----------
    server_rule : {"algorithm1", "code"}, default "code"
        The server's rule: ``"algorithm1"`` averages the local models (``MeanModels``, seed 000 Alg. 1 line 13);
        ``"code"`` applies the mean local update with the server step ``server_lr`` (``MeanUpdates``, the FedInit
        authors' simulator).
    server_lr : float or array_like, default 1.0
        eta_g of ``"code"`` (> 0; one value per run allowed); unused by ``"algorithm1"``.

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    return Algorithm("SCAFFOLD", local=(ControlVariates(),), aggregate=_server_rule(server_rule, server_lr))


def fedcm(alpha=0.1, server_rule: str = "code", server_lr=1.0) -> Algorithm:
    """FedCM (Xu et al. 2021): client-level momentum, the direction alpha g + (1 - alpha) Delta (``ClientMomentum``).

    Parameters
    ----------
    alpha : float or array_like, default 0.1
        The weight of the fresh gradient, in [0, 1] (one value per run allowed).
    server_rule : {"algorithm1", "code"}, default "code"
        The server's rule: ``"algorithm1"`` averages the local models (``MeanModels``, seed 000 Alg. 1 line 13);
        ``"code"`` applies the mean local update with the server step ``server_lr`` (``MeanUpdates``, the FedInit
        authors' simulator).
    server_lr : float or array_like, default 1.0
        eta_g of ``"code"`` (> 0; one value per run allowed); unused by ``"algorithm1"``.

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    return Algorithm("FedCM", local=(ClientMomentum(alpha),), aggregate=_server_rule(server_rule, server_lr))


def fedprox(mu=0.01, server_rule: str = "code", server_lr=1.0, solve: str = "steps") -> Algorithm:
    """FedProx: solve='steps', the local steps take the gradient of f_i + (mu/2)||w - w^t||^2 (``Prox``); 'exact',
    each client's exact proximal point argmin_w f_i(w) + (mu/2)||w - w^t||^2 (``ProximalSolve``: exact gradients on a
    problem with an exact solve, or the PEP).

    Parameters
    ----------
    mu : float or array_like, default 0.01
        The proximal coefficient (>= 0 for ``"steps"``, > 0 for ``"exact"``; one value per run allowed).
    server_rule : {"algorithm1", "code"}, default "code"
        The server's rule: ``"algorithm1"`` averages the local models (``MeanModels``, seed 000 Alg. 1 line 13);
        ``"code"`` applies the mean local update with the server step ``server_lr`` (``MeanUpdates``, the FedInit
        authors' simulator).
    server_lr : float or array_like, default 1.0
        eta_g of ``"code"`` (> 0; one value per run allowed); unused by ``"algorithm1"``.
    solve : {"steps", "exact"}, default "steps"
        How the local problem is solved.

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    check_choice("solve", solve, ("steps", "exact"))
    local = (Prox(mu),) if solve == "steps" else (ProximalSolve(mu),)
    return Algorithm("FedProx", local=local, aggregate=_server_rule(server_rule, server_lr))


def fednova(steps, weights=None, server_lr=1.0) -> Algorithm:
    """FedNova (Wang et al. 2020, arXiv:2007.07481) with vanilla local SGD: client i takes tau_i = steps[i] local
    steps (run with local_steps = max tau_i), the server applies w^{t+1} = w^t - eta_g tau_eff sum_i p_i
    (w^t - w_{i,tau_i}) / tau_i, tau_eff = sum_i p_i tau_i; weights p_i (default 1/C).

    Parameters
    ----------
    steps : sequence of int
        tau_i, the local steps of each client (>= 1; one per client). Run it with ``local_steps = max(steps)``.
    weights : sequence of float, optional
        p_i, each client's weight (> 0; renormalized over each round's participants); default 1/C.
    server_lr : float or array_like, default 1.0
        eta_g, the server step (> 0; one value per run allowed).

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    return Algorithm("FedNova", local=(ClientSteps(steps),), aggregate=NormalizedAveraging(steps, weights, server_lr))


def fedsam(rho=0.05, server_rule: str = "code", server_lr=1.0) -> Algorithm:
    """FedSAM (Qu et al. 2022): FedAvg with sharpness-aware local steps (``SAM``).

    Parameters
    ----------
    rho : float or array_like, default 0.05
        The SAM radius (>= 0; one value per run allowed).
    server_rule : {"algorithm1", "code"}, default "code"
        The server's rule: ``"algorithm1"`` averages the local models (``MeanModels``, seed 000 Alg. 1 line 13);
        ``"code"`` applies the mean local update with the server step ``server_lr`` (``MeanUpdates``, the FedInit
        authors' simulator).
    server_lr : float or array_like, default 1.0
        eta_g of ``"code"`` (> 0; one value per run allowed); unused by ``"algorithm1"``.

    Returns
    -------
    Algorithm
        The composition of rules, for ``simulate`` or the torch trainer.
    """
    return Algorithm("FedSAM", local=(SAM(rho),), aggregate=_server_rule(server_rule, server_lr))


def _server_rule(rule: str, server_lr) -> Aggregator:
    check_choice("server_rule", rule, ("algorithm1", "code"))
    return MeanModels() if rule == "algorithm1" else MeanUpdates(server_lr)


# ------------------------------------------------------------------------------------ the name registry

@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    factory: Callable[..., Algorithm]
    source: str = ""

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """name -> default (``inspect.Parameter.empty`` when required)."""
        sig = inspect.signature(self.factory)
        return {n: p.default for n, p in sig.parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n not in CONTEXT}

    @property
    def context(self) -> tuple[str, ...]:
        return tuple(n for n in inspect.signature(self.factory).parameters if n in CONTEXT)


_REGISTRY: dict[str, AlgorithmSpec] = {}


def register_algorithm(name: str, factory: Callable[..., Algorithm], *, source: str = "") -> AlgorithmSpec:
    """Make ``factory`` trainable as ``name`` (case-insensitive; '+RI' variants come for free).

    ``fedtheory train --algorithm NAME --hp key=value`` then builds it (:func:`build_algorithm`); the factory's
    keyword arguments are its hyperparameters.

    Parameters
    ----------
    name : str
        The algorithm's name, without ``+``.
    factory : callable
        ``factory(**hyperparameters) -> Algorithm``; keyword-only parameters named in ``CONTEXT`` (``n_clients``,
        ``layer_sizes``, ``client_groups``) are supplied by the trainer.
    source : str, default ""
        Where the algorithm comes from (a paper, a seed's algorithm).

    Returns
    -------
    AlgorithmSpec
        The registered entry.

    Raises
    ------
    ParameterError
        For a name with ``+``, or a name registered before with another factory.
    """
    key = name.lower()
    if "+" in key:
        raise ParameterError("name", name, "an algorithm name without '+' ('+RI' is added automatically)")
    if key in _REGISTRY and _REGISTRY[key].factory is not factory:
        raise ParameterError("name", name, "a name not registered yet")
    spec = AlgorithmSpec(name, factory, source)
    _REGISTRY[key] = spec
    return spec


def unregister_algorithm(name: str) -> None:
    """Remove a registered name (e.g. one a test registered)."""
    _REGISTRY.pop(name.lower(), None)


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm by name."""
    return {s.name: s for s in _REGISTRY.values()}


def resolve(name: str) -> tuple[AlgorithmSpec, bool]:
    """(spec, relaxed) for a name such as 'FedCM' or 'SCAFFOLD+RI'.

    Parameters
    ----------
    name : str
        A registered algorithm's name (case and spaces ignored), optionally followed by ``+RI``.

    Returns
    -------
    tuple of (AlgorithmSpec, bool)
        The registered entry, and whether ``+RI`` (relaxed initialisation) was asked for.

    Raises
    ------
    ParameterError
        When no algorithm of that name is registered; the message lists them.
    """
    key = str(name).lower().replace(" ", "")
    relaxed = key.endswith("+ri")
    base = key[:-3] if relaxed else key
    if base not in _REGISTRY:
        raise ParameterError("algorithm", name, "one of " + ", ".join(s.name for s in _REGISTRY.values())
                             + " (optionally with '+RI')")
    return _REGISTRY[base], relaxed


def ri_name(spec: AlgorithmSpec) -> str:
    """The '+RI' coefficient's hyperparameter: beta, or ri_beta when the algorithm has a beta of its own
    (FedMRUR's Lorentz-model beta)."""
    return "ri_beta" if "beta" in spec.hyperparameters else "beta"


def hyperparameter_names(name: str) -> dict[str, Any]:
    spec, relaxed = resolve(name)
    hp = dict(spec.hyperparameters)
    if relaxed:
        hp[ri_name(spec)] = inspect.Parameter.empty
    return hp


def build_algorithm(name: str, hyperparameters: Mapping[str, Any] | None = None,
                    context: Mapping[str, Any] | None = None) -> Algorithm:
    """The Algorithm for ``name`` with ``hyperparameters`` (scalars, or one value per run as arrays);
    ``context`` supplies the factory's CONTEXT parameters (see the module docstring).

    Parameters
    ----------
    name : str
        A registered name, optionally with ``+RI`` (then ``beta``, or ``ri_beta`` for an algorithm with a beta of
        its own, is a hyperparameter too).
    hyperparameters : mapping of str to object, optional
        The factory's keyword arguments; every one without a default must be given.
    context : mapping of str to object, optional
        Values for the factory's ``CONTEXT`` parameters (``n_clients``, ``layer_sizes``, ``client_groups``).

    Returns
    -------
    Algorithm
        What the factory built (with relaxed initialisation added for ``+RI``).

    Raises
    ------
    ParameterError
        For an unknown name or hyperparameter, a missing hyperparameter or context value, or ``+RI`` on an algorithm
        that has relaxed initialisation already.
    """
    spec, relaxed = resolve(name)
    hp = dict(hyperparameters or {})
    ctx = dict(context or {})
    need = [c for c in spec.context if c not in ctx]
    if need:
        raise ParameterError("context", sorted(ctx), f"values for {', '.join(need)} (supplied by the trainer)")
    allowed = hyperparameter_names(name)
    unknown = [k for k in hp if k not in allowed]
    if unknown:
        raise ParameterError(f"hyperparameter {unknown[0]!r}", hp[unknown[0]],
                             f"one of {', '.join(allowed) or '(none)'} for {spec.name}{'+RI' if relaxed else ''}")
    ri_key = ri_name(spec)
    ri_beta = hp.pop(ri_key, None) if relaxed else None
    missing = [k for k, v in spec.hyperparameters.items() if v is inspect.Parameter.empty and k not in hp]
    if missing:
        raise ParameterError(f"hyperparameter {missing[0]!r}", None, f"given for {name} (--hp {missing[0]}=VALUE)")
    alg = spec.factory(**hp, **{c: ctx[c] for c in spec.context})
    if relaxed:
        if isinstance(alg.init, RelaxedInit):
            raise ParameterError("algorithm", name, "an algorithm without relaxed initialisation before adding '+RI'")
        if ri_beta is None:
            raise ParameterError(f"hyperparameter {ri_key!r}", None, f"given for {name} (--hp {ri_key}=VALUE)")
        alg = alg.with_relaxed_init(ri_beta)
    return alg


def relaxed_beta(alg: Algorithm, runs: int) -> np.ndarray:
    """Per-run beta of the algorithm's initialisation (0 for plain initialisation)."""
    if isinstance(alg.init, RelaxedInit):
        return np.broadcast_to(np.asarray(check_float("beta", alg.init.beta, size=runs), float), (runs,)).copy()
    return np.zeros(runs)


register_algorithm("FedAvg", fedavg, source="McMahan et al. 2017; seed 000 Alg. 1 with beta = 0")
register_algorithm("FedInit", fedinit, source="seed 000 Alg. 1 / seed 001")
register_algorithm("SCAFFOLD", scaffold, source="Karimireddy et al. 2020 (option II); seed 000 Table 2")
register_algorithm("FedCM", fedcm, source="Xu et al. 2021; seed 000 Table 2")
register_algorithm("FedProx", fedprox, source="Li et al. 2020")
register_algorithm("FedSAM", fedsam, source="Qu et al. 2022; seed 000 Table 2")
# sim.gossip registers the gossip family (fedtheory.sim imports it); paper plug-ins register their own when they load
# (fedtheory.plugins.load_plugins() completes the table).


def describe(alg: Algorithm) -> dict[str, Any]:
    d = alg.describe()
    d["classes"] = {"init": type(alg.init).__name__, "local": [type(p).__name__ for p in alg.local],
                    "aggregate": type(alg.aggregate).__name__ if alg.aggregate is not None else None,
                    "comm": type(alg.comm).__name__,
                    "compress": type(alg.compress).__name__ if alg.compress is not None else None}
    return d


__all__ = ["Algorithm", "AlgorithmSpec", "CONTEXT", "algorithms", "build_algorithm", "describe", "fedavg", "fedcm",
           "fedinit", "fednova", "fedprox", "fedsam", "hyperparameter_names", "register_algorithm", "relaxed_beta",
           "resolve", "ri_name", "scaffold", "topology_by_name", "unregister_algorithm"]

