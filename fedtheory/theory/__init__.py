"""What papers state, encoded once in sympy: the records a paper plug-in writes.

A record is a :class:`Bound` (``lhs <= expr`` under :class:`Condition` s, with :class:`Definition` s and a
:class:`StatedOrder`), an :class:`Identity`, an :class:`OrderStatement` or a :class:`Claim`; symbols come
from a :class:`SymbolSet`, each with its dimension in the loss [f] and the parameter [w] (:func:`dimension_of`,
``fedtheory.theory.dimensions``). :func:`register` makes a record visible to ``fedtheory list / explain / check``.
The built-in papers (``fedinit``, ``oledfl``, ``fedmrur``, ``fedshift``) are plug-ins like any other, each a package
under ``fedtheory/papers/``: see ``fedtheory.plugins`` and docs/extending.md.
"""
from __future__ import annotations

from .core import (ID_RULE, MAX_ID_LENGTH, TOOL_QUANTITIES, Bound, Claim, ClaimOutcome, Condition, Definition,
                   Evaluator, Identity, MissingValuesError, OrderStatement, PaperInfo, Record, StatedOrder, SymbolInfo,
                   SymbolSet, check_id, get, paper_info, record_evaluations, register, register_paper, registered_ids,
                   registry, stand_ins, standing_in)
from .assumptions import (ASSUMPTIONS, CATALOGUE, Assumption, AssumptionConstant, AssumptionRef, bind,
                          parse_reference, register_assumption)
from .dimensions import DIMENSION_SYSTEM, LOSS, PARAMETER, DimensionError, UnknownDimension, Units, UnitsWarning, dimension_of
from .printing import formula_text
from .rates import RateReport, TermGrowth, check_order, expand_sum, growth


def papers() -> list[str]:
    """The papers with records registered so far (``fedtheory.plugins.papers`` loads the plug-ins first)."""
    return sorted({r.paper for r in registry().values()})


__all__ = ["PaperInfo", "paper_info", "record_evaluations", "register_paper", "stand_ins", "standing_in",
           "ASSUMPTIONS", "CATALOGUE", "Assumption", "AssumptionConstant", "AssumptionRef", "bind", "parse_reference",
           "DIMENSION_SYSTEM", "DimensionError", "UnknownDimension", "ID_RULE", "LOSS", "MAX_ID_LENGTH", "PARAMETER",
           "Units", "UnitsWarning", "check_id", "dimension_of", "formula_text", "TOOL_QUANTITIES", "MissingValuesError",
           "Bound", "Claim", "ClaimOutcome", "Condition",
           "Definition", "Evaluator", "Identity", "OrderStatement", "RateReport",
           "Record", "StatedOrder", "SymbolInfo", "SymbolSet", "check_order", "expand_sum", "get", "papers", "register",
           "register_assumption", "registered_ids", "registry", "TermGrowth", "growth"]
