"""The empirical layer's algorithm registry is the sim layer's (``fedtheory.sim.algorithms``): the same names,
factories and plug-ins, so every rule has one implementation. Kept as a module for its users' imports."""
from ..sim.algorithms import *  # noqa: F401,F403
from ..sim.algorithms import __all__  # noqa: F401
