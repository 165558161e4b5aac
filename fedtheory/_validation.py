"""Up-front parameter validation (scikit-learn style): errors name the parameter, the value and the range."""
from __future__ import annotations

import numbers
import re
from typing import Any, Iterable

import numpy as np


class FedTheoryError(Exception):
    """Base class of the errors fedtheory raises on purpose.

    The command line turns one into a one-line message and exit status 2 (bad usage or input), never a traceback;
    any other exception from a check is a failure of the check (exit status 3).

    Parameters
    ----------
    *args : object
        The exception's arguments, as for :class:`Exception`; the first is the message.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)


class FedTheoryDeprecationWarning(FutureWarning):
    """A plug-in uses an API of an earlier release that still works for one more release: the message says what to
    change, where. A FutureWarning, so that it is shown by default (a DeprecationWarning is hidden outside
    ``__main__``); the command line prints it in one line.

    Parameters
    ----------
    *args : object
        The warning's arguments, as for :class:`Warning`; the first is the message.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*args)


class ParameterError(FedTheoryError, ValueError):
    """A parameter is outside its allowed range. ``str(err)`` names parameter, value and range.

    Also a :class:`ValueError`, so code that catches ``ValueError`` catches it.

    Parameters
    ----------
    name : str
        The parameter, as the user wrote it (``"lr"``, ``"--budget"``).
    value : object
        The value given; the message shows a short repr of it (an array by its shape).
    allowed : str
        What is allowed, as the end of the sentence "NAME must be ..." (``"a finite real number > 0"``).
    """

    def __init__(self, name: str, value: Any, allowed: str):
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"{name}={_shown(value)} is invalid: {name} must be {allowed}")

    def __reduce__(self):  # crosses process boundaries (worker processes, Dask) intact
        return (type(self), (self.name, self.value, self.allowed))


def _shown(value: Any) -> str:
    """repr of a scalar; a short sequence as its list, a long one by its shape; anything else, a short repr."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged and the like
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."
    if arr.ndim == 0:
        return repr(value)
    if arr.size <= 8:
        return repr(arr.tolist())
    return f"array(shape={arr.shape})"


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as int, or raise ParameterError naming ``name`` and ``[low, high]``.

    A real number with an integral value (``3.0``) is accepted as that integer; a bool is not an integer here.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message.
    value : object
        The value to check.
    low, high : int, optional
        The inclusive bounds; ``None`` leaves that side open.

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    ParameterError
        When ``value`` is not an integer or lies outside ``[low, high]``.
    """
    allowed = _range_text("an integer", low, high, True, True)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer() and not isinstance(value, bool):
            value = int(value)
        else:
            raise ParameterError(name, value, allowed)
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ParameterError(name, value, allowed)
    return value


def check_float(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_inclusive: bool = True,
    high_inclusive: bool = True,
    size: int | None = None,
) -> np.ndarray | float:
    """Validate a real scalar, or an array of length ``size`` (one value per run).

    Every value must be finite and inside the range; the error names the first one that is not.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message.
    value : object
        A real number, or (when ``size`` is given) a sequence of ``size`` real numbers.
    low, high : float, optional
        The bounds of the range; ``None`` leaves that side open.
    low_inclusive, high_inclusive : bool, default True
        Whether ``low`` (``high``) itself is allowed.
    size : int, optional
        The number of runs: a one-dimensional ``value`` must have this length. Without it only a scalar is allowed.

    Returns
    -------
    float or numpy.ndarray
        A float for a scalar input, else a float64 array of shape ``(size,)`` (a copy).

    Raises
    ------
    ParameterError
        When a value is not a finite real number in the range, or the array has the wrong shape.
    """
    allowed = _range_text("a finite real number", low, high, low_inclusive, high_inclusive)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(name, value, allowed) from None
    if arr.ndim > 1 or (arr.ndim == 1 and size is None):
        raise ParameterError(name, value, allowed + " (a scalar" + (", or one value per run)" if size else ")"))
    if arr.ndim == 1 and arr.shape[0] != size:
        raise ParameterError(name, value, f"{allowed}, given as a scalar or as {size} values (one per run)")
    bad = ~np.isfinite(arr)
    if low is not None:
        bad |= (arr < low) if low_inclusive else (arr <= low)
    if high is not None:
        bad |= (arr > high) if high_inclusive else (arr >= high)
    if np.any(bad):
        shown = arr if arr.ndim == 0 else arr[np.argmax(bad)]
        raise ParameterError(name, float(shown), allowed)
    if arr.ndim == 0:
        return float(arr)
    return arr.copy()


def check_finite(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array, or a ParameterError naming ``name`` and the first non-finite entry.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message.
    value : array_like
        Numbers of any shape.

    Returns
    -------
    numpy.ndarray
        ``value`` as a float64 array (not copied when it already is one).

    Raises
    ------
    ParameterError
        When an entry is NaN or infinite: the message counts them and gives the first one's index.
    """
    arr = np.asarray(value, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
        raise ParameterError(name, f"array with {int(bad.sum())} non-finite entries (first at index {where}: "
                             f"{arr[where]})", "an array of finite numbers")
    return arr


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``choices``, or raise a ParameterError listing them.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message.
    value : object
        The value to check (compared with ``in``, that is by equality).
    choices : iterable
        The allowed values.

    Returns
    -------
    object
        ``value`` unchanged.

    Raises
    ------
    ParameterError
        When ``value`` is not among ``choices``; the message lists their reprs.
    """
    choices = tuple(choices)
    if value not in choices:
        raise ParameterError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def per_run(value: Any, runs: int) -> np.ndarray:
    """Broadcast a scalar or a (runs,) array to a float64 array of shape (runs,).

    A hyperparameter given once for every run, or once per run of a batch, is read this way.

    Parameters
    ----------
    value : float or array_like
        A scalar, or one value per run.
    runs : int
        The number of runs.

    Returns
    -------
    numpy.ndarray
        A float64 array of shape ``(runs,)``.

    Raises
    ------
    ParameterError
        When ``value`` is an array of any other shape (named ``per-run parameter``).
    """
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return np.full(runs, float(arr))
    if arr.shape != (runs,):
        raise ParameterError("per-run parameter", value, f"a scalar or an array of shape ({runs},)")
    return arr


def check_random_state(random_state: Any) -> np.random.Generator:
    """int / None / SeedSequence / Generator -> Generator (one convention everywhere).

    Parameters
    ----------
    random_state : int, None, numpy.random.SeedSequence or numpy.random.Generator
        A non-negative seed, ``None`` (fresh entropy: not reproducible), a seed sequence, or a generator, which is
        returned as it is (and advanced by whoever draws from it).

    Returns
    -------
    numpy.random.Generator
        ``numpy.random.default_rng(random_state)``, or ``random_state`` itself when it is a generator.

    Raises
    ------
    ParameterError
        For a negative integer or any other type.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(random_state, numbers.Integral) and random_state < 0:
            raise ParameterError("random_state", random_state, "a non-negative integer, a SeedSequence or a Generator")
        return np.random.default_rng(random_state)
    raise ParameterError("random_state", random_state, "a non-negative integer, a SeedSequence or a Generator")


def _range_text(kind: str, low, high, low_inc: bool, high_inc: bool) -> str:
    if low is None and high is None:
        return kind
    if high is None:
        return f"{kind} {'>=' if low_inc else '>'} {low}"
    if low is None:
        return f"{kind} {'<=' if high_inc else '<'} {high}"
    return f"{kind} in {'[' if low_inc else '('}{low}, {high}{']' if high_inc else ')'}"


# C0 and C1 control characters (ESC, OSC 52's BEL, CR, NUL, CSI), line and paragraph separators, the bidirectional
# overrides and isolates, and lone surrogates (an undecodable file name): what a terminal may act on or cannot encode
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control character (ESC, BEL, CR, NUL, C1 codes, line separators, bidirectional overrides,
    lone surrogates) written as its escape (``\\x1b``, ``\\u202e``, ``\\udce9``), except those in ``keep``: text
    from a user's file reaches a terminal, or a comment of generated code, only this way.

    Parameters
    ----------
    text : str
        The text (anything else is converted with ``str``).
    keep : str, default "\\n\\t"
        Control characters left as they are (by default newline and tab).

    Returns
    -------
    str
        The text with every other control character escaped.
    """
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else ascii(m.group())[1:-1], str(text))


def one_line(text: Any) -> str:
    """``text`` as one printable line (:func:`printable` keeping nothing, newlines and tabs escaped too): for an error
    message, which must stay on one line whatever a plug-in's exception says.

    Parameters
    ----------
    text : object
        The text (anything else is converted with ``str``).

    Returns
    -------
    str
        The text on one line, every control character escaped.
    """
    return printable(text, keep="")
