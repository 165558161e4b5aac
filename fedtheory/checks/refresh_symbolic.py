"""Regenerate the symbolic-result cache shipped with the package: python -m fedtheory.checks.refresh_symbolic

Every record with a stated order is rate-checked from scratch and the result stored under its key
(the hash of the exact sympy inputs and the rate-check code). tests/test_symbolic_cache.py recomputes
every entry and fails if the file is stale or incomplete.
"""
from __future__ import annotations

import json

from ..plugins import records
from ..theory import Bound, OrderStatement
from ..theory.rates import check_order
from .verdicts import rate_inputs, rate_key
from .base import SHIPPED_SYMBOLIC, symbolic_key


def records_with_orders():
    return [r for r in records().values()
            if (isinstance(r, Bound) and r.order is not None) or (isinstance(r, OrderStatement) and r.explicit is not None)]


def compute_all() -> dict:
    out = {}
    for rec in records_with_orders():
        explicit, order, conditions = rate_inputs(rec)
        out[symbolic_key(rate_key(explicit, order, conditions))] = check_order(explicit, order, conditions=conditions).as_dict()
    return out


def main() -> None:
    data = compute_all()
    SHIPPED_SYMBOLIC.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(data)} entries to {SHIPPED_SYMBOLIC}")


if __name__ == "__main__":
    main()
