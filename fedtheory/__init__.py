"""fedtheory: check federated-learning theorems against measurement."""
__version__ = "0.1.0"

from ._validation import FedTheoryError, ParameterError  # noqa: E402 - the errors every layer raises

__all__ = ["FedTheoryError", "ParameterError", "__version__"]
