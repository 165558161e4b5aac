"""Formulas as text, with bounded work: what ``fedtheory explain``, the units verdicts and the conditions print.

sympy's printer sorts the terms of every sum it prints: a 20,000-term bound took 12 s to print and a larger one
exhausted the memory. A formula of more than :data:`MAX_PRINTED_NODES` nodes (sympy's expression tree: symbols,
numbers, operations) is printed in part: its first terms, then what was left out, in words (e.g. ``x + x**2/2 + ...
[a sum of 20000 terms, over the 2000 nodes fedtheory prints (fedtheory.theory.printing.MAX_PRINTED_NODES)]``).
"""
from __future__ import annotations

from typing import Any

import sympy as sp

__all__ = ["MAX_PRINTED_NODES", "MAX_SHOWN_PARTS", "count_nodes", "formula_text"]

#: The largest formula (in nodes of sympy's tree) printed whole.
MAX_PRINTED_NODES = 2000
#: Of a larger formula: how many of its terms (factors, arguments) are printed.
MAX_SHOWN_PARTS = 6

_WORDS = {sp.Add: ("a sum", "terms", " + "), sp.Mul: ("a product", "factors", "*")}


def count_nodes(expr: Any, stop: int | None = None) -> int:
    """The nodes of ``expr``'s tree, counted up to ``stop + 1`` at most (so a huge tree costs only ``stop``)."""
    if not isinstance(expr, sp.Basic):
        return 1
    n = 0
    for _ in sp.preorder_traversal(expr):
        n += 1
        if stop is not None and n > stop:
            break
    return n


def formula_text(expr: Any, limit: int = MAX_PRINTED_NODES) -> str:
    """``sympy.sstr(expr)`` when ``expr`` has at most ``limit`` nodes; else its first :data:`MAX_SHOWN_PARTS`
    terms (each printed whole if small) followed by what was left out, in one bracketed phrase."""
    if not isinstance(expr, sp.Basic):
        return str(expr)
    if count_nodes(expr, limit) <= limit:
        return sp.sstr(expr)
    what, parts, joiner = _WORDS.get(expr.func, (f"a {expr.func.__name__}", "arguments", ", "))
    budget = max(limit // (2 * MAX_SHOWN_PARTS), 1)
    shown = []
    for a in expr.args[:MAX_SHOWN_PARTS]:
        shown.append(formula_text(a, budget) if count_nodes(a, budget) > budget else sp.sstr(a))
    inner = joiner.join(shown) + (joiner + "..." if len(expr.args) > MAX_SHOWN_PARTS else "")
    if expr.func not in _WORDS:
        inner = f"{expr.func.__name__}({inner})"
    return (f"{inner} [{what} of {len(expr.args)} {parts}, over the {limit} nodes fedtheory prints whole "
            "(fedtheory.theory.printing.MAX_PRINTED_NODES)]")
