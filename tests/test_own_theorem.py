"""Bring your own theorem, round 2 (issue 23): one test per item a new user met, numbered as in the issue."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedtheory._validation import FedTheoryError, ParameterError
from fedtheory.checks import assess_bound, format_table
from fedtheory.checks.execution import summarize_simulations
from fedtheory.checks.registry import id_matches
from fedtheory.sim import (
    AdditiveNoise,
    Exact,
    LeastSquaresProblem,
    LocalTransform,
    Minibatch,
    RunConfig,
    StepWeights,
    TrackGradients,
    fedavg,
    fedinit,
    heterogeneous_least_squares,
    identical_least_squares,
    simulate,
)
from fedtheory.sim.measures import measure_catalogue
from fedtheory.sim.reference import reference_simulate
from fedtheory.sim.simulation_log import record_simulations
from fedtheory.theory import Bound, SymbolSet
from fedtheory.worst import QuadraticClass

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------ 1. per-step measures


def _naive_averages(xbar: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Uniform and weighted running averages of xbar (S, d), written as plain sums."""
    S = xbar.shape[0]
    uni = np.stack([xbar[:s + 1].sum(axis=0) / (s + 1) for s in range(S)])
    wav = np.stack([(weights[:s + 1, None] * xbar[:s + 1]).sum(axis=0) / weights[:s + 1].sum() for s in range(S)])
    return uni, wav


@settings(max_examples=12, deadline=None)
@given(alg=st.sampled_from(["fedavg", "fedinit"]), N=st.sampled_from([None, 2]), seed=st.integers(0, 1000),
       schedule=st.sampled_from(["constant", "inverse_step"]), power=st.sampled_from([0.0, 1.0, 2.0]),
       oracle=st.sampled_from(["exact", "additive", "minibatch"]))
def test_step_measures_match_the_naive_reference(alg, N, seed, schedule, power, oracle):
    p = heterogeneous_least_squares(5, 3, 8, random_state=seed)
    algorithm = fedavg() if alg == "fedavg" else fedinit(0.2)
    orc = {"exact": Exact(), "additive": AdditiveNoise(0.1), "minibatch": Minibatch(2)}[oracle]
    cfg = RunConfig(rounds=4, local_steps=3, lr=0.05 if schedule == "constant" else 0.5, clients_per_round=N,
                    lr_schedule=schedule, lr_offset=6.0, oracle=orc)
    seeds = [seed, seed + 1]
    a = 7.5
    tr = simulate(p, algorithm, cfg, seeds, measures=("step_opt_error", "step_dist2", "step_grad_norm2",
                                                      "step_grad_norm2_mean", "avg_opt_error", "avg_dist2",
                                                      "wavg_opt_error", "wavg_dist2"),
                  step_weights=StepWeights(power=power, offset=a), keep_step_iterates=True)
    means: list = []
    reference_simulate(p, algorithm, cfg, seeds, step_means=means)
    T, K = cfg.rounds, cfg.local_steps
    w_star, f_star = p.constants["w_star"].value, p.constants["f_star"].value
    for r in range(len(seeds)):
        xbar = means[r]
        assert xbar.shape == (T * K + 1, p.dim) and tr.step_iterates.shape == (T * K + 1, 2, p.dim)
        np.testing.assert_allclose(tr.step_iterates[:, r], xbar, rtol=0, atol=1e-12)
        uni, wav = _naive_averages(xbar, (a + np.arange(T * K + 1)) ** power)
        for name, pts in (("step", xbar), ("avg", uni), ("wavg", wav)):
            np.testing.assert_allclose(tr[f"{name}_dist2"][:, r], np.sum((pts - w_star) ** 2, axis=1), rtol=1e-9,
                                       atol=1e-13)
            f = np.array([p.loss(x[None])[0] for x in pts])
            np.testing.assert_allclose(tr[f"{name}_opt_error"][:, r], f - f_star, rtol=1e-9, atol=1e-13)
        g = np.array([np.sum(p.grad(x[None])[0] ** 2) for x in xbar])
        np.testing.assert_allclose(tr["step_grad_norm2"][:, r], g, rtol=1e-9, atol=1e-13)
        np.testing.assert_allclose(tr["step_grad_norm2_mean"][:, r], [g[:s + 1].mean() for s in range(len(g))],
                                   rtol=1e-9, atol=1e-13)


def test_step_index_convention_and_shapes():
    """Row s = t K + k; with FedAvg's averaging and full participation xbar_{tK} = w^t, so every K-th row of a step
    measure is the state measure at round t; the catalogue says so."""
    p = heterogeneous_least_squares(4, 3, 10, random_state=0)
    cfg = RunConfig(rounds=5, local_steps=3, lr=0.05, oracle=AdditiveNoise(0.1))
    tr = simulate(p, fedavg(), cfg, [0, 1], measures=("opt_error", "dist2_opt", "step_opt_error", "step_dist2"))
    assert tr["step_opt_error"].shape == (5 * 3 + 1, 2)
    np.testing.assert_allclose(tr["step_opt_error"][::3], tr["opt_error"], rtol=1e-12)
    np.testing.assert_allclose(tr["step_dist2"][::3], tr["dist2_opt"], rtol=1e-12)
    cat = measure_catalogue()
    for name in ("step_opt_error", "step_dist2", "avg_opt_error", "wavg_opt_error", "wavg_dist2"):
        assert cat[name]["indexing"].startswith("(T K + 1, R): s = t K + k")
    assert "inclusive" in cat["avg_opt_error"]["definition"] and "row T-1" in cat["avg_opt_error"]["definition"]


def test_weighted_average_is_stich_average_and_geometric_weights_do_not_overflow():
    p = heterogeneous_least_squares(3, 2, 6, random_state=1)
    cfg = RunConfig(rounds=300, local_steps=4, lr=0.05, oracle=AdditiveNoise(0.1))
    tr = simulate(p, fedavg(), cfg, [0], measures=("wavg_dist2",), step_weights=StepWeights(ratio=1.5),
                  keep_step_iterates=True)
    assert np.all(np.isfinite(tr["wavg_dist2"]))  # 1.5**1200 overflows a float; the normalized update does not
    # geometric weights this steep: the weighted average is essentially the last iterates'
    x = tr.step_iterates[:, 0]
    assert np.sum((x[-1] - p.constants["w_star"].value) ** 2) == pytest.approx(tr["wavg_dist2"][-1, 0], rel=0.5)


def test_step_weights_are_validated():
    p = heterogeneous_least_squares(3, 2, 6, random_state=1)
    cfg = RunConfig(rounds=2, local_steps=2, lr=0.05)
    for bad, name in ((StepWeights(power=2, offset=0.0), "step_weights.offset"),
                      (StepWeights(power=-1), "step_weights.power"), (StepWeights(ratio=0), "step_weights.ratio"),
                      (StepWeights(power=1, offset=[1.0, 2.0, 3.0]), "step_weights.offset")):
        with pytest.raises(ParameterError, match=name.replace(".", r"\.")):
            simulate(p, fedavg(), cfg, [0, 1], measures=("wavg_opt_error",), step_weights=bad)
    with pytest.raises(ParameterError, match="step_weights"):
        simulate(p, fedavg(), cfg, [0], measures=("wavg_opt_error",), step_weights=(2, 1.0))
    # per-run offsets are accepted
    simulate(p, fedavg(), cfg, [0, 1], measures=("wavg_opt_error",), step_weights=StepWeights(2, [1.0, 5.0]))


def test_step_measures_cost_nothing_unless_asked(monkeypatch):
    """No step measure named: the engine builds no per-step recorder and adds no hook to the local steps."""
    import fedtheory.sim.engine as E

    def boom(*a, **k):
        raise AssertionError("the step recorder was built although no step measure was asked for")

    monkeypatch.setattr(E, "_StepAverages", boom)
    p = heterogeneous_least_squares(3, 2, 6, random_state=1)
    cfg = RunConfig(rounds=2, local_steps=2, lr=0.05)
    simulate(p, fedavg(), cfg, [0], measures=("opt_error", "V1", "visited_max_dist2"))
    with pytest.raises(AssertionError, match="step recorder"):
        simulate(p, fedavg(), cfg, [0], measures=("step_opt_error",))


def test_step_origin_counts_the_papers_t():
    """'inverse_step' with step_origin=0 and lr_offset=a is eta_t = lr/(a + t), t = 0, 1, ...: the same run as the
    default origin with lr_offset = a - 1; a zero offset at origin 0 is refused (the first step would be lr/0)."""
    p = heterogeneous_least_squares(3, 2, 6, random_state=1)
    a = 9.0
    zero = RunConfig(rounds=3, local_steps=4, lr=2.0, lr_schedule="inverse_step", lr_offset=a, step_origin=0)
    one = dataclasses.replace(zero, lr_offset=a - 1, step_origin=1)
    assert zero.lr_at_step(0, 0, np.array([2.0]))[0] == 2.0 / a
    assert zero.lr_at_step(1, 2, np.array([2.0]))[0] == 2.0 / (a + 4 + 2)
    np.testing.assert_array_equal(simulate(p, fedavg(), zero, [0], measures=()).final_w,
                                  simulate(p, fedavg(), one, [0], measures=()).final_w)
    with pytest.raises(ParameterError, match="lr_offset"):
        simulate(p, fedavg(), dataclasses.replace(zero, lr_offset=0.0), [0], measures=())
    with pytest.raises(ParameterError, match="step_origin"):
        simulate(p, fedavg(), dataclasses.replace(zero, step_origin=2), [0], measures=())


# ------------------------------------------------------------------------------------ 2. plug-in measures


class _Counter(LocalTransform):
    """A user's plug-in that leaves the step alone and declares one round measure."""

    name = "counter"

    def direction(self, rs, g, w, grad_at):
        return g

    def measures(self):
        return {"my_round_norm": "||w^{t+1}||^2"}

    def measure(self, rs):
        return {"my_round_norm": np.sum(rs.w_next ** 2, axis=1)}


class _Costly(_Counter):
    measures_on_request = True


def test_plugin_measures_are_recorded_without_naming_them():
    """Item 2: a plug-in's declared measures are recorded whenever it is part of the algorithm (as the torch trainer
    logs them); one that marks them on request only is recorded when named. (Before: a KeyError unless named.)"""
    p = heterogeneous_least_squares(3, 2, 6, random_state=1)
    cfg = RunConfig(rounds=3, local_steps=2, lr=0.05)
    tr = simulate(p, dataclasses.replace(fedavg(), local=(TrackGradients(), _Counter())), cfg, [0],
                  measures=("opt_error",), keep_iterates=True)
    assert {"visited_client_grad2", "visited_client_grad2_running", "my_round_norm"} <= set(tr.measures)
    np.testing.assert_allclose(tr["my_round_norm"][:, 0], np.sum(tr.iterates[1:, 0] ** 2, axis=1), rtol=1e-12)
    costly = dataclasses.replace(fedavg(), local=(_Costly(),))
    assert "my_round_norm" not in simulate(p, costly, cfg, [0], measures=("opt_error",)).measures
    assert "my_round_norm" in simulate(p, costly, cfg, [0], measures=("opt_error", "my_round_norm")).measures
    with pytest.raises(ParameterError, match="measures"):
        simulate(p, fedavg(), cfg, [0], measures="opt_error")  # a bare string is not a list of names


# ------------------------------------------------------------------------------------ 6. visited maxima


def test_track_gradients_gives_per_round_and_running_maxima():
    """Item 6: visited_client_grad2 is the per-round maximum, visited_client_grad2_running the running maximum over
    rounds 0..t; the engine's visited_* measures are maxima over the whole run; the catalogue and the guide say so."""
    p = heterogeneous_least_squares(4, 3, 10, random_state=2)
    cfg = RunConfig(rounds=12, local_steps=3, lr=0.3, oracle=AdditiveNoise(0.5))
    tr = simulate(p, dataclasses.replace(fedavg(), local=(TrackGradients(),)), cfg, [0, 1], measures=())
    per, run = tr["visited_client_grad2"], tr["visited_client_grad2_running"]
    np.testing.assert_array_equal(run, np.maximum.accumulate(per, axis=0))
    assert np.any(np.diff(per, axis=0) < 0)  # per-round maxima go down as the run converges; the running one cannot
    cat = measure_catalogue()
    assert cat["visited_client_grad2"]["definition"].startswith("per round")
    assert cat["visited_client_grad2_running"]["definition"].startswith("running maximum")
    assert "whole run" in cat["visited_max_dist2"]["indexing"]
    guide = " ".join((ROOT / "docs" / "extending.md").read_text().split())
    assert "running maxima over the points a run visited" not in guide  # what the guide said, wrongly
    assert "visited_client_grad2_running" in guide


# ------------------------------------------------------------------------------------ a user's plug-in (CLI items)

PLUGIN = textwrap.dedent('''
    """A user's plug-in whose K counts workers and H local steps (Stich's names), for the CLI items of issue 23."""
    import numpy as np
    from fedtheory.checks import CheckResult, assess_bound, check
    from fedtheory.sim import AdditiveNoise, RunConfig, fedavg, heterogeneous_least_squares, simulate
    from fedtheory.theory import Bound, SymbolSet, register

    S = SymbolSet("byot")
    K = S.add("K", "workers", integer=True)
    H = S.add("H", "local steps between averagings", integer=True)
    c = S.add("c", "a constant")
    THM = Bound(id="byot.thm", paper="byot", title="a bound in Stich's symbols", source="test", symbols=S,
                lhs="opt_error", lhs_kind="opt_error", expr=c * K * H / (K * H),
                quantities={"K": "clients", "H": "local_steps"})
    register(THM)
    P = heterogeneous_least_squares(4, 3, 10, random_state=0)

    @check("byot.thm", "byot", "bound", measures=("opt_error",))
    def thm(session):
        """The theorem at two schedule offsets."""
        out = []
        for a in (40.65, 10.16):  # two settings that differ only in the schedule's offset
            cfg = RunConfig(rounds=5, local_steps=8, lr=1.0, lr_schedule="inverse_step", lr_offset=a)
            tr = simulate(P, fedavg(), cfg, session.seeds(2), measures=("opt_error",))
            out.append(assess_bound(THM, [{"c": 100.0, "K": 4, "H": 8}], tr["opt_error"][-1],
                                    params={"setting": f"a={a}", "K": 4, "H": 8}))
        return out

    @check("byot.shrunk", "byot", "bound", records=("byot.thm",))
    def shrunk(session):
        """The theorem on stochastic runs, round by round."""
        cfg = RunConfig(rounds=6, local_steps=8, lr=1.0, lr_schedule="inverse_step", lr_offset=40.0,
                        oracle=AdditiveNoise(0.01))  # stochastic runs: the rounds are decided by statistics
        tr = simulate(P, fedavg(), cfg, session.seeds(4), measures=("opt_error",))
        lhs = tr["opt_error"][1:]
        T = np.arange(1, 7) * 8
        per_round = lambda v: (lhs, np.broadcast_to(THM.evaluate(v), lhs.shape))
        return [assess_bound(THM, [{"c": 1e-9, "K": 4, "H": 8}], per_round, per_round=True, rounds=T, check_id="byot.shrunk",
                             round_name="T", params={"setting": "c=1e-9", "K": 4, "H": 8})]

    def holds(cid):
        def row(session):
            """One row that holds (ids to select with --only)."""
            return [CheckResult(cid, "byot", "bound", "holds", measured=1.0, bound=2.0, ratio=2.0)]
        return row

    for cid in ("byot.thm2", "byot.thm2_2", "byot.thm2.rate"):
        check(cid, "byot", "bound", records=("byot.thm",))(holds(cid))
''')  # noqa: E501 - the text of the code it writes, kept as it runs


def _cli(*args, cwd=None, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def byot(tmp_path_factory):
    d = tmp_path_factory.mktemp("plug")
    (d / "byot_plugin.py").write_text(PLUGIN)
    return d


# ------------------------------------------------------------------------------------ 3. the paper's symbols


def test_records_map_the_papers_symbols_once_and_validate_it():
    S = SymbolSet("q3")
    K = S.add("K", "workers", integer=True)
    make = lambda q: Bound(id="q3.b", paper="q3", title="", source="", symbols=S, expr=1 / K, quantities=q)
    assert make({"K": "clients", "t": "step_index: t = 0, 1, ..."}).paper_names() == {"clients": "K", "step_index": "t"}
    with pytest.raises(FedTheoryError, match="one of clients, clients_per_round, local_steps"):
        make({"K": "workers"})
    with pytest.raises(FedTheoryError, match="both 'K' and 'N'"):
        make({"K": "clients", "N": "clients"})


def test_every_output_speaks_in_the_papers_symbols(byot, tmp_path):
    """Item 3 (explain, explain --run, the check table, the report) and item 4 (explain --run keeps settings apart:
    before, a = 40.65 and a = 10.16 were one line, and 'K = 8' stood for the paper's H)."""
    out = _cli("explain", "byot.thm", "--plugin", str(byot / "byot_plugin.py"), "--run")
    assert out.returncode == 0, out.stderr
    assert "K -> clients" in out.stdout and "H -> local_steps" in out.stdout
    sims = [ln for ln in out.stdout.splitlines() if ln.startswith("  byot.thm: FedAvg")]
    assert len(sims) == 2, out.stdout
    assert all("H = 8 local steps per round, K = 4 clients (all take part)" in ln for ln in sims)
    assert any("lr_offset = 40.6" in ln for ln in sims) and any("lr_offset = 10.2" in ln for ln in sims)
    assert "K = 8" not in out.stdout
    res = tmp_path / "r.json"
    out = _cli("check", "--plugin", str(byot / "byot_plugin.py"), "--only", "byot.thm", "--out", str(res))
    assert out.returncode == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith("byot.thm ")]
    assert len(rows) == 2 and all("K=4 H=8" in ln for ln in rows), out.stdout
    html = tmp_path / "r.html"
    assert _cli("report", str(res), "--out", str(html)).returncode == 0
    assert "K=4 (clients) H=8 (local steps)" in html.read_text()


# ------------------------------------------------------------------------------------ 4. settings kept apart


def test_simulation_summaries_of_different_settings_are_not_merged():
    p = heterogeneous_least_squares(3, 2, 6, random_state=1)
    with record_simulations() as sims:
        for a in (40.65, 10.16, 40.65):
            simulate(p, fedavg(), RunConfig(rounds=2, local_steps=2, lr=1.0, lr_schedule="inverse_step", lr_offset=a),
                     [0], measures=("opt_error",))
        simulate(p, fedavg(), RunConfig(rounds=2, local_steps=2, lr=0.1, oracle=AdditiveNoise(0.1)), [0], measures=())
        simulate(p, fedavg(), RunConfig(rounds=2, local_steps=2, lr=0.1, oracle=AdditiveNoise(0.2)), [0], measures=())
        simulate(p, fedinit(0.1), RunConfig(rounds=2, local_steps=2, lr=0.1), [0], measures=())
        simulate(p, fedinit(0.2), RunConfig(rounds=2, local_steps=2, lr=0.1), [0], measures=())
    merged = summarize_simulations(sims)
    assert len(merged) == 6 and merged[0]["runs"] == 2 and merged[0]["calls"] == 2
    assert [m["schedule"].get("lr_offset") for m in merged[:2]] == [40.65, 10.16]


# ------------------------------------------------------------------------------------ 5. identical data, shapes


def test_identical_clients_are_a_problem_notion_and_shapes_are_documented():
    doc = LeastSquaresProblem.__doc__
    assert "(C, S, d)" in doc and "(C, S)" in doc and "(V, C, S, d)" in doc
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 3)), rng.standard_normal(30)
    p = LeastSquaresProblem.identical(X, y, 5)
    assert p.identical_clients and p.n_clients == 5
    assert p.constants["Gamma"].value == 0.0 and p.constants["B_min"].value == 1.0
    assert p.heterogeneity_G2(1.0).value == 0.0
    q = identical_least_squares(4, 3, 20)
    assert q.identical_clients and q.population_loss(q.initial_point(0)[None]).shape == (1,)
    assert not heterogeneous_least_squares(4, 3, 20).identical_clients
    with pytest.raises(ParameterError, match="X"):
        LeastSquaresProblem.identical(X[None], y, 5)


# ------------------------------------------------------------------------------------ 7. failing rounds printed


def test_per_round_violated_and_inconclusive_rows_print_their_rounds_and_threshold(byot):
    out = _cli("check", "--plugin", str(byot / "byot_plugin.py"), "--only", "byot.shrunk")
    assert out.returncode == 1, out.stderr
    assert "violated at 6 of 6 compared rounds (T = 8, 16, 24, 32, 40, 48)" in " ".join(out.stdout.split())
    assert "alpha/m = " in out.stdout and "standard errors" in out.stdout
    # inconclusive: below the bound on average at some rounds, none significant after the correction
    S = SymbolSet("q7")
    c = S.add("c", "a constant")
    b = Bound(id="q7.b", paper="q7", title="", source="", symbols=S, expr=c, lhs_kind="none")
    rng = np.random.default_rng(1)
    lhs = 1.0 + 0.05 * rng.standard_normal((5, 6))
    row = assess_bound(b, [{"c": 1.0}], lambda v: (lhs, np.full_like(lhs, 1.0)), per_round=True,
                       rounds=[10, 20, 30, 40, 50], round_name="T")
    assert row.verdict == "inconclusive"
    text = " ".join(format_table([row], width=200).split())
    assert "compared rounds (T = " in text and "none significantly" in text and "alpha/m = " in text


# ------------------------------------------------------------------------------------ 8. --only patterns


def test_only_accepts_globs_and_says_what_matches(byot):
    plug = str(byot / "byot_plugin.py")

    def ids(*only):
        out = _cli("list", "--checks", "--plugin", plug, "--format", "json")
        assert out.returncode == 0, out.stderr
        return sorted(c for c in (r["id"] for r in json.loads(out.stdout)) if any(id_matches(o, c) for o in only))

    assert ids("byot.thm2") == ["byot.thm2", "byot.thm2.rate"]  # whole dotted parts
    assert ids("byot.thm2*") == ["byot.thm2", "byot.thm2.rate", "byot.thm2_2"]
    assert ids("byot.thm?_2") == ["byot.thm2_2"]
    out = _cli("check", "--plugin", plug, "--only", "byot.thm2*", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert sorted(r["id"] for r in json.loads(out.stdout)["results"]) == ["byot.thm2", "byot.thm2.rate", "byot.thm2_2"]
    out = _cli("check", "--plugin", plug, "--only", "byot.thm2_")
    assert out.returncode == 2 and "'byot.thm2_*' would select it" in out.stderr and "Traceback" not in out.stderr
    assert "glob pattern" in _cli("check", "--help").stdout


# ------------------------------------------------------------------------------------ 9. missing symbols named


def test_evaluate_names_the_missing_symbols():
    S = SymbolSet("q9")
    syms = [S.add(n, "x") for n in "a b c d e f g h i j k l".split()]
    b = Bound(id="q9.b", paper="q9", title="", source="", symbols=S, expr=sum(syms))
    given = {n: 1.0 for n in "a c d e f g h i j k l".split()}  # 11 names: the list used to print as array(shape=(11,))
    with pytest.raises(ParameterError, match=r"^values lacks b: q9\.b needs a, b, c") as e:
        b.evaluate(given)
    assert "array(shape" not in str(e.value) and "given: a, c, d" in str(e.value)
    with pytest.raises(ParameterError, match="mapping"):
        b.evaluate(np.ones(11))


# ------------------------------------------------------------------------------------ 10. worst case for a plug-in


def test_check_worst_case_writes_where_it_is_told(tmp_path):
    li = str(ROOT / "examples" / "li2020_fedavg" / "src" / "li2020_fedavg")
    out = _cli("check", "--plugin", li, "--only", "li2020.thm1", "--worst-case", "--worst-budget", "32",
               "--worst-dir", "found/here", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "found" / "here" / "li2020.thm1.json").is_file()
    assert not (tmp_path / "worst_instances").exists()
    assert "replay: fedtheory worst --replay found/here/li2020.thm1.json" in out.stdout
    bad = _cli("check", "--plugin", li, "--only", "li2020.thm1", "--worst-case", "--worst-budget", "8", cwd=tmp_path)
    assert bad.returncode == 2 and "--worst-budget=8" in bad.stderr
    alone = _cli("check", "--plugin", li, "--only", "li2020.thm1.rate", "--worst-dir", "x", cwd=tmp_path)
    assert alone.returncode == 2 and "--worst-dir='x' is invalid" in alone.stderr and "--worst-case" in alone.stderr
    guide = (ROOT / "docs" / "extending.md").read_text()
    assert "## 7. Worst case" in guide and "register_worst_case" in guide and "--worst-dir" in guide


def test_the_guides_worst_case_declaration_runs(tmp_path):
    """Item 10: the declaration the guide's worst-case section shows is an excerpt of the example plug-in's worst.py
    (tests/test_docs_run.py holds it line by line); that declaration, loaded as a plug-in, runs: the search finds an
    instance inside the class and writes it for --replay."""
    guide = (ROOT / "docs" / "extending.md").read_text()
    section = guide[guide.index("## 7. Worst case"):guide.index("## 8. ")]
    quoted = re.findall(r'```python title="excerpt: ([^"]*)"\n', section)
    assert "examples/li2020_fedavg/src/li2020_fedavg/worst.py" in quoted
    script = textwrap.dedent(f"""
        import json
        from fedtheory.plugins import load_plugin
        load_plugin({str(ROOT / "examples" / "li2020_fedavg" / "src" / "li2020_fedavg")!r})
        from fedtheory.worst import run_worst
        rec = run_worst("li2020.thm1", sets={{"L": 1.0, "mu": 0.25, "rounds": 10, "runs": 2}}, use_reference=False,
                        budget=32, final_seeds=4, instance_path={str(tmp_path / "g.json")!r})
        print(json.dumps({{"verdict": rec["verdict"], "slack": rec["slack"], "evaluations": rec["evaluations"]}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert rec["verdict"] == "holds" and rec["slack"] >= 1 and rec["evaluations"] == 32
    assert (tmp_path / "g.json").is_file()


# ------------------------------------------------------------------------------------ 11. B_min within rounding


def test_b_min_within_rounding_of_one_is_one():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((40, 4)), rng.standard_normal(40)
    p = LeastSquaresProblem.identical(X, y, 3)
    assert p.constants["B_min"].value == 1.0  # was 1.000000000000001, and then G^2(1) = inf
    q = QuadraticClass(3, 4, L=2.0, mu=0.5, B=1.0, G2=0.0, dist2=1.0)
    inst = q.decode(q.random(4, rng))
    assert np.all(inst.constants(1.0)["B_min"] == 1.0) and np.all(inst.constants(1.0)["G2"] == 0.0)
    assert q.violations(inst) == [[], [], [], []]  # was ['G^2(1.0) = inf > 0.0'] for every instance
    # a genuinely heterogeneous problem keeps its B_min > 1 and an infinite G^2 below it
    h = heterogeneous_least_squares(5, 4, 20)
    bm = h.constants["B_min"].value
    assert bm > 1.5 and h.heterogeneity_G2(0.99 * bm).value == np.inf
    assert np.isfinite(h.heterogeneity_G2(1.01 * bm).value)


# ------------------------------------------------------------------------------------ 12. reproduce from anywhere


def test_report_reproduce_lines_work_from_anywhere(byot, tmp_path):
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir(), elsewhere.mkdir()
    (work / "plug").mkdir()
    (work / "plug" / "byot_plugin.py").write_text(PLUGIN)
    out = _cli("check", "--plugin", "plug/byot_plugin.py", "--only", "byot.thm2", "--out", "r.json", cwd=work)
    assert out.returncode == 0, out.stderr
    payload = json.loads((work / "r.json").read_text())
    assert payload["plugins"] == [str(work / "plug" / "byot_plugin.py")]
    assert payload["plugins_given"][0]["as"] == "absolute path, not installed"
    assert _cli("report", "r.json", "--out", "r.html", cwd=work).returncode == 0
    html = (work / "r.html").read_text()
    cmds = set(re.findall(r"reproduce: <code>(.*?)</code>", html))
    assert cmds and all(str(work / "plug" / "byot_plugin.py") in c for c in cmds)
    args = shlex.split(next(iter(cmds)).replace("&#39;", "'"))
    rerun = _cli(*args[1:], cwd=elsewhere)  # from another folder
    assert rerun.returncode == 0 and "byot.thm2" in rerun.stdout, rerun.stderr
    assert "absolute path, not installed" in html
    # installed (importable without the current folder): the module name
    out = _cli("check", "--plugin", "plug/byot_plugin.py", "--only", "byot.thm2", "--out", "s.json", cwd=work,
               env_extra={"PYTHONPATH": os.pathsep.join([str(work / "plug"), os.environ.get("PYTHONPATH", "")])})
    assert out.returncode == 0, out.stderr
    payload = json.loads((work / "s.json").read_text())
    assert payload["plugins"] == ["byot_plugin"] and payload["plugins_given"][0]["as"] == "module name, installed"


def test_global_loss_and_grad_agree_with_the_clients_route():
    """The step measures evaluate f and grad f by the problem's cheapest exact route (least squares: the mean
    Hessian); it agrees with the clients' mean, one variant or several."""
    p = heterogeneous_least_squares(5, 4, 12, random_state=3).neighbours([(0, 1), (2, 3)])
    w = np.random.default_rng(0).standard_normal((6, 4))
    for v in (np.zeros(6, dtype=np.int64), np.array([0, 1, 2, 0, 1, 2])):
        np.testing.assert_allclose(p.global_loss(w, v), p.loss(w, v), rtol=1e-12)
        np.testing.assert_allclose(p.global_grad(w, v), p.grad(w, v), rtol=1e-12, atol=1e-14)
