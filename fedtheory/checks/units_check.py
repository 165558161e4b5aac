"""Deprecated (since 0.2, removed in 0.3): ``fedtheory.checks.units_check`` is now ``fedtheory.checks.dimensions``,
a name that says what it holds. A name imported from here still resolves there, with a FedTheoryDeprecationWarning."""
from ..deprecation import renamed_module
from . import dimensions as _new

__getattr__ = renamed_module(__name__, _new)
