"""How robust a counted finding is (docs/verdict-rules.md, rule 9): its margin, and each free choice it rests on swept.

A finding rests on choices the paper leaves free: a constant it never defines (FedMRUR's C), a problem parameter
(a regularizer's smoothness r that any larger value also bounds), the horizon, the units a statement inconsistent in
units is read in. A check that reports a counted finding states, in ``extra['robustness']`` of its rows, the
finding's margin at the values it was found at and, for each free choice, the values tried, where the finding
survives and where it disappears. A finding that disappears within 10% of a free choice (``FRAGILE_WITHIN`` of the
choice's scale, its own value unless it is 0) is ``fragile``: the summary, the JSON and the report say so. A finding
with no free choice (a printed table against its own columns, a symbolic identity) says why (``exact``).

``sweep`` decides one free choice from a function value -> (survives, margin); ``robustness`` assembles the record a
row carries; ``finding_robustness`` joins the rows of one finding (it disappears only when every one of its counted
rows does: the most robust row speaks for it). A counted row that states none gets 'not stated' by rule
(``robustness_rule``, applied to every check's rows).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

FRAGILE_WITHIN = 0.10  # a finding that disappears within this fraction of a free choice's scale is fragile
NOT_STATED = "not stated by the check"


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def sweep(name: str, base: Any, values: Iterable[Any], decide: Callable[[Any], tuple[bool, float | None]], *,
          kind: str = "", scale: float | None = None, note: str = "") -> dict[str, Any]:
    """One free choice swept: ``decide(value)`` -> (the finding survives at that value, its margin there). base: the
    value the finding was found at (it is tried too); scale: what 'within 10%' is measured against (default ``|base|``;
    give one where base is 0). Returns {'name', 'kind', 'base', 'scale', 'tested': [[value, survives, margin], ...],
    'survives': [lo, hi] the contiguous range around base where it survives (None if not at base), 'lost_at': the
    nearest value where it disappears (None if nowhere), 'fragile': it disappears within FRAGILE_WITHIN of the scale,
    'note'}.

    Parameters
    ----------
    name : str
        The free choice (a constant, a problem parameter, a horizon).
    base : object
        The value the finding was found at.
    values : iterable
        The other values to try.
    decide : callable
        ``decide(value) -> (survives, margin)``.
    kind : str, default ""
        What kind of choice it is, in words.
    scale : float, optional
        What "within 10%" is measured against (default the absolute value of ``base``).
    note : str, default ""
        A note shown with the sweep.

    Returns
    -------
    dict
        The sweep, for :func:`robustness`'s ``choices``.
    """
    vals = sorted({*(v for v in values), base}, key=lambda v: (_num(v) is None, _num(v) or 0.0))
    tested = []
    for v in vals:
        ok, margin = decide(v)
        tested.append([v, bool(ok), None if margin is None else float(margin)])
    b = _num(base)
    sc = abs(scale) if scale is not None else (abs(b) if b is not None else None)
    at_base = next((t for t in tested if t[0] == base), None)
    survives = None
    lost = [t for t in tested if not t[1]]
    if at_base is not None and at_base[1] and b is not None:
        i = tested.index(at_base)
        lo = hi = i
        while lo > 0 and tested[lo - 1][1]:
            lo -= 1
        while hi < len(tested) - 1 and tested[hi + 1][1]:
            hi += 1
        survives = [tested[lo][0], tested[hi][0]]
    nearest = None
    if lost and b is not None:
        nearest = min(lost, key=lambda t: abs((_num(t[0]) or 0.0) - b))[0]
    fragile = bool(nearest is not None and sc is not None and sc > 0
                   and abs((_num(nearest) or 0.0) - b) <= FRAGILE_WITHIN * sc + 1e-12)
    if at_base is not None and not at_base[1]:
        fragile = True  # not even at the values it was reported at
    return {"name": name, "kind": kind, "base": base, "scale": sc, "tested": tested, "survives": survives,
            "lost_at": nearest, "fragile": fragile, "note": note}


def robustness(margin: float | None = None, margin_text: str = "", choices: Sequence[Mapping[str, Any]] = (), *,
               exact: str = "") -> dict[str, Any]:
    """What a counted row states about its finding's robustness: its margin at the values it was found at (a number,
    relative where it can be, and in words), each free choice swept (``sweep``), or ``exact``: why it has no free
    choice. 'fragile' when some free choice loses it within 10%.

    A counted row puts it in ``extra['robustness']`` (rule 9 of docs/verdict-rules.md).

    Parameters
    ----------
    margin : float, optional
        The finding's margin at the values it was found at, relative where it can be.
    margin_text : str, default ""
        The margin in words.
    choices : sequence of dict, default ()
        Each free choice swept (:func:`sweep`).
    exact : str, default ""
        Why the finding has no free choice.

    Returns
    -------
    dict
        ``stated``, ``margin``, ``margin_text``, ``exact``, ``choices``, ``fragile`` and ``text`` (one line).
    """
    choices = [dict(c) for c in choices]
    fragile = any(c.get("fragile") for c in choices)
    return {"stated": True, "margin": margin, "margin_text": margin_text, "exact": exact, "choices": choices,
            "fragile": fragile, "text": robustness_text({"margin_text": margin_text, "exact": exact,
                                                         "choices": choices, "fragile": fragile})}


def _v(x: Any) -> str:
    f = _num(x)
    return f"{f:.3g}" if f is not None else str(x)


def robustness_text(rob: Mapping[str, Any]) -> str:
    """A robustness record in one line: 'fragile: C loses it at 0.95 (base 1); margin ...'."""
    if not rob or not rob.get("stated", True):
        return f"robustness {NOT_STATED}"
    parts = []
    if rob.get("margin_text"):
        parts.append(f"margin {rob['margin_text']}")
    if rob.get("exact"):
        parts.append(f"no free choice: {rob['exact']}")
    for c in rob.get("choices") or ():
        s = c.get("survives")
        rng = f"survives for {c['name']} in [{_v(s[0])}, {_v(s[1])}]" if s else f"does not survive at {c['name']} = " \
                                                                             f"{_v(c['base'])}"
        lost = (f", lost at {c['name']} = {_v(c['lost_at'])}" if c.get("lost_at") is not None else
                " (every value tried)")
        parts.append(f"{rng}{lost} (found at {_v(c['base'])}" + (f"; {c['note']}" if c.get("note") else "") + ")")
    return ("fragile: " if rob.get("fragile") else "robust: ") + "; ".join(parts)


def robustness_rule(rows: Sequence[Any]) -> None:
    """Every counted row (``is_finding``) carries ``extra['robustness']``: a check that states none gets 'not stated'
    (listed so in the summary), never a silent gap."""
    for r in rows:
        if getattr(r, "is_finding", False) and "robustness" not in r.extra:
            r.extra["robustness"] = {"stated": False, "fragile": False, "text": f"robustness {NOT_STATED}"}


def finding_robustness(rows: Sequence[Any]) -> dict[str, Any]:
    """The robustness of one finding from its counted rows: it disappears only when every row does, so it is fragile
    only when every row that states its robustness is fragile; the row shown is the most robust one (a stated, not
    fragile row first, then the largest margin)."""
    stated = [r.extra.get("robustness") for r in rows if isinstance(r.extra.get("robustness"), Mapping)]
    known = [x for x in stated if x.get("stated", True)]
    if not known:
        return {"stated": False, "fragile": False, "text": f"robustness {NOT_STATED}"}

    def rank(x):
        m = _num(x.get("margin"))
        return (bool(x.get("fragile")), not bool(x.get("exact")), -(m if m is not None else -math.inf))

    best = min(known, key=rank)
    return {**best, "fragile": all(x.get("fragile") for x in known)}
