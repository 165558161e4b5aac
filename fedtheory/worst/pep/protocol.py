"""The PEP as a third backend of the round protocol: the simulator's own algorithm plug-ins, run on PEPit points.

``sim.rounds.run_round`` is written once against ``sim.backend.ops``; numpy and torch arrays are two backends. Here
the arrays hold PEPit ``Point`` objects (:class:`PointArray`, shape (1, N, 1): one run, N clients, the last axis a
vector of any dimension), the oracle returns the clients' gradients as new PEPit leaves (:class:`PEPOracle`), and
the namespace :class:`PEPOps` offers the operations a rule linear in points and gradients needs. Running T rounds
of an ``Algorithm`` through the unchanged ``run_round`` and ``commit_round`` writes its iterates as combinations of
the start w^0 and the gradients: :func:`protocol_pep` adds the function class, the heterogeneity class, the initial
condition and the measure, and returns the PEP as numbers (``FederatedPEP``, solved by ``solve_pep``).

What a rule may do: add and subtract points, scale them by numbers (per run, per client), average or sum over
clients, gather and scatter clients' state, take gradient steps, ask the oracle for an exact proximal point
(``ProximalSolve``), and mix clients' models with a fixed matrix (``Gossip``). Anything else is refused with one
line naming the operation and the plug-in (:class:`PEPRefusal`): a norm (SAM, normalized aggregation), a product
of two points, a comparison, any other numpy function (quantization), a random draw (client sampling, a
time-varying topology), a stochastic oracle.

Classes (:class:`ProtocolSetting`): every f_i L-smooth and client_mu-strongly convex (PEPit's
``SmoothStronglyConvexFunction``, exact interpolation) or L-smooth (``SmoothFunction``); f = sum_i p_i f_i with
p_i the weights (default 1/C); heterogeneity at the optimum ((1/C) sum_i ||grad f_i(x*)||^2 <= zeta^2, weighted by
p_i: exact) or the (G, B) class ((1/C) sum_i ||grad f_i(w)||^2 <= G^2 + B^2 ||grad f(w)||^2 at every queried point:
a relaxation of "for all w"); mixing with the topology's own matrix (exact) or any symmetric doubly stochastic
matrix whose eigenvalues other than 1 lie in [lambda_-, lambda_+] (Colla & Hendrickx, arXiv:2203.05963 / PESTO's
``DGD_spectral_perf``: necessary conditions, so an upper bound).

Symmetry: when the PEP is invariant under relabelling the clients (checked on the built points, not assumed: every
query point, gradient and iterate is mapped onto its relabelled counterpart), it is solved reduced
(``reduction.py``) with one representative constraint per client orbit; otherwise (weighted clients, per-client
step counts, a ring) every constraint is written and the full Gram matrix is solved.
"""
from __future__ import annotations

import itertools
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..._validation import FedTheoryError, ParameterError, check_choice, check_float, check_int
from .build import FederatedPEP, PairRows, Query, expr_coef, interpolation_template, leaf_coef, sparse_row
from .setting import require_pep

__all__ = ["HETEROGENEITY", "MIXING", "PEPOps", "PEPOracle", "PEPRefusal", "PointArray", "ProtocolSetting",
           "SpectralMixing", "protocol_pep"]

HETEROGENEITY = (None, "optimum", "GB", "bounded_gradient", "local_dissimilarity")
MIXING = ("matrix", "spectral")
INITIALS = ("distance", "function", "agents_gap", "none", "gradient")
# the measures: at the server's model w^T (the agents' mean under gossip) and over its rounds; at the clients' mean
# xbar_s before every local step s = t K + k (the engine's step measures); at the agents' own models (gossip); the
# clients' divergence from the server's model (the engine's Delta^t)
METRIC_NAMES = ("opt_error", "dist2", "grad_norm2", "avg_grad_norm2", "weighted_opt_error", "step_avg_grad_norm2",
                "step_avg_opt_error", "consensus2", "stacked_grad2", "divergence", "avg_divergence",
                "expected_sampled_change")
MAX_DRAW_POINTS = 400  # 'expected_sampled_change': the multisets of draws (each a point where every f_i is queried)
STAR_METRICS = ("opt_error", "dist2", "weighted_opt_error", "step_avg_opt_error")  # measures that need x* and f*
AGENT_METRICS = ("consensus2", "stacked_grad2")  # measures at the agents' own models (an algorithm that keeps them)
_TOL = 1e-12  # coefficients this small (relative) are rounding: two points that differ by them are one point


class PEPRefusal(FedTheoryError, ValueError):
    """An operation a PEP cannot express, named with the plug-in that asked for it (raised by
    :func:`protocol_pep`). A :class:`~fedtheory.validation.FedTheoryError` and a :class:`ValueError`.

    Parameters
    ----------
    operation : str
        What the rule asked for (e.g. "a norm", "a random draw").
    plugin : str, default ""
        The algorithm plug-in whose rule asked for it ("" where not known).
    algorithm : str, default ""
        The algorithm's name.
    """

    def __init__(self, operation: str, plugin: str = "", algorithm: str = ""):
        self.operation, self.plugin, self.algorithm = operation, plugin, algorithm
        where = f" (plug-in {plugin}" + (f" of {algorithm})" if algorithm else ")") if plugin else \
            (f" ({algorithm})" if algorithm else "")
        super().__init__(f"the PEP cannot express {operation}{where}: a PEP runs deterministic rules linear in points "
                         "and gradients (and exact proximal steps)")

    def __reduce__(self):
        return (type(self), (self.operation, self.plugin, self.algorithm))


# ------------------------------------------------------------------------------------ points as arrays


def _null():
    from PEPit import Point

    return Point(is_leaf=False, decomposition_dict={})


def _scaled(p, c):
    from PEPit import Point

    c = float(c)
    if c == 0.0 or not p.decomposition_dict:
        return _null()
    if c == 1.0:
        return p
    return Point(is_leaf=False, decomposition_dict={k: v * c for k, v in p.decomposition_dict.items()})


def _plus(p, q):
    from PEPit import Point

    if not q.decomposition_dict:
        return p
    if not p.decomposition_dict:
        return q
    d = dict(p.decomposition_dict)
    for k, v in q.decomposition_dict.items():
        d[k] = d.get(k, 0.0) + v
    return Point(is_leaf=False, decomposition_dict={k: v for k, v in d.items() if v != 0.0})


def _minus(p, q):
    return _plus(p, _scaled(q, -1.0))


_SCALE = np.frompyfunc(_scaled, 2, 1)
_PLUS = np.frompyfunc(_plus, 2, 1)
_MINUS = np.frompyfunc(_minus, 2, 1)


def _numbers(x) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object or not np.issubdtype(a.dtype, np.number):
        raise PEPRefusal(f"arithmetic with {type(x).__name__} values")
    return a.astype(np.float64)


class PointArray:
    """An array of PEPit points in the simulator's layout: (R, N, d) or (R, d) with R = d = 1, the last axis standing
    for a vector of any dimension. Linear arithmetic with numbers (scalars, per-run or per-client arrays) and other
    point arrays; every other operation is refused (:class:`PEPRefusal`)."""

    __array_priority__ = 1000

    def __init__(self, data: np.ndarray, ops: "PEPOps"):
        self.data = data
        self._ops = ops

    def __fedtheory_ops__(self) -> "PEPOps":
        return self._ops

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"PointArray(shape={self.shape})"

    def _wrap(self, data) -> "PointArray":
        return PointArray(np.asarray(data, dtype=object), self._ops)

    def __getitem__(self, idx):
        return self._wrap(self.data[idx])

    def __setitem__(self, idx, value):
        if isinstance(value, PointArray):
            self.data[idx] = value.data
        elif np.all(_numbers(value) == 0):
            self.data[idx] = _null()
        else:
            raise PEPRefusal("storing numbers where points are held")

    # arithmetic: linear only
    def _combine(self, other, sign: float, reverse: bool = False):
        if isinstance(other, PointArray):
            a, b = (other.data, self.data) if reverse else (self.data, other.data)
            return self._wrap(_PLUS(a, b) if sign > 0 else _MINUS(a, b))
        c = _numbers(other)
        if np.any(c != 0):
            raise PEPRefusal("adding a constant to a point")
        out = self.data if not reverse else _SCALE(self.data, sign)
        return self._wrap(np.broadcast_to(out, np.broadcast_shapes(self.shape, c.shape)))

    def __add__(self, other):
        return self._combine(other, 1.0)

    def __radd__(self, other):
        return self._combine(other, 1.0, reverse=True)

    def __sub__(self, other):
        return self._combine(other, -1.0)

    def __rsub__(self, other):
        return self._combine(other, -1.0, reverse=True)

    def __neg__(self):
        return self._wrap(_SCALE(self.data, -1.0))

    def __pos__(self):
        return self

    def __mul__(self, other):
        if isinstance(other, PointArray):
            raise PEPRefusal("a product of two points (an inner product is not a step)")
        return self._wrap(_SCALE(self.data, _numbers(other)))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, PointArray):
            raise PEPRefusal("a division by a point")
        c = _numbers(other)
        if np.any(c == 0):
            raise PEPRefusal("a division by zero")
        return self._wrap(_SCALE(self.data, 1.0 / c))

    def __rtruediv__(self, other):
        raise PEPRefusal("a division by a point")

    def __pow__(self, other):
        raise PEPRefusal("a power of a point (a norm or an inner product)")

    def __abs__(self):
        raise PEPRefusal("an absolute value of a point")

    def __bool__(self):
        raise PEPRefusal("a truth value of points (a comparison or a branch on them)")

    def _compare(self, other):
        raise PEPRefusal("a comparison of points")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _compare
    __hash__ = None

    def __array__(self, dtype=None, copy=None):
        raise PEPRefusal("converting points to numbers")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            name = ufunc.__name__
            ops = {"add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
                   "true_divide": lambda a, b: a / b, "divide": lambda a, b: a / b}
            if name in ops and len(inputs) == 2:
                a, b = inputs
                if isinstance(a, PointArray):
                    return ops[name](a, b)
                if name == "add":
                    return b.__radd__(a)
                if name == "subtract":
                    return b.__rsub__(a)
                if name == "multiply":
                    return b.__rmul__(a)
                return b.__rtruediv__(a)
            if name == "negative":
                return -inputs[0]
        raise PEPRefusal(f"numpy's {ufunc.__name__}" + (f".{method}" if method != "__call__" else ""))

    def __array_function__(self, func, types, args, kwargs):
        raise PEPRefusal(f"numpy's {func.__name__}")


class PEPOps:
    """The ``sim.backend.ops`` namespace of :class:`PointArray`: the linear operations, and the others refused by
    name."""

    name = "pep"

    def __init__(self, builder: "_Builder"):
        self.builder = builder

    def asarray(self, x, like=None):
        return x if isinstance(x, PointArray) else _numbers(x)

    def _refuse(what):  # noqa: N805 - a factory of refusing methods
        def method(self, *args, **kwargs):
            raise PEPRefusal(what)
        return method

    norm = _refuse("a norm of a point (a norm-normalized update)")
    max = _refuse("a maximum over points")
    where = _refuse("a choice between points (where)")
    sqrt = _refuse("a square root")
    maximum = _refuse("a maximum of points")
    exp = _refuse("an exponential")
    matmul = _refuse("a matrix product of points (use Gossip's mixing)")

    def sum(self, x, axis=None, keepdims=False):
        data = x.data if axis is not None else x.data.reshape(-1)
        ax = axis if axis is not None else 0
        if data.shape[ax] == 0:
            raise PEPRefusal("a sum over no points")
        return x._wrap(_PLUS.reduce(data, axis=ax, keepdims=keepdims))

    def mean(self, x, axis=None, keepdims=False):
        n = x.data.shape[axis] if axis is not None else x.data.size
        return self.sum(x, axis, keepdims) / float(n)

    def zeros(self, shape, like=None):
        out = np.empty(shape, dtype=object)
        out.fill(_null())
        return PointArray(out, self)

    def take_clients(self, arr, sel):
        idx = np.asarray(sel).reshape(np.shape(sel) + (1,) * (arr.ndim - 2))
        return arr._wrap(np.take_along_axis(arr.data, idx, axis=1))

    def put_clients(self, arr, sel, values):
        idx = np.asarray(sel).reshape(np.shape(sel) + (1,) * (arr.ndim - 2))
        np.put_along_axis(arr.data, idx, values.data, axis=1)

    def copy(self, x):
        return x._wrap(x.data.copy())

    def sgd_step(self, w, lr, g):
        out = w - lr * g
        self.builder.iterates.extend(out.data.reshape(-1))  # the local iterates, in order (a sparser basis's leaves)
        return out

    def is_array(self, x) -> bool:
        return isinstance(x, PointArray)

    def broadcast_to(self, x, shape):
        return x._wrap(np.broadcast_to(x.data, shape))

    def run_mask(self, mask, like=None):
        return np.asarray(mask, dtype=bool)

    def finite_and_bounded(self, x, threshold: float) -> np.ndarray:
        return np.ones(x.shape[0], dtype=bool)

    def mix_clients(self, B, X):
        return self.builder.mix(B, X)


class _NoStreams:
    """The random streams of a PEP: none. Any draw (client sampling, a time-varying topology) is refused."""

    runs = 1
    seeds = (0,)

    def __getattr__(self, name):
        raise PEPRefusal(f"a random draw ({name})")


# ------------------------------------------------------------------------------------ the class


@dataclass(frozen=True)
class SpectralMixing:
    """The class of symmetric doubly stochastic mixing matrices W whose eigenvalues other than the one at 1 lie in
    [lam_minus, lam_plus] (the spectral gap 1 - max(``|lam_minus|``, ``|lam_plus|``)): the same W in every round.
    A :class:`ProtocolSetting`'s ``mixing``; the PEP imposes Colla & Hendrickx's necessary conditions
    (arXiv:2203.05963), so its value is an upper bound over the class.

    Parameters
    ----------
    lam_minus : float
        The smallest eigenvalue other than 1, in [-1, 1].
    lam_plus : float
        The largest eigenvalue other than 1, in [lam_minus, 1].
    """

    lam_minus: float
    lam_plus: float

    def __post_init__(self):
        check_float("lam_minus", self.lam_minus, -1.0, 1.0)
        check_float("lam_plus", self.lam_plus, self.lam_minus, 1.0)


@dataclass(frozen=True)
class ProtocolSetting:
    """The class and the run settings of a PEP of any algorithm the round protocol runs (:func:`protocol_pep`).

    C clients (full participation), K local steps, T rounds, a constant step size eta; every f_i L-smooth and
    client_mu-strongly convex ('convex') or L-smooth ('smooth'); f = sum_i p_i f_i. ``exact`` says whether the
    SDP's value is the worst case of the class as stated (no relaxed constraint); ``describe()`` says the class in
    words. See docs/worst-case.md, "The PEP of any algorithm: the round protocol's third backend".

    Parameters
    ----------
    C : int
        Clients (>= 1), all participating in every round.
    K : int
        Local steps per round (>= 1).
    T : int
        Rounds (>= 1).
    eta : float
        The local step size (> 0), constant.
    L : float
        Every f_i L-smooth (> 0).
    mu : float, default 0.0
        In the 'convex' class, f mu-strongly convex between the queried points when mu > client_mu (a relaxation:
        the mean's interpolation inequalities at the points only); in [client_mu, L).
    client_mu : float, default 0.0
        Every f_i client_mu-strongly convex, in [0, mu].
    function_class : {"convex", "smooth"}, default "convex"
        'convex': PEPit's ``SmoothStronglyConvexFunction`` (exact interpolation); 'smooth': L-smooth, possibly
        non-convex (``SmoothFunction``; no x*: mu = client_mu = 0, a measure without f* or x*, initial 'function'
        or 'none').
    heterogeneity : {None, "optimum", "GB", "bounded_gradient", "local_dissimilarity"}, default None
        None: no constraint; 'optimum': sum_i p_i ||grad f_i(x*)||^2 <= zeta^2; 'GB': sum_i p_i ||grad f_i(w)||^2
        <= G^2 + B^2 ||grad f(w)||^2 at every queried point; 'bounded_gradient': ||grad f_i(w)||^2 <= G^2 for every
        i at every point where f_i is queried (both relaxations of 'for all w'); 'local_dissimilarity': FedProx's
        Definition 3 at the server's model w^t starting every round, sum_i p_i ||grad f_i(w^t)||^2 <= B^2
        ||grad f(w^t)||^2, exactly where it is assumed.
    zeta : float, default 0.0
        The bound of 'optimum' (>= 0).
    G : float, default 0.0
        The G of 'GB' and 'bounded_gradient' (>= 0).
    B : float, default 1.0
        The B of 'GB' and 'local_dissimilarity' (>= 1).
    initial : {"distance", "function", "agents_gap", "none", "gradient"}, default "distance"
        The initial condition: 'distance' ||w^0 - x*||^2 <= D; 'function' f(w^0) - f* <= D (in the 'smooth' class
        f(w^0) - f(z) <= D at every queried point z); 'agents_gap' sum_i (f_i(w^0) - f_i^o) <= D, f_i^o the minimum
        of f_i at a minimizer x_i^o of its own (Yuan et al.'s gap); 'none' no initial condition (for measures of
        gradients and differences only, which the class's translations leave unchanged; w^0 is then held in a
        ball, which changes nothing); 'gradient' ||grad f(w^0)||^2 = D (the scale of a statement homogeneous in f).
    D : float, default 1.0
        The initial condition's bound (> 0).
    metric : str, default "opt_error"
        The measure maximised. At the server's model w^T (the agents' mean under gossip) and over its rounds:
        'opt_error' f(w^T) - f*, 'dist2' ||w^T - x*||^2, 'grad_norm2' ||grad f(w^T)||^2, 'avg_grad_norm2'
        (1/T) sum_{t<T} ||grad f(w^t)||^2, 'weighted_opt_error' sum_{t<T} a_t (f(w^t) - f*) / sum_t a_t
        (``metric_weights`` a). At xbar_s, the clients' mean before local step s = t K + k (the engine's step
        measures; s < K T): 'step_avg_grad_norm2' (1/(K T)) sum_s ||grad f(xbar_s)||^2, 'step_avg_opt_error'
        f(xhat) - f* with xhat = (1/(K T)) sum_s xbar_s. At the agents' own models after T rounds (a gossip
        algorithm): 'consensus2' ||x_0^T - xbar^T||^2 (agent 0; every agent alike on a vertex-transitive topology),
        'stacked_grad2' sum_i ||grad f_i(x_i^T)||^2. The engine's Delta^t = (1/C) sum_i ||w_i^last - w^t||^2:
        'divergence' Delta^T, 'avg_divergence' (1/T) sum_{t<T} Delta^t. FedProx's Theorem 4:
        'expected_sampled_change' E_S f(w_S) - f(w^{T-1}), w_S the mean of the last local models of ``draws``
        clients drawn uniformly with replacement, the expectation exact (a sum over the multisets of draws with
        their multinomial probabilities, each mean a point of the PEP).
    weights : tuple of float, optional
        The client weights p (C positive numbers, normalised to sum 1); None: 1/C each.
    mixing : "matrix" or SpectralMixing, default "matrix"
        A Gossip algorithm's mixing: its topology's own matrix ('matrix', exact) or any matrix of a
        :class:`SpectralMixing` class (an upper bound).
    evaluate : {"own", "all"}, default "own"
        'own': each client's function at its own points and the shared ones; 'all': every function at every point
        (forced by 'GB', 'local_dissimilarity', mu > client_mu and the 'smooth' class).
    metric_weights : tuple of float, optional
        'weighted_opt_error': a_t for t < T (T non-negative numbers, not all 0).
    agents_gap : float, optional
        sum_i (f_i(w^0) - f_i^o) <= agents_gap as well, beside another initial condition ('convex' class).
    draws : int, default 0
        'expected_sampled_change': the clients drawn with replacement (>= 1; at most ``MAX_DRAW_POINTS`` = 400
        multisets of draws).
    stacked_grad_bound : float, optional
        sum_i ||grad f_i(x_i^t)||^2 <= stacked_grad_bound^2 at the agents' models x_i^t starting every round
        t = 0..T (Yuan et al.'s (10), imposed up to the horizon only: a relaxation of 'for every k').

    Raises
    ------
    ParameterError
        A value outside its range, or a combination the class refuses (named).
    """

    C: int
    K: int
    T: int
    eta: float
    L: float
    mu: float = 0.0
    client_mu: float = 0.0
    function_class: str = "convex"
    heterogeneity: str | None = None
    zeta: float = 0.0
    G: float = 0.0
    B: float = 1.0
    initial: str = "distance"
    D: float = 1.0
    metric: str = "opt_error"
    weights: tuple | None = None
    mixing: Any = "matrix"
    evaluate: str = "own"
    metric_weights: tuple | None = None  # 'weighted_opt_error': sum_t a_t (f(w^t) - f*) / sum_t a_t over t < T
    agents_gap: float | None = None  # sum_i (f_i(w^0) - f_i^o) <= this, beside the initial condition
    draws: int = 0  # 'expected_sampled_change': clients drawn with replacement
    stacked_grad_bound: float | None = None  # sum_i ||grad f_i(x_i^t)||^2 <= this^2 at the agents' models, t = 0..T

    def __post_init__(self):
        s = object.__setattr__
        s(self, "C", check_int("C", self.C, 1))
        s(self, "K", check_int("K", self.K, 1))
        s(self, "T", check_int("T", self.T, 1))
        s(self, "eta", check_float("eta", self.eta, 0.0, low_inclusive=False))
        s(self, "L", check_float("L", self.L, 0.0, low_inclusive=False))
        check_choice("function_class", self.function_class, ("convex", "smooth"))
        if self.function_class == "smooth":
            if self.mu != 0 or self.client_mu != 0:
                raise ParameterError("mu", (self.client_mu, self.mu), "0 for the non-convex class 'smooth'")
            if self.metric in STAR_METRICS or self.initial not in ("function", "none"):
                raise ParameterError("metric", (self.metric, self.initial), "a measure without f* or x* ("
                                     + ", ".join(m for m in METRIC_NAMES if m not in STAR_METRICS)
                                     + ") with initial 'function' or 'none' in the non-convex class (it has no x*)")
            if self.agents_gap is not None:
                raise ParameterError("agents_gap", self.agents_gap, "None in the non-convex class (no minimizers)")
            if self.heterogeneity == "optimum":
                raise ParameterError("heterogeneity", "optimum", "None or 'GB' in the non-convex class (no x*)")
        s(self, "mu", check_float("mu", self.mu, 0.0, self.L, high_inclusive=False))
        s(self, "client_mu", check_float("client_mu", self.client_mu, 0.0, self.mu))
        check_choice("heterogeneity", self.heterogeneity, HETEROGENEITY)
        s(self, "zeta", check_float("zeta", self.zeta, 0.0))
        s(self, "G", check_float("G", self.G, 0.0))
        s(self, "B", check_float("B", self.B, 1.0))
        check_choice("initial", self.initial, INITIALS)
        s(self, "D", check_float("D", self.D, 0.0, low_inclusive=False))
        check_choice("metric", self.metric, METRIC_NAMES)
        if self.agents_gap is not None:
            s(self, "agents_gap", check_float("agents_gap", self.agents_gap, 0.0, low_inclusive=False))
        if self.stacked_grad_bound is not None:
            s(self, "stacked_grad_bound", check_float("stacked_grad_bound", self.stacked_grad_bound, 0.0,
                                                      low_inclusive=False))
        if self.metric == "expected_sampled_change":
            s(self, "draws", check_int("draws", self.draws, 1))
            n = math.comb(self.C + self.draws - 1, self.draws)
            if n > MAX_DRAW_POINTS:
                raise ParameterError("draws", self.draws, "at most the number of draws whose multisets of the "
                                     f"{self.C} clients are <= {MAX_DRAW_POINTS} points (here {n})")
        if self.initial == "none" and self.metric in STAR_METRICS:
            raise ParameterError("initial", "none",
                                 "an initial condition for a measure of f* or x* (" + self.metric + ")")
        if self.metric == "weighted_opt_error":
            a = np.asarray(self.metric_weights if self.metric_weights is not None else [], dtype=float)
            if a.shape != (self.T,) or not np.all(np.isfinite(a)) or a.min() < 0 or a.sum() <= 0:
                raise ParameterError("metric_weights", self.metric_weights, f"{self.T} nonnegative numbers, not all 0 "
                                     "(one per round t < T)")
            s(self, "metric_weights", tuple(float(v) for v in a))
            if self.function_class != "convex":
                raise ParameterError("metric", self.metric, "a measure of the convex class (it needs f*)")
        if self.weights is not None:
            p = np.asarray(self.weights, dtype=float)
            if p.shape != (self.C,) or not np.all(np.isfinite(p)) or p.min() <= 0:
                raise ParameterError("weights", self.weights, f"{self.C} positive numbers (one per client)")
            s(self, "weights", tuple(float(v) for v in p / p.sum()))
        if not (self.mixing == "matrix" or isinstance(self.mixing, SpectralMixing)):
            raise ParameterError("mixing", self.mixing, "'matrix' (the topology's own) or a SpectralMixing class")
        check_choice("evaluate", self.evaluate, ("own", "all"))
        if (self.heterogeneity in ("GB", "local_dissimilarity") or self.mu > self.client_mu
                or self.function_class == "smooth"):
            s(self, "evaluate", "all")

    @property
    def p(self) -> np.ndarray:
        return np.full(self.C, 1.0 / self.C) if self.weights is None else np.asarray(self.weights)

    @property
    def has_star(self) -> bool:
        """Whether the PEP has x*, a minimizer of f (the convex class, unless nothing of it needs one: an agents' gap
        or no initial condition with a measure of gradients and differences and no mean strong convexity)."""
        if self.function_class != "convex":
            return False
        return not (self.initial in ("agents_gap", "none", "gradient") and self.metric not in STAR_METRICS
                    and self.heterogeneity != "optimum" and self.mu <= self.client_mu)

    @property
    def has_agent_minima(self) -> bool:
        return self.initial == "agents_gap" or self.agents_gap is not None

    @property
    def exact(self) -> bool:
        """Whether the SDP's value is the worst case of the class as stated: no relaxed constraint (the (G, B)
        heterogeneity with more than one client, f's strong convexity beyond the clients', the non-convex initial
        condition, a class of mixing matrices)."""
        return (self.function_class == "convex" and self.mu <= self.client_mu and self.mixing == "matrix"
                and (self.heterogeneity != "GB" or self.C == 1) and self.heterogeneity != "bounded_gradient"
                and self.stacked_grad_bound is None)

    @property
    def server_rule(self) -> str:  # read by solve_pep's basis choice and the record
        return "protocol"

    def describe(self) -> str:
        gap = ("sum_i (f_i(w^0) - f_i^o) <= {:g}, f_i^o the minimum of f_i, attained at a minimizer x_i^o of its own "
               "(exact over agents whose minimum is attained)")
        if self.function_class == "convex":
            cls = (f"every f_i {self.L:g}-smooth and {self.client_mu:g}-strongly convex (PEPit "
                   "SmoothStronglyConvexFunction, exact interpolation)")
            if self.mu > self.client_mu:
                cls += (f"; f meets the {self.mu:g}-strongly convex interpolation inequalities between the queried "
                        "points (relaxes 'f mu-strongly convex')")
            start = {"distance": f"||w^0 - x*||^2 <= {self.D:g}", "function": f"f(w^0) - f* <= {self.D:g}",
                     "agents_gap": gap.format(self.D),
                     "none": "no initial condition (the measure is invariant under the class's translations)",
                     "gradient": f"||grad f(w^0)||^2 = {self.D:g} (the scale)"}[self.initial]
            if self.agents_gap is not None:
                start += "; " + gap.format(self.agents_gap)
            if self.has_star:
                start += ", x* a minimizer of f"
        else:
            cls = f"every f_i {self.L:g}-smooth, possibly non-convex (PEPit SmoothFunction)"
            start = (f"f(w^0) - f(z) <= {self.D:g} at every queried point z (implied by f(w^0) - inf f <= {self.D:g}:"
                     " a relaxation)" if self.initial == "function" else
                     "no initial condition (the measure is invariant under the class's translations)")
        f = "f = mean_i f_i" if self.weights is None else f"f = sum_i p_i f_i, p = {list(np.round(self.p, 6))}"
        het = {None: "no heterogeneity constraint",
               "optimum": f"sum_i p_i ||grad f_i(x*)||^2 <= {self.zeta:g}^2",
               "GB": f"sum_i p_i ||grad f_i(w)||^2 <= {self.G:g}^2 + {self.B:g}^2 ||grad f(w)||^2 at every queried "
                     "point (relaxes 'for all w')",
               "bounded_gradient": f"||grad f_i(w)||^2 <= {self.G:g}^2 for every i at every point where f_i is queried "
                                   "(relaxes 'for all w')",
               "local_dissimilarity": f"sum_i p_i ||grad f_i(w^t)||^2 <= {self.B:g}^2 ||grad f(w^t)||^2 at the "
                                      "server's model starting every round"}[self.heterogeneity]
        if self.stacked_grad_bound is not None:
            het += (f"; sum_i ||grad f_i(x_i^t)||^2 <= {self.stacked_grad_bound:g}^2 at the agents' models starting "
                    f"every round t = 0..{self.T} (relaxes 'for every k')")
        mix = "" if self.mixing == "matrix" else (
            f"; mixing: any symmetric doubly stochastic W with eigenvalues other than 1 in "
            f"[{self.mixing.lam_minus:g}, {self.mixing.lam_plus:g}] (Colla & Hendrickx's necessary conditions: a "
            "relaxation)")
        return f"C={self.C} clients: {cls}; {f}; {het}; {start}{mix}; any dimension"

    def algorithm(self) -> str:
        return f"full participation, exact gradients, C={self.C}, K={self.K}, T={self.T}, eta={self.eta:g}"


# ------------------------------------------------------------------------------------ the builder


@dataclass
class _Q:
    label: tuple  # the orbit key
    owner: int | None
    point: Any
    grads: dict = field(default_factory=dict)  # j -> gradient Point
    values: dict = field(default_factory=dict)  # j -> value Expression
    prox: tuple | None = None  # (anchor Point, gamma, j)


class _Builder:
    """Leaves, queries and constraints of one protocol PEP."""

    def __init__(self, s: ProtocolSetting):
        from PEPit import PEP

        self.s = s
        self.templates = {"interpolation": interpolation_template(s.function_class, s.L, s.client_mu)}
        if s.function_class == "convex" and s.mu > s.client_mu:
            self.templates["mean_strong_convexity"] = interpolation_template("convex", s.L, s.mu)
        self.pb = PEP()  # resets PEPit's counters: leaf ids start at 0
        self.ops = PEPOps(self)
        self.labels: dict[int, tuple] = {}
        self.vlabels: dict[int, tuple] = {}
        self.queries: list[_Q] = []
        self.by_point: dict[tuple, _Q] = {}
        self.tags: dict[tuple, int] = {}
        self.mixings: list[tuple] = []  # (X centred, Z) per consensus step, spectral class
        self.zero_sums: list[tuple] = []  # (leaf Points, weights, key)
        self.iterates: list = []  # every point the algorithm computed (queries and local steps), in order
        self.t = 0
        self.step_points: list[tuple[int, int, list]] = []  # (t, k, the clients' points before local step k of round t)
        self.rounds: list[dict] = []  # per t = 0..T, at the start of round t: the server's model, the clients' last
        # local models, the agents' own models (a gossip algorithm's; None otherwise)

    # ---- leaves
    def point_leaf(self, label: tuple):
        from PEPit import Point

        p = Point()
        self.labels[p.counter] = label
        return p

    def value_leaf(self, label: tuple):
        from PEPit import Expression

        e = Expression()
        self.vlabels[e.counter] = label
        return e

    @staticmethod
    def point_key(p) -> tuple:
        d = p.decomposition_dict
        if not d:
            return ()
        scale = max(abs(v) for v in d.values())
        return tuple(sorted((k.counter, round(v / scale, 10), ) for k, v in d.items() if abs(v) > _TOL * scale)) + (
            round(math.log10(scale), 10),)

    def tag(self, base: tuple) -> tuple:
        n = self.tags.get(base, 0)
        self.tags[base] = n + 1
        return base if n == 0 else base + (n,)

    def query(self, point, owner: int | None, label: tuple, functions: Sequence[int]) -> _Q:
        """Clients' functions ``functions`` evaluated at ``point`` (a query shared by all clients when owner is None):
        new gradient and value leaves, or the ones an earlier query at the same point holds."""
        key = self.point_key(point)
        q = self.by_point.get(key)
        if q is None:
            q = _Q(label, owner, point)
            self.queries.append(q)
            self.iterates.append(point)
            self.by_point[key] = q
        for j in functions:
            if j not in q.grads:
                q.grads[j] = self.point_leaf((q.label, q.owner, j))
                q.values[j] = self.value_leaf((q.label, q.owner, j))
        return q

    def functions_at(self, owner: int | None) -> range | list[int]:
        return range(self.s.C) if (owner is None or self.s.evaluate == "all") else [owner]

    # ---- the oracle's calls
    def gradients(self, w: PointArray, rs, base: tuple) -> PointArray:
        sel = np.asarray(rs.sel)[0]
        pts = list(w.data[0, :, 0])
        keys = [self.point_key(p) for p in pts]
        shared = len(sel) == self.s.C and len(set(keys)) == 1
        label = self.tag(base)
        out = np.empty(w.shape, dtype=object)
        if shared:
            server = rs.state.w.data[0, 0] if isinstance(rs.state.w, PointArray) else None
            if server is not None and self.point_key(server) == keys[0] and ("w", rs.t) not in self.tags:
                label = ("w", rs.t)
                self.tags[label] = 1
            q = self.query(pts[0], None, label, range(self.s.C))
            for n, i in enumerate(sel):
                out[0, n, 0] = q.grads[int(i)]
        else:
            for n, (i, p) in enumerate(zip(sel, pts)):
                i = int(i)
                q = self.query(p, i, label, self.functions_at(i))
                if i not in q.grads:
                    q = self.query(p, i, label, [i])
                out[0, n, 0] = q.grads[i]
        return PointArray(out, self.ops)

    def prox(self, anchor: PointArray, mu, rs) -> PointArray:
        sel = np.asarray(rs.sel)[0]
        mu = np.broadcast_to(np.asarray(mu, dtype=float), (1, len(sel), 1))
        label = self.tag(("prox", rs.t))
        out = np.empty(anchor.shape, dtype=object)
        for n, i in enumerate(sel):
            i = int(i)
            a = anchor.data[0, n, 0]
            gamma = 1.0 / float(mu[0, n, 0])
            g = self.point_leaf((label, i, i))
            x = _minus(a, _scaled(g, gamma))
            q = _Q(label, i, x, {i: g}, {i: self.value_leaf((label, i, i))}, prox=(a, gamma, i))
            self.queries.append(q)
            self.iterates.append(x)
            self.by_point[self.point_key(x)] = q
            for j in self.functions_at(i):
                if j != i:
                    q.grads[j] = self.point_leaf((label, i, j))
                    q.values[j] = self.value_leaf((label, i, j))
            out[0, n, 0] = x
        return PointArray(out, self.ops)

    def mix(self, B, X: PointArray) -> PointArray:
        R, m, d = X.shape
        if R != 1 or d != 1:
            raise FedTheoryError(f"internal: a PEP mixes one run's clients, got shape {X.shape}")
        xs = list(X.data[0, :, 0])
        out = np.empty(X.shape, dtype=object)
        if self.s.mixing == "matrix":
            W = B.toarray() if hasattr(B, "toarray") else np.asarray(B, dtype=float)
            for i in range(m):
                acc = _null()
                for j in range(m):
                    if W[i, j] != 0.0:
                        acc = _plus(acc, _scaled(xs[j], W[i, j]))
                out[0, i, 0] = acc
            return PointArray(out, self.ops)
        # the spectral class: y_i = xbar + z_i with new leaves z_i, sum_i z_i = 0, and the (X - Xbar, Z) pair kept
        label = self.tag(("mix", self.t))
        xbar = _scaled(_PLUS.reduce(np.array(xs, dtype=object)), 1.0 / m)
        zs = [self.point_leaf((label, i, i)) for i in range(m)]
        self.zero_sums.append((zs, np.ones(m), label))
        self.mixings.append(([_minus(x, xbar) for x in xs], zs))
        for i in range(m):
            out[0, i, 0] = _plus(xbar, zs[i])
        return PointArray(out, self.ops)


class PEPOracle:
    """The round protocol's ``LocalOracle`` in a PEP: the participants' gradients at their points (new leaves, or an
    earlier query's at the same point) and their exact proximal points."""

    def __init__(self, builder: _Builder, rs):
        self.builder, self.rs = builder, rs

    def grad(self, k: int, w):
        if not isinstance(w, PointArray):
            raise PEPRefusal("a gradient at numbers")
        return self.builder.gradients(w, self.rs, ("s", self.rs.t, k))

    def grad_at(self, k: int):
        return lambda x: self.grad(k, x)

    def prox(self, anchor, mu):
        return self.builder.prox(anchor, mu, self.rs)


# ------------------------------------------------------------------------------------ running the protocol


def _plugin_of(tb) -> str:
    """The innermost algorithm plug-in on a traceback's stack (the one whose rule asked for the refused operation)."""
    from ...sim.rules import Plugin

    found = ""
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        if isinstance(obj, Plugin):
            found = f"{type(obj).__name__} ({obj.name!r})"
        tb = tb.tb_next
    return found


def _run(algorithm, s: ProtocolSetting, b: _Builder):
    """T rounds of ``algorithm`` through ``sim.rounds.run_round`` on points: the server iterates w^0..w^T."""
    from ...sim.rounds import commit_round, run_round
    from ...sim.rules import State

    C = s.C
    w0 = b.point_leaf(("w0",))
    b.w0 = w0
    state = State(w=PointArray(np.array([[w0]], dtype=object), b.ops))
    state.clients["last_local"] = b.ops.copy(b.ops.broadcast_to(state.w[:, None, :], (1, C, 1)))
    plugins = algorithm.plugins()
    for p in plugins:
        p.setup(state, 1, C, 1)
    direction_sum = any(p.needs_direction_sum and not p.direction_sum_for_measures for p in plugins)
    lr = np.full((1, 1, 1), s.eta)
    server = [w0]
    streams = _NoStreams()

    def snapshot():
        agents = state.clients.get("gossip_x")
        b.rounds.append({"w": state.w.data[0, 0], "last_local": list(state.clients["last_local"].data[0, :, 0]),
                         "agents": list(agents.data[0, :, 0]) if isinstance(agents, PointArray) else None})

    for t in range(s.T):
        b.t = t
        snapshot()
        rs = run_round(algorithm, state, streams, t, n_runs=1, n_clients=C, per_round=C, local_steps=s.K, lr=lr,
                       make_oracle=lambda rs: PEPOracle(b, rs), direction_sum=direction_sum,
                       before_step=lambda k, wk, t=t: b.step_points.append((t, k, list(wk.data[0, :, 0]))))
        commit_round(state, rs)
        if not isinstance(state.w, PointArray):
            raise PEPRefusal("a server model that is not a combination of points")
        server.append(state.w.data[0, 0])
    snapshot()
    return server


def protocol_pep(algorithm, setting: ProtocolSetting, *, symmetric: str = "auto") -> FederatedPEP:
    """The PEP of ``algorithm`` (its plug-ins run unchanged through the round protocol on PEPit points) over the
    class of ``setting``, as numbers (:func:`solve_pep` solves it). What a rule may do: the module
    ``fedtheory.worst.pep.protocol``; docs/worst-case.md, "The PEP of any algorithm: the round protocol's third
    backend".

    Parameters
    ----------
    algorithm : Algorithm
        A ``fedtheory.sim`` algorithm.
    setting : ProtocolSetting
        The class, the run settings and the measure.
    symmetric : {"auto", "off"}, default "auto"
        'auto': reduced where the built PEP is invariant under relabelling the clients (checked on the built
        points); 'off': every constraint, the full Gram matrix.

    Returns
    -------
    FederatedPEP
        The PEP as numbers.

    Raises
    ------
    PEPRefusal
        A rule the PEP cannot express (a norm, a product of two points, a comparison, a random draw, a stochastic
        oracle, ...), naming the operation and the plug-in.
    MissingExtraError
        The extra ``fedtheory[pep]`` is not installed.
    ParameterError
        ``setting`` is not a :class:`ProtocolSetting`, or an unknown ``symmetric``.
    """
    require_pep()
    check_choice("symmetric", symmetric, ("auto", "off"))
    if not isinstance(setting, ProtocolSetting):
        raise ParameterError("setting", type(setting).__name__, "a ProtocolSetting")
    t0 = time.perf_counter()
    b = _Builder(setting)
    try:
        server = _run(algorithm, setting, b)
    except PEPRefusal as exc:
        if exc.plugin:
            raise
        raise PEPRefusal(exc.operation, _plugin_of(sys.exc_info()[2]), getattr(algorithm, "name", "")) from None
    except (AttributeError, TypeError) as exc:  # a rule that reaches past sim.backend.ops (e.g. for torch's .device)
        plugin = _plugin_of(sys.exc_info()[2])
        if not plugin:
            raise
        text = " ".join(str(exc).split())[:160]
        raise PEPRefusal(f"an operation outside sim.backend.ops ({type(exc).__name__}: {text})", plugin,
                         getattr(algorithm, "name", "")) from None
    return _finish(b, server, symmetric == "auto", algorithm, time.perf_counter() - t0)


# ------------------------------------------------------------------------------------ measure and constraints


def _finish(b: _Builder, server: list, allow_symmetric: bool, algorithm, run_s: float) -> FederatedPEP:
    s = b.s
    C, p = s.C, s.p
    everyone = range(C)
    t0 = time.perf_counter()
    # the measure's server points, and w^0 where the initial condition reads f there
    need = set()
    if s.metric in ("opt_error", "grad_norm2") or s.function_class == "smooth":
        need.add(s.T)
    if s.metric in ("avg_grad_norm2", "weighted_opt_error"):
        need |= set(range(s.T))
    if s.initial in ("function", "gradient") or s.has_agent_minima:
        need.add(0)
    if s.heterogeneity == "local_dissimilarity":
        need |= set(range(s.T))
    if s.metric == "expected_sampled_change":
        need.add(s.T - 1)
    at = {}
    for t in sorted(need):
        label = ("w", t) if ("w", t) not in b.tags else b.tag(("w", t))
        b.tags.setdefault(label, 1)
        at[t] = b.query(server[t], None, label, everyone)  # (or the earlier query at the same point)
    # the clients' mean before every local step (the engine's xbar_s), or their average
    steps = []
    if s.metric == "step_avg_grad_norm2":
        steps = [b.query(_mean_of(P), None, ("xbar", t, k), everyone) for t, k, P in b.step_points]
    elif s.metric == "step_avg_opt_error":
        xhat = _mean_of([_mean_of(P) for _, _, P in b.step_points])
        steps = [b.query(xhat, None, ("xhat",), everyone)]
    # the means of the last local models of every multiset of draws (FedProx's expectation over the sampled devices)
    draws = []
    if s.metric == "expected_sampled_change":
        last = b.rounds[s.T]["last_local"]
        for S in itertools.combinations_with_replacement(range(C), s.draws):
            counts = np.bincount(np.asarray(S), minlength=C)
            prob = math.factorial(s.draws) / math.prod(math.factorial(int(c)) for c in counts) / C ** s.draws
            point = _sum_of([_scaled(last[i], c / s.draws) for i, c in enumerate(counts) if c])
            draws.append((prob, b.query(point, None, ("draw",) + tuple(int(c) for c in counts), everyone)))
    # the agents' own models: at the horizon (the measure) and at every round's start (Yuan et al.'s (10))
    agent_q: dict[int, list] = {}
    rounds_needed = ([s.T] if s.metric == "stacked_grad2" else []) + (
        list(range(s.T + 1)) if s.stacked_grad_bound is not None else [])
    if s.metric in AGENT_METRICS or s.stacked_grad_bound is not None:
        if b.rounds[0]["agents"] is None:
            raise ParameterError("metric", s.metric if s.metric in AGENT_METRICS else "stacked_grad_bound",
                                 f"an algorithm that keeps per-agent models (a Gossip communication); "
                                 f"{getattr(algorithm, 'name', 'this algorithm')} keeps a server model only")
    for t in sorted(set(rounds_needed)):
        qs_t = []
        for i in everyone:
            q = b.query(b.rounds[t]["agents"][i], i, ("agents", t), b.functions_at(i))
            if i not in q.grads:
                q = b.query(b.rounds[t]["agents"][i], i, ("agents", t), [i])
            qs_t.append(q)
        agent_q[t] = qs_t
    symmetric = (allow_symmetric and C > 1 and s.weights is None and s.metric != "consensus2"
                 and _invariant(b, server))
    star = fstar = None
    star_grads = []
    if s.has_star:
        star = b.point_leaf(("x*",))
        qs = _Q(("star",), None, star)
        for j in everyone:
            qs.grads[j] = b.point_leaf((("star",), None, j))
            qs.values[j] = b.value_leaf((("star",), None, j))
        b.queries.append(qs)
        star_grads = [qs.grads[j] for j in everyone]
        b.zero_sums.append((star_grads, p, ("star",)))
        fstar = _weighted(qs.values, p)
    minima = {}  # each agent's own minimum f_i^o, at a minimizer x_i^o of f_i (grad f_i(x_i^o) = 0)
    if s.has_agent_minima:
        for i in everyone:
            x = b.point_leaf((("amin_x",), i, i))
            g = b.point_leaf((("amin",), i, i))
            minima[i] = b.value_leaf((("amin",), i, i))
            b.queries.append(_Q(("amin",), i, x, {i: g}, {i: minima[i]}))
            b.zero_sums.append(([g], np.ones(1), ("amin",)))
    constraints: list[tuple] = []  # (PEPit constraint, group)

    def canonical(*owners, fixed=()):
        if not symmetric:
            return True
        nxt, seen = len(fixed), set()
        for o in owners:
            if o is None or o in fixed or o in seen:
                continue
            if o != nxt:
                return False
            seen.add(o)
            nxt += 1
        return True

    def divergence(t):  # the engine's Delta^t = (1/C) sum_i ||w_i^last - w^t||^2 at the start of round t
        r = b.rounds[t]
        return _sum_of([(x - r["w"]) ** 2 for x in r["last_local"]]) / C

    # the measure
    if s.metric == "opt_error":
        metric = _weighted(at[s.T].values, p) - fstar
    elif s.metric == "dist2":
        metric = (server[-1] - star) ** 2
    elif s.metric == "grad_norm2":
        metric = _weighted(at[s.T].grads, p) ** 2
    elif s.metric == "weighted_opt_error":
        a = np.asarray(s.metric_weights) / np.sum(s.metric_weights)
        metric = None
        for t in range(s.T):
            if a[t] > 0:
                term = float(a[t]) * (_weighted(at[t].values, p) - fstar)
                metric = term if metric is None else metric + term
    elif s.metric == "step_avg_grad_norm2":
        metric = _sum_of([_weighted(q.grads, p) ** 2 for q in steps]) / len(steps)
    elif s.metric == "step_avg_opt_error":
        metric = _weighted(steps[0].values, p) - fstar
    elif s.metric == "consensus2":
        agents = b.rounds[s.T]["agents"]
        metric = (agents[0] - _mean_of(agents)) ** 2
    elif s.metric == "stacked_grad2":
        metric = _sum_of([q.grads[i] ** 2 for i, q in enumerate(agent_q[s.T])])
    elif s.metric == "divergence":
        metric = divergence(s.T)
    elif s.metric == "expected_sampled_change":
        metric = _sum_of([prob * _weighted(q.values, p) for prob, q in draws]) - _weighted(at[s.T - 1].values, p)
    elif s.metric == "avg_divergence":
        terms = [divergence(t) for t in range(1, s.T)]  # Delta^0 = 0: every client's last model is w^0
        metric = (_sum_of(terms) / s.T) if terms else None
        if metric is None:
            raise ParameterError("T", s.T, "at least 2 for avg_divergence ((1/T) sum_{t<T} Delta^t, Delta^0 = 0)")
    else:
        metric = None
        for t in range(s.T):
            gn = _weighted(at[t].grads, p) ** 2
            metric = gn if metric is None else metric + gn
        metric = metric / s.T
    # the initial condition
    gap = None
    if minima:  # Yuan et al.'s sum_i (f_i(w^0) - f_i^o), unweighted
        gap = _sum_of([at[0].values[i] - minima[i] for i in everyone])
    if s.initial == "agents_gap":
        constraints.append((gap <= s.D, "initial"))
    elif s.initial == "none":  # the class and the measure are invariant under translations: w^0 in a ball loses nothing
        constraints.append((b.w0 ** 2 <= s.D, "initial"))
    elif s.initial == "gradient":  # the scale of a statement homogeneous in f
        constraints.append((_weighted(at[0].grads, p) ** 2 == s.D, "initial"))
    elif s.function_class == "convex":
        constraints.append(((b.w0 - star) ** 2 <= s.D if s.initial == "distance" else
                            _weighted(at[0].values, p) - fstar <= s.D, "initial"))
    else:
        f0 = _weighted(at[0].values, p)
        for q in b.queries:
            if q is not at[0] and len(q.values) == C and canonical(q.owner):
                constraints.append((f0 - _weighted(q.values, p) <= s.D, "initial"))
    if s.agents_gap is not None:
        constraints.append((gap <= s.agents_gap, "initial"))
    if s.stacked_grad_bound is not None:  # Yuan et al.'s (10) at every round's start, up to the horizon
        for t in range(s.T + 1):
            constraints.append((_sum_of([q.grads[i] ** 2 for i, q in enumerate(agent_q[t])])
                                <= s.stacked_grad_bound ** 2, "stacked"))
    # heterogeneity
    if s.heterogeneity == "optimum":
        constraints.append((_weighted({j: g ** 2 for j, g in enumerate(star_grads)}, p) <= s.zeta ** 2,
                            "heterogeneity"))
    elif s.heterogeneity == "bounded_gradient":  # every f_j at every point it is queried (one per orbit of (j, owner))
        for q in b.queries:
            for j, g in q.grads.items():
                if (not symmetric or j == 0) and canonical(q.owner, fixed=(j,)) and q.label != ("amin",):
                    constraints.append((g ** 2 <= s.G ** 2, "heterogeneity"))
    elif s.heterogeneity == "local_dissimilarity":  # FedProx's Definition 3 at each round's starting model
        for t in range(s.T):
            q = at[t]
            constraints.append((_weighted({j: g ** 2 for j, g in q.grads.items()}, p)
                                <= s.B ** 2 * _weighted(q.grads, p) ** 2, "heterogeneity"))
    elif s.heterogeneity == "GB":
        for q in b.queries:
            if len(q.grads) == C and canonical(q.owner):
                sq = _weighted({j: g ** 2 for j, g in q.grads.items()}, p)
                constraints.append((sq <= s.G ** 2 + s.B ** 2 * _weighted(q.grads, p) ** 2, "heterogeneity"))
    # the spectral class of mixing matrices: mean kept (sum z = 0, imposed by the reduction / elimination), the
    # cross products symmetric, and three LMIs over all consensus steps (Colla & Hendrickx; PESTO DGD_spectral_perf)
    lmis = []
    if b.mixings:
        lam_m, lam_p = s.mixing.lam_minus, s.mixing.lam_plus
        S = len(b.mixings)
        xx = [[None] * S for _ in range(S)]
        xy = [[None] * S for _ in range(S)]
        yy = [[None] * S for _ in range(S)]
        for k1, (X1, Z1) in enumerate(b.mixings):
            for k2, (X2, Z2) in enumerate(b.mixings):
                xx[k1][k2] = _sum_products(X1, X2)
                xy[k1][k2] = _sum_products(X1, Z2)
                yy[k1][k2] = _sum_products(Z1, Z2)
        for k1 in range(S):
            for k2 in range(k1 + 1, S):
                constraints.append((xy[k1][k2] == xy[k2][k1], "mixing_symmetric"))
        for make in (lambda a, c, e: lam_p * a - c, lambda a, c, e: c - lam_m * a,
                     lambda a, c, e: -lam_p * lam_m * a + (lam_m + lam_p) * c - e):
            lmis.append((S, [make(xx[k1][k2], (xy[k1][k2] + xy[k2][k1]) / 2, yy[k1][k2])
                             for k1 in range(S) for k2 in range(S)]))
    build_s = run_s + time.perf_counter() - t0
    return _snapshot(b, server, metric, constraints, lmis, star, star_grads, symmetric, canonical, build_s)


def _sum_of(items: Sequence):
    out = None
    for v in items:
        out = v if out is None else out + v
    return out


def _mean_of(points: Sequence):
    return _scaled(_sum_of(points), 1.0 / len(points))


def _weighted(items: Mapping[int, Any], p: np.ndarray):
    out = None
    for j, v in sorted(items.items()):
        term = float(p[j]) * v
        out = term if out is None else out + term
    return out


def _sum_products(A: list, B: list):
    out = None
    for a, c in zip(A, B):
        term = a * c
        out = term if out is None else out + term
    return out


def _invariant(b: _Builder, server: list) -> bool:
    """Whether relabelling the clients maps the PEP onto itself: for the swap of clients 0, 1 and the cycle, every
    leaf label has its image, every query point's coefficients are its image query's, and the server iterates are
    fixed."""
    from PEPit import Point

    C = b.s.C
    n = Point.counter
    index = {lab: i for i, lab in b.labels.items()}
    swap = np.arange(C)
    swap[[0, 1]] = [1, 0]
    qindex = {(q.label, q.owner): q for q in b.queries}
    for sigma in (swap, np.roll(np.arange(C), -1)):
        perm = np.arange(n)
        for i, lab in b.labels.items():
            if len(lab) == 3:
                key, owner, j = lab
                image = (key, None if owner is None else int(sigma[owner]), int(sigma[j]))
                if image not in index:
                    return False
                perm[i] = index[image]

        def moved(pt):
            v = np.zeros(n)
            for leaf, w in pt.decomposition_dict.items():
                v[perm[leaf.counter]] += w
            return v

        for q in b.queries:
            image = qindex.get((q.label, None if q.owner is None else int(sigma[q.owner])))
            if image is None or set(image.grads) != {int(sigma[j]) for j in q.grads}:
                return False
            u, v = moved(q.point), leaf_coef(image.point, n)
            if not np.allclose(u, v, rtol=0, atol=1e-12 * max(1.0, np.abs(v).max())):
                return False
        for w in server:
            u, v = moved(w), leaf_coef(w, n)
            if not np.allclose(u, v, rtol=0, atol=1e-12 * max(1.0, np.abs(v).max())):
                return False
        for X, Z in b.mixings:
            for i in range(C):
                if not np.allclose(moved(X[i]), leaf_coef(X[int(sigma[i])], n), rtol=0, atol=1e-12):
                    return False
    return True


def _snapshot(b: _Builder, server, metric, constraints, lmis, star, star_grads, symmetric, canonical,
              build_s) -> FederatedPEP:
    from PEPit import Expression, Point

    s = b.s
    C, p = s.C, s.p
    n, m = Point.counter, Expression.counter
    rows = []
    for c, group in constraints:
        kind = "ineq" if c.equality_or_inequality == "inequality" else "eq"
        rows.append((*sparse_row(c.expression), kind, group))
    qs = b.queries
    queries = [Query(q.label, q.owner, leaf_coef(q.point, n), [q.grads[j].counter if j in q.grads else -1
                                                                for j in range(C)],
                     [q.values[j].counter if j in q.values else -1 for j in range(C)],
                     prox=None if q.prox is None else (leaf_coef(q.prox[0], n), q.prox[1], q.prox[2]))
               for q in qs]
    X = np.array([q.coef for q in queries])
    pair_rows = []
    full = 0
    for j in range(C):  # client functions' interpolation (symmetric: function 0's, one pair per orbit)
        have = [a for a, q in enumerate(qs) if j in q.grads]
        full += len(have) * (len(have) - 1)
        if symmetric and j > 0:
            continue
        pairs = [(a, c) for a in have for c in have if a != c and canonical(qs[a].owner, qs[c].owner, fixed=(j,))]
        if not pairs:
            continue
        a, c = np.array(pairs).T
        Gc = np.array([leaf_coef(q.grads[j], n) if j in q.grads else np.zeros(n) for q in qs])
        Fc = np.array([expr_coef(q.values[j], m) if j in q.values else np.zeros(m) for q in qs])
        Q, qf, c0 = b.templates["interpolation"]
        pair_rows.append(PairRows("interpolation", np.stack([X[a], Gc[a], X[c], Gc[c]], axis=1),
                                  np.stack([Fc[a], Fc[c]], axis=1), Q, qf, c0))
    if "mean_strong_convexity" in b.templates:  # f = sum p_j f_j between points where every f_j is evaluated
        have = [a for a, q in enumerate(qs) if len(q.grads) == C]
        full += len(have) * (len(have) - 1)
        pairs = [(a, c) for a in have for c in have if a != c and canonical(qs[a].owner, qs[c].owner)]
        if pairs:
            a, c = np.array(pairs).T
            Gc = np.array([sum(p[j] * leaf_coef(q.grads[j], n) for j in range(C)) if len(q.grads) == C
                           else np.zeros(n) for q in qs])
            Fc = np.array([sum(p[j] * expr_coef(q.values[j], m) for j in range(C)) if len(q.values) == C
                           else np.zeros(m) for q in qs])
            Q, qf, c0 = b.templates["mean_strong_convexity"]
            pair_rows.append(PairRows("mean_strong_convexity", np.stack([X[a], Gc[a], X[c], Gc[c]], axis=1),
                                      np.stack([Fc[a], Fc[c]], axis=1), Q, qf, c0))
    full += len(rows)
    lmi_rows = [(size, [sparse_row(e) for e in entries]) for size, entries in lmis]
    # sum_l w_l v_l = 0, written with the largest |w_l| = 1 (the hand-written FedInit PEP's scaling: the same rows)
    zero_sums = [(np.array([pt.counter for pt in pts]), np.asarray(w, dtype=float) / np.abs(w).max(), key)
                 for pts, w, key in b.zero_sums]
    return FederatedPEP(
        setting=s, n=n, m=m, rows=rows, objective=(*sparse_row(metric), "objective", "objective"), queries=queries,
        server=[leaf_coef(w, n) for w in server], point_labels=[b.labels.get(i, ("?",)) for i in range(n)],
        value_labels=[b.vlabels.get(i, ("?",)) for i in range(m)], w0_leaf=b.w0.counter,
        star_leaf=None if star is None else star.counter,
        star_grads=[g.counter for g in star_grads] if symmetric else [],
        full_constraints=full, build_s=build_s, pair_rows=pair_rows, symmetric=symmetric, zero_sums=zero_sums,
        lmis=lmi_rows, iterates=[leaf_coef(p, n) for p in b.iterates])
