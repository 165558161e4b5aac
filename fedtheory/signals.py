"""Signals that end a run (SIGINT, SIGTERM, SIGHUP), as the command line handles them.

While :func:`ending_signals` is active, the first such signal is recorded and raised as an exception in the main
thread (``KeyboardInterrupt`` for SIGINT, :class:`Terminated` for the others), so that the run unwinds: worker
processes are ended, nothing half-written is left. Later signals are recorded only, so that the unwinding itself is
not interrupted.

The exception can be lost on its way up: a solver or a library that catches every exception around a callback
turns it into an error of its own (one check's error row). The record cannot be lost: :func:`received` says which
signal arrived, the check runner stops at the next check (:func:`raise_if_received`), and the command line exits
with 128 + the signal's number whatever the exception became.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Iterator

__all__ = ["Terminated", "ending_signals", "exit_status", "note_signal", "raise_if_received", "received"]

_received: list[int] = []  # the signals received while ending_signals() is active, in order
_active = [False]
_redeliver = [False]  # the exception was dropped where it landed: raise it again at the next signal
_owner = [0]  # the process that installed the handlers: a forked child inherits them, and must not raise
_in_hook = [False]  # the unraisable hook is running (a signal delivered there is delivered again after it)


class Terminated(BaseException):
    """A signal that ends fedtheory (SIGTERM, SIGHUP) raised as an exception, as Ctrl-C raises KeyboardInterrupt.
    A BaseException, so that no check's error handling takes it for a failed check."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _exception(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _handler(signum, frame):
    if os.getpid() != _owner[0]:
        # A forked child (the check runner's worker lane, before its initializer resets the handlers): its parent
        # ends it and reports the run's status; ending here at once leaves no traceback from the child's start-up.
        os._exit(exit_status(signum))
    if _in_hook[0]:  # the redelivery below, landing inside the hook itself: raise it once the hook has returned
        _redeliver[0] = True
        _deliver_later(signum)
        return
    first = not _received
    _received.append(signum)
    if first or _redeliver[0]:
        _redeliver[0] = False
        raise _exception(_received[0])


def _unraisable(hook):
    """A ``sys.unraisablehook`` that drops the exception of a signal that landed where Python cannot raise (a weakref
    callback, a finalizer: Python would print 'Exception ignored' with a traceback) and delivers the signal again, so
    that it is raised at the next line the main thread runs. Anything else goes to ``hook``."""

    def unraisable(u):
        if isinstance(u.exc_value, (KeyboardInterrupt, Terminated)) and _received:
            _in_hook[0] = True
            try:
                _redeliver[0] = True
                _deliver_later(_received[0])
            finally:
                _in_hook[0] = False
        else:
            hook(u)

    return unraisable


def _deliver_later(signum: int) -> None:
    """Send ``signum`` to this process from another thread a moment from now: the handler then runs in the main
    thread at its next line, outside the hook (a signal sent from inside the hook ran the handler inside it, and
    Python printed 'Exception ignored in sys.unraisablehook' with a traceback: 1 SIGINT in 30)."""
    timer = threading.Timer(0.005, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def note_signal(signum: int) -> None:
    """Record ``signum`` as received without raising it (a handler of its own that stops the work gracefully, as the
    trainer's does: finish the round, checkpoint, stop), so that the exit status names it."""
    if _active[0]:
        _received.append(signum)


def received() -> int | None:
    """The first ending signal received while :func:`ending_signals` is active, or None."""
    return _received[0] if _received else None


def raise_if_received() -> None:
    """Raise the first ending signal's exception again if one was received (whatever became of it the first time)."""
    if _received:
        raise _exception(_received[0])


def exit_status(signum: int) -> int:
    """128 + the signal's number: what a shell shows for a process ended by it (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


@contextlib.contextmanager
def ending_signals() -> Iterator[None]:
    """Record and raise SIGINT, SIGTERM and SIGHUP while the block runs; the previous handlers come back after and the
    record is cleared. A signal ignored by whoever started the process (``nohup``) stays ignored; SIGINT is taken
    over only from Python's own handler; outside the main thread nothing is installed."""
    if threading.current_thread() is not threading.main_thread() or _active[0]:
        yield
        return
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None:
            continue
        current = signal.getsignal(sig)
        if current is signal.SIG_DFL or (sig == signal.SIGINT and current is signal.default_int_handler):
            old[sig] = signal.signal(sig, _handler)
    _received.clear()
    _active[0] = True
    _owner[0] = os.getpid()
    hook = sys.unraisablehook
    sys.unraisablehook = _unraisable(hook)
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        sys.unraisablehook = hook
        _active[0] = False
        _redeliver[0] = False
        _received.clear()
