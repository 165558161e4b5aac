"""Parameter validation for plug-ins: the errors fedtheory raises on purpose, and the checks its own parameters go
through (a value outside its range is a :class:`ParameterError` naming the parameter, the value and what is allowed;
the CLI turns it into exit status 2). A paper plug-in's problems, algorithms and checks use the same.
:class:`FedTheoryDeprecationWarning` marks a name or a parameter that a later release removes (filter it by
this class; CHANGELOG.md says what to write instead)."""
from ._validation import (
                          FedTheoryDeprecationWarning,
                          FedTheoryError,
                          ParameterError,
                          check_choice,
                          check_finite,
                          check_float,
                          check_int,
                          check_random_state,
                          one_line,
                          per_run,
                          printable,
)

__all__ = ["FedTheoryDeprecationWarning", "FedTheoryError", "ParameterError", "check_choice", "check_finite",
           "check_float", "check_int", "check_random_state", "one_line", "per_run", "printable"]
