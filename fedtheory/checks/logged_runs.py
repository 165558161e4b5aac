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

from typing import Callable

from ..empirical.runs import run_label
from .base import CheckResult, Control, Session, check

__all__ = ["logged_runs", "run_check", "run_label", "runs_integrity", "unusable_runs"]


def run_check(id: str, paper: str, kind: str, records=(), *, control: tuple[str, Callable] | None = None,
              self_check: str = ""):
    """Register ``fn(session, logs)`` as an empirical check: it runs only when ``--runs`` gave logs.
    control: (what is mutated, ``mutated(session, logs)``), the negative control run on the same logs;
    self_check: why the check is an implementation self-check by design (see ``check``)."""
    def with_logs(f: Callable) -> Callable:
        def run(session: Session):
            logs = logged_runs(session)
            return f(session, logs) if logs else []
        return run

    def deco(fn: Callable):
        ctl = Control(control[0], with_logs(control[1])) if control is not None else None
        wrapper = with_logs(fn)
        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        check(id, paper, kind, records=records, needs_runs=True, control=ctl, self_check=self_check)(wrapper)
        return fn
    return deco


def logged_runs(session: Session):
    """The readable run directories under --runs (``fedtheory.empirical.runs.RunLog``; read once per session), or
    None without --runs."""
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
                      f"{max(x['max_abs_difference'] for x in mism):.3g}" + ("" if det else " (non-deterministic kernels "
                                                                                    "were allowed)"))
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
