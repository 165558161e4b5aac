"""Docs that run (issue 47): every Python block of README.md and docs/*.md is held to the code, so a recipe that drifts
from the code fails here.

* a plain ```python block runs, in order, each page's blocks sharing one namespace (a page reads top to bottom);
* ```python title="excerpt: PATH" is a piece of a file of the repository: each of its lines (a line ``...`` elides
  any number) appears in PATH, in that order;
* ```python title="recipe-NAME" blocks are joined and run by tests/test_docs_recipes.py;
* ```python title="not run: REASON" says why it cannot run here (a cluster's scheduler, say).
Any other title is refused: a block is one of these four.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```", re.S | re.M)


def _blocks(page: Path):
    text = page.read_text()
    for m in BLOCK.finditer(text):
        info = m.group("info").strip()
        title = re.fullmatch(r'title="([^"]*)"', info)
        yield text[:m.start()].count("\n") + 1, (title.group(1) if title else info), m.group("code")


def _kind(title: str) -> str:
    if not title:
        return "run"
    for kind in ("excerpt:", "recipe-", "not run:"):
        if title.startswith(kind):
            return kind.rstrip(":-")
    return "unknown"


def test_every_block_says_what_it_is():
    bad = [f"{p.relative_to(ROOT)}:{line} title={title!r}" for p in PAGES for line, title, _ in _blocks(p)
           if _kind(title) == "unknown" or (_kind(title) == "not run" and len(title) < len("not run: ") + 8)]
    assert not bad, "a Python block is run, an excerpt, a recipe or 'not run: REASON':\n" + "\n".join(bad)


@pytest.mark.parametrize("page", [p for p in PAGES if any(_kind(t) == "excerpt" for _, t, _ in _blocks(p))],
                         ids=lambda p: p.name)
def test_excerpts_are_the_files_they_quote(page):
    bad = []
    for line, title, code in _blocks(page):
        if _kind(title) != "excerpt":
            continue
        path = ROOT / title[len("excerpt:"):].strip().split(" ")[0]
        source = [ln.strip() for ln in path.read_text().splitlines()]
        at = 0
        for ln in code.splitlines():
            want = ln.strip()
            if not want or want in ("...", "..."):
                continue
            hit = next((i for i in range(at, len(source)) if source[i] == want), None)
            if hit is None:
                bad.append(f"{page.name}:{line} ({path.relative_to(ROOT)}): {want!r}")
                break
            at = hit + 1
    assert not bad, "an excerpt no longer matches the file it quotes:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", [p for p in PAGES if any(_kind(t) == "run" for _, t, _ in _blocks(p))],
                         ids=lambda p: p.name)
def test_runnable_blocks_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a block that writes files writes them here
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for line, title, code in _blocks(page):
        if _kind(title) != "run":
            continue
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - name the block
            raise AssertionError(f"{page.relative_to(ROOT)}:{line}: {type(exc).__name__}: {exc}") from exc
    capsys.readouterr()
    assert os.getcwd() == str(tmp_path)
