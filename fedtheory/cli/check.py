"""`fedtheory check`: run the selected checks and print their verdicts (with --worst-case, the worst-case searches
too); --mutants, the mutation score instead; --controls, the negative controls instead."""
from __future__ import annotations

import contextlib
import inspect
import json
import os
import shlex
import sys
import time

from .. import __version__
from .._validation import ParameterError
from .execution import executor, report_execution
from .outputs import check_outputs, refuse_outputs, same_file, where_written, write_outputs
from .tables import print_table

__all__ = ["MAX_SEED", "cmd_check"]


MAX_SEED = 2 ** 63 - 1  #: the largest --seed of `check` (the simulator's seeds are int64)


def _fmt_slack(x) -> str:
    return "-" if x is None else f"{float(x):.3g}"


def _worst_cases(args, results, ex=None) -> list[dict]:
    """`check --worst-case`: the worst-case search of every checked bound that declares one."""
    from .. import worst as W
    from ..worst.spec import worst_case_entries

    checked = {r.id for r in results}
    ids = [rid for rid in sorted(worst_case_entries()) if rid in checked]
    out = []
    for rid in ids:
        path = os.path.join(args.worst_dir, f"{rid}.json")
        out.append(W.run_worst(rid, seed=args.seed, budget=args.worst_budget, instance_path=path, final_seeds=32,
                               executor=ex))
    return out


def _cmd_mutants(args) -> int:
    """`check --mutants`: the mutation score of the selected records (fedtheory.checks.mutants)."""
    from ..checks.mutants import format_mutation_table, mutation_payload, run_mutants
    from ..worst.mutants import WorstCaseLayer
    from ..worst.search import worst_case

    if args.worst_case or args.report or args.controls or args.runs is not None:
        raise ParameterError("--mutants", True, "without --worst-case, --report, --controls and --runs")
    popsize = inspect.signature(worst_case).parameters["popsize"].default
    if args.worst_budget < popsize:  # the worst-case layer's search: refused before any check runs
        raise ParameterError("--worst-budget", args.worst_budget, f"an integer >= {popsize} (the search's population "
                             "size: one generation)")
    check_outputs(args, ("--out", args.out))  # before the run (minutes), not after it
    _mutable_only(args.paper, args.only, args.profile)
    t0 = time.perf_counter()
    show = (lambda rid: print(f"mutating {rid} ...", file=sys.stderr)) if sys.stderr.isatty() else None
    # the worst-case layer: each record with a worst-case declaration is searched once, its mutants decided there
    layers = [WorstCaseLayer(budget=args.worst_budget, seed=args.seed)]
    from ..worst import pep_available
    from ..worst.mutants import PEPLayer

    if pep_available():  # the PEP's worst case, where a record declares one: kills and classifies mutants
        layers.append(PEPLayer(seed=args.seed))
    scores = run_mutants(paper=args.paper, only=args.only, profile=args.profile, seed=args.seed, progress=show,
                         layers=layers)
    payload = mutation_payload(scores, command=["fedtheory", "check"] + sys.argv[2:], profile=args.profile,
                               seed=args.seed, elapsed_s=round(time.perf_counter() - t0, 2))
    failed = write_outputs(args, payload)  # --report is refused above
    args.earned_status = 2 if failed else 0
    if args.format == "json":
        print(json.dumps(payload, indent=2))
    else:
        print(format_mutation_table(scores, verbose=args.verbose))
        print(f"\n{payload['elapsed_s']:.1f} s"
              + (f"; JSON written to {where_written(args.out)}" if args.out and not failed else ""))
    if failed:
        return refuse_outputs(failed, payload, 0, None)
    return 0


def _mutable_only(paper: str | None, only, profile: str) -> None:
    """Before `check --mutants` runs: each --only pattern selects at least one record it can mutate (a bound, or a
    stated order with its explicit form) of the selected papers; else a ParameterError naming the pattern."""
    from ..checks.mutants import mutable_records
    from ..checks.registry import id_matches
    from ..checks.run import select
    from ..plugins import records

    select(paper, None, profile)  # loads the plug-ins; an unknown --paper is named first
    allowed = ("a record id, dotted prefix or glob matching at least one bound or stated order with its explicit form"
               + (f" of {paper}" if paper else "") + " (`fedtheory list --kind bound` lists them; --mutants mutates "
               "records, not checks)")
    ids = [rid for rid, r in records().items() if paper is None or r.paper == paper]
    for pat in only or []:
        if not any(id_matches(pat, rid) for rid in ids):  # a typo: refused
            raise ParameterError("--only", pat, allowed)
        if not mutable_records(paper, [pat]):  # a paper of stated orders only, among others: said, not refused
            print(f"fedtheory: --only {pat}: no bound or stated order with an explicit form to mutate",
                  file=sys.stderr)
    if only and not mutable_records(paper, only):
        raise ParameterError("--only", " ".join(only), allowed)


def _cmd_controls(args) -> int:
    """`check --controls`: every selected check's negative control must make it report a finding."""
    from ..checks.controls import run_controls

    if args.worst_case or args.report:
        raise ParameterError("--controls", True, "without --worst-case and --report")
    check_outputs(args, ("--out", args.out))
    unusable = _usable_runs(args.runs) if args.runs is not None else []
    t0 = time.perf_counter()
    outcomes, missing = run_controls(paper=args.paper, only=args.only, profile=args.profile, seed=args.seed,
                                     runs_dir=args.runs)
    bad = [o for o in outcomes if o.status != "fails_as_required"]
    payload = {"fedtheory": __version__, "command": ["fedtheory", "check"] + sys.argv[2:], "profile": args.profile,
               "seed": args.seed, "controls": [o.to_json() for o in outcomes],
               "self_checks_by_design": {s.id: s.self_check for s in missing if s.self_check},
               "without_control": [s.id for s in missing if not s.self_check],
               "exit_code": 3 if bad else 0, "elapsed_s": round(time.perf_counter() - t0, 2)}
    failed = write_outputs(args, payload)  # --report is refused above
    args.earned_status = 2 if failed or unusable else 3 if bad else 0
    if args.format == "json":
        print(json.dumps(payload, indent=2))
    else:
        print_table(["check", "outcome", "verdicts under the control", "the control (what it mutates), and the counted "
                     "row it made"],
                    [[o.check, o.status.replace("_", " "), ", ".join(sorted(set(r.verdict for r in o.rows))),
                      f"{o.description}. Counted row: {o.counted_text}"] for o in outcomes], wrap_last=True)
        if args.verbose:  # the rows that show each control's failure (or why it did not fail), with their notes
            from ..checks import FINDINGS, format_table

            for o in outcomes:
                shown = [r for r in o.rows if r.verdict in FINDINGS or r.verdict == "error"] or o.rows
                print(f"\n{o.check} under its control ({o.status}):")
                print(format_table(shown[:5], verbose=True))
                if len(shown) > 5:
                    print(f"  ... {len(shown) - 5} more (the JSON has every row)")
        print(f"\n{len(outcomes) - len(bad)} of {len(outcomes)} control(s) fail as required in "
              f"{time.perf_counter() - t0:.1f} s"
              + (": " + ", ".join(o.check + " " + o.status for o in bad) if bad else ""))
        design = [s for s in missing if s.self_check]
        bare = [s for s in missing if not s.self_check]
        if design:
            print(f"{len(design)} implementation self-check(s) by design (no mutation of the statement could make them "
                  "fail): " + "; ".join(f"{s.id} ({s.self_check})" for s in design))
        if bare:
            print(f"{len(bare)} check(s) without a negative control (their rows are implementation self-checks by "
                  "rule): " + ", ".join(s.id for s in bare))
        if args.out and not failed:
            print(f"JSON written to {where_written(args.out)}")
    if failed:
        return refuse_outputs(failed, payload, 3 if bad else 0, None)
    if unusable:
        return _refuse_unusable(unusable)
    return 3 if bad else 0


def cmd_check(args) -> int:
    from ..checks import run_checks
    from ..checks.output import format_timings, print_results, results_payload
    from ..checks.results import exit_code

    if not 0 <= args.seed <= MAX_SEED:  # the runs' seeds are 64-bit signed integers (was: 'seeds=[...]' mid-run)
        raise ParameterError("--seed", args.seed, f"an integer from 0 to {MAX_SEED} (2^63 - 1)")
    if args.mutants:  # first: it refuses --controls (which would otherwise run instead)
        return _cmd_mutants(args)
    if args.controls:
        return _cmd_controls(args)
    if args.worst_case:
        from ..worst.search import worst_case

        popsize = inspect.signature(worst_case).parameters["popsize"].default
        if args.worst_budget < popsize:  # refused before any check runs, in the flag's name
            raise ParameterError("--worst-budget", args.worst_budget, f"an integer >= {popsize} (the search's "
                                 "population size: one generation)")
    if args.worst_dir != "worst_instances" and not args.worst_case:
        raise ParameterError("--worst-dir", args.worst_dir, "given with --worst-case (it says where its instances go)")
    if args.worst_case and os.path.exists(args.worst_dir) and not os.path.isdir(args.worst_dir):
        raise ParameterError("--worst-dir", args.worst_dir, "a folder (new or existing), not a file")
    if args.out and args.report and same_file(args.out, args.report):
        raise ParameterError("--report", args.report, f"another file than --out ({args.out}): one would replace the "
                             "other")
    if args.one_process and (args.workers is not None or args.scheduler is not None):
        raise ParameterError("--one-process", True, "without --workers / --scheduler (they run the checks elsewhere)")
    check_outputs(args, ("--out", args.out), ("--report", args.report))  # before any check runs, in the flag's name
    unusable = _usable_runs(args.runs) if args.runs is not None else []
    t0 = time.perf_counter()
    load_s = getattr(args, "load_s", None)  # seconds main() spent loading the plug-ins, before any check
    progress = not args.no_progress and args.format == "table" and sys.stderr.isatty()
    ex = executor(args)
    timings: list = []
    with ex if ex is not None else contextlib.nullcontext():
        results = run_checks(paper=args.paper, only=args.only, profile=args.profile, seed=args.seed, progress=progress,
                             runs_dir=args.runs, executor=ex, timings=timings, parallel_symbolic=not args.one_process)
        worst = _worst_cases(args, results, ex) if args.worst_case else []
        execution = report_execution(ex)
    elapsed = time.perf_counter() - t0
    code = exit_code(results)
    if any(w.get("verdict") == "violated" for w in worst):
        code = max(code, 1)
    from ..plugins import portable_target

    portable = [portable_target(t) for t in args.plugin]  # the reproduce lines work from any folder
    payload = results_payload(results, command=["fedtheory", "check"] + sys.argv[2:], profile=args.profile,
                              seed=args.seed, plugins=[t for t, _ in portable],
                              plugins_given=[{"given": g, "plugin": t, "as": how} for g, (t, how) in
                                             zip(args.plugin, portable)], elapsed_s=round(elapsed, 2))
    payload["load_s"] = round(load_s, 3) if load_s is not None else None
    payload["timings"] = [t.to_json() for t in timings]
    if args.worst_case:
        payload["worst_case"] = worst
        payload["exit_code"] = code
    if execution is not None:
        payload["execution"] = execution
    if args.runs is not None:  # the training runs' curves over the rounds: the report draws them from this file
        from ..empirical.runs import find_runs, round_curves

        payload["runs"] = round_curves(find_runs(args.runs, errors=[]))
    failed = write_outputs(args, payload)
    args.earned_status = 2 if failed or unusable else code  # kept if the reader of stdout leaves early
    if args.format == "json":
        print(json.dumps(payload, indent=2))
    else:
        print_results(results, elapsed, verbose=args.verbose)
        if args.timings:
            print("\nseconds per check:\n" + format_timings(timings, elapsed, load_s))
        if args.worst_case:
            print("\nworst case within the assumptions (a search: a lower bound on the true worst case):")
            for w in worst:
                print(f"  {w['id']}: {w['verdict']}, slack {_fmt_slack(w.get('slack'))} (ratio on the check's instance "
                      f"{_fmt_slack(w.get('random_ratio'))}), {w.get('evaluations')} instances; replay: "
                      + shlex.join(["fedtheory", "worst", "--replay", str(w.get("instance"))]))
            if not worst:
                print("  none of the selected bounds has a worst-case declaration (`fedtheory worst --list`)")
        if not results:
            print("no results: " + ("the empirical checks found no completed runs in " + args.runs if args.runs else
                                    "the selected checks produced none (the empirical ones need --runs DIR)"))
        if args.out and "--out" not in failed:
            print(f"JSON records written to {where_written(args.out)}")
        if args.report and "--report" not in failed:
            print(f"HTML report written to {where_written(args.report)}")
    if failed:
        return refuse_outputs(failed, payload, code, args.out if "--out" not in failed else None)
    if unusable:
        return _refuse_unusable(unusable)
    return code


def _usable_runs(runs: str) -> list[str]:
    """--runs DIR as every path reads it (``check``, ``check --controls``): a ParameterError when DIR is not a
    directory or holds no usable run (``fedtheory.empirical.runs.find_runs``: regular files within limits, every
    metric in its declared range); else the descriptions of the unusable run directories beside the usable ones."""
    if not os.path.isdir(runs):
        raise ParameterError("--runs", runs, "an existing directory of logged runs (see `fedtheory train`)")
    from ..empirical.runs import find_runs

    unusable: list[str] = []
    if not find_runs(runs, errors=unusable):
        raise ParameterError("--runs", runs, "a directory holding fedtheory runs (manifest.json + metrics.csv from "
                             "`fedtheory train`); "
                             + ("unusable: " + "; ".join(unusable) if unusable else "none found"))
    return unusable


def _refuse_unusable(unusable: list[str]) -> int:
    """The usable runs were used; the unusable ones are bad input: exit status 2, naming them."""
    print("fedtheory: error: unusable run directories under --runs (the others were used):\n  "
          + "\n  ".join(unusable), file=sys.stderr)
    return 2
