"""The code base passes ``ruff check`` with the project's configuration (pyproject.toml, [tool.ruff]: line length 120,
pycodestyle, pyflakes, import order); a file that breaks those rules fails it (the negative control)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                                reason="ruff is not installed (it is in the test extra: pip install -e '.[test]')")


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_the_code_base_passes_ruff():
    out = _ruff()
    assert out.returncode == 0, ("ruff check found problems (`ruff check --fix .` fixes the fixable ones):\n"
                                 + out.stdout + out.stderr)


def test_a_long_line_and_unsorted_imports_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n\n\nprint(os.sep, sys.argv, '" + "x" * 103 + "')\n")
    assert max(len(line) for line in bad.read_text().splitlines()) == 130
    out = _ruff("--config", str(PYPROJECT), "--output-format", "concise", str(bad), cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "E501" in out.stdout and "I001" in out.stdout, out.stdout
