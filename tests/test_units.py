"""Units (issue 22): every record checked for dimensional consistency (fedtheory.theory.dimensions, the per-paper
check PAPER.units of fedtheory.checks.dimensions). Mutants and the known misprints must be caught and named."""
import dataclasses
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, strategies as st

from fedtheory._validation import FedTheoryError, ParameterError
from fedtheory.checks import all_checks
from fedtheory.checks.dimensions import units_analysis, units_result, units_rows, units_table
from fedtheory.checks.results import group_findings
from fedtheory.sim.measures import measure_catalogue
from fedtheory.theory import Bound, Condition, SymbolSet, dimension_of
from fedtheory.theory.core import get, registry
from fedtheory.theory.dimensions import (
    DIMENSION_SYSTEM,
    LOSS,
    PARAMETER,
    DimensionError,
    Units,
    UnknownDimension,
    parse_dimension,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "li2020_fedavg" / "src" / "li2020_fedavg"
BUILTIN = ("fedinit", "oledfl", "fedmrur", "fedshift")


def _cli(*args, env_extra=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "fedtheory.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def _deps(d):
    deps = DIMENSION_SYSTEM.get_dimensional_dependencies(d)
    return (sp.sympify(deps.get(LOSS, 0)), sp.sympify(deps.get(PARAMETER, 0)))


# ------------------------------------------------------------------------------------ dimension_of


DIMS = {"L": (1, -2), "mu": (1, -2), "eta": (-1, 2), "sigma": (1, -1), "D": (1, 0), "Delta": (0, 2), "rho": (0, 1),
        "U": (1, 0), "K": (0, 0), "T": (0, 0), "beta": (0, 0)}
TEXT = {n: f"f^({f})*w^({w})" for n, (f, w) in DIMS.items()}


@given(st.dictionaries(st.sampled_from(sorted(DIMS)),
                       st.sampled_from([-3, -2, -1, Fraction(-1, 2), Fraction(1, 2), 1, 2, 3]), min_size=1, max_size=5),
       st.integers(1, 50))
def test_random_monomials_get_the_dimension_computed_by_hand(exps, coef):
    expr = coef * sp.Mul(*[sp.Symbol(n) ** sp.Rational(e.numerator, e.denominator) if isinstance(e, Fraction)
                           else sp.Symbol(n) ** e for n, e in exps.items()])
    want_f = sum(Fraction(e) * DIMS[n][0] for n, e in exps.items())
    want_w = sum(Fraction(e) * DIMS[n][1] for n, e in exps.items())
    f, w = _deps(dimension_of(expr, TEXT))
    assert (f, w) == (sp.Rational(want_f.numerator, want_f.denominator),
                      sp.Rational(want_w.numerator, want_w.denominator))


@given(st.dictionaries(st.sampled_from(sorted(DIMS)), st.integers(-2, 2), min_size=1, max_size=4),
       st.sampled_from(["L", "eta", "sigma", "rho", "D"]))
def test_a_sum_is_consistent_exactly_when_its_terms_agree(exps, odd):
    """m + 2 m is consistent; m + m * x with x dimensional is not, and the error names the odd term and both
    dimensions."""
    m = sp.Mul(*[sp.Symbol(n) ** e for n, e in exps.items()])
    _deps(dimension_of(m + 2 * m, TEXT))
    x = sp.Symbol(odd)
    bad = m * x
    if sp.simplify(bad / m - x) != 0 or bad == m:  # the symbol cancelled against m
        return
    with pytest.raises(DimensionError) as e:
        dimension_of(m + bad, TEXT)
    assert str(e.value).count(" has ") == 2  # both terms named, each with its dimension
    # with the left side given, the term that disagrees with it is the one named
    with pytest.raises(DimensionError, match="the left side"):
        dimension_of(m + bad, TEXT, lhs=m)


def _raises_dimension_error(expr, dims, **kw):
    try:
        dimension_of(expr, dims, **kw)
    except DimensionError as exc:
        return str(exc)
    return None


def test_one_walk_serves_dimension_of_and_the_units_row():
    """Issue 36, item 8: a dimensional log or exp inside a sum multiplied by something was missed by the units row
    (the probe of the sum's terms kept its findings to itself) while dimension_of raised; one walk serves both now."""
    from fedtheory.theory.dimensions import Formula, check_formula, symbol_dims

    D, T, sigma, mu, eta, L = sp.symbols("D T sigma mu eta L")
    dims = {"D": "f", "T": "1", "sigma": "f/w", "mu": "f/w^2", "eta": "w^2/f", "L": "f/w^2"}
    for expr, arg in ((D * (1 + sp.log(D)) / T, "log, D,"), (D * (sp.log(T) + sp.log(D)) / T, "log, D,"),
                      (D * (sp.log(sigma) + 2) / T, "log, sigma,"), (D * (sp.exp(-mu * T) + eta * L), "exp, T*mu,")):
        row = check_formula(Formula("statement", expr, "f"), symbol_dims(dims))
        assert [i.text for i in row.issues] and arg in row.issues[0].text, expr
        assert arg in (_raises_dimension_error(expr, dims) or ""), expr
        assert arg in (_raises_dimension_error(expr, dims, lhs="f") or ""), expr


def test_dimension_of_takes_a_left_side_and_names_the_term_unlike_it():
    R2, eta, T, sigma = sp.symbols("R2 eta T sigma")
    dims = {"R2": "w^2", "eta": "w^2/f", "T": "1", "sigma": "f/w"}
    # a wrong single-term formula passes without a left side and is caught with one
    assert _raises_dimension_error(eta * sigma, dims) is None
    assert _raises_dimension_error(eta * sigma, dims, lhs="f") == "eta*sigma has [w], the left side [f]"
    # R2/(eta T) + eta sigma against the left side [f]: the wrong term is eta*sigma, whatever sympy's term order
    assert _raises_dimension_error(R2 / (eta * T)
                                   + eta * sigma, dims, lhs="f") == "eta*sigma has [w], the left side [f]"
    # a left side given as an expression in the symbols
    assert _raises_dimension_error(R2 / (eta * T), {**dims, "D": "f"}, lhs=sp.Symbol("D")) is None
    # normalisation=('eta',): eta = 1 sets [w]^2/[f] = 1, so 1 and eta ([w]^2/[f]) add
    assert _raises_dimension_error(1 + eta, dims, normalisation=("eta",)) is None
    assert _raises_dimension_error(1 + eta, dims) is not None


def test_unknown_dimension_is_exported_and_the_more_terms_are_listed():
    import fedtheory.theory as th
    from fedtheory.checks.dimensions import _issues_text
    from fedtheory.theory.dimensions import Formula, check_formula, symbol_dims

    assert th.UnknownDimension is UnknownDimension and "UnknownDimension" in th.__all__
    a, b, c = sp.symbols("a b c")
    res = check_formula(Formula("statement", a + b + c, "f"), symbol_dims({"a": "f", "b": "w", "c": "f^2"}))
    text = _issues_text([res])
    assert ("(and 1 more term: " in text and "has [w], the left side "
                                             "[f]" in text and "has [f]^2, the left side [f]" in text)


def test_rules_sqrt_exp_symbolic_powers_and_unknowns():
    L, sigma, eta, mu, c, T, U, D = sp.symbols("L sigma eta mu c T U D")
    dims = {"L": "f/w^2", "sigma": "f/w", "eta": "w^2/f", "mu": "f/w^2", "c": "w^2/f", "T": "1", "U": "f", "D": "f"}
    assert _deps(dimension_of(sp.sqrt(sigma**2 / L), dims)) == (sp.Rational(1, 2), 0)  # a sqrt halves
    assert _deps(dimension_of(sp.exp(-mu * eta * T) * D, dims)) == (1, 0)
    with pytest.raises(DimensionError, match=r"the argument of exp, T\*mu, has \[f\]/\[w\]\^2"):
        dimension_of(sp.exp(-mu * T) * D, dims)
    # a symbolic power cancels: (U^(cL) / L)^(1/(1 + cL)) * sigma^(2/(1+cL)) has [f] (FedInit Thm 3's shape)
    expr = (sigma**2 * (U * T) ** (c * L) / L) ** (1 / (1 + c * L))
    assert _deps(dimension_of(expr, dims)) == (1, 0)
    with pytest.raises(UnknownDimension, match="no dimension for: x"):
        dimension_of(L * sp.Symbol("x"), dims)
    # a SymbolSet works as the mapping
    S = SymbolSet("units_test_mapping")
    a = S.add("a", "a gradient norm", dim="f/w")
    assert _deps(dimension_of(a**2, S)) == (2, -2)
    assert parse_dimension("[f]^2/[w]^2") == parse_dimension(LOSS**2 / PARAMETER**2)
    with pytest.raises(ParameterError):
        parse_dimension("f + w")


# ------------------------------------------------------------------------------------ the records


def _records(paper=None):
    return [r for r in registry().values() if paper in (None, r.paper)]


def test_every_builtin_record_gets_a_definite_verdict():
    """Built-in papers are strict: no 'unknown', no error; a record without a formula is not_applicable."""
    for r in _records():
        if r.paper not in BUILTIN:
            continue
        a = units_analysis(r)
        assert a["verdict"] in ("holds", "violated", "ambiguous", "not_applicable"), (r.id, a)
        if a["verdict"] == "violated":
            assert a["finding_class"] == "erratum" or a["scope"] == "units_artifact", (r.id, a)
        if r.kind == "claim":
            assert a["verdict"] == "not_applicable"


def test_builtin_symbol_sets_are_strict():
    from fedtheory.plugins import load_plugins, plugin_of

    load_plugins()
    for r in _records():
        plug = plugin_of(r.id)
        if plug is None or not plug.origin.startswith(("entry point (fedtheory)", "built-in")):
            continue
        if getattr(r, "symbols", None) is not None:
            assert r.symbols.strict, r.id


@pytest.mark.parametrize("rid", ["fedinit.thm1", "fedinit.thm2", "fedinit.thm3.rederived", "fedinit.thm4",
                                 "fedinit.thm4.rederived", "fedinit.thm5", "fedinit.lemma2", "fedinit.lemma3",
                                 "fedinit.lemma4", "fedshift.thm1", "fedshift.thm1.rederived", "fedshift.thm2.appendix",
                                 "fedshift.eq11", "oledfl.lemma3"])
def test_known_consistent_records_hold(rid):
    a = units_analysis(get(rid))
    assert a["verdict"] == "holds", a
    assert a["detail"].startswith("consistent")


def test_fedinit_thm2_explicit_form_is_consistent_and_its_order_is_reported():
    a = units_analysis(get("fedinit.thm2"))
    assert a["verdict"] == "holds"
    assert "stated order as printed" in a["detail"] and "drops constants" in a["detail"]
    # Thm 1's order is consistent under the step-size choice the paper states
    assert ("under the stated choice eta = sqrt(N)/(sqrt(K)*sqrt(T)) ([w]^2/[f] = 1)"
            in units_analysis(get("fedinit.thm1"))["detail"])


def test_li2020_example_thm1_is_consistent():
    out = _cli("check", "--plugin", str(EXAMPLE), "--only", "li2020.units", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)["results"]}
    assert set(rows) == {"li2020.thm1.units", "li2020.kappa.units", "li2020.gamma.units", "li2020.B.units",
                         "li2020.C_scheme1.units", "li2020.C_scheme2.units", "li2020.thm2.units", "li2020.thm3.units"}
    assert all(r["verdict"] == "holds" and r["kind"] == "symbolic" for r in rows.values()), rows
    assert "UnitsWarning" not in out.stderr


def test_fedshift_eq12_is_an_erratum_named_and_counted_once():
    row = units_result(get("fedshift.thm2"))
    assert row.verdict == "violated" and row.finding_class == "erratum" and row.is_finding
    assert row.finding == "fedshift.eq12_misprint"  # the key of the existing checks' rows for the same misprint
    assert "2*m_t/m_t1**2 has [w]^-1, the left side [w]^2" in row.detail
    assert "fedshift.thm2.appendix" in row.detail
    from fedtheory.checks import CheckResult

    other = CheckResult("fedshift.thm2.derivation", "fedshift", "symbolic", "violated",
                        finding="fedshift.eq12_misprint", finding_class="erratum")
    assert len(group_findings([row, other])) == 1


def test_fedmrur_eq7_reading_a_is_caught_and_named():
    a = units_analysis(get("fedmrur.thm1"))
    # inconsistent under every reading, no consistent form in the seed: counted by rule 8 (issue 36), one finding
    assert a["verdict"] == "violated" and a["scope"] == "inside" and a["finding_class"] == "erratum"
    assert a["finding"] == "fedmrur.thm1.units"
    ra = next(v["text"] for k, v in a["readings"].items() if k.startswith("reading A"))
    rb = next(v["text"] for k, v in a["readings"].items() if k.startswith("reading B"))
    assert "statement: D/(C*alpha*eta_g*sum_d) has [f], the left side [f]^2/[w]^2" in ra
    # under reading B the first term is consistent; Phi is not, in either reading
    assert "D/(C*alpha*eta_g*sum_d)" not in rb
    assert "10*alpha**2*eta_l**2*rho**2*sigma_t**2*(L + r)**4 has [f]^4/[w]^4, the left side [f]^2/[w]^2" in rb
    assert units_result(get("fedmrur.thm1")).is_finding


def test_fedinit_thm3_printed_divergence_term_is_an_erratum_shared_with_thm6():
    rows = [units_result(get(i)) for i in ("fedinit.thm3", "fedinit.thm6.composed")]
    assert all(r.verdict == "violated" and r.finding_class == "erratum" for r in rows)
    assert all("has [w], the left side [f]" in r.detail for r in rows)
    assert len(group_findings(rows)) == 1
    assert units_result(get("fedinit.thm3.rederived")).verdict == "holds"


# ------------------------------------------------------------------------------------ mutants


def _mutant(rid, f, **kw):
    rec = get(rid)
    new = dataclasses.replace(rec, id=rid + ".mutant", expr=f(rec.expr, {s.name: s for s in rec.expr.free_symbols}),
                              **kw)
    return units_analysis(new)


@pytest.mark.parametrize("rid, what, f, named", [
    ("fedinit.thm1", "an L dropped", lambda e, s: e.subs(s["L"], 1), "has [f], the left side [f]^2/[w]^2"),
    ("fedinit.thm1", "sigma^2 written for sigma", lambda e, s: e.subs(s["sigma_l"], s["sigma_l"] ** 2),
     "L*eta*kappa2*sigma_l**4/(N*lam) has [f]^4/[w]^4, the left side [f]^2/[w]^2"),
    ("fedinit.thm1", "eta^2 for eta", lambda e, s: e.subs(s["eta"], s["eta"] ** 2), "the left side [f]^2/[w]^2"),
    ("fedinit.thm2", "mu dropped", lambda e, s: e.subs(s["mu"], 1), "the left side [f]"),
    ("fedshift.thm1.rederived", "an L dropped", lambda e, s: e.subs(s["L"], 1), "the left side [f]"),
    ("fedshift.thm2.appendix", "m^t for m^{t+1} m^t", lambda e, s: e.subs(s["m_t1"] * s["m_t"], s["m_t"]),
     "has [w], the left side [w]^2"),
])
def test_mutants_of_consistent_bounds_are_caught_and_named(rid, what, f, named):
    a = _mutant(rid, f)
    assert a["verdict"] == "violated", (what, a)
    assert named in a["detail"], (what, a["detail"])


def _dimensions(rec):
    from fedtheory.theory.dimensions import symbol_dims

    return symbol_dims(rec.symbols)


@pytest.mark.parametrize("rid", ["fedinit.thm1", "fedinit.thm2", "fedinit.thm4", "fedinit.thm5", "fedinit.lemma4",
                                 "fedshift.thm1.rederived", "fedshift.thm2.appendix"])
def test_every_dimensional_symbol_squared_or_dropped_is_caught_a_dimensionless_one_is_not(rid):
    """The limit of the method, shown: K^2 for K (K a count) changes no dimension and passes; every mutant that
    changes a term's dimension is caught."""
    rec = get(rid)
    dims = _dimensions(rec)
    for s in sorted(rec.expr.free_symbols, key=lambda x: x.name):
        d = dims[s.name]
        for label, repl in (("squared", s**2), ("dropped", sp.S.One)):
            mutant = dataclasses.replace(rec, id=f"{rid}.mutant.{s.name}.{label}", expr=rec.expr.subs(s, repl))
            verdict = units_analysis(mutant)["verdict"]
            if d.dimensionless:
                assert verdict == "holds", (rid, s, label)
            else:
                assert verdict == "violated", (rid, s, label)


def test_li2020_mutants_are_caught():
    code = f"""
import dataclasses, json, sys
sys.path.insert(0, {str(EXAMPLE.parent)!r})
from li2020_fedavg import records as R
from fedtheory.checks.dimensions import units_analysis
out = {{}}
e = R.THM1.expr
for name, expr in (("L dropped in B", None), ("mu dropped", e.subs(R.mu, 1)), ("K^2", None),
                   ("Delta1 squared", e.subs(R.Delta1, R.Delta1**2)), ("T squared", e.subs(R.T, R.T**2))):
    if expr is None:
        continue
    out[name] = units_analysis(dataclasses.replace(R.THM1, id="li2020.m." + name, expr=expr))
b = dataclasses.replace(R.B_DEF, id="li2020.B.m", expr=R.B_DEF.expr.subs(R.L, 1))
out["L dropped in B"] = units_analysis(b)
print(json.dumps({{k: [v["verdict"], v["detail"]] for k, v in out.items()}}))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["mu dropped"][0] == "violated" and "the left side [f]" in got["mu dropped"][1]
    assert got["Delta1 squared"][0] == "violated" and "Delta1**2" in got["Delta1 squared"][1]
    assert got["L dropped in "
               "B"][0] == "violated" and "6*Gamma has [f], the left side [f]^2/[w]^2" in got["L dropped in B"][1]
    assert got["T squared"][0] == "holds"  # T is a count: not catchable by dimensions


# ------------------------------------------------------------------------------------ normalisations, readings


def _toy():
    S = SymbolSet("units_test_toy")
    L, D, T, eta = (S.add("L", "smoothness", dim="f/w^2"), S.add("D", "gap", dim="f"), S.add("T", "rounds", dim="1"),
                    S.add("eta", "step", dim={"A": "1", "B": "w^2/f"}))
    return S, L, D, T, eta


def test_a_declared_normalisation_is_quoted_and_used():
    S, L, D, T, _ = _toy()
    # ||grad f||^2 <= 2 D / T, as a paper that sets L = 1 writes 2 L D / T
    bound = Bound(id="units_test_toy.norm", paper="units_test_toy", title="", source="", symbols=S, lhs="grad_norm2",
                  expr=2 * D / T, units=Units(normalisation=("L",), quote="toy.txt:1: 'we set L = 1'"))
    a = units_analysis(bound)
    assert a["verdict"] == "holds" and "consistent under L = 1 (toy.txt:1: 'we set L = 1')" in a["detail"]
    # without the declaration it is inconsistent and the check says which normalisation would fix it
    a = units_analysis(dataclasses.replace(bound, id="units_test_toy.norm2", units=None))
    assert a["verdict"] == "violated" and a["scope"] == "inside" and a["finding_class"] == "erratum"  # rule 8
    assert "2*D/T has [f], the left side [f]^2/[w]^2" in a["detail"] and "would need L = 1" in a["detail"]
    with pytest.raises(ParameterError, match="quote"):
        Units(normalisation=("L",))


def test_readings_that_disagree_are_ambiguous():
    S, L, D, T, eta = _toy()
    bound = Bound(id="units_test_toy.readings", paper="units_test_toy", title="", source="", symbols=S,
                  lhs="grad_norm2", expr=D / (eta * T), conditions=(Condition("step", eta * L <= 1),))
    a = units_analysis(bound)
    assert a["verdict"] == "ambiguous", a
    assert "reading A (eta: 1)" in a["detail"] and "reading B (eta: [w]^2/[f]): consistent" in a["detail"]


# ------------------------------------------------------------------------------------ strictness, plug-ins


def test_a_strict_symbol_set_refuses_a_symbol_without_dimension():
    S = SymbolSet("units_test_strict", strict=True)
    with pytest.raises(FedTheoryError, match="units_test_strict: symbol a has no dimension"):
        S.add("a", "no dimension")
    b = S.add("b", "a loss", dim="f")
    from fedtheory.theory import register

    with pytest.raises(FedTheoryError, match=r"units_test_strict: record units_test_strict.x "
                                             r"uses y without a dimension"):
        register(Bound(id="units_test_strict.x", paper="units_test_strict", title="", source="", symbols=S,
                       lhs="opt_error", expr=b * sp.Symbol("y")))


def test_a_users_plugin_without_dimensions_gets_unknown_and_a_warning(tmp_path):
    plug = tmp_path / "nodims.py"
    plug.write_text(
        "import sympy as sp\n"
        "from fedtheory.theory import Bound, SymbolSet, register\n"
        "S = SymbolSet('nodims')\n"
        "L = S.add('L', 'smoothness')\n"
        "D = S.add('D', 'gap', dim='f')\n"
        "register(Bound(id='nodims.thm', paper='nodims', title='t', "
        "source='s', symbols=S, lhs='opt_error', expr=D * L))\n")
    out = _cli("check", "--plugin", str(plug), "--only", "nodims.units", "--format", "json")
    assert out.returncode == 0, out.stderr  # 'inconclusive' is no finding
    (row,) = json.loads(out.stdout)["results"]
    assert row["verdict"] == "inconclusive" and row["detail"] == "units: unknown (no dimension for: L)"
    assert "UnitsWarning" in out.stderr and "nodims: no dimension declared for L" in out.stderr


def test_every_paper_gets_the_units_check_and_explain_prints_it():
    specs = all_checks()
    for p in BUILTIN:
        assert specs[f"{p}.units"].kind == "symbolic"
    rows = units_rows("fedshift")
    assert all(r.id == r.params["record"] + ".units" and r.kind == "symbolic" for r in rows)
    assert "fedshift.claim.divergence" not in {r.params["record"] for r in rows}  # a claim has no formula: no row
    out = _cli("explain", "fedshift.thm2")
    assert out.returncode == 0, out.stderr
    assert "units: violated: statement: 2*m_t/m_t1**2 has [w]^-1, the left side [w]^2" in out.stdout
    assert "dimensions: I 1, K 1, m_t [w], m_t1 [w], P 1, S 1" in out.stdout


def test_records_imported_before_the_plugins_load_get_their_units_check():
    code = ("import fedtheory.papers.fedshift.records\n"
            "from fedtheory.checks import all_checks\n"
            "assert 'fedshift.units' in all_checks(), sorted(all_checks())\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr


def test_measures_declare_their_dimension_and_bounds_agree():
    cat = measure_catalogue()
    assert all(v["dimension"] for v in cat.values()), [k for k, v in cat.items() if not v["dimension"]]
    for r in _records():
        lhs = getattr(r, "lhs", None)
        units = getattr(r, "units", None)
        if lhs in cat and units is not None and units.lhs:
            assert parse_dimension(units.lhs) == parse_dimension(cat[lhs]["dimension"]), r.id


def test_docs_table_is_current():
    text = (ROOT / "docs" / "units.md").read_text()
    table = units_table([r for r in _records() if r.paper in BUILTIN])
    assert table in text, "docs/units.md is stale: regenerate it (python -m fedtheory.checks.dimensions)"


def test_explain_dimensions_line_does_not_depend_on_the_hash_seed():
    """Symbols that differ only in case (C clients, c a constant) were ordered by set order, so `explain` printed
    its dimensions line differently from run to run: same input, same output."""
    lines = set()
    for seed in range(11, 23):  # before the fix, half of these seeds printed 'c' before 'C'
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=str(seed))
        out = subprocess.run([sys.executable, "-m", "fedtheory.cli", "explain", "fedinit.thm6.composed"], env=env,
                             capture_output=True, text=True, timeout=120, check=True).stdout
        lines.add(next(line for line in out.splitlines() if line.startswith("dimensions:")))
    assert len(lines) == 1, lines
