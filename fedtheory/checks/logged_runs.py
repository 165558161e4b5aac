"""Checks on runs logged by ``fedtheory train``: the machinery a paper's claims about its experiments use, and the
integrity check of the run directories themselves.

Active only with ``fedtheory check --runs DIR`` (``session.runs_dir``); without it every such check returns
nothing. DIR may hold several run directories (found recursively; ``logged_runs``). A paper plugs in a check with
``@run_check(id, paper, kind, records)`` on ``fn(session, logs) -> list[CheckResult]`` (it runs only when --runs gave
logs); negative controls run the same function on the same logs under a mutation (``run_check(..., control=
(description, fn(session, logs)))``; ``fedtheory check --controls --runs DIR``); claims are decided under the
statistics policy (``claim_result(..., settings=, seeds=)``: the runs of a directory or sweep are its seeds).
``run_label`` names a run directory's setting in a row. The built-in papers' checks of this kind are in
``fedtheory/papers/*/experiments.py``.

* empirical.runs: every run directory is complete, and a resumed run repeated the killed one's rows.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from ..empirical.runs import run_label
from .registry import Control, check
from .results import CheckResult
from .session import Session

__all__ = ["logged_runs", "run_check", "run_label", "runs_integrity", "unusable_runs"]


def logged_runs_check(id: str, paper: str, kind: str, records=(), *, control: Control | None = None,
                      self_check: str = ""):
    """Register ``fn(session, logs)`` as a check on the runs ``fedtheory train`` logged: it runs only when
    ``fedtheory check --runs DIR`` gave logs (``logs``: the readable run directories, ``logged_runs``).

    Parameters
    ----------
    id, paper, kind, records, self_check
        As :func:`fedtheory.checks.check`.
    control : Control, optional
        The negative control, run on the same logs: its ``fn(session, logs)`` mutates what the check reads, and the
        check must then report a finding.

    Returns
    -------
    callable
        The decorator; it returns ``fn`` unchanged.
    """
    if isinstance(control, tuple):  # the API before 0.2: (what is mutated, fn)
        from ..deprecation import warn_deprecated

        warn_deprecated(f"{id}: logged_runs_check(control=(description, fn))", "pass control=Control(description, fn)")
        control = Control(*control)

    def with_logs(f: Callable) -> Callable:
        def run(session: Session):
            logs = logged_runs(session)
            return f(session, logs) if logs else []
        return run

    def deco(fn: Callable):
        ctl = Control(control.description, with_logs(control.fn)) if control is not None else None
        wrapper = with_logs(fn)
        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        check(id, paper, kind, records=records, needs_runs=True, control=ctl, self_check=self_check)(wrapper)
        return fn
    return deco


def run_check(id: str, paper: str, kind: str, records=(), *, control=None, self_check: str = ""):
    """Deprecated since 0.2 (removed in 0.3): :func:`logged_runs_check`."""
    from ..deprecation import warn_deprecated

    warn_deprecated("fedtheory.checks.run_check", "renamed logged_runs_check (and its "
                                                  "control= is a Control, like check's)")
    return logged_runs_check(id, paper, kind, records, control=control, self_check=self_check)


def logged_runs(session: Session):
    """The readable run directories under --runs (``fedtheory.empirical.runs.RunLog``; read once per session), or
    None without --runs.

    Parameters
    ----------
    session : Session
        The check's session (its ``runs_dir``).

    Returns
    -------
    list of RunLog or None
        Each readable run directory (manifest and metrics), found recursively; None without ``--runs``.
    """
    if not session.runs_dir:
        return None
    from ..empirical.runs import find_runs

    return session.memo(("empirical", "logs", session.runs_dir), lambda: find_runs(session.runs_dir, errors=[]))


def unusable_runs(session: Session) -> list[str]:
    """The run directories under --runs that could not be read (named by the CLI, exit 2)."""
    from ..empirical.runs import find_runs

    def scan():
        errors: list[str] = []
        find_runs(session.runs_dir, errors=errors)
        return errors
    return session.memo(("empirical", "unusable", session.runs_dir), scan)


# --------------------------------------------------------------------------------- the regime of a claim about training

REGIME_FRACTION = 0.25  # a run long enough to decide a claim about training: a quarter of the paper's rounds ...
REGIME_FLAT = 0.05  # ... or a loss that fell by less than 5% (relative) over the last quarter of its rounds
REGIME_CHANCE_MARGIN = 0.02  # a final accuracy within 2 points of chance: the training has not happened


def training_regime(rounds: int, paper_rounds: int, *, loss=None, accuracy=None, chance: float | None = None,
                    fraction: float = REGIME_FRACTION, flat: float = REGIME_FLAT, paper_source: str = "") -> dict:
    """Has a run reached the regime a claim about training speaks of (issue 45: a claim about training is decided only
    on runs long enough to say)? Reached when the runs did at least ``fraction`` of the paper's ``paper_rounds``, or
    when their loss has converged: ``loss`` (rounds, runs) or (rounds,), NaN where not logged; its mean over runs fell
    by less than ``flat`` (relative) over the last quarter of the logged rounds. Never reached while the final
    ``accuracy`` (per run) is within REGIME_CHANCE_MARGIN of ``chance``: the models have not learned. Returns
    {'reached', 'how' ('length' | 'converged' | ''), 'text', 'rounds', 'needed', 'loss_drop'}.

    Parameters
    ----------
    rounds : int
        The rounds the runs did.
    paper_rounds : int
        The rounds of the paper's experiment the claim is about.
    loss : array_like, optional
        The training loss, (rounds, runs) or (rounds,), NaN where not logged.
    accuracy : array_like, optional
        The final accuracy of each run.
    chance : float, optional
        The chance accuracy (1 / classes).
    fraction : float, default 0.25
        The share of the paper's rounds that suffices.
    flat : float, default 0.05
        The relative fall of the loss over the last quarter of the rounds below which it has converged.
    paper_source : str, default ""
        Where the paper states its rounds, for the text.

    Returns
    -------
    dict
        ``reached`` (bool), ``how``, ``text`` (why, in words), ``rounds``, ``needed`` and ``loss_drop``.
    """
    needed = int(math.ceil(fraction * paper_rounds))
    drop = None
    if loss is not None:
        m = np.asarray(loss, float)
        if m.ndim == 2:  # the mean over runs of the rounds every run logged
            m = np.where(np.isfinite(m).all(axis=1), np.where(np.isfinite(m), m, 0.0).mean(axis=1), np.nan)
        m = m[np.isfinite(m)]
        if m.size >= 4:
            start, end = float(m[-max(2, m.size // 4)]), float(m[-1])
            drop = (start - end) / abs(end) if end != 0 else math.inf
    acc = np.asarray(accuracy if accuracy is not None else [], float).ravel()
    acc = acc[np.isfinite(acc)]
    at_chance = chance is not None and acc.size > 0 and float(acc.mean()) <= chance + REGIME_CHANCE_MARGIN
    src = f" ({paper_source})" if paper_source else ""
    if at_chance:
        how, text = "", (f"the models end at chance accuracy ({float(acc.mean()):.3f} vs {chance:.3f}): the training "
                         "the claim speaks of has not happened")
    elif rounds >= needed:
        how, text = "length", f"{rounds} rounds, at least {fraction:g} of the paper's {paper_rounds}{src}"
    elif drop is not None and drop <= flat:
        how, text = "converged", (f"{rounds} rounds, short of {needed} ({fraction:g} of the paper's "
                                  f"{paper_rounds}{src}), but the loss fell by only {100 * drop:.2g}% over the last "
                                  f"quarter of them (converged: under {100 * flat:g}%)")
    else:
        how, text = "", (f"{rounds} rounds, short of {needed} ({fraction:g} of the paper's {paper_rounds}{src}), and "
                         + (f"the loss still fell by {100 * drop:.2g}% over the last quarter of them (not converged: "
                            f"{100 * flat:g}% or less)" if drop is not None else "no loss logged to show convergence"))
    return {"reached": bool(how), "how": how, "text": text, "rounds": int(rounds), "needed": needed,
            "loss_drop": drop}


def in_training_regime(row: CheckResult, regime: dict) -> CheckResult:
    """A claim row decided only where its runs reached the regime the claim speaks of (``training_regime``): else
    'inconclusive', the row saying why and what the predicate gave on the rounds there are (extra['regime']).

    Parameters
    ----------
    row : CheckResult
        A claim's row (``claim_result``).
    regime : dict
        What :func:`training_regime` returned for its runs.

    Returns
    -------
    CheckResult
        The row (with the regime in ``extra``), or an ``inconclusive`` copy when the regime was not reached.
    """
    row.extra["regime"] = {k: v for k, v in regime.items() if k != "text"} | {"text": regime["text"]}
    if regime["reached"] or row.verdict not in ("claim_supported", "claim_refuted"):
        if regime["reached"]:
            row.detail = f"in the claim's regime: {regime['text']}. " + row.detail
        return row
    out = dataclasses.replace(row, verdict="inconclusive", finding_class="",
                              detail=(f"not decided, too early to say: {regime['text']}; on the rounds there are the "
                                      f"predicate gives {row.verdict}. ") + row.detail)
    out.extra["regime"]["predicate_verdict"] = row.verdict
    out.extra.pop("robustness", None)
    return out


# ------------------------------------------------------------------------------------ integrity


@check("empirical.runs", "empirical", "identity", records=(), needs_runs=True,
       self_check="an integrity check of the tool's own run directories (complete rounds, bit-identical rows after a "
                  "resume), not a statement of any paper")
def runs_integrity(session):
    """Every run directory completed all its rounds, and a resumed run recomputed bit-identical rows."""
    logs = logged_runs(session)
    if logs is None:
        return []
    if not logs:
        return [CheckResult("empirical.runs", "empirical", "identity", "inconclusive", problem=str(session.runs_dir),
                            detail="no fedtheory run directories (manifest.json + metrics.csv) found here")]
    out = [CheckResult("empirical.runs", "empirical", "identity", "inconclusive", problem=str(session.runs_dir),
                       detail=f"unusable run directory: {err}") for err in unusable_runs(session)]
    for lg in logs:
        T = int(lg.config["rounds"])
        R = len(lg.runs)
        rows = lg.metrics
        have = {(int(a), int(b)) for a, b in zip(rows["round"], rows["run"])}
        missing = [(t, r) for t in range(T + 1) for r in range(R) if (t, r) not in have]
        resumes = lg.manifest.get("resumes") or []
        mism = [x for x in resumes if x.get("rows_compared") and not x.get("bit_identical", True)]
        if missing or lg.status != "completed":
            verdict, detail = "inconclusive", (f"status {lg.status}; {len(missing)} of {(T + 1) * R} (round, run) rows "
                                               f"missing (resume it with fedtheory train --out DIR --resume)")
        elif mism:
            det = lg.config.get("deterministic", True)
            verdict = "violated" if det else "inconclusive"
            detail = (f"after a resume the recomputed rows differ from the interrupted run's by up to "
                      f"{max(x['max_abs_difference'] for x in mism):.3g}"
                      + ("" if det else " (non-deterministic kernels were allowed)"))
        else:
            verdict = "holds"
            detail = (f"{R} run(s) x {T} rounds complete" + (f"; {len(resumes)} resume(s), recomputed rows "
                                                              "bit-identical" if resumes else ""))
        diverged = _diverged_at(rows)
        if diverged:  # complete rows, but not measurements: say where each run stopped measuring
            detail += (f"; {len(diverged)} of {R} run(s) diverged (measures NaN from then on): " +
                       ", ".join(f"run {r} at round {t}" for r, t in diverged.items()))
        out.append(CheckResult("empirical.runs", "empirical", "identity", verdict, problem=run_label(lg.config),
                               params={"setting": lg.config["algorithm"], "runs": R}, detail=detail,
                               extra={"dir": str(lg.path), "versions": lg.manifest.get("versions", {}),
                                      "diverged_at_round": {str(r): t for r, t in diverged.items()}}))
    return out


def _diverged_at(rows) -> dict[int, int]:
    """run -> the first logged round with diverged = 1 (runs that never diverged are left out)."""
    d = rows[rows["diverged"].to_numpy(dtype=float) > 0]
    return {int(r): int(g["round"].min()) for r, g in d.groupby("run")}
