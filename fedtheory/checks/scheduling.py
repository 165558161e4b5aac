"""``fedtheory check`` on an executor: the selected checks cut into units of work, longest first.

A unit is a set of checks that run in one :class:`~fedtheory.checks.Session`, so the simulations they share
through ``Session.memo`` are computed once. Units are the connected components of two relations over the
selected checks:

* a declared ``group`` (``@check(..., group=NAME)``: a plug-in says which of its checks share simulations);
* a recorded one: two checks touch the same memo key and computing that key took at least ``BIND_S`` seconds
  in the recorded serial run (``check_units.json``, per profile, written by
  ``python -m fedtheory.checks.scheduling PROFILE ...``). A cheaper shared key is computed again by each unit that
  needs it: cheaper than the parallelism lost by binding the checks together.

A unit's cost (for longest-first submission) is the sum of its checks' recorded seconds (1 s when unknown).
Neither the units nor their order depend on the number of workers, and ``Session.memo`` is a pure cache (a key's
value depends on the key, the profile and the seed alone), so every unit computes what the serial run computes:
the same verdicts and numbers (``tests/test_parallel.py`` compares the JSON records field by field).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from .._validation import ParameterError, check_choice
from ..plugins import load_plugins, worker_targets
from .execution import check_timings, run_spec
from .registry import CheckSpec, all_checks, select
from .results import CheckResult
from .session import PROFILES, Session

__all__ = ["BIND_S", "CheckUnit", "UNITS_FILE", "plan_units", "record_profile", "run_check_unit", "run_units"]

UNITS_FILE = Path(__file__).with_name("check_units.json")
BIND_S = 0.5  # a shared memo key binds its checks into one unit when computing it took at least this long


@dataclass(frozen=True)
class CheckUnit:
    """Checks run in one Session as one task: name (its first check's id, or the declared group), their ids in
    registration order, the expected seconds (from the recorded run; ordering only)."""

    name: str
    check_ids: tuple[str, ...]
    cost: float


def _recorded(profile: str) -> dict[str, Any]:
    try:
        data = json.loads(UNITS_FILE.read_text())
    except (OSError, ValueError):
        return {}
    return data.get("profiles", {}).get(profile, {}).get("checks", {})


def plan_units(specs: Sequence[CheckSpec], profile: str = "quick", recorded: dict[str, Any] | None = None,
               bind_s: float = BIND_S) -> list[CheckUnit]:
    """The units of work for ``specs`` (see the module docstring), in the order of their first check."""
    check_choice("profile", profile, PROFILES)
    rec = _recorded(profile) if recorded is None else recorded
    ids = [s.id for s in specs]
    parent = {i: i for i in ids}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb, key=ids.index)] = min(ra, rb, key=ids.index)

    owner: dict[str, str] = {}
    for s in specs:
        if s.group:
            key = "group:" + s.group
            if key in owner:
                union(owner[key], s.id)
            owner.setdefault(key, s.id)
    cost_of_key: dict[str, float] = {}  # from every recorded check: the one computing a key may be unselected
    for entry in rec.values():
        for k, sec in (entry.get("computes") or {}).items():
            cost_of_key[k] = max(cost_of_key.get(k, 0.0), float(sec))
    for s in specs:
        entry = rec.get(s.id, {})
        for k in list((entry.get("computes") or {})) + list(entry.get("reuses") or []):
            if cost_of_key.get(k, 0.0) < bind_s:
                continue
            if k in owner:
                union(owner[k], s.id)
            owner.setdefault(k, s.id)
    members: dict[str, list[str]] = {}
    for i in ids:
        members.setdefault(find(i), []).append(i)
    by_id = {s.id: s for s in specs}
    units = []
    for root, checks in members.items():
        groups = sorted({by_id[c].group for c in checks if by_id[c].group})
        name = groups[0] if len(groups) == 1 and all(by_id[c].group == groups[0] for c in checks) else root
        cost = sum(float(rec.get(c, {}).get("s", 1.0)) for c in checks)
        units.append(CheckUnit(name, tuple(checks), round(cost, 3)))
    return units


def run_check_unit(check_ids: Sequence[str], profile: str, seed: int, runs_dir: str | None = None,
                   plugins: Sequence[str] = ()) -> list[list[CheckResult]]:
    """The task of one unit: its checks in one Session, in order (loads ``plugins`` first: a worker process
    knows only the installed plug-ins and ``$FEDTHEORY_PLUGINS``)."""
    load_plugins(plugins)
    specs = all_checks()
    session = Session(profile=profile, seed=seed, runs_dir=runs_dir)
    return [run_spec(specs[c], session) for c in check_ids]


def run_units(specs: Sequence[CheckSpec], executor: Any, *, profile: str = "quick", seed: int = 0,
              runs_dir: str | None = None, progress: bool = False, retries: int = 1,
              plugins: Sequence[str] | None = None, timings: list | None = None) -> list[CheckResult]:
    """Run ``specs`` as units on ``executor`` (a :class:`fedtheory.parallel.Executor`); results in the order of
    ``specs``. A unit that fails every attempt gives each of its checks an 'error' row naming the unit and the
    error (never a finding: exit status 3); a ParameterError from a check is raised, as in the serial run.
    plugins: what each task loads first (default ``fedtheory.plugins.worker_targets()``: what this process loaded
    with --plugin or $FEDTHEORY_PLUGINS). timings: a list that receives each check's ``CheckTiming``."""
    from ..parallel import Task
    from ..sim.engine import versions

    units = plan_units(specs, profile)
    plugins = worker_targets() if plugins is None else list(plugins)
    tasks = [Task(u.name, run_check_unit, (u.check_ids, profile, seed, runs_dir, plugins), cost=u.cost) for u in units]
    out = executor.run(tasks, retries=retries, progress=progress, desc="checks")
    by_spec = {s.id: s for s in specs}
    rows: dict[str, list[CheckResult]] = {}
    raise_later = None
    for u, res in zip(units, out.results):
        fail = out.failed(u.name)
        if fail is None:
            for c, r in zip(u.check_ids, res):
                rows[c] = r
            continue
        if isinstance(fail.exception, ParameterError) and raise_later is None:
            raise_later = fail.exception
        for c in u.check_ids:
            s = by_spec[c]
            rows[c] = [CheckResult(s.id, s.paper, s.kind, "error", seed=seed, versions=versions(),
                                   detail=f"unit of work {u.name} failed on every "
                                          f"attempt ({fail.attempts}): {fail.error}",
                                   extra={"task": u.name, "traceback": fail.traceback})]
    if raise_later is not None:
        raise raise_later
    if timings is not None:
        timings.extend(check_timings(specs, rows, {c: f"unit {u.name}" for u in units for c in u.check_ids}))
    return [r for s in specs for r in rows[s.id]]


def record_profile(profile: str, seed: int = 0, only: Sequence[str] | None = None) -> dict[str, Any]:
    """Run ``profile`` serially in this process, one Session, and record per check its seconds and the memo keys
    it computed (with their seconds) and reused: the input of :func:`plan_units`."""
    specs = select(None, only, profile)
    session = Session(profile=profile, seed=seed)
    checks: dict[str, Any] = {}
    t0 = time.perf_counter()
    for s in specs:
        session.memo_log = []
        t = time.perf_counter()
        run_spec(s, session)
        log = session.memo_log
        checks[s.id] = {"s": round(time.perf_counter() - t, 3),
                        "computes": {e["key"]: round(e["s"], 3) for e in log if e["computed"]},
                        "reuses": sorted({e["key"] for e in log if not e["computed"]})}
    return {"seed": seed, "total_s": round(time.perf_counter() - t0, 1), "checks": checks}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedtheory.checks.scheduling PROFILE [PROFILE ...]``: record the profiles, rewrite
    check_units.json."""
    import platform

    args = list(sys.argv[1:] if argv is None else argv) or list(PROFILES)
    for a in args:
        check_choice("profile", a, PROFILES)
    try:
        data = json.loads(UNITS_FILE.read_text())
    except (OSError, ValueError):
        data = {}
    data.setdefault("profiles", {})
    data["note"] = ("recorded serial runs of `fedtheory check` (seed 0): per check its seconds and the memo keys it "
                    "computed and reused; used only to cut the checks into units of work and order them "
                    "(python -m fedtheory.checks.scheduling PROFILE rewrites it)")
    for a in args:
        rec = record_profile(a)
        rec["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
        data["profiles"][a] = rec
        print(f"{a}: {len(rec['checks'])} checks in {rec['total_s']} s", file=sys.stderr)
    UNITS_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    if "--help" in sys.argv or "-h" in sys.argv:
        print(main.__doc__)
        sys.exit(0)
    sys.exit(main())
