"""The check registry: :func:`check` (the decorator) and :class:`CheckSpec`, a check's negative :class:`Control`; the
lookups (``all_checks`` loads the plug-ins first) and the selection of checks by ``--paper`` / ``--only``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .._validation import ParameterError, check_choice
from ..plugins import count_registered, load_plugins
from ..theory.core import MAX_ID_LENGTH, check_id, claim_paper
from .results import KINDS, CheckResult
from .session import PROFILES, Session

__all__ = ["CONTROLLED_KINDS", "MAX_ONLY_LENGTH", "ONLY_RULE", "CheckSpec", "Control", "all_checks", "check",
           "check_spec", "checks_of", "id_matches", "record_row_filter", "register_spec", "registered_check_ids",
           "select"]


# Kinds of rows that must show they can fail through a negative control; without one, a check's rows of these kinds
# are implementation self-checks by rule. Bounds show it through their trivial bound (vacuity; checks.trivial_bounds).
CONTROLLED_KINDS = ("identity", "claim", "symbolic", "rate")


@dataclass(frozen=True)
class Control:
    """A negative control of a check: ``fn(session)`` runs the check's own logic under a mutation (a mutated
    simulator, record or setting) and returns its rows, at least one of which must be a finding verdict
    (violated / rate_inconsistent / claim_refuted) of a counted class: in scope ('inside'), not a self-check, so the
    path that makes a counted finding is exercised. ``description`` says what is mutated. ``uncounted``: why the check
    has no counted path (its findings are never counted, e.g. every row is an extrapolation); then a finding verdict
    of any scope suffices. A check declared a self-check by design has no counted path by its ``self_check`` reason.
    ``fedtheory check --controls`` runs them and shows each control's counted row; the test suite runs every
    built-in one.

    Parameters
    ----------
    description : str
        What is mutated, in words (printed by ``fedtheory explain`` and ``--controls``).
    fn : callable
        ``fn(session) -> list[CheckResult]``: the check's logic under the mutation.
    uncounted : str, default ""
        Why the check has no counted path, when it has none.
    """

    description: str
    fn: Callable[["Session"], list["CheckResult"]]
    uncounted: str = ""


@dataclass(frozen=True)
class CheckSpec:
    """A registered check: ``fn(session) -> list[CheckResult]`` and what it measures.

    measures: the simulator measures (``fedtheory.sim.measure_catalogue()``) the check compares with the
    records' left sides; problems, algorithms: what it runs them on; seeds: how many runs per setting
    (quick / full). ``fedtheory explain RECORD`` prints these with the check's docstring.
    """

    id: str
    paper: str
    kind: str
    fn: Callable[["Session"], list[CheckResult]]
    records: tuple[str, ...]
    cost: str = "sim"  # 'sim' (numerics) or 'symbolic' (sympy; run in a worker process)
    profiles: tuple[str, ...] = PROFILES
    needs_runs: bool = False  # evaluates logged empirical runs (fedtheory check --runs DIR)
    measures: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    algorithms: tuple[str, ...] = ()
    seeds: str = ""
    group: str = ""  # checks of one group share a unit of work on an executor (fedtheory.checks.scheduling)
    control: "Control | None" = None  # the negative control that must make this check fail (see Control)
    self_check: str = ""  # why the check is an implementation self-check by design (no mutation could make it fail)
    # the suffix of the one row per record this check gives, RECORD.SUFFIX (PAPER.units: 'units'): `--only RECORD`
    # (or the row's id) selects that row of it
    record_rows: str = ""

    @property
    def description(self) -> str:
        return " ".join((self.fn.__doc__ or "").split())

    def describe(self) -> str:
        """How this check measures: its docstring and declared measures, problems, algorithms, seeds."""
        lines = [f"check {self.id}  [{self.kind}; profiles {', '.join(self.profiles)}"
                 + ("; needs --runs" if self.needs_runs else "") + "]"]
        if self.description:
            lines.append("  " + self.description)
        for label, vals in (("measures", self.measures), ("problems", self.problems), ("algorithms", self.algorithms)):
            if vals:
                lines.append(f"  {label}: {', '.join(vals)}")
        if self.seeds:
            lines.append(f"  runs: {self.seeds}")
        if self.cost == "symbolic":
            lines.append("  symbolic (sympy), no simulation")
        if self.self_check:
            lines.append(f"  implementation self-check: {self.self_check}")
        if self.control is not None:
            lines.append(f"  negative control: {self.control.description}")
        elif self.kind in CONTROLLED_KINDS:
            lines.append("  no negative control: its rows are implementation self-checks by rule")
        return "\n".join(lines)


_CHECKS: dict[str, CheckSpec] = {}


def check(id: str, paper: str, kind: str, records: Sequence[str] = (), cost: str = "sim",
          profiles: Sequence[str] = PROFILES, needs_runs: bool = False, *, measures: Sequence[str] = (),
          problems: Sequence[str] = (), algorithms: Sequence[str] = (), seeds: str = "", group: str = "",
          control: Control | None = None, self_check: str = ""):
    """Register ``fn(session) -> list[CheckResult]`` as check ``id`` of ``paper``.

    kind: one of KINDS; records: the record ids it tests (default: ``id``); cost 'symbolic' runs it in a
    worker process beside the simulations; profiles: where it runs ('quick', 'full'); measures, problems,
    algorithms, seeds: what ``fedtheory explain`` tells about how the left side is measured; group: checks that
    share memoized simulations (``Session.memo``) under one name run as one unit of work when ``fedtheory check``
    runs on workers (``--workers``; see ``fedtheory.checks.scheduling``), so the simulations are computed once.
    control: a :class:`Control` under which the check must report a finding; a check of a kind in CONTROLLED_KINDS
    without one gives implementation self-checks (never findings), by rule. self_check: why the check cannot fail
    against the paper by design (an identity of the simulator's own construction, a tautology, a property of the
    tool's own objects); its rows are self-checks with that reason, whether or not it declares a control (a control
    then shows that the check's logic can fail on a mutated tool, and the reason says why no row of it is counted).
    ``fn``'s docstring is the check's description (``fedtheory explain``): what is measured, on which problem,
    against which record; a function without one is refused.

    Parameters
    ----------
    id : str
        The check's id, the paper's name first (``"li2020.thm1"``).
    paper : str
        The paper's name.
    kind : {"bound", "rate", "claim", "identity", "symbolic"}
        What kind of rows it gives.
    records : sequence of str, default ()
        The record ids it tests (default: ``id``).
    cost : {"sim", "symbolic"}, default "sim"
        ``"symbolic"`` runs it in a worker process beside the simulations.
    profiles : sequence of {"quick", "full"}, default ("quick", "full")
        The profiles it runs in.
    needs_runs : bool, default False
        Whether it evaluates runs logged by ``fedtheory train`` (``fedtheory check --runs DIR``).
    measures, problems, algorithms : sequence of str, default ()
        The simulator measures, problems and algorithms it uses, as ``fedtheory explain`` prints them.
    seeds : str, default ""
        How many runs per setting, in words.
    group : str, default ""
        Checks that share memoized simulations under one group name run as one unit of work on workers.
    control : Control, optional
        The negative control under which the check must report a finding.
    self_check : str, default ""
        Why the check cannot fail against the paper by design; its rows are then self-checks.

    Returns
    -------
    callable
        The decorator: it registers ``fn`` and returns it unchanged.

    Raises
    ------
    ParameterError
        For a bad id, kind, cost, profile or control.
    ValueError
        (when decorating) For an id registered twice or a function without a docstring.
    """
    check_id(id, "check id")
    check_id(paper, f"paper of check {id}", paper=True)
    for rid in records:
        check_id(rid, f"records of check {id}")
    check_choice("kind", kind, KINDS)
    check_choice("cost", cost, ("sim", "symbolic"))
    for pr in profiles:
        check_choice("profiles", pr, PROFILES)

    def deco(fn):
        if id in _CHECKS:
            raise ValueError(f"check {id} registered twice")
        for name in dict.fromkeys((paper, id.split(".")[0])):  # a plug-in checks only under its own paper names
            claim_paper(name, f"check {id}")
        if control is not None and not isinstance(control, Control):
            raise ParameterError("control", control, "a fedtheory.checks.Control(description, fn)")
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"check {id} has no description: give its function a docstring saying what it measures, "
                             "on which problem, against which record (`fedtheory explain` shows it)")
        _CHECKS[id] = CheckSpec(id, paper, kind, fn, tuple(records) or (id,), cost, tuple(profiles), needs_runs,
                                tuple(measures), tuple(problems), tuple(algorithms), seeds, group, control, self_check)
        return fn

    return deco


def register_spec(spec: CheckSpec, *, replace: bool = False) -> CheckSpec:
    """Register a CheckSpec built without the decorator (a check generated for a paper, e.g. PAPER.units);
    ``replace`` refreshes an existing one (same id)."""
    check_id(spec.id, "check id")
    if spec.id in _CHECKS and not replace:
        raise ValueError(f"check {spec.id} registered twice")
    _CHECKS[spec.id] = spec
    return spec


def check_spec(check_id: str) -> CheckSpec | None:
    """The registered check with this id, without loading plug-ins (None when there is none)."""
    return _CHECKS.get(check_id)


def registered_check_ids() -> list[str]:
    """The check ids registered so far, without loading plug-ins."""
    return list(_CHECKS)


count_registered("checks", registered_check_ids)  # `fedtheory list --plugins` counts each plug-in's checks


def all_checks() -> dict[str, CheckSpec]:
    """Every registered check, after loading the paper plug-ins (see ``fedtheory.plugins``).

    Returns
    -------
    dict of str to CheckSpec
        Each check by id: its function, paper, kind, records and what it measures.
    """
    load_plugins()
    return dict(_CHECKS)


def checks_of(record_id: str) -> list[CheckSpec]:
    """The checks that test a record."""
    return [s for s in all_checks().values() if record_id in s.records]


ONLY_RULE = ("an exact check id; a dotted prefix, matched by whole parts ('p.thm2' selects p.thm2, p.thm2.rate and "
             "the row p.thm2.units of p.units, not p.thm2_2); or a glob pattern with * ? [...] matched against whole "
             "ids ('p.thm2*' selects p.thm2, p.thm2_2, p.thm2.rate and their units rows; quote it in a shell)")


MAX_ONLY_LENGTH = 2 * MAX_ID_LENGTH  # the longest --only entry (a pattern may be longer than the ids it matches)


def id_matches(pattern: str, check_id: str) -> bool:
    """Whether ``pattern`` (a ``--only`` entry) selects ``check_id``: see ONLY_RULE."""
    import fnmatch

    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(check_id, pattern)
    return check_id == pattern or check_id.startswith(pattern + ".")


def _record_rows(spec: CheckSpec, only: Sequence[str]) -> set[str]:
    """The ids of ``spec``'s per-record rows (RECORD.SUFFIX, ``CheckSpec.record_rows``) that an entry of ``only``
    selects."""
    if not spec.record_rows:
        return set()
    rows = (f"{r}.{spec.record_rows}" for r in spec.records)
    return {row for row in rows if any(id_matches(o, row) for o in only)}


def record_row_filter(specs: Sequence[CheckSpec], only: Iterable[str] | None) -> set[str]:
    """The row ids to leave out of the results of ``specs``: the per-record rows of a check that ``only`` selects
    through some of those rows alone (``--only gdzoo.k4`` runs gdzoo.units for its row gdzoo.k4.units), not the
    selected ones; a check selected by its own id keeps every row."""
    only = list(only or [])
    drop: set[str] = set()
    for s in specs:
        if only and s.record_rows and not any(id_matches(o, s.id) for o in only):
            drop |= {f"{r}.{s.record_rows}" for r in s.records} - _record_rows(s, only)
    return drop


def select(paper: str | None = None, only: Iterable[str] | None = None, profile: str = "quick",
           runs: bool = False) -> list[CheckSpec]:
    """The checks to run. ``only``: entries as ONLY_RULE says (exact ids, whole-part dotted prefixes, glob
    patterns), matched against the check ids and against the per-record rows of a check that gives them
    (``CheckSpec.record_rows``: RECORD.units of PAPER.units; ``record_row_filter`` then says which of its rows to
    leave out). With ``runs`` (logged runs given) and no ``only``, just the checks of logged runs; without it, those
    checks are left out (they need runs). An entry that selects no registered check is a ParameterError that says
    what it would have to be, and which ids it nearly matches."""
    specs = all_checks()
    papers = sorted({s.paper for s in specs.values()})
    if paper is not None and paper not in papers:
        raise ParameterError("--paper", paper, "one of " + ", ".join(papers))
    chosen = [s for s in specs.values() if (paper is None or s.paper == paper) and profile in s.profiles]
    if not only:
        chosen = [s for s in chosen if s.needs_runs == runs]
    if only:
        only = list(only)
        for o in only:
            if not isinstance(o, str) or len(o) > MAX_ONLY_LENGTH:  # fnmatch's translation is quadratic in '['
                raise ParameterError("--only", o, f"{ONLY_RULE}; at most {MAX_ONLY_LENGTH} characters (an id has at "
                                     f"most {MAX_ID_LENGTH})")
            if not any(id_matches(o, s.id) or _record_rows(s, [o]) for s in specs.values()):
                near = sorted(s.id for s in specs.values() if s.id.startswith(o))[:6]
                hint = (f"; it is not a whole dotted part of {', '.join(near)}: '{o}*' would select "
                        f"{'them' if len(near) > 1 else 'it'}") if near else " (see `fedtheory list --checks`)"
                raise ParameterError("--only", o, ONLY_RULE + hint)
        chosen = [s for s in chosen if any(id_matches(o, s.id) for o in only) or _record_rows(s, only)]
    return chosen
