"""`fedtheory list` (the records, checks, measures, plug-ins or assumption catalogue) and `fedtheory explain ID`
(one record, how its checks measure it, and with --run the simulations behind its verdicts)."""
from __future__ import annotations

import json
import shlex
import shutil

from .._validation import ParameterError
from .listing import cached_listing
from .tables import print_table

__all__ = ["cmd_explain", "cmd_list"]


def cmd_list(args) -> int:
    targets = list(getattr(args, "plugin", None) or [])
    if args.plugins:
        rows = cached_listing("plugins", targets, lambda: [i.as_dict() for i in _load(targets)])
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            print_table(["plug-in", "origin", "module", "records", "checks"],
                        [[r["name"], r["origin"], r["module"], r["records"], r["checks"]] for r in rows])
        return 0
    if args.checks:
        every = cached_listing("checks", targets, lambda: _check_rows(targets))
        _validate_paper(args.paper, {r["paper"] for r in every})
        rows = [r for r in every if args.paper in (None, r["paper"])]
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            print_table(["check", "paper", "kind", "records"],
                        [[r["id"], r["paper"], r["kind"], ", ".join(r["records"])] for r in rows])
        return 0
    if not (args.assumptions or args.measures):
        every = cached_listing("records", targets, lambda: _record_rows(targets))
        _validate_paper(args.paper, {r["paper"] for r in every})
        kinds = sorted({r["kind"] for r in every})
        if args.kind is not None and args.kind not in kinds:
            raise ParameterError("--kind", args.kind, "one of " + ", ".join(kinds))
        rows = [r for r in every if args.paper in (None, r["paper"]) and args.kind in (None, r["kind"])]
        rows.sort(key=lambda r: (r["paper"], r["id"]))
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            print_table(["record", "kind", "title", "source"],
                        [[r["id"], r["kind"], r["title"], r["source"]] for r in rows])
        return 0
    _load(targets)
    if args.assumptions:
        from ..checks.catalogue import assumption_rows

        rows = assumption_rows()
        if args.format == "json":
            print(json.dumps(rows, indent=2))
            return 0
        print_table(["assumption", "about", "constants", "statement, and what certifies it"],
                    [[r["name"], r["subject"], ", ".join(f"{c['name']} [{c['dimension']}] ({c['direction']})"
                                                        for c in r["constants"]) or "-", _certifiers_text(r)]
                     for r in rows], wrap_last=True)
        import textwrap

        print("\n" + textwrap.fill(
            "constants: [f] a loss, [w] a parameter; (upper): any larger value is admitted once the tightest is "
            "certified, (lower): any smaller, (exact): only that value. What certifies an entry: the shipped "
            "representatives of its subject, asked without a run (fedtheory.checks.catalogue; every answer and its "
            "reason: --format json, docs/assumptions.md)", shutil.get_terminal_size((160, 24)).columns))
        return 0
    if args.measures:
        from ..sim.measures import measure_catalogue

        rows = [{"name": k, **v} for k, v in measure_catalogue().items()]
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            print_table(["measure", "indexing", "source", "dimension", "definition"],
                        [[r["name"], r["indexing"], r["source"], r["dimension"] or "?", r["definition"]] for r in rows],
                        wrap_last=True)
    return 0


def _load(targets: list[str]):
    from ..plugins import load_plugins

    return load_plugins(targets)


def _record_rows(targets: list[str]) -> list[dict]:
    from ..plugins import records

    _load(targets)
    return [r.summary() for r in records().values()]


def _check_rows(targets: list[str]) -> list[dict]:
    from ..checks import all_checks

    _load(targets)
    return [{"id": s.id, "paper": s.paper, "kind": s.kind, "records": list(s.records), "profiles": list(s.profiles),
             "measures": list(s.measures), "description": s.description} for s in all_checks().values()]


def _certifiers_text(row: dict) -> str:
    """An entry's statement, then who certifies it: globally, only on a run's visited region (by the measure the run
    must record), and who cannot tell."""
    text = row["statement"] + ". Certified by: " + (", ".join(row["certified_by"]) or "none of the shipped "
                                                                                      "representatives")
    by_measure: dict[str, list[str]] = {}
    for v in row["visited_only"]:
        by_measure.setdefault(v["measure"], []).append(v["by"])
    for measure, labels in by_measure.items():
        text += f"; on the visited region of a run that records {measure!r}: {', '.join(labels)}"
    if row["unknown_by"]:
        text += "; cannot tell: " + ", ".join(row["unknown_by"])
    return text


def _validate_paper(paper, papers) -> None:
    if paper is not None and paper not in papers:
        raise ParameterError("--paper", paper, "one of " + ", ".join(sorted(papers)))


def cmd_explain(args) -> int:
    from ..checks.registry import checks_of
    from ..plugins import plugin_of, record

    rec = record(args.id)
    print(rec.explain())
    _explain_units(rec)
    for line in rec.quantities_lines() if hasattr(rec, "quantities_lines") else []:
        print(line)
    plug = plugin_of(rec.id)
    if plug is not None:
        print(f"plug-in: {plug.name} ({plug.origin}: {plug.target})")
    specs = checks_of(rec.id)
    if specs:
        print("\nhow it is checked (`" + shlex.join(["fedtheory", "check", "--only", *(s.id for s in specs)]) + "`):")
        for s in specs:
            print(s.describe())
    else:
        print("\nno check tests this record (it is used by other records, or checked only through them)")
    if specs and not args.run:
        print("\n(`" + shlex.join(["fedtheory", "explain", rec.id, "--run"]) + "` runs these checks and lists the "
              "simulations behind each verdict; every result's JSON record holds them under extra.simulations)")
    if specs and args.run:
        from ..checks import run_checks
        from ..checks.certification import certificate_text
        from ..checks.output import simulation_text

        results = run_checks(only=[s.id for s in specs], profile="quick", seed=0)
        names = rec.paper_names() if hasattr(rec, "paper_names") else {}
        print("\nsimulations behind the verdicts (quick profile, seed 0; one line per setting"
              + (", in the paper's symbols: " + ", ".join(f"{v} = {k}" for k, v in names.items()) if names else "")
              + "):")
        seen = set()
        for r in results:
            for sim in r.extra.get("simulations", []):
                key = (r.id, json.dumps(sim, sort_keys=True, default=str))
                if key in seen:
                    continue
                seen.add(key)
                print(f"  {r.id}: {simulation_text(sim, names)}")
            if not r.extra.get("simulations") and (r.id, r.verdict) not in seen:
                seen.add((r.id, r.verdict))
                print(f"  {r.id}: no simulation ({r.kind}: {r.verdict})")
        def row_of(r):  # which row a certificate belongs to: its problem and setting
            setting = r.params.get("setting") if isinstance(r.params, dict) else None
            return r.id + "".join(f" [{x}]" for x in (r.problem, setting) if x)

        lines = list(dict.fromkeys(f"  {row_of(r)}: {certificate_text(c)}" for r in results
                                   for c in r.extra.get("certificates", [])))
        if lines:
            print("\nwhere the constants came from (each assumption as the runs certified it; a row whose run does "
                  "not certify one is not applicable):")
            print("\n".join(lines))
    return 0


def _explain_units(rec) -> None:
    """The record's units verdict (fedtheory.checks.dimensions) and its symbols' dimensions."""
    from ..checks.dimensions import units_result, units_symbols

    u = units_result(rec)
    mark = f" [{u.scope}]" if u.scope != "inside" else ""
    print(f"units: {u.verdict}{mark}: {u.detail.removeprefix('units: ')}")
    dims = units_symbols(rec)
    if dims:
        print("dimensions: " + ", ".join(f"{n} {d}" for n, d in dims.items()))
