"""The tightness table of a collection of papers (the zoo of trusted theorems) from a results file of
`fedtheory check --out`, as Markdown on standard output (README's and docs/zoo.md's table can be generated from it):

    fedtheory check --profile quick --only drori2014 taylor2018 ... --worst-case --out RESULTS.json
    python benchmarks/zoo_tightness.py RESULTS.json [--collection zoo] [--json] [--terms]

One row per bound record: paper, record, source, transcription, rows and verdicts, the tightest measured / bound
found by simulation (where), by the worst-case search (`--worst-case` records) and by the PEP (a worst-case record
of method 'pep'); '-' where the file holds no such number (``fedtheory.report.tightness_table``). ``--json``: the
same table as JSON. ``--terms``: the term-wise tightness table instead (per bound and additive term, measured / term
where the term dominates: ``fedtheory.report.term_tightness_markdown``). Exit 2 (naming the file) for a file that is
not a results file. Not a timing benchmark
(run_all.py does not run it).
"""
from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", metavar="RESULTS.json", help="a results file written by `fedtheory check --out`")
    ap.add_argument("--collection", help="only this collection (default: every collection of the file)")
    ap.add_argument("--json", action="store_true", help="the table as JSON instead of Markdown")
    ap.add_argument("--terms", action="store_true", help="the term-wise tightness table (issue 45) instead")
    ap.add_argument("--pep", choices=("quick", "full"), help="also solve the PEP of every bound record of the file "
                    "that declares one, at its check's constants with sizes capped by the profile (each declaration's "
                    "measured sizes, fedtheory.worst.pep_sizes: quick, seconds a record; full, a minute a record), "
                    "and show it in the PEP column (a PEP record already in the file is kept)")
    args = ap.parse_args(argv)
    from fedtheory._validation import ParameterError
    from fedtheory.report import load_results, term_tightness_markdown, tightness_markdown, tightness_table

    try:
        payload = load_results(args.results)  # the report's reader: a regular file within limits, held to the schema
    except ParameterError as exc:
        print(f"zoo_tightness: error: {exc}", file=sys.stderr)
        return 2
    if args.terms:
        text = term_tightness_markdown(payload, args.collection)
        if not text:
            print("zoo_tightness: the results file has no bound row with its additive terms", file=sys.stderr)
            return 1
        print(text, end="")
        return 0
    if args.pep:
        payload = with_pep_rows(payload, args.pep)
    if args.json:
        print(json.dumps(tightness_table(payload, args.collection), indent=2))
        return 0
    text = tightness_markdown(payload, args.collection)
    if not text:
        print("zoo_tightness: the results file has no collection of papers with a bound record (the zoo: "
              "`fedtheory check --only drori2014 ...`)", file=sys.stderr)
        return 1
    print(text, end="")
    return 0


def with_pep_rows(payload: dict, profile: str) -> dict:
    """The results payload with a PEP record (``fedtheory.worst.run_pep``) for every bound record it holds that
    declares a PEP and has none yet, at the check's constants, sizes capped by the profile (``pep_sizes``); a PEP that
    cannot be built or solved is said on standard error and left out."""
    import warnings

    from fedtheory.worst import pep_available, run_pep
    from fedtheory.worst.pep.record import pep_entries, pep_sizes

    if not pep_available():
        print("zoo_tightness: --pep needs the optional extra: pip install 'fedtheory[pep]'", file=sys.stderr)
        return payload
    warnings.simplefilter("ignore")  # cvxpy's "Solution may be inaccurate": the status is in the record
    have = {w.get("id") for w in payload.get("worst_case") or [] if w.get("method") == "pep"}
    ids = {str(r.get("id")) for r in payload.get("results") or [] if r.get("kind") == "bound"}
    rows = list(payload.get("worst_case") or [])
    for rid in sorted(ids & set(pep_entries()) - have):
        try:
            rows.append(run_pep(rid, budget=pep_sizes(rid, profile)))
        except Exception as exc:  # noqa: BLE001 - one record's PEP failing is named, the table goes on
            print(f"zoo_tightness: {rid}: no PEP ({type(exc).__name__}: {exc})", file=sys.stderr)
    return {**payload, "worst_case": rows}


if __name__ == "__main__":
    sys.exit(main())
