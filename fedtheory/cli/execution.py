"""--workers N | --scheduler ADDRESS: the executor a command's flags ask for (:func:`executor`) and its summary of
tasks, retries and failures (:func:`report_execution`)."""
from __future__ import annotations

import sys

from .._validation import ParameterError

__all__ = ["executor", "report_execution"]


def executor(args):
    """The executor the flags ask for, or None for today's serial path."""
    if getattr(args, "workers", None) is None and getattr(args, "scheduler", None) is None:
        return None
    from ..parallel import make_executor

    if args.worker_threads < 1:
        raise ParameterError("--worker-threads", args.worker_threads, "an integer >= 1")
    return make_executor(args.workers, args.scheduler, threads=args.worker_threads)


def report_execution(ex, since: int = 0) -> dict | None:
    """Print the executor's summary of tasks, retries and failures to stderr; return it for the JSON."""
    if ex is None or not getattr(ex, "outcomes", None):
        return None
    out = ex.combined(since)
    print("fedtheory: " + out.summary(), file=sys.stderr)
    return out.to_json()
