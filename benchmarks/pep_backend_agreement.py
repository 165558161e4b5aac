"""The round protocol's PEPs against the PEP scripts written by hand for each algorithm (tests/test_pep_protocol.py):
values and relative gaps, in one table (issue 44's closing evidence). Runs the test module's comparisons and prints
what each recorded.

    python benchmarks/pep_backend_agreement.py
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import warnings
from pathlib import Path


def run() -> dict:
    warnings.simplefilter("ignore")
    path = Path(__file__).resolve().parents[1] / "tests" / "test_pep_protocol.py"
    spec = importlib.util.spec_from_file_location("test_pep_protocol", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    calls = [(mod.test_fedavg_server_step, dict(server_lr=v, metric=m)) for v in (0.7, 1.0, 1.5)
             for m in ("dist2", "opt_error")]
    calls += [(mod.test_fedavg_gb_class, {}), (mod.test_scaffold_option_two, {}),
              (mod.test_fedprox_exact_proximal_solve, dict(mu_prox=0.5)),
              (mod.test_fedprox_exact_proximal_solve, dict(mu_prox=2.0)),
              (mod.test_fednova_weighted_clients_unreduced, {}),
              (mod.test_fedinit_agrees_with_the_hand_written_pep, {}), (mod.test_dgd_on_a_fixed_matrix_is_exact, {}),
              (mod.test_dgd_on_the_spectral_class_is_an_upper_bound, {}), (mod.test_oledfl_lookahead_start, {}),
              (mod.test_a_users_own_aggregator, {})]
    for fn, kw in calls:
        assert set(kw) <= set(inspect.signature(fn).parameters)
        fn(**kw)
    rows = [{"case": k, "protocol_pep": a, "hand_written": b, "relative_gap": abs(a - b) / abs(b)}
            for k, (a, b) in mod.RECORDED.items()]
    return {"name": "pep_backend_agreement", "rows": rows,
            "summary": f"{len(rows)} comparisons, largest relative gap {max(r['relative_gap'] for r in rows):.2e}"}


if __name__ == "__main__":
    out = run()
    for r in out["rows"]:
        print(f"| {r['case']} | {r['protocol_pep']:.10g} | {r['hand_written']:.10g} | {r['relative_gap']:.1e} |")
    print(json.dumps({"summary": out["summary"]}))
