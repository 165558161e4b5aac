"""Run directories: what a training batch writes, and how checks and notebooks read it back.

Layout of a run directory (one training batch of R runs)::

    manifest.json   every setting, the runs (seed, hyperparameters), data/partition/model summaries,
                    versions, measure descriptions, status, resume history (written atomically)
    metrics.csv     one row per (round, run); round 0 is the initial model; see MEASURES
    checkpoint.pt   the latest checkpoint (written atomically; see trainer.py)
    checkpoint.prev.pt  the one before it (a resume falls back to it when checkpoint.pt cannot be read)

This module imports neither torch nor the trainer, so ``fedtheory check --runs DIR`` stays light.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .._files import write_atomic
from .._jsonutil import jsonable
from .._validation import FedTheoryError

SCHEMA = "fedtheory.empirical.run/1"
MANIFEST, METRICS, CHECKPOINT = "manifest.json", "metrics.csv", "checkpoint.pt"
PREV_CHECKPOINT = "checkpoint.prev.pt"

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


class RunDirError(FedTheoryError):
    pass


# ------------------------------------------------------------------------------------ writing


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    write_atomic(Path(run_dir) / MANIFEST, json.dumps(jsonable(manifest, nonfinite="null"), indent=1, allow_nan=False))




class MetricsWriter:
    """Appends rows to metrics.csv (header fixed at creation); each round's rows are flushed so a killed
    process leaves every completed round on disk; ``truncate_after`` drops rows past a checkpoint."""

    def __init__(self, path: Path, columns: list[str]):
        self.path = Path(path)
        self.columns = list(columns)
        if not self.path.exists():
            write_atomic(self.path, ",".join(self.columns) + "\n")
        else:
            header = self.path.read_text().split("\n", 1)[0].split(",")
            if header != self.columns:
                raise RunDirError(f"{self.path}: columns {header} differ from this run's {self.columns}")
        self._f = open(self.path, "a", newline="")

    def write_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for r in rows:
            w.writerow([_fmt(r.get(c)) for c in self.columns])
        self._f.write(buf.getvalue())
        self._f.flush()

    def sync(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())

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


def truncate_metrics(path: Path, keep_through_round: int) -> list[dict[str, str]]:
    """Keep the header and rows with round <= keep_through_round (rewritten atomically); return the
    dropped complete rows (a partial last line from a killed writer is discarded)."""
    path = Path(path)
    text = path.read_text()
    lines = text.split("\n")
    header = lines[0]
    cols = header.split(",")
    complete = lines[1:-1] if not text.endswith("\n") else [ln for ln in lines[1:] if ln]
    kept, dropped = [], []
    for ln in complete:
        row = next(csv.reader([ln]))
        if len(row) != len(cols):
            continue
        d = dict(zip(cols, row))
        (kept if int(d["round"]) <= keep_through_round else dropped).append((ln, d))
    write_atomic(path, "\n".join([header] + [ln for ln, _ in kept]) + "\n")
    return [d for _, d in dropped]


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


def load_run(path: str | os.PathLike) -> RunLog:
    import pandas as pd

    path = Path(path)
    mpath = path / MANIFEST
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{mpath}: cannot read it ({exc})") from None
    if manifest.get("schema") != SCHEMA:
        raise RunDirError(f"{mpath}: not a fedtheory run manifest (schema {manifest.get('schema')!r}, "
                          f"expected {SCHEMA!r})")
    for key in ("config", "runs"):
        if key not in manifest:
            raise RunDirError(f"{mpath}: no {key!r} entry (a truncated or hand-edited manifest)")
    try:
        metrics = pd.read_csv(path / METRICS, on_bad_lines="skip")
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path / METRICS}: cannot read it ({exc})") from None
    missing = [c for c in ("round", "run", "diverged") if c not in metrics]
    if missing:
        raise RunDirError(f"{path / METRICS}: no column {', '.join(missing)} (not a fedtheory metrics file)")
    measured = [c for c in MEASURES if c in metrics and c not in NON_REPRODUCIBLE and c not in ("round", "run", "seed",
                                                                                              "diverged", "lr")]
    for r in sorted({int(x) for x in metrics["run"]}):
        rows = metrics[metrics["run"] == r]
        if measured and not np.isfinite(rows[measured].to_numpy(dtype=float)).any():
            raise RunDirError(f"{path / METRICS}: run {r} has no finite measurement in any of its {len(rows)} rows "
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
