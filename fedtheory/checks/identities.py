"""An identity's verdict from its measured residual (:func:`identity_result`; the tolerance lives on the record)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..theory.core import Identity
from .results import CheckResult

__all__ = ["identity_result"]


def identity_result(identity: Identity, residual: float, *, check_id: str | None = None, problem: Any = None,
                    params: Mapping[str, Any] | None = None, detail: str = "", ok: bool | None = None,
                    **fields: Any) -> CheckResult:
    """The verdict of an identity from its measured residual: ``holds`` when ``residual <= identity.tolerance``
    (the tolerance lives on the record), ``violated`` otherwise; a non-finite residual is ``violated``.

    ok: an extra requirement the check adds (e.g. 'defined at every round'); ``fields``: CheckResult's scope
    fields (finding, scope, self_check, extra, ...).

    Parameters
    ----------
    identity : Identity
        The record.
    residual : float
        The measured residual.
    check_id : str, optional
        The row's id (default: the identity's).
    problem : object, optional
        The problem's name.
    params : mapping, optional
        The row's setting.
    detail : str, default ""
        The row's note (default: the residual and the tolerance).
    ok : bool, optional
        An extra requirement; False makes the row violated.
    **fields
        More fields of :class:`CheckResult`.

    Returns
    -------
    CheckResult
        An identity row: ``holds`` or ``violated``.
    """
    res = float(residual)
    holds = bool(np.isfinite(res) and res <= identity.tolerance) and (ok is None or bool(ok))
    return CheckResult(check_id or identity.id, identity.paper, "identity", "holds" if holds else "violated",
                       measured=res, bound=identity.tolerance, problem=problem, params=dict(params or {}),
                       source=identity.source, quote=getattr(identity, "quote", ""),
                       detail=detail or f"residual {res:.3g} (tolerance {identity.tolerance:g})", **fields)
