"""The built-in paper plug-ins, one package per paper (``fedinit``, ``oledfl``, ``fedmrur``, ``fedshift``), each of the
shape a user's plug-in has: ``records.py`` (what the paper states), ``checks.py`` (theorem x measurement),
``worst.py`` (worst-case declarations), ``experiments.py`` (claims about its experiments, checked on logged runs) and
``algorithms.py`` (the algorithms and problems that are the paper's own), as the paper needs them. Importing a
package registers everything it declares. They are found through the ``fedtheory.papers`` entry-point group that
fedtheory's own ``pyproject.toml`` declares, like any installed plug-in (see ``fedtheory.plugins``); they use only
fedtheory's public API, and neither the core nor another paper imports them (tests/test_layers.py)."""
