"""`fedtheory new-paper NAME`: a skeleton paper plug-in, or with --from-latex its records drafted from a theorem's
LaTeX."""
from __future__ import annotations

import shlex
import sys

__all__ = ["cmd_new_paper"]


def cmd_new_paper(args) -> int:
    from ..checks import all_checks
    from ..plugins import BUILTIN_PAPERS, PluginError, papers
    from ..skeleton import write_skeleton

    taken = set(BUILTIN_PAPERS)
    try:
        taken |= set(papers())  # the installed plug-ins' papers too
        taken |= {spec.paper for spec in all_checks().values()}  # and the checks' (the core's empirical.runs)
    except PluginError as exc:  # a broken plug-in does not stop writing a new one; its name is unknown
        print(f"fedtheory: warning: {exc}", file=sys.stderr)
    if args.from_latex is not None:
        from ..latex import import_text, write_from_latex

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
