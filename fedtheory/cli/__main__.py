"""``python -m fedtheory.cli``: the command line (:func:`fedtheory.cli.main`)."""
import sys

from .process import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
