"""``fedtheory`` command line: list | explain | check | report | train | new-paper.

Exit codes: 0 every check ran and nothing was violated, refuted or inconsistent; 1 findings about the papers;
2 bad usage or input; 3 a check (or the tool itself) failed with an error: never counted as a finding.
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import shlex
import shutil
import sys
import time
import warnings
from typing import Sequence

from . import __version__
from ._signals import Terminated, ending_signals, exit_status, received
from ._validation import FedTheoryError, ParameterError, one_line


class _Parser(argparse.ArgumentParser):
    """argparse's parser with errors as fedtheory writes them: one line (no usage block), a long value shortened."""

    def error(self, message: str):
        import re

        message = re.sub(r"'([^']{60,})'", lambda m: f"'{m.group(1)[:24]}...' ({len(m.group(1))} characters)",
                         message)
        self.exit(2, f"{self.prog}: error: {one_line(message)} (`{self.prog} --help` lists the options)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fedtheory", description="Check federated-learning theorems against measurement.")
    p.add_argument("--version", action="version", version=f"fedtheory {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{list,explain,check,report,worst,train,new-paper}")
    plug = argparse.ArgumentParser(add_help=False)
    plug.add_argument("--plugin", action="append", default=[], metavar="PATH_OR_MODULE",
                      help="load a paper plug-in (a .py file, a package directory or a module name; repeatable). "
                           "Installed plug-ins (entry-point group fedtheory.papers) and $FEDTHEORY_PLUGINS load anyway")

    execp = _exec_parser()

    ls = sub.add_parser("list", parents=[plug], help="list the encoded records, the checks, the measures or the plug-ins")
    ls.add_argument("--paper", help="only this paper (e.g. fedinit)")
    ls.add_argument("--kind", help="only records of this kind (bound, identity, order, claim, definition)")
    what = ls.add_mutually_exclusive_group()
    what.add_argument("--checks", action="store_true", help="list the checks instead of the records")
    what.add_argument("--measures", action="store_true", help="list the simulator's measures with their definitions")
    what.add_argument("--plugins", action="store_true", help="list the loaded paper plug-ins and where they came from")
    what.add_argument("--assumptions", action="store_true", help="list the assumption catalogue: each entry's "
                      "constants (dimension, which values it admits) and what certifies it among the shipped problem "
                      "families, oracles, topologies, client samplings and algorithms (--format json: every answer "
                      "with its constants and how)")
    ls.add_argument("--format", choices=("table", "json"), default="table")

    ex = sub.add_parser("explain", parents=[plug], help="show one record: statement, source, assumptions, conditions, "
                        "order, notes, and how its checks measure it")
    ex.add_argument("id", metavar="ID", help="a record id from `fedtheory list`, e.g. fedinit.thm1")
    ex.add_argument("--run", action="store_true", help="also run its checks (quick profile) and list the simulations "
                    "each one ran: problem, algorithm, runs, rounds, local steps, clients, oracle, measures")

    ck = sub.add_parser("check", parents=[plug, execp], help="run checks and print verdicts")
    ck.add_argument("--paper", help="only this paper's checks")
    ck.add_argument("--only", nargs="+", metavar="ID", help="only these checks; each ID is an exact check id, a dotted "
                    "prefix matched by whole parts (mypaper.thm2 selects mypaper.thm2, mypaper.thm2.rate and the row "
                    "mypaper.thm2.units of mypaper.units, not mypaper.thm2_2), or a glob pattern with * ? [...] matched "
                    "against whole ids ('mypaper.thm2*' selects all four; quote it)")
    ck.add_argument("--profile", choices=("quick", "full"), default="quick",
                    help="quick: small settings (about 20 s for all papers on two cores); full: more seeds, rounds, "
                         "problems")
    ck.add_argument("--seed", type=int, default=0, help="base seed (non-negative integer); same seed, same numbers")
    ck.add_argument("--format", choices=("table", "json"), default="table")
    ck.add_argument("--out", metavar="FILE", help="also write the JSON records to FILE (atomically; an existing file "
                    "only if fedtheory wrote it, or with --force)")
    ck.add_argument("--force", action="store_true", help="--out / --report may replace an existing file fedtheory did "
                    "not write (never an input of the run: a plug-in's source, a logged run)")
    ck.add_argument("--runs", metavar="DIR", help="evaluate the empirical checks on the runs logged under DIR "
                    "(`fedtheory train`); without --only, only those checks run")
    ck.add_argument("--no-progress", action="store_true", help="no progress bar")
    ck.add_argument("-v", "--verbose", action="store_true", help="print every row's note (also for rows that hold)")
    ck.add_argument("--one-process", action="store_true", help="run every check in this process (by default, on a "
                    "machine with more than one core, a second process takes the symbolic checks and a share of the "
                    "others: the same results)")
    ck.add_argument("--timings", action="store_true", help="also print each check's seconds, slowest first (the JSON "
                    "always holds them under 'timings', with the seconds spent loading the plug-ins under 'load_s')")
    ck.add_argument("--worst-case", action="store_true", help="also search the worst instance of every selected bound "
                    "with a worst-case declaration (`fedtheory worst --list`); a violated worst case is a finding")
    ck.add_argument("--worst-budget", type=int, default=256, metavar="N",
                    help="instance evaluations per worst-case search, at least 32 (one generation; default 256; "
                         "`fedtheory worst` for more); also the search of --mutants' worst-case layer")
    ck.add_argument("--worst-dir", default="worst_instances", metavar="DIR",
                    help="--worst-case: where the worst instances are written, one RECORD_ID.json each (default "
                         "worst_instances/ in the current folder; created if missing)")
    ck.add_argument("--report", metavar="FILE", help="also write the self-contained HTML report to FILE "
                    "(see `fedtheory report`)")
    ck.add_argument("--mutants", action="store_true", help="the mutation score instead of the checks: every bound and "
                    "stated order of the selected papers (--paper, --only: record ids) mutated (a constant halved, a "
                    "term dropped, an exponent moved, a symbol swapped, a faster order) and run through its own units, "
                    "rate and simulation checks and, where declared, its worst-case search; prints killed / survived "
                    "per record with each survivor's reason "
                    "(exit 0; --out writes the JSON)")
    ck.add_argument("--controls", action="store_true", help="run the negative controls of the selected checks instead "
                    "of the checks: each must make its check report a finding (exit 0 when all do, 3 when one does "
                    "not); also lists the checks without a control (implementation self-checks by rule); with "
                    "--runs DIR, the controls of the checks of logged runs, on those logs")

    rp = sub.add_parser("report", help="draw one self-contained HTML page (figures, verdict table) from a results file "
                        "and/or training run directories",
                        description="Draw one static, self-contained HTML page from a results file of `fedtheory check "
                                    "--out` and/or the run directories of `fedtheory train` (--runs DIR): the training "
                                    "runs' Delta^t, generalization gap and test accuracy over the rounds (also from a "
                                    "results file of `check --runs DIR`, which holds them), "
                                    "per-paper summaries, a sortable verdict table, measured vs bound figures, "
                                    "tightness, failing conditions, claims and rates, each with its reproducing command; "
                                    "for a collection of papers (the zoo of trusted theorems) a table of the tightest "
                                    "measured / bound per bound record (simulation, --worst-case search, PEP); with "
                                    "--mutants M.json, the mutation score of `fedtheory check --mutants --out M.json`.")
    rp.add_argument("results", metavar="RESULTS.json", nargs="?", help="a results file written by `fedtheory check "
                    "--out` (optional with --runs)")
    rp.add_argument("--runs", metavar="DIR", help="also draw the run directories of `fedtheory train` at or below DIR: "
                    "Delta^t, the generalization gap and the test accuracy over the rounds, a line per setting (in "
                    "place of the curves a results file of `check --runs` holds)")
    rp.add_argument("--out", metavar="FILE", default="report.html", help="the HTML file to write (default report.html; "
                    "an existing file only if fedtheory wrote it, or with --force)")
    rp.add_argument("--force", action="store_true", help="--out may replace an existing file fedtheory did not write")
    rp.add_argument("--mutants", metavar="M.json", help="also draw a mutation file written by `fedtheory check --mutants "
                    "--out M.json` as a section of the same page: the overall mutation score, killed by layer, a table "
                    "per record and every survivor with its reason (a malformed file: exit 2, naming it)")

    npp = sub.add_parser("new-paper", help="write a skeleton paper plug-in (records, checks, a test) to start from",
                         description="Write a skeleton plug-in package NAME/ (records, checks, a pytest file and a "
                                     "pyproject.toml declaring the fedtheory.papers entry point). Then: "
                                     "`fedtheory check --plugin NAME/src/NAME` or `pip install -e NAME`.")
    npp.add_argument("name", metavar="NAME", help="the paper's short name: a Python identifier, e.g. scaffold2020")
    npp.add_argument("--dir", default=".", help="where to create NAME/ (default: the current folder)")
    npp.add_argument("--from-latex", metavar="FILE", help="draft records.py from a theorem's LaTeX: a .tex file, a "
                     "paper's Markdown with $$...$$, or - for a display pasted on standard input. Each displayed "
                     "inequality becomes a bound (right side parsed by sympy; left side matched to a measure where "
                     "standard), inline relations of the theorem its conditions, \\mathcal{O}(...) its stated "
                     "order; prints the symbol table (dimensions to confirm), the units rows and every snippet "
                     "that did not parse. Needs the extra fedtheory[latex]")
    _train_parser(sub, execp)
    _worst_parser(sub, plug, execp)
    return p


def _exec_parser() -> argparse.ArgumentParser:
    """--workers N | --scheduler ADDRESS (Dask, the fedtheory[dask] extra) and the worker processes' threads."""
    ex = argparse.ArgumentParser(add_help=False)
    g = ex.add_argument_group("execution on Dask (optional extra: pip install 'fedtheory[dask]'; docs/parallel.md)")
    m = g.add_mutually_exclusive_group()
    m.add_argument("--workers", type=int, metavar="N", help="run the units of work on a Dask LocalCluster of N worker "
                   "processes on this machine (same results as without it)")
    m.add_argument("--scheduler", metavar="ADDRESS", help="run them on the running Dask cluster at ADDRESS "
                   "(e.g. tcp://host:8786: dask-jobqueue on SLURM/PBS, Kubernetes, `dask scheduler`)")
    g.add_argument("--worker-threads", type=int, default=1, metavar="T", help="--workers: BLAS/OpenMP/torch threads "
                   "per worker process (default 1: N workers fill N cores without oversubscription)")
    return ex


def _executor(args):
    """The executor the flags ask for, or None for today's serial path."""
    if getattr(args, "workers", None) is None and getattr(args, "scheduler", None) is None:
        return None
    from .parallel import make_executor

    if args.worker_threads < 1:
        raise ParameterError("--worker-threads", args.worker_threads, "an integer >= 1")
    return make_executor(args.workers, args.scheduler, threads=args.worker_threads)


def _report_execution(ex, since: int = 0) -> dict | None:
    """Print the executor's summary of tasks, retries and failures to stderr; return it for the JSON."""
    if ex is None or not getattr(ex, "outcomes", None):
        return None
    out = ex.combined(since)
    print("fedtheory: " + out.summary(), file=sys.stderr)
    return out.to_json()


def _worst_parser(sub, plug, execp) -> None:
    """`fedtheory worst`: the worst case within a bound's assumptions (adversarial instance search)."""
    w = sub.add_parser("worst", parents=[plug, execp], help="search the bound's assumption class for its worst instance",
                       description="Search the problems that satisfy a bound's assumptions, at the constants of today's "
                                   "check, for the one with the largest left side; print one JSON record per bound "
                                   "(slack = bound / worst measured) and write the instance for --replay.")
    w.add_argument("ids", nargs="*", metavar="ID", help="bound records with a worst-case declaration (see --list)")
    w.add_argument("--list", action="store_true", help="list the records the search covers")
    w.add_argument("--replay", metavar="FILE", help="re-run a stored worst instance to its number")
    w.add_argument("--method", choices=("search", "pep"), default="search",
                   help="search: adversarial instances (a lower bound on the worst case); pep: the worst case by "
                        "performance estimation, an SDP over the class (extra fedtheory[pep]; small C, K, T)")
    w.add_argument("--budget", type=int, default=2000, help="instance evaluations (default 2000)")
    w.add_argument("--seconds", type=float, help="also stop after this many seconds")
    w.add_argument("--popsize", type=int, default=32, help="population per generation (default 32)")
    w.add_argument("--seed", type=int, default=0, help="seed of the search and of the reference check")
    w.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a constant of the "
                   "setting (e.g. --set T=100 --set sigma_l=0)")
    w.add_argument("--problem", help="the reference check row's problem (default: the spec's)")
    w.add_argument("--setting", help="the reference check row's setting, a part of its text (e.g. 'admissible', "
                   "'partial participation 5 of 10'; default: the spec's)")
    w.add_argument("--beta", type=float, help="the reference check row's beta (default: the spec's)")
    w.add_argument("--no-reference", action="store_true", help="do not run today's check: every constant from --set")
    w.add_argument("--final-seeds", type=int, default=32, help="stochastic runs: seeds for the worst instance's "
                   "verdict (default 32)")
    w.add_argument("--out-dir", default="worst_instances", help="where the instance files go (default worst_instances/)")
    w.add_argument("--chunk", type=int, metavar="K", help="instances per unit of work (default: 16 with --workers or "
                   "--scheduler, else the whole population in one batch); the same K gives the same bits serially "
                   "and on any number of workers")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = w.add_argument_group("--method pep")
    g.add_argument("--server-rule", choices=("algorithm1", "code"), help="FedInit's server rule (default algorithm1; "
                   "code: w^t - eta_g mean_i (w_{i,0} - w_{i,K}), eta_g from --set server_lr=..)")
    g.add_argument("--pep-class", choices=("convex", "smooth"), help="the clients' function class (default: the "
                   "record's: convex for fedinit.thm2, smooth (non-convex) for fedinit.thm1)")
    g.add_argument("--solver", choices=("CLARABEL", "SCS"), default="CLARABEL", help="the SDP solver (default CLARABEL)")


def _train_parser(sub, execp) -> None:
    """`fedtheory train`: every setting defaults to None here so that --resume can tell what was given."""
    S = argparse.SUPPRESS
    tr = sub.add_parser("train", parents=[execp], help="train networks with the sim layer's algorithms and log Delta^t, gaps, ...",
                        description="Train a batch of runs (a seed sweep and/or a hyperparameter grid) and log per-round "
                                    "measures to a run directory; `fedtheory check --runs DIR` evaluates them. With "
                                    "--workers or --scheduler, each run (grid point x seed) is its own task and its "
                                    "own run directory DIR/cell-NNN (DIR/sweep.json lists them). Settings "
                                    "not given take TrainConfig's defaults (seed 000 App. B.1 where it gives one).")
    tr.add_argument("--out", metavar="DIR", help="run directory (new, or an existing one with --resume)")
    tr.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint "
                    "(its manifest supplies every setting not given here)")
    tr.add_argument("--config", metavar="FILE", help="a JSON file of TrainConfig fields (flags given here override it)")
    tr.add_argument("--list-algorithms", action="store_true", help="list the algorithms and their hyperparameters")
    g = tr.add_argument_group("data")
    g.add_argument("--dataset", default=S, help="cifar10 | cifar100 | digits (bundled with scikit-learn) | synthetic "
                   "(a Gaussian cloud around a mean image per class; docs/datasets.md describes each)")
    g.add_argument("--data-dir", default=S, help="folder holding cifar-10-batches-py/ or cifar-100-python/ "
                   "(default: $FEDTHEORY_DATA_DIR)")
    g.add_argument("--dataset-option", action="append", default=S, metavar="NAME=VALUE",
                   help="e.g. n_train=5000 for synthetic, test_fraction=0.2 for digits")
    g.add_argument("--partition", default=S, help="iid | dirichlet | dirichlet-replace | pathological | label-parity")
    g.add_argument("--alpha", type=float, default=S, help="Dirichlet concentration (default 0.5)")
    g.add_argument("--classes-per-client", type=int, default=S,
                   help="n of pathological-n; labels per client of label-parity (default 2)")
    g.add_argument("--samples-per-client", type=int, default=S, help="Dirichlet: samples per client (default n // clients)")
    g.add_argument("--partition-seed", type=int, default=S, help="seed of the partition (default 0)")
    g.add_argument("--augment", action=argparse.BooleanOptionalAction, default=S,
                   help="random crop + flip (default: on for CIFAR, off otherwise)")
    g.add_argument("--crop-padding", type=int, default=S, help="zero padding of the random crop (default 4)")
    g = tr.add_argument_group("model and algorithm")
    g.add_argument("--model", default=S, help="resnet18gn | vgg11 | cnn2 | linear (default cnn2)")
    g.add_argument("--model-option", action="append", default=S, metavar="NAME=VALUE", help="e.g. width=32, groups=2")
    g.add_argument("--algorithm", default=S, help="a name from --list-algorithms, optionally with +RI (default FedAvg)")
    g.add_argument("--hp", action="append", default=S, metavar="NAME=V[,V...]",
                   help="algorithm hyperparameter; several values sweep it (e.g. --hp beta=0,0.05,0.1; "
                        "--hp topology=ring for gossip; --hp bits=4 --hp shift=1,0 for FedShift)")
    g.add_argument("--seeds", type=int, nargs="+", default=S, help="one run per seed (and per grid point)")
    g = tr.add_argument_group("federated setting")
    g.add_argument("--clients", dest="n_clients", type=int, default=S, help="number of clients C (default 10)")
    g.add_argument("--clients-per-round", type=int, default=S, help="N (default: all)")
    g.add_argument("--rounds", type=int, default=S, help="communication rounds T (default 10)")
    g.add_argument("--local-epochs", type=float, default=S, help="local epochs per round (default 5)")
    g.add_argument("--local-steps", type=int, default=S, help="local steps K per round (overrides --local-epochs)")
    g.add_argument("--batch-size", type=int, default=S, help="minibatch size (default 50)")
    g.add_argument("--lr", type=float, default=S, help="local learning rate (default 0.1)")
    g.add_argument("--lr-decay", type=float, default=S, help="per-round multiplicative decay (default 0.998)")
    g.add_argument("--weight-decay", type=float, default=S, help="L2 coefficient (default 1e-3)")
    g.add_argument("--max-grad-norm", type=float, default=S, help="clip each client's gradient norm (default: off)")
    g = tr.add_argument_group("execution")
    g.add_argument("--path", default=S, help="auto (default: the faster path for the device and model; the manifest "
                   "records the choice) | batched (vmap over clients) | sequential (per-client reference)")
    g.add_argument("--client-chunk", type=int, default=S, help="batched path: at most this many client models at once")
    g.add_argument("--device", default=S, help="auto | cpu | cuda | cuda:N (default auto)")
    g.add_argument("--threads", type=int, default=S, help="CPU threads while training (default: torch's; on a "
                   "machine shared with other jobs, 1 avoids idle waits between the threads)")
    g.add_argument("--dtype", default=S, help="float32 | float64 (default float32)")
    g.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=S,
                   help="deterministic cuDNN kernels (default on: a resumed run repeats the same bits)")
    g.add_argument("--eval-every", type=int, default=S, help="evaluate train/test loss every E rounds (default 1)")
    g.add_argument("--eval-batch-size", type=int, default=S, help="evaluation batch size (default 1000)")
    g.add_argument("--checkpoint-every", type=int, default=S, help="checkpoint every k rounds (default 5)")
    tr.add_argument("--no-progress", action="store_true", help="no progress bar")
    tr.add_argument("--format", choices=("table", "json"), default="table", help="summary format")


# torch's CPU allocator backs large tensors with transparent huge pages when this is set before its first
# allocation: a fresh (runs, clients, dim) temporary then costs a few page faults instead of one per 4 KiB (on the
# 2-core development machine a 36 MB elementwise op took 4x less CPU time). Read once by torch; set it to 0 to
# opt out. It changes where tensors live, not what they hold.
THP_ENV = "THP_MEM_ALLOC_ENABLE"


@contextlib.contextmanager
def _own_warnings_in_one_line():
    """While the CLI runs, fedtheory's own warnings (a plug-in that registers nothing) print as one line, like its
    errors ('fedtheory: warning: ...'); others as before. The previous ``warnings.showwarning`` comes back after."""
    from ._validation import FedTheoryDeprecationWarning
    from .plugins import PluginWarning

    previous = warnings.showwarning
    said: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, (PluginWarning, FedTheoryDeprecationWarning)):
            kind = "deprecated" if issubclass(category, FedTheoryDeprecationWarning) else "warning"
            text = one_line(str(message))
            if text not in said:  # once per message (a deprecated call in a loop says it once)
                said.add(text)
                where = f" ({filename}:{lineno})" if kind == "deprecated" else ""
                print(f"fedtheory: {kind}: {text}{where}", file=sys.stderr if file is None else file)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


MAX_SEED = 2 ** 63 - 1  #: the largest --seed of `check` (the simulator's seeds are int64)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: parse ``argv``, run the command, return its exit status (see the module docstring).

    Every moment of the run is covered by one handler of the signals that end it (``fedtheory._signals``): a signal
    gives 128 + its number and one line on stderr, never a traceback, wherever it lands (an import, a check, a
    solver that swallowed the exception it raised, the writing of the outputs)."""
    os.environ.setdefault(THP_ENV, "1")
    code: int | None = None
    with ending_signals():
        try:
            args = _parser().parse_args(argv)
            with _own_warnings_in_one_line():
                code = _main(args)
        except (KeyboardInterrupt, Terminated):
            pass  # said below, from the record: the exception may also have been lost on its way here
        signum = received()
        if signum is not None:
            _say_signal(signum)
            return exit_status(signum)
    return 2 if code is None else code


def _say_signal(signum: int) -> None:
    import signal

    try:
        if signum == signal.SIGINT:
            print("fedtheory: interrupted (SIGINT)", file=sys.stderr)
        else:
            print(f"fedtheory: terminated by {signal.Signals(signum).name}", file=sys.stderr)
    except OSError:  # stderr is gone too
        pass


def _main(args) -> int:
    try:
        if getattr(args, "plugin", None) is not None:
            from .plugins import load_plugins

            t0 = time.perf_counter()
            load_plugins(args.plugin)
            args.load_s = time.perf_counter() - t0  # `check` reports it (load_s)
        command = {"list": _cmd_list, "explain": _cmd_explain, "check": _cmd_check, "report": _cmd_report,
                   "train": _cmd_train, "new-paper": _cmd_new_paper, "worst": _cmd_worst}.get(args.command)
        if command is not None:
            if args.command in ("list", "explain"):  # they find nothing: a reader that leaves early changes nothing
                args.earned_status = 0
            code = command(args)
            sys.stdout.flush()  # here, where a reader that left is caught (at exit Python would say 'Exception ignored')
            return code
    except (ParameterError, FedTheoryError) as exc:
        print(f"fedtheory: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `fedtheory check | head -1`: the reader left; the run keeps the status it earned
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        earned = getattr(args, "earned_status", None)
        return SIGPIPE_STATUS if earned is None else earned
    except Exception as exc:  # noqa: BLE001 - a bug of the tool: its own exit status, never 1 (findings)
        import traceback

        if os.environ.get("FEDTHEORY_TRACEBACK"):
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"fedtheory: internal error: {one_line(f'{type(exc).__name__}: {exc}')} (at "
              f"{os.path.basename(where.filename)}:{where.lineno}; FEDTHEORY_TRACEBACK=1 prints the traceback)",
              file=sys.stderr)
        return 3
    return 2


#: The exit status of a command whose reader left before it knew its own status (a shell's 128 + SIGPIPE).
SIGPIPE_STATUS = 141


# ------------------------------------------------------------------------------------ list / explain


def _cmd_list(args) -> int:
    if args.plugins:
        from .plugins import load_plugins

        rows = [i.as_dict() for i in load_plugins()]
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            _print_table(["plug-in", "origin", "module", "records", "checks"],
                         [[r["name"], r["origin"], r["module"], r["records"], r["checks"]] for r in rows])
        return 0
    if args.assumptions:
        from .checks.catalogue import assumption_rows

        rows = assumption_rows()
        if args.format == "json":
            print(json.dumps(rows, indent=2))
            return 0
        _print_table(["assumption", "about", "constants", "statement, and what certifies it"],
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
        from .sim.measures import measure_catalogue

        rows = [{"name": k, **v} for k, v in measure_catalogue().items()]
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            _print_table(["measure", "indexing", "source", "dimension", "definition"],
                         [[r["name"], r["indexing"], r["source"], r["dimension"] or "?", r["definition"]] for r in rows],
                         wrap_last=True)
        return 0
    if args.checks:
        from .checks import all_checks

        specs = [s for s in all_checks().values() if args.paper in (None, s.paper)]
        _validate_paper(args.paper, {s.paper for s in all_checks().values()})
        rows = [{"id": s.id, "paper": s.paper, "kind": s.kind, "records": list(s.records), "profiles": list(s.profiles),
                 "measures": list(s.measures), "description": s.description} for s in specs]
        if args.format == "json":
            print(json.dumps(rows, indent=2))
        else:
            _print_table(["check", "paper", "kind", "records"],
                         [[r["id"], r["paper"], r["kind"], ", ".join(r["records"])] for r in rows])
        return 0
    from .plugins import records

    reg = records()
    _validate_paper(args.paper, {r.paper for r in reg.values()})
    kinds = sorted({r.kind for r in reg.values()})
    if args.kind is not None and args.kind not in kinds:
        raise ParameterError("--kind", args.kind, "one of " + ", ".join(kinds))
    rows = [r.summary() for r in reg.values() if args.paper in (None, r.paper) and args.kind in (None, r.kind)]
    rows.sort(key=lambda r: (r["paper"], r["id"]))
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        _print_table(["record", "kind", "title", "source"], [[r["id"], r["kind"], r["title"], r["source"]] for r in rows])
    return 0


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


def _cmd_explain(args) -> int:
    from .checks.registry import checks_of
    from .plugins import plugin_of, record

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
        from .checks import run_checks
        from .checks.certification import certificate_text
        from .checks.output import simulation_text

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
    from .checks.units_check import units_result, units_symbols

    u = units_result(rec)
    mark = f" [{u.scope}]" if u.scope != "inside" else ""
    print(f"units: {u.verdict}{mark}: {u.detail.removeprefix('units: ')}")
    dims = units_symbols(rec)
    if dims:
        print("dimensions: " + ", ".join(f"{n} {d}" for n, d in dims.items()))


def _cmd_new_paper(args) -> int:
    from .checks import all_checks
    from .plugins import BUILTIN_PAPERS, PluginError, papers
    from .skeleton import write_skeleton

    taken = set(BUILTIN_PAPERS)
    try:
        taken |= set(papers())  # the installed plug-ins' papers too
        taken |= {spec.paper for spec in all_checks().values()}  # and the checks' (the core's empirical.runs)
    except PluginError as exc:  # a broken plug-in does not stop writing a new one; its name is unknown
        print(f"fedtheory: warning: {exc}", file=sys.stderr)
    if args.from_latex is not None:
        from .latex import import_text, write_from_latex

        print(import_text(write_from_latex(args.name, args.from_latex, args.dir, taken=taken)))
        return 0
    root = write_skeleton(args.name, args.dir, taken=taken)
    src = f"{root}/src/{args.name}"
    print(f"wrote {root}/ (records, checks, a test, pyproject.toml). Next:\n"
          f"  {shlex.join(['fedtheory', 'check', '--plugin', src, '--paper', args.name])}   # run its checks (without "
          f"--paper: the built-in papers' too)\n"
          f"  {shlex.join(['fedtheory', 'explain', args.name + '.thm1', '--plugin', src])}\n"
          f"  {shlex.join(['pip', 'install', '-e', str(root)])}                         # installs the entry point: no "
          "--plugin needed")
    return 0


# ------------------------------------------------------------------------------------ worst


def _cmd_worst(args) -> int:
    from . import worst as W
    from .worst.pep.record import pep_entries
    from .worst.spec import entry, parse_sets, worst_case_entries

    if args.list:
        peps = pep_entries()
        for rid, e in sorted(worst_case_entries().items()):
            print(f"{rid}  {e.description}" + ("  [--method pep]" if rid in peps else ""))
        return 0
    if args.method == "pep":
        if not W.pep_available():
            raise ParameterError("--method", "pep", "search, unless the optional extra is installed: "
                                 "pip install 'fedtheory[pep]' (PEPit + cvxpy)")
        for flag, val in (("--workers", getattr(args, "workers", None)), ("--scheduler", getattr(args, "scheduler", None)),
                          ("--chunk", args.chunk)):
            if val is not None:
                raise ParameterError(flag, val, "absent with --method pep (one SDP, solved in this process)")
        return _cmd_worst_pep(args, W)
    pep_only = [f for f, v in (("--server-rule", args.server_rule), ("--pep-class", args.pep_class)) if v is not None]
    if pep_only:
        raise ParameterError(pep_only[0], getattr(args, pep_only[0][2:].replace("-", "_")), "given with --method pep only")
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
    ex = _executor(args)
    with ex if ex is not None else contextlib.nullcontext():
        for rid in args.ids:
            path = os.path.join(args.out_dir, f"{rid}.json")
            kw = {k: v for k, v in (("problem", args.problem), ("setting", args.setting), ("beta", args.beta))
                  if v is not None}
            since = len(getattr(ex, "outcomes", []))
            rec = W.run_worst(rid, sets=sets, seed=args.seed, use_reference=not args.no_reference, reference_kw=kw,
                              budget=args.budget, seconds=args.seconds, popsize=args.popsize, progress=progress,
                              final_seeds=args.final_seeds, instance_path=path, executor=ex, chunk=args.chunk)
            execution = _report_execution(ex, since)
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
    from ._jsonutil import jsonable

    return json.dumps(jsonable(rec), indent=2, allow_nan=False)


def _cmd_worst_pep(args, W) -> int:
    from .worst.pep.record import pep_entries
    from .worst.spec import parse_sets

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


# ------------------------------------------------------------------------------------ train

_TRAIN_FIELDS = ("dataset", "data_dir", "partition", "alpha", "classes_per_client", "samples_per_client",
                 "partition_seed", "augment", "crop_padding", "model", "algorithm", "seeds", "n_clients",
                 "clients_per_round", "rounds", "local_epochs", "local_steps", "batch_size", "lr", "lr_decay",
                 "weight_decay", "max_grad_norm", "path", "client_chunk", "device", "dtype", "deterministic",
                 "eval_every", "eval_batch_size", "checkpoint_every")


def _cmd_train(args) -> int:
    from .empirical import algorithms as A
    from .empirical.config import TrainConfig, parse_hyperparameters
    from .empirical.runs import MANIFEST, read_manifest
    from .empirical.sweep import SWEEP, is_sweep, train_sweep
    from .empirical.trainer import TrainingInterrupted, train

    if args.list_algorithms:
        rows = []
        for name, spec in A.algorithms().items():
            hp = ", ".join(f"{k}" + ("" if v is inspect.Parameter.empty else f"={v}") for k, v in spec.hyperparameters.items())
            rows.append([name, hp, spec.source])
        _print_table(["algorithm", "hyperparameters (default)", "source"], rows)
        print("\nAny algorithm also runs as NAME+RI (FedInit's relaxed initialisation; hyperparameter beta, or ri_beta "
              "when the algorithm has its own beta). Gossip algorithms train every client every round; FedShift's "
              "inferior clients and layers come from the partition and the model.")
        return 0
    if not args.out:
        raise ParameterError("--out", None, "a run directory (e.g. runs/fedinit-beta-sweep)")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ParameterError("--out", args.out, "a run directory (new, or an existing one with --resume), not a file")
    given = {k: getattr(args, k) for k in _TRAIN_FIELDS if hasattr(args, k)}
    if hasattr(args, "threads"):
        given["threads"] = args.threads
    if hasattr(args, "hp"):
        given["hyperparameters"] = parse_hyperparameters(args.hp)
    for opt, key in (("model_option", "model_options"), ("dataset_option", "dataset_options")):
        if hasattr(args, opt):
            given[key] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in parse_hyperparameters(getattr(args, opt)).items()}
    base: dict = {}
    if args.config:
        base = _read_json_object("--config", args.config, "a JSON file of TrainConfig fields")
    if args.resume and not is_sweep(args.out):
        if not os.path.exists(os.path.join(args.out, MANIFEST)):
            raise ParameterError("--out", args.out, "a run directory with manifest.json to resume (none found)")
        stored = read_manifest(args.out)["config"]
        base = {**stored, **{k: v for k, v in base.items()}}
    progress = not args.no_progress and sys.stderr.isatty()
    if args.workers is not None or args.scheduler is not None or (args.resume and is_sweep(args.out)):
        if args.resume and is_sweep(args.out):
            stored = _read_json_object("--out", os.path.join(args.out, SWEEP), f"a sweep directory's {SWEEP}")
            if not isinstance(stored.get("config", {}), dict):
                raise ParameterError("--out", os.path.join(args.out, SWEEP), f"a sweep directory's {SWEEP} (its "
                                     "'config' is not an object)")
            base = {**stored.get("config", {}), **base}
        config = TrainConfig.from_dict({**base, **given}).validated()  # bad settings before any worker starts
        from .parallel import SerialExecutor

        # resumed without workers: the cells' threads as the workers' (--worker-threads), so the bits continue alike
        with _executor(args) or SerialExecutor(threads=args.worker_threads) as runner:
            try:
                res = train_sweep(config, args.out, runner, resume=args.resume, progress=progress)
            except TrainingInterrupted as exc:
                print(f"fedtheory: {exc}", file=sys.stderr)
                return exit_status(exc.signum)
            _print_train_summary(res, args.format)
            _report_execution(runner)
        return 0 if res.outcome.ok else 1
    config = TrainConfig.from_dict({**base, **given})
    try:
        res = train(config, args.out, resume=args.resume, progress=progress)
    except TrainingInterrupted as exc:
        print(f"fedtheory: {exc}", file=sys.stderr)
        return exit_status(exc.signum)
    _print_train_summary(res, args.format)
    return 0


MAX_SETTINGS_BYTES = 16 << 20  # a --config file or a sweep.json: settings, kilobytes


def _read_json_object(flag: str, path: str, what: str) -> dict:
    """A JSON object from a regular file of at most MAX_SETTINGS_BYTES, or a ParameterError naming ``flag``."""
    from .files import FileRefused, read_json

    try:
        data = read_json(path, MAX_SETTINGS_BYTES, "settings file")
    except FileRefused as exc:
        raise ParameterError(flag, path, f"{what} ({exc.why})") from None
    if not isinstance(data, dict):
        raise ParameterError(flag, path, f"{what}: a JSON object, not a {type(data).__name__}")
    return data


def _print_train_summary(res, fmt: str) -> None:
    import numpy as np

    from .checks.output import fmt_number as _num

    m = res.metrics
    rows = []
    for r in res.manifest["runs"]:
        f = m[m["run"] == r["run"]].sort_values("round") if "run" in m else m
        if f.empty:  # a sweep cell that failed (named in the executor's summary)
            continue
        last = lambda c: next((float(v) for v in f[c].to_numpy(dtype=float)[::-1] if np.isfinite(v)), float("nan"))
        rows.append({"run": r["run"], "seed": r["seed"], **r["hyperparameters"], "beta": r.get("beta", 0.0),
                     "rounds": int(f["round"].max()), "test_acc": last("test_acc"), "train_loss": last("train_loss"),
                     "gen_gap": last("gen_gap"), "delta": last("delta"), "delta_code": last("delta_code"),
                     "sum_sqrt_delta": float(np.nansum(np.sqrt(f["delta"].to_numpy(dtype=float)[1:]))),
                     "diverged": bool(f["diverged"].max() > 0)})
    if fmt == "json":
        print(json.dumps({"run_dir": str(res.run_dir), "status": res.manifest.get("status"), "runs": rows}, indent=2))
        return
    if not rows:
        print("no completed runs")
        return
    keys = list(rows[0])
    _print_table(keys, [[_num(r[k]) if not isinstance(r[k], (bool, str)) else str(r[k]) for k in keys] for r in rows])
    resumes = res.manifest.get("resumes") or []
    if resumes and "bit_identical" in resumes[-1]:
        rr = resumes[-1]
        print(f"\nresumed from round {rr['from_round']}: {rr['rows_compared']} recomputed rows compared with the killed "
              f"run's, max |difference| {rr['max_abs_difference']:.3g}")
    ex = res.manifest.get("execution")
    if ex:
        print(f"\npath: {ex['path']} ({ex['path_reason']})")
    if res.run_dir is not None:
        print(f"\nlogged to {res.run_dir}; evaluate with: " + shlex.join(
            ["fedtheory", "check", "--runs", str(res.run_dir), "--only", "fedinit.exp", "fedmrur.exp",
             "fedshift.exp", "empirical"]))


# ------------------------------------------------------------------------------------ check


def _fmt_slack(x) -> str:
    return "-" if x is None else f"{float(x):.3g}"


def _worst_cases(args, results, ex=None) -> list[dict]:
    """`check --worst-case`: the worst-case search of every checked bound that declares one."""
    from . import worst as W
    from .worst.spec import worst_case_entries

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
    from .checks.mutants import format_mutation_table, mutation_payload, run_mutants
    from .worst.mutants import WorstCaseLayer
    from .worst.search import worst_case

    if args.worst_case or args.report or args.controls or args.runs is not None:
        raise ParameterError("--mutants", True, "without --worst-case, --report, --controls and --runs")
    popsize = inspect.signature(worst_case).parameters["popsize"].default
    if args.worst_budget < popsize:  # the worst-case layer's search: refused before any check runs
        raise ParameterError("--worst-budget", args.worst_budget, f"an integer >= {popsize} (the search's population "
                             "size: one generation)")
    _check_outputs(args, ("--out", args.out))  # before the run (minutes), not after it
    _mutable_only(args.paper, args.only, args.profile)
    t0 = time.perf_counter()
    show = (lambda rid: print(f"mutating {rid} ...", file=sys.stderr)) if sys.stderr.isatty() else None
    # the worst-case layer: each record with a worst-case declaration is searched once, its mutants decided there
    layers = [WorstCaseLayer(budget=args.worst_budget, seed=args.seed)]
    from .worst import pep_available
    from .worst.mutants import PEPLayer

    if pep_available():  # the PEP's worst case, where a record declares one: kills and classifies mutants
        layers.append(PEPLayer(seed=args.seed))
    scores = run_mutants(paper=args.paper, only=args.only, profile=args.profile, seed=args.seed, progress=show,
                         layers=layers)
    payload = mutation_payload(scores, command=["fedtheory", "check"] + sys.argv[2:], profile=args.profile,
                               seed=args.seed, elapsed_s=round(time.perf_counter() - t0, 2))
    failed = _write_outputs(args, payload)  # --report is refused above
    args.earned_status = 2 if failed else 0
    if args.format == "json":
        print(json.dumps(payload, indent=2))
    else:
        print(format_mutation_table(scores, verbose=args.verbose))
        print(f"\n{payload['elapsed_s']:.1f} s" + (f"; JSON written to {_where(args.out)}" if args.out and not failed else ""))
    if failed:
        return _refuse_outputs(failed, payload, 0, None)
    return 0


def _mutable_only(paper: str | None, only, profile: str) -> None:
    """Before `check --mutants` runs: each --only pattern selects at least one record it can mutate (a bound, or a
    stated order with its explicit form) of the selected papers; else a ParameterError naming the pattern."""
    from .checks.mutants import mutable_records
    from .checks.run import select

    from .checks.registry import id_matches
    from .plugins import records

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
    from .checks.controls import run_controls

    if args.worst_case or args.report:
        raise ParameterError("--controls", True, "without --worst-case and --report")
    _check_outputs(args, ("--out", args.out))
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
    failed = _write_outputs(args, payload)  # --report is refused above
    args.earned_status = 2 if failed or unusable else 3 if bad else 0
    if args.format == "json":
        print(json.dumps(payload, indent=2))
    else:
        _print_table(["check", "outcome", "verdicts under the control", "the control (what it mutates), and the counted "
                      "row it made"],
                     [[o.check, o.status.replace("_", " "), ", ".join(sorted(set(r.verdict for r in o.rows))),
                       f"{o.description}. Counted row: {o.counted_text}"] for o in outcomes], wrap_last=True)
        if args.verbose:  # the rows that show each control's failure (or why it did not fail), with their notes
            from .checks import FINDINGS, format_table

            for o in outcomes:
                shown = [r for r in o.rows if r.verdict in FINDINGS or r.verdict == "error"] or o.rows
                print(f"\n{o.check} under its control ({o.status}):")
                print(format_table(shown[:5], verbose=True))
                if len(shown) > 5:
                    print(f"  ... {len(shown) - 5} more (the JSON has every row)")
        print(f"\n{len(outcomes) - len(bad)} of {len(outcomes)} control(s) fail as required in "
              f"{time.perf_counter() - t0:.1f} s" + (": " + ", ".join(o.check + " " + o.status for o in bad) if bad else ""))
        design = [s for s in missing if s.self_check]
        bare = [s for s in missing if not s.self_check]
        if design:
            print(f"{len(design)} implementation self-check(s) by design (no mutation of the statement could make them "
                  "fail): " + "; ".join(f"{s.id} ({s.self_check})" for s in design))
        if bare:
            print(f"{len(bare)} check(s) without a negative control (their rows are implementation self-checks by "
                  "rule): " + ", ".join(s.id for s in bare))
        if args.out and not failed:
            print(f"JSON written to {_where(args.out)}")
    if failed:
        return _refuse_outputs(failed, payload, 3 if bad else 0, None)
    if unusable:
        return _refuse_unusable(unusable)
    return 3 if bad else 0


def _cmd_check(args) -> int:
    from .checks import run_checks
    from .checks.output import format_timings, print_results, results_payload
    from .checks.results import exit_code

    if not 0 <= args.seed <= MAX_SEED:  # the runs' seeds are 64-bit signed integers (was: 'seeds=[...]' mid-run)
        raise ParameterError("--seed", args.seed, f"an integer from 0 to {MAX_SEED} (2^63 - 1)")
    if args.mutants:  # first: it refuses --controls (which would otherwise run instead)
        return _cmd_mutants(args)
    if args.controls:
        return _cmd_controls(args)
    if args.worst_case:
        from .worst.search import worst_case

        popsize = inspect.signature(worst_case).parameters["popsize"].default
        if args.worst_budget < popsize:  # refused before any check runs, in the flag's name
            raise ParameterError("--worst-budget", args.worst_budget, f"an integer >= {popsize} (the search's "
                                 "population size: one generation)")
    if args.worst_dir != "worst_instances" and not args.worst_case:
        raise ParameterError("--worst-dir", args.worst_dir, "given with --worst-case (it says where its instances go)")
    if args.worst_case and os.path.exists(args.worst_dir) and not os.path.isdir(args.worst_dir):
        raise ParameterError("--worst-dir", args.worst_dir, "a folder (new or existing), not a file")
    if args.out and args.report and _same_file(args.out, args.report):
        raise ParameterError("--report", args.report, f"another file than --out ({args.out}): one would replace the "
                             "other")
    if args.one_process and (args.workers is not None or args.scheduler is not None):
        raise ParameterError("--one-process", True, "without --workers / --scheduler (they run the checks elsewhere)")
    _check_outputs(args, ("--out", args.out), ("--report", args.report))  # before any check runs, in the flag's name
    unusable = _usable_runs(args.runs) if args.runs is not None else []
    t0 = time.perf_counter()
    load_s = getattr(args, "load_s", None)  # seconds main() spent loading the plug-ins, before any check
    progress = not args.no_progress and args.format == "table" and sys.stderr.isatty()
    ex = _executor(args)
    timings: list = []
    with ex if ex is not None else contextlib.nullcontext():
        results = run_checks(paper=args.paper, only=args.only, profile=args.profile, seed=args.seed, progress=progress,
                             runs_dir=args.runs, executor=ex, timings=timings, parallel_symbolic=not args.one_process)
        worst = _worst_cases(args, results, ex) if args.worst_case else []
        execution = _report_execution(ex)
    elapsed = time.perf_counter() - t0
    code = exit_code(results)
    if any(w.get("verdict") == "violated" for w in worst):
        code = max(code, 1)
    from .plugins import portable_target

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
        from .empirical.runs import find_runs, round_curves

        payload["runs"] = round_curves(find_runs(args.runs, errors=[]))
    failed = _write_outputs(args, payload)
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
            print(f"JSON records written to {_where(args.out)}")
        if args.report and "--report" not in failed:
            print(f"HTML report written to {_where(args.report)}")
    if failed:
        return _refuse_outputs(failed, payload, code, args.out if "--out" not in failed else None)
    if unusable:
        return _refuse_unusable(unusable)
    return code


def _check_outputs(args, *outputs: tuple[str, str | None], inputs: Sequence[str] = ()) -> None:
    """Before the run: each output (flag, path) given can be written and may be (``checks.output.check_writable``):
    ``--out ""`` is a usage error; an existing file only if fedtheory wrote it (or ``--force``); never a FIFO, a
    device, an input of the run (a plug-in's source, ``inputs``) or a file under ``--runs``."""
    from .checks.output import check_writable
    from .plugins import source_files

    for flag, path in outputs:
        if path is None:
            continue
        check_writable(path, flag, force=getattr(args, "force", False), inputs=[*source_files(), *inputs],
                       input_dirs=[args.runs] if getattr(args, "runs", None) else [])


def _where(path: str) -> str:
    """``path`` as the line saying it was written names it: a symbolic link says that it was written through."""
    return f"{path} (a symbolic link: written through to {os.path.realpath(path)})" if os.path.islink(path) else path


def _write_outputs(args, payload) -> dict[str, ParameterError]:
    """Write --out and --report (each checked writable before the run); a write that fails all the same (a disk
    that filled, a folder removed meanwhile) is returned by flag, never raised: the results are not thrown away."""
    from .checks.output import write_json

    failed: dict[str, ParameterError] = {}
    if args.out:
        try:
            write_json(args.out, payload, "--out")
        except ParameterError as exc:
            failed["--out"] = exc
    if args.report:
        from .report import write_report

        try:
            write_report(payload, args.report, "--report")
        except ParameterError as exc:
            failed["--report"] = exc
    return failed


def _refuse_outputs(failed: dict[str, ParameterError], payload, code: int, written: str | None) -> int:
    """Name each output that could not be written, keep the results where they can be read back (``written``: the
    --out file that was written; else a new file in the temporary folder) and exit with status 2, saying the run's
    own exit status (``code``)."""
    import tempfile

    from .files import write_atomic

    kept = written
    if kept is None:
        try:
            fd, kept = tempfile.mkstemp(prefix="fedtheory-results-", suffix=".json")
            os.close(fd)
            write_atomic(kept, json.dumps(payload, indent=2))
        except OSError as exc:
            kept = None
            print(f"fedtheory: error: the results could not be kept anywhere ({exc.strerror or exc})", file=sys.stderr)
    for exc in failed.values():
        print(f"fedtheory: error: {exc}", file=sys.stderr)
    if kept is not None:
        print(f"fedtheory: the results are kept in {kept} (`{shlex.join(['fedtheory', 'report', kept])}` draws them); "
              f"the run's own exit status was {code}", file=sys.stderr)
    return 2


def _usable_runs(runs: str) -> list[str]:
    """--runs DIR as every path reads it (``check``, ``check --controls``): a ParameterError when DIR is not a
    directory or holds no usable run (``fedtheory.empirical.runs.find_runs``: regular files within limits, every
    metric in its declared range); else the descriptions of the unusable run directories beside the usable ones."""
    if not os.path.isdir(runs):
        raise ParameterError("--runs", runs, "an existing directory of logged runs (see `fedtheory train`)")
    from .empirical.runs import find_runs

    unusable: list[str] = []
    if not find_runs(runs, errors=unusable):
        raise ParameterError("--runs", runs, "a directory holding fedtheory runs (manifest.json + metrics.csv from "
                             "`fedtheory train`); " + ("unusable: " + "; ".join(unusable) if unusable else "none found"))
    return unusable


def _refuse_unusable(unusable: list[str]) -> int:
    """The usable runs were used; the unusable ones are bad input: exit status 2, naming them."""
    print("fedtheory: error: unusable run directories under --runs (the others were used):\n  "
          + "\n  ".join(unusable), file=sys.stderr)
    return 2


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the same path, through links, or one file twice)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def _cmd_report(args) -> int:
    from .report import write_report

    if args.results is None and args.runs is None:
        raise ParameterError("RESULTS", None, "a results file of `fedtheory check --out`, or --runs DIR (or both)")
    for given in (args.results, args.mutants):
        if given is not None and _same_file(given, args.out):
            raise ParameterError("--out", args.out, f"another file than the file it is drawn from ({given})")
    _check_outputs(args, ("--out", args.out), inputs=[g for g in (args.results, args.mutants) if g is not None])
    t0 = time.perf_counter()
    path = write_report(args.results, args.out, "--out", mutants=args.mutants, runs=args.runs)
    print(f"HTML report written to {_where(str(path))} ({os.path.getsize(path) / 1e6:.1f} MB, {time.perf_counter() - t0:.1f} s)")
    return 0


def _print_table(header, rows, wrap_last: bool = False) -> None:
    width = shutil.get_terminal_size((160, 24)).columns
    cols = list(zip(*([header] + rows))) if rows else [[h] for h in header]
    widths = [min(max(len(str(c)) for c in col), 48) for col in cols]
    if wrap_last:
        used = sum(widths[:-1]) + 2 * (len(widths) - 1)
        widths[-1] = max(30, width - used)

    def fmt(row):
        cells = [str(c) for c in row]
        cells = [c if len(c) <= w else c[: w - 1] + "~" for c, w in zip(cells, widths)]
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    print(fmt(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        if not wrap_last:
            print(fmt(row))
            continue
        import textwrap

        parts = textwrap.wrap(str(row[-1]), widths[-1]) or [""]
        print(fmt(list(row[:-1]) + [parts[0]]))
        for more in parts[1:]:
            print(fmt([""] * (len(row) - 1) + [more]))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
