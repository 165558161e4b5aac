"""The symbolic results shipped with the package equal a fresh computation, for every record with an order."""
import json

import pytest

from fedtheory.checks.refresh_symbolic import compute_all
from fedtheory.checks.symbolic_cache import SHIPPED_SYMBOLIC


@pytest.mark.slow
def test_shipped_symbolic_cache_is_current():
    shipped = json.loads(SHIPPED_SYMBOLIC.read_text())
    fresh = compute_all()
    assert set(fresh) == set(shipped), "stale cache: run python -m fedtheory.checks.refresh_symbolic"
    for key, value in fresh.items():
        assert json.loads(json.dumps(value)) == shipped[key]


def test_expressions_come_back_from_the_cache_without_eval():
    """issue 26: FedInit's admissible step (the roots of lambda_max(eta) = target) is a shipped symbolic result; its
    expressions are rebuilt from their srepr text by a reader that builds sympy numbers, symbols, sums, products
    and powers only: anything else in a cache file is rejected, never run."""
    import sympy as sp

    from fedtheory.checks.symbolic_cache import expr_from_srepr
    from fedtheory.papers.fedinit import records as F
    from fedtheory.papers.fedinit.checks.common import _lambda_max_roots

    target, roots = _lambda_max_roots()
    assert roots == sp.solve(sp.Eq(F.LAMBDA_MAX.expr, target), F.eta)
    e = sp.Symbol("x", positive=True) ** sp.Rational(1, 2) * sp.Float(0.25) - 3 * sp.Symbol("y", integer=True)
    assert expr_from_srepr(sp.srepr(e)) == e
    for bad in ["__import__('os').system('true')", "Add(1, open('f'))", "Symbol('x', real='yes')",
                "Integer(2).evalf()", "Add(", "lambda: 0"]:
        with pytest.raises(ValueError):
            expr_from_srepr(bad)
