"""``fedtheory`` command line: list | explain | check | report | train | worst | new-paper.

Exit codes: 0 every check ran and nothing was violated, refuted or inconsistent; 1 findings about the papers;
2 bad usage or input; 3 a check (or the tool itself) failed with an error: never counted as a finding; 128 + N
when signal N ended the run (130 for SIGINT, 143 for SIGTERM; 141 when the reader of stdout left before the run knew
its status).

One module per part: ``parser`` (the argparse parser), ``process`` (:func:`main`: signals, warnings, exit statuses,
a reader that leaves, the dispatch), ``outputs`` (--out / --report: checked before the run, written after it),
``execution`` (--workers / --scheduler), ``tables``, ``listing`` (the listings of ``list``, kept between runs); and
one module per command: ``list_explain``, ``check`` (with --mutants and --controls), ``report``, ``train``,
``worst``, ``new_paper``.
"""
from __future__ import annotations

from .process import main

__all__ = ["main"]
