"""Performance estimation (PEP): the exact worst case of deterministic FedAvg / FedInit over a function class,
built with PEPit and solved as one semidefinite program (``fedtheory worst ID --method pep``, extra ``fedtheory[pep]``).

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
generated (``_Builder.canonical``): function 0's interpolation inequalities, read once from PEPit on symbols and
evaluated on every representative pair of points at once (``PairRows``; tests/test_pep.py holds them equal to
the rows PEPit writes one by one). Close points (small eta L) are solved over gradient differences from w^0
(``rebased``, an exact change of variables), which Clarabel resolves ~100x more accurately. After solving, the
full Gram matrix is rebuilt from the orbit values, and its eigenvalues and every generated constraint are checked
on it (``gram_min_eig``, ``max_violation``).
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Mapping

import numpy as np

from .._validation import FedTheoryError, ParameterError, check_choice, check_float, check_int

PEP_EXTRA = "pep"
FUNCTION_CLASSES = ("convex", "smooth")
METRICS = ("opt_error", "avg_grad_norm2", "dist2")
INITIALS = ("function", "distance")
SERVER_RULES = ("algorithm1", "code")
SOLVERS = ("CLARABEL", "SCS")
METHODS = ("symmetric", "pepit")
MAX_STEPS = 64  # C K T: the reduced SDP grows like (K T)^2 orbit variables (docs/worst-case.md: timings)


class MissingExtraError(FedTheoryError):
    """The optional extra ``fedtheory[pep]`` (PEPit + cvxpy) is not installed."""


def pep_available() -> bool:
    """Whether PEPit and cvxpy can be imported (the extra ``fedtheory[pep]``)."""
    try:
        import cvxpy  # noqa: F401
        import PEPit  # noqa: F401
    except ImportError:
        return False
    return True


def _require_pep() -> None:
    if not pep_available():
        raise MissingExtraError("the PEP needs the optional extra: pip install 'fedtheory[pep]' (PEPit + cvxpy)")


# ------------------------------------------------------------------------------------ the setting


@dataclass(frozen=True)
class PEPSetting:
    """One PEP: the algorithm (C clients, K local steps, T rounds, eta, beta, server rule), the function class and
    the measure. ``metric``: ``opt_error`` f(w^T) - f(w*), ``avg_grad_norm2`` (1/T) sum_{t<T} ||grad f(w^t)||^2,
    ``dist2`` ||w^T - w*||^2. ``initial``: ``function`` f(w^0) - f* <= D (``smooth``: f(w^0) - f(z) <= D at every
    queried z) or ``distance`` ||w^0 - w*||^2 <= D. ``B=None``: no heterogeneity constraint."""

    C: int
    K: int
    T: int
    L: float
    eta: float
    mu: float = 0.0
    client_mu: float = 0.0
    function_class: str = "convex"
    beta: float = 0.0
    server_rule: str = "algorithm1"
    server_lr: float = 1.0
    B: float | None = 1.0
    G: float = 0.0
    D: float = 1.0
    initial: str = "function"
    metric: str = "opt_error"

    def __post_init__(self):
        s = object.__setattr__
        s(self, "C", check_int("C", self.C, 1))
        s(self, "K", check_int("K", self.K, 1))
        s(self, "T", check_int("T", self.T, 1))
        if self.C * self.K * self.T > MAX_STEPS:
            raise ParameterError("C*K*T", self.C * self.K * self.T,
                                 f"at most {MAX_STEPS} (C={self.C}, K={self.K}, T={self.T}: the PEP is for small "
                                 f"settings; --set C=.. --set K=.. --set T=..)")
        s(self, "L", check_float("L", self.L, 0.0, low_inclusive=False))
        s(self, "eta", check_float("eta", self.eta, 0.0, low_inclusive=False))
        check_choice("function_class", self.function_class, FUNCTION_CLASSES)
        if self.function_class == "smooth":
            if self.mu != 0 or self.client_mu != 0:
                raise ParameterError("mu", (self.client_mu, self.mu), "0 for the non-convex class 'smooth'")
            if self.metric != "avg_grad_norm2" or self.initial != "function":
                raise ParameterError("metric", (self.metric, self.initial), "avg_grad_norm2 with initial='function' "
                                     "for the non-convex class (it has no w*)")
        s(self, "mu", check_float("mu", self.mu, 0.0, self.L, high_inclusive=False))
        s(self, "client_mu", check_float("client_mu", self.client_mu, 0.0, self.mu))
        s(self, "beta", check_float("beta", self.beta, 0.0))
        check_choice("server_rule", self.server_rule, SERVER_RULES)
        s(self, "server_lr", check_float("server_lr", self.server_lr, 0.0, low_inclusive=False))
        if self.B is not None:
            s(self, "B", check_float("B", self.B, 1.0))
        s(self, "G", check_float("G", self.G, 0.0))
        s(self, "D", check_float("D", self.D, 0.0, low_inclusive=False))
        check_choice("initial", self.initial, INITIALS)
        check_choice("metric", self.metric, METRICS)

    @property
    def has_star(self) -> bool:
        return self.function_class == "convex"

    @property
    def exact(self) -> bool:
        """Whether the SDP's value is the worst case of the class as stated (no relaxation): one client (the
        heterogeneity constraint is then ||grad f||^2 <= G^2 + B^2 ||grad f||^2, true for every function) and
        every f_i as strongly convex as f."""
        return self.C == 1 and self.function_class == "convex" and self.client_mu == self.mu

    def describe(self) -> str:
        if self.function_class == "convex":
            cls = (f"every f_i {self.L:g}-smooth and {self.client_mu:g}-strongly convex (PEPit "
                   "SmoothStronglyConvexFunction, exact interpolation)")
            if self.mu > self.client_mu:
                cls += (f"; f = mean f_i meets the {self.mu:g}-strongly convex, {self.L:g}-smooth interpolation "
                        "inequalities between the queried points (relaxes 'f mu-strongly convex')")
            start = (f"f(w^0) - f(w*) <= {self.D:g}" if self.initial == "function" else
                     f"||w^0 - w*||^2 <= {self.D:g}")
            start += ", w* a stationary point of f"
        else:
            cls = f"every f_i {self.L:g}-smooth, possibly non-convex (PEPit SmoothFunction)"
            start = (f"f(w^0) - f(z) <= {self.D:g} at every queried point z (implied by f(w^0) - inf f <= "
                     f"{self.D:g}: a relaxation)")
        het = ("no heterogeneity constraint" if self.B is None else
               f"(1/C) sum_i ||grad f_i(w)||^2 <= {self.G:g}^2 + {self.B:g}^2 ||grad f(w)||^2 at every queried point"
               + (" and at w*" if self.has_star else "") + " (relaxes 'for all w')")
        return f"C={self.C} clients: {cls}; {het}; {start}; any dimension"

    def algorithm(self) -> str:
        name = "FedAvg" if self.beta == 0 else f"FedInit(beta={self.beta:g})"
        rule = ("w^{t+1} = mean_i w_{i,K}" if self.server_rule == "algorithm1" else
                f"w^{{t+1}} = w^t - {self.server_lr:g} mean_i (w_{{i,0}} - w_{{i,K}})")
        return (f"{name}, full participation, exact gradients, C={self.C}, K={self.K}, T={self.T}, eta={self.eta:g}, "
                f"server rule {self.server_rule}: {rule}")


# ------------------------------------------------------------------------------------ building the PEP with PEPit


@dataclass
class _Query:
    """One point where every client's function is evaluated: its key, owner (None: shared), coefficients over the
    leaves, and the leaf ids of grad f_j and f_j there (j = 0..C-1)."""

    key: tuple
    owner: int | None
    coef: np.ndarray
    grads: list[int]
    values: list[int]


@dataclass
class FederatedPEP:
    """A built PEP as numbers: leaves (Gram dimension ``n``, function values ``m``), the constraints as sparse rows
    over (G, F), the measure, the iterates as coefficient vectors over the leaves, and the leaves' client labels.

    Rows: ``rows[r] = (gi, gj, gv, fi, fv, const, kind, group)`` with value sum gv * G[gi, gj] (both triangles:
    PEPit's symmetric convention, see ``row_value``) + sum fv * F[fi] + const, kind 'ineq' (<= 0) or 'eq'."""

    setting: PEPSetting
    n: int
    m: int
    rows: list[tuple]
    objective: tuple
    queries: list[_Query]
    server: list[np.ndarray]  # coefficient vectors of w^0 .. w^T
    point_labels: list[tuple]
    value_labels: list[tuple]
    w0_leaf: int
    star_leaf: int | None
    star_grads: list[int]
    full_constraints: int
    build_s: float
    pair_rows: list = field(default_factory=list)  # PairRows: the interpolation inequalities, vectorized

    @property
    def n_points(self) -> int:
        return len(self.queries)

    def row_value(self, r: tuple, G: np.ndarray, F: np.ndarray) -> float:
        gi, gj, gv, fi, fv, const = r[:6]
        sym = np.where(gi == gj, 1.0, 2.0)
        return float(np.sum(sym * gv * G[gi, gj]) + np.sum(fv * F[fi]) + const)

    def evaluate_instance(self, grad: Callable[[int, np.ndarray], np.ndarray],
                          value: Callable[[int, np.ndarray], float], w0: np.ndarray,
                          w_star: np.ndarray | None = None) -> dict[str, Any]:
        """Replay the PEP's algorithm on concrete client functions: every leaf gets its value in creation order
        (grad f_j and f_j at each queried point, the point computed from the earlier leaves). Returns the server
        iterates (T+1, d), the measure, the Gram matrix and F, and the largest constraint value (<= 0 when the
        functions lie in the PEP's class)."""
        w0 = np.asarray(w0, float)
        V = np.zeros((self.n, w0.shape[0]))
        F = np.zeros(self.m)
        V[self.w0_leaf] = w0
        if self.star_leaf is not None:
            if w_star is None:
                raise ParameterError("w_star", None, "the stationary point of f (the class has one)")
            V[self.star_leaf] = np.asarray(w_star, float)
        for q in self.queries:
            x = q.coef @ V
            for j, (gl, fl) in enumerate(zip(q.grads, q.values)):
                if gl >= 0:
                    V[gl] = grad(j, x)
                if fl >= 0:
                    F[fl] = value(j, x)
        Gm = V @ V.T
        return {"server": np.array([c @ V for c in self.server]), "metric": self.row_value(self.objective, Gm, F),
                "gram": Gm, "F": F, "max_constraint": self.max_constraint(Gm, F)}

    def max_constraint(self, G: np.ndarray, F: np.ndarray) -> float:
        """The largest constraint value at (G, F): inequalities' values (<= 0 when met), equalities' |values|."""
        vals = [self.row_value(r, G, F) if r[6] == "ineq" else abs(self.row_value(r, G, F)) for r in self.rows]
        vals += [float(pr.values(G, F).max()) for pr in self.pair_rows]
        return max(vals) if vals else -math.inf


def _same_point(a, b) -> bool:
    """Whether two PEPit Points are the same combination of leaves (PEPit's own test for a cached oracle call)."""
    da = {k: v for k, v in a.decomposition_dict.items() if v != 0}
    db = {k: v for k, v in b.decomposition_dict.items() if v != 0}
    return da == db


def _leaf_coef(point, n: int) -> np.ndarray:
    out = np.zeros(n)
    for leaf, w in point.decomposition_dict.items():
        out[leaf.counter] += w
    return out


def _expr_coef(expr, m: int) -> np.ndarray:
    """Coefficients of a PEPit Expression that is a combination of function values (leaf Expressions)."""
    out = np.zeros(m)
    if expr.get_is_leaf():
        out[expr.counter] = 1.0
        return out
    for key, w in expr.decomposition_dict.items():
        if key == 1 or isinstance(key, tuple):
            raise FedTheoryError("internal: a function value with a constant or inner-product part")
        out[key.counter] += w
    return out


def _templates(s: PEPSetting) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """PEPit's interpolation inequality of each function class the PEP uses, as numbers: written by PEPit on
    symbols x_i, g_i, f_i, x_j, g_j, f_j, the expression (<= 0) is Tr(Q [x_i g_i x_j g_j]'[x_i g_i x_j g_j])
    + qf . (f_i, f_j) + c. Uses (and resets) PEPit's global counters: call before building a PEP."""
    from PEPit import PEP, Expression, Point
    from PEPit.functions import SmoothFunction, SmoothStronglyConvexFunction

    out = {}
    todo = [("interpolation", SmoothStronglyConvexFunction, {"mu": s.client_mu, "L": s.L},
             "set_smoothness_strong_convexity_constraint_i_j") if s.function_class == "convex" else
            ("interpolation", SmoothFunction, {"L": s.L}, "set_smoothness_i_j")]
    if s.function_class == "convex" and s.mu > s.client_mu:
        todo.append(("mean_strong_convexity", SmoothStronglyConvexFunction, {"mu": s.mu, "L": s.L},
                     "set_smoothness_strong_convexity_constraint_i_j"))
    for group, cls, kw, method in todo:
        pb = PEP()
        f = pb.declare_function(cls, **kw)
        xi, gi, xj, gj = Point(), Point(), Point(), Point()
        fi, fj = Expression(), Expression()
        con = getattr(f, method)(xi, gi, fi, xj, gj, fj)
        if con.equality_or_inequality != "inequality":
            raise FedTheoryError("internal: an interpolation condition that is not an inequality")
        a, b, v, fa, fv, c = _sparse(con.expression)
        Q = np.zeros((4, 4))
        pos = {p.counter: k for k, p in enumerate((xi, gi, xj, gj))}
        for i, j, w in zip(a, b, v):  # PEPit's convention: Tr(W G), W symmetric with W[i, j] = W[j, i] = w
            Q[pos[i], pos[j]] = w
            Q[pos[j], pos[i]] = w
        qf = np.zeros(2)
        fpos = {fi.counter: 0, fj.counter: 1}
        for i, w in zip(fa, fv):
            qf[fpos[i]] += w
        out[group] = (Q, qf, c)
    return out


@dataclass
class PairRows:
    """Interpolation inequalities on P pairs of points, as numbers: pair p's row is
    sum_kl Q[k, l] U[p, k]' G U[p, l] + qf . (V[p] F) + c <= 0, with U[p] the coefficient vectors (over the leaves)
    of x_i, g_i, x_j, g_j and V[p] those of f_i, f_j (``_templates``: Q, qf, c)."""

    group: str
    U: np.ndarray  # (P, 4, n)
    V: np.ndarray  # (P, 2, m)
    Q: np.ndarray  # (4, 4)
    qf: np.ndarray  # (2,)
    c: float

    def values(self, G: np.ndarray, F: np.ndarray) -> np.ndarray:
        return (np.einsum("pka,kl,ab,plb->p", self.U, self.Q, G, self.U, optimize=True)
                + np.einsum("k,pkm,m->p", self.qf, self.V, F) + self.c)


def _sparse(expr):
    from PEPit.tools.expressions_to_matrices import expression_to_sparse_matrices

    gi, gj, gv, fi, fv, c = expression_to_sparse_matrices(expr)
    return (np.asarray(gi, int), np.asarray(gj, int), np.asarray(gv, float), np.asarray(fi, int),
            np.asarray(fv, float), float(c))


class _Builder:
    """Writes the algorithm with PEPit Points and collects the constraints.

    mode 'symmetric': w* is a leaf with leaf gradients g_j(w*) (sum_j g_j(w*) = 0 is imposed by the reduction),
    and only the representatives of each constraint's client orbits are generated (``canonical``: function 0's
    interpolation, the mean's inequalities, the heterogeneity and initial constraints). mode 'pepit': w* = PEPit's
    ``stationary_point`` of the mean (its own elimination), every constraint, client functions' left to
    ``PEP.solve``."""

    def __init__(self, s: PEPSetting, mode: str, pair_rows: str = "vectorized"):
        from PEPit import PEP, Point
        from PEPit.functions import SmoothFunction, SmoothStronglyConvexFunction

        self.s, self.mode = s, mode
        self.pair_rows = pair_rows if mode == "symmetric" else "pepit"
        self.pairs: list[tuple[str, list]] = []
        # PEPit's interpolation inequalities as numbers, read before this PEP resets PEPit's counters
        self.templates = _templates(s) if self.pair_rows == "vectorized" else {}
        self.Point = Point
        self.pb = PEP()
        if s.function_class == "convex":
            self.fs = [self.pb.declare_function(SmoothStronglyConvexFunction, mu=s.client_mu, L=s.L) for _ in range(s.C)]
            self.interp = SmoothStronglyConvexFunction.set_smoothness_strong_convexity_constraint_i_j
        else:
            self.fs = [self.pb.declare_function(SmoothFunction, L=s.L) for _ in range(s.C)]
            self.interp = SmoothFunction.set_smoothness_i_j
        self.labels: dict[int, tuple] = {}
        self.vlabels: dict[int, tuple] = {}
        self.queries: list[tuple] = []  # (key, owner, point, grads, values)
        self.constraints: list[tuple] = []  # (Constraint, group)

    # every client's gradient and value at a new point
    def query(self, point, key: tuple, owner: int | None):
        gs, vs = [], []
        for j, f in enumerate(self.fs):
            g, v = f.oracle(point)
            if self.mode == "symmetric":
                if not (g.get_is_leaf() and v.get_is_leaf()) or g.counter in self.labels:
                    raise FedTheoryError(f"internal: the PEP point {key} of client {owner} coincides with an earlier "
                                         "point (PEPit reuses its gradient); the symmetric reduction needs distinct "
                                         "points")
                self.labels[g.counter] = (key, owner, j)
                self.vlabels[v.counter] = (key, owner, j)
            gs.append(g)
            vs.append(v)
        self.queries.append((key, owner, point, gs, vs))
        return gs, vs

    def mean(self, items):
        out = items[0]
        for it in items[1:]:
            out = out + it
        return out / len(items)

    def build(self):
        s, C = self.s, self.s.C
        w0 = self.pb.set_initial_point()
        self.labels[w0.counter] = ("w0",)
        self.w0 = w0
        star = gstar = fstar = None
        if s.has_star:
            if self.mode == "pepit":
                fbar = self.mean(self.fs)
                star, _, fstar = fbar.stationary_point(return_gradient_and_function_value=True)
                gstar = [f.gradient(star) for f in self.fs]
                self.queries.append((("star",), None, star, gstar, [f.value(star) for f in self.fs]))
            else:
                star = self.Point()
                self.labels[star.counter] = ("x*",)
                gstar, vstar = self.query(star, ("star",), None)
                fstar = self.mean(vstar)
        self.star = star
        # server points the clients are evaluated at: w^0, the measure's, and w^T in the non-convex class (its
        # initial condition f(w^0) - f(z) <= D needs the last point, or nothing bounds the last rounds)
        needs_w = {0} | ({s.T} if (s.metric == "opt_error" or not s.has_star) else set()) | (
            set(range(s.T)) if s.metric == "avg_grad_norm2" else set())
        w = w0
        server = [w0]
        shared: dict[int, tuple] = {}
        last = [w0] * C
        for t in range(s.T + 1):
            if t == s.T:
                if t in needs_w:
                    shared[t] = self.query(w, ("w", t), None)
                break
            # the relaxed starts w^t + beta (w^t - w_i^last); they are w^t itself in round 0, for beta = 0, and
            # when w_i^last = w^t as expressions (one client under Algorithm 1's rule)
            cand = [w if t == 0 or s.beta == 0 else w + s.beta * (w - last[i]) for i in range(C)]
            own = [not _same_point(c, w) for c in cand]
            if t in needs_w or not all(own):
                shared[t] = self.query(w, ("w", t), None)
            starts, ends = [], []
            for i in range(C):
                start = cand[i] if own[i] else w
                g0 = self.query(start, ("s", t, 0), i)[0][i] if own[i] else shared[t][0][i]
                x, g = start, g0
                for k in range(s.K):
                    if k > 0:
                        g = self.query(x, ("s", t, k), i)[0][i]
                    x = x - s.eta * g
                starts.append(start)
                ends.append(x)
            if s.server_rule == "algorithm1":
                w = self.mean(ends)
            else:
                w = w - s.server_lr * self.mean([a - b for a, b in zip(starts, ends)])
            last = ends
            server.append(w)
        self.server = server

        # the measure
        if s.metric == "opt_error":
            self.metric = self.mean(shared[s.T][1]) - fstar
        elif s.metric == "dist2":
            self.metric = (server[-1] - star) ** 2
        else:
            tot = None
            for t in range(s.T):
                gn = self.mean(shared[t][0]) ** 2
                tot = gn if tot is None else tot + gn
            self.metric = tot / s.T

        # initial condition
        fw0 = self.mean(shared[0][1])
        if s.function_class == "convex":
            self.add(fw0 - fstar <= s.D if s.initial == "function" else (w0 - star) ** 2 <= s.D, "initial")
        else:
            for key, owner, _, _, vs in self.queries:
                if (key, owner) != (("w", 0), None) and self.canonical(owner):
                    self.add(fw0 - self.mean(vs) <= s.D, "initial")

        # heterogeneity at every queried point
        if s.B is not None:
            for key, owner, _, gs, _ in self.queries:
                if self.canonical(owner):
                    sq = self.mean([g ** 2 for g in gs])
                    self.add(sq <= s.G ** 2 + s.B ** 2 * self.mean(gs) ** 2, "heterogeneity")

        # f = mean f_i: the mu-strongly convex interpolation inequalities between queried points
        if s.function_class == "convex" and s.mu > s.client_mu:
            ns = SimpleNamespace(mu=s.mu, L=s.L)
            from PEPit.functions import SmoothStronglyConvexFunction as SSC

            pairs = [(a, b) for a, qa in enumerate(self.queries) for b, qb in enumerate(self.queries)
                     if a != b and self.canonical(qa[1], qb[1])]
            if self.pair_rows == "vectorized":
                self.pairs.append(("mean_strong_convexity", pairs))
            else:
                pts = [(q[2], self.mean(q[3]), self.mean(q[4])) for q in self.queries]
                for a, b in pairs:
                    self.add(SSC.set_smoothness_strong_convexity_constraint_i_j(ns, *pts[a], *pts[b]),
                             "mean_strong_convexity")
        # client functions: in symmetric mode function 0's interpolation, one pair per orbit of its stabiliser
        if self.mode == "symmetric":
            pairs = [(a, b) for a, qa in enumerate(self.queries) for b, qb in enumerate(self.queries)
                     if a != b and self.canonical(qa[1], qb[1], fixed=(0,))]
            if self.pair_rows == "vectorized":
                self.pairs.append(("interpolation", pairs))
            else:
                f0 = self.fs[0]
                pts = [(q[2], q[3][0], q[4][0]) for q in self.queries]
                for a, b in pairs:
                    self.add(self.interp(f0, *pts[a], *pts[b]), "interpolation")
        self.gstar = gstar

    def canonical(self, *owners, fixed: tuple = ()) -> bool:
        """Whether a tuple of point owners is its orbit's representative under the relabellings of the clients
        that fix ``fixed``: the other clients appear in the order len(fixed), len(fixed) + 1, ... (mode 'pepit':
        every tuple)."""
        if self.mode == "pepit":
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

    def add(self, constraint, group: str):
        self.constraints.append((constraint, group))
        if self.mode == "pepit":
            self.pb.add_constraint(constraint)

    def snapshot(self, build_s: float) -> FederatedPEP:
        from PEPit import Expression, Point

        n, m = Point.counter, Expression.counter
        rows = []
        for c, group in self.constraints:
            kind = "ineq" if c.equality_or_inequality == "inequality" else "eq"
            rows.append((*_sparse(c.expression), kind, group))
        queries = [_Query(key, owner, _leaf_coef(p, n), [g.counter if g.get_is_leaf() else -1 for g in gs],
                          [v.counter if v.get_is_leaf() else -1 for v in vs])
                   for key, owner, p, gs, vs in self.queries]
        s = self.s
        npts = len(self.queries)  # the unreduced PEP: every function's interpolation at every queried point, ...
        full = s.C * npts * (npts - 1) + (npts if s.B is not None else 0)
        full += npts * (npts - 1) if (s.function_class == "convex" and s.mu > s.client_mu) else 0
        full += 1 if s.function_class == "convex" else npts - 1
        pair_rows = []
        for group, pairs in self.pairs:
            if not pairs:
                continue
            a, b = np.array(pairs).T
            X = np.array([q.coef for q in queries])
            if group == "interpolation":  # function 0
                Gc = np.array([_leaf_coef(q[3][0], n) for q in self.queries])
                Fc = np.array([_expr_coef(q[4][0], m) for q in self.queries])
            else:  # the mean of the clients
                Gc = np.array([np.mean([_leaf_coef(g, n) for g in q[3]], axis=0) for q in self.queries])
                Fc = np.array([np.mean([_expr_coef(v, m) for v in q[4]], axis=0) for q in self.queries])
            Q, qf, c = self.templates[group]
            pair_rows.append(PairRows(group, np.stack([X[a], Gc[a], X[b], Gc[b]], axis=1),
                                      np.stack([Fc[a], Fc[b]], axis=1), Q, qf, c))
        return FederatedPEP(
            setting=s, n=n, m=m, rows=rows, objective=(*_sparse(self.metric), "objective", "objective"),
            queries=queries, server=[_leaf_coef(p, n) for p in self.server],
            point_labels=[self.labels.get(i, ("?",)) for i in range(n)],
            value_labels=[self.vlabels.get(i, ("?",)) for i in range(m)], w0_leaf=self.w0.counter,
            star_leaf=None if self.star is None else self.star.counter,
            star_grads=[g.counter for g in self.gstar] if (self.gstar and self.mode == "symmetric") else [],
            full_constraints=full, build_s=build_s, pair_rows=pair_rows)


def build_pep(setting: PEPSetting, *, pair_rows: str = "vectorized") -> FederatedPEP:
    """Write ``setting``'s algorithm and class with PEPit and return it as numbers (symmetric form: one
    representative constraint per client orbit; see the module docstring).

    pair_rows: 'vectorized' (default) evaluates PEPit's interpolation inequalities on every pair of points at once
    (the inequality is read from PEPit once, on six symbols, then applied to the points' coefficient vectors);
    'pepit' lets PEPit write each one as an expression (the same rows, ~1 ms each)."""
    _require_pep()
    check_choice("pair_rows", pair_rows, ("vectorized", "pepit"))
    t0 = time.perf_counter()
    b = _Builder(setting, "symmetric", pair_rows)
    b.build()
    return b.snapshot(time.perf_counter() - t0)


# ------------------------------------------------------------------------------------ symmetry reduction


def _client_perm(labels: list[tuple], C: int, sigma: np.ndarray) -> np.ndarray:
    """The permutation of leaf ids induced by relabelling client c as sigma[c]."""
    index = {lab: i for i, lab in enumerate(labels)}
    out = np.empty(len(labels), int)
    for i, lab in enumerate(labels):
        if len(lab) == 3:
            key, owner, j = lab
            lab = (key, None if owner is None else int(sigma[owner]), int(sigma[j]))
        out[i] = index[lab]
    return out


def _generators(C: int) -> list[np.ndarray]:
    if C < 2:
        return []
    swap = np.arange(C)
    swap[[0, 1]] = [1, 0]
    return [swap, np.roll(np.arange(C), -1)]


def _orbits_of_pairs(perms: list[np.ndarray], n: int) -> np.ndarray:
    """Orbit id of every ordered pair (a, b) under the group generated by ``perms`` and (a, b) -> (b, a)."""
    import scipy.sparse as sps
    from scipy.sparse.csgraph import connected_components

    a, b = np.divmod(np.arange(n * n), n)
    src = [a * n + b]
    dst = [b * n + a]
    for p in perms:
        src.append(a * n + b)
        dst.append(p[a] * n + p[b])
    g = sps.coo_matrix((np.ones(sum(len(s) for s in src)), (np.concatenate(src), np.concatenate(dst))), shape=(n * n, n * n))
    _, lab = connected_components(g, directed=True, connection="weak")
    _, lab = np.unique(lab, return_inverse=True)
    return lab.reshape(n, n)


def _orbits(perms: list[np.ndarray], n: int) -> np.ndarray:
    import scipy.sparse as sps
    from scipy.sparse.csgraph import connected_components

    if not perms:
        return np.arange(n)
    src = np.concatenate([np.arange(n)] * len(perms))
    dst = np.concatenate(perms)
    _, lab = connected_components(sps.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)), directed=True,
                                  connection="weak")
    return lab


def isotypic_bases(labels: list[tuple], C: int, *, drop_trivial: tuple = ()) -> dict[str, np.ndarray]:
    """For each irreducible representation of S_C present on the leaves, the images of one fixed vector under
    equivariant embeddings that span its isotypic component (columns, n x copies). An invariant symmetric G is PSD
    iff Phi' G Phi is PSD for every block (Schur's lemma; real irreps of S_C are absolutely irreducible).

    Leaves: ('w0',)/('x*',) fixed; (key, None, j) grad f_j at a shared point; (key, i, j) grad f_j at client i's
    point. drop_trivial: shared keys whose trivial copy is identically zero (w*: sum_j grad f_j(w*) = 0)."""
    index = {lab: i for i, lab in enumerate(labels)}
    n = len(labels)
    shared = sorted({lab[0] for lab in labels if len(lab) == 3 and lab[1] is None}, key=repr)
    slots = sorted({lab[0] for lab in labels if len(lab) == 3 and lab[1] is not None}, key=repr)
    fixed = [i for i, lab in enumerate(labels) if len(lab) == 1]
    blocks: dict[str, list[np.ndarray]] = {"trivial": [], "standard": [], "(C-2,2)": [], "(C-2,1,1)": []}

    def vec(entries):
        v = np.zeros(n)
        for lab, w in entries:
            v[index[lab]] += w
        return v

    C_ = range(C)
    for i in fixed:
        v = np.zeros(n)
        v[i] = 1.0
        blocks["trivial"].append(v)
    for p in shared:
        if p not in drop_trivial:
            blocks["trivial"].append(vec([((p, None, j), 1.0) for j in C_]))
        if C >= 2:
            blocks["standard"].append(vec([((p, None, 0), 1.0), ((p, None, 1), -1.0)]))
    for s in slots:
        blocks["trivial"].append(vec([((s, i, i), 1.0) for i in C_]))
        if C >= 2:
            blocks["trivial"].append(vec([((s, i, j), 1.0) for i in C_ for j in C_ if i != j]))
            x = np.zeros(C)
            x[0], x[1] = 1.0, -1.0
            blocks["standard"].append(vec([((s, i, i), x[i]) for i in C_]))
            blocks["standard"].append(vec([((s, i, j), x[i]) for i in C_ for j in C_ if i != j]))
            blocks["standard"].append(vec([((s, i, j), x[j]) for i in C_ for j in C_ if i != j]))
        if C >= 3:  # antisymmetric, zero row sums: a 3-cycle
            cyc = [(0, 1), (1, 2), (2, 0)]
            blocks["(C-2,1,1)"].append(vec([((s, i, j), 1.0) for i, j in cyc] + [((s, j, i), -1.0) for i, j in cyc]))
        if C >= 4:  # symmetric, zero vertex sums: {0,1} - {2,1} - {0,3} + {2,3}
            pairs = [((0, 1), 1.0), ((2, 1), -1.0), ((0, 3), -1.0), ((2, 3), 1.0)]
            blocks["(C-2,2)"].append(vec([((s, a, b), w) for (a, b), w in pairs] + [((s, b, a), w) for (a, b), w in pairs]))
    out = {}
    for name, cols in blocks.items():
        if not cols:
            continue
        Phi = np.array(cols).T
        # keep linearly independent columns (C = 2: the row and column copies of 'standard' coincide up to sign)
        import scipy.linalg

        _, R, piv = scipy.linalg.qr(Phi, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        rank = int(np.sum(d > 1e-10 * max(d.max(), 1.0)))
        out[name] = Phi[:, np.sort(piv[:rank])]
    return out


@dataclass
class PEPResult:
    """The solved PEP. ``value``: the worst case (the solver's optimal objective), None unless status is
    'optimal'; ``status``: cvxpy's status ('optimal', 'optimal_inaccurate', 'infeasible', 'unbounded',
    'solver_error', ...)."""

    value: float | None
    status: str
    solver: str
    method: str
    setting: PEPSetting
    primal: float | None = None
    dual: float | None = None
    gram_dim: int = 0
    points: int = 0
    constraints_full: int = 0
    reduced: dict[str, Any] = field(default_factory=dict)
    gram_min_eig: float | None = None
    max_violation: float | None = None
    times: dict[str, float] = field(default_factory=dict)
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "status": self.status, "solver": self.solver, "method": self.method,
                "primal": self.primal, "dual": self.dual, "gram_dim": self.gram_dim, "points": self.points,
                "constraints_full": self.constraints_full, "reduced": self.reduced, "gram_min_eig": self.gram_min_eig,
                "max_violation": self.max_violation, "times": self.times, "detail": self.detail,
                "exact": self.setting.exact, "class": self.setting.describe(), "algorithm": self.setting.algorithm()}


def rebased(pep: FederatedPEP) -> FederatedPEP:
    """The same PEP over better-scaled leaves: every client's gradient and value at a point p (not w^0, not w*)
    replaced by its difference from that client's gradient and value at w^0, g_j(p) = g_j(w^0) + d_j(p),
    f_j(p) = f_j(w^0) + e_j(p). A unimodular, client-equivariant change of variables (the value and the orbit
    structure are unchanged); with small steps the points are close and the Gram entries of d_j are small, which the
    solver then resolves in their own scale instead of as differences of O(1) entries."""
    import dataclasses as dc

    import scipy.sparse as sps

    n, m = pep.n, pep.m
    q0 = next(q for q in pep.queries if q.key == ("w", 0))
    M, N = np.eye(n), np.eye(m)
    for q in pep.queries:
        if q.key in (("w", 0), ("star",)):
            continue
        for j, (gl, vl) in enumerate(zip(q.grads, q.values)):
            if gl >= 0 and q0.grads[j] >= 0:
                M[gl, q0.grads[j]] += 1.0
            if vl >= 0 and q0.values[j] >= 0:
                N[vl, q0.values[j]] += 1.0

    Ms = sps.csr_matrix(M)

    def row(r):
        gi, gj, gv, fi, fv, c = r[:6]
        off = gi != gj
        W = sps.coo_matrix((np.concatenate([gv, gv[off]]), (np.concatenate([gi, gj[off]]), np.concatenate([gj, gi[off]]))),
                           shape=(n, n))
        Wn = sps.tril(Ms.T @ W.tocsr() @ Ms).tocoo()
        keep = Wn.data != 0
        a, b, v = Wn.row[keep], Wn.col[keep], Wn.data[keep]
        f = np.zeros(m)
        np.add.at(f, fi, fv)
        fnew = f @ N
        k = np.nonzero(fnew)[0]
        return (a, b, v, k, fnew[k], c, *r[6:])

    return dc.replace(pep, rows=[row(r) for r in pep.rows], objective=row(pep.objective),
                      pair_rows=[dc.replace(pr, U=pr.U @ M, V=pr.V @ N) for pr in pep.pair_rows],
                      queries=[dc.replace(q, coef=q.coef @ M) for q in pep.queries],
                      server=[c @ M for c in pep.server])


def _reduce(pep: FederatedPEP):
    """Orbit coordinates: y (pairs of leaves), phi (function values); rows and blocks as matrices over them."""
    import scipy.sparse as sps

    C, n, m = pep.setting.C, pep.n, pep.m
    gens = _generators(C)
    perms = [_client_perm(pep.point_labels, C, g) for g in gens]
    fperms = [_client_perm(pep.value_labels, C, g) for g in gens]
    O = _orbits_of_pairs(perms, n)
    Of = _orbits(fperms, m)
    ny, nf = int(O.max()) + 1, int(Of.max()) + 1

    def reduce_row(r):
        gi, gj, gv, fi, fv, const = r[:6]
        ry = np.bincount(O[gi, gj], weights=np.where(gi == gj, 1.0, 2.0) * gv, minlength=ny)
        rf = np.bincount(Of[fi], weights=fv, minlength=nf) if len(fi) else np.zeros(nf)
        return ry, rf, const

    seen: dict[bytes, int] = {}
    ineq, eq = [], []
    for r in pep.rows:
        ry, rf, c = reduce_row(r)
        vec = np.concatenate([ry, rf, [c]])
        key = np.round(vec, 12).tobytes() + r[6].encode()
        if key in seen:
            continue
        seen[key] = 1
        (ineq if r[6] == "ineq" else eq).append(vec)
    S = sps.csr_matrix((np.ones(n * n), (np.arange(n * n), O.ravel())), shape=(n * n, ny))
    for pr in pep.pair_rows:  # W_p = U_p' Q U_p for a chunk of pairs at once, summed over each orbit of (a, b)
        step = max(1, int(2e6 // (n * n)))
        for lo in range(0, len(pr.U), step):
            U = pr.U[lo:lo + step]
            W = np.einsum("pka,kl,plb->pab", U, pr.Q, U, optimize=True).reshape(len(U), n * n)
            RY = np.asarray((S.T @ W.T).T)
            FF = np.einsum("k,pkm->pm", pr.qf, pr.V[lo:lo + step])
            RF = np.zeros((len(U), nf))
            np.add.at(RF.T, Of, FF.T)
            for ry, rf in zip(RY, RF):
                vec = np.concatenate([ry, rf, [pr.c]])
                key = np.round(vec, 12).tobytes() + b"ineq"
                if key not in seen:
                    seen[key] = 1
                    ineq.append(vec)
    # sum_j grad f_j(w*) = 0: G (sum_j e_{g_j(w*)}) = 0, one row per leaf
    if pep.star_grads:
        sg = np.array(pep.star_grads)
        for b in range(n):
            ry = np.bincount(O[sg, b], minlength=ny).astype(float)
            vec = np.concatenate([ry, np.zeros(nf), [0.0]])
            key = np.round(vec, 12).tobytes() + b"eq"
            if key not in seen:
                seen[key] = 1
                eq.append(vec)
    obj = reduce_row(pep.objective)
    bases = isotypic_bases(pep.point_labels, C, drop_trivial=(("star",),) if pep.star_grads else ())
    blocks = {}
    for name, Phi in bases.items():
        Ps = sps.csr_matrix(Phi)
        blocks[name] = (Phi.shape[1], (sps.kron(Ps, Ps).T @ S).tocsr())  # vec(Phi' G Phi) = kron(Phi,Phi)' vec(G)
    A = sps.csr_matrix(np.array(ineq).reshape(-1, ny + nf + 1))
    E = sps.csr_matrix(np.array(eq).reshape(-1, ny + nf + 1))
    return O, Of, ny, nf, A, E, obj, blocks


BASES = ("auto", "differences", "gradients")
DIFFERENCES_BELOW = 0.25  # basis 'auto': gradient differences when eta L <= this (close points), else gradients


def solve_pep(setting: PEPSetting | FederatedPEP, *, solver: str = "CLARABEL", method: str = "symmetric",
              basis: str = "auto", verbose: bool = False, **solver_options) -> PEPResult:
    """Solve the PEP of ``setting`` (or of an already built ``FederatedPEP``). method 'symmetric' (default: the
    symmetry-reduced SDP, cvxpy + ``solver``) or 'pepit' (PEPit's own ``PEP.solve`` through its cvxpy wrapper:
    the reference, slow beyond a few dozen points). A status other than 'optimal' leaves ``value`` None, except an
    'optimal_inaccurate' solution that passes the checks of ``_accept``.

    basis (method 'symmetric'): the leaves the Gram matrix is written over, an exact change of variables chosen for
    accuracy: 'gradients' (as built), 'differences' (``rebased``: each client's gradient and value minus its value
    at w^0; 100x more accurate when the points are close), 'auto' = 'differences' when eta L <= 0.25 (measured:
    tests/test_pep.py, docs/worst-case.md)."""
    _require_pep()
    check_choice("solver", solver, SOLVERS)
    check_choice("method", method, METHODS)
    check_choice("basis", basis, BASES)
    if method == "pepit":
        s = setting.setting if isinstance(setting, FederatedPEP) else setting
        return _solve_with_pepit(s, solver, verbose, **solver_options)
    import cvxpy as cp

    pep = setting if isinstance(setting, FederatedPEP) else build_pep(setting)
    s = pep.setting
    t0 = time.perf_counter()
    if basis == "auto":
        basis = "differences" if s.eta * s.L <= DIFFERENCES_BELOW else "gradients"
    if basis == "differences":
        pep = rebased(pep)
    O, Of, ny, nf, A, E, obj, blocks = _reduce(pep)
    t1 = time.perf_counter()
    y = cp.Variable(ny)
    phi = cp.Variable(nf)
    cons = []
    if A.shape[0]:
        cons.append(A[:, :ny] @ y + A[:, ny:ny + nf] @ phi + A[:, -1].toarray()[:, 0] <= 0)
    if E.shape[0]:
        cons.append(E[:, :ny] @ y + E[:, ny:ny + nf] @ phi + E[:, -1].toarray()[:, 0] == 0)
    for name, (size, K) in blocks.items():
        M = cp.reshape(K @ y, (size, size), order="C")  # Phi' G Phi: symmetric by construction (G is)
        cons.append((M + M.T) / 2 >> 0)
    ry, rf, c0 = obj
    prob = cp.Problem(cp.Maximize(ry @ y + rf @ phi + c0), cons)
    opts = dict(solver_options)
    if solver == "SCS":
        opts.setdefault("eps_abs", 1e-9)
        opts.setdefault("eps_rel", 1e-9)
        opts.setdefault("max_iters", 200000)
    status, err = "solver_error", ""
    try:
        with warnings.catch_warnings():  # cvxpy warns "Solution may be inaccurate": the status says it (and _accept)
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            prob.solve(solver=solver, verbose=verbose, **opts)
        status = str(prob.status)
    except cp.error.SolverError as exc:
        err = f"{solver} failed ({str(exc)[:120]})"
        if solver != "SCS":  # Clarabel stops without a certificate on unbounded PEPs; SCS names them
            try:
                prob.solve(solver="SCS", verbose=verbose, max_iters=20000)
                status, solver = str(prob.status), "SCS"
                err += f"; SCS (diagnosis, 20000 iterations): {status}"
                if status == "optimal":  # at SCS's default tolerance: held to the checks of an inaccurate solution
                    status = "optimal_inaccurate"
            except cp.error.SolverError as exc2:
                err += f"; SCS failed too ({str(exc2)[:80]})"
    t2 = time.perf_counter()
    res = PEPResult(value=None, status=status, solver=solver, method=method, setting=s, gram_dim=pep.n,
                    points=pep.n_points, constraints_full=pep.full_constraints,
                    reduced={"basis": basis, "variables": ny + nf, "inequalities": int(A.shape[0]),
                             "equalities": int(E.shape[0]),
                             "blocks": {k: v[0] for k, v in blocks.items()}},
                    times={"build_s": round(pep.build_s, 4), "reduce_s": round(t1 - t0, 4),
                           "solve_s": round(t2 - t1, 4)}, detail=err)
    if status in ("optimal", "optimal_inaccurate") and y.value is not None:
        Gm = y.value[O]
        Fv = phi.value[Of]
        res.primal = float(prob.value)
        res.dual = _dual_bound(cons, A, E, c0)
        ev = np.linalg.eigvalsh(Gm)
        res.gram_min_eig = float(ev[0] / max(ev[-1], 1e-300))
        res.max_violation = max(pep.max_constraint(Gm, Fv), 0.0)
        res.value, res.detail = _accept(res, s)
    return res


ACCEPT_GAP = 1e-4  # relative primal-dual gap an 'optimal_inaccurate' solution must meet to be used
ACCEPT_VIOLATION = 1e-6  # largest constraint violation of the rebuilt Gram matrix, relative to max(1, D, value)
# smallest eigenvalue of the rebuilt Gram matrix, relative to its largest: at the solvers' stalling level (~1e-7), not
# below it (Clarabel 0.11 ends (3, 2, 3) at beta = 0.3 at -1.1e-8, its value 3.5e-8 from the closed form (1 - eta mu)^(2KT) D)
ACCEPT_MIN_EIG = -1e-7


def _accept(res: PEPResult, s: PEPSetting) -> tuple[float | None, str]:
    """The value to use, or None. 'optimal' is used as is; 'optimal_inaccurate' (Clarabel's AlmostSolved: these
    PEPs are degenerate, and interior-point solvers stall near 1e-7 relative) only when the rebuilt Gram matrix is
    PSD to ACCEPT_MIN_EIG, meets every generated constraint to ACCEPT_VIOLATION and the duality gap is below ACCEPT_GAP."""
    if res.status == "optimal":
        return res.primal, res.detail
    if res.status != "optimal_inaccurate" or res.primal is None:
        return None, res.detail
    scale = max(1.0, s.D, abs(res.primal))
    gap = abs((res.dual if res.dual is not None else math.inf) - res.primal) / max(1.0, abs(res.primal))
    ok = (res.gram_min_eig is not None and res.gram_min_eig >= ACCEPT_MIN_EIG and res.max_violation is not None
          and res.max_violation <= ACCEPT_VIOLATION * scale and gap <= ACCEPT_GAP)
    note = (f"solver status optimal_inaccurate: {'accepted' if ok else 'rejected'} (duality gap {gap:.2g}, largest "
            f"violation {res.max_violation:.2g}, Gram matrix min eigenvalue {res.gram_min_eig:.2g} relative)")
    return (res.primal if ok else None), note


def _dual_bound(cons, A, E, c0) -> float | None:
    """The dual objective c0 - lambda' b - nu' e from cvxpy's multipliers (an upper bound on the maximum when the
    multipliers are dual feasible; the solver's tolerance decides how closely)."""
    try:
        val = c0
        k = 0
        if A.shape[0]:
            val -= float(np.asarray(cons[k].dual_value) @ A[:, -1].toarray()[:, 0])
            k += 1
        if E.shape[0]:
            val -= float(np.asarray(cons[k].dual_value) @ E[:, -1].toarray()[:, 0])
        return float(val)
    except (TypeError, ValueError):
        return None


def _solve_with_pepit(s: PEPSetting, solver: str, verbose: bool, **opts) -> PEPResult:
    import io
    from contextlib import redirect_stdout

    t0 = time.perf_counter()
    b = _Builder(s, "pepit")
    b.build()
    b.pb.set_performance_metric(b.metric)
    from PEPit import Point

    t1 = time.perf_counter()
    status, value, err = "solver_error", None, ""
    buf = io.StringIO()
    try:
        with redirect_stdout(buf):
            value = b.pb.solve(wrapper="cvxpy", solver=solver, verbose=2 if verbose else 0, **opts)
        status = str(b.pb.wrapper.prob.status)
    except Exception as exc:  # noqa: BLE001 - any solver failure is reported by name, never as a number
        err = f"{type(exc).__name__}: {str(exc)[:200]}"
    t2 = time.perf_counter()
    res = PEPResult(value=None, status=status, solver=solver, method="pepit", setting=s, gram_dim=Point.counter,
                    points=len(b.queries), times={"build_s": round(t1 - t0, 4), "solve_s": round(t2 - t1, 4)},
                    detail=err)
    if value is not None and status in ("optimal", "optimal_inaccurate"):
        res.dual = float(value)
        res.primal = float(b.pb.wrapper.objective.value)
        if status == "optimal":
            res.value = res.primal
    return res


# ------------------------------------------------------------------------------------ a bound's PEP (the record)


@dataclass(frozen=True)
class PEPSpec:
    """What the PEP of one bound record needs: the setting (algorithm, class, measure), the values the record's
    bound is evaluated at, the run's structural settings (checked against ``record.requires``), the parameters
    the factory was called with, and a note."""

    record_id: str
    setting: PEPSetting
    values: Mapping[str, Any]
    settings: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    record_override: Any = None  # a Bound used in place of the registered record (fedtheory.testing.scaled_bound)

    @property
    def record(self):
        """The bound record: ``record_override`` if given, else the registered ``record_id``."""
        if self.record_override is not None:
            return self.record_override
        from ..plugins import record

        return record(self.record_id)


_PEP_REGISTRY: dict[str, Callable[..., PEPSpec]] = {}
RTOL = 1e-4  # the verdict's relative tolerance: the accepted solutions' accuracy (ACCEPT_GAP)


def register_pep(record_id: str, make: Callable[..., PEPSpec]) -> None:
    """Declare that ``record_id`` has a PEP: ``make(record_id, **params) -> PEPSpec`` (params as for the record's
    worst-case search, plus ``server_rule`` and ``function_class``)."""
    _PEP_REGISTRY[record_id] = make


def pep_entries() -> dict[str, Callable[..., PEPSpec]]:
    """Every record with a PEP declaration (the paper plug-ins are loaded first)."""
    from .spec import worst_case_entries

    worst_case_entries()
    return dict(_PEP_REGISTRY)


def pep_worst_case(spec: PEPSpec, *, solver: str = "CLARABEL", method: str = "symmetric",
                   random_ratio: float | None = None, reference: str | None = None) -> dict[str, Any]:
    """Solve ``spec``'s PEP and compare it with the record's bound; return the JSON record (see docs/worst-case.md).

    verdict: ``holds`` (the SDP's value, an upper bound over the PEP's class, is <= the bound: the bound holds on
    the whole class, up to the relative tolerance RTOL), ``violated`` (only when the PEP is exact for a class inside
    the record's assumptions and its value exceeds the bound), ``inconclusive`` (the value of a relaxed PEP
    exceeds the bound, or the solver did not return 'optimal': the status is named, no number is used),
    ``not_applicable`` (a condition of the record fails: named)."""
    t0 = time.perf_counter()
    s = spec.setting
    res = solve_pep(s, solver=solver, method=method)
    rec = spec.record
    vals = dict(spec.values)
    failed = [f"requires {k}={v} (run has {spec.settings.get(k)!r})" for k, v in rec.requires.items()
              if spec.settings.get(k) != v] + rec.conditions_failed(vals)
    bound = float(np.asarray(rec.evaluate(vals), float))
    value = res.value
    detail = ""
    if failed:
        verdict = "not_applicable"
    elif value is None:
        verdict, detail = "inconclusive", f"solver status {res.status}" + (f": {res.detail}" if res.detail else "")
    elif not math.isfinite(bound):
        verdict, detail = "inconclusive", f"the bound evaluates to {bound}"
    else:
        upper = max(value, res.dual if res.dual is not None else value)
        if upper <= bound * (1 + RTOL):
            verdict = "holds"
        elif s.exact and value > bound * (1 + RTOL):
            verdict = "violated"
        else:
            verdict, detail = "inconclusive", ("the PEP's value exceeds the bound, but its class relaxes the "
                                               "record's assumptions (an upper bound, not an instance)")
    slack = None
    if value is not None and math.isfinite(bound):
        slack = bound / value if value > 0 else math.inf
    return {
        "id": spec.record_id, "method": "pep", "worst_measured": value, "bound": bound, "slack": slack,
        "verdict": verdict, "detail": detail, "conditions_failed": failed,
        "exact": s.exact,
        "relation": ("the worst case of the class as stated" if s.exact else
                     "an upper bound on the worst case of the class as stated (the exact worst case of the relaxed "
                     "class); the search's instances lie in both, so search <= PEP"),
        "class": s.describe(), "algorithm": s.algorithm(), "measure": s.metric,
        "solver": {"name": res.solver, "method": res.method, "status": res.status, "primal": res.primal,
                   "dual": res.dual, "gram_min_eig": res.gram_min_eig, "max_violation": res.max_violation,
                   "times": res.times, "detail": res.detail},
        "sdp": {"gram_dim": res.gram_dim, "points": res.points, "constraints_full": res.constraints_full,
                "reduced": res.reduced},
        "values": {k: v for k, v in vals.items() if isinstance(v, (int, float))}, "params": dict(spec.params),
        "random_ratio": random_ratio, "reference": reference,
        "budget": {"solver": solver, "method": method, "rtol": RTOL},
        "elapsed_s": round(time.perf_counter() - t0, 3), "note": spec.note,
    }


_LAMBDA_INPUTS = ("eta", "K", "L", "B", "N", "C", "beta")


def run_pep(record_id: str, *, sets: Mapping[str, Any] | None = None, seed: int = 0, use_reference: bool = True,
            reference_kw: Mapping[str, Any] | None = None, server_rule: str | None = None,
            function_class: str | None = None, solver: str = "CLARABEL", method: str = "symmetric") -> dict[str, Any]:
    """The PEP of ``record_id`` at the constants of today's check (where its worst-case declaration has a
    reference), overridden by ``sets``. The PEP is of exact gradients: a reference's sigma_l is set to 0 (and said
    so); the check's lambda is recomputed when a constant it depends on changes."""
    _require_pep()
    entries = pep_entries()
    if record_id not in entries:
        raise ParameterError("ID", record_id, "a record with a PEP declaration: " + ", ".join(sorted(entries)))
    from .spec import worst_case_entries

    w = worst_case_entries().get(record_id)
    params: dict[str, Any] = {}
    random_ratio = label = None
    if use_reference and w is not None and w.reference is not None:
        ref = w.reference(seed, **dict(reference_kw or {}))
        params.update(ref["params"])
        random_ratio, label = ref.get("random_ratio"), ref.get("label")
    sets = dict(sets or {})
    notes = []
    if params.get("sigma_l", 0) and "sigma_l" not in sets:
        notes.append(f"sigma_l {params['sigma_l']:.4g} -> 0 (the PEP is of exact gradients)")
        params["sigma_l"] = 0.0
    changed = [k for k in sets if params.get(k) != sets[k]]
    if "lam" in params and "lam" not in sets and any(k in _LAMBDA_INPUTS for k in changed):
        params.pop("lam")
        notes.append("lam recomputed (best admissible at these constants)")
    params.update(sets)
    if "C" in sets and "N" not in sets and params.get("N") not in (None, sets["C"]):
        params["N"] = sets["C"]  # the PEP covers full participation
        notes.append(f"N = C = {sets['C']}")
    if changed:
        notes.append("constants changed here: " + ", ".join(changed))
    if label is not None and notes:
        label = f"{label}; {'; '.join(notes)} (random_ratio is the check's, at its own constants)"
    elif notes:
        label = "; ".join(notes)
    for k, v in (("server_rule", server_rule), ("function_class", function_class)):
        if v is not None:
            params[k] = v
    try:
        spec = entries[record_id](record_id, **{k: v for k, v in params.items() if k != "record_id"})
    except TypeError as exc:
        raise ParameterError("--set", sorted(params), f"names the PEP of {record_id} accepts ({exc})") from None
    return pep_worst_case(spec, solver=solver, method=method, random_ratio=random_ratio, reference=label)
