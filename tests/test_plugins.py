"""The extension API: exact conditions, plug-in discovery (entry points, --plugin, $FEDTHEORY_PLUGINS, broken
plug-ins), the new-paper skeleton, and the example plug-in package (examples/li2020_fedavg) installed and run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from fedtheory._validation import FedTheoryError, ParameterError
from fedtheory.checks import assess_bound
from fedtheory.plugins import BUILTIN_PAPERS, ENTRY_POINT_GROUP, loaded_plugins
from fedtheory.theory import Bound, Condition, SymbolSet

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "li2020_fedavg"
STICH = ROOT / "examples" / "stich2019_localsgd"


def _cli(*args, env_extra=None, cwd=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


# ------------------------------------------------------------------------------------ conditions


def _bound_with(*conditions, requires=None):
    S = SymbolSet("t_cond")
    lr, mu = S.add("lr", "step"), S.add("mu", "curvature")
    return Bound(id="t_cond.b", paper="t_cond", title="", source="test", symbols=S, expr=lr * mu,
                 conditions=tuple(c(lr, mu) for c in conditions), requires=requires or {})


def test_equality_condition_is_checked_both_ways():
    b = _bound_with(lambda lr, mu: Condition("rule", sp.Eq(lr * mu, 2)))
    assert b.conditions_failed({"lr": 2.0, "mu": 1.0}) == []
    assert b.conditions_failed({"lr": 2.0 * (1 + 1e-12), "mu": 1.0}) == []  # within the relative tolerance
    half, double = b.conditions_failed({"lr": 1.0, "mu": 1.0}), b.conditions_failed({"lr": 4.0, "mu": 1.0})
    assert half and "rule" in half[0] and "(1 vs 2)" in half[0]  # a half step no longer passes as 'lr mu <= 2'
    assert double and "(4 vs 2)" in double[0]
    arr = b.conditions_failed({"lr": np.array([2.0, 1.0]), "mu": 1.0})  # any entry failing fails
    assert arr


def test_inequalities_keep_their_direction():
    b = _bound_with(lambda lr, mu: Condition("le", sp.Le(lr, 1 / mu)), lambda lr,
                    mu: Condition("gt", sp.Gt(lr, mu / 10)))
    assert b.conditions_failed({"lr": 0.5, "mu": 1.0}) == []
    assert [f.split(":")[0] for f in b.conditions_failed({"lr": 2.0, "mu": 1.0})] == ["le"]
    assert [f.split(":")[0] for f in b.conditions_failed({"lr": 0.1, "mu": 1.0})] == ["gt"]


@pytest.mark.parametrize("make", [lambda x, y: sp.Ne(x, y), lambda x, y: sp.And(x < y, y < 2 * x), lambda x, y: x + y])
def test_unsupported_relations_are_rejected_when_built(make):
    x, y = sp.symbols("x y", positive=True)
    with pytest.raises(FedTheoryError, match="unsupported relation"):
        Condition("c", make(x, y))


def test_requires_cannot_be_skipped():
    b = _bound_with(requires={"lr_schedule": "inverse_step"})
    with pytest.raises(ParameterError, match="settings.*lr_schedule"):
        assess_bound(b, [{"lr": 1.0, "mu": 1.0}], np.ones(3))
    res = assess_bound(b, [{"lr": 1.0, "mu": 1.0}], np.ones(3), settings={"lr_schedule": "constant"})
    assert res.verdict == "not_applicable" and "lr_schedule=inverse_step" in res.conditions_failed[0]


# ------------------------------------------------------------------------------------ discovery


def test_builtin_papers_come_through_entry_points():
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][ENTRY_POINT_GROUP]
    assert table == BUILTIN_PAPERS
    out = _cli("list", "--plugins", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    for name in BUILTIN_PAPERS:
        assert rows[name]["origin"] == "entry point (fedtheory)" and rows[name]["checks"] > 0


@pytest.fixture(scope="module")
def skeleton(tmp_path_factory):
    d = tmp_path_factory.mktemp("skel")
    out = _cli("new-paper", "mypaper", "--dir", str(d))
    assert out.returncode == 0, out.stderr
    return d / "mypaper"


def test_plugin_path_check_and_explain(skeleton):
    pkg = str(skeleton / "src" / "mypaper")
    out = _cli("check", "--plugin", pkg, "--only", "mypaper", "--format", "json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)["results"]
    # the plug-in's own check, then the units row every paper gets for free (check mypaper.units)
    assert [(r["id"], r["kind"], r["verdict"]) for r in res] == [("mypaper.thm1", "bound", "holds"),
                                                                 ("mypaper.thm1.units", "symbolic", "holds")]
    out = _cli("explain", "mypaper.thm1", "--plugin", pkg)
    assert out.returncode == 0 and "how it is checked" in out.stdout and "measures: opt_error" in out.stdout
    assert "units: holds: consistent" in out.stdout and "dimensions: D [f], eta [w]^2/[f]" in out.stdout
    assert "plug-in: mypaper" in out.stdout
    # without the plug-in the id is unknown: exit 2, naming how to load it
    out = _cli("explain", "mypaper.thm1")
    assert out.returncode == 2 and "--plugin" in out.stderr


def test_plugin_from_environment_and_skeleton_test(skeleton):
    out = _cli("list", "--paper", "mypaper", env_extra={"FEDTHEORY_PLUGINS": str(skeleton / "src" / "mypaper")})
    assert out.returncode == 0, out.stderr
    assert "mypaper.thm1" in out.stdout
    test = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(skeleton / "tests")],
                          capture_output=True, text=True, timeout=600)
    assert test.returncode == 0, test.stdout + test.stderr


def test_new_paper_rejects_bad_names(tmp_path):
    for bad in ("My-Paper", "class", "9x"):
        out = _cli("new-paper", bad, "--dir", str(tmp_path))
        assert out.returncode == 2 and "NAME=" in out.stderr


@pytest.mark.parametrize("content, needle", [
    ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ("import not_a_module_anywhere\n", "ModuleNotFoundError"),
    ("def broken(:\n", "SyntaxError"),
])
def test_broken_plugin_is_a_clear_error(tmp_path, content, needle):
    f = tmp_path / "bad_plugin.py"
    f.write_text(content)
    for args, env in (((("list", "--plugin", str(f))), None),
                      (("check", "--only", "x"), {"FEDTHEORY_PLUGINS": str(f)})):
        out = _cli(*args, env_extra=env)
        assert out.returncode == 2, out.stderr
        assert needle in out.stderr and str(f) in out.stderr and "Traceback" not in out.stderr


def test_missing_plugin_module_names_it():
    out = _cli("list", "--plugin", "no_such_plugin_module")
    assert out.returncode == 2 and "no_such_plugin_module" in out.stderr and "ModuleNotFoundError" in out.stderr


def test_same_plugin_twice_is_loaded_once(skeleton):
    pkg = str(skeleton / "src" / "mypaper")
    out = _cli("list", "--plugins", "--plugin", pkg, "--plugin", pkg, "--format", "json",
               env_extra={"FEDTHEORY_PLUGINS": pkg})
    assert out.returncode == 0, out.stderr
    assert [r["name"] for r in json.loads(out.stdout)].count("mypaper") == 1


def test_the_theory_layer_loads_no_plugins():
    """fedtheory.theory holds what has been imported (it finds no plug-ins); fedtheory.plugins.records() and the
    checks' lookups load them first."""
    code = ("import sys; from fedtheory.theory import registry; before = len(registry()); "
            "assert 'fedtheory.plugins' not in sys.modules; "
            "from fedtheory.plugins import loaded_plugins, papers, record, records; "
            "assert not loaded_plugins(); n = len(records()); "
            "print(before, n > 50, papers(), record('fedinit.thm1').id)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 2)[:2] == ["0", "True"]
    assert all(f"'{p}'" in out.stdout for p in BUILTIN_PAPERS) and out.stdout.strip().endswith("fedinit.thm1")


def test_in_process_loading_is_idempotent():
    from fedtheory.checks import all_checks

    all_checks()
    n = len(loaded_plugins())
    all_checks()
    assert len(loaded_plugins()) == n


# ------------------------------------------------------------------------------------ the example package


def _install(package: Path, tmp_path_factory) -> dict[str, str]:
    """pip-install an example package into a folder of its own (offline, no build isolation) and put that folder on
    PYTHONPATH: its entry point is then found exactly as after `pip install` of the package."""
    target = tmp_path_factory.mktemp("site")
    build = tmp_path_factory.mktemp("build")
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(target), str(package)], capture_output=True, text=True,
                         cwd=build, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return {"PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory):
    """examples/li2020_fedavg installed (see _install)."""
    return _install(EXAMPLE, tmp_path_factory)


@pytest.fixture(scope="module")
def installed_stich(tmp_path_factory):
    """examples/stich2019_localsgd installed (see _install)."""
    return _install(STICH, tmp_path_factory)


def test_example_package_end_to_end(installed_example):
    out = _cli("list", "--plugins", "--format", "json", env_extra=installed_example)
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["li2020"]["origin"] == "entry point (fedtheory-li2020)"
    out = _cli("check", "--only", "li2020", "--format", "json", env_extra=installed_example)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)["results"]
    bounds = [r for r in res if r["id"] == "li2020.thm1"]
    held = [r for r in bounds if r["params"]["setting"].startswith("inverse_step")]
    # the 6 settings of the grid and 3 where one term of the bound dominates (issue 45: each term tested)
    assert len(held) == 9 and all(r["verdict"] == "holds" and r["ratio"] >= 1 for r in held)
    assert sum("(term:" in r["params"]["setting"] for r in held) == 3
    assert {r["params"]["E"] for r in held} == {1, 5}
    assert {r["params"]["heterogeneity"] for r in held} == {0.1, 1.0, 3.0}
    const = [r for r in bounds if r["params"]["setting"].startswith("constant")]
    assert len(const) == 1 and const[0]["verdict"] == "not_applicable"
    assert any("lr_schedule=inverse_step" in c for c in const[0]["conditions_failed"])
    assert any(c.startswith("step_numerator") for c in const[0]["conditions_failed"])
    assert [r["verdict"] for r in res if r["id"] == "li2020.thm1.rate"] == ["rate_consistent"]
    out = _cli("explain", "li2020.thm1", env_extra=installed_example)
    assert "Eq(lr*mu, 2)" in out.stdout and "visited_client_grad2" in out.stdout


def test_example_package_own_tests(installed_example):
    """The example's tests: Theorem 1 holds, and the same bound halved is reported violated."""
    env = {**os.environ, **installed_example}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


def test_per_iteration_example_package_end_to_end(installed_stich, tmp_path):
    """The second worked example (a theorem stated per local iteration, Stich 2019 Thm 2.2), installed: eq. (4) holds
    at every setting inside the theorem, the two settings outside it are not_applicable with their reasons, the rate
    check is consistent; its controls fail as required; explain and explain --run speak in Stich's symbols; the
    report's reproduce line names the installed module."""
    out = _cli("check", "--only", "stich2019", "--format", "json", "--out", str(tmp_path / "r.json"),
               env_extra=installed_stich)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)["results"]
    bounds = [r for r in res if r["id"] == "stich2019.thm2_2"]
    held = [r for r in bounds if r["verdict"] != "not_applicable"]
    assert {(r["params"]["K"], r["params"]["H"]) for r in held} == {(4, 1), (4, 8), (16, 8)}
    assert all(r["verdict"] == "holds" and r["ratio"] >= 1 and r["extra"]["vacuity"] == "informative" for r in held)
    assert all(r["extra"]["quantities"]["K"] == "clients" for r in bounds)
    assert all(r["extra"]["series"]["x_label"] == "T" for r in held)  # the figure's axis is the paper's T
    outside = sorted(r["params"]["setting"] for r in bounds if r["verdict"] == "not_applicable")
    assert outside == ["K=4 H=8 a=8kappa", "K=4 H=8 heterogeneous"]
    assert [r["verdict"] for r in res if r["id"] == "stich2019.thm2_2.rate"] == ["rate_consistent"]
    out = _cli("check", "--only", "stich2019", "--controls", "--format", "json", env_extra=installed_stich)
    assert out.returncode == 0, out.stderr
    assert {c["check"]: c["status"] for c in json.loads(out.stdout)["controls"]} == {
        "stich2019.thm2_2": "fails_as_required", "stich2019.thm2_2.rate": "fails_as_required",
        "stich2019.units": "fails_as_required"}  # the units check every paper gets, with its own control
    out = _cli("explain", "stich2019.thm2_2", "--run", env_extra=installed_stich)
    assert out.returncode == 0, out.stderr
    assert "K -> clients" in out.stdout and "H -> local_steps" in out.stdout
    assert "H = 8 local steps per round, K = 16 clients (all take part)" in out.stdout
    assert "K = 8" not in out.stdout  # never the tool's K for the paper's H


def test_per_iteration_example_own_tests(installed_stich):
    env = {**os.environ, **installed_stich}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(STICH / "tests")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


def test_results_record_the_simulations_behind_them_even_from_a_shared_run():
    from fedtheory.checks import Session, run_checks
    from fedtheory.sim import RunConfig, fedavg, heterogeneous_least_squares, simulate
    from fedtheory.sim.simulation_log import record_simulations

    p = heterogeneous_least_squares(3, 2, 5)
    s = Session()
    run = lambda: simulate(p, fedavg(), RunConfig(rounds=2, local_steps=1, lr=0.1), [0, 1], measures=("opt_error",))
    with record_simulations() as first:
        s.memo("k", run)
    with record_simulations() as second:  # a memo hit reports the same simulation again
        s.memo("k", run)
    assert first == second and first[0]["runs"] == 2 and first[0]["measures"] == ["opt_error"]
    res = run_checks(only=["fedinit.eq3"], parallel_symbolic=False)
    sims = res[0].extra["simulations"]
    assert sims and sims[0]["algorithm"] and sims[0]["runs"] >= 1


def test_explain_run_lists_the_simulations(skeleton):
    out = _cli("explain", "mypaper.thm1", "--run", "--plugin", str(skeleton / "src" / "mypaper"))
    assert out.returncode == 0, out.stderr
    assert ("simulations behind the verdicts" in out.stdout
                                                 and "FedAvg on sc_least_squares: 1 runs x 50 rounds" in out.stdout)


def test_a_plugin_cannot_register_under_another_plugins_paper(tmp_path, capsys):
    """Before: a plug-in could register `fedinit.thm7` with paper="fedinit", and its units erratum was counted under
    the built-in paper (exit 1). Now loading it is refused, naming the owner (exit 2), for a record, a check or the
    paper's information; a paper name of its own is accepted. FedInit imported directly first (as another test
    module of this process does) owns its name too: before, the thief's record was then registered and leaked."""
    import fedtheory.papers.fedinit  # noqa: F401 - the direct import, outside any plug-in load
    from fedtheory.cli import main

    head = ("import sympy as sp\nfrom fedtheory.theory import Bound, SymbolSet, register, register_paper\n"
            "from fedtheory.checks import check\n"
            "S = SymbolSet('{p}', strict=True)\nD = S.add('D', 'gap', sp.Interval(0, sp.oo), dim='f')\n")
    bodies = {
        "record": "register(Bound(id='fedinit.thm7', paper='fedinit', title='t', source='s', symbols=S, assumptions=(),"
                  " lhs='opt_error', lhs_description='x', expr=D))\n",
        "record_id": "register(Bound(id='fedinit.thm8', paper='{p}', title='t', source='s', symbols=S, assumptions=(),"
                     " lhs='opt_error', lhs_description='x', expr=D))\n",
        "check": "@check('fedinit.mine', 'fedinit', 'bound')\ndef c(session):\n    return []\n",
        "paper": "register_paper('drori2014', collection='zoo')\n",
    }
    for what, body in bodies.items():
        p = f"thief_{what}"
        f = tmp_path / f"{p}.py"
        f.write_text(head.format(p=p) + body.format(p=p))
        assert main(["list", "--plugin", str(f)]) == 2, what
        err = capsys.readouterr().err
        assert "belongs to" in err and len(err.strip().splitlines()) == 1, (what, err)
    own = tmp_path / "own_paper.py"
    own.write_text(head.format(p="own_paper") + bodies["record_id"].format(p="own_paper").replace("fedinit.thm8",
                                                                                                   "own_paper.thm8"))
    assert main(["list", "--plugin", str(own)]) == 0
