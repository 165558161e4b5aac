"""Deprecated (since 0.2, removed in 0.3): ``fedtheory.scaffold`` is now ``fedtheory.skeleton`` (the files
``fedtheory new-paper`` writes; ``fedtheory.sim.scaffold`` is the SCAFFOLD algorithm). A name imported from here still
resolves there, with a FedTheoryDeprecationWarning."""
from . import skeleton as _new
from .deprecation import renamed_module

__getattr__ = renamed_module(__name__, _new)
