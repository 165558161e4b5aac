"""fedtheory: check federated-learning theorems against measurement."""
__version__ = "0.2.0"

#: The plug-in API's version, MAJOR.MINOR. A minor release adds to the API and deprecates what it changes: the old
#: way keeps working for one more minor release, with a FedTheoryDeprecationWarning saying what to change, where.
#: A major release may remove. CHANGELOG.md lists every change with its migration.
PLUGIN_API = "0.2"

from ._validation import FedTheoryError, ParameterError  # noqa: E402 - the errors every layer raises


def require_plugin_api(version: str) -> None:
    """Refuse to load a plug-in written for a plug-in API this fedtheory does not provide.

    Parameters
    ----------
    version : str
        The plug-in API the plug-in was written for, ``"MAJOR.MINOR"`` (e.g. ``"0.2"``); call it at the top of the
        plug-in's ``records.py``.

    Raises
    ------
    FedTheoryError
        One line naming both versions, unless :data:`PLUGIN_API` has the same major version and a minor version at
        least ``version``'s.
    """
    try:
        major, minor = (int(x) for x in str(version).split("."))
    except ValueError:
        raise FedTheoryError(f"require_plugin_api({version!r}): the version must be 'MAJOR.MINOR', e.g. "
                             f"{PLUGIN_API!r}") from None
    have_major, have_minor = (int(x) for x in PLUGIN_API.split("."))
    if major != have_major or minor > have_minor:
        raise FedTheoryError(f"this plug-in needs fedtheory's plug-in API {version}; fedtheory {__version__} provides "
                             f"{PLUGIN_API} (CHANGELOG.md says what changed)")


__all__ = ["FedTheoryError", "PLUGIN_API", "ParameterError", "__version__", "require_plugin_api"]
