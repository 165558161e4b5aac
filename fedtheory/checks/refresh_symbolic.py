"""Regenerate the symbolic-result cache shipped with the package: python -m fedtheory.checks.refresh_symbolic

Every symbolic computation the built-in checks make (``cached_symbolic``: the rate checks of every record with a
stated order, under each reading, their negative controls, and the symbolic parts of simulation checks declared with
``symbolic_part``) is computed from scratch and stored under its key (the hash of the exact sympy inputs and the
rate-check code). tests/test_symbolic_cache.py recomputes every entry and fails if the file is stale or incomplete.
"""
from __future__ import annotations

import json

from ..plugins import BUILTIN_PAPERS
from .execution import run_spec
from .registry import all_checks
from .session import PROFILES, Session
from .symbolic_cache import SHIPPED_SYMBOLIC, fresh_symbolic, symbolic_parts


def compute_all() -> dict:
    """Every symbolic result of the built-in papers' symbolic checks (all profiles), their controls and the declared
    symbolic parts of their simulation checks, computed anew: key -> JSON result."""
    specs = [s for s in all_checks().values() if s.paper in BUILTIN_PAPERS and s.cost == "symbolic"]
    with fresh_symbolic() as out:
        for spec in specs:
            for profile in PROFILES:
                run_spec(spec, Session(profile=profile))
            if spec.control is not None:
                spec.control.fn(Session())
        for part in symbolic_parts():
            part()
    return dict(out)


def main() -> None:
    data = compute_all()
    SHIPPED_SYMBOLIC.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(data)} entries to {SHIPPED_SYMBOLIC}")


if __name__ == "__main__":
    main()
