"""The command line's argparse parser: one subcommand per command, with the plug-in and execution flags they share
(:func:`build_parser`); errors on one line."""
from __future__ import annotations

import argparse

from .. import __version__
from .._validation import one_line

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse's parser with errors as fedtheory writes them: one line (no usage block), a long value shortened."""

    def error(self, message: str):
        import re

        message = re.sub(r"'([^']{60,})'", lambda m: f"'{m.group(1)[:24]}...' ({len(m.group(1))} characters)",
                         message)
        self.exit(2, f"{self.prog}: error: {one_line(message)} (`{self.prog} --help` lists the options)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fedtheory", description="Check federated-learning theorems against measurement.")
    p.add_argument("--version", action="version", version=f"fedtheory {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{list,explain,check,report,worst,train,new-paper}")
    plug = argparse.ArgumentParser(add_help=False)
    plug.add_argument("--plugin", action="append", default=[], metavar="PATH_OR_MODULE",
                      help="load a paper plug-in (a .py file, a package directory or a module name; repeatable). "
                           "Installed plug-ins (entry-point group fedtheory.papers) and $FEDTHEORY_PLUGINS load anyway")

    execp = _exec_parser()

    ls = sub.add_parser("list", parents=[plug],
                        help="list the encoded records, the checks, the measures or the plug-ins")
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
                    "mypaper.thm2.units of mypaper.units, not mypaper.thm2_2), or a glob pattern with * ? [...] "
                    "matched against whole ids ('mypaper.thm2*' selects all four; quote it)")
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
                                    "tightness, failing conditions, claims and rates, each with its reproducing "
                                    "command; for a collection of papers (the zoo of trusted theorems) a table of the "
                                    "tightest measured / bound per bound record (simulation, --worst-case search, "
                                    "PEP); with --mutants M.json, the mutation score of `fedtheory check --mutants "
                                    "--out M.json`.")
    rp.add_argument("results", metavar="RESULTS.json", nargs="?", help="a results file written by `fedtheory check "
                    "--out` (optional with --runs)")
    rp.add_argument("--runs", metavar="DIR", help="also draw the run directories of `fedtheory train` at or below DIR: "
                    "Delta^t, the generalization gap and the test accuracy over the rounds, a line per setting (in "
                    "place of the curves a results file of `check --runs` holds)")
    rp.add_argument("--out", metavar="FILE", default="report.html", help="the HTML file to write (default report.html; "
                    "an existing file only if fedtheory wrote it, or with --force)")
    rp.add_argument("--force", action="store_true", help="--out may replace an existing file fedtheory did not write")
    rp.add_argument("--mutants", metavar="M.json",
                    help="also draw a mutation file written by `fedtheory check --mutants "
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


def _worst_parser(sub, plug, execp) -> None:
    """`fedtheory worst`: the worst case within a bound's assumptions (adversarial instance search)."""
    w = sub.add_parser("worst", parents=[plug, execp],
                       help="search the bound's assumption class for its worst instance",
                       description="Search the problems that satisfy a bound's assumptions, at the constants of "
                                   "today's check, for the one with the largest left side; print one JSON record per "
                                   "bound (slack = bound / worst measured) and write the instance for --replay.")
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
    w.add_argument("--out-dir", default="worst_instances",
                   help="where the instance files go (default worst_instances/)")
    w.add_argument("--chunk", type=int, metavar="K", help="instances per unit of work (default: 16 with --workers or "
                   "--scheduler, else the whole population in one batch); the same K gives the same bits serially "
                   "and on any number of workers")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = w.add_argument_group("--method pep")
    g.add_argument("--server-rule", choices=("algorithm1", "code"), help="FedInit's server rule (default algorithm1; "
                   "code: w^t - eta_g mean_i (w_{i,0} - w_{i,K}), eta_g from --set server_lr=..)")
    g.add_argument("--pep-class", choices=("convex", "smooth"), help="the clients' function class (default: the "
                   "record's: convex for fedinit.thm2, smooth (non-convex) for fedinit.thm1)")
    g.add_argument("--solver", choices=("CLARABEL", "SCS"), default="CLARABEL",
                   help="the SDP solver (default CLARABEL)")


def _train_parser(sub, execp) -> None:
    """`fedtheory train`: every setting defaults to None here so that --resume can tell what was given."""
    S = argparse.SUPPRESS
    tr = sub.add_parser("train", parents=[execp],
                        help="train networks with the sim layer's algorithms and log Delta^t, gaps, ...",
                        description="Train a batch of runs (a seed sweep and/or a hyperparameter grid) and log "
                                    "per-round measures to a run directory; `fedtheory check --runs DIR` evaluates "
                                    "them. With --workers or --scheduler, each run (grid point x seed) is its own task "
                                    "and its own run directory DIR/cell-NNN (DIR/sweep.json lists them). Settings not "
                                    "given take TrainConfig's defaults (seed 000 App. B.1 where it gives one).")
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
    g.add_argument("--samples-per-client", type=int, default=S,
                   help="Dirichlet: samples per client (default n // clients)")
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
