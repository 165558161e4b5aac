"""What papers state, encoded once in sympy: the records a paper plug-in writes.

A record is a :class:`Bound` (``lhs <= expr`` under :class:`Condition` s, with :class:`Definition` s and the
:class:`Order` it states), an :class:`Identity`, an :class:`OrderStatement` (a result stated only as an order) or a
:class:`Claim`; symbols come from a :class:`SymbolSet`, each with its dimension in the loss [f] and the parameter [w]
(:func:`dimension_of`). :func:`register` makes a record visible to ``fedtheory list / explain / check``; the lookups
that load every plug-in first are ``fedtheory.plugins.records()`` / ``record(ID)`` / ``papers()``. The assumptions a
record names come from the catalogue (:data:`CATALOGUE`; a plug-in adds its own with :func:`register_assumption`).
"""
from __future__ import annotations

from ..deprecation import face_aliases
from . import (
    assumptions as _assumptions,
    core as _core,
    dimensions as _dimensions,
    printing as _printing,
    rates as _rates,
)
from .assumptions import CATALOGUE, AssumptionConstant, register_assumption
from .core import (
    Bound,
    Claim,
    ClaimOutcome,
    Condition,
    Definition,
    Evaluator,
    Identity,
    MissingValuesError,
    Order,
    OrderStatement,
    Record,
    SymbolSet,
    paper_info,
    register,
    register_paper,
)
from .dimensions import DimensionError, Units, UnitsWarning, UnknownDimension, dimension_of
from .rates import expand_sum, growth

__all__ = ["Bound", "Identity", "Claim", "ClaimOutcome", "OrderStatement", "Order", "Definition", "Condition", "Record",
           "SymbolSet", "Evaluator", "MissingValuesError", "register", "register_paper", "paper_info", "CATALOGUE",
           "AssumptionConstant", "register_assumption", "Units", "UnitsWarning", "UnknownDimension", "DimensionError",
           "dimension_of", "expand_sum", "growth"]


def _registry_lookup(name):
    return lambda: getattr(_core, name)


_PLUGINS = ("use fedtheory.plugins.{} (it loads the plug-ins first; "
            "the theory layer's table holds only what was imported)")
__getattr__ = face_aliases(__name__, {
    "StatedOrder": (lambda: Order, "renamed Order (the order a record states; an OrderStatement is a record)"),
    "papers": (lambda: _papers, _PLUGINS.format("papers()")),
    "registry": (_registry_lookup("registry"), _PLUGINS.format("records()")),
    "get": (_registry_lookup("get"), _PLUGINS.format("record(ID)") + ", or the record object of your own records.py"),
    "registered_ids": (_registry_lookup("registered_ids"), _PLUGINS.format("records()")),
    **{name: ((lambda n=name: getattr(_core, n)), "not part of the plug-in API: import it from fedtheory.theory.core")
       for name in ("PaperInfo", "record_evaluations", "stand_ins", "standing_in", "ID_RULE", "MAX_ID_LENGTH",
                    "TOOL_QUANTITIES", "check_id", "SymbolInfo")},
    **{name: ((lambda n=name: getattr(_assumptions, n)), "not part of the plug-in API: import it from "
              "fedtheory.theory.assumptions") for name in ("ASSUMPTIONS", "Assumption", "AssumptionRef", "bind",
                                                           "parse_reference")},
    **{name: ((lambda n=name: getattr(_dimensions, n)), "not part of the plug-in API: import it from "
              "fedtheory.theory.dimensions") for name in ("DIMENSION_SYSTEM", "LOSS", "PARAMETER")},
    **{name: ((lambda n=name: getattr(_rates, n)), "not part of the plug-in API: import it from fedtheory.theory.rates")
       for name in ("RateReport", "TermGrowth", "check_order")},
    "formula_text": (lambda: _printing.formula_text, "not part of the plug-in API: import it from "
                     "fedtheory.theory.printing"),
})


def _papers() -> list[str]:
    return sorted({r.paper for r in _core.registry().values()})
