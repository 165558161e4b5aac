"""Real networks: the batched path (vmap engine / stacked engine) against the sequential one, and README's CPU sweep
before and after issue 14 item 10.

Part 1 (issue 6): one round of FedAvg, batched vs sequential, same device, same arithmetic, on CIFAR-shaped synthetic
data. Target setting: ResNet-18-GN, 10 clients x 5 local epochs x batch 50 (K = 50 steps); that is what runs on a GPU.
On the 2-core CPU of the development machine the rows are smaller and say so: ResNet-18-GN at width 32 and FedShift's
CNN2 at full size, each for 2 local steps of 10 clients x batch 50. On a CPU the batched path is timed with both of
its engines (vmap; stacked: the rows folded into the channels, two blocks on two worker threads). Timings exclude
evaluation and a warm-up; all sides start from the same state and consume the same random draws.

Part 2: README's CPU sweep (FedInit, 4 betas x 3 seeds = 12 runs, digits, CNN2, 20 clients, 4 per round, K = 10), a
few rounds per variant, rounds interleaved across the variants in one process, each round timed per phase (local
training; evaluation of every run on the train and test sets plus Delta), wall clock and this process's CPU time.

Part 3: the same sweep end to end, ``fedtheory train`` as in README with ``--rounds R``, at the revision before this
work (BASE, ``git archive``) and at the working tree, alternately in subprocesses (wall clock, the child's CPU time,
the load average before and after each), and the largest difference per metrics.csv column between the two (and,
for scale, between the old revision's two paths, batched and sequential, which differ by float rounding only: in
float32 training amplifies rounding round after round), and the same comparison in float64 over 3 rounds (where the
arithmetic shows: equal up to a few ulps).

Run: ``python benchmarks/run_all.py empirical`` (``--quick`` for a smoke run). Environment knobs:
FEDTHEORY_BENCH_DEVICE (default auto), FEDTHEORY_BENCH_REPEATS (default 3 on GPU, 1 on CPU),
FEDTHEORY_BENCH_E2E_ROUNDS (default 10; quick 2), FEDTHEORY_BENCH_E2E_REPEATS (default 2; quick 1),
FEDTHEORY_BENCH_BASE (default BASE below; empty: skip part 3).
"""
from __future__ import annotations

import os

os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")  # as `fedtheory train` does (read by torch at its first allocation)
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from fedtheory.empirical.config import TrainConfig
from fedtheory.empirical.data import synthetic_images
from fedtheory.empirical.device import resolve_device
from fedtheory.empirical.trainer import Trainer

ROOT = Path(__file__).resolve().parent.parent
BASE = "710c84076c40645af029d09288250976112e6319"  # main before issue 14 item 10's CPU work
README_ARGS = ["--dataset", "digits", "--algorithm", "FedInit", "--hp", "beta=0,0.05,0.1,0.15", "--seeds", "0", "1",
               "2", "--clients", "20", "--clients-per-round", "4", "--partition", "dirichlet-replace", "--alpha", "0.1"]


def _trainer(cfg: TrainConfig, data, engine: str | None) -> Trainer:
    tr = Trainer(cfg, dataset=data)
    if engine == "vmap" and tr.path == "batched":
        tr.grad_fn.engine = "vmap"  # the batched path as before the stacked engine
    return tr


def _time_round(cfg: TrainConfig, data, repeats: int, full_warmup: bool, engine=None):
    """(median wall seconds of a round, final rows, median CPU seconds of a round, all threads of this process)."""
    tr = _trainer(cfg, data, engine)
    state, streams, _ = tr.initial_state()
    sync = (lambda: torch.cuda.synchronize(tr.device)) if tr.device.type == "cuda" else (lambda: None)
    t = 0
    if full_warmup:  # kernel selection, allocator, vmap set-up
        tr.advance(0, state, streams)
        t = 1
    else:
        M = tr.R * tr.N
        x = tr._prepare(tr.x_train[:2 * M]).reshape(M, 2, *data.image_shape)
        tr.grad_fn(state.w.repeat_interleave(tr.N, 0), x, tr.y_train[:2 * M].reshape(M, 2))
    sync()
    times, cpu = [], []
    for t in range(t, t + repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        tr.advance(t, state, streams)
        sync()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return float(np.median(times)), state.w, float(np.median(cpu))


def _case(label, model, model_options, steps, data, device, repeats, dtype="float32"):
    row = {"case": label, "model": model, "device": str(device), "clients": 10, "batch": 50, "local_steps": steps}
    cfg = dict(dataset="synthetic", model=model, model_options=model_options, algorithm="FedAvg", n_clients=10,
               partition="iid", rounds=2 + repeats, local_steps=steps, batch_size=50, lr=0.05, lr_decay=1.0,
               weight_decay=1e-3, augment=True, device=str(device), dtype=dtype, seeds=(0,))
    gpu = device.type == "cuda"
    la0 = os.getloadavg()[0]
    ts, ws, cs = _time_round(TrainConfig(path="sequential", **cfg), data, repeats, gpu)
    tb, wb, cb = _time_round(TrainConfig(path="batched", **cfg), data, repeats, gpu, engine="vmap")
    row.update(sequential_s=ts, batched_vmap_s=tb, speedup_vmap=ts / tb,
               max_rel_diff_vmap=float((wb - ws).abs().max() / ws.abs().max()))
    if not gpu:
        tk, wk, ck = _time_round(TrainConfig(path="batched", **cfg), data, repeats, gpu, engine="stacked")
        row.update(batched_stacked_s=tk, speedup_stacked=ts / tk,
                   max_rel_diff_stacked=float((wk - ws).abs().max() / ws.abs().max()),
                   cpu_s={"sequential": cs, "batched_vmap": cb, "batched_stacked": ck},
                   load_avg_1min=[round(la0, 2), round(os.getloadavg()[0], 2)])
    return row


def _cpu_now() -> float:
    return time.process_time()


def _sweep_variants(rounds: int):
    """README's digits sweep: per-round times of each variant, rounds interleaved across variants."""
    from fedtheory.empirical.data import load_digits_images

    data = load_digits_images()
    base = dict(dataset="digits", algorithm="FedInit", hyperparameters={"beta": [0, 0.05, 0.1, 0.15]}, seeds=(0, 1, 2),
                n_clients=20, clients_per_round=4, partition="dirichlet-replace", alpha=0.1, rounds=rounds,
                device="cpu")
    default_threads = torch.get_num_threads()
    variants = {"before: batched, vmap engine": ("batched", "vmap", default_threads),
                "now: batched, stacked engine (--path auto)": ("batched", "stacked", default_threads),
                "now: sequential": ("sequential", None, default_threads),
                "now: batched, stacked engine, --threads 1": ("batched", "stacked", 1)}
    runs = {}
    for label, (path, engine, threads) in variants.items():
        tr = _trainer(TrainConfig(path=path, threads=threads, **base), data, engine)
        state, streams, _ = tr.initial_state()
        runs[label] = dict(tr=tr, state=state, streams=streams, train=[], eval=[], train_cpu=[], eval_cpu=[])
    alive = np.ones(runs[next(iter(runs))]["tr"].R, dtype=bool)
    loads = [os.getloadavg()[0]]
    for t in range(rounds):
        for label, r in runs.items():
            torch.set_num_threads(variants[label][2])
            t0, c0 = time.perf_counter(), _cpu_now()
            r["tr"].advance(t, r["state"], r["streams"])
            t1, c1 = time.perf_counter(), _cpu_now()
            r["tr"]._state_measures(r["state"], True, alive)
            r["train"].append(t1 - t0)
            r["eval"].append(time.perf_counter() - t1)
            r["train_cpu"].append(c1 - c0)
            r["eval_cpu"].append(_cpu_now() - c1)
        loads.append(os.getloadavg()[0])
    torch.set_num_threads(default_threads)
    ref = runs["before: batched, vmap engine"]["state"].w
    rows = []
    med = lambda xs: float(np.median(xs[1:] or xs))  # noqa: E731  (round 0 is a warm-up)
    for label, r in runs.items():
        tr_s, ev_s = med(r["train"]), med(r["eval"])
        w = r["state"].w
        rows.append({"case": f"README digits sweep, 12 runs: {label}", "model": "cnn2", "device": "cpu",
                     "path": variants[label][0], "engine": r["tr"].grad_fn.engine, "threads": variants[label][2],
                     "rounds_timed": rounds, "train_s_per_round": tr_s, "eval_s_per_round": ev_s,
                     "round_s": tr_s + ev_s, "sweep_120_rounds_s": 120 * (tr_s + ev_s),
                     "train_cpu_s_per_round": med(r["train_cpu"]), "eval_cpu_s_per_round": med(r["eval_cpu"]),
                     "max_rel_diff_vs_before": float((w - ref).abs().max() / ref.abs().max()),
                     "load_avg_1min": [round(x, 2) for x in (min(loads), max(loads))]})
    return rows


def _train_subprocess(tree: Path, out: Path, rounds: int, extra=()) -> dict:
    """``fedtheory train`` (README's command) from the source tree ``tree``; wall clock and the child's CPU time."""
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}  # each revision's own default
    env["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    la0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fedtheory.cli", "train", "--out", str(out), *README_ARGS, "--rounds",
                    str(rounds), "--no-progress", *extra], env=env, cwd=tree, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load_avg_1min": [round(la0, 2), round(os.getloadavg()[0], 2)]}


def metrics_difference(a, b) -> dict[str, dict[str, float]]:
    """Largest absolute and relative difference per numeric column of two metrics.csv frames (same rows)."""
    out = {}
    for c in a.columns:
        if c == "time_s" or a[c].dtype == object:
            continue
        x, y = a[c].to_numpy(float), b[c].to_numpy(float)
        both = np.isfinite(x) & np.isfinite(y)
        d = np.abs(x - y)[both]
        rel = d / np.maximum(np.abs(x[both]), np.finfo(float).tiny)
        out[c] = {"max_abs": float(d.max()) if d.size else 0.0, "max_rel": float(rel.max()) if rel.size else 0.0,
                  "nan_pattern_equal": bool(np.array_equal(np.isnan(x), np.isnan(y)))}
    return out


def _end_to_end(rounds: int, repeats: int, base: str, reference: bool) -> dict:
    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        old = tmp / "old"
        old.mkdir()
        subprocess.run(f"git -C {ROOT} archive {base} | tar -x -C {old}", shell=True, check=True)
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for i in range(repeats):
            for side, tree in (("old", old), ("new", ROOT)):  # interleaved: both sides see the same load
                runs[side].append(_train_subprocess(tree, tmp / f"{side}{i}", rounds))
        frame = lambda d: pd.read_csv(d / "metrics.csv")  # noqa: E731
        res = {"rounds": rounds, "base": base, "runs": runs,
               "old_best_wall_s": min(r["wall_s"] for r in runs["old"]),
               "new_best_wall_s": min(r["wall_s"] for r in runs["new"]),
               "old_best_cpu_s": min(r["cpu_s"] for r in runs["old"]),
               "new_best_cpu_s": min(r["cpu_s"] for r in runs["new"]),
               "difference_new_vs_old": metrics_difference(frame(tmp / "old0"), frame(tmp / "new0"))}
        if repeats > 1:
            same = frame(tmp / "new0").drop(columns="time_s").equals(frame(tmp / "new1").drop(columns="time_s"))
            res["new_same_bits_twice"] = bool(same)
        if reference:
            runs_ref = _train_subprocess(old, tmp / "oldseq", rounds, ("--path", "sequential"))
            res["old_sequential_run"] = runs_ref
            res["difference_old_sequential_vs_old_batched"] = metrics_difference(frame(tmp / "old0"),
                                                                                  frame(tmp / "oldseq"))
            # the same arithmetic? in float64 rounding cannot grow into training noise within a few rounds
            for side, tree in (("old", old), ("new", ROOT)):
                res[f"float64_{side}_run"] = _train_subprocess(tree, tmp / f"{side}64", 3, ("--dtype", "float64"))
            res["float64_rounds"] = 3
            res["difference_new_vs_old_float64"] = metrics_difference(frame(tmp / "old64"), frame(tmp / "new64"))
        return res


def run(quick: bool = False) -> dict:
    device = resolve_device(os.environ.get("FEDTHEORY_BENCH_DEVICE", "auto"))
    gpu = device.type == "cuda"
    repeats = int(os.environ.get("FEDTHEORY_BENCH_REPEATS", 3 if gpu else 1))
    data = synthetic_images(5000, 100, shape=(3, 32, 32), n_classes=10, random_state=0)  # 10 x 500 per client
    rows = []
    if quick:
        rows.append(_case("smoke: CNN2 (8, 16), 2 steps", "cnn2", {"channels": (8, 16), "hidden": 32}, 2, data, device,
                          repeats))
    elif gpu:
        rows.append(_case("ResNet-18-GN, 5 local epochs (K = 50)", "resnet18gn", {}, 50, data, device, repeats))
        rows.append(_case("CNN2, 5 local epochs (K = 50)", "cnn2", {}, 50, data, device, repeats))
    else:
        rows.append(_case("ResNet-18-GN width 32, 2 local steps (CPU size)", "resnet18gn", {"width": 32}, 2, data,
                          device, repeats))
        rows.append(_case("CNN2, 2 local steps (CPU size)", "cnn2", {}, 2, data, device, repeats))
    sweep = [] if gpu else _sweep_variants(2 if quick else 5)
    base = os.environ.get("FEDTHEORY_BENCH_BASE", BASE)
    e2e = None
    if not gpu and base:
        e2e = _end_to_end(int(os.environ.get("FEDTHEORY_BENCH_E2E_ROUNDS", 2 if quick else 10)),
                          int(os.environ.get("FEDTHEORY_BENCH_E2E_REPEATS", 1 if quick else 2)), base, not quick)
    threads = torch.get_num_threads()
    where = torch.cuda.get_device_name(device) if gpu else f"CPU, {threads} torch threads"
    summary = f"{where}. One FedAvg round, batched vs sequential: " + "; ".join(
        f"{r['case']}: sequential {r['sequential_s']:.2f} s, batched vmap {r['batched_vmap_s']:.2f} s "
        f"(x{r['speedup_vmap']:.2f})"
        + (f", batched stacked {r['batched_stacked_s']:.2f} s (x{r['speedup_stacked']:.2f})"
           if "batched_stacked_s" in r else "") for r in rows)
    if sweep:
        before, now, seq, one = sweep
        summary += (f". README's digits sweep (12 runs, CNN2, K = 10), per round (median; load average "
                    f"{now['load_avg_1min'][0]}-{now['load_avg_1min'][1]}): before (vmap engine) "
                    f"{before['round_s']:.2f} s (CPU "
                    f"{before['train_cpu_s_per_round'] + before['eval_cpu_s_per_round']:.2f} s), now (stacked engine) "
                    f"{now['round_s']:.2f} s (CPU {now['train_cpu_s_per_round'] + now['eval_cpu_s_per_round']:.2f} s; "
                    f"training {now['train_s_per_round']:.2f} s, evaluation {now['eval_s_per_round']:.2f} s), "
                    f"sequential {seq['round_s']:.2f} s, stacked with --threads 1 {one['round_s']:.2f} s")
    if e2e:
        summary += (f". End to end, README's command with --rounds {e2e['rounds']} (best of "
                    f"{len(e2e['runs']['old'])}, alternating): {BASE[:7] if base == BASE else base} "
                    f"{e2e['old_best_wall_s']:.1f} s (CPU {e2e['old_best_cpu_s']:.1f} s) -> now "
                    f"{e2e['new_best_wall_s']:.1f} s (CPU {e2e['new_best_cpu_s']:.1f} s)")
    if not gpu:
        summary += (". No GPU here: the GPU figures (goal >= 8x and <= 1 s per ResNet-18-GN round on an H100) are "
                    "pending a run of this benchmark on a GPU.")
    return {"name": "empirical: batched vs sequential FedAvg round", "rows": rows, "sweep": sweep, "end_to_end": e2e,
            "summary": summary}


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run(quick=bool(os.environ.get("QUICK"))), indent=2))
