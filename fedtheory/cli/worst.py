"""`fedtheory worst`: the worst case within a bound's assumptions, by adversarial instance search or by performance
estimation (--method pep); --list, --replay."""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys

from .._validation import ParameterError
from .execution import executor, report_execution

__all__ = ["cmd_worst"]


def cmd_worst(args) -> int:
    from .. import worst as W
    from ..worst.pep.record import pep_entries
    from ..worst.spec import entry, parse_sets, worst_case_entries

    if args.list:
        peps = pep_entries()
        for rid, e in sorted(worst_case_entries().items()):
            print(f"{rid}  {e.description}" + ("  [--method pep]" if rid in peps else ""))
        return 0
    if args.method == "pep":
        if not W.pep_available():
            raise ParameterError("--method", "pep", "search, unless the optional extra is installed: "
                                 "pip install 'fedtheory[pep]' (PEPit + cvxpy)")
        for flag, val in (("--workers", getattr(args, "workers", None)),
                          ("--scheduler", getattr(args, "scheduler", None)), ("--chunk", args.chunk)):
            if val is not None:
                raise ParameterError(flag, val, "absent with --method pep (one SDP, solved in this process)")
        return _cmd_worst_pep(args, W)
    pep_only = [f for f, v in (("--server-rule", args.server_rule), ("--pep-class", args.pep_class)) if v is not None]
    if pep_only:
        raise ParameterError(pep_only[0], getattr(args, pep_only[0][2:].replace("-", "_")),
                             "given with --method pep only")
    if args.replay:
        if args.ids:
            raise ParameterError("ID", args.ids, "absent with --replay (the file names its record)")
        rec = W.replay(args.replay)
        print(_strict_json(rec))
        return 0 if rec["replay"]["reproduced"] else 1
    if not args.ids:
        raise ParameterError("ID", None, "one or more record ids (fedtheory worst --list)")
    for name, val, low in (("--budget", args.budget, 1), ("--popsize", args.popsize, 5), ("--seed", args.seed, 0),
                           ("--final-seeds", args.final_seeds, 1)):
        if val < low:
            raise ParameterError(name, val, f"an integer >= {low}")
    if args.budget < args.popsize:
        raise ParameterError("--budget", args.budget, f"at least --popsize ({args.popsize}) instance evaluations")
    if args.seconds is not None and not args.seconds > 0:
        raise ParameterError("--seconds", args.seconds, "a positive number")
    if args.chunk is not None and args.chunk < 1:
        raise ParameterError("--chunk", args.chunk, "an integer >= 1 (instances per unit of work)")
    sets = parse_sets(args.set)
    for rid in args.ids:
        entry(rid)  # unknown ids are bad input before any search runs
    progress = not args.no_progress and sys.stderr.isatty()
    code = 0
    ex = executor(args)
    with ex if ex is not None else contextlib.nullcontext():
        for rid in args.ids:
            path = os.path.join(args.out_dir, f"{rid}.json")
            kw = {k: v for k, v in (("problem", args.problem), ("setting", args.setting), ("beta", args.beta))
                  if v is not None}
            since = len(getattr(ex, "outcomes", []))
            rec = W.run_worst(rid, sets=sets, seed=args.seed, use_reference=not args.no_reference, reference_kw=kw,
                              budget=args.budget, seconds=args.seconds, popsize=args.popsize, progress=progress,
                              final_seeds=args.final_seeds, instance_path=path, executor=ex, chunk=args.chunk)
            execution = report_execution(ex, since)
            if execution is not None:
                rec["execution"] = execution
            print(_strict_json(rec))
            if rec["verdict"] == "violated":
                replay = shlex.join(["fedtheory", "worst", "--replay", path])
                print(f"fedtheory: {rid} violated on the instance {path}; replay: {replay}",
                      file=sys.stderr)
                code = 1
    return code


def _strict_json(rec) -> str:
    """A record as strict JSON: a non-finite number is written "inf", "-inf" or "nan" (as in results files), never
    the Infinity/NaN that JSON readers other than Python's refuse."""
    from .._jsonutil import jsonable

    return json.dumps(jsonable(rec), indent=2, allow_nan=False)


def _cmd_worst_pep(args, W) -> int:
    from ..worst.pep.record import pep_entries
    from ..worst.spec import parse_sets

    if args.replay:
        raise ParameterError("--replay", args.replay, "used with --method search (a PEP has no instance file)")
    if not args.ids:
        raise ParameterError("ID", None, "one or more record ids with a PEP: " + ", ".join(sorted(pep_entries())))
    sets = parse_sets(args.set)
    for rid in args.ids:
        if rid not in pep_entries():
            raise ParameterError("ID", rid, "a record with a PEP declaration: " + ", ".join(sorted(pep_entries())))
    code = 0
    for rid in args.ids:
        kw = {"problem": args.problem} if args.problem else {}
        rec = W.run_pep(rid, sets=sets, seed=args.seed, use_reference=not args.no_reference, reference_kw=kw,
                        server_rule=args.server_rule, function_class=args.pep_class, solver=args.solver,
                        counterexample_dir=args.out_dir)
        print(_strict_json(rec))
        if rec["verdict"] == "violated":
            print(f"fedtheory: {rid} violated: the PEP's worst case exceeds the bound", file=sys.stderr)
            code = 1
    return code
