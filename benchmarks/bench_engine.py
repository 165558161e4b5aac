"""The vectorized engine against a naive per-client numpy loop (issue 2) and against the numpy limit (issue 38).

Issue 2, the naive loop:

1. FedAvg, C = 100 clients (all train), d = 20, K = 10: client-steps per second, one run.
2. A 64-run seed sweep at C = 100, d = 100, K = 10: one batched ``simulate`` call vs the naive
   loop run 64 times.

Both sides do the same arithmetic on the same problem (heterogeneous least squares) and start
from the same point; the final models are compared to show it. Two gradient oracles: exact
(each client-step is a d x d matrix-vector product) and minibatches of 10 samples. The naive
loop is the plain per-client code a researcher would write: one client, one step at a time,
``x -= eta * (H_i x - h_i)``.

Issue 38, the limit: ``simulate(problem, algorithm, RunConfig(rounds=T, local_steps=10, lr=0.01), seeds,
measures=())`` on ``heterogeneous_least_squares(100, d, 50)`` against the shortest batched numpy code that does the
same arithmetic (``minimal_fedavg``, ``minimal_gossip``, ``minimal_minibatch``), for FedAvg with exact gradients,
DFedAvg on a ring (gossip, exact gradients) and FedAvg with minibatches of 10, on the grid d in (5, 20, 100) x runs
R in (1, 8, 64), T = ``limit_rounds(kind, d, R)`` rounds. Each cell runs in its own process with one BLAS thread (as
``fedtheory check`` does), the two sides interleaved, best of n, wall clock and CPU seconds of the process; the
final models are compared bit for bit. ``--limit`` measures this tree; ``--limit --against REV`` also measures the
engine of revision REV (exported with ``git archive``), cell by cell alternating with this tree,
so before and after see the same machine load. ``/proc/loadavg`` is recorded beside every cell.

    python benchmarks/bench_engine.py --limit --against 5a4609d --out benchmarks/results/engine_limit.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
from _timing import best_of_interleaved, best_wall_and_cpu
from _trees import export, python_in

from fedtheory.sim import Minibatch, RunConfig, fedavg, heterogeneous_least_squares, simulate
from fedtheory.sim.rng import RunStreams


def _naive_exact(H, h, w0, T, K, eta):
    w = w0.copy()
    C = H.shape[0]
    for _ in range(T):
        acc = np.zeros_like(w)
        for i in range(C):
            x = w.copy()
            for _ in range(K):
                x -= eta * (H[i] @ x - h[i])
            acc += x
        w = acc / C
    return w


def _naive_minibatch(X, y, w0, T, K, eta, b, seed):
    """Same draws as the engine: the run's 'batch' stream, (K, C, b) uniforms per round."""
    streams = RunStreams([seed])
    w = w0.copy()
    C, S, _ = X.shape
    for _ in range(T):
        u = streams.uniform("batch", (K, C, b))[0]
        acc = np.zeros_like(w)
        for i in range(C):
            x = w.copy()
            for k in range(K):
                idx = np.floor(u[k, i] * S).astype(np.int64)
                Xb = X[i, idx]
                x -= eta * (Xb.T @ (Xb @ x - y[i, idx]) / b)
            acc += x
        w = acc / C
    return w


def run(quick: bool = False) -> dict:
    rows = []
    K, eta = 10, 0.01
    # 1. single run, d = 20
    p = heterogeneous_least_squares(100, 20, 50, random_state=0)
    w0 = p.initial_point(0)
    T = 20 if quick else 100
    for oracle_name, oracle in (("exact", None), ("minibatch(10)", Minibatch(10))):
        cfg = (RunConfig(rounds=T, local_steps=K, lr=eta) if oracle is None
               else RunConfig(rounds=T, local_steps=K, lr=eta, oracle=oracle))
        if oracle is None:
            naive = lambda: _naive_exact(p.H[0], p.h[0], w0, T, K, eta)  # noqa: E731
        else:
            naive = lambda: _naive_minibatch(p.X[0], p.y[0], w0, T, K, eta, 10, 0)  # noqa: E731
        (t_eng, tr), (t_nv, wn) = best_of_interleaved(
            [lambda: simulate(p, fedavg(), cfg, [0], w0=w0, measures=()), naive], repeat=5)
        steps = T * p.n_clients * K
        rows.append({"benchmark": "FedAvg C=100 d=20 K=10, 1 run", "oracle": oracle_name,
                     "naive client-steps/s": steps / t_nv, "engine client-steps/s": steps / t_eng,
                     "speed-up": t_nv / t_eng, "max |w_engine - w_naive|": float(np.abs(tr.final_w[0] - wn).max())})
    # 2. 64-run sweeps: d = 100 (the setting: each client-step is a 100 x 100 product, flop-bound)
    #    and d = 20 (per-step Python overhead dominates the naive loop)
    R = 64
    for d_sweep, oracle_name, oracle in ((100, "exact", None), (100, "minibatch(10)", Minibatch(10)),
                                         (20, "exact", None)):
        p2 = heterogeneous_least_squares(100, d_sweep, 50, random_state=0)
        w02 = p2.initial_point(0)
        T2 = 3 if quick else 10
        cfg = (RunConfig(rounds=T2, local_steps=K, lr=eta) if oracle is None
               else RunConfig(rounds=T2, local_steps=K, lr=eta, oracle=oracle))
        n_loop = 4 if quick else 8  # time the naive loop on n_loop seeds and scale to 64 (each seed costs the same)
        if oracle is None:
            naive = lambda: [_naive_exact(p2.H[0], p2.h[0], w02, T2, K, eta) for _ in range(n_loop)]  # noqa: E731
        else:
            naive = lambda: [_naive_minibatch(p2.X[0], p2.y[0], w02, T2, K, eta, 10, s) for s in range(n_loop)]  # noqa: E731
        (t_eng, tr), (t_one, wn) = best_of_interleaved(
            [lambda: simulate(p2, fedavg(), cfg, list(range(R)), w0=w02, measures=()), naive], repeat=3)
        wn = wn[0]
        t_nv = t_one * R / n_loop
        steps = R * T2 * p2.n_clients * K
        rows.append({"benchmark": f"64-run sweep C=100 d={d_sweep} K=10", "oracle": oracle_name,
                     "naive client-steps/s": steps / t_nv, "engine client-steps/s": steps / t_eng,
                     "speed-up": t_nv / t_eng, "max |w_engine - w_naive|": float(np.abs(tr.final_w[0] - wn).max())})
    summary = ("speed-up = naive loop time / engine time (best of 5 or 3, the two sides interleaved), same "
               "problem, same start, same draws; "
               "the last column shows both compute the same models. Goals (issue 2): >= 10x for the single run, "
               ">= 30x for the sweep.")
    return {"name": "engine vs naive per-client loop", "rows": rows, "summary": summary}


# ------------------------------------------------------------------------------------ issue 38: the numpy limit

HERE = Path(__file__).resolve().parent
K_LIMIT, ETA_LIMIT, CLIENTS, SAMPLES, BATCH = 10, 0.01, 100, 50, 10
KINDS = {"fedavg": "FedAvg, exact gradients", "gossip": "DFedAvg on a ring (gossip), exact gradients",
         "minibatch": "FedAvg, minibatches of 10"}


def limit_rounds(kind: str, d: int, R: int) -> int:
    """T for a cell: about the same arithmetic in every cell (R d^2 T), within [10, 300] rounds ([3, 60] with
    minibatches, whose gather of the batch rows costs more per client-step)."""
    if kind == "minibatch":
        return int(np.clip(round(2e4 / (R * d * d)), 3, 60))
    return int(np.clip(round(1e5 / (R * d * d)), 10, 300))


def minimal_fedavg(H, h, w0, R, T, K, eta):
    """FedAvg, exact gradients: every run and client as one (C, d, R) array; per local step G = H X - h, X -= eta G;
    the mean over the clients per round. Returns the final models (R, d)."""
    C, d = h.shape
    w = np.broadcast_to(w0[:, None], (d, R))
    for _ in range(T):
        X = np.broadcast_to(w, (C, d, R)).copy()
        for _ in range(K):
            G = H @ X
            G -= h[:, :, None]
            X -= eta * G
        w = X.mean(axis=0)
    return w.T


def minimal_gossip(H, h, W, w0, R, T, K, eta):
    """DFedAvg (adapt then combine): the clients' models as one (C, d, R) array, K local steps as above, then one
    sparse product with the mixing matrix W (C x C) per round; the final models are the clients' mean."""
    C, d = h.shape
    X = np.broadcast_to(w0[None, :, None], (C, d, R)).copy()
    for _ in range(T):
        for _ in range(K):
            G = H @ X
            G -= h[:, :, None]
            X -= eta * G
        X = (W @ X.reshape(C, d * R)).reshape(C, d, R)
    return X.mean(axis=0).T


def minimal_minibatch(X, y, w0, seeds, T, K, eta, b):
    """FedAvg, minibatches of b drawn with replacement: each run's uniforms from its own 'batch' stream (the
    engine's draws: child 1 of the seed's SeedSequence), the batch rows gathered, two einsums per step. einsum's
    sums follow the layout of the local models, so they are laid out as the engine's: the local start np.array of
    the broadcast global model (clients innermost), each step a new C-contiguous array."""
    C, S, d = X.shape
    R = len(seeds)
    u = np.stack([np.random.Generator(np.random.PCG64(np.random.SeedSequence(s).spawn(5)[1])).random((T, K, C, b))
                  for s in seeds], axis=1)  # (T, R, K, C, b)
    Xf, yf = X.reshape(-1, d), y.reshape(-1)
    first = (np.arange(C) * S)[:, None]
    w = np.broadcast_to(w0, (R, d))
    for t in range(T):
        W = np.array(np.broadcast_to(w[:, None, :], (R, C, d)))
        for k in range(K):
            rows = first + np.floor(u[t, :, k] * S).astype(np.int64)  # (R, C, b)
            Xb, yb = Xf.take(rows, axis=0), yf.take(rows)
            r = np.einsum("rnbd,rnd->rnb", Xb, W) - yb
            W = W - eta * (np.einsum("rnbd,rnb->rnd", Xb, r) / b)
        w = W.mean(axis=1)
    return w


def limit_cell(kind: str, d: int, R: int, repeat: int) -> dict:
    """One cell, in this process: the engine (the ``fedtheory`` this process imports) and the minimal code,
    interleaved, best of ``repeat``, with one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from fedtheory.sim import dfedavg, ring

    T = limit_rounds(kind, d, R)
    p = heterogeneous_least_squares(CLIENTS, d, SAMPLES, random_state=0)
    w0 = p.initial_point(0)
    seeds = list(range(R))
    if kind == "fedavg":
        alg, cfg = fedavg(), RunConfig(rounds=T, local_steps=K_LIMIT, lr=ETA_LIMIT)
        minimal = lambda: minimal_fedavg(p.H[0], p.h[0], w0, R, T, K_LIMIT, ETA_LIMIT)  # noqa: E731
    elif kind == "gossip":
        top = ring(CLIENTS)
        alg, cfg = dfedavg(top), RunConfig(rounds=T, local_steps=K_LIMIT, lr=ETA_LIMIT)
        W = top.matrix().copy()
        W.sort_indices()  # the engine's order of each row's entries: the same sums
        minimal = lambda: minimal_gossip(p.H[0], p.h[0], W, w0, R, T, K_LIMIT, ETA_LIMIT)  # noqa: E731
    else:
        alg, cfg = fedavg(), RunConfig(rounds=T, local_steps=K_LIMIT, lr=ETA_LIMIT, oracle=Minibatch(BATCH))
        minimal = lambda: minimal_minibatch(p.X[0], p.y[0], w0, seeds, T, K_LIMIT, ETA_LIMIT, BATCH)  # noqa: E731
    engine = lambda: simulate(p, alg, cfg, seeds, w0=w0, measures=()).final_w  # noqa: E731
    load = _load()
    with threadpool_limits(limits=1):
        engine(), minimal()  # warm-up: first calls pay imports and caches
        (te, ce, we), (tm, cm, wm) = best_wall_and_cpu([engine, minimal], repeat=repeat)
    return {"kind": kind, "d": d, "runs": R, "rounds": T, "engine_s": te, "minimal_s": tm, "ratio": te / tm,
            "engine_cpu_s": ce, "minimal_cpu_s": cm, "cpu_ratio": ce / cm,
            "bit_identical": bool(np.array_equal(we, wm)), "max_abs_diff": float(np.max(np.abs(we - wm))),
            "load_before": load, "load_after": _load(), "repeat": repeat}


def limit_profile(kind: str, d: int, R: int, top: int = 12) -> dict:
    """Where one cell's engine time goes: cProfile (CPU clock) of one ``simulate`` call after a warm-up, the functions
    with the most time of their own, as shares of the call."""
    import cProfile
    import pstats
    import time

    from threadpoolctl import threadpool_limits

    from fedtheory.sim import dfedavg, ring

    T = limit_rounds(kind, d, R)
    p = heterogeneous_least_squares(CLIENTS, d, SAMPLES, random_state=0)
    w0 = p.initial_point(0)
    alg = dfedavg(ring(CLIENTS)) if kind == "gossip" else fedavg()
    cfg = RunConfig(rounds=T, local_steps=K_LIMIT, lr=ETA_LIMIT,
                    **({"oracle": Minibatch(BATCH)} if kind == "minibatch" else {}))
    with threadpool_limits(limits=1):
        simulate(p, alg, cfg, list(range(R)), w0=w0, measures=())
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        simulate(p, alg, cfg, list(range(R)), w0=w0, measures=())
        prof.disable()
    stats = pstats.Stats(prof).stats
    total = sum(v[2] for v in stats.values())
    rows = sorted(((v[2], v[3], f"{Path(k[0]).name}:{k[1]}({k[2]})", v[1]) for k, v in stats.items()), reverse=True)
    return {"kind": kind, "d": d, "runs": R, "rounds": T, "cpu_s": total,
            "top": [{"function": name, "calls": n, "own_share": own / total, "cumulative_share": cum / total}
                    for own, cum, name, n in rows[:top]]}


def _load() -> float:
    """The 1-minute load average (the machine is shared: ratios are measured side by side, in one process)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


GRID_D, GRID_R = (5, 20, 100), (1, 8, 64)


def _cell_in(tree: Path | None, kind: str, d: int, R: int, repeat: int) -> dict:
    """limit_cell in a fresh interpreter importing ``fedtheory`` from ``tree`` (None: this tree)."""
    out = python_in(tree, [str(Path(__file__).resolve()), "--cell", kind, str(d), str(R), str(repeat)], cwd=HERE,
                    check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def limit_grid(quick: bool = False, against: str | None = None, repeat: int | None = None,
               kinds=tuple(KINDS)) -> dict:
    """Every cell of the grid in its own process; with ``against``, that revision's engine too, cell by cell."""
    repeat = repeat or (3 if quick else 7)
    ds, Rs = ((5, 20), (1, 8)) if quick else (GRID_D, GRID_R)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        old = export(against, Path(tmp)) if against else None
        for kind in kinds:
            for d in ds:
                for R in Rs:
                    row = {"now": _cell_in(None, kind, d, R, repeat)}
                    if old is not None:
                        row["before"] = _cell_in(old, kind, d, R, repeat)
                    rows.append(row)
                    print(_line(row), file=sys.stderr, flush=True)
    return {"name": "engine at the numpy limit", "against": against, "repeat": repeat, "rows": rows,
            "blas_threads": 1, "machine_cpus": os.cpu_count()}


def _line(row: dict) -> str:
    n = row["now"]
    text = (f"{KINDS[n['kind']]:45s} d={n['d']:3d} R={n['runs']:2d} T={n['rounds']:3d}  now {n['engine_s']:.4f} s / "
            f"{n['minimal_s']:.4f} s = {n['ratio']:.2f} (cpu {n['cpu_ratio']:.2f}, same bits {n['bit_identical']})")
    if "before" in row:
        b = row["before"]
        text += (f"  before {b['engine_s']:.4f} s = {b['ratio']:.2f} (cpu "
                 f"{b['cpu_ratio']:.2f}, same bits {b['bit_identical']})")
    return text + f"  load {n['load_before']:.2f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", action="store_true", help="the grid against the minimal batched code (issue 38)")
    ap.add_argument("--against", help="with --limit: also this revision's engine, alternating cell by cell")
    ap.add_argument("--kinds", default=",".join(KINDS), help="with --limit: " + ", ".join(KINDS))
    ap.add_argument("--repeat", type=int, help="best of n (default 7; 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="a smaller grid")
    ap.add_argument("--out", help="write the JSON here")
    ap.add_argument("--profile", nargs=3, metavar=("KIND", "D", "RUNS"),
                    help="cProfile one cell's simulate call (with --against: that revision's engine too)")
    ap.add_argument("--cell", nargs=4, metavar=("KIND", "D", "RUNS", "REPEAT"), help=argparse.SUPPRESS)
    ap.add_argument("--profile-here", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.profile_here:
        kind, d, R = args.profile_here
        print(json.dumps(limit_profile(kind, int(d), int(R))))
        return
    if args.profile:
        kind, d, R = args.profile
        with tempfile.TemporaryDirectory() as tmp:
            trees = {"now": None} | ({"before": export(args.against, Path(tmp))} if args.against else {})
            res = {side: json.loads(python_in(tree, [str(Path(__file__).resolve()), "--profile-here", kind, d, R],
                                              cwd=HERE, check=True).stdout.strip().splitlines()[-1])
                   for side, tree in trees.items()}
        for side, prof in res.items():
            print(f"## {side}: {KINDS[kind]}, d = {d}, R = {R}, T = {prof['rounds']}: {prof['cpu_s']:.3f} s CPU",
                  file=sys.stderr)
            for r in prof["top"]:
                print(f"  {r['own_share']:6.1%} own {r['cumulative_share']:6.1%} cum {r['calls']:6d}  {r['function']}",
                      file=sys.stderr)
        if args.out:
            Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
        return
    if args.cell:
        kind, d, R, repeat = args.cell
        print(json.dumps(limit_cell(kind, int(d), int(R), int(repeat))))
        return
    res = limit_grid(args.quick, args.against, args.repeat, tuple(args.kinds.split(","))) if args.limit \
        else run(quick=args.quick)
    text = json.dumps(res, indent=2)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
