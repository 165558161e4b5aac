"""The recipes of docs/extending.md (section 11) run as written (issue 47): the fenced blocks titled
```python title="recipe-NAME"``` of one recipe are joined in order into one file, run as a script (their
demonstrations assert what the page says) and loaded as a plug-in by the command line."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
BLOCK = re.compile(r'^```python title="(recipe-[\w-]+)"\n(.*?)^```', re.S | re.M)


def recipes() -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for name, code in BLOCK.findall(DOC.read_text()):
        out.setdefault(name, []).append(code)
    return {name: "\n\n".join(codes) for name, codes in out.items()}


def _write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / (name.removeprefix("recipe-").replace("-", "_") + "_recipe.py")
    path.write_text(recipes()[name])
    return path


def _fedtheory(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_the_page_has_every_recipe():
    assert set(recipes()) == {"recipe-fednova", "recipe-worst-runner"}


@pytest.mark.parametrize("name", ["recipe-fednova", "recipe-worst-runner"])
def test_each_recipe_runs_as_a_script(name, tmp_path):
    path = _write(tmp_path, name)
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_fednova_recipe_as_a_plugin(tmp_path):
    """11.1-11.3: the claim is supported, the recipe's false statement refuted with its robustness stated (not
    fragile, lost at equal step counts), and each control fails as required."""
    path = _write(tmp_path, "recipe-fednova")
    run = _fedtheory("check", "--plugin", str(path), "--only", "fednova_recipe", "--format", "json", "--no-progress",
                     cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    rows = {r["id"]: r for r in json.loads(run.stdout)["results"]}
    assert rows["fednova_recipe.fixed_points"]["verdict"] == "claim_supported"
    refuted = rows["fednova_recipe.consistent"]
    assert refuted["verdict"] == "claim_refuted" and refuted["scope"] == "inside"
    rob = refuted["extra"]["robustness"]
    assert rob["stated"] and not rob["fragile"] and [c["lost_at"] for c in rob["choices"]] == [None, 0]
    controls = _fedtheory("check", "--plugin", str(path), "--only", "fednova_recipe", "--controls", "--no-progress",
                          cwd=tmp_path)
    assert controls.returncode == 0, controls.stdout + controls.stderr
    assert "2 of 2 control(s) fail as required" in controls.stdout


def test_the_worst_runner_recipe_from_the_command_line(tmp_path):
    """11.4: the search runs through the runner (and its replay), and a runner returning anything but a Trace is
    refused with one line naming it (exit 2; it was an internal error, exit 3)."""
    path = _write(tmp_path, "recipe-worst-runner")
    run = _fedtheory("worst", "gdrecipe.contraction", "--plugin", str(path), "--budget", "64", "--out-dir", "wc",
                     "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["verdict"] == "holds" and 0.99 < 1 / found["slack"] <= 1.0
    replay = _fedtheory("worst", "--replay", found["instance"], "--plugin", str(path), cwd=tmp_path)
    assert replay.returncode == 0 and json.loads(replay.stdout)["worst_measured"] == found["worst_measured"]
    bad = tmp_path / "bad_runner.py"
    bad.write_text(path.read_text().replace("runner=step_one_over_L", "runner=lambda s, i, n: {'dist2_opt': 0}"))
    refused = _fedtheory("worst", "gdrecipe.contraction", "--plugin", str(bad), "--budget", "32", "--out-dir", "wc2",
                         "--no-progress", cwd=tmp_path)
    assert refused.returncode == 2 and "runner='a dict' is invalid" in refused.stderr, refused.stderr
    assert "fedtheory.sim.Trace" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
