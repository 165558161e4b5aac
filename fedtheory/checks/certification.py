"""Assumptions checked, not declared: a record's assumptions against what a run's problem, oracle, topology, client
sampling and algorithm certify.

``certify(record, problem=..., oracle=..., topology=..., sampling=..., algorithm=..., visited=trace)`` asks each
assumption of the record (``Record.assumptions``, catalogue names bound to the record's symbols, see
``fedtheory.theory.assumptions``) of the thing it is about (its catalogue ``subject``) and returns a
:class:`Certification`:

* ``applicable``: every assumption is certified; otherwise ``failures`` names each one that is not and why (refused
  or unknown). The rule (``assess_bound``): a row whose run does not certify every assumption of its record is
  ``not_applicable``, naming the assumption: never a finding;
* ``values``: the record's symbols bound to certified constants, at the tightest certified value (L, mu, sigma,
  ...), so a check never computes them by hand; ``admits(values)`` tells which values a check passes that the
  certificates do not admit (an L below the certified one, a G below G(B) of the (G, B) family);
* ``visited_only``: the assumptions certified only on the region the run visited: allowed, and every row that rests
  on them says so (``note``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .._validation import FedTheoryError
from ..sim import MeanModels
from ..sim.certificates import Certificate, unknown
from ..theory.assumptions import CATALOGUE, Assumption, AssumptionRef, bind, parse_reference

__all__ = ["Certification", "CertifiedAssumption", "certificate_text", "certify", "certify_assumptions"]

RTOL = 1e-12  # relative rounding a value may differ from its certified constant by in the admitted direction


@dataclass(frozen=True)
class CertifiedAssumption:
    """One assumption of a record: its reference, its catalogue entry (None when it is not catalogued), the binding
    of its constants to the record's symbols, and the certificate the run gave it."""

    ref: AssumptionRef
    entry: Assumption | None
    binding: Mapping[str, str]
    certificate: Certificate

    def summary(self) -> dict[str, Any]:
        out = {"assumption": self.ref.text, **self.certificate.summary()}
        out["assumption"] = self.ref.text
        out["binding"] = dict(self.binding)
        return out


@dataclass
class Certification:
    """The certificates of every assumption of one record on one run (see the module docstring).

    ``applicable``: every assumption certified; ``failures``: why the others are not; ``values``: the record's
    symbols at their certified constants; ``fill(values)`` completes a check's values with them; ``admits(values)``
    names the values the certificates do not admit. Pass it to ``assess_bound(..., certification=...)``.

    Parameters
    ----------
    record_id : str
        The record's id.
    entries : list of CertifiedAssumption, optional
        One per assumption of the record: the reference, the catalogue entry, the binding of its constants to the
        record's symbols, and the certificate.
    problem : Problem, optional
        The problem the run was on (its minimizer and minimum give the rounding scale of a comparison).
    """

    record_id: str
    entries: list[CertifiedAssumption] = field(default_factory=list)
    #: the problem the run was on (``certify(problem=...)``): its minimiser and minimum give the magnitudes a run
    #: computes, the rounding scale of a deterministic comparison (``fedtheory.checks.rounding_scale_of``)
    problem: Any = field(default=None, repr=False, compare=False)

    @property
    def applicable(self) -> bool:
        return all(e.certificate.certified for e in self.entries)

    @property
    def failures(self) -> list[str]:
        """'NAME: refused by X: why' for each assumption not certified."""
        return [f"{e.ref.text}: {e.certificate.status}" + (f" by {e.certificate.by}" if e.certificate.by else "")
                + f": {e.certificate.how}" for e in self.entries if not e.certificate.certified]

    @property
    def visited_only(self) -> list[str]:
        return [e.ref.text for e in self.entries if e.certificate.certified and e.certificate.region == "visited"]

    @property
    def values(self) -> dict[str, Any]:
        """The record's symbols bound to certified constants, each at its tightest certified value (a family's
        free constant at the certificate's own value; a family member, e.g. G of (G, B), at its value there)."""
        out: dict[str, Any] = {}
        for e in self.entries:
            c = e.certificate
            if not c.certified:
                continue
            consts = dict(c.constants)
            if c.family is not None:
                member, fn = c.family
                free = {k: v for k, v in consts.items() if k != member}
                if free:
                    consts[member] = fn(*free.values())
            for const, sym in e.binding.items():
                if const in consts and np.all(np.isfinite(np.asarray(consts[const], dtype=float))):
                    out[sym] = consts[const]
        return out

    def fill(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` completed with the certified constants of the record's symbols it does not give."""
        return {**{k: v for k, v in self.values.items() if k not in values}, **values}

    def admits(self, values: Mapping[str, Any]) -> list[str]:
        """What in ``values`` the certificates do not admit: a value of a bound constant on the wrong side of its
        certified value (by the catalogue's direction), a family member below the family's value. Empty: all
        admitted."""
        bad = []
        for e in self.entries:
            c = e.certificate
            if not c.certified or e.entry is None:
                continue
            given = {const: values[sym] for const, sym in e.binding.items() if sym in values}
            for const, v in given.items():
                if const not in c.constants or (c.family is not None and const == c.family[0]):
                    continue
                direction = _direction(e.entry, const)
                cert = np.asarray(c.constants[const], dtype=float)
                val = np.asarray(v, dtype=float)
                scale = np.maximum(np.abs(cert), 1e-300)
                with np.errstate(invalid="ignore"):
                    ok = (val >= cert - RTOL * scale if direction == "upper" else
                          val <= cert + RTOL * scale if direction == "lower" else np.abs(val - cert) <= RTOL * scale)
                if not np.all(ok):
                    rel = {"upper": "below", "lower": "above", "exact": "not"}[direction]
                    if np.any(np.isnan(val)):  # NaN compares False both ways: 'nan is below' said what it is not
                        rel = "not a number, not comparable with"
                    bad.append(f"{e.binding[const]} = {_num(val)} is {rel} the certified {const} = {_num(cert)} "
                               f"({e.ref.text}: {c.how})")
            if c.family is not None:
                member, fn = c.family
                others = [k for k in c.constants if k != member]
                if member in given and all(k in given for k in others):
                    need = np.asarray(fn(*(given[k] for k in others)), dtype=float)
                    val = np.asarray(given[member], dtype=float)
                    with np.errstate(invalid="ignore"):
                        ok = val >= need - RTOL * np.maximum(np.abs(need), 1e-300)
                    if not np.all(ok):
                        at = ", ".join(f"{e.binding[k]} = {_num(given[k])}" for k in others)
                        bad.append(f"{e.binding[member]} = {_num(val)} is below the certified {member}({at}) = "
                                   f"{_num(need)} ({e.ref.text}: {c.how})")
        return bad

    def note(self) -> str:
        """The sentence a row that rests on visited-region certificates carries (empty when none)."""
        vis = self.visited_only
        if not vis:
            return ""
        return ("rests on constants certified on the visited region only (" + ", ".join(vis) + "): they hold at the "
                "points this run visited, not over every w")

    def summary(self) -> list[dict[str, Any]]:
        """Plain data for a row's ``extra['certificates']``: per assumption, status, constants, how, region, by."""
        return [e.summary() for e in self.entries]


def _direction(entry: Assumption, const: str) -> str:
    try:
        return entry.constant(const).direction
    except KeyError:
        return "upper"


def _num(v) -> str:
    a = np.asarray(v, dtype=float)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return f"[{float(np.nanmin(a)):.6g} .. {float(np.nanmax(a)):.6g}]"


def _answer(ref: AssumptionRef, entry: Assumption | None, things: Mapping[str, Any], visited: Any,
            problem: Any) -> Certificate:
    if entry is None:
        return unknown(ref.name, "not in the assumption catalogue: nothing certifies it (register_assumption adds it; "
                                 "a certifier of the plug-in's, or a certificate "
                                 "handed to certify(extra=...), answers it)")
    thing = things.get(entry.subject)
    if thing is None:
        return unknown(ref.name, f"no {entry.subject} was given to certify it")
    if entry.subject == "oracle" or entry.subject == "algorithm":
        return thing.certify(entry.name, problem, visited)
    return thing.certify(entry.name, visited)


CONTRADICTION_RTOL = 1e-8  #: a check's constant within this relative distance of an exact one agrees with it


def _refuse_contradiction(record_id: str, entry: Assumption, given: Certificate, own: Certificate) -> None:
    """A certificate a check hands to certify(extra=...) may add what the run's problem, oracle, ... cannot certify
    (an answer 'unknown', a region narrower than the one refused), never contradict what it certifies exactly: a
    global certificate where the thing refuses the assumption globally, or a constant outside the values its exact
    (or computed) certificate admits (an L below the exact L, a mu above the exact mu). A FedTheoryError naming both
    (the check's error row: never a finding)."""
    if not given.certified or given.region != "global" or own.region != "global":
        return
    who = own.by or entry.subject
    if own.status == "refused":
        raise FedTheoryError(f"{record_id}: the check certifies {entry.name} ({given.how}) where the {entry.subject} "
                             f"refuses it ({own.how}): a check's certificate may add what cannot be certified, never "
                             "contradict it")
    if not own.certified or own.kind not in ("exact", "computed"):
        return
    for name, value in given.constants.items():
        if name not in own.constants:
            continue
        try:
            g, o = np.asarray(value, dtype=float), np.asarray(own.constants[name], dtype=float)
        except (TypeError, ValueError):
            continue
        direction = _direction(entry, name)
        slack = CONTRADICTION_RTOL * np.maximum(np.abs(o), np.finfo(float).tiny)
        bad = (g < o - slack) if direction == "upper" else (g > o + slack) if direction == "lower" else \
            (np.abs(g - o) > slack)
        if np.any(bad):
            admits = {"upper": "at least", "lower": "at most", "exact": "equal to"}[direction]
            raise FedTheoryError(f"{record_id}: the check certifies {entry.name} with {name} = {_num(g)} ({given.how}) "
                                 f"where the {entry.subject}'s {own.kind} certificate ({who}: {own.how}) has {name} = "
                                 f"{_num(o)}: {entry.name} admits {name} {admits} that; a check's certificate may "
                                 "add what cannot be certified, never contradict an exact one")


def certify_assumptions(record_id: str, assumptions: Sequence[str], symbols: Sequence[str] = (), *, problem=None,
                        oracle=None, topology=None, sampling=None, algorithm=None, visited: Any = None,
                        extra: Sequence[Certificate] = ()) -> Certification:
    """:func:`certify` for a list of assumption references (``symbols``: the names they may bind by default)."""
    things = {"problem": problem, "oracle": oracle, "topology": topology, "sampling": sampling, "algorithm": algorithm}
    given = {c.assumption: c for c in extra}
    out = Certification(record_id, problem=problem)
    for text in assumptions:
        ref = parse_reference(text)
        entry = CATALOGUE.get(ref.name)
        cert = given.get(ref.name)
        if cert is None:
            cert = _answer(ref, entry, things, visited, problem)
        else:
            if not cert.by:
                cert = cert.with_by("the check")
            if entry is not None and things.get(entry.subject) is not None:
                _refuse_contradiction(record_id, entry, cert, _answer(ref, entry, things, visited, problem))
        out.entries.append(CertifiedAssumption(ref, entry, bind(ref, symbols), cert))
    return out


def certify(record, *, problem=None, oracle=None, topology=None, sampling=None, algorithm=None, visited: Any = None,
            extra: Sequence[Certificate] = ()) -> Certification:
    """The certificates of every assumption of ``record`` on a run (see the module docstring): ``problem`` (a
    ``fedtheory.sim`` problem), ``oracle`` (the run's ``RunConfig.oracle``), ``topology`` (a gossip run's),
    ``sampling`` (``fedtheory.sim.ClientSampling``), ``algorithm``; ``visited``: the run's trace (or a mapping of its
    measures), for constants certified on the visited region; ``extra``: certificates the check computed itself
    (``fedtheory.sim.certificates.from_visited`` and the like), used for their assumptions instead of asking.

    Each assumption is asked of the thing its catalogue entry names as subject; a thing not given leaves it
    unknown.

    Parameters
    ----------
    record : Record
        The record whose ``assumptions`` are certified.
    problem : Problem, optional
        The run's problem.
    oracle : Oracle, optional
        The run's oracle.
    topology : Topology, optional
        A gossip run's topology.
    sampling : ClientSampling, optional
        The run's client sampling.
    algorithm : Algorithm, optional
        The run's algorithm.
    visited : Trace or mapping, optional
        The run's measures, for constants certified on the visited region.
    extra : sequence of Certificate, default ()
        Certificates the check computed itself.

    Returns
    -------
    Certification
        One certificate per assumption.
    """
    symbols = getattr(record, "symbols", None)
    names = list(symbols.info) if symbols is not None else []
    return certify_assumptions(record.id, tuple(getattr(record, "assumptions", ()) or ()), names, problem=problem,
                               oracle=oracle, topology=topology, sampling=sampling, algorithm=algorithm,
                               visited=visited, extra=extra)


def certificate_text(entry: Mapping[str, Any]) -> str:
    """One line of a row's ``extra['certificates']`` entry: 'ASSUMPTION: status by X (region): constants; how'."""
    consts = []
    for k, v in (entry.get("constants") or {}).items():
        if isinstance(v, Mapping):
            consts.append(f"{k} in [{v['min']:.4g}, {v['max']:.4g}] over {v['runs']} runs")
        elif isinstance(v, float):
            consts.append(f"{k} = {v:.6g}")
        else:
            consts.append(f"{k} = {v}")
    if entry.get("family"):
        consts.append(f"{entry['family']} as a function of the others")
    where = "" if entry.get("region", "global") == "global" else f", {entry['region']} region only"
    by = f" by {entry['by']}" if entry.get("by") else ""
    how = f" ({entry.get('kind', '')}{where})" if entry.get("status") == "certified" else ""
    head = f"{entry.get('assumption')}: {entry.get('status')}{by}{how}"
    return head + (": " + ", ".join(consts) if consts else "") + (f"; {entry['how']}" if entry.get("how") else "")


def run_settings(problem, algorithm, config) -> dict[str, Any]:
    """The structural settings of a simulated run that records' ``requires`` name (``assess_bound(settings=...)``):
    local steps, oracle, step-size schedule and its origin, full participation, identical clients, and the
    aggregation ('mean of the models' for FedAvg's :class:`~fedtheory.sim.MeanModels`, else 'other').

    Parameters
    ----------
    problem : Problem
        The run's problem.
    algorithm : Algorithm
        The run's algorithm.
    config : RunConfig
        The run's configuration.

    Returns
    -------
    dict
        ``local_steps``, ``oracle`` (its name), ``lr_schedule``, ``step_origin``, ``full_participation``,
        ``identical_clients`` (where the problem says) and ``aggregation``.
    """
    out = {"local_steps": config.local_steps, "oracle": config.oracle.name, "lr_schedule": config.lr_schedule,
           "step_origin": config.step_origin,
           "full_participation": config.clients_per_round in (None, problem.n_clients),
           "aggregation": "mean of the models" if isinstance(algorithm.aggregate, MeanModels) else "other"}
    identical = getattr(problem, "identical_clients", None)
    if identical is not None:
        out["identical_clients"] = bool(identical)
    return out

