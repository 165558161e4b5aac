"""Algorithm plug-ins: small transformations with explicit state, composed into an Algorithm.

Axes of composition (docs/architecture.md): initialisation, local step (a chain of transforms applied to
the stochastic gradient), aggregation, communication, compression. Every scalar
hyperparameter accepts a scalar or one value per run, so a beta grid runs as one batch.

State lives in the engine's :class:`State`: ``server`` arrays (R, d), ``clients`` arrays
(R, C, d). A plug-in declares what it needs in ``setup`` and reads/writes it in the hooks;
nothing is kept on the plug-in object between runs except its validated hyperparameters.

Plug-ins are written against ``backend.ops`` so the same rule runs on numpy arrays (sim/) and
on torch tensors (empirical/): use ``xp = ops(x)`` and ``self.param(name, like)``; never call
numpy directly on state arrays.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._validation import ParameterError, check_choice, check_float, check_int, per_run
from .backend import ops
from .certificates import VISITED_ONLY, Certificate, certified, from_visited, refused, undeclared, unknown


@dataclass
class State:
    """The state of a batch of runs between rounds; plug-ins keep theirs here (declared in ``setup``).

    Parameters
    ----------
    w : array
        The global model, (R, d): the server's, or under gossip the mean of the client models.
    server : dict of str to array, optional
        Server-side state, each (R, d) (SCAFFOLD's c, a momentum buffer).
    clients : dict of str to array, optional
        Client-side state, each (R, C, d) over every client (``last_local``: each client's latest local model;
        SCAFFOLD's c_i).
    """

    w: Any  # (R, d) server model, or the mean of the client models under gossip
    server: dict[str, Any] = field(default_factory=dict)  # (R, d) each
    clients: dict[str, Any] = field(default_factory=dict)  # (R, C, d) each


@dataclass
class RoundState:
    """What the plug-ins see during round t. Shapes: R runs, N participating clients, d dims.

    The round protocol fills it step by step: ``w0`` once the clients start, ``wK`` after the local steps, ``sent``
    after compression, ``w_next`` after communication. ``gather(key)`` reads ``state.clients[key]`` of this round's
    participants, (R, N, d), and ``scatter(key, values)`` writes it back.

    Parameters
    ----------
    t : int
        The round index, 0..T-1.
    K : int
        Local steps per round (``RunConfig.local_steps``); local step k of round t is step s = t K + k.
    sel : numpy.ndarray
        (R, N) the participating clients' ids.
    anchor : array
        (R, N, d) the point communication hands to each client (w^t, or x_i after mixing).
    lr : array
        (R, 1, 1) the local step size this round.
    view : object
        The selected clients' data (the problem's client view in the numpy engine).
    state : State
        The batch's state.
    oracle : object, optional
        The round's local oracle (for rules that ask it for more than a gradient: ``ProximalSolve``).
    w0, wK : array, optional
        (R, N, d) the local starts and the local ends.
    sent : array, optional
        (R, N, d) what the server receives (``wK`` unless a compressor changes it).
    w_next : array, optional
        (R, d) the global model after communication.
    extra : dict, optional
        Scratch space shared by the plug-ins within the round (``global_update``, ``direction_sum``, ...).
    streams : object, optional
        The batch's random streams (for plug-ins that draw, e.g. a time-varying topology).
    """

    t: int  # the round index, 0..T-1
    K: int  # local steps per round (RunConfig.local_steps); local step k of round t is step s = t K + k
    sel: np.ndarray  # (R, N) participating client ids
    anchor: Any  # (R, N, d) the point communication hands to each client (w^t, or x_i after mixing)
    lr: Any  # (R, 1, 1) local step size this round
    view: Any  # the selected clients' data (problems.ClientView in sim/)
    state: State
    oracle: Any = None  # the round's LocalOracle (rules that ask it for more than a gradient: ProximalSolve)
    w0: Any = None  # (R, N, d) local start
    wK: Any = None  # (R, N, d) local end
    sent: Any = None  # (R, N, d) what the server receives (wK unless a compressor changes it)
    w_next: Any = None  # (R, d) global model after communication
    extra: dict[str, Any] = field(default_factory=dict)
    streams: Any = None  # the batch's RunStreams (for plug-ins that draw, e.g. a time-varying gossip topology)

    def gather(self, key: str):
        arr = self.state.clients[key]
        if self.sel is every_client(arr.shape[0], arr.shape[1]):  # every client in order: a copy, no indexing
            return ops(arr).copy(arr)
        return ops(arr).take_clients(arr, self.sel)

    def scatter(self, key: str, values) -> None:
        arr = self.state.clients[key]
        ops(arr).put_clients(arr, self.sel, values)


def broadcast_clients(w: np.ndarray, n_clients: int) -> np.ndarray:
    """``np.broadcast_to(w[:, None, :], (R, n_clients, d))`` for w (R, d): the same read-only view (stride 0 along the
    clients), built without broadcast_to's Python layers where w is C-contiguous (the server hands it out every
    round)."""
    if w.ndim == 2 and w.flags.c_contiguous:
        R, d = w.shape
        # numpy's strides: 0 along the clients and along any axis of length 1
        strides = (w.strides[0] if R > 1 else 0, 0, w.strides[1] if d > 1 else 0)
        out = np.ndarray((R, n_clients, d), w.dtype, w, 0, strides)
        out.flags.writeable = False
        return out
    return np.broadcast_to(w[:, None, :], (w.shape[0], n_clients, w.shape[1]))


@functools.lru_cache(maxsize=256)
def every_client(runs: int, n_clients: int) -> np.ndarray:
    """The participants of a round in which every client trains: (runs, n_clients), each row 0..C-1, read-only. One
    array per shape, so the round protocol recognizes it by identity (``RoundState.gather``, ``commit_round``)."""
    return np.broadcast_to(np.arange(n_clients), (runs, n_clients))


def on_request(plugin: "Plugin", name: str) -> bool:
    """Whether ``plugin`` records its measure ``name`` only when it is named (``measures_on_request``: True for all of
    them, or a tuple of names)."""
    flag = getattr(plugin, "measures_on_request", False)
    return name in flag if isinstance(flag, (tuple, list, set, frozenset)) else bool(flag)


class Plugin:
    """Base: every hook is a no-op; a plug-in overrides what it needs.

    A plug-in may also contribute round measures: ``measures()`` names them (with descriptions) and
    ``measure(rs)`` returns {name: (R,) array} after communication (rs.w_next is then set). They are recorded
    whenever the plug-in is part of the algorithm (``simulate`` and the torch trainer add them); a plug-in whose
    measures cost real work sets ``measures_on_request = True`` (or a tuple naming the costly ones), and they are
    then recorded only when named in ``simulate(measures=...)``. Setting ``needs_direction_sum = True`` makes the
    engine keep rs.extra['direction_sum'] (R, N, d), the sum over local steps of the directions the steps used; a
    plug-in that reads it only in its own measures also sets ``direction_sum_for_measures = True``, and the numpy
    engine then keeps the sum only when one of those measures is recorded.
    """

    name = "plugin"
    needs_direction_sum = False
    direction_sum_for_measures = False
    measures_on_request = False

    def setup(self, state: State, runs: int, n_clients: int, dim: int) -> None:
        pass

    def round_start(self, rs: RoundState) -> None:
        pass

    def round_end(self, rs: RoundState) -> None:
        pass

    def params(self) -> dict[str, Any]:
        return {}

    def measures(self) -> dict[str, str]:
        return {}

    def measure_dimensions(self) -> dict[str, str]:
        """The dimension of each measure of ``measures()`` in the loss f and the parameter w (e.g. {"gap": "f"},
        {"dist2": "w^2"}, {"ratio": "1"}): a bound whose left side is the measure is checked against it."""
        return {}

    def measure(self, rs: RoundState) -> dict[str, Any]:
        return {}

    # per-run hyperparameters, stored as (R, 1, 1) and converted to the state's backend on use
    def set_param(self, name: str, value: np.ndarray) -> None:
        """Store a per-run hyperparameter (length R) for ``param``; call it in ``setup``."""
        self.__dict__.setdefault("_params", {})[name] = np.asarray(value, dtype=np.float64)[:, None, None]
        self.__dict__.setdefault("_converted", {}).pop(name, None)

    def param(self, name: str, like=None):
        """A per-run hyperparameter as (R, 1, 1), in ``like``'s backend, dtype and device (numpy without ``like``)."""
        raw = self.__dict__["_params"][name]
        if like is None or isinstance(like, np.ndarray):
            return raw
        key = (name, str(getattr(like, "device", "")), str(getattr(like, "dtype", "")))
        conv = self.__dict__.setdefault("_converted", {})
        if key not in conv:
            conv[key] = ops(like).asarray(raw, like=like)
        return conv[key]

    def __repr__(self):
        ps = ", ".join(f"{k}={_short(v)}" for k, v in self.params().items())
        return f"{type(self).__name__}({ps})"


def _short(v):
    a = np.asarray(v)
    if a.ndim == 0:
        return f"{float(a):g}" if np.issubdtype(a.dtype, np.number) else repr(v)
    u = np.unique(a)
    return f"{float(u[0]):g}" if u.size == 1 else f"[{u.size} values {u.min():g}..{u.max():g}]"


# ---------------------------------------------------------------------------------- initialisation


class PlainInit(Plugin):
    """w_{i,0}^t = anchor (w^t for a server; the mixed client model under gossip)."""

    name = "plain"

    def init(self, rs: RoundState):
        return ops(rs.anchor).copy(rs.anchor)


class RelaxedInit(Plugin):
    """Relaxed initialisation (FedInit, seed 000 Alg. 1 line 6 / seed 001):
    w_{i,0}^t = anchor + beta (anchor - w_i^last), w_i^last = client i's last local model (the
    authors' simulator; w^0 before its first round). Under gossip the anchor is x_i^t after
    mixing and this is OledFL's opposite-lookahead initialisation (seed 002 / shared README).

    Its measure ``eq15_residual`` (seed 000 eq. 15, recorded when named) checks the update identity of FedInit.

    Parameters
    ----------
    beta : float or array_like
        The relaxation coefficient (a finite number; one value per run allowed).
    """

    name = "relaxed"
    needs_direction_sum = True
    direction_sum_for_measures = True  # eq15_residual only
    measures_on_request = True  # eq15_residual costs ~14% of a small FedInit run: recorded when named

    def __init__(self, beta):
        self.beta = beta

    def params(self):
        return {"beta": self.beta}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("beta", per_run(check_float("beta", self.beta, size=runs), runs))

    def init(self, rs: RoundState):
        last = rs.gather("last_local")
        rs.extra["relaxed_last"] = last
        return rs.anchor + self.param("beta", rs.anchor) * (rs.anchor - last)

    def measures(self):
        return {"eq15_residual": "max_i ||(w^{t+1} - w_{i,K}) - [beta (w_i^last - w^t) + (w^{t+1} - w^t) + eta sum_k "
                                 "d_{i,k}]|| / max_i ||w^{t+1} - w_{i,K}|| (seed 000 eq. 15, server communication)"}

    def measure(self, rs):
        xp = ops(rs.wK)
        w = rs.state.w[:, None, :]
        w1 = rs.w_next[:, None, :]
        lhs = w1 - rs.wK
        rhs = self.param("beta", rs.wK) * (rs.extra["relaxed_last"] - w) + (w1 - w) + rs.lr * rs.extra["direction_sum"]
        scale = xp.max(xp.norm(lhs, axis=-1), axis=1)
        err = xp.max(xp.norm(lhs - rhs, axis=-1), axis=1)
        return {"eq15_residual": err / (scale + (scale == 0))}


# ---------------------------------------------------------------------------------- local steps


class LocalTransform(Plugin):
    """A local-step rule: ``direction(rs, g, w, grad_at)`` maps the stochastic gradient g at w to the step
    direction; ``grad_at(x)`` is the stochastic gradient at another point with the same draw. ``w`` (R, N, d) is the
    local iterate *before* the step being taken, ``rs.t`` the round and ``rs.K`` the local steps per round; the
    local step's index k is not passed (a rule that needs it counts calls from ``round_start``). To measure
    something at every local step (the averaged iterate, its running averages), use the engine's step measures
    (``STEP_MEASURES``) rather than a transform.

    A transform that adds a term to the local objective (F_p = f_p + term, e.g. seed 003 eq. 5) sets
    ``objective = True`` and implements ``objective_grad(rs, w)``: the engine adds that gradient to g and to
    every ``grad_at(x)``, so rules such as SAM see the gradient of the whole local objective.
    """

    objective = False

    def direction(self, rs: RoundState, g, w, grad_at: Callable):
        raise NotImplementedError

    def objective_grad(self, rs: RoundState, w):
        raise NotImplementedError

    def certify(self, name: str, problem=None, visited: Any = None) -> Certificate:
        """What the rule satisfies (an objective term answers 'regularizer_smooth'): unknown unless it says."""
        return undeclared(name, self)


class SAM(LocalTransform):
    """Sharpness-aware step: the gradient at w + rho g/||g||, same minibatch / noise draw.

    Parameters
    ----------
    rho : float or array_like
        The perturbation radius (>= 0; one value per run allowed).
    """

    name = "sam"

    def __init__(self, rho):
        self.rho = rho

    def params(self):
        return {"rho": self.rho}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("rho", per_run(check_float("rho", self.rho, 0.0, size=runs), runs))

    def direction(self, rs, g, w, grad_at):
        norm = ops(g).norm(g, axis=-1, keepdims=True)
        eps = self.param("rho", g) * g / (norm + (norm == 0))
        return grad_at(w + eps)


class ControlVariates(LocalTransform):
    """SCAFFOLD (Karimireddy et al. 2020, option II): direction g - c_i + c.
    After the round c_i <- c_i - c + (w_{i,0} - w_{i,K}) / (K eta), c <- c + (1/C) sum_{i in N} (c_i' - c_i).
    (With relaxed initialisation the displacement is measured from the local start w_{i,0}.)"""

    name = "scaffold"

    def setup(self, state, runs, n_clients, dim):
        self._C = n_clients
        xp = ops(state.w)
        state.clients["scaffold_ci"] = xp.zeros((runs, n_clients, dim), like=state.w)
        state.server["scaffold_c"] = xp.zeros((runs, dim), like=state.w)

    def round_start(self, rs):
        rs.extra["scaffold_ci"] = rs.gather("scaffold_ci")

    def direction(self, rs, g, w, grad_at):
        return g - rs.extra["scaffold_ci"] + rs.state.server["scaffold_c"][:, None, :]

    def round_end(self, rs):
        xp = ops(rs.wK)
        ci = rs.extra["scaffold_ci"]
        c = rs.state.server["scaffold_c"][:, None, :]
        ci_new = ci - c + (rs.w0 - rs.wK) / (rs.K * rs.lr)
        rs.scatter("scaffold_ci", ci_new)
        rs.state.server["scaffold_c"] = rs.state.server["scaffold_c"] + xp.sum(ci_new - ci, axis=1) / self._C


class ClientMomentum(LocalTransform):
    """Client-level momentum (FedCM, Xu et al. 2021; MoFedSAM's / seed 003 Alg. 1 line 10): direction
    alpha g + (1 - alpha) Delta, with Delta from the previous round (0 before the first).

    delta='mean' (FedCM): Delta = mean_{i in N} (w_{i,0} - w_{i,K}), the plain mean of the client updates.
    delta='global_update' (seed 003 Alg. 1 lines 5, 10, 15): Delta = the global update Delta^{t+1} the
    aggregator applied (w^{t+1} = w^t - eta_g Delta^{t+1}), e.g. FedMRUR's normalized aggregate; the
    aggregator reports it in rs.extra['global_update'].
    units='gradient' divides Delta by K eta (FedCM's scaling, a gradient-sized direction);
    units='displacement' uses it as is (seed 003 Alg. 1 as printed).

    Parameters
    ----------
    alpha : float or array_like
        The weight of the fresh gradient, in [0, 1] (one value per run allowed).
    delta : {"mean", "global_update"}, default "mean"
        What Delta is: the mean client update, or the global update the aggregator applied.
    units : {"gradient", "displacement"}, default "gradient"
        Whether Delta is divided by K eta (a gradient-sized direction) or used as is.
    """

    name = "client_momentum"

    def __init__(self, alpha, delta: str = "mean", units: str = "gradient"):
        self.alpha = alpha
        self.delta = check_choice("delta", delta, ("mean", "global_update"))
        self.units = check_choice("units", units, ("gradient", "displacement"))

    def params(self):
        out = {"alpha": self.alpha}
        if (self.delta, self.units) != ("mean", "gradient"):
            out.update(delta=self.delta, units=self.units)
        return out

    def setup(self, state, runs, n_clients, dim):
        self.set_param("alpha", per_run(check_float("alpha", self.alpha, 0.0, 1.0, size=runs), runs))
        state.server["momentum_delta"] = ops(state.w).zeros((runs, dim), like=state.w)

    def direction(self, rs, g, w, grad_at):
        a = self.param("alpha", g)
        return a * g + (1 - a) * rs.state.server["momentum_delta"][:, None, :]

    def round_end(self, rs):
        xp = ops(rs.wK)
        if self.delta == "mean":
            scale = rs.K * rs.lr if self.units == "gradient" else 1.0
            rs.state.server["momentum_delta"] = xp.mean((rs.w0 - rs.wK) / scale, axis=1)
            return
        delta = rs.extra.get("global_update")
        if delta is None:
            raise ParameterError("delta", "global_update", "used with an aggregator that reports its global update "
                                 "(MeanModels, MeanUpdates, NormalizedAggregation)")
        rs.state.server["momentum_delta"] = delta / (rs.K * rs.lr[:, :, 0]) if self.units == "gradient" else delta


class Prox(LocalTransform):
    """FedProx: direction g + mu (w - anchor).

    The gradient of the local objective f_i(w) + (mu/2) ||w - w^t||^2, taken by the local steps.

    Parameters
    ----------
    mu : float or array_like
        The proximal coefficient (>= 0; one value per run allowed).
    """

    name = "prox"

    def __init__(self, mu):
        self.mu = mu

    def params(self):
        return {"mu": self.mu}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("mu", per_run(check_float("mu", self.mu, 0.0, size=runs), runs))

    def direction(self, rs, g, w, grad_at):
        return g + self.param("mu", g) * (w - rs.anchor)


class ProximalSolve(LocalTransform):
    """FedProx with each client's exact proximal solve (Li et al. 2020, MLSys, Alg. 2 with gamma = 0: w_i^{t+1} =
    argmin_w h_i(w; w^t) = f_i(w) + (mu/2) ||w - w^t||^2): the direction (w - p)/lr with p that argmin (anchor w^t),
    so the first local step lands on p and the later ones stay there. The gradient g is not used; the solve is the
    round's oracle's ``prox(anchor, mu)`` (exact on least squares; the PEP's proximal step).

    Parameters
    ----------
    mu : float or array_like
        The proximal coefficient (> 0; one value per run allowed).
    """

    name = "prox_solve"

    def __init__(self, mu):
        self.mu = mu

    def params(self):
        return {"mu": self.mu}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("mu", per_run(check_float("mu", self.mu, 0.0, low_inclusive=False, size=runs), runs))

    def round_start(self, rs):
        rs.extra["prox_solve"] = None

    def direction(self, rs, g, w, grad_at):
        p = rs.extra.get("prox_solve")
        if p is None:
            prox = getattr(rs.oracle, "prox", None)
            if prox is None:
                raise ParameterError("oracle", type(rs.oracle).__name__, "an oracle with an exact proximal solve "
                                     "(prox) for ProximalSolve")
            p = rs.extra["prox_solve"] = prox(rs.anchor, self.param("mu", rs.anchor))
        return (w - p) / rs.lr


def _per_client(values) -> str:
    """One value per client, as text (a plug-in's per-run parameters are numbers or arrays of length R)."""
    return ",".join(f"{v:g}" for v in np.asarray(values, dtype=float).reshape(-1))


class ClientSteps(LocalTransform):
    """Per-client numbers of local steps tau_i <= K (FedNova's heterogeneous local work, Wang et al. 2020,
    arXiv:2007.07481 Sec. 4): client i's direction is its gradient at steps k < tau_i and 0 after, so it ends at
    w_{i,tau_i}. ``steps``: one count per client (the round protocol runs K = max tau_i steps).

    Parameters
    ----------
    steps : sequence of int
        tau_i for each client (integers >= 1, one per client, each at most ``local_steps``).
    """

    name = "client_steps"

    def __init__(self, steps):
        self.steps = steps

    def params(self):  # per client, not per run: as text
        return {"steps": _per_client(self.steps)}

    def setup(self, state, runs, n_clients, dim):
        tau = np.asarray(self.steps)
        if tau.shape != (n_clients,) or not np.issubdtype(tau.dtype, np.integer) or tau.min() < 1:
            raise ParameterError("steps", self.steps, f"{n_clients} integers >= 1 (one per client)")
        self._tau = tau.astype(np.int64)

    def round_start(self, rs):
        if self._tau.max() > rs.K:
            raise ParameterError("steps", self._tau.tolist(), f"at most local_steps = {rs.K}")
        rs.extra["client_steps"] = (0, self._tau[np.asarray(rs.sel)])  # (calls so far, tau of the participants)

    def direction(self, rs, g, w, grad_at):
        k, tau = rs.extra["client_steps"]
        rs.extra["client_steps"] = (k + 1, tau)
        if (tau > k).all():
            return g
        return g * ops(g).asarray((tau > k)[:, :, None].astype(np.float64), like=g)


# ---------------------------------------------------------------------------------- compression


class Compressor(Plugin):
    """Uplink compression: ``compress(rs)`` returns what the server receives in place of rs.wK
    (e.g. quantized weights, or w0 + Q(wK - w0) for update compression), shape (R, N, d).
    Error feedback keeps its memory in ``state.clients``."""

    def compress(self, rs: RoundState):
        raise NotImplementedError


# ---------------------------------------------------------------------------------- aggregation


class Aggregator(Plugin):
    """Server rule: the new global model (R, d) from what the server received (rs.sent)."""

    def aggregate(self, rs: RoundState):
        raise NotImplementedError


class MeanModels(Aggregator):
    """Algorithm 1 of seed 000/001, line 13: w^{t+1} = (1/N) sum_{i in N} w_{i,K}^t."""

    name = "mean_models"

    def aggregate(self, rs):
        w_next = ops(rs.sent).mean(rs.sent, axis=1)
        rs.extra["global_update"] = rs.state.w - w_next
        return w_next


class MeanUpdates(Aggregator):
    """The FedInit authors' simulator (shared README): w^{t+1} = w^t + eta_g mean_i (w_{i,K} - w_{i,0}).

    Parameters
    ----------
    server_lr : float or array_like, default 1.0
        eta_g, the server step (> 0; one value per run allowed).
    """

    name = "mean_updates"

    def __init__(self, server_lr=1.0):
        self.server_lr = server_lr

    def params(self):
        return {"server_lr": self.server_lr}

    def setup(self, state, runs, n_clients, dim):
        self.set_param("server_lr", per_run(check_float("server_lr", self.server_lr, 0.0, low_inclusive=False,
                                                         size=runs), runs))

    def aggregate(self, rs):
        eta_g = self.param("server_lr", rs.sent)[:, :, 0]
        update = ops(rs.sent).mean(rs.w0 - rs.sent, axis=1)
        rs.extra["global_update"] = update
        return rs.state.w - eta_g * update


class NormalizedAveraging(Aggregator):
    """FedNova's server rule (Wang et al. 2020, arXiv:2007.07481, eq. (7) with vanilla local SGD, a_i = 1 of length
    tau_i): w^{t+1} = w^t - eta_g tau_eff sum_i p_i (w_{i,0} - w_{i,K}) / tau_i, tau_eff = sum_i p_i tau_i, over the
    participants (p_i renormalized to sum to 1 over them). ``steps``: tau_i per client (with ``ClientSteps``);
    ``weights``: p_i per client (default 1/C).

    Parameters
    ----------
    steps : sequence of int
        tau_i, the local steps of each client (integers >= 1, one per client).
    weights : sequence of float, optional
        p_i, each client's weight (positive, one per client); default 1/C.
    server_lr : float or array_like, default 1.0
        eta_g, the server step (> 0; one value per run allowed).
    """

    name = "normalized_averaging"

    def __init__(self, steps, weights=None, server_lr=1.0):
        self.steps, self.weights, self.server_lr = steps, weights, server_lr

    def params(self):
        out = {"steps": _per_client(self.steps), "server_lr": self.server_lr}
        if self.weights is not None:
            out["weights"] = _per_client(self.weights)
        return out

    def setup(self, state, runs, n_clients, dim):
        tau = np.asarray(self.steps)
        if tau.shape != (n_clients,) or not np.issubdtype(tau.dtype, np.integer) or tau.min() < 1:
            raise ParameterError("steps", self.steps, f"{n_clients} integers >= 1 (one per client)")
        p = np.full(n_clients, 1.0 / n_clients) if self.weights is None else np.asarray(self.weights, dtype=float)
        if p.shape != (n_clients,) or not np.all(np.isfinite(p)) or p.min() <= 0:
            raise ParameterError("weights", self.weights, f"{n_clients} positive numbers (one per client)")
        self._tau, self._p = tau.astype(np.float64), p
        self.set_param("server_lr", per_run(check_float("server_lr", self.server_lr, 0.0, low_inclusive=False,
                                                         size=runs), runs))

    def aggregate(self, rs):
        sel = np.asarray(rs.sel)
        p = self._p[sel]
        p = p / p.sum(axis=1, keepdims=True)  # (R, N)
        tau = self._tau[sel]
        coef = p * (p * tau).sum(axis=1, keepdims=True) / tau  # tau_eff p_i / tau_i
        xp = ops(rs.sent)
        update = xp.sum(xp.asarray(coef[:, :, None], like=rs.sent) * (rs.w0 - rs.sent), axis=1)
        rs.extra["global_update"] = update
        return rs.state.w - self.param("server_lr", rs.sent)[:, :, 0] * update


# ---------------------------------------------------------------------------------- communication


class Communication(Plugin):
    """Who trains each round, where they start, and how their results combine.

    participants(streams, R, C, N) -> (R, N) client ids; anchor(rs_state, sel) -> (R, N, d);
    combine(rs, aggregator) -> the new global model (R, d) (and, for gossip, new client models).
    """

    def participants(self, streams, runs: int, n_clients: int, per_round: int) -> np.ndarray:
        raise NotImplementedError

    def anchor(self, state: State, sel: np.ndarray):
        raise NotImplementedError

    def combine(self, rs: RoundState, aggregator: Aggregator):
        raise NotImplementedError


class Server(Communication):
    """A central server: N of C clients sampled uniformly without replacement each round (all of
    them when N = C, with no draw), each starting from the broadcast w^t; the aggregator combines."""

    name = "server"

    def participants(self, streams, runs, n_clients, per_round):
        if per_round < n_clients:
            return streams.choose_clients(n_clients, per_round)
        return every_client(runs, n_clients)

    def anchor(self, state, sel):
        w = state.w
        N = sel.shape[1]
        if isinstance(w, np.ndarray):
            return broadcast_clients(w, N)
        return ops(w).broadcast_to(w[:, None, :], (w.shape[0], N, w.shape[1]))

    def combine(self, rs, aggregator):
        return aggregator.aggregate(rs)


# ---------------------------------------------------------------------------------- gradient oracles


class Oracle:
    """How a local step's stochastic gradient is drawn (numpy engine)."""

    name = "oracle"

    def draws(self, streams, R: int, N: int, K: int, d: int, sizes: np.ndarray) -> Any:
        return None

    def grad(self, view, w, k: int, draws: Any):
        raise NotImplementedError

    def descend(self, view, w0, lr, steps: int, draws: Any, direction_sum: bool = False):
        """``steps`` plain local steps w <- w - lr grad(view, w, k, draws) at once, through the view's
        ``ClientView.descend``: (w_K, the sum of the directions or None), or None when there is no faster route than
        step by step (the default; the round protocol then calls ``grad`` at every step)."""
        return None

    def params(self):
        return {}

    def noise_variance(self, problem, w: np.ndarray | None = None):
        """The gradient-noise variance: sup over clients i and points w of E||g_i(w) - grad f_i(w)||^2, as a
        problems.Constant saying how it is known; with points w (R, d), its value at each point (max over clients)."""
        raise NotImplementedError(f"{type(self).__name__} states no gradient-noise variance")

    # ---- what the oracle satisfies (fedtheory.sim.certificates)
    def certify(self, name: str, problem=None, visited: Any = None) -> Certificate:
        """The oracle's answer to the catalogue assumption ``name`` (subject 'oracle') on ``problem``: certified with
        its constant (sigma, sigma_star, G), refused, or unknown; ``visited``: the run's measures, for constants that
        hold only on the visited region."""
        if problem is None:
            return unknown(name, f"{type(self).__name__}: the oracle's noise depends on the problem; none was given")
        changed = self._changed_without_certificate()
        if changed and name in ("bounded_variance", "noise_at_optimum", "bounded_gradient"):
            return unknown(name, f"{type(self).__name__} changes how gradients are drawn ({changed}) but states no "
                                 "noise of its own (noise_variance, client_noise): its parent's certificate does not "
                                 "carry over").with_by(type(self).__name__)
        if name == "bounded_variance":
            cert = self._variance_certificate(problem, visited)
        elif name == "noise_at_optimum":
            cert = self._optimum_certificate(problem)
        elif name == "bounded_gradient":
            cert = self._second_moment_certificate(problem, visited)
        elif name == "expected_smoothness":
            cert = self._expected_smoothness(problem)
        else:
            cert = undeclared(name, self)
        return cert.with_by(type(self).__name__)

    def _changed_without_certificate(self) -> str:
        """The sampling methods (grad, draws) a subclass overrides below the class that states its noise: a biased
        or otherwise changed oracle inherits no certificate."""
        def owner(attr):
            return next(c for c in type(self).__mro__ if attr in c.__dict__)
        stated = owner("noise_variance")
        return ", ".join(a for a in ("grad", "draws") if issubclass(owner(a), stated) and owner(a) is not stated)

    def _variance_certificate(self, problem, visited) -> Certificate:
        try:
            var = self.noise_variance(problem)
        except NotImplementedError as exc:
            return unknown("bounded_variance", str(exc))
        v = np.asarray(var.value, dtype=float)
        if np.all(np.isfinite(v)):
            return certified("bounded_variance", var.note, kind=var.kind, sigma=float(np.sqrt(v)))
        return refused("bounded_variance", f"{var.note}")

    def _optimum_certificate(self, problem) -> Certificate:
        w_star = np.asarray(problem.constants["w_star"].value, dtype=float)[None]
        try:
            v = float(np.mean(self.client_noise(problem, w_star)))
        except NotImplementedError as exc:
            return unknown("noise_at_optimum", str(exc))
        return certified("noise_at_optimum", f"(1/C) sum_i E||g_i(w*) - grad f_i(w*)||^2 at w* ({self.name} oracle)",
                         kind=problem.constants["w_star"].kind, sigma_star=float(np.sqrt(v)))

    def client_noise(self, problem, w: np.ndarray) -> np.ndarray:
        """E||g_i(w) - grad f_i(w)||^2 of every client at one point w (1, d): (C,)."""
        raise NotImplementedError(f"{type(self).__name__} states no per-client noise")

    def _second_moment_certificate(self, problem, visited) -> Certificate:
        """E||g_i||^2 = ||grad f_i||^2 + E||g_i - grad f_i||^2 <= G_grad^2 + sigma^2 (unbiased oracle)."""
        grad = problem.certify("bounded_grad_norm", visited)
        var = self._variance_certificate(problem, visited)
        for part in (grad, var):
            if part.status != "certified":
                return Certificate("bounded_gradient", part.status, {},
                                   f"E||g_i||^2 = ||grad f_i||^2 + noise: {part.how}")
        region = "visited" if "visited" in (grad.region, var.region) else grad.region
        G = np.sqrt(np.asarray(grad.constants["G"], dtype=float) ** 2
                    + np.asarray(var.constants["sigma"], dtype=float) ** 2)
        return certified("bounded_gradient", f"G^2 = G_grad^2 + sigma^2 (an unbiased oracle): {grad.how}; {var.how}",
                         region=region, kind="measured" if region == "visited" else var.kind, G=G)

    def _visited_variance(self, problem, visited) -> Certificate | None:
        return None

    def _expected_smoothness(self, problem) -> Certificate:
        """Exact gradients, or noise that does not depend on w (it cancels between two points with the same sample):
        g_i(u) - g_i(v) = grad f_i(u) - grad f_i(v), so a convex L-smooth f_i gives L_exp = L (co-coercivity)."""
        convex, smooth = problem.certify("convex"), problem.certify("L_smooth")
        for part in (convex, smooth):
            if not part.certified:
                return Certificate("expected_smoothness", part.status, {},
                                   f"needs each f_i convex and L-smooth: {part.how}")
        return certified("expected_smoothness", f"g_i(u) - g_i(v) = grad f_i(u) - grad f_i(v) ({self.name} oracle): "
                                                f"co-coercivity of a convex L-smooth f_i; {smooth.how}",
                         kind=smooth.kind, L_exp=smooth.constants["L"])


class Exact(Oracle):
    """Full local gradients (sigma = 0)."""

    name = "exact"

    def grad(self, view, w, k, draws):
        return view.grad(w)

    def descend(self, view, w0, lr, steps, draws, direction_sum=False):
        return view.descend(w0, lr, steps, None, direction_sum)

    def noise_variance(self, problem, w=None):
        from .problems import Constant

        return Constant(0.0 if w is None else np.zeros(len(w)), "exact", "exact gradients: no noise")

    def client_noise(self, problem, w):
        return np.zeros(problem.n_clients)


class AdditiveNoise(Oracle):
    """grad f_i(w) + xi with xi ~ N(0, sigma2/d I): E xi = 0 and E||xi||^2 = sigma2 exactly.

    It certifies ``bounded_variance`` with sigma = sqrt(sigma2) on every problem.

    Parameters
    ----------
    sigma2 : float
        The noise variance E||xi||^2 (>= 0).
    """

    name = "additive"

    def __init__(self, sigma2: float):
        self.sigma2 = check_float("sigma2", sigma2, 0.0)

    def params(self):
        return {"sigma2": self.sigma2}

    def draws(self, streams, R, N, K, d, sizes):
        return streams.normal("noise", (K, N, d)) * np.sqrt(self.sigma2 / d)  # (R, K, N, d)

    def grad(self, view, w, k, draws):
        return view.grad(w) + draws[:, k]

    def descend(self, view, w0, lr, steps, draws, direction_sum=False):
        return view.descend(w0, lr, steps, draws, direction_sum)

    def noise_variance(self, problem, w=None):
        from .problems import Constant

        v = self.sigma2 if w is None else np.full(len(w), self.sigma2)
        return Constant(v, "exact", "E||xi||^2 = sigma2 at every point and client, whatever the problem")

    def client_noise(self, problem, w):
        return np.full(problem.n_clients, self.sigma2)


class Minibatch(Oracle):
    """Mean gradient over ``batch_size`` of the client's samples, drawn uniformly with replacement.

    Its noise comes from the problem's per-sample gradients (``noise_variance``): exact at given points; over every
    w only where the problem bounds it (least squares certifies it on the visited region only).

    Parameters
    ----------
    batch_size : int
        The samples per stochastic gradient (>= 1).
    """

    name = "minibatch"

    def __init__(self, batch_size: int):
        self.batch_size = check_int("batch_size", batch_size, 1)

    def params(self):
        return {"batch_size": self.batch_size}

    def draws(self, streams, R, N, K, d, sizes):
        u = streams.uniform("batch", (K, N, self.batch_size))  # (R, K, N, b)
        return u, sizes

    def grad(self, view, w, k, draws):
        u, sizes_sel = draws
        idx = np.floor(u[:, k] * sizes_sel[..., None]).astype(np.int64)
        return view.grad_batch(w, idx)

    def noise_variance(self, problem, w=None):
        """One-sample variance / b (b samples drawn independently, with replacement): from the problem's
        per-sample gradients; with points w, exact there; without, the problem's sup over w (inf if unbounded)."""
        from .problems import Constant

        b = self.batch_size
        if w is not None:
            var = problem.sample_grad_stats(np.asarray(w, dtype=np.float64))[1]
            return Constant(var / b, "exact", "max_i (1/S_i) sum_j ||grad f(w; z_ij) "
                                              f"- grad f_i(w)||^2 / {b} at the points")
        one = problem.sample_gradient_variance()
        return Constant(one.value / b, one.kind, f"one-sample variance / {b}: {one.note}")

    def client_noise(self, problem, w):
        return problem.client_sample_variances(np.asarray(w, dtype=np.float64)) / self.batch_size

    def _expected_smoothness(self, problem) -> Certificate:
        """A minibatch of convex per-sample losses, each at most L_max-smooth: L_exp <= L_max (Gower et al. 2019,
        Prop. 3.7; the batch's mean keeps the bound)."""
        try:
            c = problem.sample_smoothness()
        except NotImplementedError as exc:
            return unknown("expected_smoothness", str(exc))
        if not np.isfinite(c.value):
            return refused("expected_smoothness", c.note)
        return certified("expected_smoothness", f"the largest per-sample smoothness ({c.note}): Gower et al. 2019, "
                                                "Prop. 3.7", kind="bound" if c.kind == "exact" else c.kind,
                         L_exp=c.value)

    def _visited_variance(self, problem, visited) -> Certificate | None:
        b = self.batch_size
        return from_visited("bounded_variance", visited, "visited_max_grad_var", "sigma", lambda v: np.sqrt(v / b),
                            f"sigma^2 = the largest one-sample variance over the visited points / {b}",
                            globally="unbounded over every w")

    def _variance_certificate(self, problem, visited) -> Certificate:
        cert = super()._variance_certificate(problem, visited)
        if cert.status == "certified":
            return cert
        return self._visited_variance(problem, visited) if visited is not None else \
            refused("bounded_variance", f"{cert.how}; {VISITED_ONLY} 'visited_max_grad_var'")
