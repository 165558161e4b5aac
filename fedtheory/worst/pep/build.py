"""Building the PEP with PEPit: the algorithm written with PEPit Points (:class:`PEPBuilder`), and the result as numbers
(:class:`FederatedPEP`: the constraints as sparse rows over the Gram matrix and the function values; PEPit's
interpolation inequalities on every pair of points at once, :class:`PairRows`)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from ..._validation import FedTheoryError, ParameterError, check_choice
from .setting import PEPSetting, require_pep

__all__ = ["FederatedPEP", "PEPBuilder", "PairRows", "Query", "build_pep", "expr_coef", "interpolation_template",
           "leaf_coef", "sparse_row"]


@dataclass
class Query:
    """One point where clients' functions are evaluated: its key, owner (None: shared), coefficients over the
    leaves, and the leaf ids of grad f_j and f_j there (j = 0..C-1; -1 where f_j is not evaluated). ``prox``: for a
    proximal point x = prox_{gamma f_j}(a), (the coefficients of a, gamma, j): x is implicit (its coefficients hold
    grad f_j(x) itself), and a replay solves for it."""

    key: tuple
    owner: int | None
    coef: np.ndarray
    grads: list[int]
    values: list[int]
    prox: tuple | None = None


_Query = Query


@dataclass
class FederatedPEP:
    """A built PEP as numbers: leaves (Gram dimension ``n``, function values ``m``), the constraints as sparse rows
    over (G, F), the measure, the iterates as coefficient vectors over the leaves, and the leaves' client labels.

    Rows: ``rows[r] = (gi, gj, gv, fi, fv, const, kind, group)`` with value sum gv * G[gi, gj] (both triangles:
    PEPit's symmetric convention, see ``row_value``) + sum fv * F[fi] + const, kind 'ineq' (<= 0) or 'eq'.

    What :func:`build_pep` and :func:`protocol_pep` return and :func:`solve_pep` solves. ``max_constraint(G, F)``
    is the largest constraint value at a solution; ``evaluate_instance`` replays the algorithm on concrete client
    functions.

    Parameters
    ----------
    setting : PEPSetting or ProtocolSetting
        The class and the run settings it was built from.
    n : int
        The Gram matrix's dimension: its leaves (w^0, w*, the clients' gradients, ...).
    m : int
        The function-value leaves.
    rows : list of tuple
        The constraints, as above.
    objective : tuple
        The measure, a row of the same form (kind and group 'objective').
    queries : list of Query
        The points where clients' functions are evaluated: key, owner (None: shared), coefficients over the leaves
        and the leaves of each client's gradient and value there (-1: not evaluated).
    server : list of ndarray
        The coefficient vectors of the server's models w^0 .. w^T.
    point_labels : list of tuple
        Per Gram leaf, what it is (e.g. ``("w0",)``, or (point key, owner, client)).
    value_labels : list of tuple
        Per function-value leaf, likewise.
    w0_leaf : int
        The leaf of w^0.
    star_leaf : int or None
        The leaf of w* (None: the class has no stationary point, 'smooth').
    star_grads : list of int
        The leaves of the clients' gradients at w* (symmetric form), else empty.
    full_constraints : int
        The constraints of the unreduced PEP (every client function's interpolation at every pair of points, ...).
    build_s : float
        Seconds the build took.
    pair_rows : list of PairRows, default []
        The interpolation inequalities on pairs of points, vectorized (one ``PairRows`` per group).
    symmetric : bool, default True
        Whether the PEP is invariant under relabelling the clients (then solved reduced).
    zero_sums : list, default []
        (leaf ids, weights, key): sum_l weight_l leaf_l = 0 as vectors.
    lmis : list, default []
        (size, rows): the size x size matrix of the rows' values is PSD (a class of mixing matrices).
    to_built : ndarray, optional
        After a change of leaves (``rebased``, ``eliminated``): G_built = to_built G to_built'. None: unchanged.
    values_to_built : ndarray, optional
        Likewise F_built = values_to_built F.
    iterates : list, default []
        Every point the algorithm computed, in order (coefficient vectors; the round protocol's PEP records them).
    """

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
    symmetric: bool = True  # whether the PEP is invariant under relabelling the clients (solved reduced)
    zero_sums: list = field(default_factory=list)  # (leaf ids, weights, key): sum_l weight_l * leaf_l = 0 as vectors
    lmis: list = field(default_factory=list)  # (size, rows): the size x size matrix of rows' values is PSD
    # after a change of leaves (``reduction.rebased``, ``reduction.eliminated``): the built PEP's leaves and values as
    # combinations of these (G_built = to_built G to_built', F_built = values_to_built F); None: unchanged
    to_built: np.ndarray | None = None
    values_to_built: np.ndarray | None = None
    iterates: list = field(default_factory=list)  # every point the algorithm computed, in order (coefficients)

    @property
    def n_points(self) -> int:
        return len(self.queries)

    def row_value(self, r: tuple, G: np.ndarray, F: np.ndarray) -> float:
        gi, gj, gv, fi, fv, const = r[:6]
        sym = np.where(gi == gj, 1.0, 2.0)
        return float(np.sum(sym * gv * G[gi, gj]) + np.sum(fv * F[fi]) + const)

    def evaluate_instance(self, grad: Callable[[int, np.ndarray], np.ndarray],
                          value: Callable[[int, np.ndarray], float], w0: np.ndarray,
                          w_star: np.ndarray | None = None,
                          prox: Callable[[int, np.ndarray, float], np.ndarray] | None = None) -> dict[str, Any]:
        """Replay the PEP's algorithm on concrete client functions: every leaf gets its value in creation order
        (grad f_j and f_j at each queried point, the point computed from the earlier leaves; a proximal point from
        ``prox(j, a, gamma)`` = argmin_x gamma f_j(x) + ||x - a||^2 / 2). Returns the server iterates (T+1, d), the
        measure, the Gram matrix and F, and the largest constraint value (<= 0 when the functions lie in the PEP's
        class)."""
        w0 = np.asarray(w0, float)
        V = np.zeros((self.n, w0.shape[0]))
        F = np.zeros(self.m)
        V[self.w0_leaf] = w0
        if self.zero_sums and any(k != ("star",) for _, _, k in self.zero_sums):
            raise ParameterError("pep", "a class of mixing matrices", "a PEP whose points are all computed from "
                                 "gradients (a relaxed class of matrices has no matrix to replay)")
        if self.star_leaf is not None:
            if w_star is None:
                raise ParameterError("w_star", None, "the stationary point of f (the class has one)")
            V[self.star_leaf] = np.asarray(w_star, float)
        for q in self.queries:
            if q.prox is not None:
                if prox is None:
                    raise ParameterError("prox", None, "the clients' proximal operators (the algorithm takes exact "
                                         "proximal steps)")
                acoef, gamma, jp = q.prox
                a = acoef @ V
                x = np.asarray(prox(jp, a, gamma), float)
                V[q.grads[jp]] = (a - x) / gamma
            x = q.coef @ V
            for j, (gl, fl) in enumerate(zip(q.grads, q.values)):
                if q.prox is not None and j == q.prox[2]:
                    if fl >= 0:
                        F[fl] = value(j, x)
                    continue
                if gl >= 0:
                    V[gl] = grad(j, x)
                if fl >= 0:
                    F[fl] = value(j, x)
        Gm = V @ V.T
        return {"server": np.array([c @ V for c in self.server]), "metric": self.row_value(self.objective, Gm, F),
                "gram": Gm, "F": F, "max_constraint": self.max_constraint(Gm, F)}

    def max_constraint(self, G: np.ndarray, F: np.ndarray) -> float:
        """The largest constraint value at (G, F): inequalities' values (<= 0 when met), equalities' ``|value|``."""
        vals = [self.row_value(r, G, F) if r[6] == "ineq" else abs(self.row_value(r, G, F)) for r in self.rows]
        vals += [float(pr.values(G, F).max()) for pr in self.pair_rows if len(pr.U)]
        for size, entries in self.lmis:  # a PSD matrix: its most negative eigenvalue is the violation
            M = np.array([self.row_value(r, G, F) for r in entries]).reshape(size, size)
            vals.append(float(-np.linalg.eigvalsh((M + M.T) / 2)[0]))
        return max(vals) if vals else -math.inf


def _same_point(a, b) -> bool:
    """Whether two PEPit Points are the same combination of leaves (PEPit's own test for a cached oracle call)."""
    da = {k: v for k, v in a.decomposition_dict.items() if v != 0}
    db = {k: v for k, v in b.decomposition_dict.items() if v != 0}
    return da == db


def leaf_coef(point, n: int) -> np.ndarray:
    out = np.zeros(n)
    for leaf, w in point.decomposition_dict.items():
        out[leaf.counter] += w
    return out


def expr_coef(expr, m: int) -> np.ndarray:
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


def interpolation_template(kind: str, L: float, mu: float = 0.0) -> tuple[np.ndarray, np.ndarray, float]:
    """PEPit's interpolation inequality of one function class as numbers: 'convex' (``SmoothStronglyConvexFunction``
    (mu, L)) or 'smooth' (``SmoothFunction`` (L), possibly non-convex). Written by PEPit on symbols x_i, g_i, f_i,
    x_j, g_j, f_j, the expression (<= 0) is Tr(Q [x_i g_i x_j g_j]'[x_i g_i x_j g_j]) + qf . (f_i, f_j) + c. Uses (and
    resets) PEPit's global counters: call before building a PEP."""
    from PEPit import PEP, Expression, Point
    from PEPit.functions import SmoothFunction, SmoothStronglyConvexFunction

    check_choice("function class", kind, ("convex", "smooth"))
    pb = PEP()
    if kind == "convex":
        f = pb.declare_function(SmoothStronglyConvexFunction, mu=mu, L=L)
        method = "set_smoothness_strong_convexity_constraint_i_j"
    else:
        f = pb.declare_function(SmoothFunction, L=L)
        method = "set_smoothness_i_j"
    xi, gi, xj, gj = Point(), Point(), Point(), Point()
    fi, fj = Expression(), Expression()
    con = getattr(f, method)(xi, gi, fi, xj, gj, fj)
    if con.equality_or_inequality != "inequality":
        raise FedTheoryError("internal: an interpolation condition that is not an inequality")
    a, b, v, fa, fv, c = sparse_row(con.expression)
    Q = np.zeros((4, 4))
    pos = {p.counter: k for k, p in enumerate((xi, gi, xj, gj))}
    for i, j, w in zip(a, b, v):  # PEPit's convention: Tr(W G), W symmetric with W[i, j] = W[j, i] = w
        Q[pos[i], pos[j]] = w
        Q[pos[j], pos[i]] = w
    qf = np.zeros(2)
    fpos = {fi.counter: 0, fj.counter: 1}
    for i, w in zip(fa, fv):
        qf[fpos[i]] += w
    return Q, qf, c


def _templates(s: PEPSetting) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """The interpolation inequalities the PEP of ``s`` uses (``interpolation_template``), by group."""
    out = {"interpolation": interpolation_template(s.function_class, s.L, s.client_mu)}
    if s.function_class == "convex" and s.mu > s.client_mu:
        out["mean_strong_convexity"] = interpolation_template("convex", s.L, s.mu)
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


def sparse_row(expr):
    from PEPit.tools.expressions_to_matrices import expression_to_sparse_matrices

    gi, gj, gv, fi, fv, c = expression_to_sparse_matrices(expr)
    return (np.asarray(gi, int), np.asarray(gj, int), np.asarray(gv, float), np.asarray(fi, int),
            np.asarray(fv, float), float(c))


class PEPBuilder:
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
            self.fs = [self.pb.declare_function(SmoothStronglyConvexFunction, mu=s.client_mu, L=s.L)
                       for _ in range(s.C)]
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
            rows.append((*sparse_row(c.expression), kind, group))
        queries = [_Query(key, owner, leaf_coef(p, n), [g.counter if g.get_is_leaf() else -1 for g in gs],
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
                Gc = np.array([leaf_coef(q[3][0], n) for q in self.queries])
                Fc = np.array([expr_coef(q[4][0], m) for q in self.queries])
            else:  # the mean of the clients
                Gc = np.array([np.mean([leaf_coef(g, n) for g in q[3]], axis=0) for q in self.queries])
                Fc = np.array([np.mean([expr_coef(v, m) for v in q[4]], axis=0) for q in self.queries])
            Q, qf, c = self.templates[group]
            pair_rows.append(PairRows(group, np.stack([X[a], Gc[a], X[b], Gc[b]], axis=1),
                                      np.stack([Fc[a], Fc[b]], axis=1), Q, qf, c))
        return FederatedPEP(
            setting=s, n=n, m=m, rows=rows, objective=(*sparse_row(self.metric), "objective", "objective"),
            queries=queries, server=[leaf_coef(p, n) for p in self.server],
            point_labels=[self.labels.get(i, ("?",)) for i in range(n)],
            value_labels=[self.vlabels.get(i, ("?",)) for i in range(m)], w0_leaf=self.w0.counter,
            star_leaf=None if self.star is None else self.star.counter,
            star_grads=[g.counter for g in self.gstar] if (self.gstar and self.mode == "symmetric") else [],
            full_constraints=full, build_s=build_s, pair_rows=pair_rows)


def build_pep(setting: PEPSetting, *, pair_rows: str = "vectorized") -> FederatedPEP:
    """Write ``setting``'s algorithm (FedAvg / FedInit) and class with PEPit and return it as numbers, in symmetric
    form: one representative constraint per client orbit (the module ``fedtheory.worst.pep``).

    Parameters
    ----------
    setting : PEPSetting
        The algorithm, the class and the measure.
    pair_rows : {"vectorized", "pepit"}, default "vectorized"
        'vectorized' evaluates PEPit's interpolation inequalities on every pair of points at once (the inequality
        is read from PEPit once, on six symbols, then applied to the points' coefficient vectors); 'pepit' lets
        PEPit write each one as an expression (the same rows, ~1 ms each).

    Returns
    -------
    FederatedPEP
        The PEP as numbers (:func:`solve_pep` solves it).

    Raises
    ------
    MissingExtraError
        The extra ``fedtheory[pep]`` is not installed.
    ParameterError
        An unknown ``pair_rows``.
    """
    require_pep()
    check_choice("pair_rows", pair_rows, ("vectorized", "pepit"))
    t0 = time.perf_counter()
    b = PEPBuilder(setting, "symmetric", pair_rows)
    b.build()
    return b.snapshot(time.perf_counter() - t0)
