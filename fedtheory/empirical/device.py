"""Where a training run executes, decided by rule: the device (:func:`resolve_device`), the gradient path and the
batched path's engine (:func:`choose_path`, :func:`choose_engine`; rules, not timed probes, so the same settings
give the same bits on every launch), and the versions the run directory's manifest records (:func:`versions`)."""
from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from .._validation import ParameterError
from ..sim.rounds import versions as _base_versions

__all__ = ["CPU_BATCHED_MAX_PIXELS", "CPU_STACKED_MODELS", "CPU_WORKERS", "choose_engine", "choose_path",
           "resolve_device", "versions"]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ParameterError("device", name, "'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError("device", name, "'cpu' or 'auto' (no CUDA device is available)")
    return dev


def versions(device: torch.device) -> dict[str, str]:
    """The sim layer's versions plus torch, pandas, the platform and the device."""
    import pandas

    v = {**_base_versions(), "torch": torch.__version__, "pandas": pandas.__version__, "platform": platform.platform(),
         "device": str(device)}
    commit = _git_commit()
    if commit:
        v["fedtheory_git"] = commit
    if device.type == "cuda":
        v["cuda"] = str(torch.version.cuda)
        v["gpu"] = torch.cuda.get_device_name(device)
    else:
        v["cpu_threads"] = str(torch.get_num_threads())
        v["thp_mem_alloc"] = os.environ.get("THP_MEM_ALLOC_ENABLE", "")  # read by torch at its first allocation
    return v


def _git_commit() -> str | None:
    """The commit (and '+dirty') of the fedtheory checkout, when it is one."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


# --path auto is a rule, not a timed probe: the two paths agree only to float rounding, so a choice that followed
# a timing could differ between two launches of the same settings (same seed, same bits needs a deterministic
# choice). The rule follows benchmarks/bench_empirical.py (results/empirical.json): on a GPU the batched path (vmap)
# wins. On a CPU, one round of 10 clients: ResNet-18-GN (width 32, 32x32) batched with the stacked engine beat
# client-by-client calls (x1.23, x1.33 in two runs) and vmap lost (x0.49, x0.40); CNN2 on 32x32 images lost with
# both engines (stacked x0.81, x0.85; vmap x0.76, x0.86); on 8x8 digits and for the linear model batching wins (per-
# call overhead dominates; README's digits sweep end to end, 20 rounds: stacked 28.6-29.5 s, vmap 32.6-33.4 s).
# So on a CPU: batched for small images, the linear model and ResNet-18-GN; sequential for the other convnets on
# larger images (CNN2 measured, VGG-11 not); vmap where the stacked engine refuses the model, on small images only.
CPU_BATCHED_MAX_PIXELS = 16 * 16
CPU_STACKED_MODELS = ("resnet18gn",)  # batched on larger images too, with the stacked engine only
# On a CPU the stacked engine trains the rows in two blocks and evaluates the runs on two worker threads (one per
# core of the 2-core development machine), whatever --threads is (so the numbers do not depend on it); with
# --threads >= 2 the blocks run in parallel, each worker with --threads // 2 torch threads.
CPU_WORKERS = 2


def choose_engine(device: torch.device) -> tuple[str, str]:
    """(engine of the batched path, why): 'stacked' (rows folded into the channels, channels-last) on a CPU, where
    it measured faster than vmap (benchmarks/bench_empirical.py), 'vmap' elsewhere (not measured against it)."""
    if device.type == "cpu":
        return "stacked", "stacked on a CPU (faster than vmap there: benchmarks/results/empirical.json)"
    return "vmap", f"vmap on {device.type}"


def choose_path(requested: str, device: torch.device, model: str, image_shape, stacked: bool = True) -> tuple[str, str]:
    """(path, why): ``requested`` itself unless it is 'auto'. ``stacked``: whether the batched path would use the
    stacked engine (False once it has refused the model)."""
    if requested != "auto":
        return requested, "asked for"
    if device.type != "cpu":
        return "batched", f"auto: batched on {device.type} (vmap over the clients; benchmarks/bench_empirical.py)"
    h, w = image_shape[-2:]
    small = model == "linear" or h * w <= CPU_BATCHED_MAX_PIXELS
    if stacked and (small or model in CPU_STACKED_MODELS):
        return "batched", (f"auto: batched for {model} on {h}x{w} images on a CPU with the stacked engine (faster "
                           f"than client-by-client calls there: benchmarks/results/empirical.json)")
    if small:
        return "batched", (f"auto: batched for {model} on {h}x{w} images on a CPU with vmap (per-call overhead "
                           f"dominates; vmap over the clients is faster there: benchmarks/results/empirical.json)")
    why = ("the stacked engine cannot take the model, and vmap lost to client-by-client calls on 32x32 images"
           if model in CPU_STACKED_MODELS
           else "client by client measured faster than either batched engine for CNN2 on "
           f"32x32 images; the stacked engine is used for {', '.join(CPU_STACKED_MODELS)} only")
    return ("sequential", f"auto: sequential for {model} on {h}x{w} images on a CPU ({why}: "
                          "benchmarks/results/empirical.json)")
