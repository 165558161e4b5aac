"""The outputs' safety rules: --out / --report checked writable before a run (:func:`check_outputs`), written after
it (:func:`write_outputs`), a write that failed all the same named and its results kept (:func:`refuse_outputs`)."""
from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Sequence

from .._validation import ParameterError

__all__ = ["check_outputs", "refuse_outputs", "same_file", "where_written", "write_outputs"]


def check_outputs(args, *outputs: tuple[str, str | None], inputs: Sequence[str] = ()) -> None:
    """Before the run: each output (flag, path) given can be written and may be (``checks.output.check_writable``):
    ``--out ""`` is a usage error; an existing file only if fedtheory wrote it (or ``--force``); never a FIFO, a
    device, an input of the run (a plug-in's source, ``inputs``) or a file under ``--runs``."""
    from ..checks.output import check_writable
    from ..plugins import source_files

    for flag, path in outputs:
        if path is None:
            continue
        check_writable(path, flag, force=getattr(args, "force", False), inputs=[*source_files(), *inputs],
                       input_dirs=[args.runs] if getattr(args, "runs", None) else [])


def where_written(path: str) -> str:
    """``path`` as the line saying it was written names it: a symbolic link says that it was written through."""
    return f"{path} (a symbolic link: written through to {os.path.realpath(path)})" if os.path.islink(path) else path


def write_outputs(args, payload) -> dict[str, ParameterError]:
    """Write --out and --report (each checked writable before the run); a write that fails all the same (a disk
    that filled, a folder removed meanwhile) is returned by flag, never raised: the results are not thrown away."""
    from ..checks.output import write_json

    failed: dict[str, ParameterError] = {}
    if args.out:
        try:
            write_json(args.out, payload, "--out")
        except ParameterError as exc:
            failed["--out"] = exc
    if args.report:
        from ..report import write_report

        try:
            write_report(payload, args.report, "--report")
        except ParameterError as exc:
            failed["--report"] = exc
    return failed


def refuse_outputs(failed: dict[str, ParameterError], payload, code: int, written: str | None) -> int:
    """Name each output that could not be written, keep the results where they can be read back (``written``: the
    --out file that was written; else a new file in the temporary folder) and exit with status 2, saying the run's
    own exit status (``code``)."""
    import tempfile

    from ..files import write_atomic

    kept = written
    if kept is None:
        try:
            fd, kept = tempfile.mkstemp(prefix="fedtheory-results-", suffix=".json")
            os.close(fd)
            write_atomic(kept, json.dumps(payload, indent=2))
        except OSError as exc:
            kept = None
            print(f"fedtheory: error: the results could not be kept anywhere ({exc.strerror or exc})", file=sys.stderr)
    for exc in failed.values():
        print(f"fedtheory: error: {exc}", file=sys.stderr)
    if kept is not None:
        print(f"fedtheory: the results are kept in {kept} (`{shlex.join(['fedtheory', 'report', kept])}` draws them); "
              f"the run's own exit status was {code}", file=sys.stderr)
    return 2


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the same path, through links, or one file twice)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False
