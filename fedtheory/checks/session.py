"""One invocation of the checks: :class:`Session` (profile, base seed, a memo of the simulations the checks share)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from .._validation import ParameterError, check_choice

__all__ = ["PROFILES", "Session"]

PROFILES = ("quick", "full")


@dataclass
class Session:
    """One invocation: profile, base seed, a memo of simulation results shared by the checks.

    memo_log: when a list, every ``memo`` call appends {"key": repr(key), "computed": bool, "s": seconds}
    (how ``fedtheory.checks.scheduling`` learns which checks share which simulations).

    A check receives it: ``seeds(n)`` gives reproducible run seeds, ``pick(SIZES)`` the profile's sizes,
    ``memo(key, fn)`` a simulation shared with other checks, ``initial_point(problem)`` the common start.

    Parameters
    ----------
    profile : {"quick", "full"}, default "quick"
        How large the checks run.
    seed : int, default 0
        The base seed every run seed derives from.
    progress : bool, default False
        Whether checks may show progress bars.
    runs_dir : str, optional
        The folder of runs logged by ``fedtheory train`` (``--runs DIR``), for checks on logged runs.
    memo_log : list of dict, optional
        When a list, every ``memo`` call appends what it computed or reused.
    _memo : dict, optional
        Internal: the memoized results. Leave it out.
    cpu_s : dict of str to float, optional
        Filled with each check's CPU seconds in this process.

    Raises
    ------
    ParameterError
        For an unknown profile.
    """

    profile: str = "quick"
    seed: int = 0
    progress: bool = False
    runs_dir: str | None = None
    memo_log: list[dict[str, Any]] | None = None
    _memo: dict[Any, Any] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)  # check id -> CPU seconds of this process (run_spec)

    def __post_init__(self):
        check_choice("profile", self.profile, PROFILES)

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    def pick(self, table: Mapping[str, Any]) -> Any:
        """The entry of a per-profile table ``{"quick": ..., "full": ...}`` for this session's profile.

        Every paper's checks read their profile-dependent sizes (seeds, rounds, grids) this way, from a module-level
        ``SIZES`` table, e.g. ``R = session.pick(SIZES)["runs"]``, rather than branching on ``session.quick``."""
        missing = [pr for pr in PROFILES if pr not in table]
        if missing:
            raise ParameterError("table", sorted(table), f"a mapping with an entry for every profile {PROFILES}")
        return table[self.profile]

    def initial_point(self, problem: Any, scale: float = 3.0) -> np.ndarray:
        """The checks' common starting point: ``problem.initial_point(self.seed, scale)``, i.e.
        ``w* + scale * z / sqrt(d)`` with ``z`` the standard normal draw of ``np.random.default_rng(self.seed)``
        (every paper's checks start from it, so runs of different checks on one problem share their start)."""
        return problem.initial_point(self.seed, scale=scale)

    def seeds(self, n: int) -> list[int]:
        """n run seeds derived from the session seed (distinct, reproducible)."""
        return [int(s) for s in np.random.SeedSequence(self.seed).generate_state(n, dtype=np.uint32)]

    def memo(self, key, fn: Callable[[], Any]):
        """``fn()`` computed once per session under ``key``; a reuse reports the simulations it ran again, so
        every check that uses a shared run lists it (``CheckResult.extra['simulations']``)."""
        from ..sim.simulation_log import last_simulation, record_simulations, replay_simulations

        t0 = time.perf_counter()
        computed = key not in self._memo
        if computed:
            with record_simulations() as sims:
                value = fn()
                last = last_simulation()
            self._memo[key] = (value, list(sims), last)
        else:
            replay_simulations(self._memo[key][1], self._memo[key][2])
        if self.memo_log is not None:
            self.memo_log.append({"key": repr(key), "computed": computed, "s": time.perf_counter() - t0})
        return self._memo[key][0]
