"""Khaled, Mishchenko & Richtarik (2020), written from memory (zoo, unverified): the records against hand
computations, the per-sample certificate, the checks' verdicts and negative controls, and that their findings are
listed apart (the transcription is unverified)."""
import pytest

from fedtheory.checks import Session
from fedtheory.papers.khaled2020 import checks, records
from fedtheory.sim import AdditiveNoise
from fedtheory.theory import paper_info


def test_identical_worked_by_hand():
    """gamma = 0.1, mu = 0.5, T = 2, D0 = 2, sigma = 1, M = 4, L = 1, H = 2: (1 - 0.05)^2 * 2 = 1.805;
    0.1 * 1/(0.5 * 4) = 0.05; 2 * 0.01 * 1 * 1 * 1/0.5 = 0.04; total 1.895. Conditions: 4 gamma L = 0.4 <= 1,
    8 gamma L (H - 1) = 0.8 <= 1."""
    v = {"lr": 0.1, "mu": 0.5, "T": 2, "D0": 2.0, "sigma": 1.0, "M": 4, "L": 1.0, "H": 2}
    assert records.IDENTICAL.evaluate(v) == pytest.approx(1.895, rel=1e-14)
    assert records.IDENTICAL.conditions_failed(v) == []
    assert any(c.startswith("step_local_steps") for c in records.IDENTICAL.conditions_failed({**v, "H": 3}))


def test_heterogeneous_worked_by_hand():
    """D0 = 2, gamma = 0.1, T = 10, zeta = 1, sigma = 1 (sigma_dif^2 = 2), M = 4, L = 1, H = 2: 4 * 2/(0.1 * 10) = 8;
    4 * 0.1 * 2/4 = 0.2; 32 * 0.01 * 1 * 1 * 2 = 0.64; total 8.84."""
    v = {"D0": 2.0, "lr": 0.1, "T": 10, "zeta": 1.0, "sigma": 1.0, "M": 4, "L": 1.0, "H": 2}
    assert records.HETEROGENEOUS.evaluate(v) == pytest.approx(8.84, rel=1e-14)


def test_unverified_and_in_the_zoo():
    assert paper_info("khaled2020").collection == "zoo"
    assert records.IDENTICAL.unverified and records.HETEROGENEOUS.unverified


def test_additive_noise_is_a_premise():
    """The papers assume every sample function convex and L-smooth; with additive noise the sample functions are f_m
    plus a linear term, so the catalogue's certificates of f_m are theirs: the records require that oracle."""
    assert records.IDENTICAL.requires["oracle"] == records.HETEROGENEOUS.requires["oracle"] == "additive"
    assert AdditiveNoise(0.1).name == "additive"


def test_check_verdicts():
    s = Session(seed=0)
    rows = checks.identical(s) + checks.heterogeneous(s)
    inside = [r for r in rows if r.verdict != "not_applicable"]
    n = sum(len(v) for v in checks.TERM_SETTINGS.values())  # issue 45: a row per additive term where it dominates
    assert len(inside) == 4 + n and all(r.verdict == "holds" and r.ratio > 1 for r in inside)
    out = [r for r in rows if r.verdict == "not_applicable"]
    assert len(out) == 3
    assert any(c.startswith("identical_data: refused") for r in out for c in r.conditions_failed)
    assert sum(any(c.startswith("step_local_steps") for c in r.conditions_failed) for r in out) == 2


def test_negative_controls_fail_and_findings_are_listed_apart():
    """Under the controls the bounds are violated; a finding on these records (unverified transcriptions) is listed
    apart, never counted (checks.execution.unverified_rule, applied to every check's rows)."""
    from fedtheory.checks.execution import unverified_rule

    s = Session(seed=0)
    assert [r.verdict for r in checks._identical_control(s) + checks._heterogeneous_control(s)] == ["violated"] * 2
    row = checks.identical(s)[0]
    row.verdict = "violated"  # as if the measurement had exceeded the remembered bound
    unverified_rule([row])
    assert row.scope == "unverified_transcription" and not row.is_finding
