"""A check decided under each reading of an ambiguous text (``Record.readings``), joined into one row
(:func:`combine_readings`): a verdict only where every reading gives it, else 'ambiguous'."""
from __future__ import annotations

from typing import Any, Mapping

from .._validation import ParameterError
from .results import CheckResult

__all__ = ["combine_readings"]


def combine_readings(rows: Mapping[str, CheckResult]) -> CheckResult:
    """One row from a check decided under each reading of the text (``Record.readings``): when every reading gives
    the same verdict and scope, that verdict (a finding counts only then); otherwise 'ambiguous', listed apart with
    each reading's verdict. The first reading's row supplies id, problem, setting and source; every reading's
    verdict, numbers and note are kept in ``extra['readings']``.

    Parameters
    ----------
    rows : mapping of str to CheckResult
        The reading's name -> the row the check gave under it (at least one).

    Returns
    -------
    CheckResult
        The common verdict, or an ``ambiguous`` row.

    Raises
    ------
    ParameterError
        When ``rows`` is empty.
    """
    if not rows:
        raise ParameterError("rows", {}, "at least one reading's row")
    names = list(rows)
    first = rows[names[0]]
    per = {k: {"verdict": r.verdict, "scope": r.scope, "measured": r.measured, "bound": r.bound, "ratio": r.ratio,
               "detail": r.detail, "finding_class": r.finding_class} for k, r in rows.items()}
    summary = "; ".join(f"reading {k}: {r.verdict}" + (f" [{r.scope}]" if r.scope != "inside" else "")
                        + (f" ({r.detail})" if r.detail else "") for k, r in rows.items())
    if len({(r.verdict, r.scope) for r in rows.values()}) == 1:
        from dataclasses import replace as _replace

        out = _replace(first, extra={**first.extra, "readings": per},
                       detail=f"every reading ({', '.join(names)}) gives {first.verdict}. " + summary)
        return out
    vac: dict[str, Any] = {}
    if first.kind == "bound":  # a bound row keeps its vacuity: vacuous only when it is under every reading
        said = [r.extra.get("vacuity") for r in rows.values()]
        known = all(v in ("informative", "vacuous") for v in said)
        vac = {"vacuous": all(r.vacuous for r in rows.values()), "trivial_bound": first.trivial_bound,
               "vacuity": ("vacuous" if all(v == "vacuous" for v in said) else "informative") if known else
               next((v for v in said if v not in ("informative", "vacuous")), None)}
    return CheckResult(first.id, first.paper, first.kind, "ambiguous", problem=first.problem, params=dict(first.params),
                       source=first.source, quote=first.quote, seeds=first.seeds, family_size=first.family_size,
                       detail="the readings disagree: " + summary, finding=first.finding,
                       vacuous=vac.get("vacuous", False), trivial_bound=vac.get("trivial_bound"),
                       extra={"readings": per, **{k: v for k, v in first.extra.items() if k in ("title", "lhs")},
                              **({"vacuity": vac["vacuity"]} if vac.get("vacuity") else {})})
