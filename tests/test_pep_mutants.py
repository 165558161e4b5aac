"""Power on provably false mutants (issue 44, item 4): the PEP layer of ``check --mutants`` classifies each mutant of a
bound with a PEP as provably false (the PEP's worst case, rebuilt and re-run by the simulator, refutes it), provably
true at the PEP's setting (the SDP's upper value lies below it) or undecided; each kill is judged by the truth at the
setting it was made (the PEP's, or a check's, where a deterministic certified row proves it false and a statistical
one leaves it undecided); power = provably false mutants killed where they are provably false / provably false, and
no mutant may be killed where it is provably true (a false alarm)."""
from __future__ import annotations

import pytest

pytest.importorskip("PEPit")
pytest.importorskip("cvxpy")

from fedtheory.checks import (
    Session,  # noqa: E402
    all_checks,  # noqa: E402
)
from fedtheory.checks.mutants import format_mutation_table, mutation_payload, score_record  # noqa: E402
from fedtheory.plugins import record  # noqa: E402
from fedtheory.worst.mutants import PEPLayer  # noqa: E402
from fedtheory.worst.pep import solve_pep  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def drori_score():
    rec = record("drori2014.thm3_1")
    return score_record(rec, [all_checks()["drori2014.thm3_1"]], Session(), layers=[PEPLayer()])


def test_halved_and_tenth_bounds_are_provably_false_and_killed(drori_score):
    """D&T's bound is attained (the PEP's worst case equals it), so every scaling below 1 is refuted by the rebuilt
    Huber-like instance, whatever row kills it."""
    by = {o.mutant.description: o for o in drori_score.outcomes}
    for d in ("the whole bound x 1/2", "the whole bound x 1/10"):
        o = by[d]
        assert o.truth == "provably_false" and "re-run by the simulator" in o.truth_reason, (d, o.truth_reason)
        assert o.status == "killed"


def test_weaker_mutants_are_provably_true_and_no_true_mutant_is_killed_on_its_values(drori_score):
    q = drori_score.power()
    assert q["provably_true"] > 0 and q["false_alarms"] == 0
    assert q["provably_false"] > 0 and q["power"] == 1.0
    # D&T's check rows are deterministic and certified: their kills prove the mutant false at the check's setting
    killed = [o for o in drori_score.outcomes if o.status == "killed" and o.layer == "simulation"]
    assert killed and all(o.kill_setting == "other" and o.kill_truth == "provably_false" for o in killed)
    by = {o.mutant.description: o for o in drori_score.outcomes}
    o = by["the dependence on N moved by 1 (x N^1)"]  # larger at every N >= 1: true, killed by the rate layer only
    assert o.truth == "provably_true" and o.layer in ("", "rate")


def test_the_table_and_payload_report_power(drori_score):
    table = format_mutation_table([drori_score])
    assert "power = provably false mutants killed at a setting where they are provably false" in table
    assert "false alarms" in table
    t = mutation_payload([drori_score])["overall"]["truth"]
    assert t["provably_false"] == drori_score.power()["provably_false"] and t["power"] == 1.0
    assert mutation_payload([drori_score])["overall"]["score_killed_of_stronger"] is not None


def test_a_relaxed_pep_whose_instance_leaves_the_class_proves_nothing_false():
    """FedInit Thm 2's PEP (convex clients, f strongly convex between the points only): the rebuilt instance is not PL,
    so no mutant is shown false by it; scalings below the PEP's value are undecided, not counted."""
    from fedtheory.worst.mutants import PEPLayer as Layer

    rec = record("fedinit.thm2")
    prepared = Layer().prepare(rec)
    assert prepared is not None and prepared.spec is not None
    assert prepared.instance is None or not prepared.instance.in_class
    from fedtheory.checks.mutants import mutants_of

    truths = {prepared.classify(m)[0] for m in mutants_of(rec) if prepared.classify(m) is not None}
    assert "provably_false" not in truths


def test_the_tightness_table_gets_a_pep_column():
    """benchmarks/zoo_tightness.py --pep: a bound record of the results file with a PEP declaration gets its PEP at the
    check's constants; D&T's is exact and attained (value / bound 1), stated 'exact' in the table."""
    import importlib.util
    from pathlib import Path

    from fedtheory.report import tightness_markdown, tightness_table

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "zoo_tightness.py"
    spec = importlib.util.spec_from_file_location("zoo_tightness", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    payload = {"results": [{"id": "drori2014.thm3_1", "kind": "bound", "paper": "drori2014", "verdict": "holds",
                            "ratio": 1.0}], "collections": {"zoo": {"papers": ["drori2014"]}}, "worst_case": []}
    out = mod.with_pep_rows(payload, "quick")
    row = tightness_table(out)[0]
    assert row["pep"]["exact"] is True and abs(row["pep"]["ratio"] - 1.0) < 1e-6
    assert "exact)" in tightness_markdown(out)


# ------------------------------------------------------------------------------------ one setting per decision


class _Classifier:
    """A PEP layer's classification at one setting (values), without solving anything."""

    def __init__(self, values):
        self.values = values

    def same_setting(self, params):
        return all(params.get(k) == v for k, v in self.values.items())


def _row(params, deterministic):
    from fedtheory.checks import CheckResult

    return CheckResult("r", "p", "bound", "violated", problem="prob", params=params,
                       extra={"deterministic": True} if deterministic else {})


def test_a_kill_is_judged_at_the_setting_it_was_made():
    """A statistical kill at a check's setting leaves the truth there undecided: a mutant provably true at the PEP's
    setting (SCAFFOLD's x 1/10 at N = S = 3, sigma = 0) killed at the check's (N = 20, S = 5, sigma > 0) is neither a
    false alarm nor a kill of a false statement; a deterministic certified row proves it false where it was made; a
    kill at the PEP's own setting of a mutant the PEP proves true is a false alarm (the rule can fail)."""
    from fedtheory.checks.mutants import Mutant, MutantOutcome, RecordScore, _row_kill

    pep = _Classifier({"N": 3, "S": 3, "sigma": 0.0})
    elsewhere = _row_kill([_row({"N": 20, "S": 5, "sigma": 0.316}, deterministic=False)], [pep])
    assert elsewhere["kill_setting"] == "other" and elsewhere["kill_truth"] == "undecided"
    proof = _row_kill([_row({"N": 20, "S": 5, "sigma": 0.0}, deterministic=True)], [pep])
    assert proof["kill_truth"] == "provably_false"
    here = _row_kill([_row({"N": 3, "S": 3, "sigma": 0.0, "setting": "x"}, deterministic=False)], [pep])
    assert here["kill_setting"] == "classified"

    def outcome(truth, status="killed", layer="simulation", **kill):
        return MutantOutcome(Mutant("r", "scale", "m", None), status, layer, truth=truth, **kill)

    score = RecordScore("r", [
        outcome("provably_true", **elsewhere),  # SCAFFOLD's case: not a false alarm
        outcome("provably_false", **proof),  # killed where provably false: counts in power
        outcome("provably_false", **elsewhere),  # killed only where undecided: not in power
        outcome("provably_false", status="survived", layer=""),
        outcome("provably_true", kill_setting="classified", kill_truth="provably_true"),  # a false alarm
    ])
    q = score.power()
    assert q["provably_false"] == 3 and q["killed"] == 1 and q["killed_undecided_there"] == 1
    assert abs(q["power"] - 1 / 3) < 1e-12
    assert q["false_alarms"] == 1 and q["true_killed_elsewhere_undecided"] == 1


@pytest.fixture(scope="module")
def cor2_2_scores():
    """Ghadimi & Lan's Corollary 2.2 scored with and without the PEP layer: its check rows are stochastic (a
    statistical kill), its PEP a subclass (deterministic gradients, sigma = 0 inside a variance bound sigma^2)."""
    rec = record("ghadimi2013.cor2_2")
    spec = [all_checks()["ghadimi2013.cor2_2"]]
    return (score_record(rec, spec, Session(), layers=[PEPLayer()]), score_record(rec, spec, Session()))


def test_a_statistical_kill_is_decided_by_a_later_deterministic_layer(cor2_2_scores):
    """A mutant the (noisy) check rows kill first and the PEP's rebuilt instance refutes too: the PEP's kill decides
    its truth (provably false at the PEP's setting), the first killer stays 'simulation' in the by-layer counts, and
    the power without the PEP layer does not count it. Without the PEP layer the same kill stays undecided (the
    control: the rule does not count a statistical kill)."""
    with_pep, without = cor2_2_scores
    o = {x.mutant.description: x for x in with_pep.outcomes}["the whole bound x 1/10"]
    assert o.status == "killed" and o.layer == "simulation" and o.decided_by == "pep"
    assert o.kill_setting == "classified" and o.kill_truth == "provably_false" and o.truth == "provably_false"
    assert any(r.startswith("pep: the PEP's worst case rebuilt") for r in o.rows)
    assert o.as_dict()["decided_by"] == "pep"
    q = with_pep.power()
    assert q["killed"] == q["provably_false"] > 0 and q["killed_without_pep"] == 0 and q["false_alarms"] == 0
    assert with_pep.by_layer()["pep"] == 0  # counted where it was first killed
    c = {x.mutant.description: x for x in without.outcomes}["the whole bound x 1/10"]
    assert c.status == "killed" and c.kill_truth == "undecided" and not c.decided_by


def test_a_subclass_instance_is_judged_at_the_constants_its_certificates_admit():
    """The PEP's instance for Corollary 2.2 has deterministic gradients (sigma = 0 certified), where the statement
    asks sigma > 0: the bound is evaluated at the PEP's setting's sigma, which the certificate admits (a variance
    bound is an upper constant), so the instance can refute a false mutant; a setting the certificates do not admit
    is never used."""
    from fedtheory.worst.pep.instance import counterexample
    from fedtheory.worst.pep.record import pep_sizes, pep_spec

    spec, _, _ = pep_spec("ghadimi2013.cor2_2", budget=pep_sizes("ghadimi2013.cor2_2", "quick"))
    pep = spec.build()
    cx = counterexample(spec, pep, solve_pep(pep), spec.simulated_algorithm())
    assert cx.in_class and cx.values["sigma"] == spec.values["sigma"] > 0
    assert not spec.record.conditions_failed(dict(cx.values))
    assert cx.values["L"] == spec.values["L"]  # the setting's L: the instance is L-smooth with its own L <= it
