"""Another revision beside this working tree, for side-by-side benchmarks: exported with ``git archive`` into a
folder (no worktree is registered in the repository), and Python run with that tree first on the path."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def export(rev: str, where: Path) -> Path:
    """Revision ``rev`` unpacked under ``where``; returns its root (import ``fedtheory`` from there)."""
    path = Path(where) / rev.replace("/", "_")
    path.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(path)], input=archive, check=True)
    return path


def python_in(tree: Path | None, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``python args`` importing ``fedtheory`` from ``tree`` (None: this working tree), output captured as text."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, **kwargs)
