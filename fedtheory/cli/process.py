"""The process around a command: :func:`main` parses the arguments, dispatches to the command's module and turns
what ends the run into its exit status (a signal: 128 + its number; bad usage: 2; a bug of the tool: 3; a reader
of stdout that left: the status the run earned); fedtheory's own warnings print as one line."""
from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from typing import Sequence

from .._validation import FedTheoryError, ParameterError, one_line
from ..signals import Terminated, ending_signals, exit_status, received
from . import check, list_explain, new_paper, report, train, worst
from .parser import build_parser

__all__ = ["SIGPIPE_STATUS", "THP_ENV", "main"]


# torch's CPU allocator backs large tensors with transparent huge pages when this is set before its first
# allocation: a fresh (runs, clients, dim) temporary then costs a few page faults instead of one per 4 KiB (on the
# 2-core development machine a 36 MB elementwise op took 4x less CPU time). Read once by torch; set it to 0 to
# opt out. It changes where tensors live, not what they hold.
THP_ENV = "THP_MEM_ALLOC_ENABLE"


@contextlib.contextmanager
def _own_warnings_in_one_line():
    """While the CLI runs, fedtheory's own warnings (a plug-in that registers nothing) print as one line, like its
    errors ('fedtheory: warning: ...'); others as before. The previous ``warnings.showwarning`` comes back after."""
    from .._validation import FedTheoryDeprecationWarning
    from ..plugins import PluginWarning

    previous = warnings.showwarning
    said: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (PluginWarning, FedTheoryDeprecationWarning)):
            kind = "deprecated" if issubclass(category, FedTheoryDeprecationWarning) else "warning"
            text = one_line(str(message))
            if text not in said:  # once per message (a deprecated call in a loop says it once)
                said.add(text)
                where = f" ({filename}:{lineno})" if kind == "deprecated" else ""
                print(f"fedtheory: {kind}: {text}{where}", file=sys.stderr if file is None else file)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: parse ``argv``, run the command, return its exit status (see the module docstring).

    Every moment of the run is covered by one handler of the signals that end it (``fedtheory.signals``): a signal
    gives 128 + its number and one line on stderr, never a traceback, wherever it lands (an import, a check, a
    solver that swallowed the exception it raised, the writing of the outputs)."""
    os.environ.setdefault(THP_ENV, "1")
    code: int | None = None
    with ending_signals():
        try:
            args = build_parser().parse_args(argv)
            with _own_warnings_in_one_line():
                code = _main(args)
        except (KeyboardInterrupt, Terminated):
            pass  # said below, from the record: the exception may also have been lost on its way here
        signum = received()
        if signum is not None:
            _say_signal(signum)
            return exit_status(signum)
    return 2 if code is None else code


def _say_signal(signum: int) -> None:
    import signal

    try:
        if signum == signal.SIGINT:
            print("fedtheory: interrupted (SIGINT)", file=sys.stderr)
        else:
            print(f"fedtheory: terminated by {signal.Signals(signum).name}", file=sys.stderr)
    except OSError:  # stderr is gone too
        pass


def _main(args) -> int:
    try:
        try:
            os.getcwd()
        except FileNotFoundError:  # every relative path (a plug-in, --out) would resolve against nothing
            raise FedTheoryError("the current folder no longer exists: run fedtheory from an existing folder") \
                from None
        # `list` loads them itself, only where its listing is not kept (fedtheory.cli.listing)
        if getattr(args, "plugin", None) is not None and args.command != "list":
            from ..plugins import load_plugins

            t0 = time.perf_counter()
            load_plugins(args.plugin)
            args.load_s = time.perf_counter() - t0  # `check` reports it (load_s)
        command = {"list": list_explain.cmd_list, "explain": list_explain.cmd_explain, "check": check.cmd_check,
                   "report": report.cmd_report, "train": train.cmd_train, "new-paper": new_paper.cmd_new_paper,
                   "worst": worst.cmd_worst}.get(args.command)
        if command is not None:
            if args.command in ("list", "explain"):  # they find nothing: a reader that leaves early changes nothing
                args.earned_status = 0
            code = command(args)
            # here, where a reader that left is caught (at exit Python would say 'Exception ignored')
            sys.stdout.flush()
            return code
    except (ParameterError, FedTheoryError) as exc:
        print(f"fedtheory: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `fedtheory check | head -1`: the reader left; the run keeps the status it earned
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        earned = getattr(args, "earned_status", None)
        return SIGPIPE_STATUS if earned is None else earned
    except Exception as exc:  # noqa: BLE001 - a bug of the tool: its own exit status, never 1 (findings)
        import traceback

        if os.environ.get("FEDTHEORY_TRACEBACK"):
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"fedtheory: internal error: {one_line(f'{type(exc).__name__}: {exc}')} (at "
              f"{os.path.basename(where.filename)}:{where.lineno}; FEDTHEORY_TRACEBACK=1 prints the traceback)",
              file=sys.stderr)
        return 3
    return 2


#: The exit status of a command whose reader left before it knew its own status (a shell's 128 + SIGPIPE).
SIGPIPE_STATUS = 141
