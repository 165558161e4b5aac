"""The cache of symbolic results (:func:`cached_symbolic`): the user's cache, then the one shipped with the package
(``symbolic_cache.json``, rewritten by ``python -m fedtheory.checks.refresh_symbolic``), then computed; expressions
read back from their srepr text without eval (:func:`expr_from_srepr`)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from ..files import cache_dir

__all__ = ["SHIPPED_SYMBOLIC", "cached_symbolic", "expr_from_srepr", "fresh_symbolic", "symbolic_key", "symbolic_part",
           "symbolic_parts"]


SHIPPED_SYMBOLIC = Path(__file__).with_name("symbolic_cache.json")


def symbolic_key(key_parts: Sequence[str]) -> str:
    """sha256 of the rate-check code and the exact sympy text of the inputs."""
    from ..theory import rates

    code = Path(rates.__file__).read_bytes()
    return hashlib.sha256(b"\0".join([code] + [p.encode() for p in key_parts])).hexdigest()


def _shipped() -> dict:
    try:
        return json.loads(SHIPPED_SYMBOLIC.read_text())
    except (OSError, ValueError):
        return {}


_FRESH: dict[str, Any] | None = None  # inside fresh_symbolic(): every result computed anew and collected here
_SYMBOLIC_PARTS: list[Callable[[], Any]] = []


def symbolic_part(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Declare a function that runs a check's symbolic computations (``cached_symbolic``) without its simulations,
    so that the shipped cache holds them (``python -m fedtheory.checks.refresh_symbolic``)."""
    _SYMBOLIC_PARTS.append(fn)
    return fn


def symbolic_parts() -> list[Callable[[], Any]]:
    return list(_SYMBOLIC_PARTS)


class fresh_symbolic:
    """``with fresh_symbolic() as results:``: every ``cached_symbolic`` inside computes anew (no cache read or
    written) and its JSON result is collected in ``results`` under its key (what refresh_symbolic ships)."""

    def __enter__(self) -> dict[str, Any]:
        global _FRESH
        self._outer, _FRESH = _FRESH, {}
        return _FRESH

    def __exit__(self, *exc) -> None:
        global _FRESH
        _FRESH = self._outer


def cached_symbolic(key_parts: Sequence[str], compute: Callable[[], dict]) -> dict:
    """Memoize a symbolic computation, keyed by ``symbolic_key``. Lookup: the user cache
    (~/.cache/fedtheory/symbolic), then the cache shipped with the package (tests recompute every
    entry of it), then compute. FEDTHEORY_CACHE='' disables both caches.

    Parameters
    ----------
    key_parts : sequence of str
        The exact text of the inputs (e.g. the ``sympy.srepr`` of the expressions); the key also covers the code of
        the rate check.
    compute : callable
        ``compute() -> dict`` of JSON values.

    Returns
    -------
    dict
        The result, from a cache or computed.
    """
    key = symbolic_key(key_parts)
    if _FRESH is not None:
        out = json.loads(json.dumps(compute()))
        _FRESH[key] = out
        return out
    d = cache_dir("symbolic")
    if d is None:
        return compute()
    path = d / f"{key}.json"
    if path.exists():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    out = _shipped().get(key)
    if out is None:
        out = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out))
        os.replace(tmp, path)
    except OSError:
        pass
    return out


def expr_from_srepr(text: str):
    """A sympy expression back from its ``sympy.srepr`` text (what ``cached_symbolic`` results store expressions as),
    without eval: only Add, Mul, Pow, Symbol (with its assumptions), Integer, Rational and Float are rebuilt; any
    other text is a ValueError (a cache file is data, never code)."""
    import ast

    import sympy as sp

    calls = {"Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow, "Symbol": sp.Symbol, "Integer": sp.Integer,
             "Rational": sp.Rational, "Float": sp.Float}

    def build(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, str, bool)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, int):
            return -node.operand.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in calls:
            kwargs = {k.arg: build(k.value) for k in node.keywords}
            if node.func.id != "Symbol" and node.func.id != "Float" and kwargs:
                raise ValueError(f"unexpected keywords in {node.func.id}")
            if node.func.id == "Symbol" and not all(isinstance(v, bool) for v in kwargs.values()):
                raise ValueError("a Symbol's assumptions must be True or False")
            return calls[node.func.id](*[build(a) for a in node.args], **kwargs)
        raise ValueError(f"not an expression this reader rebuilds: {ast.dump(node)[:80]}")

    try:
        return build(ast.parse(text, mode="eval").body)
    except (SyntaxError, TypeError, RecursionError) as exc:
        raise ValueError(f"not an srepr expression: {exc}") from None
