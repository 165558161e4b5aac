"""Plug-in: OledFL (Li, Zhang, Wang, Yin, Shen 2024), seed 002: stated orders, Definition 1, claims and tables."""
from ..checks import oledfl as checks  # noqa: F401 - registers the checks
from ..theory import oledfl as records  # noqa: F401 - registers the records
