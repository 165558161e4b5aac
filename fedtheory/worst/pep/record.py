"""A bound's PEP: :class:`PEPSpec` (the setting and the values the record's bound is evaluated at), the registry of
records with a PEP declaration, and the verdict of the PEP's value against the bound (:func:`pep_worst_case`,
:func:`run_pep` at the constants of today's check)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..._validation import ParameterError
from .setting import PEPSetting, require_pep
from .solve import solve_pep

__all__ = ["PEPSpec", "PEP_PROFILES", "RTOL", "check_reference", "pep_entries", "pep_sizes", "pep_spec",
           "pep_worst_case", "register_pep", "run_pep"]


@dataclass(frozen=True)
class PEPSpec:
    """What the PEP of one bound record needs: the setting (algorithm, class, measure), the values the record's
    bound is evaluated at, the run's structural settings (checked against ``record.requires``), the parameters
    the factory was called with, and a note.

    Built by a factory ``make(record_id, **params)`` registered with :func:`register_pep`; solved and compared with
    the bound by :func:`pep_worst_case`. ``relation`` says whether the PEP's value is the class's worst case
    ('exact'), an upper bound on it (a relaxed class) or a lower bound (``subclass``). See docs/worst-case.md,
    "The PEP of any algorithm: the round protocol's third backend".

    Parameters
    ----------
    record_id : str
        The bound record.
    setting : PEPSetting or ProtocolSetting
        The class, the run settings and the measure: the hand-written FedAvg / FedInit PEP (:class:`PEPSetting`) or
        the round protocol's PEP of ``algorithm`` (:class:`ProtocolSetting`).
    values : mapping of str to object
        The values the record's bound is evaluated at, by symbol.
    settings : mapping of str to object, default {}
        The run's structural settings, checked against the record's ``requires``.
    params : mapping of str to object, default {}
        The keyword arguments the factory was called with.
    note : str, default ""
        A note carried into the record.
    record_override : Bound, optional
        A bound used in place of the registered record (``fedtheory.testing.scaled_bound``).
    algorithm : Algorithm, optional
        The ``fedtheory.sim`` algorithm of a :class:`ProtocolSetting` (required there); a :class:`PEPSetting` names
        its own (the simulator re-runs FedInit with its beta).
    initial_symbol : str, optional
        The record's symbol for the setting's D: a reconstructed instance's own initial quantity replaces it.
    instance_symbols : mapping of str to str, default {}
        Other record symbols an instance's own quantity replaces: symbol -> 'start' (the initial quantity),
        'start_root' (its square root), 'zeta2' (sum_i p_i ||grad f_i(w*)||^2), 'zeta' (its square root) or
        'agents_gap'.
    lhs_root : bool, default False
        The record's left side is the square root of the PEP's measure (a norm; a PEP's measures are quadratic):
        the value, the upper value and the rebuilt instance's measure are compared with the bound after a square
        root.
    instance_measure : callable, optional
        ``instance_measure(problem, w0, setting, algorithm) -> (measure, symbols)``: the simulator's re-run of a
        rebuilt worst case where the setting's measure is not one the core reads from a trace; ``measure`` before
        any square root, ``symbols`` the record symbols the instance's own run gives (``'_not_in_class'``: why the
        instance cannot decide the record, where it cannot).
    subclass : str, default ""
        Non-empty: the PEP's class is a subclass of the record's, named (e.g. the exact oracle, one member of a
        class of stochastic oracles); its value is a lower bound on the worst case, never a certificate that the
        bound holds.
    """

    record_id: str
    setting: PEPSetting
    values: Mapping[str, Any]
    settings: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    record_override: Any = None  # a Bound used in place of the registered record (fedtheory.testing.scaled_bound)
    algorithm: Any = None  # a ProtocolSetting's algorithm (a fedtheory.sim.Algorithm); a PEPSetting names its own
    initial_symbol: str | None = None  # the record's symbol for the setting's D (an instance's own value replaces it)
    # other record symbols an instance's own quantity replaces: symbol -> 'zeta2' (sum_i p_i ||grad f_i(w*)||^2) or
    # 'zeta' (its square root)
    instance_symbols: Mapping[str, str] = field(default_factory=dict)
    # the record's left side is the square root of the PEP's measure (a norm; a PEP's measures are quadratic): the
    # value, the upper value and the rebuilt instance's measure are compared with the bound after a square root
    lhs_root: bool = False
    # the simulator's re-run of a rebuilt worst case where the setting's measure is not one the core reads from a
    # trace itself: instance_measure(problem, w0, setting, algorithm) -> (the measure, before any square root; the
    # record symbols the instance's own run gives, e.g. Yuan et al.'s D; '_not_in_class': why the instance cannot
    # decide the record, where it cannot)
    instance_measure: Callable[..., tuple[float, Mapping[str, Any]]] | None = None
    # non-empty: the PEP's class is a subclass of the record's, named (e.g. the exact oracle, one member of a class of
    # stochastic oracles): its value is a lower bound on the worst case, never a certificate that the bound holds
    subclass: str = ""

    @property
    def relation(self) -> str:
        """'exact' (the worst case of the record's class), 'upper bound' (a relaxed class) or 'lower bound' (a
        subclass)."""
        if self.subclass:
            return "lower bound"
        return "exact" if self.setting.exact else "upper bound"

    def lhs(self, value: float | None) -> float | None:
        """The record's left side from the PEP's measure (its square root where ``lhs_root``)."""
        if value is None or not self.lhs_root:
            return value
        return math.sqrt(max(value, 0.0))

    def build(self):
        """The PEP as numbers: the hand-written FedAvg/FedInit PEP of a ``PEPSetting``, or the round protocol's PEP of
        ``algorithm`` over a ``ProtocolSetting``."""
        from .build import build_pep
        from .protocol import ProtocolSetting, protocol_pep

        if isinstance(self.setting, ProtocolSetting):
            if self.algorithm is None:
                raise ParameterError("algorithm", None, "the algorithm of a ProtocolSetting (PEPSpec(algorithm=...))")
            return protocol_pep(self.algorithm, self.setting)
        return build_pep(self.setting)

    def simulated_algorithm(self):
        """The algorithm the simulator re-runs on a reconstructed worst case."""
        if self.algorithm is not None:
            return self.algorithm
        from ...sim import fedinit

        s = self.setting
        return fedinit(s.beta, server_rule=s.server_rule, server_lr=s.server_lr)

    @property
    def record(self):
        """The bound record: ``record_override`` if given, else the registered ``record_id``."""
        if self.record_override is not None:
            return self.record_override
        from ...plugins import record

        return record(self.record_id)


_PEP_REGISTRY: dict[str, Callable[..., PEPSpec]] = {}
_PEP_REFERENCES: dict[str, Callable[..., Mapping[str, Any]]] = {}
_PEP_SIZES: dict[str, Mapping[str, Mapping[str, int]]] = {}
RTOL = 1e-4  # the verdict's relative tolerance: the accepted solutions' accuracy (ACCEPT_GAP)
#: the sizes a PEP is capped at where its declaration names none for the profile ('quick': seconds a record; 'full':
#: a minute a record): the factory's parameters of these names, where the check's are larger
PEP_PROFILES = {"quick": {"C": 3, "K": 3, "T": 4}, "full": {"C": 4, "K": 4, "T": 6}}


def register_pep(record_id: str, make: Callable[..., PEPSpec], *,
                 reference: Callable[..., Mapping[str, Any]] | None = None,
                 sizes: Mapping[str, Mapping[str, int]] | None = None) -> None:
    """Declare that ``record_id`` has a PEP (``fedtheory worst ID --method pep``); a later call for the same id
    replaces the factory.

    Parameters
    ----------
    record_id : str
        The bound record.
    make : callable
        ``make(record_id, **params) -> PEPSpec`` (params as for the record's worst-case search, plus
        ``server_rule`` and ``function_class``).
    reference : callable, optional
        ``reference(seed) -> {"params", "random_ratio", "label"}``: the constants of today's check, used in place of
        the worst-case declaration's (:func:`check_reference` writes one).
    sizes : mapping of str to mapping of str to int, optional
        Per profile ('quick', 'full'), the largest sizes of the factory's size parameters (e.g. {"C": 3, "K": 3,
        "T": 4}) that solve within the profile's budget (measured); default ``PEP_PROFILES``.

    Raises
    ------
    ParameterError
        ``sizes`` names a profile other than 'quick' and 'full'.
    """
    _PEP_REGISTRY[record_id] = make
    if reference is not None:
        _PEP_REFERENCES[record_id] = reference
    if sizes is not None:
        unknown = set(sizes) - set(PEP_PROFILES)
        if unknown:
            raise ParameterError("sizes", sorted(unknown), "profiles among " + ", ".join(PEP_PROFILES))
        _PEP_SIZES[record_id] = {k: dict(v) for k, v in sizes.items()}


def pep_sizes(record_id: str, profile: str) -> dict[str, int]:
    """The size caps of ``record_id``'s PEP in ``profile`` ('quick' or 'full'): its declaration's, else
    ``PEP_PROFILES``'s."""
    if profile not in PEP_PROFILES:
        raise ParameterError("profile", profile, " or ".join(PEP_PROFILES))
    pep_entries()  # the plug-ins declare their sizes when they load
    return dict(_PEP_SIZES.get(record_id, {}).get(profile, PEP_PROFILES[profile]))


def check_reference(record_id: str, check_id: str, names: tuple[str, ...], *, problem: str | None = None,
                    setting: str | None = None, fixed: Mapping[str, Any] | None = None,
                    convert: Mapping[str, Callable[[Any], Any]] | None = None) -> Callable[..., dict[str, Any]]:
    """A ``reference(seed)`` for :func:`register_pep`: the constants of today's check, read from its first row of
    ``record_id`` that compares a bound inside the record's conditions.

    Parameters
    ----------
    record_id : str
        The record whose row is read.
    check_id : str
        The check that writes the row (``fedtheory check --only CHECK_ID``).
    names : tuple of str
        The PEP factory's parameters read from the row's params (those the row has).
    problem : str, optional
        A substring the row's problem must contain.
    setting : str, optional
        A substring the row's ``setting`` param must contain.
    fixed : mapping of str to object, optional
        Parameters set whatever the row says (named in the label).
    convert : mapping of str to callable, optional
        ``convert[name]`` applied to the row's value of ``name`` (e.g. int).

    Returns
    -------
    callable
        ``reference(seed=0) -> {"params", "random_ratio", "label"}``: it runs the check (a ParameterError where no
        row matches); ``random_ratio`` is the row's bound / measured ratio.
    """

    def reference(seed: int = 0) -> dict[str, Any]:
        from ...checks import run_checks

        rows = [r for r in run_checks(only=[check_id], seed=seed, parallel_symbolic=False)
                if r.id == record_id and r.ratio is not None and r.scope == "inside"
                and (problem is None or problem in str(r.problem))
                and (setting is None or setting in str((r.params or {}).get("setting", "")))]
        if not rows:
            raise ParameterError("reference", f"{check_id} {problem or ''} {setting or ''}".strip(),
                                 f"a row of {record_id} comparing a bound inside its conditions")
        r = rows[0]
        params = {k: (convert or {}).get(k, lambda v: v)(r.params[k]) for k in names if k in r.params}
        params.update(fixed or {})
        label = (f"fedtheory check --only {check_id} --seed {seed}: {r.problem}, {r.params.get('setting')} (ratio "
                 "bound/measured on the check's instance)" + (f"; set here: {dict(fixed)}" if fixed else ""))
        return {"params": {"record_id": record_id, **params}, "random_ratio": float(r.ratio), "label": label}

    return reference


def pep_entries() -> dict[str, Callable[..., PEPSpec]]:
    """Every record with a PEP declaration (the paper plug-ins are loaded first)."""
    from ..spec import worst_case_entries

    worst_case_entries()
    return dict(_PEP_REGISTRY)


def pep_worst_case(spec: PEPSpec, *, solver: str = "CLARABEL", method: str = "symmetric",
                   random_ratio: float | None = None, reference: str | None = None,
                   counterexample_dir: str | None = None) -> dict[str, Any]:
    """Solve ``spec``'s PEP and compare it with the record's bound; return the JSON record (see docs/worst-case.md,
    "PEP: exact worst cases").

    verdict: ``holds`` (the SDP's value, an upper bound over the PEP's class, is <= the bound: the bound holds on
    the whole class, up to the relative tolerance ``RTOL`` = 1e-4; on a ``subclass`` this is ``inconclusive``),
    ``violated`` (the PEP's value exceeds the bound and its worst case, reconstructed as concrete functions and
    re-run by the simulator, exceeds the bound at the instance's own constants with every assumption of the record
    certified there: :func:`counterexample`), ``inconclusive`` (the value exceeds the bound but the re-run does not
    confirm it, the reason named; or the solver returned no accepted value: the status is named, no number is used),
    ``not_applicable`` (a condition of the record fails: named).

    Parameters
    ----------
    spec : PEPSpec
        The PEP and the bound.
    solver : {"CLARABEL", "SCS"}, default "CLARABEL"
        The SDP solver (cvxpy).
    method : {"symmetric", "pepit"}, default "symmetric"
        As :func:`solve_pep`'s; 'pepit' builds no reconstructable worst case (no ``violated`` verdict).
    random_ratio : float, optional
        The ratio of today's check, copied into the record.
    reference : str, optional
        The label of that check, copied into the record.
    counterexample_dir : str, optional
        Where a confirmed counterexample's script is written (RECORD.counterexample.py); None: not written.

    Returns
    -------
    dict
        The JSON record: ``id``, ``method`` ("pep"), ``worst_measured`` (the PEP's value as the record's left side;
        None without an accepted solution), ``bound``, ``slack``, ``verdict``, ``detail``, ``conditions_failed``,
        ``exact`` and ``class_relation`` (exact, upper bound or lower bound), ``class``, ``algorithm``,
        ``measure``, ``solver`` and ``sdp`` (the solution's account), ``values``, ``params``, and
        ``counterexample`` (its summary) where one was reconstructed.

    Raises
    ------
    MissingExtraError
        The extra ``fedtheory[pep]`` is not installed.
    """
    t0 = time.perf_counter()
    s = spec.setting
    pep = spec.build() if method == "symmetric" else None
    res = solve_pep(pep if pep is not None else s, solver=solver, method=method)
    rec = spec.record
    vals = dict(spec.values)
    failed = [f"requires {k}={v} (run has {spec.settings.get(k)!r})" for k, v in rec.requires.items()
              if spec.settings.get(k) != v] + rec.conditions_failed(vals)
    bound = float(np.asarray(rec.evaluate(vals), float))
    value = spec.lhs(res.value)  # the record's left side (a square root of the PEP's measure where it is a norm)
    detail = ""
    cx = None
    if failed:
        verdict = "not_applicable"
    elif value is None:
        verdict, detail = "inconclusive", f"solver status {res.status}" + (f": {res.detail}" if res.detail else "")
    elif not math.isfinite(bound):
        verdict, detail = "inconclusive", f"the bound evaluates to {bound}"
    else:
        upper = spec.lhs(max(res.value, res.dual if res.dual is not None else res.value))
        tol = RTOL * abs(bound)  # relative to the bound's magnitude (a decrease statement's bound is negative)
        if upper <= bound + tol and spec.subclass:
            verdict, detail = "inconclusive", (f"the bound holds on the PEP's subclass ({spec.subclass}), which says "
                                               "nothing of the rest of the record's class")
        elif upper <= bound + tol:
            verdict = "holds"
        elif value > bound + tol and pep is not None and res.gram is not None:
            verdict, detail, cx = _confirmed(spec, pep, res, counterexample_dir)
        else:
            verdict, detail = "inconclusive", ("the PEP's value exceeds the bound within the solver's tolerance, or "
                                               "its worst case cannot be reconstructed (PEPit's own solve)")
    slack = None
    if value is not None and math.isfinite(bound):
        # bound / value; for a negative bound and value (a decrease: lhs <= -rho), |value| / |bound|, so that a slack
        # >= 1 says the statement holds with that room either way
        slack = (value / bound if bound < 0 and value < 0 else bound / value if value > 0 else
                 math.inf if bound > 0 else None)
    out = {
        "id": spec.record_id, "method": "pep", "worst_measured": value, "bound": bound, "slack": slack,
        "verdict": verdict, "detail": detail, "conditions_failed": failed,
        "exact": s.exact and not spec.subclass,
        "class_relation": spec.relation,
        "relation": (f"a lower bound on the worst case of the class as stated: the PEP's class is a subclass "
                     f"({spec.subclass})" if spec.subclass else
                     "the worst case of the class as stated" if s.exact else
                     "an upper bound on the worst case of the class as stated (the exact worst case of the relaxed "
                     "class); the search's instances lie in both, so search <= PEP"),
        "class": s.describe(), "algorithm": s.algorithm(),
        "measure": f"sqrt({s.metric})" if spec.lhs_root else s.metric,
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
    if cx is not None:
        out["counterexample"] = cx.summary()
    return out


def _confirmed(spec: PEPSpec, pep, res, directory) -> tuple[str, str, Any]:
    """The verdict of a PEP value above the bound: 'violated' only where the reconstructed worst case, re-run by the
    simulator, confirms it (its script written to ``directory``); else 'inconclusive' with the reason."""
    from ..._validation import FedTheoryError
    from .instance import counterexample, write_counterexample

    try:
        cx = counterexample(spec, pep, res, spec.simulated_algorithm())
    except FedTheoryError as exc:
        return "inconclusive", f"the PEP's value exceeds the bound; no instance: {exc}", None
    if not cx.confirmed:
        return "inconclusive", ("the PEP's value exceeds the bound (exact: " + str(pep.setting.exact).lower()
                                + f"), but its reconstructed worst case does not confirm it: {cx.reason}"), cx
    if directory is not None:
        try:
            write_counterexample(cx, directory)
        except FedTheoryError as exc:  # the violation stands (the simulator confirmed it); the script is not written
            return "violated", f"{cx.reason}; no script written ({exc})", cx
    return "violated", cx.reason, cx


_LAMBDA_INPUTS = ("eta", "K", "L", "B", "N", "C", "beta")


def pep_spec(record_id: str, *, sets: Mapping[str, Any] | None = None, seed: int = 0, use_reference: bool = True,
             reference_kw: Mapping[str, Any] | None = None, server_rule: str | None = None,
             function_class: str | None = None, budget: Mapping[str, int] | None = None
             ) -> tuple[PEPSpec, float | None, str | None]:
    """(spec, the check's random ratio, the reference's label): the PEP of ``record_id`` at the constants of today's
    check (where its worst-case declaration has a reference), overridden by ``sets``. ``budget``: the largest sizes
    (e.g. {"C": 3, "K": 3, "T": 4}) for the factory's parameters of those names, applied where the check's are larger
    (said in the label). The PEP is of exact gradients: a reference's sigma_l is set to 0 (and said so); the check's
    lambda is recomputed when a constant it depends on changes."""
    import inspect

    require_pep()
    entries = pep_entries()
    if record_id not in entries:
        raise ParameterError("ID", record_id, "a record with a PEP declaration: " + ", ".join(sorted(entries)))
    from ..spec import worst_case_entries

    w = worst_case_entries().get(record_id)
    params: dict[str, Any] = {}
    random_ratio = label = None
    own = _PEP_REFERENCES.get(record_id)
    if use_reference and own is not None:
        ref = own(seed, **dict(reference_kw or {}))
        params.update(ref["params"])
        random_ratio, label = ref.get("random_ratio"), ref.get("label")
    elif use_reference and w is not None and w.reference is not None:
        ref = w.reference(seed, **dict(reference_kw or {}))
        params.update(ref["params"])
        random_ratio, label = ref.get("random_ratio"), ref.get("label")
    sets = dict(sets or {})
    if budget:
        accepted = inspect.signature(entries[record_id]).parameters
        for k, most in budget.items():
            default = accepted[k].default if k in accepted else None
            current = params.get(k, default if isinstance(default, int) else None)
            if k in accepted and k not in sets and isinstance(current, int) and current > most:
                sets[k] = int(most)
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
    return spec, random_ratio, label


def run_pep(record_id: str, *, sets: Mapping[str, Any] | None = None, seed: int = 0, use_reference: bool = True,
            reference_kw: Mapping[str, Any] | None = None, server_rule: str | None = None,
            function_class: str | None = None, solver: str = "CLARABEL", method: str = "symmetric",
            counterexample_dir: str | None = None, budget: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The PEP of ``record_id`` at the constants of today's check, solved and compared with the bound
    (:func:`pep_worst_case`): ``fedtheory worst ID --method pep``.

    The PEP is of exact gradients: a reference's sigma_l is set to 0 (and said so in the label); the check's lambda
    is recomputed when a constant it depends on changes; C set in ``sets`` also sets the parameters' N to it (full
    participation).

    Parameters
    ----------
    record_id : str
        A record with a PEP declaration (:func:`register_pep`).
    sets : mapping of str to object, optional
        Factory parameters set here (``--set NAME=VALUE``); they override the reference's.
    seed : int, default 0
        The seed of the reference's check.
    use_reference : bool, default True
        Take the constants from the PEP declaration's reference, else the worst-case declaration's, where there
        is one.
    reference_kw : mapping of str to object, optional
        The selection passed to the reference.
    server_rule : str, optional
        Passed to the factory (e.g. "algorithm1", "code").
    function_class : str, optional
        Passed to the factory (e.g. "convex", "smooth").
    solver : {"CLARABEL", "SCS"}, default "CLARABEL"
        The SDP solver.
    method : {"symmetric", "pepit"}, default "symmetric"
        As :func:`solve_pep`'s.
    counterexample_dir : str, optional
        Where a confirmed counterexample's script is written.
    budget : mapping of str to int, optional
        The largest sizes (e.g. {"C": 3, "K": 3, "T": 4}) for the factory's parameters of those names, applied
        where the check's are larger and ``sets`` does not name them (said in the label).

    Returns
    -------
    dict
        :func:`pep_worst_case`'s record.

    Raises
    ------
    MissingExtraError
        The extra ``fedtheory[pep]`` is not installed.
    ParameterError
        ``record_id`` has no PEP declaration, or the factory does not accept the parameters.
    """
    spec, random_ratio, label = pep_spec(record_id, sets=sets, seed=seed, use_reference=use_reference,
                                         reference_kw=reference_kw, server_rule=server_rule,
                                         function_class=function_class, budget=budget)
    return pep_worst_case(spec, solver=solver, method=method, random_ratio=random_ratio, reference=label,
                          counterexample_dir=counterexample_dir)
