"""``run_checks``: the selected checks, in this process (one Session; the symbolic ones in a worker process beside
the simulations) or as units of work on an executor (``fedtheory.checks.units``); the same results either way.
``timings=[]`` also collects each check's seconds (``base.CheckTiming``; ``fedtheory check --timings``)."""
from __future__ import annotations

import os
from typing import Any, Iterable

from .._validation import check_choice
from .base import PROFILES, CheckResult, Session, all_checks, check_timings, one_blas_thread, run_spec, select
from .units import run_units

__all__ = ["run_checks"]


def run_checks(paper: str | None = None, only: Iterable[str] | None = None, profile: str = "quick", seed: int = 0,
               progress: bool = False, runs_dir: str | None = None, parallel_symbolic: bool = True,
               executor: Any = None, timings: list | None = None) -> list[CheckResult]:
    """Run the selected checks, results in registration order. Without ``executor``: in this process, one
    Session (symbolic checks in a worker process while the simulations run here). With an executor
    (``fedtheory.parallel``): as units of work (``fedtheory.checks.units``), the same results.
    timings: a list that receives one ``CheckTiming`` per selected check, in registration order."""
    check_choice("profile", profile, PROFILES)
    specs = select(paper, only, profile, runs=runs_dir is not None)
    if executor is not None:
        return run_units(specs, executor, profile=profile, seed=seed, runs_dir=runs_dir, progress=progress,
                         timings=timings)
    with one_blas_thread():
        return _run_here(specs, profile, seed, progress, runs_dir, parallel_symbolic, timings)


def _run_here(specs, profile, seed, progress, runs_dir, parallel_symbolic, timings) -> list[CheckResult]:
    """run_checks without an executor: one Session here, the symbolic checks in a worker process."""
    session = Session(profile=profile, seed=seed, progress=progress, runs_dir=runs_dir)
    symbolic = [s for s in specs if s.cost == "symbolic"]
    numeric = [s for s in specs if s.cost != "symbolic"]
    results: dict[str, list[CheckResult]] = {}
    where: dict[str, str] = {}  # where a check ran, when not here
    futures = {}
    pool = None
    if parallel_symbolic and symbolic and (os.cpu_count() or 1) > 1:
        import concurrent.futures as cf
        import multiprocessing as mp

        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context(method))
        futures = {s.id: pool.submit(_run_in_worker, s.id, profile, seed) for s in symbolic}
    else:
        numeric = symbolic + numeric
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(specs), desc="checks", unit="check")
    try:
        for s in numeric:
            if bar is not None:
                bar.set_postfix_str(s.id)
            results[s.id] = run_spec(s, session)
            if bar is not None:
                bar.update(1)
        for sid, fut in futures.items():
            spec = all_checks()[sid]
            try:
                rows, session.cpu_s[sid] = fut.result()
                results[sid] = [CheckResult(**d) for d in rows]
                where[sid] = "symbolic worker"
            except Exception:  # noqa: BLE001 - the worker died (e.g. no fork): run it here instead
                results[sid] = run_spec(spec, session)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if timings is not None:
        timings.extend(check_timings(specs, results, where, session.cpu_s))
    return [r for s in specs for r in results[s.id]]


def _run_in_worker(spec_id: str, profile: str, seed: int) -> tuple[list[dict], float]:
    """One check in the worker process: its rows as JSON and its CPU seconds there."""
    spec = all_checks()[spec_id]
    session = Session(profile=profile, seed=seed)
    res = run_spec(spec, session)
    return [r.to_json() for r in res], session.cpu_s[spec_id]
