"""Certificates: what a problem family, an oracle, a topology, an algorithm or a client sampling satisfies.

A theorem's assumptions (``fedtheory.theory.CATALOGUE``) are never declared true by a check: the thing the
assumption is about answers it. ``thing.certify(name, visited=...)`` returns a :class:`Certificate`:

* ``certified``: the assumption holds, with its constants (catalogue names: ``L``, ``mu``, ``sigma``, ...) and how
  each was computed (``how``; ``kind``: exact | bound | computed | measured, as ``problems.Constant``);
* ``refused``: it does not hold, with the reason ("least squares: gradients unbounded");
* ``unknown``: the thing cannot tell, with the reason.

``region`` says where a certified statement holds: ``global`` (every w), ``domain`` (a stated domain) or
``visited`` (only at the points the run visited, from its ``visited_*`` measures: a constant certified on the
visited region is allowed, and every row that rests on it says so). A run that diverged visited no bounded region:
its visited constants are refused.

``visited`` is the run's measures (name -> per-run array, e.g. ``{"visited_max_grad": tr["visited_max_grad"][0]}``
or a ``Trace``); a family that can certify an assumption only on the visited region names the measure it needs
when it is absent.

Several constants that hold only jointly (the (G, B) dissimilarity: G^2(B) for each B >= B_min) are certified with
``family``: a function of the other constants that gives the smallest admissible value of one of them (``family =
("G", g_of_B)``); a check may then use any admissible pair.

This module stands in the sim layer: it knows assumptions by name only; the catalogue (statements, dimensions,
which values a constant admits) is the theory layer's, and the join (``fedtheory.checks.certify``) reads both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from .._validation import check_int

__all__ = ["Certificate", "ClientSampling", "STATUSES", "REGIONS", "VISITED_ONLY", "certified", "refused", "unknown",
           "undeclared", "from_visited", "visited_measure", "visited_values"]

STATUSES = ("certified", "refused", "unknown")
REGIONS = ("global", "domain", "visited")
#: the words of a refusal that a run recording the named measure would turn into a certificate on the visited region
VISITED_ONLY = "certified on the visited region only when the run records"
_VISITED_MEASURE = re.compile(re.escape(VISITED_ONLY) + r" '([^']+)'")


@dataclass(frozen=True)
class Certificate:
    """An answer to one assumption (see the module docstring).

    Built with :func:`certified`, :func:`refused`, :func:`unknown` or :func:`from_visited`;
    ``fedtheory.checks.certify`` gathers them for a record.

    Parameters
    ----------
    assumption : str
        The catalogue assumption answered.
    status : {"certified", "refused", "unknown"}
        The answer.
    constants : mapping of str to object, optional
        The certified constants by their catalogue names (``L``, ``mu``, ``sigma``; a number or one per run).
    how : str, default ""
        How they were computed, or why the assumption is refused or unknown.
    region : {"global", "domain", "visited"}, default "global"
        Where a certified statement holds.
    kind : {"exact", "bound", "computed", "measured"}, default "exact"
        How the constants are known.
    by : str, default ""
        What answered (the problem family, the oracle, ...).
    family : tuple of (str, callable), optional
        For constants that hold only jointly: the name of one constant and its smallest admissible value as a
        function of the others.
    declared : bool, default True
        False when the thing was not written to answer this assumption (a gap, not a reason).
    """

    assumption: str
    status: str
    constants: Mapping[str, Any] = field(default_factory=dict)
    how: str = ""
    region: str = "global"
    kind: str = "exact"
    by: str = ""
    family: tuple[str, Callable[..., Any]] | None = None
    declared: bool = True  # False: the thing was not written to answer this assumption (a gap, not a reason)

    @property
    def certified(self) -> bool:
        return self.status == "certified"

    def with_by(self, by: str) -> "Certificate":
        return Certificate(self.assumption, self.status, self.constants, self.how, self.region, self.kind, by,
                           self.family, self.declared)

    def summary(self) -> dict[str, Any]:
        """Plain data for a row's ``extra['certificates']`` and the report: status, constants (scalars, or the range
        of per-run values), how, region, kind, by."""
        consts = {}
        for k, v in self.constants.items():
            a = np.asarray(v, dtype=float) if np.ndim(v) or isinstance(v, (int, float, np.floating)) else None
            if a is None:
                consts[k] = str(v)
            elif a.ndim == 0:
                consts[k] = float(a)
            else:
                consts[k] = {"min": float(np.nanmin(a)), "max": float(np.nanmax(a)), "runs": int(a.size)}
        out = {"assumption": self.assumption, "status": self.status, "constants": consts, "how": self.how,
               "region": self.region, "kind": self.kind, "by": self.by}
        if self.family is not None:
            out["family"] = self.family[0]
        return out


def certified(assumption: str, how: str, *, region: str = "global", kind: str = "exact",
              family: tuple[str, Callable[..., Any]] | None = None, **constants: Any) -> Certificate:
    """The assumption holds, with ``constants`` (catalogue names) computed as ``how`` says.

    Parameters
    ----------
    assumption : str
        The catalogue assumption.
    how : str
        How the constants were computed (shown with every row that rests on them).
    region : {"global", "domain", "visited"}, default "global"
        Where it holds.
    kind : {"exact", "bound", "computed", "measured"}, default "exact"
        How the constants are known.
    family : tuple of (str, callable), optional
        For constants that hold only jointly: ``(name, smallest_value_of_name(**others))``.
    **constants
        The constants, by catalogue name (``L=3.0``).

    Returns
    -------
    Certificate
        A certified answer.
    """
    return Certificate(assumption, "certified", dict(constants), how, region, kind, family=family)


def refused(assumption: str, why: str) -> Certificate:
    """The assumption does not hold, for the reason ``why``.

    Parameters
    ----------
    assumption : str
        The catalogue assumption.
    why : str
        The reason, shown in the row that is not applicable.

    Returns
    -------
    Certificate
        A refused answer.
    """
    return Certificate(assumption, "refused", {}, why, "global", "exact")


def unknown(assumption: str, why: str) -> Certificate:
    """The thing cannot tell whether the assumption holds, for the reason ``why``.

    Parameters
    ----------
    assumption : str
        The catalogue assumption.
    why : str
        The reason.

    Returns
    -------
    Certificate
        An unknown answer.
    """
    return Certificate(assumption, "unknown", {}, why, "global", "exact")


def undeclared(assumption: str, thing: Any) -> Certificate:
    """What a thing that was not written to answer ``assumption`` says: unknown, flagged as a gap."""
    name = thing if isinstance(thing, str) else type(thing).__name__
    return Certificate(assumption, "unknown", {}, f"{name} does not answer {assumption!r}", declared=False)


def visited_values(visited: Any, measure: str) -> np.ndarray | None:
    """The per-run values of a visited measure from a mapping or a ``Trace`` (its single row), or None."""
    if visited is None:
        return None
    try:
        v = visited[measure]
    except (KeyError, TypeError):
        return None
    a = np.asarray(v, dtype=float)
    return a[0] if a.ndim == 2 and a.shape[0] == 1 else a


def from_visited(assumption: str, visited: Any, measure: str, constant: str, transform: Callable[[np.ndarray], Any],
                 how: str, *, globally: str) -> Certificate:
    """A constant certified on the visited region only, from the run's ``measure`` (``transform`` of its per-run
    values): refused when the measure was not recorded (``globally`` says why the assumption fails over every w) or
    is not finite (the run diverged).

    Parameters
    ----------
    assumption : str
        The catalogue assumption.
    visited : mapping or Trace
        The run's measures (a ``Trace``, or a mapping name -> per-run values).
    measure : str
        The visited measure to read (``"visited_max_grad"``).
    constant : str
        The catalogue name of the constant certified.
    transform : callable
        Maps the measure's per-run values to the constant (``numpy.sqrt``).
    how : str
        How the constant is computed.
    globally : str
        Why the assumption does not hold over every w (the refusal's reason).

    Returns
    -------
    Certificate
        Certified on the visited region (kind ``measured``), or refused.
    """
    values = visited_values(visited, measure)
    if values is None:
        return refused(assumption, f"{globally}; {VISITED_ONLY} '{measure}'")
    if values.size == 0 or not np.all(np.isfinite(values)):
        return refused(assumption, f"{globally}; on the visited region: '{measure}' is not finite (the run diverged)")
    return certified(assumption, f"{how} (on the visited region: {measure})", region="visited", kind="measured",
                     **{constant: transform(values)})


def visited_measure(cert: Certificate) -> str | None:
    """The measure a run must record for ``cert``'s thing to certify its assumption on the visited region (a refusal
    made without that measure), or None."""
    m = _VISITED_MEASURE.search(cert.how) if cert.status == "refused" else None
    return m.group(1) if m else None


class ClientSampling:
    """Which clients take part in a round: ``clients_per_round`` of ``n_clients`` drawn uniformly without
    replacement each round (the engine's rule, ``RunStreams.choose_clients``), or every client.

    It certifies ``full_participation``, ``sampling_without_replacement`` and (at one client per round)
    ``sampling_with_replacement``.

    Parameters
    ----------
    n_clients : int
        C, the number of clients (>= 1).
    clients_per_round : int, optional
        N, the clients drawn each round (1..C); None: every client.
    """

    def __init__(self, n_clients: int, clients_per_round: int | None = None):
        self.n_clients = check_int("n_clients", n_clients, 1)
        n = self.n_clients if clients_per_round is None else clients_per_round
        self.clients_per_round = check_int("clients_per_round", n, 1, self.n_clients)

    @classmethod
    def of(cls, n_clients: int, config: Any) -> "ClientSampling":
        """The sampling of a ``RunConfig`` (its ``clients_per_round``; None: every client)."""
        return cls(n_clients, getattr(config, "clients_per_round", None) or None)

    def certify(self, name: str, visited: Any = None) -> Certificate:
        C, N = self.n_clients, self.clients_per_round
        full = N == C
        if name == "full_participation":
            return (certified(name, f"every one of the {C} clients in every round") if full
                    else refused(name, f"{N} of {C} clients per round"))
        if name == "sampling_without_replacement":
            return certified(name, f"{N} of {C} clients drawn uniformly without replacement each round"
                                   + (" (all of them)" if full else ""), S=N, N=C)
        if name == "sampling_with_replacement":
            if N == 1:
                return certified(name, f"one of {C} clients per round: with and without replacement coincide", S=1, N=C)
            return refused(name, f"the engine draws {N} of {C} clients without replacement (a client is never drawn "
                                 "twice in a round)")
        return undeclared(name, self)
