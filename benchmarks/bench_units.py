"""The units check (issue 22): the pass over every registered record beside one simulated check of the quick
profile, in one process. The units pass is a symbolic walk over each record's expressions (no simulation); this
shows what it costs next to the cheapest thing a `fedtheory check` run does anyway.

Reported: the first pass over every record (nothing analysed yet in this process), a second pass (memoized per
record), and `fedinit.thm1` of the quick profile (simulations included), each best of ``repeat`` (the first pass
once: it is the cold one).
"""
from __future__ import annotations

import time

from _timing import best_of


def run(quick: bool = False) -> dict:
    from fedtheory import plugins
    from fedtheory.checks import run_checks
    from fedtheory.checks.dimensions import units_analysis
    from fedtheory.theory.core import registry

    plugins.papers()  # load the built-in papers (and any installed plug-in) before timing
    records = list(registry().values())
    t0 = time.perf_counter()
    verdicts = [units_analysis(r)["verdict"] for r in records]
    cold = time.perf_counter() - t0
    warm, _ = best_of(lambda: [units_analysis(r) for r in records], 1 if quick else 3)
    one_check, rows = best_of(lambda: run_checks(only=["fedinit.thm1"], profile="quick", seed=0,
                                                 parallel_symbolic=False), 1)
    rows_list = [{"what": f"units pass over {len(records)} records, first", "seconds": round(cold, 4)},
                 {"what": "units pass again (memoized per record)", "seconds": round(warm, 5)},
                 {"what": f"fedinit.thm1, quick profile ({len(rows)} rows)",
                  "seconds": round(one_check, 3)}]
    summary = (f"units pass over {len(records)} records: {cold:.3f} s ({cold / one_check:.2f}x one simulated "
               f"check, fedinit.thm1 {one_check:.2f} s); verdicts: "
               + ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts))))
    return {"name": "units", "rows": rows_list, "summary": summary}


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
