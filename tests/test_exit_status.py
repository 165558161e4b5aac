"""The exit status says what happened (README, exit codes): 0 clean, 1 findings about papers, 2 bad usage or input,
3 a check or the tool failed, 128 + N a signal N ended the run. Each case here once gave another status."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FEDTHEORY_PLUGINS", None)
    return env


# ------------------------------------------------------------------------------------ a reader that leaves early


READERS = {"head": "head -c 1 >/dev/null", "gone": "true"}  # one reads a byte and leaves; one never reads


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("only, earned", [("fedshift.thm1", 1), ("drori2014", 0)])
def test_a_reader_that_leaves_early_keeps_the_status_the_run_earned(only, earned, reader, buffered):
    """Before: `fedtheory check --paper fedshift | head -1` exited 0 (BrokenPipeError turned into success), which
    `set -o pipefail` and `grep -q` read as a clean run; with a buffered stdout (PYTHONUNBUFFERED unset) a reader that
    left before the last flush gave exit 120 and 'Exception ignored ... BrokenPipeError'."""
    env = _env()
    if buffered:
        env.pop("PYTHONUNBUFFERED", None)
    else:
        env["PYTHONUNBUFFERED"] = "1"
    cmd = f"set -o pipefail; {sys.executable} -m fedtheory.cli check --only {only} --no-progress | {READERS[reader]}"
    out = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == earned, out.stderr
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr


def test_an_error_row_is_not_hidden_by_a_reader_that_leaves(tmp_path):
    plugin = tmp_path / "errplug.py"
    plugin.write_text(_PLUGIN.format(body="raise RuntimeError('the check broke')"))
    env = _env()
    env.pop("PYTHONUNBUFFERED", None)
    cmd = (f"set -o pipefail; {sys.executable} -m fedtheory.cli check --plugin {plugin} --only errplug drori2014 "
           "--format json --no-progress | head -c 1 >/dev/null")
    out = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr


_PLUGIN = '''
import sympy as sp
from fedtheory.checks import Session, assess_bound, check
from fedtheory.theory import Bound, SymbolSet, register, register_paper

register_paper("errplug")
S = SymbolSet("errplug", strict=True)
L = S.add("L", "smoothness", dim="f/w^2")
D = S.add("D", "initial gap", sp.Interval(0, sp.oo), dim="f")
T = S.add("T", "rounds", integer=True, dim="1")
B = register(Bound(id="errplug.b", paper="errplug", title="a bound", source="test", symbols=S,
                   assumptions=(), lhs="opt_error", lhs_description="f(w^T) - f*", expr=D / T))


@check("errplug.c", "errplug", "bound", measures=("opt_error",), problems=("-",), algorithms=("-",), seeds="-")
def c(session: Session):
    """A check whose body is the test's."""
    {body}
'''


# ------------------------------------------------------------------------------------ an error inside a check


def test_a_bad_value_a_check_passes_is_that_checks_error_row_and_the_run_goes_on(tmp_path):
    """Before: a check passing D=nan to assess_bound ended the whole run with exit 2 ('D=nan is invalid'), no table,
    no --out. Now it is that check's error row (exit 3) and the other checks' rows are kept."""
    plugin = tmp_path / "errplug.py"
    plugin.write_text(_PLUGIN.format(body="return [assess_bound(B, [{'D': float('nan'), 'T': 3}], [0.1], problem='p', "
                                          "params={})]"))
    out_file = tmp_path / "out.json"
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(plugin), "--only", "errplug",
                          "drori2014", "--no-progress", "--out", str(out_file)],
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr
    import json

    rows = json.loads(out_file.read_text())["results"]
    err = [r for r in rows if r["id"] == "errplug.c"]
    assert [r["verdict"] for r in err] == ["error"] and "D=nan" in err[0]["detail"]
    assert any(r["paper"] == "drori2014" and r["verdict"] != "error" for r in rows)  # the rest of the run is kept


# ------------------------------------------------------------------------------------ signals


def _signal_at(sig: int, delay: float, argv=("check", "--profile", "quick", "--no-progress")):
    proc = subprocess.Popen([sys.executable, "-m", "fedtheory.cli", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(delay)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


# the moments of the first 2 s at which a signal once gave exit 1 with a traceback (imports after the handler was
# installed but outside the command's try: the sympy import of the warnings hook; 0.3-0.9 s on this machine), and
# later ones (a check running, the worker lane starting)
MOMENTS = (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0, 1.3, 1.7, 2.0)


@pytest.mark.parametrize("delay", MOMENTS)
def test_sigterm_at_any_moment_exits_143_in_one_line(delay):
    """Before: 3 of 16 SIGTERMs in the first second exited 1 with a 30-90 line traceback (make check reads 1 as
    success), and one in a clean-clone CI exited 3 with an empty stderr (the exception raised by the handler was
    turned into a check's error by a library catching every exception around its callback). Death by the signal
    itself, before fedtheory's handler exists (the interpreter starting), is the same status in a shell (143)."""
    code, err = _signal_at(signal.SIGTERM, delay)
    assert code in (143, -signal.SIGTERM), err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if code == 143:
        assert err.strip().splitlines()[-1] == "fedtheory: terminated by SIGTERM", err


@pytest.mark.parametrize("delay", (0.35, 0.5, 0.8, 1.3, 2.0))
def test_sigint_at_any_moment_exits_130_in_one_line(delay):
    """Before: SIGINT in the first 0.6 s exited 130 with a traceback; one landing in an import's weakref callback
    printed 'Exception ignored in ...' with a traceback. Not from 0 s: a SIGINT while the interpreter itself starts
    (its `site` import, the first ~50 ms) is CPython's own 'Fatal Python error: init_import_site', exit 1, before any
    code of fedtheory runs (SIGTERM there is death by the signal, 143 in a shell: the test above covers it)."""
    code, err = _signal_at(signal.SIGINT, delay)
    assert code in (130, -signal.SIGINT), err
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_a_signal_whose_exception_a_library_swallowed_still_ends_the_run(tmp_path):
    """The exception a signal raises can be lost (a solver catching every exception around a callback turns it into
    its own error): the run still ends with 128 + the signal's number, not with that check's error row (exit 3)."""
    plugin = tmp_path / "errplug.py"
    plugin.write_text(_PLUGIN.format(body=(
        "import os, signal, time\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(5)\n"
        "    except BaseException:\n"
        "        raise RuntimeError('solver failed')\n"
        "    return []")))
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(plugin), "--only", "errplug",
                          "drori2014", "--no-progress", "--one-process"], env=_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 143, (out.returncode, out.stderr)
    assert "terminated by SIGTERM" in out.stderr and "Traceback" not in out.stderr


# ------------------------------------------------------------------------------------ one-line usage errors


def test_a_signal_dropped_in_a_finalizer_is_raised_after_the_hook_not_inside_it():
    """Before: the unraisable hook delivered the dropped signal again from inside itself, so the handler raised
    there and Python printed 'Exception ignored in sys.unraisablehook' with a traceback (1 SIGINT in 30 at random
    moments of `fedtheory check`). Now the hook returns quietly and the signal is raised at the main thread's next
    line. (SIGTERM here: a test runner may own SIGINT's handler.)"""
    import types

    from fedtheory.signals import Terminated, ending_signals

    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # whatever an earlier test left: the CLI's starting state
    try:
        with ending_signals():
            with pytest.raises(Terminated):  # the first delivery, as a finalizer would have swallowed it
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
            dropped = types.SimpleNamespace(exc_type=Terminated, exc_value=Terminated(signal.SIGTERM),
                                            exc_traceback=None, err_msg=None, object=None)
            sys.unraisablehook(dropped)  # returns: nothing raised inside the hook
            with pytest.raises(Terminated):
                time.sleep(2)  # raised here, within 5 ms
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_forked_child_of_a_run_ends_silently_on_a_signal():
    """Before: the check runner's worker lane, forked while the run's handlers were installed, raised Terminated
    inside multiprocessing's start-up when the parent ended it (a SIGTERM in the first 2 s of `fedtheory check`:
    1 run in 60 printed a 'Process-1: Traceback'). A forked child that inherits the handlers now exits 143 at
    once, printing nothing; the parent still raises."""
    from fedtheory.signals import Terminated, ending_signals

    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # whatever an earlier test left: the CLI's starting state
    try:
        with ending_signals():
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: say it is ready, then wait to be ended; it never returns into pytest
                try:
                    os.close(r)
                    os.write(w, b"x")
                    while True:
                        time.sleep(0.01)
                finally:
                    os._exit(1)
            os.close(w)
            assert os.read(r, 1) == b"x"
            os.close(r)
            os.kill(pid, signal.SIGTERM)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 143, status
            with pytest.raises(Terminated):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.parametrize("seed", ["1e3", "9" * 5000])
def test_a_seed_argparse_cannot_read_is_one_line(capsys, seed):
    """Before: argparse's 10-line usage block; a 5,000-digit value was printed whole."""
    from fedtheory.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["check", "--seed", seed])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--seed" in err and len(err) < 300, err


def test_a_plugin_exception_with_newlines_is_one_line(tmp_path, capsys):
    from fedtheory.cli import main

    plugin = tmp_path / "nlplug.py"
    plugin.write_text("from fedtheory import FedTheoryError\nraise "
                      "FedTheoryError('first line\\nsecond line\\x1b[2J')\n")
    assert main(["check", "--plugin", str(plugin), "--only", "drori2014"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "\x1b" not in err and "second line" in err
