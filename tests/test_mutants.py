"""The mutation score (fedtheory.checks.mutants, `fedtheory check --mutants`): mutants are generated from the
expression, run through the record's own checks, killed by the layer that can tell, and every survivor is explained
from measurements."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sympy as sp

from fedtheory.checks import Session
from fedtheory.checks.mutants import format_mutation_table, mutants_of, mutation_payload, score_record
from fedtheory.theory import Bound, Order, SymbolSet
from fedtheory.theory.core import stand_ins

PLUGIN = textwrap.dedent('''
    """A deterministic toy statement: gap(T) = c / T exactly, bound (2 c) / T (twice the measurement), and a tight
    statement bound c / T, each decided at T = 1..8 by assess_bound."""
    import numpy as np
    import sympy as sp
    from fedtheory.checks import assess_bound, check
    from fedtheory.theory import Bound, Order, SymbolSet, register

    S = SymbolSet("mutoy", strict=True)
    c = S.add("c", "the scale of the gap", dim="f")
    T = S.add("T", "rounds", integer=True, dim="1")
    eta = S.add("eta", "a step size", dim="w^2/f")
    L = S.add("L", "smoothness", dim="f/w^2")
    LOOSE = register(Bound(id="mutoy.loose", paper="mutoy", title="twice the gap", source="test", symbols=S,
                           expr=2 * c / T + eta * L * c / T ** 2, lhs="opt_error", lhs_kind="none",
                           order=Order(expr=1 / T, variable=T, source="test")))
    TIGHT = register(Bound(id="mutoy.tight", paper="mutoy", title="the gap", source="test", symbols=S,
                           expr=c / T, lhs="opt_error", lhs_kind="none"))
    VALUES = {"c": 3.0, "eta": 0.01, "L": 1.0}

    def rows(rec):
        Ts = np.arange(1.0, 9.0)
        lhs = np.tile((VALUES["c"] / Ts)[:, None], (1, 4))  # four identical runs: deterministic
        per_round = lambda v: (lhs, np.broadcast_to(rec.evaluate({**v, "T": Ts[:, None]}), lhs.shape))
        return [assess_bound(rec, [VALUES], per_round, per_round=True, rounds=Ts, round_name="T", problem="toy")]

    @check("mutoy.loose", "mutoy", "bound", records=("mutoy.loose",))
    def loose(session):
        """The loose toy bound."""
        return rows(LOOSE)

    @check("mutoy.tight", "mutoy", "bound", records=("mutoy.tight",))
    def tight(session):
        """The tight toy bound."""
        return rows(TIGHT)
''')


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from fedtheory.plugins import load_plugin

    path = tmp_path_factory.mktemp("mutoy") / "mutoy_plugin.py"
    path.write_text(PLUGIN)
    load_plugin(str(path))
    from fedtheory.checks.registry import all_checks
    from fedtheory.plugins import record

    specs = all_checks()
    return {"loose": (record("mutoy.loose"), [specs["mutoy.loose"]]),
            "tight": (record("mutoy.tight"), [specs["mutoy.tight"]]), "path": path}


WORST_PLUGIN = textwrap.dedent('''
    """A deterministic toy statement with a worst-case declaration: one gradient step (step 1/L) on a 1-d quadratic
    of curvature lambda in (0, L], ||w0 - w*||^2 = R2; f(w1) - f* = (lambda/2)(1 - lambda/L)^2 R2, at most
    2 L R2 / 27 (lambda = L/3). Bound: L R2 / (2 N), 27/4 = 6.75 times the worst case at N = 1. The check's row
    measures an easy instance (a thousandth of the bound): no stronger mutant by 1/10 is reported there."""
    import numpy as np
    from fedtheory.checks import assess_bound, check
    from fedtheory.sim import Exact, RunConfig, fedavg
    from fedtheory.theory import Bound, SymbolSet, register
    from fedtheory.worst import QuadraticClass, WorstCaseSpec, register_worst_case

    S = SymbolSet("mutoyw", strict=True)
    L = S.add("L", "smoothness", dim="f/w^2")
    R2 = S.add("R2", "initial distance squared", dim="w^2")
    N = S.add("N", "steps", integer=True, dim="1")
    B = register(Bound(id="mutoyw.gd", paper="mutoyw", title="one gradient step", source="test", symbols=S,
                       expr=L * R2 / (2 * N), lhs="opt_error", lhs_kind="none"))
    VALUES = {"L": 1.0, "R2": 1.0, "N": 1}

    @check("mutoyw.gd", "mutoyw", "bound", records=("mutoyw.gd",))
    def easy(session):
        """One gradient step against its bound."""
        lhs = np.full(4, 1e-3 * float(B.evaluate(VALUES)))  # four identical runs: deterministic
        return [assess_bound(B, [VALUES], lhs, problem="easy")]

    def make(record_id="mutoyw.gd", *, L: float = 1.0, R2: float = 1.0):
        space = QuadraticClass(1, 1, L=L, mu=1e-6 * L, client_mu=1e-6 * L, dist2=R2)
        config = RunConfig(rounds=1, local_steps=1, lr=1.0 / L, oracle=Exact())

        def measure(tr, inst, which):
            return inst.loss(tr.final_w, which) - inst.f_star[which]

        return WorstCaseSpec(record_id, space, fedavg(), config, measure, lambda inst, tr, which: {"L": L, "R2": R2, "N": 1},
                             seeds=(0,), params={"record_id": record_id, "L": L, "R2": R2})

    register_worst_case("mutoyw.gd", make, description="one gradient step on 1-d quadratics")
''')  # noqa: E501 - the text of the code it writes, kept as it runs


@pytest.fixture(scope="module")
def toy_worst(tmp_path_factory):
    from fedtheory.plugins import load_plugin

    path = tmp_path_factory.mktemp("mutoyw") / "mutoyw_plugin.py"
    path.write_text(WORST_PLUGIN)
    load_plugin(str(path))
    from fedtheory.checks.registry import all_checks
    from fedtheory.plugins import record

    return record("mutoyw.gd"), [all_checks()["mutoyw.gd"]]


def test_the_worst_case_layer_kills_what_the_simulation_rows_miss(toy_worst):
    from fedtheory.worst.mutants import WorstCaseLayer

    rec, specs = toy_worst
    without = {o.mutant.description: o for o in score_record(rec, specs, Session()).outcomes}
    score = score_record(rec, specs, Session(), layers=[WorstCaseLayer(budget=64)])
    by = {o.mutant.description: o for o in score.outcomes}
    tenth, half = by["the whole bound x 1/10"], by["the whole bound x 1/2"]
    # the check's easy instance leaves both alive; the worst case (ratio ~ 4/27 of the bound) kills the tenth only
    assert without["the whole bound x 1/10"].status == "survived"
    assert tenth.status == "killed" and tenth.layer == "worst-case" and "worst-case instance" in tenth.rows[0]
    assert half.status == "survived" and "worst-case: the search's tightest kept instance has measured/bound" \
        in half.reason
    assert score.by_layer()["worst-case"] >= 1 and "worst-case" in score.note
    table = format_mutation_table([score])
    assert "worst-case" in table.splitlines()[0] and f"worst-case {score.by_layer()['worst-case']}," in table
    payload = mutation_payload([score])
    assert payload["overall"]["killed_by"]["worst-case"] == score.by_layer()["worst-case"]
    assert payload["records"][0]["killed_by"]["worst-case"] >= 1


def test_a_mutant_is_decided_on_the_searchs_own_runs(toy_worst):
    """rebound: the same runs and left side, another record's right side; the statement itself gives back its own
    evaluation, a mutant at half the bound half of it."""
    from fedtheory.worst.mutants import WorstCaseLayer
    from fedtheory.worst.search import rebound

    rec, _ = toy_worst
    prepared = WorstCaseLayer(budget=32, finalists=2).prepare(rec)
    assert prepared is not None and prepared.decides and len(prepared.kept) == 2
    (half,) = [m for m in mutants_of(rec) if m.description == "the whole bound x 1/2"]
    for _, ev in prepared.kept:
        same, halved = rebound(prepared.spec, ev, rec), rebound(prepared.spec, ev, half.record)
        np.testing.assert_array_equal(same.bound_all, ev.bound_all)
        np.testing.assert_array_equal(same.lhs_all, ev.lhs_all)
        np.testing.assert_allclose(halved.bound_all, ev.bound_all / 2, rtol=1e-15)
    assert prepared.decide(half) is None  # 4/27 of the bound at worst: half the bound still holds


def test_the_worst_case_layer_is_absent_without_a_declaration(toy):
    from fedtheory.worst.mutants import WorstCaseLayer

    rec, specs = toy["loose"]
    assert WorstCaseLayer(budget=32).prepare(rec) is None
    score = score_record(rec, specs, Session(), layers=[WorstCaseLayer(budget=32)])
    assert score.by_layer()["worst-case"] == 0 and "worst-case" not in score.note
    plain = score_record(rec, specs, Session())
    assert [(o.status, o.layer) for o in score.outcomes] == [(o.status, o.layer) for o in plain.outcomes]


def test_the_mutants_of_a_bound_cover_every_kind():
    S = SymbolSet("mutgen", strict=True)
    c, T, eta = S.add("c", "c", dim="f"), S.add("T", "T", integer=True, dim="1"), S.add("eta", "eta", dim="w^2/f")
    L, D = S.add("L", "L", dim="f/w^2"), S.add("D", "D", dim="f")
    rec = Bound(id="mutgen.b", paper="mutgen", title="b", source="s", symbols=S, expr=4 * c / T + eta * L * D,
                lhs="opt_error", order=Order(expr=1 / T, variable=T, source="s"))
    ms = mutants_of(rec)
    kinds = {m.kind for m in ms}
    assert kinds == {"scale", "coefficient", "term", "exponent", "swap", "order"}
    exprs = {m.description: sp.sympify(m.record.expr) for m in ms if m.kind != "order"}
    assert exprs["the whole bound x 1/2"] == (4 * c / T + eta * L * D) / 2
    assert any(sp.simplify(e - 4 * c / T) == 0 for k, e in exprs.items() if k.startswith("the term"))
    assert any(sp.simplify(e - (4 * c / T + eta * L * D) * T ** sp.Rational(1, 2)) == 0 for e in exprs.values())
    assert sp.simplify(exprs["c replaced by D"] - (4 * D / T + eta * L * D)) == 0
    assert all(m.record.id == rec.id for m in ms)  # a mutant stands in under the record's id
    faster = [m for m in ms if m.kind == "order"]
    assert [sp.simplify(m.record.order.expr - T ** -sp.Rational(3, 2)) == 0 for m in faster][0]


def test_a_mutant_stands_in_for_the_record_where_checks_evaluate_it():
    S = SymbolSet("mutstand", strict=True)
    c = S.add("c", "c", dim="f")
    rec = Bound(id="mutstand.b", paper="mutstand", title="b", source="s", symbols=S, expr=2 * c, lhs="opt_error")
    (half,) = [m for m in mutants_of(rec) if m.description == "the whole bound x 1/2"]
    assert float(rec.evaluate({"c": 1.0})) == 2.0
    with stand_ins({rec.id: half.record}):
        assert float(rec.evaluate({"c": 1.0})) == 1.0
    assert float(rec.evaluate({"c": 1.0})) == 2.0


def test_killed_by_simulation_rate_and_units_and_survivors_explained(toy):
    rec, specs = toy["loose"]
    score = score_record(rec, specs, Session())
    by = {o.mutant.description: o for o in score.outcomes}
    # the bound is 2 + eta L / T times the measurement: halving it leaves it above (a survivor, with its slack), a
    # tenth breaks it
    half = by["the whole bound x 1/2"]
    assert half.status == "survived" and "looser than the mutation" in half.reason and "2" in half.reason
    assert by["the whole bound x 1/10"].status == "killed" and by["the whole bound x 1/10"].layer == "simulation"
    # one power of T faster, stated: the explicit bound misses it
    faster = [o for o in score.outcomes if o.mutant.kind == "order" and "1 power" in o.mutant.description][0]
    assert faster.status == "killed" and faster.layer == "rate"
    # the step size's exponent moved: eta^2 L c / T^2 has the dimension of f w^2/f... not the left side's
    units = [o for o in score.outcomes if o.mutant.kind == "exponent" and "eta" in o.mutant.description]
    assert units and all(o.status == "killed" and o.layer == "units" for o in units)
    # the small term eta L c / T^2 dropped: stronger, but the bound keeps its factor 2: a survivor, explained
    drop = [o for o in score.outcomes if o.mutant.description.startswith("the term L*c*eta/T**2 dropped")
            or o.mutant.description.startswith("the term c*eta*L/T**2 dropped")
            or (o.mutant.kind == "term" and "eta" in o.mutant.description)]
    assert drop and all(o.status == "survived" and "looser than the mutation" in o.reason for o in drop)
    assert score.score is not None and 0 < score.score < 1


def test_a_tight_statement_kills_every_stronger_mutant(toy):
    rec, specs = toy["tight"]
    score = score_record(rec, specs, Session())
    stronger = [o for o in score.outcomes if o.status in ("killed", "survived")]
    assert stronger and all(o.status == "killed" for o in stronger)
    assert score.score == 1.0


def test_check_mutants_from_the_command_line(toy, tmp_path):
    out = tmp_path / "m.json"
    run = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--mutants", "--plugin", str(toy["path"]),
                          "--only", "mutoy", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "mutation score" in run.stdout and "mutoy.loose" in run.stdout
    payload = json.loads(out.read_text())
    assert payload["overall"]["records"] == 2 and payload["overall"]["killed"] > 0
    assert {r["record"] for r in payload["records"]} == {"mutoy.loose", "mutoy.tight"}
    assert payload["overall"]["killed_by"]["worst-case"] == 0  # the layer is there, absent for these records
    bad = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--mutants", "--plugin", str(toy["path"]),
                          "--only", "mutoy", "--worst-budget", "8"], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--worst-budget=8" in bad.stderr


def test_rows_a_check_labels_alike_pair_up_in_order():
    """yuan2016.thm3's check labels its two settings alike (k = 1..120: one inside the step condition, one outside).
    The statement's holding row must not be overwritten by its not-applicable twin: its mutants are decided, not
    'undecided' as though no row held."""
    from fedtheory.checks.mutants import run_mutants

    (score,) = run_mutants(only=["yuan2016.thm3"])
    assert score.count("undecided") == 0
    assert score.count("survived") + score.count("killed") > 0
    assert all("the statement's bound is" in o.reason for o in score.outcomes if o.status == "survived")


def test_a_long_sum_costs_a_bounded_number_of_mutants(monkeypatch):
    """A bound of 300 terms: each kind is generated lazily and cut at MAX_PER_KIND, so the mutants built (each a copy
    of the whole expression) are bounded, not one per term (a 3,000-term bound took over 300 s before, 3.6 s now)."""
    import fedtheory.checks.mutants as M

    S = SymbolSet("longsumdemo")
    T = S.add("T", "rounds", sp.Interval(1, sp.oo), integer=True, dim="1")
    xs = [S.add(f"a{i}", "a constant", sp.Interval.open(0, sp.oo), dim="f") for i in range(300)]
    b = Bound("longsumdemo.b", "longsumdemo", "b", "src", lhs="opt_error", expr=sp.Add(*[x / T for x in xs]), symbols=S)
    built = []
    real = M._with_expr
    monkeypatch.setattr(M, "_with_expr", lambda r, e: built.append(1) or real(r, e))
    ms = mutants_of(b)
    assert len(ms) <= 5 * M.MAX_PER_KIND + 2 and len(built) <= 5 * M.MAX_PER_KIND


def test_a_statement_evaluated_on_no_run_leaves_its_mutants_undecided_not_weaker():
    """FedInit's poster stability bound is compared symbolically with eq. (14), never evaluated on a run: no instance
    can show a mutant weaker, so its mutants are 'undecided' (they were all discarded as 'weaker'), and an exponent
    mutant of a consistent statement is still killed by the units layer (FedShift's eq. (20))."""
    from fedtheory.checks.mutants import run_mutants

    poster, eq20 = run_mutants(only=["fedinit.poster.thm3", "fedshift.thm1.eq20"])
    assert poster.count("weaker") == 0 and poster.count("undecided") == len(poster.outcomes)
    assert eq20.count("weaker") == 0 and eq20.by_layer()["units"] > 0
    assert all("no check evaluates the statement on a run" in o.reason for o in poster.outcomes)


def test_a_faster_order_of_an_order_already_reported_is_undecided():
    """FedMRUR's eq. (8) is reported rate-inconsistent; a mutant that states it faster cannot be told apart by the
    rate layer, and no simulation row reads a stated order: 'undecided', never 'survived' with a bound's slack."""
    from fedtheory.checks import Session
    from fedtheory.checks.mutants import mutants_of, score_record
    from fedtheory.plugins import records

    rec = records()["fedmrur.thm1"]
    orders = [m for m in mutants_of(rec) if m.kind == "order"]
    score = score_record(rec, (), Session("quick", 0), mutants=orders)
    assert [o.status for o in score.outcomes] == ["undecided", "undecided"]
    assert all("rate_inconsistent" in o.reason for o in score.outcomes)


BIG_BOUND = '''
import sympy as sp
from fedtheory.theory import Bound, SymbolSet, register, register_paper
register_paper("bigb")
S = SymbolSet("bigb", strict=True)
D = S.add("D", "gap", sp.Interval(0, sp.oo), dim="f")
T = S.add("T", "rounds", integer=True, dim="1")
register(Bound(id="bigb.b", paper="bigb", title="a bound of 5,000 terms", source="test", symbols=S, assumptions=(),
               lhs="opt_error", lhs_description="x", expr=sp.Add(*[D / (T + k) ** 2 for k in range(1, 5001)])))
'''


def test_a_bound_of_5000_terms_evaluates_and_its_mutants_end(tmp_path):
    """Before: a plug-in bound of 5,000 terms could not be evaluated (lambdify's generated line exceeded Python's
    compiler depth: RecursionError) and `check --mutants` on it ran over 180 s (the equivalence test evaluated each
    mutant in exact rationals, minutes a point). Now the bound evaluates to its sum and the mutation run ends
    (about 20 s on two loaded cores; the subprocess limit only guards against a hang)."""
    import subprocess
    import sys

    plugin = tmp_path / "bigb.py"
    plugin.write_text(BIG_BOUND)
    exec(BIG_BOUND.replace('"bigb"', '"bigb_eval"').replace('"bigb.b"', '"bigb_eval.b"'), {})  # here, another name
    from fedtheory.theory.core import get

    value = get("bigb_eval.b").evaluate({"D": 1.5, "T": 3})
    assert abs(float(value) - 1.5 * sum(1 / (3 + k) ** 2 for k in range(1, 5001))) < 1e-12
    out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "check", "--plugin", str(plugin), "--only", "bigb",
                          "--mutants", "--format", "json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    import json

    scores = json.loads(out.stdout)
    assert scores["overall"]["mutants"] > 0


def _is_words(cell: str) -> bool:
    """A table header made of words: each token letters (or a hyphenated word), at least three letters unless an
    English function word (no 's' for seconds, no 'equiv.', no 'id')."""
    import re

    small = {"a", "an", "by", "it", "of", "on", "or", "to", "in"}
    tokens = [t.strip(",():") for t in cell.split()]
    return bool(tokens) and all(re.fullmatch(r"[A-Za-z]+(-[A-Za-z]+)*", t) and (len(t) >= 3 or t in small)
                                for t in tokens)


def test_mutant_descriptions_name_the_term_not_a_tree_path():
    """issue 47: 'the coefficient 2 of the term 2/(T*eta), x 1/2', not 'the coefficient 2 at 2.0.0 x 1/2'."""
    import re

    S = SymbolSet("mutdesc", strict=True)
    c, T, eta = S.add("c", "c", dim="f"), S.add("T", "T", integer=True, dim="1"), S.add("eta", "eta", dim="w^2/f")
    D = S.add("D", "D", dim="w^2")
    expr = 2 * D / (eta * T) + 3 * c / (T + 2)
    rec = Bound(id="mutdesc.b", paper="mutdesc", title="b", source="s", symbols=S, expr=expr, lhs="opt_error")
    ms = mutants_of(rec)
    texts = [m.description for m in ms]
    assert not [t for t in texts if re.search(r"\bat \d+(\.\d+)+", t)]
    by = {m.description: m for m in ms}
    two = by["the coefficient 2 of the term 2*D/(T*eta), x 1/2"]
    assert sp.simplify(sp.sympify(two.record.expr) - (D / (eta * T) + 3 * c / (T + 2))) == 0
    assert "the coefficient 3 of the term 3*c/(T + 2), x 1/10" in by
    plus = by["the constant term 2 of T + 2, x 1/2"]
    assert sp.simplify(sp.sympify(plus.record.expr) - (2 * D / (eta * T) + 3 * c / (T + 1))) == 0
    assert "the term 2*D/(T*eta), x 1/2" in by  # a term scaled
    lone = Bound(id="mutdesc.one", paper="mutdesc", title="b", source="s", symbols=S, expr=2 * c / T, lhs="opt_error")
    assert "the coefficient 2 of the bound 2*c/T, x 1/2" in {m.description for m in mutants_of(lone)}
    # the same number twice in one term: told apart by its order
    twice = Bound(id="mutdesc.twice", paper="mutdesc", title="b", source="s", symbols=S,
                  expr=c * (2 * T + 2 * T ** 2) / T ** 3 + c, lhs="opt_error")
    coef = [m.description for m in mutants_of(twice) if m.kind == "coefficient"]
    assert len(coef) == len(set(coef))


def test_the_mutation_table_headers_are_words(toy):
    rec, specs = toy["loose"]
    table = format_mutation_table([score_record(rec, specs, Session())])
    header = [c.strip() for c in table.splitlines()[0].split("  ") if c.strip()]
    assert header[:5] == ["record", "mutants", "weaker", "equivalent", "undecided"]
    assert "killed by simulation" in header and header[-1] == "seconds"
    assert all(_is_words(c) for c in header), header
