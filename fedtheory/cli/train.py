"""`fedtheory train`: a batch of training runs into a run directory (or a sweep of cells on an executor), resumed
with --resume; --list-algorithms."""
from __future__ import annotations

import inspect
import json
import os
import shlex
import sys

from .._validation import ParameterError
from ..signals import exit_status
from .execution import executor, report_execution
from .tables import print_table

__all__ = ["MAX_SETTINGS_BYTES", "cmd_train"]


_TRAIN_FIELDS = ("dataset", "data_dir", "partition", "alpha", "classes_per_client", "samples_per_client",
                 "partition_seed", "augment", "crop_padding", "model", "algorithm", "seeds", "n_clients",
                 "clients_per_round", "rounds", "local_epochs", "local_steps", "batch_size", "lr", "lr_decay",
                 "weight_decay", "max_grad_norm", "path", "client_chunk", "device", "dtype", "deterministic",
                 "eval_every", "eval_batch_size", "checkpoint_every")


def cmd_train(args) -> int:
    from ..empirical import algorithms as A
    from ..empirical.config import TrainConfig, parse_hyperparameters
    from ..empirical.run_directory import TrainingInterrupted
    from ..empirical.runs import MANIFEST, read_manifest
    from ..empirical.sweep import SWEEP, is_sweep, train_sweep
    from ..empirical.trainer import train

    if args.list_algorithms:
        rows = []
        for name, spec in A.algorithms().items():
            hp = ", ".join(f"{k}"
                           + ("" if v is inspect.Parameter.empty else f"={v}") for k, v in spec.hyperparameters.items())
            rows.append([name, hp, spec.source])
        print_table(["algorithm", "hyperparameters (default)", "source"], rows)
        print("\nAny algorithm also runs as NAME+RI (FedInit's relaxed initialisation; hyperparameter beta, or ri_beta "
              "when the algorithm has its own beta). Gossip algorithms train every client every round; FedShift's "
              "inferior clients and layers come from the partition and the model.")
        return 0
    if not args.out:
        raise ParameterError("--out", None, "a run directory (e.g. runs/fedinit-beta-sweep)")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ParameterError("--out", args.out, "a run directory (new, or an existing one with --resume), not a file")
    given = {k: getattr(args, k) for k in _TRAIN_FIELDS if hasattr(args, k)}
    if hasattr(args, "threads"):
        given["threads"] = args.threads
    if hasattr(args, "hp"):
        given["hyperparameters"] = parse_hyperparameters(args.hp)
    for opt, key in (("model_option", "model_options"), ("dataset_option", "dataset_options")):
        if hasattr(args, opt):
            given[key] = {k: (tuple(v) if isinstance(v, list) else v)
                          for k, v in parse_hyperparameters(getattr(args, opt)).items()}
    base: dict = {}
    if args.config:
        base = _read_json_object("--config", args.config, "a JSON file of TrainConfig fields")
    if args.resume and not is_sweep(args.out):
        if not os.path.exists(os.path.join(args.out, MANIFEST)):
            raise ParameterError("--out", args.out, "a run directory with manifest.json to resume (none found)")
        stored = read_manifest(args.out)["config"]
        base = {**stored, **{k: v for k, v in base.items()}}
    progress = not args.no_progress and sys.stderr.isatty()
    if args.workers is not None or args.scheduler is not None or (args.resume and is_sweep(args.out)):
        if args.resume and is_sweep(args.out):
            stored = _read_json_object("--out", os.path.join(args.out, SWEEP), f"a sweep directory's {SWEEP}")
            if not isinstance(stored.get("config", {}), dict):
                raise ParameterError("--out", os.path.join(args.out, SWEEP), f"a sweep directory's {SWEEP} (its "
                                     "'config' is not an object)")
            base = {**stored.get("config", {}), **base}
        config = TrainConfig.from_dict({**base, **given}).validated()  # bad settings before any worker starts
        from ..parallel import SerialExecutor

        # resumed without workers: the cells' threads as the workers' (--worker-threads), so the bits continue alike
        with executor(args) or SerialExecutor(threads=args.worker_threads) as runner:
            try:
                res = train_sweep(config, args.out, runner, resume=args.resume, progress=progress)
            except TrainingInterrupted as exc:
                print(f"fedtheory: {exc}", file=sys.stderr)
                return exit_status(exc.signum)
            _print_train_summary(res, args.format)
            report_execution(runner)
        return 0 if res.outcome.ok else 1
    config = TrainConfig.from_dict({**base, **given})
    try:
        res = train(config, args.out, resume=args.resume, progress=progress)
    except TrainingInterrupted as exc:
        print(f"fedtheory: {exc}", file=sys.stderr)
        return exit_status(exc.signum)
    _print_train_summary(res, args.format)
    return 0


MAX_SETTINGS_BYTES = 16 << 20  # a --config file or a sweep.json: settings, kilobytes


def _read_json_object(flag: str, path: str, what: str) -> dict:
    """A JSON object from a regular file of at most MAX_SETTINGS_BYTES, or a ParameterError naming ``flag``."""
    from ..files import FileRefused, read_json

    try:
        data = read_json(path, MAX_SETTINGS_BYTES, "settings file")
    except FileRefused as exc:
        raise ParameterError(flag, path, f"{what} ({exc.why})") from None
    if not isinstance(data, dict):
        raise ParameterError(flag, path, f"{what}: a JSON object, not a {type(data).__name__}")
    return data


def _print_train_summary(res, fmt: str) -> None:
    import numpy as np

    from ..checks.output import fmt_number as _num

    m = res.metrics
    rows = []
    for r in res.manifest["runs"]:
        f = m[m["run"] == r["run"]].sort_values("round") if "run" in m else m
        if f.empty:  # a sweep cell that failed (named in the executor's summary)
            continue
        last = lambda c: next((float(v) for v in f[c].to_numpy(dtype=float)[::-1] if np.isfinite(v)), float("nan"))
        rows.append({"run": r["run"], "seed": r["seed"], **r["hyperparameters"], "beta": r.get("beta", 0.0),
                     "rounds": int(f["round"].max()), "test_acc": last("test_acc"), "train_loss": last("train_loss"),
                     "gen_gap": last("gen_gap"), "delta": last("delta"), "delta_code": last("delta_code"),
                     "sum_sqrt_delta": float(np.nansum(np.sqrt(f["delta"].to_numpy(dtype=float)[1:]))),
                     "diverged": bool(f["diverged"].max() > 0)})
    if fmt == "json":
        print(json.dumps({"run_dir": str(res.run_dir), "status": res.manifest.get("status"), "runs": rows}, indent=2))
        return
    if not rows:
        print("no completed runs")
        return
    keys = list(rows[0])
    print_table(keys, [[_num(r[k]) if not isinstance(r[k], (bool, str)) else str(r[k]) for k in keys] for r in rows])
    resumes = res.manifest.get("resumes") or []
    if resumes and "bit_identical" in resumes[-1]:
        rr = resumes[-1]
        print(f"\nresumed from round {rr['from_round']}: {rr['rows_compared']} recomputed rows compared with the "
              f"killed run's, max |difference| {rr['max_abs_difference']:.3g}")
    ex = res.manifest.get("execution")
    if ex:
        print(f"\npath: {ex['path']} ({ex['path_reason']})")
    if res.run_dir is not None:
        print(f"\nlogged to {res.run_dir}; evaluate with: " + shlex.join(
            ["fedtheory", "check", "--runs", str(res.run_dir), "--only", "fedinit.exp", "fedmrur.exp",
             "fedshift.exp", "empirical"]))
