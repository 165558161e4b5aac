"""Run directories: what a training batch writes, and how checks and notebooks read it back.

Layout of a run directory (one training batch of R runs)::

    manifest.json   every setting, the runs (seed, hyperparameters), data/partition/model summaries,
                    versions, measure descriptions, the columns of metrics.csv, status, resume history (written
                    atomically)
    metrics.csv     one row per (round, run); round 0 is the initial model; see MEASURES and MEASURE_RANGES
    checkpoint.pt   the latest checkpoint (written atomically; see run_directory.py)
    checkpoint.prev.pt  the one before it (a resume falls back to it when checkpoint.pt cannot be read, or when
                    metrics.csv lacks rows from before checkpoint.pt's round)
    .writer.lock    held (flock) by the one process that writes the directory (a second writer is refused)

A run directory may be someone else's: ``load_run`` reads regular files only, within size limits (the metrics'
from the manifest's rounds x runs), and refuses a metrics.csv whose rows contradict the manifest (a round beyond
its T, a run it does not list, a (round, run) twice, another seed) or hold a value outside the measure's declared
range (:data:`MEASURE_RANGES`; the trainer checks every row it writes against the same declaration), naming the
file, the line and the column.

This module imports neither torch nor the trainer, so ``fedtheory check --runs DIR`` stays light.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from .._jsonutil import jsonable
from .._validation import FedTheoryError
from ..files import FileRefused, read_json, read_regular, write_atomic, write_error_text

SCHEMA = "fedtheory.empirical.run/1"
MANIFEST, METRICS, CHECKPOINT = "manifest.json", "metrics.csv", "checkpoint.pt"
PREV_CHECKPOINT = "checkpoint.prev.pt"
LOCK = ".writer.lock"

# Per-round measures. Indexing: the row with round = t describes the global model w^t after t rounds
# ("state" measures) and the round that produced it, t-1 -> t ("round" measures; NaN at t = 0).
MEASURES = {
    "lr": "local learning rate used in the round (round measure)",
    "local_loss": "mean minibatch cross-entropy over the local steps and the selected clients (round measure)",
    "train_loss": "f(w^t) = (1/C) sum_i (1/|D_i|) sum_{z in D_i} loss(w^t; z): the clients' empirical risk, "
                  "no augmentation (state; NaN between evaluations)",
    "train_acc": "accuracy of w^t averaged over clients as train_loss is (state)",
    "test_loss": "mean cross-entropy of w^t on the test split (state)",
    "test_acc": "accuracy of w^t on the test split (state)",
    "gen_gap": "test_loss - train_loss: the generalization error F(w^t) - f(w^t) of seed 000 eq. (3), "
               "with F estimated on the test split (state)",
    "gen_gap_acc": "train_acc - test_acc (state)",
    "delta": "Delta^t = (1/C) sum_{i in C} ||w_i^last - w^t||^2, w_i^last = client i's latest local model "
             "(w^0 before its first round): seed 000 Table 4 / Thm 3 (state)",
    "delta_code": "(1/N) sum_{i in N_t} ||w_{i,K} - w^t||^2 over the round's clients: the FedInit authors' "
                  "simulator (shared README) (round)",
    "drift": "(1/N) sum_{i in N_t} ||w_{i,K} - w^{t-1}||^2 (round)",
    "update_norm": "||w^t - w^{t-1}||, the global update norm (round)",
    "d_t": "sum_i ||Delta_i|| / ||sum_i Delta_i||, Delta_i = w_{i,K} - w_{i,0}: seed 003 Thm 1 (>= 1) (round)",
    "cos_mean": "mean over pairs i != j of cos(Delta_i, Delta_j) (round)",
    "cos_abs_mean": "mean over pairs i != j of |cos(Delta_i, Delta_j)| (round)",
    "cos_min": "min over pairs of cos(Delta_i, Delta_j) (round)",
    "cos_max": "max over pairs of cos(Delta_i, Delta_j) (round)",
    "unbiased_gap": "||(1/N) sum_i w_{i,0} - w^{t-1}|| (round)",
    "diverged": "1 once the run's model became non-finite or exceeded the divergence threshold (then "
                "every measure is NaN)",
    "time_s": "wall-clock seconds of the round for the whole batch (not reproducible; ignored by comparisons)",
}
NON_REPRODUCIBLE = ("time_s",)

# The columns of metrics.csv, in the trainer's order: ID_COLUMNS, one hp.NAME per swept hyperparameter, beta,
# ROUND_COLUMNS, STATE_COLUMNS, the algorithm's plug-in measures (sorted), diverged, time_s. The manifest lists them
# under "columns"; every one it lists must be in metrics.csv (CORE_COLUMNS where a manifest lists none).
ID_COLUMNS = ("round", "run", "seed")
ROUND_COLUMNS = ("lr", "local_loss", "delta_code", "drift", "update_norm", "d_t", "cos_mean", "cos_abs_mean",
                 "cos_min", "cos_max", "unbiased_gap")
STATE_COLUMNS = ("train_loss", "train_acc", "test_loss", "test_acc", "gen_gap", "gen_gap_acc", "delta")
CORE_COLUMNS = ID_COLUMNS + ("beta",) + ROUND_COLUMNS + STATE_COLUMNS + ("diverged",)


@dataclass(frozen=True)
class Range:
    """The values a column can hold: [low, high] (None: unbounded on that side), with ``tol`` of rounding allowed
    beyond either end. NaN means "not measured" (a round measure at t = 0, a state measure between evaluations,
    every measure of a diverged run) and is allowed where ``nan_ok``; +-inf only where ``infinite``; ``integer``:
    whole numbers only. ``why``: where the range comes from."""

    low: float | None = None
    high: float | None = None
    tol: float = 1e-6
    infinite: bool = False
    integer: bool = False
    nan_ok: bool = True
    why: str = ""

    def text(self) -> str:
        kind = "an integer" if self.integer else "a finite number" if not self.infinite else "a number"
        if self.low is not None and self.high is not None:
            out = f"{kind} in [{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            out = f"{kind} >= {self.low:g}"
        elif self.high is not None:
            out = f"{kind} <= {self.high:g}"
        else:
            out = kind
        if not self.nan_ok:
            out += ", never empty or NaN"
        return out + (f" ({self.why})" if self.why else "")

    def outside(self, values: np.ndarray) -> np.ndarray:
        """A mask of the entries of ``values`` (float) this range refuses."""
        v = np.asarray(values, dtype=float)
        nan = np.isnan(v)
        bad = nan if not self.nan_ok else np.zeros(v.shape, bool)
        with np.errstate(invalid="ignore"):
            if not self.infinite:
                bad |= np.isinf(v)
            if self.low is not None:
                bad |= v < self.low - self.tol
            if self.high is not None:
                bad |= v > self.high + self.tol
            if self.integer:
                bad |= np.isfinite(v) & (v != np.round(v))
        return bad


_NONNEG = "a sum of squares or a norm"
#: The declared range of every column the trainer writes (a plug-in's measures have none). The trainer checks each
#: row it writes against it (a value outside is a bug of the tool: exit 3); ``load_run`` refuses a metrics.csv that
#: breaks it (bad input: exit 2), naming file, line and column. d_t >= 1 (the triangle inequality) is not declared
#: here: it is what the check fedmrur.exp.d_t tests.
MEASURE_RANGES: dict[str, Range] = {
    "round": Range(0, None, tol=0, integer=True, nan_ok=False, why="0 to the manifest's rounds"),
    "run": Range(0, None, tol=0, integer=True, nan_ok=False, why="an index of the manifest's runs"),
    "seed": Range(0, None, tol=0, integer=True, nan_ok=False, why="the manifest's seed of the run"),
    "beta": Range(why="the relaxed coefficient"),
    "lr": Range(0, None, why="a step size"),
    "local_loss": Range(0, None, why="a mean cross-entropy"),
    "train_loss": Range(0, None, why="a mean cross-entropy"),
    "test_loss": Range(0, None, why="a mean cross-entropy"),
    "train_acc": Range(0, 1, why="an accuracy"),
    "test_acc": Range(0, 1, why="an accuracy"),
    "gen_gap": Range(why="a difference of two losses"),
    "gen_gap_acc": Range(-1, 1, why="a difference of two accuracies"),
    "delta": Range(0, None, why=_NONNEG),
    "delta_code": Range(0, None, why=_NONNEG),
    "drift": Range(0, None, why=_NONNEG),
    "update_norm": Range(0, None, why=_NONNEG),
    "unbiased_gap": Range(0, None, why=_NONNEG),
    "d_t": Range(0, None, infinite=True, why="a ratio of norms, +inf when the updates cancel exactly"),
    "cos_mean": Range(-1, 1, tol=1e-5, why="a cosine (float64 Gram: within 1e-9 of "
                                           "[-1, 1]; 1e-5 reads runs written before)"),
    "cos_abs_mean": Range(0, 1, tol=1e-5, why="an absolute cosine (float64 Gram; 1e-5 reads runs written before)"),
    "cos_min": Range(-1, 1, tol=1e-5, why="a cosine (float64 Gram: within 1e-9 of "
                                          "[-1, 1]; 1e-5 reads runs written before)"),
    "cos_max": Range(-1, 1, tol=1e-5, why="a cosine (float64 Gram: within 1e-9 of "
                                          "[-1, 1]; 1e-5 reads runs written before)"),
    "diverged": Range(0, 1, tol=0, integer=True, nan_ok=False, why="0 or 1, and 1 from the round it diverged on"),
    "time_s": Range(0, None, why="seconds"),
}


def out_of_range(columns: Mapping[str, Any]) -> list[tuple[str, int, float, Range]]:
    """(column, index, value, range) of every value of ``columns`` (name -> values) outside its column's declared
    range (:data:`MEASURE_RANGES`; columns without one are not checked), first by column order then by index."""
    out = []
    for name, values in columns.items():
        rng = MEASURE_RANGES.get(name)
        if rng is None:
            continue
        v = np.asarray(values, dtype=float).reshape(-1)
        for i in np.flatnonzero(rng.outside(v)):
            out.append((name, int(i), float(v[i]), rng))
    return out


class RunDirError(FedTheoryError):
    pass


# ------------------------------------------------------------------------------------ limits

MAX_MANIFEST_BYTES = 64 << 20  # a manifest lists settings, runs and summaries: kilobytes, megabytes at most
MAX_METRICS_BYTES = 2 << 30  # whatever the manifest says
MAX_CHECKPOINT_BYTES = 16 << 30  # every run's model, optimizer and generator states (ResNet-18 x 48 runs: ~4 GB)
ROW_BYTES_PER_COLUMN = 64  # room per cell of a row (a float's shortest repr has at most 24 characters)


def metrics_limit(rounds: int, runs: int, columns: int) -> int:
    """The most bytes a metrics.csv of (rounds + 1) x runs rows of ``columns`` columns may have (generous: 64 per
    cell and a header), capped at MAX_METRICS_BYTES."""
    per_row = ROW_BYTES_PER_COLUMN * max(columns, 1) + 64
    return int(min(MAX_METRICS_BYTES, per_row * (max(rounds, 0) + 1) * max(runs, 1) + per_row + 4096))


# ------------------------------------------------------------------------------------ the writer's lock


class RunDirLock:
    """The exclusive right to write a run directory: an flock on ``DIR/.writer.lock``, taken without waiting (a
    second writer is refused at once, naming the first) and released by the kernel when its holder dies (no stale
    lock). The file stays (removing it would let two writers lock two different files); it holds the holder's pid,
    host and start time."""

    def __init__(self, run_dir: str | os.PathLike):
        self.dir = Path(run_dir)
        self.path = self.dir / LOCK
        self._fd: int | None = None

    def acquire(self) -> "RunDirLock":
        import fcntl

        try:  # never through a symbolic link (it would overwrite its target), never blocking on a FIFO
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            why = ("a symbolic link" if os.path.islink(self.path) else f"cannot be opened ({exc.strerror or exc})")
            raise RunDirError(f"{self.path}: the run directory's lock file is {why}: refused (fedtheory writes it "
                              "itself as a regular file; remove it)") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RunDirError(f"{self.path}: the run directory's lock file is not a regular file: refused (fedtheory "
                              "writes it itself as a regular file; remove it)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.read(fd, 400).decode(errors="replace").strip() or "another process"
            finally:
                os.close(fd)
            raise RunDirError(f"{self.dir}: another fedtheory process is writing this run directory ({holder}); "
                              f"wait for it to finish or stop it (Ctrl-C or SIGTERM: it checkpoints and stops), then "
                              f"resume") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n"
                 .encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunDirLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# ------------------------------------------------------------------------------------ writing


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    try:
        write_atomic(Path(run_dir) / MANIFEST, json.dumps(jsonable(manifest, nonfinite="null"), indent=1,
                                                          allow_nan=False))
    except OSError as exc:
        raise RunDirError(f"{Path(run_dir) / MANIFEST}: could not be written ({write_error_text(exc, run_dir)})") \
            from None


class MetricsWriter:
    """Appends rows to metrics.csv (header fixed at creation); each round's rows go out in one write and are
    flushed, so a killed process leaves every completed round on disk (and at most one torn last line, which
    ``complete_rounds`` finds and a resume recomputes); ``truncate_metrics`` drops rows past a checkpoint."""

    def __init__(self, path: Path, columns: list[str]):
        self.path = Path(path)
        self.columns = list(columns)
        if not self.path.exists():
            write_atomic(self.path, ",".join(self.columns) + "\n")
        else:
            header = _header(self.path)
            if header != self.columns:
                raise RunDirError(f"{self.path}: columns {header} differ from this run's {self.columns}")
        self._f = open(self.path, "a", newline="")

    def write_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for r in rows:
            w.writerow([_fmt(r.get(c)) for c in self.columns])
        try:
            self._f.write(buf.getvalue())
            self._f.flush()
        except OSError as exc:
            raise RunDirError(f"{self.path}: rows could not be written ({write_error_text(exc, self.path.parent)}); "
                              "the rounds before are kept: make room and continue with --resume") from None

    def sync(self) -> None:
        try:
            self._f.flush()
            os.fsync(self._f.fileno())
        except OSError as exc:
            raise RunDirError(f"{self.path}: rows could not be written ({write_error_text(exc, self.path.parent)}); "
                              "make room and continue with --resume") from None

    def close(self) -> None:
        if not self._f.closed:
            self.sync()
            self._f.close()


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "nan"
        return repr(v)  # shortest round-trip representation: the CSV keeps every bit
    return str(v)


def _header(path: Path) -> list[str]:
    with open(path, newline="") as f:
        return next(csv.reader([f.readline().rstrip("\n")]), [])


@dataclass
class MetricsScan:
    """What ``scan_metrics`` found in a writer's own metrics.csv: ``complete_through``, the last round t such that
    rounds 0..t each hold exactly one well-formed row per run (-1: not even round 0); ``lines`` the complete data
    lines with their (round, run) (None where the line is malformed); ``torn``: the file ends in a line without its
    newline (a write cut short)."""

    header: list[str]
    complete_through: int
    lines: list[tuple[str, tuple[int, int] | None]]
    torn: bool

    def describe(self) -> str:
        return (f"rounds 0-{self.complete_through} complete" if self.complete_through >= 0 else "no complete round") + \
            ("; a torn last line (a write cut short)" if self.torn else "")


def scan_metrics(path: str | os.PathLike, n_runs: int) -> MetricsScan:
    """Read a run's metrics.csv as its writer sees it on resume (see :class:`MetricsScan`)."""
    path = Path(path)
    try:
        text = read_regular(path, MAX_METRICS_BYTES, "metrics file").decode("utf-8", errors="replace")
    except FileRefused as exc:
        raise RunDirError(str(exc)) from None
    lines = text.split("\n")
    torn = not text.endswith("\n")
    if len(lines) < 2:  # no complete header line
        return MetricsScan([], -1, [], bool(text))
    header = next(csv.reader([lines[0]]), [])
    body = lines[1:-1]  # the part after the last newline is empty or torn
    ir, ik = (header.index("round"), header.index("run")) if {"round", "run"} <= set(header) else (None, None)
    parsed: list[tuple[str, tuple[int, int] | None]] = []
    for ln in body:
        key = None
        row = next(csv.reader([ln]), [])
        if ir is not None and len(row) == len(header):
            try:
                key = (int(row[ir]), int(row[ik]))
            except ValueError:
                key = None
        parsed.append((ln, key))
    per_round: dict[int, list[int]] = {}
    for ln, key in parsed:
        if key is None:  # what follows a malformed line is not trusted
            break
        per_round.setdefault(key[0], []).append(key[1])
    t = -1
    while sorted(per_round.get(t + 1, [])) == list(range(n_runs)):
        t += 1
    return MetricsScan(header, t, parsed, torn)


def truncate_metrics(path: Path, keep_through_round: int) -> list[dict[str, str]]:
    """Keep the header and rows with round <= keep_through_round (rewritten atomically); return the dropped
    complete rows (a partial last line from a killed writer, and malformed lines, are discarded). The caller keeps
    only rounds that ``scan_metrics`` found complete."""
    path = Path(path)
    scan = scan_metrics(path, 0)
    kept, dropped, seen, damaged = [], [], set(), False
    for ln, key in scan.lines:
        damaged = damaged or key is None  # from a malformed line on, nothing is kept
        if key is None:
            continue
        if key[0] <= keep_through_round and not damaged and key not in seen:
            kept.append(ln)
            seen.add(key)
        else:
            dropped.append(dict(zip(scan.header, next(csv.reader([ln])))))
    header = ",".join(scan.header)
    write_atomic(path, "\n".join([header] + kept) + "\n")
    return dropped


# ------------------------------------------------------------------------------------ reading


@dataclass
class RunLog:
    """One run directory: its manifest and metrics (a pandas DataFrame, one row per (round, run))."""

    path: Path
    manifest: dict[str, Any]
    metrics: Any = field(repr=False)

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest["config"]

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.manifest["runs"]

    @property
    def status(self) -> str:
        return self.manifest.get("status", "unknown")

    def run_frame(self, run: int):
        return self.metrics[self.metrics["run"] == run].sort_values("round")

    def final(self, run: int, column: str) -> float:
        """The value of ``column`` at the last round where it was recorded (NaN if never)."""
        f = self.run_frame(run)
        vals = f[column].to_numpy(dtype=float)
        ok = np.flatnonzero(np.isfinite(vals))
        return float(vals[ok[-1]]) if ok.size else float("nan")

    def diverged(self, run: int) -> bool:
        vals = self.run_frame(run)["diverged"].to_numpy(dtype=float)
        return bool(np.any(vals[np.isfinite(vals)] > 0))


def read_manifest(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a run directory, checked: a regular file of at most MAX_MANIFEST_BYTES holding a JSON
    object of this SCHEMA with a ``config`` object (``rounds`` a non-negative integer) and ``runs``, a list of
    objects with ``run`` (their index), ``seed`` (a non-negative integer) and ``hyperparameters`` (an object). Any
    other file is a RunDirError naming it and what is wrong."""
    mpath = Path(run_dir) / MANIFEST
    try:
        manifest = read_json(mpath, MAX_MANIFEST_BYTES, "run manifest")
    except FileRefused as exc:
        raise RunDirError(str(exc)) from None
    if not isinstance(manifest, dict):
        raise RunDirError(f"{mpath}: not a fedtheory run manifest (a JSON {type(manifest).__name__}, expected an "
                          f"object with schema {SCHEMA!r})")
    if manifest.get("schema") != SCHEMA:
        raise RunDirError(f"{mpath}: not a fedtheory run manifest (schema {manifest.get('schema')!r}, "
                          f"expected {SCHEMA!r})")
    for key in ("config", "runs"):
        if key not in manifest:
            raise RunDirError(f"{mpath}: no {key!r} entry (a truncated or hand-edited manifest)")
    cfg, runs = manifest["config"], manifest["runs"]
    if not isinstance(cfg, dict):
        raise RunDirError(f"{mpath}: 'config' is a {type(cfg).__name__}, expected an object of settings")
    rounds = cfg.get("rounds")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
        raise RunDirError(f"{mpath}: config.rounds = {rounds!r}, expected a non-negative integer")
    if not isinstance(runs, list) or not runs:
        raise RunDirError(f"{mpath}: 'runs' is {runs!r:.60}, expected a non-empty list of runs")
    for i, r in enumerate(runs):
        ok = (isinstance(r, dict) and r.get("run") == i and isinstance(r.get("seed"), int)
              and not isinstance(r.get("seed"), bool) and r["seed"] >= 0 and isinstance(r.get("hyperparameters"), dict))
        if not ok:
            raise RunDirError(f"{mpath}: runs[{i}] is {r!r:.80}, expected {{'run': {i}, 'seed': a non-negative "
                              f"integer, 'hyperparameters': {{...}}}}")
    cols = manifest.get("columns")
    if cols is not None and not (isinstance(cols, list) and all(isinstance(c, str) for c in cols)):
        raise RunDirError(f"{mpath}: 'columns' is {cols!r:.60}, expected the list of metrics.csv's column names")
    return manifest


def _parse_metrics(path: Path, text: str, required: list[str]) -> tuple[Any, list[int]]:
    """metrics.csv's text -> (DataFrame of its complete lines, each row's line number). A last line without its
    newline (a killed writer's) is left out; any other line with the wrong number of fields, a missing required
    column, or a cell of a declared column that is not a number is a RunDirError naming the line and column."""
    import pandas as pd

    lines = text.split("\n")
    if len(lines) < 2:
        raise RunDirError(f"{path}: no header line (an empty or truncated file)")
    header = next(csv.reader([lines[0]]), [])
    missing = [c for c in required if c not in header]
    if missing:
        raise RunDirError(f"{path}: no column {', '.join(missing)} (the manifest's columns; " +
                          ("not a fedtheory metrics file)" if "round" in missing else "a truncated or edited file)"))
    dup = sorted({c for c in header if header.count(c) > 1})
    if dup:
        raise RunDirError(f"{path}: column {', '.join(dup)} appears twice in the header")
    body = lines[1:-1]  # the part after the last newline is empty, or a torn line
    for i, row in enumerate(csv.reader(body)):
        if len(row) != len(header):
            raise RunDirError(f"{path}, line {i + 2}: {len(row)} fields, the header has {len(header)}")
    numbers = [c for c in header if c in MEASURE_RANGES]
    frame = pd.read_csv(io.StringIO("\n".join([lines[0]] + body) + "\n"), dtype={c: str for c in numbers},
                        keep_default_na=False)
    for c in numbers:
        cells = frame[c]
        conv = pd.to_numeric(cells.str.strip().replace({"": "nan"}), errors="coerce")
        bad = conv.isna() & ~cells.str.strip().str.lower().isin(["", "nan"])
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise RunDirError(f"{path}, line {i + 2}, column {c}: {cells.iat[i]!r} is not a number")
        frame[c] = conv
    other = [c for c in header if c not in MEASURE_RANGES]
    if other:  # as pandas reads them (hyperparameters, plug-in measures)
        typed = pd.read_csv(io.StringIO("\n".join([lines[0]] + body) + "\n"), usecols=other)
        for c in other:
            frame[c] = typed[c]
    for c in ("round", "run", "seed", "diverged"):
        if c in frame and len(frame):
            frame[c] = frame[c].astype(np.int64) if frame[c].notna().all() else frame[c]
    return frame, list(range(2, len(body) + 2))


def _check_metrics(path: Path, frame, lines: list[int], manifest: dict[str, Any]) -> None:
    """The rows against the declared ranges and the manifest: rounds 0..T, the manifest's runs and seeds, each
    (round, run) once, ``diverged`` never going back to 0. A RunDirError names file, line and column."""
    where = lambda i: f"{path}, line {lines[i]}"  # noqa: E731
    bad = out_of_range({c: frame[c].to_numpy(dtype=float) for c in frame.columns if c in MEASURE_RANGES})
    if bad:
        c, i, v, rng = min(bad, key=lambda b: b[1])
        raise RunDirError(f"{where(i)}, column {c}: {v!r} is outside its range: {rng.text()}")
    T, runs = int(manifest["config"]["rounds"]), manifest["runs"]
    rnd, run = frame["round"].to_numpy(dtype=np.int64), frame["run"].to_numpy(dtype=np.int64)
    for col, vals, hi, what in (("round", rnd, T, f"the manifest's {T} rounds"),
                                ("run", run, len(runs) - 1, f"the manifest's {len(runs)} run(s)")):
        over = np.flatnonzero(vals > hi)
        if over.size:
            i = int(over[0])
            raise RunDirError(f"{where(i)}, column {col}: {int(vals[i])} is beyond {what} (rows the manifest does not "
                              f"describe: {over.size})")
    key = rnd * len(runs) + run
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    if np.any(counts > 1):
        seen: dict[int, int] = {}
        for i, k in enumerate(key.tolist()):
            if k in seen:
                raise RunDirError(f"{where(i)}: (round {int(rnd[i])}, run {int(run[i])}) again (first on line "
                                  f"{lines[seen[k]]}); {int((counts - 1).sum())} repeated row(s)")
            seen[k] = i
    if "seed" in frame:
        seeds = np.array([r["seed"] for r in runs], dtype=np.int64)
        wrong = np.flatnonzero(frame["seed"].to_numpy(dtype=np.int64) != seeds[run])
        if wrong.size:
            i = int(wrong[0])
            raise RunDirError(f"{where(i)}, column seed: {int(frame['seed'].iat[i])}, but the manifest's run "
                              f"{int(run[i])} has seed {int(seeds[run[i]])}")
    div = frame["diverged"].to_numpy(dtype=np.int64)
    order = np.lexsort((rnd, run))
    d, r_ = div[order], run[order]
    back = np.flatnonzero((r_[1:] == r_[:-1]) & (d[1:] < d[:-1]))
    if back.size:
        i = int(order[back[0] + 1])
        raise RunDirError(f"{where(i)}, column diverged: 0 after the run diverged (run {int(run[i])} round "
                          f"{int(rnd[i])}): {MEASURE_RANGES['diverged'].why}")


def load_run(path: str | os.PathLike) -> RunLog:
    """Read and check one run directory (see the module docstring): a RunDirError names the file, line and
    column of anything that is not what ``fedtheory train`` writes."""
    path = Path(path)
    manifest = read_manifest(path)
    T, R = int(manifest["config"]["rounds"]), len(manifest["runs"])
    required = list(manifest.get("columns") or CORE_COLUMNS)
    xpath = path / METRICS
    try:
        data = read_regular(xpath, metrics_limit(T, R, len(required)), "metrics file")
    except FileRefused as exc:
        raise RunDirError(f"{exc} ({MANIFEST} describes {T} rounds + round 0 x {R} run(s) of {len(required)} "
                          f"columns)" if "over the" in exc.why else str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunDirError(f"{xpath}: not UTF-8 text (byte {exc.start})") from None
    metrics, lines = _parse_metrics(xpath, text, required)
    _check_metrics(xpath, metrics, lines, manifest)
    measured = [c for c in MEASURES if c in metrics and c not in NON_REPRODUCIBLE and c not in ("round", "run", "seed",
                                                                                              "diverged", "lr")]
    for r in sorted({int(x) for x in metrics["run"]}):
        rows = metrics[metrics["run"] == r]
        if measured and not np.isfinite(rows[measured].to_numpy(dtype=float)).any():
            raise RunDirError(f"{xpath}: run {r} has no finite measurement in any of its {len(rows)} rows "
                              f"({', '.join(measured[:4])}, ...): nothing can be checked on it")
    return RunLog(path, manifest, metrics)


def find_runs(root: str | os.PathLike, errors: list[str] | None = None) -> list[RunLog]:
    """Every readable run directory at or below ``root`` (sorted by path). A directory whose manifest or metrics
    cannot be used is left out and described in ``errors`` (when given), never skipped silently."""
    root = Path(root)
    if not root.is_dir():
        raise RunDirError(f"{root}: not a directory")
    paths = sorted({p.parent for p in root.rglob(MANIFEST)})
    out = []
    for p in paths:
        try:
            out.append(load_run(p))
        except RunDirError as exc:
            if errors is None:
                raise
            errors.append(str(exc))
    return out


#: The unit of each column of metrics.csv, for the axes that draw it (a loss is the mean cross-entropy, in nats).
MEASURE_UNITS = {
    "lr": "step size", "local_loss": "nats", "train_loss": "nats", "test_loss": "nats", "gen_gap": "nats",
    "train_acc": "fraction correct", "test_acc": "fraction correct", "gen_gap_acc": "fraction correct",
    "delta": "squared parameter distance", "delta_code": "squared parameter distance",
    "drift": "squared parameter distance", "update_norm": "parameter distance", "d_t": "ratio, >= 1",
    "cos_mean": "cosine", "cos_abs_mean": "cosine", "cos_min": "cosine", "cos_max": "cosine",
    "unbiased_gap": "parameter distance", "diverged": "0 or 1", "time_s": "seconds",
}
#: What a training run's picture draws over the rounds, in order: the clients' divergence, the generalization gap and
#: the test accuracy (column -> the quantity in words).
CURVES = {
    "delta": "Delta^t, the clients' divergence",
    "gen_gap": "generalization gap, test - train loss",
    "test_acc": "test accuracy",
}


def round_curves(logs: Iterable[RunLog], columns: Iterable[str] = tuple(CURVES)) -> list[dict[str, Any]]:
    """Each run directory's ``columns`` over the rounds, one curve per setting (the runs that share their
    hyperparameters and beta, differing in the seed): what ``fedtheory report`` draws of a training run, from the run
    directories (``--runs DIR``) or from the results file of ``fedtheory check --runs DIR`` (which holds this).

    Returns
    -------
    list of dict, one per run directory (in the order given)
        ``dir``, ``label`` (data set, model, partition, clients, rounds), ``algorithm``, ``status``, ``units``
        (column -> ``MEASURE_UNITS``), ``quantities`` (column -> ``CURVES``' words where it has them),
        ``definitions`` (column -> ``MEASURES``) and
        ``settings``: each {``setting`` (e.g. 'beta=0.05'), ``seeds``, ``diverged`` (the seeds whose run diverged),
        ``curves``: column -> {``round``: the rounds where some run of the setting measured it, ``mean``, ``se``
        (the standard error over those runs; None for one run), ``n`` (the runs measured at each round)}}. A value a
        run did not measure (between evaluations, after it diverged) is left out of that round's mean; a round no run
        measured is left out. Plain JSON (numbers rounded to 6 significant digits)."""
    cols = list(columns)
    out = []
    for lg in logs:
        m = lg.metrics
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in lg.runs:
            hp = {**r.get("hyperparameters", {}), **({"beta": r["beta"]} if "beta" in r else {})}
            label = ", ".join(f"{k}={_short_value(v)}" for k, v in sorted(hp.items())) or "default settings"
            groups.setdefault(label, []).append(r)
        settings = []
        for label, runs in groups.items():
            ids = [r["run"] for r in runs]
            curves = {}
            for c in cols:
                if c not in m:
                    continue
                piv = m[m["run"].isin(ids)].pivot(index="round", columns="run", values=c).sort_index()
                vals = piv.to_numpy(dtype=float)
                ok = np.isfinite(vals)
                keep = ok.any(axis=1)
                if not keep.any():
                    continue
                vals, ok = vals[keep], ok[keep]
                n = ok.sum(axis=1)
                mean = np.where(ok, vals, 0.0).sum(axis=1) / n
                dev = np.where(ok, vals - mean[:, None], 0.0)
                with np.errstate(invalid="ignore", divide="ignore"):
                    se = np.sqrt((dev ** 2).sum(axis=1) / (n - 1) / n)
                curves[c] = {"round": [int(t) for t in piv.index.to_numpy()[keep]], "mean": [_sig6(v) for v in mean],
                             "se": None if len(ids) < 2 else [_sig6(v) if k > 1 else None for v, k in zip(se, n)],
                             "n": [int(k) for k in n]}
            settings.append({"setting": label, "seeds": [r["seed"] for r in runs],
                             "diverged": [r["seed"] for r in runs if lg.diverged(r["run"])], "curves": curves})
        cfg = lg.config
        out.append({"dir": str(lg.path), "label": run_label(cfg), "algorithm": str(cfg.get("algorithm", "?")),
                    "status": lg.status, "units": {c: MEASURE_UNITS.get(c, "") for c in cols},
                    "quantities": {c: CURVES.get(c, c) for c in cols},
                    "definitions": {c: MEASURES.get(c, "") for c in cols}, "settings": settings})
    return out


def run_label(cfg: Mapping[str, Any]) -> str:
    """A run directory's setting in one line (data set, model, partition, clients, rounds): the problem of the rows
    of a check on logged runs, and the title of its training picture.

    Parameters
    ----------
    cfg : mapping
        A run directory's configuration (``RunLog.config``: dataset, model, partition, clients, rounds).

    Returns
    -------
    str
        E.g. ``"synthetic/cnn2/dirichlet(0.5), 10 of 10 clients, T=50"``.
    """
    part = cfg["partition"]
    if part.startswith("dirichlet"):
        part += f"({cfg['alpha']:g})"
    elif part == "pathological":
        part += f"({cfg['classes_per_client']})"
    n = cfg["clients_per_round"] or cfg["n_clients"]
    return f"{cfg['dataset']}/{cfg['model']}/{part}, {n} of {cfg['n_clients']} clients, T={cfg['rounds']}"


def _short_value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _sig6(v: float) -> float | None:
    return float(f"{v:.6g}") if np.isfinite(v) else None


def runs_table(logs: list[RunLog]):
    """One row per run of every log: directory, run index, seed, algorithm, hyperparameters, final measures."""
    import pandas as pd

    rows = []
    for lg in logs:
        for r in lg.runs:
            row = {"dir": str(lg.path), "run": r["run"], "seed": r["seed"], "algorithm": lg.config["algorithm"],
                   "beta": r.get("beta", 0.0), **{f"hp.{k}": v for k, v in r["hyperparameters"].items()},
                   "status": lg.status, "diverged": lg.diverged(r["run"])}
            for c in ("train_loss", "test_loss", "test_acc", "gen_gap", "delta", "delta_code"):
                if c in lg.metrics:
                    row[f"final_{c}"] = lg.final(r["run"], c)
            rows.append(row)
    return pd.DataFrame(rows)
