"""Theory records: lambdified values equal sympy's, domains and conditions, rate checks, claims."""
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st

from fedtheory._validation import ParameterError
from fedtheory.papers.fedinit import records as F
from fedtheory.plugins import records
from fedtheory.theory import Bound, Order, OrderStatement, SymbolSet
from fedtheory.theory.core import get
from fedtheory.theory.rates import check_order


def _random_values(bound: Bound, rng):
    vals = {}
    for name in bound.parameters():
        info = bound.symbols.info[name]
        lo = float(info.domain.inf)
        if name == "lam":
            vals[name] = rng.uniform(0.1, 0.9)
        elif name == "beta":
            vals[name] = rng.uniform(0.0, 0.09)
        elif name in ("N", "C", "K", "T", "S") or info.symbol.is_integer:
            vals[name] = float(rng.integers(2, 30))
        elif float(info.domain.sup) < float("inf"):  # a bounded domain, e.g. a momentum coefficient in (0, 1]
            vals[name] = rng.uniform(max(lo, 0.0), float(info.domain.sup)) or float(info.domain.sup)
        else:
            vals[name] = max(lo, 0.0) + rng.uniform(0.05, 2.0)
    return vals


BOUNDS = [r for r in records().values() if isinstance(r, Bound)]


@pytest.mark.parametrize("bound", BOUNDS, ids=[b.id for b in BOUNDS])
@given(seed=st.integers(0, 2**31))
def test_lambdify_equals_sympy(bound, seed):
    vals = _random_values(bound, np.random.default_rng(seed))
    num = float(bound.evaluate(vals))
    exact = bound.expanded().subs({bound.symbols.info[k].symbol: sp.Float(v, 30) for k, v in vals.items()})
    ref = float(sp.N(exact, 30))
    assert math.isclose(num, ref, rel_tol=1e-10, abs_tol=1e-300)


def test_evaluate_is_vectorized_and_validates_domains():
    vals = _random_values(F.THM1, np.random.default_rng(0))
    vals["T"] = np.array([10.0, 100.0, 1000.0])
    out = F.THM1.evaluate(vals)
    assert out.shape == (3,) and np.all(np.diff(out) < 0)
    with pytest.raises(ParameterError, match="lam"):
        F.THM1.evaluate({**vals, "lam": 1.5})
    with pytest.raises(ParameterError, match="eta"):
        F.THM1.evaluate({**vals, "eta": -0.1})
    missing = dict(vals)
    del missing["G"]
    with pytest.raises(ParameterError, match="G"):
        F.THM1.evaluate(missing)


def test_evaluate_refuses_a_fraction_for_an_integer_symbol():
    # a count declared integer=True (H local steps, T iterations) is an integer or a ParameterError naming it, also
    # inside an array; integral floats (T = 1e3) are counts (a user's trial: H = 2.5 evaluated silently)
    S = SymbolSet("t_integer")
    H = S.add("H", "local steps", integer=True, dim="1")
    T = S.add("T", "iterations", integer=True, dim="1")
    D = S.add("D", "initial error", dim="f")
    bound = Bound(id="t_integer.b", paper="t_integer", title="", source="", symbols=S, lhs="opt_error",
                  expr=D * H / T)
    assert np.allclose(bound.evaluate({"H": 2.0, "T": np.array([10.0, 1e3]), "D": 1.0}), [0.2, 0.002])
    with pytest.raises(ParameterError, match=r"H=2\.5 .*an integer"):
        bound.evaluate({"H": 2.5, "T": 10.0, "D": 1.0})
    with pytest.raises(ParameterError, match=r"T=100\.5 .*an integer"):
        bound.evaluate({"H": 2.0, "T": np.array([10.0, 100.5]), "D": 1.0})
    with pytest.raises(ParameterError, match="D"):  # not an integer symbol: any positive value, no other rule
        bound.evaluate({"H": 2.0, "T": 10.0, "D": -0.5})


def test_a_formula_is_lambdified_and_expanded_once_per_process():
    """issue 26: evaluating a record's part at every grid point, or a condition of each copy of a record
    (dataclasses.replace), compiles the formula once; the values are the same."""
    import dataclasses

    from fedtheory.theory.core import Evaluator

    vals = _random_values(F.THM1, np.random.default_rng(2))
    part = F.THM1.expr.args[0]
    a = Evaluator(F.THM1.expanded(part), F.THM1.symbols, "a")
    b = Evaluator(F.THM1.expanded(part), F.THM1.symbols, "b")
    assert a._fn is b._fn and a.names == b.names == sorted(s.name for s in F.THM1.expanded(part).free_symbols)
    copy = dataclasses.replace(F.THM1)
    assert copy.expanded() is F.THM1.expanded()
    assert float(copy.evaluate_expr(part, vals)) == float(F.THM1.evaluate_expr(part, vals))
    assert copy.conditions_failed(vals) == F.THM1.conditions_failed(vals)


def test_a_complex_value_is_no_value_never_its_real_part():
    """An expression that evaluates to a complex number (a mutant's moved exponent, an I in a formula) gives NaN, not
    its real part with a ComplexWarning; a complex result with no imaginary part is its real value."""
    from fedtheory.theory.core import Evaluator

    S = SymbolSet("complexdemo")
    a = S.add("a", "a real number", sp.Interval(-10, 10), dim="1")
    assert Evaluator(sp.I ** 2 + a, S, "e")({"a": 1.0}) == 0.0
    with np.errstate(all="ignore"):
        out = Evaluator(a + sp.I, S, "e")({"a": np.array([1.0, 2.0])})
    assert np.isnan(out).all()


def test_conditions_name_what_fails():
    vals = _random_values(F.THM1, np.random.default_rng(1))
    vals.update(N=10.0, C=10.0, K=5.0, L=2.0, B=1.5, beta=0.05, eta=0.5)
    failed = F.THM1.conditions_failed(vals)
    assert any(f.startswith("eta_le_1_over_NKL") for f in failed)
    vals["eta"] = 1e-5
    vals["lam"] = float(F.LAMBDA_MAX.expr.subs({F.eta: vals["eta"], F.K: 5, F.L: 2, F.B: 1.5, F.N: 10,
                                                F.beta: 0.05})) * 0.99
    assert F.THM1.conditions_failed(vals) == []
    vals["beta"] = 0.2  # 72 beta^2 > 1
    assert any("beta_lt_sqrt2_over_12" in f for f in F.THM1.conditions_failed(vals))


def test_kappa_constants_satisfy_the_appendix_derivation():
    # 3 kappa_1 / 2 >= 17/2 + 1950 b^2/(1-72 b^2) and kappa_2 / 2 >= 13/2 + 510 b^2/(1-72 b^2) for admissible beta
    b = np.linspace(0, math.sqrt(2) / 12 * 0.999, 50)
    k1 = np.array([float(F.KAPPA1.expr.subs(F.beta, x)) for x in b])
    k2 = np.array([float(F.KAPPA2.expr.subs(F.beta, x)) for x in b])
    assert np.all(1.5 * k1 >= 8.5 + 1950 * b**2 / (1 - 72 * b**2) - 1e-9)
    assert np.all(0.5 * k2 >= 6.5 + 510 * b**2 / (1 - 72 * b**2) - 1e-9)


def test_rate_check_on_known_cases():
    S = SymbolSet("test")
    T = S.add("T", "rounds", sp.Interval(1, sp.oo))
    N = S.add("N", "clients", sp.Interval(1, sp.oo))
    eta = S.add("eta", "step")
    D = S.add("D", "bias")
    explicit = D / (eta * T) + eta * 3
    ok = check_order(explicit, Order(D / sp.sqrt(T), T, {eta: 1 / sp.sqrt(T)}))
    assert ok.verdict == "rate_consistent"
    bad = check_order(explicit, Order(D / T, T, {eta: 1 / sp.sqrt(T)}))
    assert bad.verdict == "rate_inconsistent" and len(bad.missed) == 2
    # tracked exponent: a term growing in N is not covered by an order that falls in N
    expl = D * sp.sqrt(N) / sp.sqrt(T)
    assert check_order(expl, Order(D / sp.sqrt(N * T), T, {}, track=(N,))).verdict == "rate_inconsistent"
    assert check_order(expl, Order(D / sp.sqrt(N * T), T, {})).verdict == "rate_consistent"
    # log factors: allowed only when the statement omits them
    lg = D * sp.log(T) / T
    assert check_order(lg, Order(D / T, T, {})).verdict == "rate_inconsistent"
    assert check_order(lg, Order(D / T, T, {}, up_to_log=True)).verdict == "rate_consistent"


@pytest.mark.slow
def test_fedinit_rate_verdicts():
    from fedtheory.checks.rates import rate_check

    verdicts = {r.id: rate_check(r).verdict for r in (F.THM1, F.THM4, F.THM5, F.POSTER_GEN)}
    assert verdicts == {"fedinit.thm1": "rate_consistent", "fedinit.thm4": "rate_consistent",
                        "fedinit.thm5": "proof_step_loose", "fedinit.poster.gen_rate": "rate_inconsistent"}
    res = rate_check(F.THM5)
    assert "534*B**2*D" in res.detail  # the D/(NKT) term of the loosened form the stated (D+G^2)/T^2 misses


def test_every_record_explains_and_cites_its_source():
    """A seed paper's record cites its seed file (and line); a zoo record its arXiv id and says how it was
    transcribed (checked against a text, or unverified)."""
    import re

    from fedtheory.plugins import BUILTIN_PAPERS
    from fedtheory.theory import paper_info

    for rid, rec in records().items():
        if rec.paper not in BUILTIN_PAPERS:  # a plug-in another test loaded (examples/) cites its own paper
            continue
        text = rec.explain()
        assert rid in text
        if paper_info(rec.paper).collection == "zoo":
            assert re.search(r"arXiv[: ]?\d{4}\.\d{4,5}", rec.source), rid
            t = getattr(rec, "transcription", None)  # a Bound or an OrderStatement says it; a Definition has none
            if isinstance(rec, (Bound, OrderStatement)):
                assert t and t.startswith(("checked against", "unverified")), rid
        else:
            assert ".txt" in rec.source, rid


def test_get_unknown_id():
    with pytest.raises(ParameterError, match="ID"):
        get("fedinit.thm99")


def test_fedinit_claim_predicates():
    out = F.CLAIM_UNBIASED.evaluate({"unbiased_gap": np.array([[1e-16]]), "offset_scale": np.array([[0.1]])})
    assert out.supported is True
    out = F.CLAIM_UNBIASED.evaluate({"unbiased_gap": np.array([[0.01]]), "offset_scale": np.array([[0.1]])})
    assert out.supported is False
    from fedtheory.checks import StatsPolicy
    runs = 1.0 + 0.001 * np.arange(10)  # per-seed errors (betas, runs), paired across beta
    m = {"beta": np.array([0, 0.05, 0.1]), "opt_error": np.outer([1.0, 1.02, 1.04], runs),
         "delta": np.array([1, 0.8, 0.6])}
    assert F.CLAIM_INSENSITIVE.evaluate(m, stats=StatsPolicy(min_effect=0.1)).supported is True
    assert F.CLAIM_INSENSITIVE.evaluate(m, stats=StatsPolicy(min_effect=0.01), max_rel_spread=0.01).supported is False
    def per_seed(means):  # (betas, 10 seeds) around the means, paired across beta
        return np.add.outer(np.asarray(means, float), 0.01 * np.sin(np.arange(10)))

    th = {"beta": np.array([0, 0.5, 1.0, 1.5]), "delta": np.array([1.0, 0.5, 0.7, np.nan]),
          "delta_runs": per_seed([1.0, 0.5, 0.7, np.nan]), "diverged": np.array([False, False, False, True])}
    pol = StatsPolicy(min_effect=F.CLAIM_THRESHOLD.min_effect)
    assert F.CLAIM_THRESHOLD.evaluate(th, stats=pol).supported is True
    th2 = {**th, "diverged": np.array([False] * 4), "delta": np.array([1.0, 0.5, 0.7, 0.9]),
           "delta_runs": per_seed([1.0, 0.5, 0.7, 0.9])}
    assert F.CLAIM_THRESHOLD.evaluate(th2, stats=pol).supported is None  # falls, but nothing diverged in the grid
    th3 = {**th2, "delta": np.array([1.0, 1.1, 1.2, 1.3]), "delta_runs": per_seed([1.0, 1.1, 1.2, 1.3])}
    assert F.CLAIM_THRESHOLD.evaluate(th3, stats=pol).supported is False
    with pytest.raises(ParameterError, match="delta_runs"):  # aggregated means alone: no seeds, no decision
        F.CLAIM_THRESHOLD.evaluate({k: v for k, v in th.items() if k != "delta_runs"}, stats=pol)
    k = {"K": np.array([1, 2, 4, 8.0]), "risk_runs": np.add.outer([2.0, 1.0, 1.5, 1.8], 0.01 * np.arange(10))}
    assert F.CLAIM_K.evaluate(k, stats=StatsPolicy(min_effect=0.05)).supported is True
    k2 = {**k, "risk_runs": np.add.outer([1.0, 1.5, 1.8, 2.0], 0.01 * np.sin(np.arange(10)))}
    assert F.CLAIM_K.evaluate(k2, stats=StatsPolicy(min_effect=0.05)).supported is False
    with pytest.raises(ParameterError, match="measurements"):
        F.CLAIM_K.evaluate({"K": [1]})


def test_every_claim_quotes_its_sentence_with_file_and_line():
    import re

    from fedtheory.theory import Claim
    seeds = {"000_278c463b157eab5b.txt", "001_1290d3e8dce7394d.txt", "002_750e045df608fece.txt",
             "003_7cb41999359df859.txt", "004_319ac838b1cb3f8f.txt"}
    for rid, rec in records().items():
        if isinstance(rec, Claim):
            m = re.match(r"(\d{3}_[0-9a-f]+\.txt):\d+", rec.quote)
            assert m and m.group(1) in seeds, rid


# --------------------------------------------------------------------- SymbolSet.table: a notation table


_TABLE_EQUIVALENTS = [  # keyword -> the add arguments it stands for
    ("positive", {}),
    ("nonnegative", {"domain": sp.Interval(0, sp.oo)}),
    ("real", {"domain": sp.Reals}),
    ("count", {"domain": sp.Interval(1, sp.oo), "integer": True}),
    ("index", {"domain": sp.Interval(0, sp.oo), "integer": True}),
    ("fraction", {"domain": sp.Interval.Lopen(0, 1)}),
    ("unit", {"domain": sp.Interval(0, 1)}),
]


def _same_symbols(a: SymbolSet, b: SymbolSet):
    assert list(a.info) == list(b.info)
    for name in a.info:
        x, y = a[name], b[name]
        assert x.symbol == y.symbol and x.symbol.assumptions0 == y.symbol.assumptions0, name
        assert (x.description, x.domain, x.dimension) == (y.description, y.domain, y.dimension), name
        assert x.domain.left_open == y.domain.left_open and x.domain.right_open == y.domain.right_open, name


@pytest.mark.parametrize("keyword,kwargs", _TABLE_EQUIVALENTS, ids=[k for k, _ in _TABLE_EQUIVALENTS])
def test_a_table_keyword_is_its_add_call(keyword, kwargs):
    table, added = SymbolSet(f"t_table_kw_{keyword}", strict=True), SymbolSet(f"t_table_kw_{keyword}_add", strict=True)
    (x,) = table.table(f"x  f/w^2  {keyword}  a constant: |g| <= x (Assumption 1)")
    y = added.add("x", "a constant: |g| <= x (Assumption 1)", dim="f/w^2", **kwargs)
    assert x == y and x.assumptions0 == y.assumptions0
    _same_symbols(table, added)


def test_a_table_equals_its_add_calls_symbol_by_symbol():
    table, added = SymbolSet("t_table_rows", strict=True), SymbolSet("t_table_rows_add", strict=True)
    got = table.table("""
        gamma    w^2/f    positive     the step size:   two spaces inside a description stay
        L        f/w^2    positive     smoothness of every f_i (Assumption 1)

        sigma  f/w  nonnegative  E||grad F_i(x; z) - grad f_i(x)||^2 <= sigma^2
        N        1        count        number of workers
        t        1        index        the step, from 0
        mu       f/w^2    real         a curvature of either sign
        p        1        fraction     the fraction of clients sampled
        q        1        unit         a probability
    """)
    want = (
        added.add("gamma", "the step size:   two spaces inside a description stay", dim="w^2/f"),
        added.add("L", "smoothness of every f_i (Assumption 1)", sp.Interval.open(0, sp.oo), dim="f/w^2"),
        added.add("sigma", "E||grad F_i(x; z) - grad f_i(x)||^2 <= sigma^2", sp.Interval(0, sp.oo), dim="f/w"),
        added.add("N", "number of workers", sp.Interval(1, sp.oo), integer=True, dim="1"),
        added.add("t", "the step, from 0", sp.Interval(0, sp.oo), integer=True, dim="1"),
        added.add("mu", "a curvature of either sign", sp.Reals, dim="f/w^2"),
        added.add("p", "the fraction of clients sampled", sp.Interval.Lopen(0, 1), dim="1"),
        added.add("q", "a probability", sp.Interval(0, 1), dim="1"),
    )
    assert got == want and [s.assumptions0 for s in got] == [s.assumptions0 for s in want]
    _same_symbols(table, added)
    assert table.table("") == () and table.table("\n   \n") == ()


@pytest.mark.parametrize("line,where,match", [
    ("x  1  between  a bound", "line 2", r"domain of x='between'.*positive.*nonnegative.*real.*count.*index.*fraction"
                                         r".*unit"),
    ("x  1  positive", "line 2", r"symbol table line 2='x  1  positive'.*four fields NAME  DIM  DOMAIN  description"),
    ("x", "line 2", r"four fields"),
    ("1x  1  positive  a bound", "line 2", r"name='1x'.*Python identifier"),
    ("x-y  1  positive  a bound", "line 2", r"name='x-y'.*Python identifier"),
    ("x  q^2  positive  a bound", "line 2", r"dim of x='q\^2'"),
])
def test_a_bad_table_line_is_named_with_what_is_allowed(line, where, match):
    S = SymbolSet("t_table_bad", strict=True)
    with pytest.raises(ParameterError, match=match) as err:
        S.table(f"\n{line}\n")
    text = str(err.value)
    assert f"symbol table {where}" in text and repr(line) in text


def test_a_name_declared_twice_in_a_table_names_the_line():
    S = SymbolSet("t_table_twice", strict=True)
    with pytest.raises(Exception, match=r"symbol x defined twice; symbol table line 3: 'x  1  count  again'"):
        S.table("x  1  positive  first\n\nx  1  count  again")


def test_explain_says_when_the_left_side_is_not_described():
    """A trial user's record without lhs_description printed 'where dist2_opt =' and nothing after it."""
    import sympy as sp

    from fedtheory.theory import Bound, SymbolSet

    S = SymbolSet("undescribed")
    D = S.add("D", "gap", sp.Interval(0, sp.oo), dim="f")
    text = Bound(id="undescribed.t", paper="undescribed", title="t", source="s", symbols=S, lhs="opt_error",
                 expr=D).explain()
    (line,) = [ln for ln in text.splitlines() if ln.strip().startswith("where")]
    assert line.strip() == "where opt_error = (no lhs_description: say what the left side is in the simulator's terms)"
