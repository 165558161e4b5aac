"""Execution on Dask (issue 12): 2 workers against the serial path, side by side, interleaved, and the per-task
overhead that decides how far it scales.

* check: ``run_checks(profile)`` serially (today's path: one Session, symbolic checks in a side process) against the
  same on a LocalCluster of 2 single-threaded workers (units of work, ``fedtheory.checks.scheduling``); the JSON records
  compared field by field (timing excepted). Goal: >= 1.7x for the full profile on the 2-core machine.
* train: a grid of 8 small digits runs (FedInit, 4 betas x 2 seeds, CNN2, 20 clients, 4 per round, K = 10): today's
  ``fedtheory train`` (one batch, torch's threads) against 8 cells on 2 workers (1 thread each), and the same cells
  serially in this process (1 thread); the cells' metrics compared with the batch's. Goal: >= 1.7x.
* worst: FedInit Thm 2 search (C = 10, d = 10, K = 5, T = 100, population 64): one batch per generation against
  chunks of 16 instances on 2 workers, and the same chunks serially (the same bits).
* overhead: one task's scheduler round trip (a no-op, one at a time, and 200 at once), the cluster's start, and
  what a task moves: a problem (the FedInit digits-logistic problem, the worst-case spec), a unit's results, a
  run directory (its files' bytes, if there were no shared file system).
* the 64-worker estimate: list scheduling (longest first, as the executor submits) of the measured units with the
  measured per-task overhead, for the full profile, and the seed-000 CIFAR grid's cells (Table 3: 8 betas x 3 seeds,
  500 rounds each), written out with its arithmetic.

``python benchmarks/run_all.py parallel`` (``--quick``: quick profile, 2 rounds); one part at a time:
``python benchmarks/bench_parallel.py check --merge benchmarks/results/parallel.json``. Timings are the best of n
with the sides interleaved; the load average is recorded per part (this machine is shared).
"""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np


def _strip(results):
    out = []
    for r in results:
        d = r.to_json()
        d.pop("elapsed_s", None)
        out.append(d)
    return out


def _same_records(a, b) -> dict:
    ja, jb = _strip(a), _strip(b)
    differing = [x["id"] for x, y in zip(ja, jb) if x != y]
    return {"records": len(ja), "identical": len(ja) == len(jb) and not differing and json.dumps(ja) == json.dumps(jb),
            "differing": differing[:10], "verdicts_equal": [x["verdict"] for x in ja] == [y["verdict"] for y in jb]}


def _cpu_self() -> float:
    """CPU seconds of this process and its finished children (the serial path's symbolic side process)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _cpu_workers(ex) -> dict:
    import resource

    return ex.client.run(lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))


def sides(named, ex, repeat: int) -> dict:
    """Each of ``named`` ({label: fn}) in turn, ``repeat`` rounds (interleaved); per side the best wall time, the
    last value, and the least CPU time: this process's (serial sides) and the busiest worker's (Dask sides).

    The CPU times give a projection for an idle machine where each worker has a core to itself: serial CPU time /
    the busiest worker's CPU time (it overstates the ratio if the serial path gains from its second BLAS thread:
    its CPU time / wall time is reported as ``serial_cpu_per_wall``)."""
    out = {k: {"wall_s": math.inf, "cpu_s": math.inf, "busiest_worker_cpu_s": math.inf} for k in named}
    for _ in range(repeat):
        for k, fn in named.items():
            c0, w0 = _cpu_self(), _cpu_workers(ex)
            t = time.perf_counter()
            val = fn()
            wall = time.perf_counter() - t
            c1, w1 = _cpu_self(), _cpu_workers(ex)
            o = out[k]
            o["value"] = val
            if wall < o["wall_s"]:
                o["wall_s"] = wall
            o["cpu_s"] = min(o["cpu_s"], c1 - c0)
            o["busiest_worker_cpu_s"] = min(o["busiest_worker_cpu_s"], max(w1[a] - w0.get(a, 0.0) for a in w1))
    return out


def lpt_makespan(durations, workers: int, overhead: float = 0.0) -> float:
    """Longest-first list scheduling of ``durations`` (+ ``overhead`` each) on ``workers`` identical workers."""
    loads = [0.0] * workers
    for d in sorted(durations, reverse=True):
        i = int(np.argmin(loads))
        loads[i] += d + overhead
    return max(loads)


# ------------------------------------------------------------------------------------ overhead


def bench_overhead(ex, quick: bool) -> dict:
    import cloudpickle

    from fedtheory.parallel import Task

    one = []
    for _ in range(5 if quick else 20):
        t = time.perf_counter()
        ex.run([Task("noop", abs, (1,))])
        one.append(time.perf_counter() - t)
    n = 200
    t = time.perf_counter()
    ex.run([Task(f"noop{i}", abs, (i,)) for i in range(n)])
    many = (time.perf_counter() - t) / n
    # the workers run at once: 4 tasks that each sleep 2 s (no CPU) take ~4 s on 2 workers, whatever the load
    t = time.perf_counter()
    ex.run([Task(f"sleep{i}", time.sleep, (2.0,)) for i in range(4)])
    sleeps = time.perf_counter() - t

    def size_and_time(obj, repeat=5):
        best = math.inf
        for _ in range(repeat):
            t = time.perf_counter()
            blob = cloudpickle.dumps(obj)
            cloudpickle.loads(blob)
            best = min(best, time.perf_counter() - t)
        return len(blob), best

    from fedtheory.sim.problems import digits_logistic
    from fedtheory.worst import make_spec

    sizes = {}
    p = digits_logistic()
    sizes["problem digits_logistic"] = size_and_time(p)
    spec = make_spec("fedinit.thm2", dict(L=2.0, mu=0.6, B=1.3, G=0.3, D=2.0, eta=0.001, K=5, T=100, beta=0.1,
                                          sigma_l=0.0, C=10, d=10))
    sizes["worst-case spec (FedInit Thm 2)"] = size_and_time(spec)
    return {"one_task_round_trip_s": min(one), "one_task_round_trip_median_s": float(np.median(one)),
            "four_2s_sleeps_on_2_workers_s": sleeps,
            "per_task_in_a_batch_of_200_s": many, "serialization": {k: {"bytes": b, "dumps_loads_s": s}
                                                                   for k, (b, s) in sizes.items()}}


def _dir_bytes(d: Path) -> tuple[int, float]:
    """A run directory as one tar stream in memory: bytes and seconds (what a worker without a shared file system
    would have to send back)."""
    t = time.perf_counter()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(d), arcname=d.name)
    return len(buf.getvalue()), time.perf_counter() - t


# ------------------------------------------------------------------------------------ check


def bench_check(ex, quick: bool) -> dict:
    from fedtheory.checks import run_checks
    from fedtheory.checks.registry import select
    from fedtheory.checks.scheduling import plan_units

    profile = "quick" if quick else "full"
    got = sides({"serial": lambda: run_checks(profile=profile, seed=0),
                 "workers": lambda: run_checks(profile=profile, seed=0, executor=ex)}, ex, repeat=2)
    ts, serial = got["serial"]["wall_s"], got["serial"]["value"]
    tp, par = got["workers"]["wall_s"], got["workers"]["value"]
    same = _same_records(serial, par)
    cpu = {"serial_cpu_s": got["serial"]["cpu_s"], "serial_cpu_per_wall": got["serial"]["cpu_s"] / ts,
           "busiest_worker_cpu_s": got["workers"]["busiest_worker_cpu_s"],
           "projected_idle_speedup": got["serial"]["cpu_s"] / got["workers"]["busiest_worker_cpu_s"]}
    # measured unit durations (the parallel run's per-check elapsed times, summed per unit)
    units = plan_units(select(profile=profile), profile)
    elapsed = {}
    for r in par:
        elapsed[r.id] = elapsed.get(r.id, 0.0) + (r.elapsed_s or 0.0)
    durations = [sum(elapsed.get(c, 0.0) for c in u.check_ids) for u in units]
    unit_bytes = None
    try:
        import cloudpickle

        biggest = max(range(len(units)), key=lambda i: durations[i])
        ids = set(units[biggest].check_ids)
        unit_bytes = len(cloudpickle.dumps([r for r in par if r.id in ids]))
    except ImportError:
        pass
    return {"profile": profile, "serial_s": ts, "workers_2_s": tp, "speedup": ts / tp, **cpu, "units": len(units),
            "unit_seconds": sorted((round(d, 2) for d in durations), reverse=True),
            "largest_unit_result_bytes": unit_bytes, **same}


# ------------------------------------------------------------------------------------ train


def _train_config(rounds: int, threads=None):
    from fedtheory.empirical.config import TrainConfig

    return TrainConfig(dataset="digits", model="cnn2", algorithm="FedInit",
                       hyperparameters={"beta": [0.0, 0.05, 0.1, 0.15]}, seeds=(0, 1), n_clients=20,
                       clients_per_round=4, partition="dirichlet-replace", alpha=0.1, rounds=rounds, local_steps=10,
                       checkpoint_every=5, threads=threads)


def bench_train(ex, quick: bool) -> dict:
    from fedtheory.empirical.sweep import train_sweep
    from fedtheory.empirical.trainer import train
    from fedtheory.parallel import SerialExecutor

    rounds = 2 if quick else 10
    root = Path(tempfile.mkdtemp(prefix="bench_parallel_train_"))
    count = {"n": 0}

    def fresh(tag):
        count["n"] += 1
        return root / f"{tag}{count['n']}"

    try:
        got = sides({"batch": lambda: train(_train_config(rounds), fresh("batch")),
                     "workers": lambda: train_sweep(_train_config(rounds), fresh("dask"), ex),
                     "cells": lambda: train_sweep(_train_config(rounds, threads=1), fresh("cells"), SerialExecutor())},
                    ex, repeat=2 if quick else 3)
        (tb, batch), (tp, par), (tc, cells) = ((got[k]["wall_s"], got[k]["value"])
                                               for k in ("batch", "workers", "cells"))
        assert par.outcome.ok and cells.outcome.ok

        def frame(m):
            return m.drop(columns=["time_s"]).sort_values(["round", "run"]).reset_index(drop=True)

        fb, fp, fc = frame(batch.metrics), frame(par.metrics), frame(cells.metrics)
        num = [c for c in fb.columns if fb[c].dtype.kind == "f"]
        a, b = fb[num].to_numpy(), fp[num].to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.abs(a - b) / np.maximum(np.abs(a), 1e-12)
        bits = bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())
        # float32 rounding that training amplifies round by round: the train loss's largest relative gap per round
        by_round = {int(t): float(np.nanmax(np.abs(fb.train_loss[fb["round"] == t].to_numpy()
                                                   - fp.train_loss[fp["round"] == t].to_numpy())
                                            / np.abs(fb.train_loss[fb["round"] == t].to_numpy())))
                    for t in sorted(fb["round"].unique()) if fb.train_loss[fb["round"] == t].notna().any()}
        worst_col = num[int(np.nanargmax(np.nanmax(rel, axis=0)))]
        dir_bytes, dir_s = _dir_bytes(par.run_dir / "cell-000")
        wcpu = got["workers"]["busiest_worker_cpu_s"]
        return {"runs": 8, "rounds": rounds, "batch_serial_s": tb, "cells_workers_2_s": tp, "cells_serial_s": tc,
                "speedup_vs_batch": tb / tp, "speedup_vs_serial_cells": tc / tp,
                "batch_cpu_s": got["batch"]["cpu_s"], "batch_cpu_per_wall": got["batch"]["cpu_s"] / tb,
                "cells_serial_cpu_s": got["cells"]["cpu_s"], "busiest_worker_cpu_s": wcpu,
                "projected_idle_speedup_vs_batch": got["batch"]["cpu_s"] / wcpu,
                "projected_idle_speedup_vs_serial_cells": got["cells"]["cpu_s"] / wcpu,
                "cells_vs_batch_bit_identical": bits, "cells_vs_batch_max_rel_diff": float(np.nanmax(rel)),
                "cells_vs_batch_max_rel_diff_column": worst_col,
                "cells_vs_batch_train_loss_rel_diff_by_round": by_round,
                "workers_vs_serial_cells_bit_identical": fp.equals(fc),
                "cell_dir_bytes": dir_bytes, "cell_dir_tar_s": dir_s}
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------------------------ worst


def bench_worst(ex, quick: bool) -> dict:
    from fedtheory.worst import make_spec, worst_case

    spec = make_spec("fedinit.thm2", dict(L=2.0, mu=0.6, B=1.3, G=0.3, D=2.0, eta=0.001, K=5, T=100, beta=0.1,
                                          sigma_l=0.0, C=10, d=10))
    P = 64
    budget = P * (3 if quick else 6)
    worst_case(spec, budget=P, popsize=P, seed=0)  # warm-up (the bound's compilation)
    worst_case(spec, budget=P, popsize=P, seed=0, executor=ex)
    drop = ("elapsed_s", "evals_per_s", "budget")
    got = sides({"batch": lambda: worst_case(spec, budget=budget, popsize=P, seed=0),
                 "workers": lambda: worst_case(spec, budget=budget, popsize=P, seed=0, executor=ex, chunk=16),
                 "chunks": lambda: worst_case(spec, budget=budget, popsize=P, seed=0, chunk=16)},
                ex, repeat=2 if quick else 3)
    (t1, r1), (t2, r2), (t3, r3) = ((got[k]["wall_s"], got[k]["value"]) for k in ("batch", "workers", "chunks"))
    strip = lambda r: json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True)  # noqa: E731
    return {"population": P, "budget": budget, "chunk": 16, "serial_batch_s": t1, "workers_2_chunks_s": t2,
            "serial_chunks_s": t3, "speedup_vs_batch": t1 / t2, "speedup_vs_serial_chunks": t3 / t2,
            "workers_equal_serial_chunks": strip(r2) == strip(r3), "chunks_equal_batch": strip(r1) == strip(r3)}


# ------------------------------------------------------------------------------------ the estimate


def estimate(check: dict, overhead_s: float, cifar_cell_s: float) -> dict:
    """Efficiency E(P) = T1 / (P * T_P) with T_P the longest-first list schedule of the measured units (+ the
    per-task overhead each): for the full profile, and for the seed-000 CIFAR grid's cells."""
    durations = check["unit_seconds"]
    t1 = sum(durations)
    prof = {}
    for p in (1, 2, 4, 8, 16, 32, 64):
        tp = lpt_makespan(durations, p, overhead_s)
        prof[p] = {"makespan_s": round(tp, 2), "speedup": round(t1 / tp, 2), "efficiency": round(t1 / (p * tp), 3)}
    cells = 8 * 3
    cifar = {}
    for p in (8, 24, 64):
        tp = lpt_makespan([cifar_cell_s] * cells, p, overhead_s)
        cifar[p] = {"makespan_s": round(tp, 1), "efficiency": round(cells * cifar_cell_s / (p * tp), 3)}
    return {"profile": check["profile"], "t1_s": round(t1, 1), "longest_unit_s": max(durations),
            "per_task_overhead_s": overhead_s, "check": prof, "cifar_cells": cells, "cifar_cell_s": cifar_cell_s,
            "cifar": cifar}


def run(quick: bool = False, only=None, previous: dict | None = None) -> dict:
    """Measure ``only`` (default: every part) and summarize; ``previous``: parts measured earlier (same quick) that
    are kept where not measured again (``--merge``)."""
    from fedtheory.parallel import make_executor

    out: dict = dict(previous or {})
    out["name"] = "execution on Dask: 2 workers vs serial"
    parts = only or ("overhead", "check", "train", "worst")
    t = time.perf_counter()
    ex = make_executor(workers=2)
    start = time.perf_counter() - t
    try:
        for part in parts:
            load0 = os.getloadavg()[0]
            res = {"overhead": bench_overhead, "check": bench_check, "train": bench_train, "worst": bench_worst}[part](
                ex, quick)
            res["loadavg_1min"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
            if part == "overhead":
                res["cluster_start_s"] = start
            out[part] = res
    finally:
        ex.close()
    return finish(out)


def finish(out: dict) -> dict:
    """The rows, the 64-worker estimate and the summary from the measured parts."""
    rows = []
    if "check" in out:
        c = out["check"]
        rows.append({"case": f"check --profile {c['profile']}", "serial_s": c["serial_s"],
                     "workers_2_s": c["workers_2_s"], "speedup": c["speedup"], "same_results": c["identical"]})
    if "train" in out:
        c = out["train"]
        rows.append({"case": f"train 8 digits runs x {c['rounds']} rounds (vs one batch)",
                     "serial_s": c["batch_serial_s"], "workers_2_s": c["cells_workers_2_s"],
                     "speedup": c["speedup_vs_batch"], "same_results": c["cells_vs_batch_bit_identical"]})
        rows.append({"case": "train, same 8 cells serially (1 thread)", "serial_s": c["cells_serial_s"],
                     "workers_2_s": c["cells_workers_2_s"], "speedup": c["speedup_vs_serial_cells"],
                     "same_results": c["workers_vs_serial_cells_bit_identical"]})
    if "worst" in out:
        c = out["worst"]
        rows.append({"case": f"worst, P = {c['population']}, {c['budget']} evaluations (vs one batch)",
                     "serial_s": c["serial_batch_s"], "workers_2_s": c["workers_2_chunks_s"],
                     "speedup": c["speedup_vs_batch"], "same_results": c["chunks_equal_batch"]})
        rows.append({"case": "worst, same chunks of 16 serially", "serial_s": c["serial_chunks_s"],
                     "workers_2_s": c["workers_2_chunks_s"], "speedup": c["speedup_vs_serial_chunks"],
                     "same_results": c["workers_equal_serial_chunks"]})
    out["rows"] = rows
    if "check" in out and "overhead" in out:
        o = out["overhead"]["one_task_round_trip_s"]
        # a seed-000 CIFAR cell: 500 rounds of ResNet-18-GN; at the GPU goal (<= 1 s per round, pending) ~500 s,
        # plus loading CIFAR and building the model (a few s, counted in the overhead below)
        e = estimate(out["check"], o, 500.0)
        e["arithmetic"] = (
            f"full profile: T1 = sum of the {len(out['check']['unit_seconds'])} measured units = {e['t1_s']} s; "
            f"the longest unit {e['longest_unit_s']} s bounds T_P from below, so speedup <= T1 / longest = "
            f"{e['t1_s'] / e['longest_unit_s']:.1f} whatever P; at P = 64, T_64 = {e['check'][64]['makespan_s']} s "
            f"(list schedule, + {o * 1e3:.1f} ms per task), E = T1 / (64 T_64) = {e['check'][64]['efficiency']}. "
            f"CIFAR grid: {e['cifar_cells']} cells of ~{e['cifar_cell_s']:.0f} s; at P = 64 only {e['cifar_cells']} "
            f"workers have a cell: E = {e['cifar_cells']} x {e['cifar_cell_s']:.0f} / (64 x "
            f"{e['cifar'][64]['makespan_s']}) = {e['cifar'][64]['efficiency']}; the per-task overhead is "
            f"{o / e['cifar_cell_s']:.1e} of a cell.")
        out["estimate_64"] = e
    s = []
    for r in rows:
        s.append(f"{r['case']}: {r['serial_s']:.1f} s serial vs {r['workers_2_s']:.1f} s on 2 workers "
                 f"({r['speedup']:.2f}x; same results: {r['same_results']})")
    if "check" in out and "projected_idle_speedup" in out["check"]:
        c = out["check"]
        s.append(f"check CPU time: serial {c['serial_cpu_s']:.0f} s (CPU/wall {c['serial_cpu_per_wall']:.2f}), busiest "
                 f"worker {c['busiest_worker_cpu_s']:.0f} s: projected {c['projected_idle_speedup']:.2f}x on an idle "
                 f"2-core machine")
    if "train" in out and "projected_idle_speedup_vs_batch" in out["train"]:
        c = out["train"]
        s.append(f"train CPU time: one batch {c['batch_cpu_s']:.0f} s (CPU/wall {c['batch_cpu_per_wall']:.2f}), serial "
                 f"cells {c['cells_serial_cpu_s']:.0f} s, busiest worker {c['busiest_worker_cpu_s']:.0f} s: projected "
                 f"{c['projected_idle_speedup_vs_batch']:.2f}x vs one batch, "
                 f"{c['projected_idle_speedup_vs_serial_cells']:.2f}x vs serial cells on an idle 2-core machine")
    if "overhead" in out:
        o = out["overhead"]
        s.append(f"cluster start {o['cluster_start_s']:.1f} s; one task's round trip "
                 f"{o['one_task_round_trip_s'] * 1e3:.1f} ms, {o['per_task_in_a_batch_of_200_s'] * 1e3:.1f} ms per "
                 "task in a batch of 200")
    if "estimate_64" in out:
        s.append(out["estimate_64"]["arithmetic"])
    loads = {k: out[k]["loadavg_1min"] for k in ("overhead", "check", "train", "worst") if k in out}
    s.append("1-minute load average before/after each part (2 cores, shared): " +
             ", ".join(f"{k} {a:.1f}/{b:.1f}" for k, (a, b) in loads.items()))
    out["summary"] = "\n".join(s)
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--merge", metavar="JSON", help="keep the parts of this results file not measured again, write the "
                    "merged result back to it (e.g. benchmarks/results/parallel.json)")
    ap.add_argument("parts", nargs="*", help="overhead check train worst (default: all)")
    a = ap.parse_args()
    prev = None
    if a.merge and os.path.exists(a.merge):
        prev = json.loads(Path(a.merge).read_text())
        if bool(prev.get("quick")) != a.quick:
            raise SystemExit(f"{a.merge} holds a {'quick' if prev.get('quick') else 'full'} run; not merging")
    res = run(quick=a.quick, only=a.parts or None, previous=prev)
    if a.merge:
        import platform

        res["quick"] = a.quick
        res["machine"] = {"python": platform.python_version(), "platform": platform.platform(),
                          "processor": platform.processor(), "cpus": os.cpu_count()}
        Path(a.merge).write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2, default=str))
