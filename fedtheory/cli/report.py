"""`fedtheory report`: one self-contained HTML page from a results file, training run directories and a mutation
file."""
from __future__ import annotations

import os
import time

from .._validation import ParameterError
from .outputs import check_outputs, same_file, where_written

__all__ = ["cmd_report"]


def cmd_report(args) -> int:
    from ..report import write_report

    if args.results is None and args.runs is None:
        raise ParameterError("RESULTS", None, "a results file of `fedtheory check --out`, or --runs DIR (or both)")
    for given in (args.results, args.mutants):
        if given is not None and same_file(given, args.out):
            raise ParameterError("--out", args.out, f"another file than the file it is drawn from ({given})")
    check_outputs(args, ("--out", args.out), inputs=[g for g in (args.results, args.mutants) if g is not None])
    t0 = time.perf_counter()
    path = write_report(args.results, args.out, "--out", mutants=args.mutants, runs=args.runs)
    print(f"HTML report written to {where_written(str(path))} ({os.path.getsize(path) / 1e6:.1f} MB, "
          f"{time.perf_counter() - t0:.1f} s)")
    return 0
