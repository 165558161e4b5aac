"""The PEP slack table of docs/worst-case.md: FedInit Thms 1 and 2 at small (C, K, T), the constants of today's
check, PEP (exact worst case over the PEP's class) next to the adversarial search (the same constants, the
search's class of quadratics) and the search's random start. Not a timing benchmark (run_all.py does not run it).

    python benchmarks/pep_findings.py [--budget N] [--quick]      # prints the markdown table and writes
                                                                  # benchmarks/results/pep_findings.json

The constants are those `fedtheory worst fedinit.thm2 --method pep` takes from `fedtheory check --only fedinit.thm2
--seed 0` (sc_least_squares_mild, admissible, beta = 0.1): L, mu, B, G, D; sigma_l = 0 (exact gradients), N = C,
and two steps: the check's own eta and the check's step rule at the small (C, K) (``admissible_eta``); lambda the
best admissible one at each setting. Each row's commands are in the JSON (``commands``).
"""
from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=2048, help="search evaluations per row (default 2048)")
    ap.add_argument("--quick", action="store_true", help="one size, a small budget")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    from fedtheory.papers.fedinit.checks import admissible_eta
    from fedtheory.papers.fedinit.worst import best_lambda, fedinit_pep
    from fedtheory.worst import make_spec, pep_worst_case, worst_case
    from fedtheory.worst.spec import entry

    ref = {rid: entry(rid).reference(0) for rid in ("fedinit.thm2", "fedinit.thm1")}
    P = ref["fedinit.thm2"]["params"]
    base = {k: P[k] for k in ("L", "mu", "B", "G", "D", "beta")}
    sizes = [(3, 3, 4)] if args.quick else [(3, 3, 4), (2, 2, 5), (5, 2, 2)]
    budget = 256 if args.quick else args.budget
    rows = []
    for C, K, T in sizes:
        for step, eta in (("check's eta", P["eta"]), ("admissible_eta(C, K)",
                                                      admissible_eta(P["L"], C, C, K, P["beta"], P["B"]))):
            lam = best_lambda(eta=eta, K=K, L=P["L"], B=P["B"], N=C, beta=P["beta"])
            consts = dict(base, eta=eta, C=C, N=C, K=K, T=T, sigma_l=0.0, lam=lam)
            for rid in ("fedinit.thm2", "fedinit.thm1"):
                t = time.perf_counter()
                peps = {"pep": pep_worst_case(fedinit_pep(rid, **consts))}
                if rid == "fedinit.thm1":  # the search's own class (convex clients, f mu-strongly convex)
                    peps["pep_convex"] = pep_worst_case(fedinit_pep(rid, **consts, function_class="convex"))
                t_pep = time.perf_counter() - t
                t = time.perf_counter()
                search = worst_case(make_spec(rid, consts), budget=budget, popsize=32, seed=0)
                t_search = time.perf_counter() - t
                row = {"id": rid, "C": C, "K": K, "T": T, "step": step, "eta": eta, "lam": lam,
                       "bound": peps["pep"]["bound"], "search_worst": search["worst_measured"],
                       "search_slack": search["slack"], "random_best_slack": search["random_start"]["best_slack"],
                       "random_median_slack": search["random_start"]["median_slack"],
                       "check_random_ratio": ref[rid]["random_ratio"], "search_s": round(t_search, 1),
                       "pep_s": round(t_pep, 1), "search_verdict": search["verdict"], "budget": budget,
                       "commands": {"pep": f"fedtheory worst {rid} --method pep --no-reference "
                                           + " ".join(f"--set {k}={v}" for k, v in consts.items()),
                                    "search": f"fedtheory worst {rid} --no-reference --budget {budget} "
                                              + " ".join(f"--set {k}={v}" for k, v in consts.items())}}
                for name, rec in peps.items():
                    row[f"{name}_worst"] = rec["worst_measured"]
                    row[f"{name}_slack"] = rec["slack"]
                    row[f"{name}_verdict"] = rec["verdict"]
                    row[f"{name}_status"] = rec["solver"]["status"]
                    row[f"{name}_class"] = rec["class"]
                row["search_over_pep"] = (search["worst_measured"] / row["pep_worst"]
                                          if row["pep_worst"] else None)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if not k.endswith("_class") and k != "commands"}),
                      flush=True)
    out = HERE / "results" / ("quick" if args.quick else "") / "pep_findings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"reference": ref, "rows": rows}, indent=2))
    print("\n| bound | (C, K, T) | step | bound value | PEP worst: slack | search worst: slack (search/PEP) "
          "| random start: best slack |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        pep = f"{r['pep_worst']:.4g}: **{r['pep_slack']:.3g}**" if r["pep_worst"] else r["pep_status"]
        if "pep_convex_worst" in r and r["pep_convex_worst"]:
            pep += f" (convex class: {r['pep_convex_worst']:.4g}: {r['pep_convex_slack']:.3g})"
        print(f"| {r['id']} | ({r['C']}, {r['K']}, {r['T']}) | {r['step']} = {r['eta']:.3g} | {r['bound']:.4g} | {pep} "
              f"| {r['search_worst']:.4g}: {r['search_slack']:.3g} ({r['search_over_pep']:.3f}) "
              f"| {r['random_best_slack']:.3g} |")


if __name__ == "__main__":
    main()
