"""One gossip round x_i <- sum_l w_il x_l for m = 1000 clients, d = 100: sparse W (CSR) against dense W.

The sparse product is what ``Gossip.mix`` does (scipy CSR times a dense (m, d) block); the dense one is the
same W as a NumPy array times the same block. Both are timed in this process, side by side (best of n
repeats). Dense BLAS runs with the process's default thread count and, where threadpoolctl is installed,
also with one thread (small products gain little from threads on a shared machine). The random
topology's per-round cost of drawing the graph and building W is reported too.
"""
from __future__ import annotations

import timeit

import numpy as np

from fedtheory.sim.gossip import Gossip
from fedtheory.sim.rng import RunStreams
from fedtheory.sim.rules import State
from fedtheory.sim.topology import Exponential, Grid2D, RandomKNeighbour, Ring


def _best(fn, number, repeat):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def run(quick: bool = False) -> dict:
    m, d = 1000, 100
    number, repeat = (3, 3) if quick else (10, 7)
    X = np.random.default_rng(0).standard_normal((1, m, d))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        threadpool_limits = None
    rows = []
    for top in (Ring(m), Grid2D(m, rows=25), Exponential(m), RandomKNeighbour(m, k=10)):
        g = Gossip(top)
        g.setup(State(w=np.zeros((1, d))), 1, m, d)
        streams = RunStreams([0])
        B = g.round_matrix(streams)
        W = B.toarray()
        np.testing.assert_allclose(g.mix(B, X)[0], W @ X[0], atol=1e-12)
        t_sparse = _best(lambda: g.mix(B, X), number, repeat)
        t_dense = _best(lambda: W @ X[0], number, repeat)
        row = {"topology": top.label(), "nnz": int(B.nnz), "density": B.nnz / m**2, "sparse_ms": 1e3 * t_sparse,
               "dense_ms": 1e3 * t_dense, "dense/sparse": t_dense / t_sparse}
        if threadpool_limits is not None:
            with threadpool_limits(limits=1, user_api="blas"):
                t1 = _best(lambda: W @ X[0], number, repeat)
            row.update({"dense_1thread_ms": 1e3 * t1, "dense_1thread/sparse": t1 / t_sparse})
        row["draw_and_build_ms"] = (1e3 * _best(lambda: g.round_matrix(streams), 1, repeat) if top.time_varying
                                    else "- (built once)")
        rows.append(row)
    worst = min(r["dense/sparse"] for r in rows)
    summary = (f"one gossip round, m = {m}, d = {d}: the sparse product is {worst:.0f}x to "
               f"{max(r['dense/sparse'] for r in rows):.0f}x faster than the dense one (default BLAS threads)")
    if threadpool_limits is not None:
        summary += (f"; {min(r['dense_1thread/sparse'] for r in rows):.0f}x to "
                    f"{max(r['dense_1thread/sparse'] for r in rows):.0f}x against single-threaded dense BLAS")
    rnd = [r for r in rows if isinstance(r["draw_and_build_ms"], float)]
    if rnd:
        summary += (". Drawing the random topology's graph and building "
                    f"W: {rnd[0]['draw_and_build_ms']:.1f} ms per round")
    return {"name": "gossip round: sparse vs dense W", "rows": rows, "summary": summary}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
