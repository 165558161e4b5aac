"""PEP size reachable in 60 s (issue 44, item 5): FedAvg with heterogeneity, C = 2 clients, K T local steps in total,
side by side in one run: PEPit's own solve, the hand-written FedAvg/FedInit PEP's symmetric reduction (before), and
the round protocol's PEP (after: the same reduction; the iterate basis where eta L >= 0.2).

Classes: 'GB', FedInit's check constants (every f_i L-smooth convex, f mu-strongly convex between the points,
Assumption 3 at (G, B) at every queried point, f(w^0) - f* <= D), the class the hand-written PEP solves; 'optimum'
(every f_i L-smooth and mu-strongly convex, (1/C) sum ||grad f_i(x*)||^2 <= zeta^2, ||w^0 - x*||^2 <= 1), which only the
round protocol's PEP writes. Steps: eta L = 0.2 and eta = FedInit's check step rule at C = 2 (eta L ~ 0.002).

Every case runs in a fresh process under a wall-clock limit (default 150 s; `--limit S`), so one slow solve cannot
stall the table; a case over it is reported as '> limit'. The hand-written builder's C K T <= 64 guard is lifted in
its process (the guard is for users, not for measuring). Each row has its wall time, build+reduce and solve seconds,
the solver status, the value, and the load average when it started (the machine is shared: compare within a row).

    python benchmarks/bench_pep_size.py [--quick] [--limit 150]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

CHECK = dict(L=1.9893741855291818, mu=0.5972084135304725, B=1.2823756459411066, G=0.32099664226873376,
             D=1.9623461635796378)  # fedtheory check --only fedinit.thm2 --seed 0


def _case(method: str, cls: str, K: int, T: int, eta: float) -> dict:
    """One solve in this process (the child)."""
    import warnings

    import cvxpy  # noqa: F401 - imports are not the solve's time
    import PEPit  # noqa: F401

    import fedtheory.worst.pep.setting as setting_module
    from fedtheory.sim import fedavg
    from fedtheory.worst.pep import PEPSetting, solve_pep
    from fedtheory.worst.pep.protocol import ProtocolSetting, protocol_pep

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    if method in ("pepit", "before"):
        setting_module.MAX_STEPS = 10 ** 6  # the user-facing guard, lifted for the measurement
        s = PEPSetting(C=2, K=K, T=T, L=CHECK["L"], eta=eta, mu=CHECK["mu"], client_mu=0.0, beta=0.0, B=CHECK["B"],
                       G=CHECK["G"], D=CHECK["D"], initial="function", metric="opt_error")
        r = solve_pep(s, method="pepit" if method == "pepit" else "symmetric", basis="auto")
    else:
        if cls == "GB":
            s = ProtocolSetting(C=2, K=K, T=T, eta=eta, L=CHECK["L"], mu=CHECK["mu"], client_mu=0.0, heterogeneity="GB",
                                G=CHECK["G"], B=CHECK["B"], initial="function", D=CHECK["D"], metric="opt_error")
        else:
            s = ProtocolSetting(C=2, K=K, T=T, eta=eta, L=CHECK["L"], mu=CHECK["mu"], client_mu=CHECK["mu"],
                                heterogeneity="optimum", zeta=0.5, initial="distance", D=1.0, metric="opt_error")
        r = solve_pep(protocol_pep(fedavg(), s), basis="differences" if method == "after_differences" else "auto")
    return {"value": r.value, "primal": r.primal, "status": r.status, "basis": r.reduced.get("basis"),
            "gram_dim": r.gram_dim, "variables": r.reduced.get("variables"), "times": r.times,
            "wall_s": round(time.perf_counter() - t0, 2)}


def _run(method: str, cls: str, K: int, T: int, eta: float, limit: float) -> dict:
    load = os.getloadavg()[0]
    cmd = [sys.executable, __file__, "--case", json.dumps([method, cls, K, T, eta])]
    t = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        row = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {
            "status": f"error: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"}
    except subprocess.TimeoutExpired:
        row = {"status": f"> {limit:g} s", "value": None}
    row.update(method=method, cls=cls, K=K, T=T, KT=K * T, eta=eta, etaL=round(eta * CHECK["L"], 4),
               elapsed_s=round(time.perf_counter() - t, 2), load=round(load, 2))
    print(json.dumps(row), flush=True)
    return row


def run(quick: bool = False, limit: float = 150.0) -> dict:
    from fedtheory.papers.fedinit.checks import admissible_eta

    eta_mod = 0.2 / CHECK["L"]
    rows = []
    steps = (12, 24) if quick else (12, 24, 48)
    for KT in steps:
        for K in (1, 4):
            T = KT // K
            for eta in (eta_mod, admissible_eta(CHECK["L"], 2, 2, K, 0.0, CHECK["B"])):
                methods = ["before", "after", "after_differences"] + (["pepit"] if KT <= 24 else [])
                for m in methods:
                    rows.append(_run(m, "GB", K, T, eta, limit))
                for m in ("after", "after_differences"):
                    rows.append(_run(m, "optimum", K, T, eta, limit))
    best = {}
    for r in rows:
        if r.get("value") is not None and r.get("wall_s", 1e9) <= 60:
            key = (r["method"], r["cls"], r["etaL"])
            best[key] = max(best.get(key, 0), r["KT"])
    summary = "; ".join(f"{m} {c} eta L={e}: K T <= {kt} within 60 s" for (m, c, e), kt in sorted(best.items()))
    return {"name": "pep_size", "rows": rows, "largest_within_60s": {f"{m}/{c}/etaL={e}": kt
                                                                       for (m, c, e), kt in best.items()},
            "summary": summary}


if __name__ == "__main__":
    if "--case" in sys.argv:
        print(json.dumps(_case(*json.loads(sys.argv[sys.argv.index("--case") + 1]))))
    else:
        lim = float(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else 150.0
        print(json.dumps(run(quick="--quick" in sys.argv, limit=lim), indent=2))
