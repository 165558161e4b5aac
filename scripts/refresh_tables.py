"""Rewrite the verdict table in docs/<paper>.md from a fresh `fedtheory check --paper <paper>` run.

    python scripts/refresh_tables.py [paper ...]

Each doc holds exactly one ```text block: the table, as the CLI prints it (quick profile, seed 0).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "docs"
PAPERS = ("fedinit", "fedshift", "fedmrur", "oledfl")


def refresh(paper: str) -> None:
    doc = HERE / f"{paper}.md"
    cmd = [sys.executable, "-m", "fedtheory.cli", "check", "--paper", paper, "--profile", "quick", "--seed", "0"]
    env = {**os.environ, "COLUMNS": "150"}  # the width the notes are wrapped to
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode not in (0, 1):  # 1 = findings
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    text = doc.read_text()
    new, n = re.subn(r"```text\n.*?```", lambda _: "```text\n" + out.stdout.rstrip("\n") + "\n```", text,
                     count=1, flags=re.S)
    if n != 1:
        raise SystemExit(f"{doc}: no ```text block to replace")
    doc.write_text(new)
    print(f"{doc.name}: {out.stdout.strip().splitlines()[-1]}")


if __name__ == "__main__":
    for p in sys.argv[1:] or PAPERS:
        refresh(p)
