"""A PEP's worst case as a concrete instance: functions reconstructed from the solution, re-run by the simulator, and
written as a self-contained script (numpy only) that runs the algorithm and prints measured against bound.

From the solved Gram matrix G = V V' (V: one row per leaf, in the dimension of G's numerical rank) every queried point,
gradient and value is a vector or a number; each client's data pass the interpolation inequalities of its class up to
the solver's tolerance, and :mod:`fedtheory.sim.problems.interpolant` builds a function of the class through them
(L-smooth and mu-strongly convex by construction, whatever the tolerance). The simulator then runs the *algorithm's own
plug-ins* on that problem (``simulate``: not the PEP's replay) from the PEP's w^0, the record's assumptions are
certified on the instance (``checks.certify``: a heterogeneity constant the PEP imposed only at its points must hold
for all w here), and the bound is evaluated at the instance's own constants (its ||w^0 - w*||^2 or f(w^0) - f*, both
readings of an R over a set of minimizers). A PEP violation counts only where this re-run exceeds that bound.

The script (:func:`counterexample_script`) embeds the instance's data through ``repr`` and the interpolant's source,
replays the algorithm as the straight-line program the PEP wrote (every point a combination of w^0 and the
gradients before it), computes w* and f* itself, and prints its measure, the bound and the ratio.
"""
from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..._validation import ParameterError
from .build import FederatedPEP

__all__ = ["RANK_TOL", "Counterexample", "counterexample", "counterexample_script", "reconstruct"]

RANK_TOL = 1e-9  # eigenvalues of the Gram matrix below this times the largest are dropped (the solver's noise)
CONFIRM_RTOL = 1e-6  # the re-run must exceed the bound by this much (relative) to count


@dataclass
class Counterexample:
    """A reconstructed worst case: the problem, the start, what the simulator measured on it, the bound at its own
    constants, and whether that confirms the violation (``confirmed``; ``reason`` otherwise).

    What :func:`counterexample` returns; ``summary()`` is the part a PEP record carries. See docs/worst-case.md,
    "Every PEP worst case a runnable counterexample".

    Parameters
    ----------
    record_id : str
        The bound record.
    problem : InterpolatedProblem
        The clients, functions of the PEP's class interpolated through the solution's points, gradients and values.
    w0 : ndarray
        (d,): the start.
    measured : float
        The record's left side on the simulator's re-run (after the square root where the spec's ``lhs_root``).
    bound : float
        The record's bound at the instance's own constants.
    values : dict
        The values the bound was evaluated at (the spec's, with the instance's own where it gives them).
    confirmed : bool
        Whether the re-run exceeds the bound (relative 1e-6) with every assumption of the record certified on the
        instance and its conditions met.
    reason : str
        Why it confirms the violation, or every reason it does not.
    dimension : int
        d, the dimension of the reconstruction (the solution's Gram matrix's numerical rank).
    pep_value : float
        The PEP's value (NaN where it has none).
    data : dict, default {}
        What the self-contained script embeds (``counterexample_script``).
    path : str, optional
        Where the script was written.
    in_class : bool, default True
        Whether the instance certifies every assumption of the record (any bound of them can be tested on it).
    """

    record_id: str
    problem: Any
    w0: np.ndarray
    measured: float
    bound: float
    values: dict
    confirmed: bool
    reason: str
    dimension: int
    pep_value: float
    data: dict = field(default_factory=dict)
    path: str | None = None
    in_class: bool = True  # the instance certifies every assumption of the record (any bound of them can be tested)

    def summary(self) -> dict[str, Any]:
        return {"confirmed": self.confirmed, "reason": self.reason, "measured_by_simulator": self.measured,
                "bound_at_instance": self.bound, "values_at_instance": {k: v for k, v in self.values.items()
                                                                        if isinstance(v, (int, float))},
                "dimension": self.dimension, "pep_value": self.pep_value, "file": self.path}


def _class_mu(s) -> float:
    return -s.L if s.function_class == "smooth" else s.client_mu


def reconstruct(pep: FederatedPEP, gram: np.ndarray, F: np.ndarray):
    """(problem, w0, V): the interpolated clients through the solution's points, gradients and values (V: the leaves'
    vectors, G ~ V V')."""
    from ...sim.problems.interpolant import interpolant_data
    from ...sim.problems.interpolated import InterpolatedProblem

    s = pep.setting
    if any(q.prox is not None for q in pep.queries):
        raise ParameterError("algorithm", "exact proximal steps", "gradient steps only for a reconstructed instance "
                             "(a proximal step's interpolant is not written out)")
    if pep.lmis or any(k not in (("star",), ("amin",)) for _, _, k in pep.zero_sums):
        raise ParameterError("mixing", "a class of matrices", "a fixed mixing matrix for a reconstructed instance")
    ev, U = np.linalg.eigh((gram + gram.T) / 2)
    keep = ev > RANK_TOL * max(ev.max(), 1e-300)
    V = U[:, keep] * np.sqrt(ev[keep])
    C = s.C
    L, mu = s.L, _class_mu(s)
    parts = []
    for j in range(C):
        rows = [(q.coef @ V, V[q.grads[j]], F[q.values[j]]) for q in pep.queries
                if q.grads[j] >= 0 and q.values[j] >= 0]
        X, Gr, Fv = (np.array(v) for v in zip(*rows))
        parts.append(interpolant_data(X, Gr, Fv, L, mu))
    p = getattr(s, "p", None)
    star = V[pep.star_leaf] if pep.star_leaf is not None else None
    problem = InterpolatedProblem(parts, L, mu, weights=p, w_star_hint=star, name=f"PEP worst case (d = {V.shape[1]})")
    return problem, V[pep.w0_leaf], V


def agents_gap(problem, w0: np.ndarray) -> float:
    """sum_i (f_i(w^0) - min f_i) of an interpolated problem: each client's own minimum by its minimization (in closed
    form for a convex client: minus the conjugate's largest c, attained on its data)."""
    from ...sim.problems.interpolant import interpolant, minimize_sum

    w0 = np.asarray(w0, float)
    out = 0.0
    for A, c in problem.parts:
        if problem.mu == 0:
            f_min = -float(c.max())
        else:
            _, f_min, _ = minimize_sum([(A, c)], np.ones(1), problem.L, problem.mu, w0)
        out += float(interpolant(A, c, problem.L, problem.mu, w0)[0]) - f_min
    return out


def _initial_quantity(problem, w0: np.ndarray, initial: str) -> tuple[float, str]:
    """The instance's ||w^0 - w*||^2 (the largest over a set of minimizers: the bound must fail under both readings of
    R), f(w^0) - f*, or sum_i (f_i(w^0) - min f_i) (``agents_gap``)."""
    c = problem.constants
    if initial == "agents_gap":
        return agents_gap(problem, w0), "each client's own minimum, by its minimization"
    if initial == "none":
        return 0.0, "no initial condition"
    if initial == "distance":
        verts = problem.minimizer_set
        if verts is not None:
            d2 = np.sum((verts - w0) ** 2, axis=1)
            return float(d2.max()), (f"max over the {len(verts)} vertices of the minimizer set" if len(verts) > 1
                                     else "the unique minimizer (closed form)")
        return float(np.sum((w0 - np.asarray(c["w_star"].value)) ** 2)), c["w_star"].note
    return float(problem.loss(w0[None])[0] - c["f_star"].value), c["f_star"].note


# the engine's measures the re-run records for a setting's measure (the step measures at every local step, the
# gossip's consensus, Delta^t); the other measures are read from the trace's iterates
ENGINE_MEASURES = {"step_avg_grad_norm2": ("step_grad_norm2_mean",), "step_avg_opt_error": ("avg_opt_error",),
                   "consensus2": ("consensus_max",), "divergence": ("delta",), "avg_divergence": ("delta",)}


def _measure(problem, s, tr) -> float:
    """The setting's measure on the simulator's re-run (its own computation of it: the engine's measures, or the
    problem at the trace's iterates)."""
    c = problem.constants
    wT = tr.final_w[0]
    if s.metric == "opt_error":
        return float(problem.loss(wT[None])[0] - c["f_star"].value)
    if s.metric == "dist2":
        verts = problem.minimizer_set
        w_star = np.asarray(c["w_star"].value)
        if verts is not None:  # the smallest over the minimizer set: the measure's least favourable reading
            return float(np.min(np.sum((verts - wT) ** 2, axis=1)))
        return float(np.sum((wT - w_star) ** 2))
    if s.metric == "grad_norm2":
        return float(np.sum(problem.grad(wT[None])[0] ** 2))
    if s.metric == "step_avg_grad_norm2":  # (1/(K T)) sum_{s < K T} ||grad f(xbar_s)||^2: row K T - 1
        return float(tr["step_grad_norm2_mean"][s.K * s.T - 1, 0])
    if s.metric == "step_avg_opt_error":  # f(xhat) - f*, xhat the mean of xbar_0..xbar_{K T - 1}: row K T - 1
        return float(tr["avg_opt_error"][s.K * s.T - 1, 0])
    if s.metric == "consensus2":  # the largest agent's ||x_i^T - xbar^T|| (row T - 1), squared: >= agent 0's
        return float(tr["consensus_max"][s.T - 1, 0] ** 2)
    if s.metric == "divergence":
        return float(tr["delta"][s.T, 0])
    if s.metric == "avg_divergence":
        return float(np.mean(tr["delta"][:s.T, 0]))
    if s.metric in ("opt_error", "dist2", "grad_norm2", "weighted_opt_error", "avg_grad_norm2"):
        its = tr.iterates[:-1, 0]
        if s.metric == "weighted_opt_error":
            a = np.asarray(s.metric_weights) / np.sum(s.metric_weights)
            return float(a @ (problem.loss(its) - c["f_star"].value))
        return float(np.mean(np.sum(problem.grad(its) ** 2, axis=1)))
    raise ParameterError("metric", s.metric, "a measure the simulator's re-run reads (or the spec's instance_measure)")


def counterexample(spec, pep: FederatedPEP, result, algorithm) -> Counterexample:
    """Reconstruct the worst case of ``result`` (a solved ``pep`` of ``spec``), re-run ``algorithm`` on it with the
    simulator, certify the record's assumptions there and evaluate the bound at the instance's own constants.

    A PEP violation counts only where this re-run exceeds that bound (the module
    ``fedtheory.worst.pep.instance``).

    Parameters
    ----------
    spec : PEPSpec
        The PEP's declaration (its record, values, ``initial_symbol``, ``instance_symbols``, ``instance_measure``).
    pep : FederatedPEP
        The PEP that was solved.
    result : PEPResult
        Its solution (``gram`` and ``F`` set).
    algorithm : Algorithm
        The ``fedtheory.sim`` algorithm the simulator re-runs (e.g. ``spec.simulated_algorithm()``).

    Returns
    -------
    Counterexample
        The instance, its measure, the bound at its constants and whether it confirms the violation.

    Raises
    ------
    ParameterError
        The PEP cannot be written out as an instance (exact proximal steps, a class of mixing matrices), or its
        measure is not one the re-run reads.
    """
    from ...checks import certify
    from ...sim import ClientSampling, Exact, RunConfig, simulate

    s = pep.setting
    record = spec.record
    problem, w0, V = reconstruct(pep, result.gram, result.F)
    cfg = RunConfig(rounds=s.T, local_steps=s.K, lr=s.eta, oracle=Exact())
    own = {}
    if spec.instance_measure is not None:  # the declaration's own re-run (e.g. one round more, a paper's measure)
        raw, own = spec.instance_measure(problem, w0, s, algorithm)
    else:
        tr = simulate(problem, algorithm, cfg, [0], w0=w0, keep_iterates=True,
                      measures=ENGINE_MEASURES.get(s.metric, ()))
        raw = _measure(problem, s, tr)
    measured = spec.lhs(raw) if math.isfinite(raw) else raw
    initial = getattr(s, "initial", "function")
    start, how = _initial_quantity(problem, w0, initial)
    values = dict(spec.values)
    reasons = []
    if spec.initial_symbol:
        values[spec.initial_symbol] = start
    own = dict(own)
    why_not = own.pop("_not_in_class", "")  # a declaration's own re-run may say why its instance cannot decide
    values.update(own)
    if why_not:
        reasons.append(why_not)
    if spec.instance_symbols:
        quantities = {"start": start, "start_root": math.sqrt(max(start, 0.0))}
        if any(w in ("zeta2", "zeta") for w in spec.instance_symbols.values()):
            w_star = np.asarray(problem.constants["w_star"].value)[None]
            g = problem.client_grads(w_star, np.zeros(1, dtype=np.int64))[0]
            quantities["zeta2"] = float(problem.client_weights @ np.sum(g ** 2, axis=1))
            quantities["zeta"] = math.sqrt(quantities["zeta2"])
        if "agents_gap" in spec.instance_symbols.values():
            quantities["agents_gap"] = agents_gap(problem, w0)
        for sym, what in spec.instance_symbols.items():
            values[sym] = quantities[what]
    elif initial != "none" and start > s.D * (1 + CONFIRM_RTOL):
        reasons.append(f"the instance's initial quantity {start:.6g} exceeds the PEP's D = {s.D:g} and the record "
                       "names no symbol for it")
    topology = getattr(algorithm.comm, "topology", None)  # a gossip algorithm's (it certifies mixing_matrix)
    cert = certify(record, problem=problem, oracle=Exact(), sampling=ClientSampling(problem.n_clients, None),
                   algorithm=algorithm, topology=topology if not isinstance(topology, (list, tuple)) else None)
    if not cert.applicable:
        reasons.append("the instance does not certify every assumption: " + "; ".join(cert.failures))
    else:
        setting_values = dict(values)
        for k, v in cert.values.items():
            if k in values and np.ndim(v) == 0 and v is not None:
                values[k] = float(v)
        bad = cert.admits(values)
        if bad:
            reasons.append("values below the instance's certificates: " + "; ".join(bad))
        elif record.conditions_failed(values) and not record.conditions_failed(setting_values) \
                and not cert.admits(setting_values):
            # the tightest constants leave the statement's conditions (sigma = 0 where it asks sigma > 0); the PEP's
            # setting is admitted by the same certificates (each constant on its admitted side): the bound there
            values = setting_values
    in_class = not reasons
    failed = record.conditions_failed(values)
    if failed:
        reasons.append("conditions fail at the instance's constants: " + "; ".join(failed))
    bound = float(np.asarray(record.evaluate(values), float))
    if not math.isfinite(measured) or not measured > bound * (1 + CONFIRM_RTOL) + 1e-12:
        reasons.append(f"the simulator's re-run measures {measured:.6g}, not above the bound {bound:.6g} at the "
                       "instance's constants")
    confirmed = not reasons
    reason = ("the simulator's re-run of the algorithm on the reconstructed functions exceeds the bound at the "
              f"instance's own constants ({initial} quantity: {how})" if confirmed else "; ".join(reasons))
    data = _script_data(spec, pep, V, problem, w0, values, bound, measured, initial)
    return Counterexample(spec.record_id, problem, w0, measured, bound, values, confirmed, reason, V.shape[1],
                          float(result.value) if result.value is not None else math.nan, data, in_class=in_class)


def _sparse(vec: np.ndarray) -> list:
    nz = np.flatnonzero(vec)
    return [[int(i), float(vec[i])] for i in nz]


def _script_data(spec, pep, V, problem, w0, values, bound, measured, initial) -> dict:
    s = pep.setting
    record = spec.record
    queries = [{"coef": _sparse(q.coef), "grads": [int(g) for g in q.grads]} for q in pep.queries
               if q.key != ("star",)]
    symbols = {k: v for k, v in values.items() if isinstance(v, (int, float, np.floating, np.integer))}
    return {
        "record": spec.record_id, "statement": str(record.expr), "lhs": record.lhs_description,
        "algorithm": s.algorithm(), "class": s.describe(), "metric": s.metric, "initial": initial,
        "metric_weights": list(getattr(s, "metric_weights", None) or []),
        "initial_symbol": spec.initial_symbol, "L": s.L, "mu": _class_mu(s), "weights": list(problem.client_weights),
        "parts": [{"A": A.tolist(), "c": c.tolist()} for A, c in problem.parts],
        "n_leaves": int(V.shape[0]), "w0_leaf": int(pep.w0_leaf), "w0": w0.tolist(), "queries": queries,
        "server": [_sparse(c) for c in pep.server], "values": {k: float(v) for k, v in symbols.items()},
        "bound": bound, "measured_by_fedtheory": measured,
        "x_star_hint": (V[pep.star_leaf].tolist() if pep.star_leaf is not None else None),
    }


_MAIN = '''

def replay(data):
    """The algorithm as the straight-line program the PEP wrote: every point a combination of w^0 and the gradients
    computed before it; the gradients are the interpolants' at those points."""
    parts = [(np.array(p["A"]), np.array(p["c"])) for p in data["parts"]]
    L, mu = data["L"], data["mu"]
    d = len(data["w0"])
    V = np.zeros((data["n_leaves"], d))
    V[data["w0_leaf"]] = data["w0"]
    for q in data["queries"]:
        x = np.zeros(d)
        for i, c in q["coef"]:
            x += c * V[i]
        for j, leaf in enumerate(q["grads"]):
            if leaf >= 0:
                V[leaf] = interpolant(*parts[j], L, mu, x)[1]
    server = []
    for coef in data["server"]:
        w = np.zeros(d)
        for i, c in coef:
            w += c * V[i]
        server.append(w)
    return parts, server


def main():
    parts, server = replay(DATA)
    L, mu, p = DATA["L"], DATA["mu"], np.array(DATA["weights"])

    def f(x):
        return sum(pj * interpolant(A, c, L, mu, x)[0] for (A, c), pj in zip(parts, p))

    def grad(x):
        return sum(pj * interpolant(A, c, L, mu, x)[1] for (A, c), pj in zip(parts, p))

    if len(parts) == 1 and mu == 0:  # one convex client: min f = -max c, on conv{a_k : c_k = max c} (closed form)
        A, c = parts[0]
        verts = A[c >= c.max() - 1e-12 * max(1.0, abs(c.max()))]
        w_star, f_star = verts[0], -float(c.max())
    else:
        start = np.array(DATA["x_star_hint"]) if DATA["x_star_hint"] is not None else np.zeros(len(DATA["w0"]))
        w_star, f_star, _ = minimize_sum(parts, p, L, mu, start)
        verts = w_star[None]
    w0, wT = np.array(DATA["w0"]), server[-1]
    metric = DATA["metric"]
    if metric == "opt_error":
        measured = f(wT) - f_star
    elif metric == "dist2":
        measured = float(np.min(np.sum((verts - wT) ** 2, axis=1)))
    elif metric == "grad_norm2":
        measured = float(grad(wT) @ grad(wT))
    elif metric == "weighted_opt_error":
        a = np.array(DATA["metric_weights"]) / np.sum(DATA["metric_weights"])
        measured = float(sum(ai * (f(w) - f_star) for ai, w in zip(a, server[:-1])))
    else:
        measured = float(np.mean([grad(w) @ grad(w) for w in server[:-1]]))
    if DATA["initial"] == "distance":
        start_q = float(np.max(np.sum((verts - w0) ** 2, axis=1)))
        start_text = "||w^0 - w*||^2 (the largest over the minimizers)"
    else:
        start_q = f(w0) - f_star
        start_text = "f(w^0) - f*"
    print(f"record: {DATA['record']}")
    print(f"algorithm: {DATA['algorithm']}")
    print(f"class: {DATA['class']}")
    print(f"instance: {len(parts)} client(s) in dimension {len(w0)}; {start_text} = {start_q:.10g}")
    print(f"measured {DATA['lhs']}: {measured:.10g}")
    print(f"bound {DATA['statement']} at {DATA['values']}: {DATA['bound']:.10g}")
    if DATA["initial_symbol"]:
        drift = abs(start_q - DATA["values"][DATA["initial_symbol"]]) / max(abs(start_q), 1e-300)
        print(f"(the bound's {DATA['initial_symbol']} is this instance's {start_text}: relative difference {drift:.1e})")
    ratio = measured / DATA["bound"] if DATA["bound"] else float("inf")
    print(("VIOLATED" if measured > DATA["bound"] else "holds") + f": measured / bound = {ratio:.6g}")
    return 0 if measured > DATA["bound"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
'''  # noqa: E501 - the text of the code it writes, kept as it runs


SCRIPT_METRICS = ("opt_error", "dist2", "grad_norm2", "weighted_opt_error", "avg_grad_norm2")


def counterexample_script(cx: Counterexample) -> str:
    """The self-contained script of ``cx``: numpy only; its data through ``repr``; the interpolant's source. Written
    for the server's measures (SCRIPT_METRICS) of a PEP without agents' own minima; others raise ParameterError."""
    from ...sim.problems import interpolant as module

    if cx.data.get("metric") not in SCRIPT_METRICS or cx.data.get("initial") not in ("distance", "function"):
        raise ParameterError("metric", cx.data.get("metric"),
                             "a measure the script replays: " + ", ".join(SCRIPT_METRICS)
                             + " (with initial 'distance' or 'function')")

    source = inspect.getsource(module)
    header = (f'"""Counterexample to {cx.record_id} from fedtheory\'s PEP (a reconstructed worst case).\n\n'
              "Run it alone: python THIS_FILE (numpy only). It replays the algorithm on the reconstructed clients, "
              "computes\nw* and f* itself, and prints the measure against the bound. Exit status 0: violated.\n"
              '"""\n')
    body = source.split('"""', 2)[2]  # the interpolant module without its docstring (its imports and functions)
    return (header + body.rstrip() + "\n\n\nDATA = json.loads(" + repr(json.dumps(cx.data)) + ")\n"
            + _MAIN).replace("import numpy as np\n", "import json\n\nimport numpy as np\n", 1)


def write_counterexample(cx: Counterexample, directory: str | Path) -> Path:
    """Write ``cx``'s script to DIRECTORY/<record id>.counterexample.py and return its path."""
    from ...files import write_atomic

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{cx.record_id}.counterexample.py"
    write_atomic(path, counterexample_script(cx))
    cx.path = str(path)
    return path
