"""Solving the PEP: the symmetry-reduced SDP with cvxpy (:func:`solve_pep`, the default) or PEPit's own solve (the
reference), the checks an inaccurate solution must pass before its value is used, and :class:`PEPResult`."""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._validation import check_choice
from .build import FederatedPEP, PEPBuilder, build_pep
from .reduction import eliminated, rebased, reduce_pep, sparsified
from .setting import PEPSetting, require_pep

__all__ = ["ACCEPT_GAP", "ACCEPT_MIN_EIG", "ACCEPT_VIOLATION", "BASES", "DIFFERENCES_BELOW", "METHODS", "PEPResult",
           "SOLVERS", "solve_pep"]

SOLVERS = ("CLARABEL", "SCS")
METHODS = ("symmetric", "pepit")


@dataclass
class PEPResult:
    """The solved PEP (what :func:`solve_pep` returns); ``as_dict()`` is its JSON form.

    Parameters
    ----------
    value : float or None
        The worst case (the solver's optimal objective); None unless status is 'optimal' or an
        'optimal_inaccurate' solution passed the acceptance checks (``ACCEPT_GAP``, ``ACCEPT_VIOLATION``,
        ``ACCEPT_MIN_EIG``).
    status : str
        cvxpy's status ('optimal', 'optimal_inaccurate', 'infeasible', 'unbounded', 'solver_error', ...).
    solver : str
        The solver that gave it ('CLARABEL', 'SCS').
    method : str
        'symmetric' or 'pepit'.
    setting : PEPSetting or ProtocolSetting
        The PEP's class and run settings.
    primal : float, optional
        The solver's objective.
    dual : float, optional
        The dual objective from the solver's multipliers (an upper bound on the maximum where they are dual
        feasible).
    gram_dim : int, default 0
        The Gram matrix's dimension.
    points : int, default 0
        The queried points.
    constraints_full : int, default 0
        The constraints of the unreduced PEP.
    reduced : dict, default {}
        The reduced SDP solved: basis, variables, inequalities, equalities and the PSD blocks' sizes.
    gram_min_eig : float, optional
        The rebuilt Gram matrix's smallest eigenvalue relative to its largest.
    max_violation : float, optional
        The largest violation of the generated constraints at the rebuilt (G, F) (>= 0).
    times : dict of str to float, default {}
        Seconds per stage (``build_s``, ``reduce_s``, ``solve_s``, ...).
    detail : str, default ""
        What the solve said: an error, an accepted or rejected inaccurate solution, a second solve.
    gram : ndarray, optional
        The solution's Gram matrix over the built PEP's leaves (for the worst-case instance).
    F : ndarray, optional
        Its function values.
    """

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
    gram: np.ndarray | None = None  # the solution's Gram matrix over the built PEP's leaves
    F: np.ndarray | None = None  # and its function values

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "status": self.status, "solver": self.solver, "method": self.method,
                "primal": self.primal, "dual": self.dual, "gram_dim": self.gram_dim, "points": self.points,
                "constraints_full": self.constraints_full, "reduced": self.reduced, "gram_min_eig": self.gram_min_eig,
                "max_violation": self.max_violation, "times": self.times, "detail": self.detail,
                "exact": self.setting.exact, "class": self.setting.describe(), "algorithm": self.setting.algorithm()}


BASES = ("auto", "differences", "gradients", "iterates")
DIFFERENCES_BELOW = 0.25  # basis 'auto': gradient differences when eta L <= this (close points), else gradients
# basis 'auto': the local iterates as leaves (short rows) when eta L >= this, the Gram matrix has this many leaves
# (smaller PEPs gain nothing) and a client's own points evaluate its own function only (with every function at every
# point, FedAvg's (G, B) PEP at K = 4 gave no accepted value over the iterates); below this eta L a gradient as a
# difference of close iterates over eta is ill-conditioned (measured: at eta L = 0.1 and below SCAFFOLD's PEP is
# rejected; docs/worst-case.md, benchmarks/bench_pep_size.py)
ITERATES_FROM = 0.2
ITERATES_ABOVE_LEAVES = 60


def solve_pep(setting: PEPSetting | FederatedPEP, *, solver: str = "CLARABEL", method: str = "symmetric",
              basis: str = "auto", verbose: bool = False, **solver_options) -> PEPResult:
    """Solve the PEP of ``setting`` (or of an already built :class:`FederatedPEP`).

    A status other than 'optimal' leaves ``value`` None, except an 'optimal_inaccurate' solution whose rebuilt
    Gram matrix is PSD to ``ACCEPT_MIN_EIG``, meets every generated constraint to ``ACCEPT_VIOLATION`` and has a
    duality gap below ``ACCEPT_GAP``. Where Clarabel gives no usable value, the PEP is solved again with its
    objective capped (a cap the optimum reaches names it unbounded), then diagnosed with SCS.

    Parameters
    ----------
    setting : PEPSetting or FederatedPEP
        The PEP: a setting (built by :func:`build_pep`) or an already built PEP (e.g. :func:`protocol_pep`'s).
    solver : {"CLARABEL", "SCS"}, default "CLARABEL"
        The cvxpy solver.
    method : {"symmetric", "pepit"}, default "symmetric"
        'symmetric': the symmetry-reduced SDP, cvxpy + ``solver``; 'pepit': PEPit's own ``PEP.solve`` through its
        cvxpy wrapper (the reference for a :class:`PEPSetting`, slow beyond a few dozen points).
    basis : {"auto", "differences", "gradients", "iterates"}, default "auto"
        Method 'symmetric': the leaves the Gram matrix is written over, an exact change of variables chosen for
        accuracy: 'gradients' (as built), 'differences' (``rebased``: each client's gradient and value minus its
        value at w^0; 100x more accurate when the points are close), 'iterates' (the differences, then
        ``sparsified``: the algorithm's local iterates replace the gradients that made them, so the constraints'
        rows are short; 2-5x faster on the round protocol's PEPs, and ill-conditioned when eta L is small: a
        gradient is a difference of two close points over eta). 'auto': 'differences' when eta L <= 0.25 (the
        gradients if it gives no accepted value), else 'gradients'; and 'iterates' first when eta L >= 0.2, the PEP
        recorded its iterates (the round protocol's), has at least 60 leaves and evaluates each client's function
        only at its own points and the shared ones, the other basis if it gives no accepted value (measured:
        tests/test_pep.py, tests/test_pep_protocol.py, docs/worst-case.md).
    verbose : bool, default False
        The solver's own output.
    **solver_options
        Passed to the solver through cvxpy's ``solve`` (SCS defaults here: eps_abs = eps_rel = 1e-9,
        max_iters = 200000).

    Returns
    -------
    PEPResult
        The value (None without an accepted solution), the solver's status and the solution's account.

    Raises
    ------
    MissingExtraError
        The extra ``fedtheory[pep]`` is not installed.
    ParameterError
        An unknown ``solver``, ``method`` or ``basis``.
    """
    require_pep()
    check_choice("solver", solver, SOLVERS)
    check_choice("method", method, METHODS)
    check_choice("basis", basis, BASES)
    if method == "pepit":
        s = setting.setting if isinstance(setting, FederatedPEP) else setting
        return _solve_with_pepit(s, solver, verbose, **solver_options)
    pep = setting if isinstance(setting, FederatedPEP) else build_pep(setting)
    s = pep.setting
    if basis == "auto":
        basis = "differences" if s.eta * s.L <= DIFFERENCES_BELOW else "gradients"
        own_only = all(q.owner is None or sum(g >= 0 for g in q.grads) == 1 for q in pep.queries)
        if s.eta * s.L >= ITERATES_FROM and pep.iterates and pep.n >= ITERATES_ABOVE_LEAVES and own_only:
            res = _solve(pep, "iterates", solver, method, verbose, **solver_options)
            if res.value is not None:
                return res
            fallback = _solve(pep, basis, solver, method, verbose, **solver_options)
            fallback.detail = (f"basis 'iterates' gave no accepted value ({res.status}); solved again over "
                               f"'{basis}'" + (f"; {fallback.detail}" if fallback.detail else ""))
            fallback.times["first_try_s"] = round(sum(res.times.values()), 4)
            return fallback
        if basis == "differences":  # close points: the differences first, the gradients if they give no value
            res = _solve(pep, basis, solver, method, verbose, **solver_options)
            if res.value is not None:
                return res
            fallback = _solve(pep, "gradients", solver, method, verbose, **solver_options)
            if fallback.value is None:
                return res
            fallback.detail = (f"basis 'differences' gave no accepted value ({res.status}); solved again over "
                               "'gradients'" + (f"; {fallback.detail}" if fallback.detail else ""))
            fallback.times["first_try_s"] = round(sum(res.times.values()), 4)
            return fallback
    return _solve(pep, basis, solver, method, verbose, **solver_options)


def _solve(pep: FederatedPEP, basis: str, solver: str, method: str, verbose: bool, **solver_options) -> PEPResult:
    import cvxpy as cp

    s = pep.setting
    t0 = time.perf_counter()
    if basis in ("differences", "iterates"):
        pep = rebased(pep)
    if basis == "iterates":
        pep = sparsified(pep)
    if not pep.symmetric and pep.zero_sums:
        pep = eliminated(pep)
    O, Of, ny, nf, A, E, obj, blocks, lmis = reduce_pep(pep)
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
    for size, Mat in lmis:  # a linear matrix inequality over the Gram matrix (the spectral class of mixing)
        M = cp.reshape(Mat[:, :ny] @ y + Mat[:, ny:ny + nf] @ phi + Mat[:, -1], (size, size), order="C")
        cons.append((M + M.T) / 2 >> 0)
    ry, rf, c0 = obj
    prob = cp.Problem(cp.Maximize(ry @ y + rf @ phi + c0), cons)
    opts = dict(solver_options)
    if solver == "SCS":
        opts.setdefault("eps_abs", 1e-9)
        opts.setdefault("eps_rel", 1e-9)
        opts.setdefault("max_iters", 200000)
    objective = ry @ y + rf @ phi + c0

    def attempt(problem, name, **kw):
        """(status, error text) of one solve; cvxpy's 'Solution may be inaccurate' is in the status (and _accept)."""
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
                problem.solve(solver=name, verbose=verbose, **kw)
            return str(problem.status), ""
        except cp.error.SolverError as exc:
            return "solver_error", f"{name} failed ({str(exc)[:120]})"

    def evaluate(problem, status, used, detail, t2):
        res = PEPResult(value=None, status=status, solver=used, method=method, setting=s, gram_dim=pep.n,
                        points=pep.n_points, constraints_full=pep.full_constraints,
                        reduced={"basis": basis, "variables": ny + nf, "inequalities": int(A.shape[0]),
                                 "equalities": int(E.shape[0]),
                                 "blocks": {k: v[0] for k, v in blocks.items()}},
                        times={"build_s": round(pep.build_s, 4), "reduce_s": round(t1 - t0, 4),
                               "solve_s": round(t2 - t1, 4)}, detail=detail)
        if status in ("optimal", "optimal_inaccurate") and y.value is not None:
            Gm = y.value[O]
            Fv = phi.value[Of]
            res.primal = float(problem.value)
            res.dual = _dual_bound(cons, A, E, c0)
            ev = np.linalg.eigvalsh(Gm)
            res.gram_min_eig = float(ev[0] / max(ev[-1], 1e-300))
            res.max_violation = max(pep.max_constraint(Gm, Fv), 0.0)
            T = pep.to_built if pep.to_built is not None else np.eye(pep.n)
            res.gram = T @ Gm @ T.T  # over the built PEP's leaves (for the worst-case instance)
            res.F = Fv if pep.values_to_built is None else pep.values_to_built @ Fv
            res.value, res.detail = _accept(res, s)
            if detail and res.detail != detail:
                res.detail = f"{detail}; {res.detail}"
        return res

    status, err = attempt(prob, solver, **opts)
    res = evaluate(prob, status, solver, err, time.perf_counter())
    if res.value is not None or solver == "SCS":
        return res
    # no usable value: Clarabel stops without a certificate (or 'almost solved' far from feasible) on unbounded PEPs.
    # Solve again with the objective capped: a cap the optimum reaches names the PEP unbounded, an inactive one leaves
    # the optimum unchanged (a convex problem)
    cap = CAP * max(1.0, s.D, s.L * s.D)
    capped = cp.Problem(cp.Maximize(objective), cons + [objective <= cap])
    cstatus, cerr = attempt(capped, solver, **opts)
    why = err or f"{solver} status {status}" + (f" ({res.detail})" if res.detail else "")
    if cstatus in ("optimal", "optimal_inaccurate") and capped.value is not None:
        if capped.value >= cap * (1 - 1e-6):
            out = evaluate(capped, "unbounded", solver, f"{why}; with the objective capped at {cap:.3g} the "
                           "optimum reaches the cap: unbounded (or a worst case above the cap)", time.perf_counter())
            out.value = None
            return out
        out = evaluate(capped, cstatus, solver, f"{why}; solved again with an inactive cap on the objective "
                       f"({cap:.3g})", time.perf_counter())
        if out.value is not None or status != "solver_error":
            return out
    if status != "solver_error":
        return res
    # SCS names unbounded PEPs
    sstatus, serr = attempt(prob, "SCS", max_iters=20000)
    detail = f"{why}; SCS (diagnosis, 20000 iterations): {sstatus}" + (f" {serr}" if serr else "")
    if sstatus == "optimal":  # at SCS's default tolerance: held to the checks of an inaccurate solution
        sstatus = "optimal_inaccurate"
    return evaluate(prob, sstatus, "SCS", detail, time.perf_counter())


# the cap on the objective (times max(1, D, L D)) that tells an unbounded PEP from a failed solve: Clarabel resolves a
# capped unbounded PEP at 1e3 and fails again at 1e4 (tests/test_pep.py, the PEP without heterogeneity)
CAP = 1e3
ACCEPT_GAP = 1e-4  # relative primal-dual gap an 'optimal_inaccurate' solution must meet to be used
ACCEPT_VIOLATION = 1e-6  # largest constraint violation of the rebuilt Gram matrix, relative to max(1, D, value)
# smallest eigenvalue of the rebuilt Gram matrix, relative to its largest: at the solvers' stalling level (~1e-7), not
# below it (Clarabel 0.11 ends (3, 2, 3) at beta = 0.3 at -1.1e-8,
# its value 3.5e-8 from the closed form (1 - eta mu)^(2KT) D)
ACCEPT_MIN_EIG = -1e-7


def _accept(res: PEPResult, s: PEPSetting) -> tuple[float | None, str]:
    """The value to use, or None. 'optimal' is used as is; 'optimal_inaccurate' (Clarabel's AlmostSolved: these
    PEPs are degenerate, and interior-point solvers stall near 1e-7 relative) only when the rebuilt Gram matrix is
    PSD to ACCEPT_MIN_EIG, meets every generated constraint to ACCEPT_VIOLATION and the duality gap is below
    ACCEPT_GAP."""
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
    b = PEPBuilder(s, "pepit")
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
