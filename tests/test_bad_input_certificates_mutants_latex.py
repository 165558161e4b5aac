"""Bad input to assumption certificates, the zoo, `check --mutants` and `new-paper --from-latex`.

Reliability round 5 (issue 37's last item): a hostile pass over the assumption certificates, the zoo, `check
--mutants` and `new-paper --from-latex`. Each test names its case and fails on the code before it (5a041ba)."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("antlr4", reason="the extra fedtheory[latex] is not installed")

from fedtheory.latex import Unparseable, parse_math  # noqa: E402


@pytest.mark.parametrize("latex, reason", [
    (r"10^{10^{10^{10}}} L", "numeric power too large"),  # hung: sympy worked out 10^(10^10)
    (r"2^{2^{40}}", "numeric power too large"),
    (r"10^{-10^{10}}", "numeric power too large"),
    (r"\log(10^{10^{10}})", "numeric power too large"),
    (r"(10^{9})! L", "factorial of a number above"),  # hung
    (r"\binom{10^{9}}{10^{8}}", "binomial of a number above"),  # hung
    (r"\sum_{i=1}^{10^{9}} \frac{1}{i}", "sum over more than"),  # hung: harmonic(10^9) worked out exactly
    ("9" * 5000, "a number of 5,000 digits"),  # hung: the parser is quadratic in a number's digits
    (r"e^{10^{10^{5}}}", "numeric power too large"),  # ValueError out of parse_math (exit 3)
])
def test_1_a_side_that_would_not_end_is_a_reason_in_a_second(latex, reason):
    t0 = time.perf_counter()
    with pytest.raises(Unparseable, match=reason):
        parse_math(latex)
    assert time.perf_counter() - t0 < 5


@pytest.mark.parametrize("latex, reason", [
    (r"\frac{L}{0}", "division by zero"),  # was drafted as the bound zoo*L whose units 'hold'
    (r"0^{-1} + L", "division by zero"),
    (r"\sqrt{-1} L", "imaginary"),  # was drafted, its units row an error
    (r"(-8)^{1/3} L", "imaginary"),
    (r"\frac{d}{dT} T^2", "derivative"),  # was drafted, its units row an error
])
def test_1_an_undefined_or_non_real_side_is_not_drafted(latex, reason):
    with pytest.raises(Unparseable, match=reason):
        parse_math(latex)


def test_1_a_side_too_deep_for_sympy_is_a_reason_not_a_crash():
    with pytest.raises(Unparseable):
        parse_math(" ".join(["x"] * 800))  # RecursionError out of sympy's rebuilding: exit 3 before


def test_1_ordinary_sides_still_parse():
    assert str(parse_math(r"\frac{4 L}{T} + 10^{3} \sigma^2").expr) == "4*L/T + 1000*sigma**2"
    assert str(parse_math(r"\sum_{i=1}^{\infty} \frac{1}{i^2}").expr) == "pi**2/6"
    assert str(parse_math(r"(L+T)^{10^{9}}").expr) == "(L + T)**1000000000"


def test_2_a_side_with_more_than_78_symbols_parses():
    # the 79th placeholder was \mathit{zqda}: the parser read 'd' + a letter as a differential (Invalid LaTeX)
    side = " + ".join(f"a_{{{i}}} L" for i in range(120))
    expr = parse_math(side).expr
    assert len(expr.args) == 120 and "a_119" in str(expr)


@pytest.mark.parametrize("content", [b"", b"\x00\x01\xff" * 1000, b"no math here, just prose\n"])
def test_2_input_with_no_math_is_refused_and_nothing_is_written(tmp_path, capsys, content):
    from fedtheory.cli import main

    src = tmp_path / "thm.tex"
    src.write_bytes(content)
    out = tmp_path / "out"
    out.mkdir()
    assert main(["new-paper", "nomath", "--from-latex", str(src), "--dir", str(out)]) == 2
    assert "none found, nothing to draft" in capsys.readouterr().err
    assert not list(out.iterdir())  # before: a package of no record, exit 0


# ------------------------------------------------------------------------------ check --mutants (cli.py's side)


@pytest.fixture
def no_mutation_run(monkeypatch):
    """run_mutants must not be reached: a refusal comes before the run (minutes for all papers)."""
    import fedtheory.checks.mutants as M

    def boom(*a, **k):
        raise AssertionError("the mutation run started")

    monkeypatch.setattr(M, "run_mutants", boom)


@pytest.mark.parametrize("only", ["nomatch_xyz", "fedprox.mu_bar", "zz*"])
def test_3_mutants_only_matching_no_mutable_record_is_exit_2(capsys, no_mutation_run, only):
    from fedtheory.cli import main

    assert main(["check", "--mutants", "--only", only, "--no-progress"]) == 2  # was exit 0, an empty table
    assert "--only" in capsys.readouterr().err


def test_3_a_paper_of_stated_orders_only_among_others_is_said_not_refused(capsys, monkeypatch):
    """--only koloskova2020 drori2014: Koloskova et al.'s records are stated orders with no explicit form (nothing to
    mutate); with another paper beside it the run goes on and stderr says so."""
    import fedtheory.checks.mutants as M
    from fedtheory.cli import main

    seen = {}
    monkeypatch.setattr(M, "run_mutants", lambda **k: seen.setdefault("only", k["only"]) and [])
    assert main(["check", "--mutants", "--only", "koloskova2020", "drori2014", "--no-progress"]) == 0
    assert seen["only"] == ["koloskova2020", "drori2014"]
    assert "--only koloskova2020: no bound or stated order" in capsys.readouterr().err


def test_3_mutants_with_controls_is_refused_not_the_controls_run(capsys, no_mutation_run, monkeypatch):
    import fedtheory.checks.controls as C
    from fedtheory.cli import main

    monkeypatch.setattr(C, "run_controls", lambda *a, **k: (_ for _ in ()).throw(AssertionError("controls ran")))
    assert main(["check", "--mutants", "--controls", "--no-progress"]) == 2  # the controls ran instead, exit 0
    assert "--mutants" in capsys.readouterr().err


def test_3_mutants_out_unwritable_is_refused_before_the_run(tmp_path, capsys, no_mutation_run):
    from fedtheory.cli import main

    assert main(["check", "--mutants", "--only", "drori2014.thm3_1", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "--out" in capsys.readouterr().err  # was refused only after the whole run, its scores lost


def test_3_mutants_out_that_fails_after_the_run_keeps_the_scores(tmp_path, capsys, monkeypatch):
    import fedtheory.checks.output as C
    from fedtheory._validation import ParameterError
    from fedtheory.cli import main

    def fail(path, payload, flag="--out"):
        raise ParameterError(flag, path, "a writable file path (No space left on device)")

    monkeypatch.setattr(C, "write_json", fail)
    out = tmp_path / "m.json"
    assert main(["check", "--mutants", "--only", "drori2014.thm3_1", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "No space left" in err and "the results are kept in" in err  # was a traceback-free but lost run


# ------------------------------------------------------------------------------ assumption references


def _bound(paper, assumptions):
    import sympy as sp

    from fedtheory.theory import Bound, SymbolSet

    S = SymbolSet(paper, strict=True)
    L = S.add("L", "smoothness", sp.Interval.open(0, sp.oo), dim="f/w^2")
    T = S.add("T", "rounds", sp.Interval(1, sp.oo), integer=True, dim="1")
    R2 = S.add("R2", "distance squared", sp.Interval(0, sp.oo), dim="w^2")
    S.add("lr", "step", sp.Interval.open(0, sp.oo), dim="w^2/f")
    S.add("eta", "step or a count", sp.Interval.open(0, sp.oo), dim={"A": "1", "B": "f/w^2"})
    return Bound(id=f"{paper}.thm", paper=paper, title="t", source="s", symbols=S, assumptions=assumptions,
                 lhs="opt_error", lhs_kind="opt_error", lhs_description="f - f*", expr=L * R2 / T)


@pytest.mark.parametrize("assumptions, match", [
    (("L_smooth_global(T)",), "binds its constant L .dimension f/w\\^2. to T, of dimension 1"),
    (("PL(lr)",), "binds its constant mu"),
    ("L_smooth_global", "must be a tuple of references, not the string"),  # was: "assumes 'L'" (letter by letter)
])
def test_4_an_assumption_bound_to_a_symbol_of_another_dimension_is_refused(assumptions, match):
    from fedtheory._validation import FedTheoryError
    from fedtheory.theory import register

    with pytest.raises(FedTheoryError, match=match):
        register(_bound("rel5dim", assumptions))


def test_4_a_binding_of_the_right_dimension_or_reading_registers():
    from fedtheory.theory import register

    register(_bound("rel5ok", ("L_smooth_global", "L_smooth_global(eta)")))


# ------------------------------------------------------------------------------ report --mutants


def _mutation_file():
    def outcome(status, layer=""):
        return {"kind": "scale", "mutant": "x 1/2", "status": status, "layer": layer, "reason": "", "rows": []}

    rec = {"record": "p.thm", "mutants": 3, "killed": 2, "survived": 1, "equivalent": 0, "weaker": 0, "undecided": 0,
           "score": 2 / 3, "killed_by": {"units": 1, "rate": 1, "simulation": 0}, "seconds": 1.0, "note": "",
           "outcomes": [outcome("killed", "units"), outcome("killed", "rate"), outcome("survived")]}
    overall = {k: rec[k] for k in ("mutants", "killed", "survived", "equivalent", "weaker", "undecided", "score",
                                   "killed_by")}
    return {"command": ["fedtheory", "check", "--mutants"], "profile": "quick", "seed": 0, "elapsed_s": 1.0,
            "overall": {"records": 1, **overall}, "records": [rec]}


def test_5_a_consistent_mutation_file_passes_the_schema():
    from fedtheory.checks.schema import check_mutation_payload

    check_mutation_payload(_mutation_file())


@pytest.mark.parametrize("edit, match", [
    (lambda m: m["overall"].update(killed=10 ** 30, mutants=10 ** 30 + 1), "adds? up to"),  # huge counts drew a page
    (lambda m: m["records"][0].update(killed=3, mutants=4, killed_by={"units": 3}), "of its outcomes are killed"),
    (lambda m: m["records"][0]["killed_by"].update(simulation=5), "killed_by adds up to"),
    (lambda m: m["overall"].update(records=7), "the file holds 1 record"),
    (lambda m: (m["records"].append(dict(m["records"][0])), m["overall"].update(records=2)),
     "the records' mutants add up to"),
])
def test_5_a_mutation_file_whose_counts_disagree_is_refused(edit, match):
    from fedtheory.checks.schema import SchemaError, check_mutation_payload

    m = _mutation_file()
    edit(m)
    with pytest.raises(SchemaError, match=match):
        check_mutation_payload(m)


@pytest.mark.parametrize("seed", ["-1", str(2 ** 63), "9" * 30])
def test_6_check_seed_out_of_range_names_the_flag_and_its_range(capsys, no_mutation_run, seed):
    from fedtheory.cli import main

    for extra in ([], ["--mutants"]):
        assert main(["check", "--only", "drori2014", "--seed", seed, "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert "--seed" in err and "9223372036854775807" in err  # was "seeds=[...] is invalid: ... non-negative"


def test_7_a_transcription_or_collection_of_another_type_is_refused():
    from fedtheory._validation import FedTheoryError
    from fedtheory.theory import register_paper

    with pytest.raises(FedTheoryError, match="transcription must be a string"):
        _bound("rel5tr", ("L_smooth_global",)).__class__(**{**_bound_kwargs(), "transcription": 12345})
    with pytest.raises(FedTheoryError, match="collection must be a string"):
        register_paper("rel5col", collection=["zoo"])  # was registered as the collection "['zoo']"


def _bound_kwargs():
    import dataclasses

    b = _bound("rel5kw", ())
    return {f.name: getattr(b, f.name) for f in dataclasses.fields(b) if f.init}


def test_8_a_recursive_macro_is_named_so_it_reads(tmp_path, capsys):
    from fedtheory.cli import main

    src = tmp_path / "rec.tex"
    src.write_text("\\newcommand{\\a}[1]{#1\\a{#1}}\n\\[ \\|x\\| \\le \\a{L} \\]\n")
    assert main(["new-paper", "recp", "--from-latex", str(src), "--dir", str(tmp_path)]) == 2
    assert 'is the macro "a" recursive?' in capsys.readouterr().err  # was "is the macro a recursive?"


def test_9_a_nan_constant_a_check_passes_is_named_not_a_number():
    import numpy as np

    import fedtheory.sim as S
    from fedtheory.checks import certify
    from fedtheory.plugins import record

    rng = np.random.default_rng(0)
    p = S.LeastSquaresProblem(rng.normal(size=(3, 20, 4)), rng.normal(size=(3, 20)))
    c = certify(record("drori2014.thm3_1"), problem=p)
    assert c.applicable
    (low,) = c.admits({"L": c.values["L"] / 2})
    assert "is below the certified L" in low
    (nan,) = c.admits({"L": float("nan")})
    assert "L = nan is not a number" in nan  # was "L = nan is below the certified L"
