"""How far a reader follows a check to the run it compares with: the paper-local helper calls from each registered
check, read from the source (no import):

    python benchmarks/check_hops.py [PAPER ...] [--ids ID ...] [--root fedtheory/papers]

Per check: ``depth``, the longest chain of the paper's own functions and classes called from the check's function
(e.g. thm1 -> _bound_check -> _bound_checks -> ... : each arrow a hop); ``to_run``, the fewest hops to a function
that calls the simulator (``simulate``, ``coupled_runs``); ``helpers``, how many of the paper's functions and classes
the check reaches. A check registered by a helper (``thm1 = _bound_check(...)``) starts at that statement. Calls
inside a negative control's arguments (``control=Control(...)``) are left out: they are the control's path. Not a
timing benchmark (run_all.py does not run it).
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from pathlib import Path

RUN_CALLS = {"simulate", "coupled_runs"}
REGISTER = {"check", "run_check"}


def _modules(paper_dir: Path) -> dict[str, ast.Module]:
    """module name (relative, dotted) -> its syntax tree, for every .py file of the paper's package."""
    out = {}
    for f in sorted(paper_dir.rglob("*.py")):
        rel = f.relative_to(paper_dir).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join(parts)] = ast.parse(f.read_text(), str(f))
    return out


def _resolve(mod: str, level: int, name: str | None, is_pkg: bool) -> str:
    """The paper-relative module that ``from .name import`` (``level`` dots) names from module ``mod``."""
    base = mod.split(".") if mod else []
    if not is_pkg:
        base = base[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def _graph(paper_dir: Path):
    mods = _modules(paper_dir)
    pkgs = {m for m in mods if (paper_dir / Path(*m.split(".")) / "__init__.py").exists() or m == ""}
    defs: dict[str, ast.AST] = {}
    for m, tree in mods.items():
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defs[f"{m}:{node.name}"] = node
    # per module: local name -> node key, module alias -> module
    names: dict[str, dict[str, str]] = {}
    aliases: dict[str, dict[str, str]] = {}
    for m, tree in mods.items():
        nm = {k.split(":")[1]: k for k in defs if k.split(":")[0] == m}
        al = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level:
                src = _resolve(m, node.level, node.module, m in pkgs)
                for a in node.names:
                    if f"{src}:{a.name}" in defs:
                        nm[a.asname or a.name] = f"{src}:{a.name}"
                    elif (f"{src}.{a.name}" if src else a.name) in mods:
                        al[a.asname or a.name] = f"{src}.{a.name}" if src else a.name
        names[m], aliases[m] = nm, al
    # re-exports: a name imported into a package face resolves to its definition
    for m in mods:
        for local, key in list(names[m].items()):
            defs.setdefault(f"{m}:{local}", defs[key])

    def refs(m: str, node: ast.AST, skip_control: bool = False) -> set[str]:
        out = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in names[m]:
                out.add(names[m][sub.id])
            elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in aliases[m]:
                key = f"{aliases[m][sub.value.id]}:{sub.attr}"
                if key in defs:
                    out.add(key)
        return out

    def body_refs(key: str) -> set[str]:
        m = key.split(":")[0]
        node = defs[key]
        out = set()
        for part in node.body:
            out |= refs(m, part)
        if isinstance(node, ast.ClassDef):
            for b in node.bases:
                out |= refs(m, b)
        out.discard(key)
        return out

    def calls_run(key: str) -> bool:
        return any(isinstance(s, ast.Call) and getattr(s.func, "id", getattr(s.func, "attr", None)) in RUN_CALLS
                   for s in ast.walk(defs[key]))

    entries = {}
    for m, tree in mods.items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    f = d.func if isinstance(d, ast.Call) else d
                    if getattr(f, "id", getattr(f, "attr", None)) in REGISTER and isinstance(d, ast.Call) and d.args:
                        arg = d.args[0]
                        cid = arg.value if isinstance(arg, ast.Constant) else ast.unparse(arg)
                        entries[cid] = (f"{m}:{node.name}", body_refs(f"{m}:{node.name}"),
                                        calls_run(f"{m}:{node.name}"))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and node.value.args:
                # a check registered by a helper of the paper: the helper's body calls check(...)
                fn = node.value.func
                key = names[m].get(getattr(fn, "id", ""))
                if key and any(isinstance(s, ast.Call) and getattr(s.func, "id", getattr(s.func, "attr", None))
                               in REGISTER for s in ast.walk(defs[key])):
                    tgt = next(t.id for t in node.targets if isinstance(t, ast.Name))
                    cid = f"{ast.unparse(node.value.args[0])} ({tgt} = {fn.id}(...))"
                    entries[cid] = (f"{m}:{tgt}", refs(m, node.value), False)
    return defs, body_refs, calls_run, entries


def hops(paper_dir: Path) -> dict[str, dict]:
    """check id -> {'depth', 'to_run', 'helpers', 'chain'} for every check registered in the paper's package."""
    defs, body_refs, calls_run, entries = _graph(paper_dir)
    memo: dict[str, tuple[int, list[str]]] = {}

    def longest(key: str, stack: frozenset) -> tuple[int, list[str]]:
        if key in memo:
            return memo[key]
        best = (0, [key])
        for r in sorted(body_refs(key)):
            if r in stack:
                continue
            d, chain = longest(r, stack | {r})
            if d + 1 > best[0]:
                best = (d + 1, [key] + chain)
        memo[key] = best
        return best

    out = {}
    for cid, (key, first, runs_itself) in entries.items():
        depth, chain = 0, [key]
        for r in sorted(first):
            d, c = longest(r, frozenset({r}))
            if d + 1 > depth:
                depth, chain = d + 1, [key] + c
        seen, queue, to_run = set(first), deque((r, 1) for r in sorted(first)), (0 if runs_itself else None)
        while queue:
            k, dist = queue.popleft()
            if to_run is None and calls_run(k):
                to_run = dist
            for r in body_refs(k):
                if r not in seen:
                    seen.add(r)
                    queue.append((r, dist + 1))
        out[cid] = {"depth": depth, "to_run": to_run, "helpers": len({k.split(":")[1] for k in seen}),
                    "chain": [k.split(":")[1] for k in chain]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("papers", nargs="*", default=["fedinit", "oledfl", "fedmrur", "fedshift"])
    ap.add_argument("--ids", nargs="*", help="only these check ids")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1] / "fedtheory" / "papers"))
    args = ap.parse_args(argv)
    for paper in args.papers:
        for cid, h in sorted(hops(Path(args.root) / paper).items()):
            if args.ids and cid not in args.ids:
                continue
            print(f"{cid:45s} depth {h['depth']:2d}  to_run {h['to_run'] if h['to_run'] is not None else '-':>2}  "
                  f"helpers {h['helpers']:2d}  {' -> '.join(h['chain'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
