"""Deprecated (since 0.2, removed in 0.3): ``fedtheory.checks.units`` is now ``fedtheory.checks.scheduling``,
a name that says what it holds. A name imported from here still resolves there, with a FedTheoryDeprecationWarning."""
from ..deprecation import renamed_module
from . import scheduling as _new

__getattr__ = renamed_module(__name__, _new)
