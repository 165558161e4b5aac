"""PEP (fedtheory.worst.pep): wall time of FedInit's exact worst case, (C, K, T) = (3, 3, 4) and a grid with
C K T <= 40, for Thm 2 (f(w^T) - f*, class: convex clients, f mu-strongly convex between the queried points) and
Thm 1 ((1/T) sum_t ||grad f(w^t)||^2, class: L-smooth non-convex clients), both server rules.

Constants: today's FedInit check (seed 0, sc_least_squares_mild, admissible, beta = 0.1: L, mu, B, G, D as
`fedtheory worst fedinit.thm2` reads them), exact gradients, and the check's own step rule at each (C, K)
(``fedtheory.papers.fedinit.checks.admissible_eta``: the largest eta meeting every condition of Thms 1-6 with lambda_max
>= 1/2). Goals (issue 11): (3, 3, 4) in <= 5 s; every setting with C K T <= 40 in <= 60 s.
`python benchmarks/bench_pep.py --headline` times (3, 3, 4) alone (with the load average).

Grid: C in {1, 2, 3, 5, 10, 20, 40}, K in {1, 2, 3, 5, 10, 20, 40}, T in {1, 2, 4, 5, 8, 10, 20, 40} with
20 < C K T <= 40 (the largest settings of each shape; 35 of them); --quick: a handful.
A time is one end-to-end call of ``pep_worst_case`` (PEPit build, reduction, Clarabel, the record's bound) in a
process that has compiled the record once (warm-up). The (3, 3, 4) times are the best of 3, the four variants
interleaved. Also: PEPit's own solve (every constraint through its cvxpy wrapper) against the symmetric reduction
at one small setting, side by side (the reason the reduction exists).
"""
from __future__ import annotations

import time
import warnings

from _timing import best_of_interleaved

CHECK = dict(L=1.9893741855291818, mu=0.5972084135304725, B=1.2823756459411066, G=0.32099664226873376,
             D=1.9623461635796378, beta=0.1)  # fedtheory check --only fedinit.thm2 --seed 0 (the reference row)
VARIANTS = [(rid, rule) for rid in ("fedinit.thm2", "fedinit.thm1") for rule in ("algorithm1", "code")]


def _grid(quick: bool):
    if quick:
        return [(1, 2, 10), (2, 2, 5), (5, 2, 2), (10, 2, 1)]
    Cs, Ks, Ts = (1, 2, 3, 5, 10, 20, 40), (1, 2, 3, 5, 10, 20, 40), (1, 2, 4, 5, 8, 10, 20, 40)
    return [(C, K, T) for C in Cs for K in Ks for T in Ts if 20 < C * K * T <= 40]


def _spec(rid, rule, C, K, T):
    from fedtheory.papers.fedinit.checks import admissible_eta
    from fedtheory.papers.fedinit.worst import fedinit_pep

    eta = admissible_eta(CHECK["L"], C, C, K, CHECK["beta"], CHECK["B"])
    return fedinit_pep(rid, **CHECK, eta=eta, C=C, K=K, T=T, server_rule=rule)


def _row(rec, C, K, T, rule, wall, cpu):
    sol, sdp = rec["solver"], rec["sdp"]
    return {"C": C, "K": K, "T": T, "id": rec["id"], "server_rule": rule, "eta": rec["values"]["eta"],
            "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "build_s": sol["times"].get("build_s"),
            "reduce_s": sol["times"].get("reduce_s"), "solve_s": sol["times"].get("solve_s"),
            "status": sol["status"], "worst": rec["worst_measured"], "bound": rec["bound"], "slack": rec["slack"],
            "verdict": rec["verdict"], "gram_dim": sdp["gram_dim"], "points": sdp["points"],
            "constraints_full": sdp["constraints_full"], "reduced_variables": sdp["reduced"].get("variables"),
            "reduced_inequalities": sdp["reduced"].get("inequalities"),
            "blocks": "/".join(str(v) for v in sdp["reduced"].get("blocks", {}).values()),
            "basis": sdp["reduced"].get("basis")}


def run(quick: bool = False, headline_only: bool = False) -> dict:
    from fedtheory.worst import pep_available, pep_worst_case, solve_pep
    from fedtheory.worst.pep import PEPSetting

    if not pep_available():
        return {"name": "pep", "rows": [],
                "summary": "skipped: the extra is not installed (pip install 'fedtheory[pep]')"}

    warnings.simplefilter("ignore")  # cvxpy's "Solution may be inaccurate": the status is in the record
    for rid, _ in VARIANTS:  # warm-up: the records' sympy compilation, cvxpy's imports
        pep_worst_case(_spec(rid, "algorithm1", 1, 2, 1))

    # the headline: (3, 3, 4), best of 3, the four variants interleaved
    repeat = 1 if quick else 3
    C, K, T = 3, 3, 4
    def timed(rid, rule):
        c0 = time.process_time()
        return pep_worst_case(_spec(rid, rule, C, K, T)), time.process_time() - c0

    fns = [(lambda rid=rid, rule=rule: timed(rid, rule)) for rid, rule in VARIANTS]
    headline = [_row(rec, C, K, T, rule, best, cpu)
                for (best, (rec, cpu)), (rid, rule) in zip(best_of_interleaved(fns, repeat=repeat), VARIANTS)]

    if headline_only:  # python benchmarks/bench_pep.py --headline
        import os

        return {"name": "pep (3, 3, 4) only", "rows": headline, "load_average": os.getloadavg()}

    # the grid: one call each
    rows = []
    for C, K, T in _grid(quick):
        for rid, rule in (VARIANTS if not quick else VARIANTS[::2]):
            spec = _spec(rid, rule, C, K, T)
            w, c = time.perf_counter(), time.process_time()
            rec = pep_worst_case(spec)
            rows.append(_row(rec, C, K, T, rule, time.perf_counter() - w, time.process_time() - c))

    # why the reduction: PEPit's own solve vs the symmetric one at a small setting (side by side, best of 2)
    size = (2, 2, 2) if quick else (3, 2, 2)
    s = PEPSetting(C=size[0], K=size[1], T=size[2], L=CHECK["L"], eta=0.05, mu=CHECK["mu"], client_mu=0.0,
                   B=CHECK["B"], G=CHECK["G"], D=CHECK["D"], beta=0.1, metric="opt_error")
    (t_pepit, r_pepit), (t_sym, r_sym) = best_of_interleaved([lambda: solve_pep(s, method="pepit"),
                                                              lambda: solve_pep(s)], repeat=1 if quick else 2)
    versus = {"C": size[0], "K": size[1], "T": size[2], "pepit_s": round(t_pepit, 3), "symmetric_s": round(t_sym, 3),
              "speedup": round(t_pepit / t_sym, 1), "pepit_value": r_pepit.primal, "pepit_status": r_pepit.status,
              "symmetric_value": r_sym.value, "symmetric_status": r_sym.status, "pepit_gram_dim": r_pepit.gram_dim,
              "constraints_full": r_sym.constraints_full, "reduced": r_sym.reduced}

    worst = max(rows, key=lambda r: r["wall_s"])
    failed = [r for r in rows + headline if r["worst"] is None]
    h = {f"{r['id']}/{r['server_rule']}": r["wall_s"] for r in headline}
    summary = (f"(C, K, T) = (3, 3, 4), best of {repeat}: " + ", ".join(f"{k} {v:.2f} s" for k, v in h.items())
               + f" (goal <= 5 s). Grid of {len({(r['C'], r['K'], r['T']) for r in rows})} settings with "
               f"20 < C K T <= 40, {len(rows)} PEPs: slowest {worst['wall_s']:.1f} s at (C, K, T) = ({worst['C']}, "
               f"{worst['K']}, {worst['T']}) {worst['id']} (goal <= 60 s); {len(failed)} without an accepted value. "
               f"PEPit's own solve at {size}: {t_pepit:.2f} s vs the symmetric reduction {t_sym:.2f} s "
               f"({t_pepit / t_sym:.0f}x), values {r_pepit.primal} / {r_sym.value}.")
    return {"name": "pep", "rows": headline + rows, "versus_pepit": versus, "summary": summary}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv, headline_only="--headline" in sys.argv), indent=2))
