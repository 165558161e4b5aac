"""A run directory's lifecycle, as the one process that trains into it writes it (``runs.py`` reads it back):
:class:`RunDirectory` opens a new directory or resumes one, writes the checkpoints and an interrupted run's
manifest; :func:`finish` completes the manifest; :func:`install_stop_handlers` turns SIGINT/SIGTERM into a stop
after the current round (:class:`TrainingInterrupted`), :func:`fault` is the crash tests' hook.

Checkpoints every ``checkpoint_every`` rounds (atomic; the one before is kept as checkpoint.prev.pt);
``resume`` continues from the last one (from the one before when the last cannot be read, or when metrics.csv
lacks rows from before its round: a torn or lost last line; from round 0 when neither checkpoint is early enough;
saying so), recomputing the rounds after it, and records how far the recomputed rows differ from the ones
the killed process had written (0 on a deterministic device: :class:`Consistency`). One process writes a run
directory at a time (an flock, runs.RunDirLock): a second ``train --out D`` is refused while the first runs. A
resume may raise ``rounds`` (and lower it down to the checkpoint's round): the rows logged so far are those of a run
trained to the new T.
"""
from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._validation import FedTheoryError, ParameterError
from ..files import FileRefused, fsync_dir, open_regular, parse_json, write_error_text
from ..signals import note_signal, raise_if_received
from .config import EXTENSIBLE_FIELDS, TrainConfig
from .device import versions
from .runs import (
    CHECKPOINT,
    MANIFEST,
    MAX_CHECKPOINT_BYTES,
    METRICS,
    NON_REPRODUCIBLE,
    PREV_CHECKPOINT,
    SCHEMA,
    RunDirError,
    read_manifest,
    scan_metrics,
    truncate_metrics,
    write_manifest,
)

__all__ = ["FAULT_ENV", "FAULT_ONCE_ENV", "Consistency", "RunDirectory", "TrainingInterrupted", "fault", "finish",
           "install_stop_handlers", "now"]

FAULT_ENV = "FEDTHEORY_FAULT"  # crash-test hook: 'kill_after_round:R', 'kill_in_checkpoint:R', 'sigterm_after_round:R'
FAULT_ONCE_ENV = "FEDTHEORY_FAULT_ONCE"  # a file path: the fault fires only in the process that creates it


class TrainingInterrupted(FedTheoryError):
    """A signal stopped the training after a round (its checkpoint written, the manifest saying 'interrupted'):
    ``signum`` is the signal, ``round`` the last round completed."""

    def __init__(self, message: str, signum: int = signal.SIGINT, round: int | None = None):
        super().__init__(message)
        self.signum, self.round = signum, round

    def __reduce__(self):  # crosses process boundaries (a sweep's workers) intact
        return (type(self), (str(self), self.signum, self.round))


class RunDirectory:
    """The run directory ``out_dir`` of one training batch (``runs`` runs of ``config`` on ``device``, parameters
    of ``dtype``), as the process that holds it (runs.RunDirLock) writes it; ``resume``: continue the run it holds."""

    def __init__(self, out_dir: Path, config: TrainConfig, runs: int, device: torch.device, dtype: torch.dtype, *,
                 resume: bool = False):
        self.out_dir, self.config, self.R, self.device, self.dtype = Path(out_dir), config, runs, device, dtype
        self.resume = resume

    def open(self, manifest, state, streams, alive, diverged_at):
        """Open the directory for this process's run: a new run writes ``manifest`` (refused where the directory
        holds one); a resume compares the settings with the manifest's, restores ``state``, ``streams``, ``alive``
        and ``diverged_at`` from the newest checkpoint metrics.csv's rows reach, truncates the rows after it and
        notes the resume in the manifest. Returns (the round to start from, the manifest, the rows dropped: to
        compare with their recomputation, :class:`Consistency`)."""
        d = self.out_dir
        mpath, cpath, ppath, xpath = d / MANIFEST, d / CHECKPOINT, d / PREV_CHECKPOINT, d / METRICS
        if not self.resume:
            if mpath.exists() or cpath.exists() or ppath.exists() or xpath.exists():
                raise ParameterError("out", str(d), "a new or empty directory (it holds a run; pass --resume to "
                                     "continue it, or choose another directory)")
            d.mkdir(parents=True, exist_ok=True)
            write_manifest(d, manifest)
            return 0, manifest, []
        if not mpath.exists():
            raise ParameterError("out", str(d), "a run directory with manifest.json to resume (none found)")
        old = read_manifest(d)
        there = _normalized(TrainConfig.from_dict(old["config"]).identity())
        here = _normalized(self.config.identity())
        diff = sorted(k for k in set(there) | set(here) if there.get(k) != here.get(k) and k not in EXTENSIBLE_FIELDS)
        if diff:
            raise ParameterError("resume", str(d), "the same settings as the run it continues; differing: " +
                                 ", ".join(f"{k} ({there.get(k)!r} there, {here.get(k)!r} here)" for k in diff))
        # the rows on disk decide how far back to go: a checkpoint past the last complete round of metrics.csv (a
        # torn or lost last line) cannot restore the rows it lacks
        scan = scan_metrics(xpath, self.R) if xpath.exists() else None
        complete = scan.complete_through if scan is not None else -1
        ck, used, fallback, unreadable = self.read_checkpoint(cpath, ppath, complete, scan)
        start = int(ck["round"]) if ck is not None else 0
        old_rounds = int(old["config"]["rounds"])
        if self.config.rounds < start:
            raise ParameterError("--rounds", self.config.rounds,
                                 f"an integer >= {start} to resume {d} (its checkpoint is at round {start}; rounds up "
                                 f"to {start} are logged and stay; fewer rounds need a new run directory)")
        manifest = dict(old, config=self.config.to_dict())
        if ck is not None:
            self.restore(ck, used, state, streams, alive, diverged_at)
        if start == self.config.rounds and old.get("status") == "completed" and old_rounds == self.config.rounds:
            return start, manifest, []  # nothing left to do
        resume_note: dict[str, Any] = {}
        if fallback is not None:
            # the unreadable file must not become checkpoint.prev.pt at the next checkpoint
            if unreadable and cpath.exists():
                os.replace(cpath, d / (CHECKPOINT + ".unreadable"))
            resume_note["checkpoint_fallback"] = fallback
            print(f"fedtheory: warning: {fallback}", file=sys.stderr)
        if old_rounds != self.config.rounds:
            change = {"at": now(), "from_rounds": old_rounds, "to_rounds": self.config.rounds, "from_round": start}
            if (start == old_rounds and old.get("status") == "completed" and start % self.config.eval_every != 0
                    and start < self.config.rounds):
                change["note"] = (f"round {start} was evaluated as the last round of the run before (eval_every "
                                  f"{self.config.eval_every}); a run trained to {self.config.rounds} from the start "
                                  f"leaves its train/test measures NaN")
            manifest["rounds_changes"] = list(manifest.get("rounds_changes", [])) + [change]
            resume_note["rounds"] = [old_rounds, self.config.rounds]
        dropped = truncate_metrics(xpath, start if start > 0 else -1) if xpath.exists() else []
        if start == 0 and xpath.exists():
            xpath.unlink()
        manifest["resumes"] = list(manifest.get("resumes", [])) + [
            {"at": now(), "from_round": start, "rows_to_recompute": len(dropped), **resume_note,
             "versions": versions(self.device)}]
        manifest["status"] = "running"
        write_manifest(d, manifest)
        return start, manifest, dropped

    def checkpoint(self, t, state, streams, alive, diverged_at):
        """Write checkpoint.pt atomically; the one it replaces becomes checkpoint.prev.pt (a crash between the
        two renames leaves only checkpoint.prev.pt, the newest complete one, which a resume then reads)."""
        payload = {"schema": SCHEMA, "round": t, "w": state.w, "server": dict(state.server),
                   "clients": dict(state.clients), "streams": streams.state_json(), "alive": torch.as_tensor(alive),
                   "diverged_at": torch.as_tensor(diverged_at), "identity": json.dumps(self.checkpoint_identity(),
                                                                                        sort_keys=True)}
        path = self.out_dir / CHECKPOINT
        fd, tmp = tempfile.mkstemp(dir=self.out_dir, prefix=f".{CHECKPOINT}.", suffix=".tmp")
        sink = _WriteErrors(os.fdopen(fd, "wb"))
        try:
            with sink.file:
                torch.save(payload, sink)  # torch reports a failed write as a RuntimeError without its cause
                sink.file.flush()
                os.fsync(sink.file.fileno())
        except (OSError, RuntimeError) as exc:
            _unlink(tmp)
            cause = sink.error if sink.error is not None else exc if isinstance(exc, OSError) else None
            if cause is None:
                raise
            raise RunDirError(f"{path}: the checkpoint of round {t} could not be written ("
                              f"{write_error_text(cause, self.out_dir)}); its temporary file was removed, any earlier "
                              "checkpoint and the logged rounds are kept: make room and continue with --resume") \
                from None
        except BaseException:
            _unlink(tmp)
            raise
        fault("kill_in_checkpoint", t)
        if path.exists():
            os.replace(path, self.out_dir / PREV_CHECKPOINT)
        fault("kill_in_checkpoint_rotation", t)
        os.replace(tmp, path)
        fsync_dir(self.out_dir)

    def interrupted(self, manifest, after_round: int, signal_name: str) -> dict[str, Any]:
        """The manifest of a run a signal stopped after ``after_round`` (its checkpoint written), written."""
        manifest = dict(manifest, status="interrupted", interrupted={
            "after_round": after_round, "signal": signal_name, "at": now()})
        write_manifest(self.out_dir, manifest)
        return manifest

    def checkpoint_identity(self) -> dict[str, Any]:
        return {k: v for k, v in self.config.identity().items() if k not in EXTENSIBLE_FIELDS}

    def read_checkpoint(self, cpath: Path, ppath: Path, complete: int | None = None, scan=None):
        """(checkpoint, its path, note or None, whether checkpoint.pt was unreadable): the newest readable checkpoint
        (checkpoint.pt, else checkpoint.prev.pt) whose round is at most ``complete``, the last round metrics.csv
        holds complete (None: any); (None, None, note, ...) when there is no checkpoint, or only ones past
        ``complete`` (the run then restarts at round 0, deterministic from its seeds); a RunDirError when no
        checkpoint can be read at all."""
        if not cpath.exists() and not ppath.exists():
            return None, None, None, False
        errors, too_new = [], []
        for path in (cpath, ppath):
            if not path.exists():
                errors.append(f"{path.name}: missing")
                continue
            try:
                with open_regular(path, MAX_CHECKPOINT_BYTES, "checkpoint") as fh:  # never a FIFO or a device
                    ck = torch.load(fh, map_location=self.device, weights_only=True)
                if not isinstance(ck, dict) or "round" not in ck:
                    raise ValueError("not a fedtheory checkpoint")
            except FileRefused as exc:
                errors.append(f"{path.name}: cannot be read ({exc.why})")
                continue
            except pickle.UnpicklingError:  # torch's own message advises weights_only=False: never for a file of others
                errors.append(f"{path.name}: cannot be read (not a checkpoint fedtheory wrote: its contents are not "
                              "the tensors and plain values of one, so it is not unpickled)")
                continue
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{path.name}: cannot be read ({type(exc).__name__}: {str(exc)[:200]})")
                continue
            r = int(ck["round"])
            if complete is not None and r > complete:
                too_new.append(f"{path.name} is at round {r}, past metrics.csv's last complete round ({complete}: "
                               f"{scan.describe() if scan is not None else 'no metrics.csv'})")
                continue
            note = None
            if errors or too_new:
                note = "; ".join(errors
                                 + too_new) + f"; falling back to {path.name} (round {r}): the rounds after it " \
                                                      "are recomputed"
            return ck, path, note, bool(errors) and path == ppath
        if too_new:
            return None, None, "; ".join(errors + too_new) + "; no checkpoint at or before it: recomputing from " \
                                                             "round 0", False
        raise RunDirError(f"{cpath.parent}: no readable checkpoint ({'; '.join(errors)}); start a new run directory")

    def restore(self, ck, path, state, streams, alive, diverged_at) -> int:
        try:  # a checkpoint may be someone else's: its JSON parts are read like any JSON file
            ident = parse_json(ck["identity"], path, "checkpoint") if isinstance(ck.get("identity"), str) else None
        except FileRefused as exc:
            raise RunDirError(f"{path}: its settings cannot be read ({exc.why})") from None
        mine = json.loads(json.dumps(self.checkpoint_identity(), sort_keys=True))
        if ident is not None:  # checkpoints written before rounds could change carry it; it may differ
            ident = {k: v for k, v in ident.items() if k not in EXTENSIBLE_FIELDS}
        if ck.get("schema") != SCHEMA or ident != mine:
            raise RunDirError(f"{path}: the checkpoint belongs to different settings")
        state.w = ck["w"].to(self.dtype)
        if set(ck["server"]) != set(state.server) or set(ck["clients"]) != set(state.clients):
            raise RunDirError(f"{path}: the checkpoint's algorithm state ({sorted(ck['server'])}, "
                              f"{sorted(ck['clients'])}) does not match this algorithm's ({sorted(state.server)}, "
                              f"{sorted(state.clients)})")
        state.server.update(ck["server"])
        state.clients.update(ck["clients"])
        try:
            streams.load_state_json(ck["streams"])
        except (ValueError, TypeError, KeyError) as exc:
            raise RunDirError(f"{path}: its random streams cannot be restored ({exc})") from None
        alive[:] = ck["alive"].numpy()
        diverged_at[:] = ck["diverged_at"].numpy()
        return int(ck["round"])


def finish(manifest, consistency, elapsed, start_round, rounds, out_dir=None) -> dict[str, Any]:
    """The manifest of a run trained to ``rounds``: status 'completed', when, the time it took added to the time
    before (a resume's), the consistency of the recomputed rows in the last resume's entry; written to ``out_dir``
    when there is one."""
    if start_round == rounds and manifest.get("status") == "completed":
        return manifest  # nothing was left to do
    manifest = dict(manifest, status="completed", finished_at=now())
    manifest["elapsed_s"] = round(float(manifest.get("elapsed_s", 0.0)) + elapsed, 3)
    if manifest.get("resumes"):
        manifest["resumes"][-1].update(consistency.report())
    if out_dir is not None:
        write_manifest(out_dir, manifest)
    return manifest


class Consistency:
    """Compares recomputed rows with the rows a killed process had written after the checkpoint."""

    def __init__(self, dropped: list[dict[str, str]]):
        self.old = {(int(r["round"]), int(r["run"])): r for r in dropped}
        self.max_abs = 0.0
        self.compared = 0
        self.mismatched: list[str] = []

    def compare(self, rows: list[dict]) -> None:
        for row in rows:
            old = self.old.get((row["round"], row["run"]))
            if old is None:
                continue
            self.compared += 1
            for k, v in row.items():
                if k in NON_REPRODUCIBLE or not isinstance(v, (int, float)):
                    continue
                try:
                    o = float(old[k])
                except (KeyError, ValueError):
                    continue
                v = float(v)
                if np.isnan(o) and np.isnan(v):
                    continue
                diff = abs(o - v) if np.isfinite(o) and np.isfinite(v) else float("inf")
                if diff > self.max_abs:
                    self.max_abs = diff
                if diff > 0 and len(self.mismatched) < 20:
                    self.mismatched.append(f"round {row['round']} run {row['run']} {k}: {o!r} -> {v!r}")

    def report(self) -> dict[str, Any]:
        return {"rows_compared": self.compared, "max_abs_difference": self.max_abs,
                "bit_identical": self.max_abs == 0.0, "mismatches": self.mismatched}


def fault(point: str, t: int) -> None:
    """Crash-test hook (FEDTHEORY_FAULT='POINT:ROUND'): SIGKILL this process at a named point, or send it
    SIGTERM ('sigterm_after_round'), so tests can interrupt a run exactly where they mean to; with
    FEDTHEORY_FAULT_ONCE=PATH only the first process to get there (it creates PATH) is hit."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    fires = spec == f"{point}:{t}" or (point == "kill_after_round" and spec == f"sigterm_after_round:{t}")
    if not fires:
        return
    once = os.environ.get(FAULT_ONCE_ENV)
    if once:  # one crash among many processes (a retried task must get through)
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL if spec.startswith("kill") else signal.SIGTERM)


def install_stop_handlers(stop: dict):
    """SIGINT/SIGTERM: finish the current round, checkpoint, then stop (a second signal stops at once)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {}

    def handler(signum, frame):
        note_signal(signum)  # the command line's exit status says which signal stopped the run
        if stop["flag"]:
            raise_if_received()  # the second: at once (KeyboardInterrupt, or Terminated for SIGTERM)
            raise KeyboardInterrupt
        stop["flag"], stop["signum"] = True, signum

    for s in (signal.SIGINT, signal.SIGTERM):
        old[s] = signal.getsignal(s)
        signal.signal(s, handler)

    def restore():
        for s, h in old.items():
            signal.signal(s, h)
    return restore


def now() -> str:
    """The local time as the manifest records it (started, finished, resumed, interrupted at)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _normalized(d: dict) -> dict:
    return json.loads(json.dumps(d, sort_keys=True))


class _WriteErrors:
    """A binary file for torch.save that remembers the OSError of a failed write (a full disk), which torch turns
    into a RuntimeError that does not say why."""

    def __init__(self, file):
        self.file, self.error = file, None

    def write(self, data):
        try:
            return self.file.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self):
        try:
            self.file.flush()
        except OSError as exc:
            self.error = exc
            raise


def _unlink(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
