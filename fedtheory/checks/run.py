"""``run_checks``: the selected checks, in this process (one Session; the symbolic ones in a worker process beside
the simulations) or as units of work on an executor (``fedtheory.checks.scheduling``); the same results either way.
``timings=[]`` also collects each check's seconds (``execution.CheckTiming``; ``fedtheory check --timings``)."""
from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

from .._validation import check_choice
from ..plugins import load_plugins
from .execution import check_timings, one_blas_thread, run_spec
from .registry import all_checks, record_row_filter, select
from .results import CheckResult
from .scheduling import plan_units, run_units
from .session import PROFILES, Session

__all__ = ["run_checks"]


def run_checks(paper: str | None = None, only: Iterable[str] | None = None, profile: str = "quick", seed: int = 0,
               progress: bool = False, runs_dir: str | None = None, parallel_symbolic: bool = True,
               executor: Any = None, timings: list | None = None) -> list[CheckResult]:
    """Run the selected checks, results in registration order. Without ``executor``: in this process and, on a
    machine with more than one core (unless ``parallel_symbolic=False``), in one worker process beside it (the
    symbolic checks and a share of the units of work: ``_run_here``). With an executor (``fedtheory.parallel``): as
    units of work (``fedtheory.checks.scheduling``). The same results every way.
    timings: a list that receives one ``CheckTiming`` per selected check, in registration order.

    Parameters
    ----------
    paper : str, optional
        Only this paper's checks.
    only : iterable of str, optional
        Check ids, dotted prefixes or glob patterns (``--only``).
    profile : {"quick", "full"}, default "quick"
        The profile.
    seed : int, default 0
        The base seed.
    progress : bool, default False
        Show progress.
    runs_dir : str, optional
        Run directories for the checks on logged runs (``--runs``).
    parallel_symbolic : bool, default True
        Use a worker process beside this one.
    executor : object, optional
        A ``fedtheory.parallel`` executor (``--workers``, ``--scheduler``).
    timings : list, optional
        Receives the timings.

    Returns
    -------
    list of CheckResult
        Every row, in registration order.

    Raises
    ------
    ParameterError
        For an unknown profile, or a selection that selects nothing.
    """
    check_choice("profile", profile, PROFILES)
    specs = select(paper, only, profile, runs=runs_dir is not None)
    if executor is not None:
        rows = run_units(specs, executor, profile=profile, seed=seed, runs_dir=runs_dir, progress=progress,
                         timings=timings)
    else:
        with one_blas_thread():
            rows = _run_here(specs, profile, seed, progress, runs_dir, parallel_symbolic, timings)
    drop = record_row_filter(specs, only)  # --only RECORD: that record's row of PAPER.units, not the paper's others
    return _drop_rows(specs, rows, drop, timings) if drop else rows


def _drop_rows(specs, rows: list[CheckResult], drop: set[str], timings: list | None) -> list[CheckResult]:
    """``rows`` without the ids in ``drop`` (per-record rows not selected, ``record_row_filter``); a check that lost
    some keeps its seconds, spread over the rows it kept, and its timing counts those rows."""
    import dataclasses

    kept = [r for r in rows if r.id not in drop]
    for s in specs:
        if not s.record_rows:
            continue
        ids = {f"{rec}.{s.record_rows}" for rec in s.records}
        mine = [r for r in kept if r.id in ids]
        if not mine or not ids & drop:
            continue
        total = sum(r.elapsed_s or 0.0 for r in rows if r.id in ids)
        for r in mine:
            r.elapsed_s = total / len(mine)
        if timings is not None:
            timings[:] = [dataclasses.replace(t, rows=len(mine)) if t.check == s.id else t for t in timings]
    return kept


def _run_here(specs, profile, seed, progress, runs_dir, parallel_symbolic, timings) -> list[CheckResult]:
    """run_checks without an executor: one Session here and, on a machine with more than one core, a second lane in
    one worker process: the symbolic checks and, longest first, the units of work (``plan_units``: checks that share
    costly simulations stay together) that even out the two lanes' recorded seconds. A unit computes what it would
    compute here (``Session.memo`` is a pure cache): the same results, in registration order."""
    session = Session(profile=profile, seed=seed, progress=progress, runs_dir=runs_dir)
    there = _second_lane(specs, profile) if parallel_symbolic and (os.cpu_count() or 1) > 1 and len(specs) > 1 else []
    here = [s for s in specs if s.id not in {t.id for t in there}]
    results: dict[str, list[CheckResult]] = {}
    where: dict[str, str] = {}  # where a check ran, when not here
    futures = {}
    pool, before, bar = None, set(), None
    try:  # from the pool's start: a signal at any point below ends its worker
        if there:
            import concurrent.futures as cf
            import multiprocessing as mp

            from ..plugins import worker_targets

            method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
            before = set(mp.active_children())
            pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context(method), initializer=_lane_init,
                                          initargs=(os.getpid(),))
            plugins = worker_targets()
            futures = {s.id: pool.submit(_run_in_worker, s.id, profile, seed, runs_dir, plugins) for s in there}
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(specs), desc="checks", unit="check")
        for s in here:
            if bar is not None:
                bar.set_postfix_str(s.id)
            results[s.id] = run_spec(s, session)
            if bar is not None:
                bar.update(1)
        for sid, fut in futures.items():
            spec = all_checks()[sid]
            try:
                rows, session.cpu_s[sid] = fut.result()
                results[sid] = [CheckResult(**d) if isinstance(d, dict) else d for d in rows]
                where[sid] = "symbolic worker" if spec.cost == "symbolic" else "worker"
            except Exception:  # noqa: BLE001 - the worker died (e.g. no fork): run it here instead
                results[sid] = run_spec(spec, session)
            if bar is not None:
                bar.update(1)
    except BaseException:  # an error, Ctrl-C, a signal that ends the run (the CLI turns SIGTERM into an exception)
        if pool is not None:
            _stop_lane(pool, before)  # now: never wait for the worker's current check, never leave it behind
            pool = None
        raise
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if timings is not None:
        timings.extend(check_timings(specs, results, where, session.cpu_s))
    return [r for s in specs for r in results[s.id]]


def _lane_init(parent: int) -> None:
    """The worker process's set-up: it ends with its parent. Ctrl-C is the parent's to handle (it stops the worker
    at once); on Linux the kernel kills the worker when the parent dies, even of SIGKILL (``PR_SET_PDEATHSIG``), so
    it is never left behind asleep on its pipe."""
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):  # a forked worker inherits the CLI's handlers
        if sig is not None and signal.getsignal(sig) not in (signal.SIG_IGN, None):
            signal.signal(sig, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def _stop_lane(pool, before: set) -> None:
    """End the worker lane at once: cancel what is queued, terminate the pool's worker process (the children
    started since ``before``; SIGTERM, then SIGKILL after 2 s) and reap it."""
    import multiprocessing as mp

    workers = [p for p in mp.active_children() if p not in before]
    pool.shutdown(wait=False, cancel_futures=True)
    for p in workers:
        if p.is_alive():
            p.terminate()
    for p in workers:
        p.join(2)
        if p.is_alive():
            p.kill()
            p.join()


LANE_BIND_S = 0.05  # two lanes gain little from splitting checks that share a simulation: bind them from 0.05 s


def _second_lane(specs, profile: str) -> list:
    """The checks the worker process runs, in registration order: every symbolic check, and the units of work
    (longest first) that keep the two lanes' recorded seconds (``check_units.json``) closest."""
    units = plan_units(specs, profile, bind_s=LANE_BIND_S)
    by_id = {s.id: s for s in specs}
    load = [0.0, 0.0]  # here, the worker
    lane: dict[str, int] = {}
    for u in sorted(units, key=lambda u: (-u.cost, u.name)):
        symbolic = all(by_id[c].cost == "symbolic" for c in u.check_ids)
        j = 1 if symbolic else int(load[1] < load[0])
        load[j] += u.cost
        for c in u.check_ids:
            lane[c] = j
    return [s for s in specs if lane.get(s.id) == 1]


_LANE: dict[tuple, Session] = {}  # the worker process's Session (one per run: its checks share their memo)


def _run_in_worker(spec_id: str, profile: str, seed: int, runs_dir: str | None = None,
                   plugins: Sequence[str] = ()) -> tuple[list, float]:
    """One check in the worker process, in the lane's Session: its rows (as JSON for a symbolic check) and its CPU
    seconds there."""
    load_plugins(plugins)  # a spawned worker knows only the installed plug-ins
    spec = all_checks()[spec_id]
    key = (profile, seed, runs_dir)
    if key not in _LANE:
        _LANE.clear()
        _LANE[key] = Session(profile=profile, seed=seed, runs_dir=runs_dir)
    session = _LANE[key]
    with one_blas_thread():
        res = run_spec(spec, session)
    return ([r.to_json() for r in res] if spec.cost == "symbolic" else res), session.cpu_s[spec_id]
