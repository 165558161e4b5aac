"""The built-in paper plug-ins. Each module here is what a user's plug-in is: importing it registers a
paper's records (``fedtheory.theory``) and checks (``fedtheory.checks``). They are found through the
``fedtheory.papers`` entry-point group that fedtheory's own ``pyproject.toml`` declares, like any
installed plug-in (see ``fedtheory.plugins``)."""
