"""One round of FedAvg, batched (vmap over the clients) vs sequential (client after client), same device, same
arithmetic, on CIFAR-shaped synthetic data.

Target setting (issue 6): ResNet-18-GN, 10 clients x 5 local epochs x batch 50 (500 samples per client, K = 50
steps); that is what runs on a GPU. On the 2-core CPU of the development machine one full-width ResNet-18-GN step
of 10 clients x 50 images takes about a minute and a half, so the CPU rows are smaller and say so: ResNet-18-GN at
width 32 (a quarter of the FLOPs) and FedShift's CNN2 at full size, each for 2 local steps of 10 clients x batch 50.
Timings exclude evaluation and a warm-up (a full round on a GPU; one gradient call on a 2-image batch on a CPU);
both paths start from the same state and consume the same random draws (their models agree to float rounding;
tests/test_empirical_engine.py checks it to 1e-11 in float64).

Second part (issue 14, item 10): README's CPU sweep (FedInit, 4 betas x 3 seeds = 12 runs, digits, CNN2, 20 clients,
4 per round, K = 10), a few rounds timed per phase (local training, evaluation of every run on the train and test
sets), with the gradient of the network taken as before the fix (through the flat parameter vector: a zero-filled
full-dimension gradient per parameter tensor, added up) and as now (in the parameter tensors), interleaved in one
process; the two give the same bits. The 120-round figure is the per-round median x 120.

Run: ``python benchmarks/run_all.py empirical`` (``--quick`` for a smoke run). Environment knobs:
FEDTHEORY_BENCH_DEVICE (default auto), FEDTHEORY_BENCH_REPEATS (default 3 on GPU, 1 on CPU).
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

from fedtheory.empirical.config import TrainConfig
from fedtheory.empirical.data import synthetic_images
from fedtheory.empirical.trainer import Trainer, resolve_device


def _time_round(cfg: TrainConfig, data, repeats: int, full_warmup: bool) -> tuple[float, torch.Tensor]:
    tr = Trainer(cfg, dataset=data)
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
    times = []
    for t in range(t, t + repeats):
        t0 = time.perf_counter()
        tr.advance(t, state, streams)
        sync()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), state.w


def _case(label, model, model_options, steps, data, device, repeats, dtype="float32"):
    row = {"case": label, "model": model, "device": str(device), "clients": 10, "batch": 50, "local_steps": steps}
    cfg = dict(dataset="synthetic", model=model, model_options=model_options, algorithm="FedAvg", n_clients=10,
               partition="iid", rounds=2 + repeats, local_steps=steps, batch_size=50, lr=0.05, lr_decay=1.0,
               weight_decay=1e-3, augment=True, device=str(device), dtype=dtype, seeds=(0,))
    gpu = device.type == "cuda"
    tb, wb = _time_round(TrainConfig(path="batched", **cfg), data, repeats, gpu)
    ts, ws = _time_round(TrainConfig(path="sequential", **cfg), data, repeats, gpu)
    row.update(batched_s=tb, sequential_s=ts, speedup=ts / tb,
               max_rel_diff=float((wb - ws).abs().max() / ws.abs().max()))
    return row


class _FlatGradFn:
    """The gradient as computed before issue 14 (differentiating through views of the flat vector), for timing."""

    def __init__(self, flat, path):
        from torch.func import grad_and_value, vmap
        from torch.nn import functional as F

        self.path = path
        self._single = grad_and_value(lambda w, x, y: F.cross_entropy(flat.logits(w, x), y))
        self._batched = vmap(self._single)

    def __call__(self, W, X, Y):
        if self.path == "sequential":
            outs = [self._single(W[m], X[m], Y[m]) for m in range(W.shape[0])]
            return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])
        return self._batched(W, X, Y)


def _sweep_variants(rounds: int):
    """README's digits sweep: per-round times of each variant, rounds interleaved across variants."""
    from fedtheory.empirical.data import load_digits_images

    data = load_digits_images()
    base = dict(dataset="digits", algorithm="FedInit", hyperparameters={"beta": [0, 0.05, 0.1, 0.15]}, seeds=(0, 1, 2),
                n_clients=20, clients_per_round=4, partition="dirichlet-replace", alpha=0.1, rounds=rounds, device="cpu")
    default_threads = torch.get_num_threads()
    variants = {"before: batched, flat-vector gradient": ("batched", True, default_threads),
                "before: sequential, flat-vector gradient": ("sequential", True, default_threads),
                "now: batched (--path auto)": ("batched", False, default_threads),
                "now: sequential": ("sequential", False, default_threads),
                "now: batched, --threads 1": ("batched", False, 1)}
    runs = {}
    for label, (path, legacy, _) in variants.items():
        tr = Trainer(TrainConfig(path=path, **base), dataset=data)
        if legacy:
            tr.grad_fn = _FlatGradFn(tr.flat, path)
        state, streams, _ = tr.initial_state()
        runs[label] = dict(tr=tr, state=state, streams=streams, train=[], eval=[])
    alive = np.ones(runs[next(iter(runs))]["tr"].R, dtype=bool)
    for t in range(rounds):
        for label, r in runs.items():
            torch.set_num_threads(variants[label][2])
            t0 = time.perf_counter()
            r["tr"].advance(t, r["state"], r["streams"])
            t1 = time.perf_counter()
            r["tr"]._state_measures(r["state"], True, alive)
            r["train"].append(t1 - t0)
            r["eval"].append(time.perf_counter() - t1)
    torch.set_num_threads(default_threads)
    ref = runs["now: batched (--path auto)"]["state"].w
    rows = []
    for label, r in runs.items():
        tr_s, ev_s = float(np.median(r["train"][1:] or r["train"])), float(np.median(r["eval"][1:] or r["eval"]))
        w = r["state"].w
        rows.append({"case": f"README digits sweep, 12 runs: {label}", "model": "cnn2", "device": "cpu",
                     "path": variants[label][0], "threads": variants[label][2], "rounds_timed": rounds, "train_s_per_round": tr_s,
                     "eval_s_per_round": ev_s, "round_s": tr_s + ev_s, "sweep_120_rounds_s": 120 * (tr_s + ev_s),
                     "max_rel_diff_vs_now_batched": float((w - ref).abs().max() / ref.abs().max())})
    return rows


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
    sweep = [] if gpu else _sweep_variants(2 if quick else 4)
    threads = torch.get_num_threads()
    where = torch.cuda.get_device_name(device) if gpu else f"CPU, {threads} torch threads"
    summary = (f"{where}. One FedAvg round, batched vs sequential: " +
               "; ".join(f"{r['case']}: {r['batched_s']:.2f} s vs {r['sequential_s']:.2f} s "
                         f"(x{r['speedup']:.2f})" for r in rows))
    if sweep:
        before, now = sweep[0], sweep[2]
        summary += (f". README's digits sweep (12 runs, CNN2, K = 10), per round: before (batched, gradient through "
                    f"the flat vector) {before['round_s']:.2f} s, now (--path auto = batched) {now['round_s']:.2f} s "
                    f"(x{before['round_s'] / now['round_s']:.1f}; of which evaluation {now['eval_s_per_round']:.2f} s); "
                    f"120 rounds: {before['sweep_120_rounds_s'] / 60:.1f} min -> {now['sweep_120_rounds_s'] / 60:.1f} "
                    f"min; sequential now {sweep[3]['round_s']:.2f} s per round; batched with --threads 1 "
                    f"{sweep[4]['round_s']:.2f} s per round ({sweep[4]['sweep_120_rounds_s'] / 60:.1f} min)")
    if not gpu:
        summary += (". No GPU here: the GPU figures (goal >= 8x and <= 1 s per ResNet-18-GN round on an H100) are "
                    "pending a run of this benchmark on a GPU.")
    return {"name": "empirical: batched vs sequential FedAvg round", "rows": rows, "sweep": sweep, "summary": summary}


if __name__ == "__main__":  # pragma: no cover
    import json

    print(json.dumps(run(quick=bool(os.environ.get("QUICK"))), indent=2))
