"""The results file's schema: what ``fedtheory check --out`` writes and ``fedtheory report`` reads, defined once.

Both sides use it: every row a check returns is held to :data:`RECORD` before it is kept
(``checks.execution.checked_rows``: a row that breaks it becomes an ``error`` row naming the field, never a file the
report refuses), and ``fedtheory report`` refuses a results file that breaks it (:func:`check_payload`: exit 2,
naming the record and the field).
``docs/results.md`` is :func:`schema_markdown`'s text (a test holds the two equal).

JSON types are named as JSON names them: ``object``, ``list``, ``string``, ``integer``, ``number`` (an integer
counts), ``boolean``, ``null``. A field of type ``numbers`` is a list of numbers in which a non-finite value is the
string ``"inf"``, ``"-inf"`` or ``"nan"`` (how results files write them: strict JSON has no Infinity) and a missing
one ``null``. A field that is not required may be absent (the report then takes its default); ``fedtheory check``
writes every field.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["EXTRA", "FINDINGS", "MEASUREMENTS", "MUTANT_OUTCOME", "MUTATION", "MUTATION_OVERALL", "MUTATION_RECORD",
           "PAYLOAD", "RECORD", "RUN_CURVES", "SERIES", "Field", "SchemaError", "check_mutation_payload",
           "check_payload", "check_record", "check_run_curves", "schema_markdown"]

#: How deeply a record may nest objects and lists (``fedtheory.files.MAX_JSON_DEPTH`` bounds a file as a whole).
MAX_RECORD_DEPTH = 60
NON_FINITE = ("inf", "-inf", "nan")


class SchemaError(ValueError):
    """A results payload or record that breaks the schema; the message names the record and the field."""


@dataclass(frozen=True)
class Field:
    """One field: the JSON types it may have, whether it must be there (and not null), what it holds."""

    types: tuple[str, ...]
    doc: str
    required: bool = False


ANY = ("object", "list", "string", "number", "boolean", "null")

#: One record (``CheckResult.to_json``): one verdict.
RECORD: dict[str, Field] = {
    "id": Field(("string",), "the result's id: a record id or a check id, dotted identifiers (`paper.thm1`)", True),
    "paper": Field(("string",), "the paper's short name", True),
    "kind": Field(("string",), "bound, rate, claim, identity or symbolic", True),
    "verdict": Field(("string",), "holds, violated, not_applicable, rate_consistent, rate_inconsistent, "
                     "claim_supported, claim_refuted, inconclusive, ambiguous, proof_step_loose or error", True),
    "measured": Field(ANY, "what was measured: a number ('inf', '-inf', 'nan' as strings), a label, a list, or an "
                      "object of values by setting (e.g. {\"0.3\": -0.095} by client fraction); null: none"),
    "bound": Field(ANY, "the bound's value at the measured setting, in the same forms as measured"),
    "ratio": Field(("number", "string", "null"), "bound / measured for a bound ('inf' as a string), else null"),
    "conditions_failed": Field(("list",), "each failing side condition as text: 'name: relation (lhs vs rhs)'"),
    "problem": Field(("string", "null"), "the problem the row was measured on"),
    "params": Field(("object",), "the setting: 'setting' (words), beta, eta, ... and every value the verdict used"),
    "seed": Field(("integer", "null"), "the base seed of the run"),
    "source": Field(("string",), "seed file and theorem / equation"),
    "detail": Field(("string",), "the note: why the verdict, with its numbers"),
    "extra": Field(("object",), "what the figures and the reproduction need (see the extra fields below)"),
    "versions": Field(("object",), "library versions (name -> version text)"),
    "elapsed_s": Field(("number", "null"), "the row's share of its check's seconds"),
    "finding": Field(("string",), "the cause key rows of one finding share ('' : the row is its own)"),
    "scope": Field(("string",), "inside, outside_conditions, extrapolation, units_artifact, regime_boundary, "
                   "not_reproduced or by_construction; only 'inside' findings count"),
    "self_check": Field(("boolean",), "an implementation self-check (never a finding)"),
    "vacuous": Field(("boolean",), "the bound is above a trivial bound of its left side"),
    "trivial_bound": Field(("number", "string", "null"), "that trivial bound"),
    "family_size": Field(("integer", "null"), "comparisons the multiple-testing correction covers"),
    "seeds": Field(("integer", "null"), "independent runs the verdict rests on"),
    "quote": Field(("string",), "the sentence tested, with its seed file and line"),
    "finding_class": Field(("string",), "erratum, inconsistent_rate, false_as_stated or claim_refuted for a finding "
                           "verdict; '' otherwise"),
}

#: The fields of a record's ``extra`` that the report reads; any other field may hold any JSON value.
EXTRA: dict[str, Field] = {
    "series": Field(("object", "null"), "a per-round bound's series (see series below)"),
    "measurements": Field(("object", "null"), "a claim's measurements (see measurements below)"),
    "lhs": Field(("string", "null"), "the left side's name"),
    "tightest_round": Field(("integer", "null"), "the round where bound / measured is smallest"),
    "statement": Field(("string", "null"), "a claim's statement"),
    "title": Field(("string", "null"), "the record's title"),
    "decision_rule": Field(("object", "null"), "a claim's decision rule and its parameters"),
    "ci": Field(("numbers", "null"), "a fitted rate's 95% interval"),
    "values": Field(("numbers", "null"), "a measured rate's values over its grid (params.T_grid)"),
    "quantities": Field(("object", "null"), "the paper's symbols -> the tool's quantities (K -> clients)"),
    "simulations": Field(("list", "null"), "the simulations behind the verdict (problem, algorithm, runs, ...)"),
    "transcription": Field(("string", "null"), "how the record's statement was read: 'checked against ...' or "
                           "'unverified: ...' (Record.transcription)"),
}

#: ``extra.series``: a per-round bound, at most 60 log-spaced rounds.
SERIES: dict[str, Field] = {
    "x": Field(("numbers", "null"), "the rounds"),
    "measured": Field(("numbers", "null"), "the measured mean at each round"),
    "bound": Field(("numbers", "null"), "the bound at each round"),
    "measured_se": Field(("numbers", "null"), "the standard error of the measured mean"),
}

#: ``extra.measurements``: a claim's measured curves and scalars.
MEASUREMENTS: dict[str, Field] = {
    "x": Field(("numbers", "null"), "the curves' common abscissa"),
    "series": Field(("object", "null"), "name -> {\"y\": numbers, \"se\": numbers or null}"),
    "scalars": Field(("object", "null"), "name -> a value"),
    "units": Field(("object", "null"), "name -> the unit the claim declares for it (`Claim.measurement_units`), named "
                   "on the report's axes"),
}

#: ``runs``: one entry per run directory (``fedtheory.empirical.runs.round_curves``).
RUN_CURVES: dict[str, Field] = {
    "dir": Field(("string",), "the run directory", True),
    "label": Field(("string", "null"), "data set, model, partition, clients, rounds"),
    "algorithm": Field(("string", "null"), "the algorithm trained"),
    "status": Field(("string", "null"), "the manifest's status (completed, running, ...)"),
    "units": Field(("object", "null"), "column -> its unit (`MEASURE_UNITS`)"),
    "quantities": Field(("object",), "column -> the quantity in words, in the order drawn", True),
    "definitions": Field(("object", "null"), "column -> its definition (`MEASURES`)"),
    "settings": Field(("list",), "one entry per setting (hyperparameters and beta; its runs differ in the seed): "
                      "{\"setting\", \"seeds\", \"diverged\", \"curves\": column -> {\"round\", \"mean\", \"se\", "
                      "\"n\"}}", True),
}

#: The file: the run's description, its summary and its records (``checks.results_payload`` and ``fedtheory check``).
PAYLOAD: dict[str, Field] = {
    "results": Field(("list",), "the records, in registration order", True),
    "fedtheory": Field(("string", "null"), "the version that wrote the file"),
    "command": Field(("list", "string", "null"), "the command line (a list of arguments)"),
    "profile": Field(("string", "null"), "quick or full"),
    "seed": Field(("integer", "null"), "the base seed"),
    "plugins": Field(("list", "null"), "the --plugin targets, as the reproduce lines load them"),
    "plugins_given": Field(("list", "null"), "each --plugin as given, the target it became and how"),
    "elapsed_s": Field(("number", "null"), "wall-clock seconds of the run"),
    "exit_code": Field(("integer", "null"), "the run's exit status (0 / 1 findings / 3 a check failed)"),
    "summary": Field(("object", "null"), "verdict -> number of rows"),
    "findings": Field(("object", "null"), "the distinct findings and what is not counted (see findings below)"),
    "collections": Field(("object", "null"), "per collection of papers (e.g. zoo): {\"papers\", \"rows\", \"counted\", "
                         "\"unverified\", \"tested\", \"statement_only\"}"),
    "load_s": Field(("number", "null"), "seconds spent loading the plug-ins"),
    "timings": Field(("list", "null"), "each check's seconds, CPU seconds, where it ran, rows, simulations"),
    "worst_case": Field(("list", "null"), "--worst-case: one record per searched bound"),
    "execution": Field(("object", "null"), "--workers / --scheduler: tasks, retries, failures"),
    "runs": Field(("list", "null"), "--runs DIR: each run directory's Delta^t, generalization gap and test accuracy "
                  "over the rounds per setting (`fedtheory.empirical.runs.round_curves`), which the report draws"),
}

#: ``findings`` (``checks.summarize_findings``).
FINDINGS: dict[str, Field] = {
    "findings": Field(("object", "null"), "finding key -> the labels of its rows (counted in the exit code)"),
    "classes": Field(("object", "null"), "finding class -> finding keys"),
    "not_counted": Field(("object", "null"), "key -> {\"scope\": [...], \"rows\": [labels]}"),
    "errors": Field(("list", "null"), "the checks that failed: {\"row\", \"error\"}"),
    "ambiguous": Field(("list", "null"), "labels of ambiguous rows"),
    "proof_step_loose": Field(("list", "null"), "labels of proof-step-loose rows"),
    "self_checks": Field(("list", "null"), "labels of implementation self-check rows"),
    "vacuous": Field(("list", "null"), "labels of vacuous bound rows"),
    "loose": Field(("list", "null"), "labels of bounds looser than LOOSE_FACTOR"),
    "robustness": Field(("object", "null"), "finding key -> {\"fragile\", \"text\", \"margin\", \"exact\", "
                        "\"choices\"} (checks.robustness)"),
    "fragile": Field(("list", "null"), "keys of findings lost within 10% of a free choice"),
}


#: The mutation file: what ``fedtheory check --mutants --out`` writes (``checks.mutants.mutation_payload``) and
#: ``fedtheory report --mutants`` draws.
MUTATION: dict[str, Field] = {
    "overall": Field(("object",), "the totals over every record (see the mutation totals below)", True),
    "records": Field(("list",), "one entry per mutated record (see a mutated record below)", True),
    "command": Field(("list", "string", "null"), "the command line (a list of arguments)"),
    "profile": Field(("string", "null"), "quick or full"),
    "seed": Field(("integer", "null"), "the base seed"),
    "elapsed_s": Field(("number", "null"), "wall-clock seconds of the run"),
}

_COUNTS = ("mutants", "killed", "survived", "equivalent", "weaker", "undecided")

#: ``overall`` of the mutation file.
MUTATION_OVERALL: dict[str, Field] = {
    "records": Field(("integer",), "records mutated", True),
    **{k: Field(("integer",), doc, True) for k, doc in (
        ("mutants", "mutants generated"), ("killed", "mutants a layer reported"),
        ("survived", "stronger mutants no layer reported"),
        ("equivalent", "mutants sympy proves equal to the statement"),
        ("weaker", "mutants not stronger anywhere the checks evaluated (discarded)"),
        ("undecided", "mutants of a statement that is itself reported on every deciding row"))},
    "score": Field(("number", "null"), "killed / (killed + survived); null when none is either"),
    "killed_by": Field(("object",), "layer (units, rate, simulation) -> mutants it killed", True),
}

#: One entry of ``records`` in the mutation file (``RecordScore.as_dict``).
MUTATION_RECORD: dict[str, Field] = {
    "record": Field(("string",), "the record's id", True),
    **{k: Field(("integer",), f"its {k} mutants" if k != "mutants" else "its mutants", True) for k in _COUNTS},
    "score": Field(("number", "null"), "killed / (killed + survived); null when none is either"),
    "killed_by": Field(("object",), "layer -> mutants it killed", True),
    "seconds": Field(("number", "null"), "seconds spent on the record"),
    "note": Field(("string", "null"), "which layers could decide (e.g. no simulation row holds)"),
    "outcomes": Field(("list",), "every mutant's outcome (see a mutant's outcome below)", True),
}

#: One entry of a mutated record's ``outcomes`` (``MutantOutcome.as_dict``).
MUTANT_OUTCOME: dict[str, Field] = {
    "kind": Field(("string",), "scale, coefficient, term, exponent, swap or order", True),
    "mutant": Field(("string",), "what changed, in words", True),
    "status": Field(("string",), "killed, survived, equivalent, weaker or undecided", True),
    "layer": Field(("string", "null"), "the layer that killed it: units, rate or simulation ('' otherwise)"),
    "reason": Field(("string", "null"), "why it was not killed, measured"),
    "rows": Field(("list", "null"), "the rows that killed it (at most 5)"),
}

MUTANT_STATUSES = ("killed", "survived", "equivalent", "weaker", "undecided")


# ------------------------------------------------------------------------------------ checking


def _type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__  # not a JSON value


def _a(t: str) -> str:
    return {"object": "an object", "list": "a list", "string": "a string", "integer": "an integer",
            "number": "a number", "boolean": "true/false", "null": "null",
            "numbers": "a list of numbers"}.get(t, f"a {t}")


def _fits(v: Any, types: tuple[str, ...]) -> bool:
    t = _type(v)
    if t in types or (t == "integer" and "number" in types):
        return True
    if "numbers" in types and isinstance(v, list):
        return all(_type(x) in ("integer", "number", "null") or x in NON_FINITE for x in v)
    return False


def _expect(obj: Mapping[str, Any], fields: Mapping[str, Field], where: str) -> None:
    for k, f in fields.items():
        if k not in obj and not f.required:
            continue
        v = obj.get(k)
        if f.required and v is None:
            raise SchemaError(f"{where}: no {k!r}")
        if not _fits(v, f.types):
            if "numbers" in f.types and isinstance(v, list):
                other = sorted({_a(_type(x)) for x in v if not (_type(x) in ("integer", "number", "null")
                                                               or x in NON_FINITE)})
                raise SchemaError(f"{where}.{k} holds " + ", ".join(other) + ", expected numbers only (non-finite "
                                  "ones as 'inf', '-inf', 'nan')")
            raise SchemaError(f"{where}: {k!r} is {_a(_type(v))}, expected " + " or ".join(_a(t) for t in f.types))


def _plain_json(v: Any, where: str) -> None:
    """Only JSON values (objects with string keys, lists, strings, finite numbers, true/false, null), at most
    MAX_RECORD_DEPTH levels deep; counted without recursion."""
    stack = [(v, 0)]
    while stack:
        x, d = stack.pop()
        if d > MAX_RECORD_DEPTH:
            raise SchemaError(f"{where}: nested deeper than {MAX_RECORD_DEPTH} levels")
        if isinstance(x, dict):
            for k, y in x.items():
                if not isinstance(k, str):
                    raise SchemaError(f"{where}: an object key is {_a(_type(k))}, expected a string")
                stack.append((y, d + 1))
        elif isinstance(x, list):
            stack.extend((y, d + 1) for y in x)
        elif isinstance(x, float) and not math.isfinite(x):
            raise SchemaError(f"{where}: holds the number {x} (non-finite numbers are written 'inf', '-inf', 'nan')")
        elif _type(x) not in ANY + ("integer",):
            raise SchemaError(f"{where}: holds {type(x).__name__} {str(x)[:40]!r}, not a JSON value")


def check_record(rec: Any, where: str = "the record") -> None:
    """Raise :class:`SchemaError` naming ``where`` and the field where ``rec`` (one record as JSON values) breaks
    :data:`RECORD`, :data:`EXTRA`, :data:`SERIES` or :data:`MEASUREMENTS`, or is not plain JSON."""
    if not isinstance(rec, Mapping):
        raise SchemaError(f"{where} is {_a(_type(rec))}, expected an object")
    if isinstance(rec.get("id"), str):
        where += f" (id {rec['id'][:80]!r})"
    _plain_json(rec, where)
    _expect(rec, RECORD, where)
    if not all(isinstance(c, str) for c in rec.get("conditions_failed") or []):
        raise SchemaError(f"{where}: 'conditions_failed' holds something else than text")
    ex = rec.get("extra") or {}
    _expect(ex, EXTRA, f"{where}, extra")
    if (rec.get("params") or {}).get("T_grid") is not None:
        _expect(rec["params"], {"T_grid": Field(("numbers",), "")}, f"{where}, params")
    if ex.get("series") is not None:
        _expect(ex["series"], SERIES, f"{where}, extra.series")
    m = ex.get("measurements")
    if m is not None:
        _expect(m, MEASUREMENTS, f"{where}, extra.measurements")
        for k, v in (m.get("series") or {}).items():
            if not isinstance(v, Mapping):
                raise SchemaError(f"{where}, extra.measurements.series[{k!r}] is {_a(_type(v))}, expected an object")
            _expect(v, {"y": Field(("numbers", "null"), ""), "se": Field(("numbers", "null"), "")},
                    f"{where}, extra.measurements.series[{k!r}]")


def check_payload(data: Any) -> None:
    """Raise :class:`SchemaError` naming the record and the field where ``data`` is not a results payload as
    ``fedtheory check --out`` writes it (:data:`PAYLOAD`, :data:`FINDINGS`, every record by :func:`check_record`)."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"the file holds {_a(_type(data))}, expected an object with 'results'")
    if "results" not in data and "overall" in data and "records" in data:
        raise SchemaError("it is a mutation file (`fedtheory check --mutants --out`), not a results file: draw it "
                          "with `fedtheory report RESULTS.json --mutants FILE`")
    _expect(data, PAYLOAD, "the results file")
    f = data.get("findings")
    if isinstance(f, Mapping):
        _expect(f, FINDINGS, "'findings'")
        for name in ("findings", "classes"):
            for k, v in (f.get(name) or {}).items():
                if not isinstance(v, list):
                    raise SchemaError(f"'findings'.{name}[{k!r}] is {_a(_type(v))}, expected a list of rows")
        for k, v in (f.get("not_counted") or {}).items():
            if not isinstance(v, Mapping) or not isinstance(v.get("rows", []), list):
                raise SchemaError(f"'findings'.not_counted[{k!r}] is not an object with a list of rows")
    for i, r in enumerate(data["results"]):
        check_record(r, f"record {i}")
    for i, block in enumerate(data.get("runs") or []):
        check_run_curves(block, f"runs[{i}]")


def check_run_curves(block: Any, where: str = "the run directory") -> None:
    """Raise :class:`SchemaError` naming ``where`` and the field where ``block`` (one entry of a results file's
    ``runs``) breaks :data:`RUN_CURVES`: every curve a list of rounds (integers) with as many means (numbers or
    null), standard errors (null, or as many) and counts."""
    if not isinstance(block, Mapping):
        raise SchemaError(f"{where} is {_a(_type(block))}, expected an object")
    _plain_json(block, where)
    _expect(block, RUN_CURVES, where)
    for j, st in enumerate(block["settings"]):
        at = f"{where}.settings[{j}]"
        if not isinstance(st, Mapping) or not isinstance(st.get("curves", {}), Mapping):
            raise SchemaError(f"{at} is not an object with an object 'curves'")
        for k in ("seeds", "diverged"):
            if not isinstance(st.get(k, []), list):
                raise SchemaError(f"{at}: {k!r} is {_a(_type(st.get(k)))}, expected a list")
        for c, cur in (st.get("curves") or {}).items():
            here = f"{at}.curves[{c!r}]"
            if not isinstance(cur, Mapping):
                raise SchemaError(f"{here} is {_a(_type(cur))}, expected an object")
            _expect(cur, {"round": Field(("numbers",), "", True), "mean": Field(("numbers",), "", True),
                          "se": Field(("numbers", "null"), ""), "n": Field(("numbers", "null"), "")}, here)
            if not all(isinstance(t, int) and not isinstance(t, bool) for t in cur["round"]):
                raise SchemaError(f"{here}.round holds something else than round numbers (integers)")
            for k in ("mean", "se", "n"):
                if cur.get(k) is not None and len(cur[k]) != len(cur["round"]):
                    raise SchemaError(f"{here}: {len(cur[k])} {k} value(s) for {len(cur['round'])} round(s)")


def _counts(obj: Mapping[str, Any], where: str) -> None:
    for k, v in (obj.get("killed_by") or {}).items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise SchemaError(f"{where}: killed_by[{k!r}] is {_a(_type(v))} {str(v)[:20]}, expected a count (an "
                              "integer >= 0)")
    for k in _COUNTS:
        if isinstance(obj.get(k), int) and obj[k] < 0:
            raise SchemaError(f"{where}: {k!r} is {obj[k]}, expected a count (an integer >= 0)")
    score = obj.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool) and not 0 <= score <= 1:
        raise SchemaError(f"{where}: 'score' is {score}, expected a share between 0 and 1 (or null)")


def _tally(obj: Mapping[str, Any], where: str, outcomes: Sequence[Any] | None = None) -> None:
    """The counts agree with each other: the statuses add up to 'mutants' (and, for a record, to its outcomes, each
    status counted), killed_by adds up to 'killed' (a hand-edited or truncated file draws no score it does not
    hold)."""
    n = {k: obj.get(k) for k in _COUNTS}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in n.values()):
        return
    parts = sum(n[k] for k in MUTANT_STATUSES)
    if parts != n["mutants"]:
        raise SchemaError(f"{where}: 'mutants' is {n['mutants']}, but its killed, survived, equivalent, weaker and "
                          f"undecided add up to {parts}")
    kb = obj.get("killed_by")
    if (isinstance(kb, Mapping) and kb and all(isinstance(v, int) for v in kb.values())
            and sum(kb.values()) != n["killed"]):
        raise SchemaError(f"{where}: 'killed' is {n['killed']}, but killed_by adds up to {sum(kb.values())}")
    if outcomes is not None:
        for k in MUTANT_STATUSES:
            got = sum(1 for o in outcomes if isinstance(o, Mapping) and o.get("status") == k)
            if got != n[k]:
                raise SchemaError(f"{where}: {k!r} is {n[k]}, but {got} of its outcomes are {k}")


def _totals(data: Mapping[str, Any]) -> None:
    """'overall' is the sum of the records' counts."""
    o, recs = data["overall"], data["records"]
    if isinstance(o.get("records"), int) and o["records"] != len(recs):
        raise SchemaError(f"'overall': 'records' is {o['records']}, but the file holds {len(recs)} record(s)")
    for k in _COUNTS:
        vals = [r.get(k) for r in recs]
        if isinstance(o.get(k), int) and all(isinstance(v, int) for v in vals) and o[k] != sum(vals):
            raise SchemaError(f"'overall': {k!r} is {o[k]}, but the records' {k} add up to {sum(vals)}")


def check_mutation_payload(data: Any) -> None:
    """Raise :class:`SchemaError` naming the record and the field where ``data`` is not a mutation file as
    ``fedtheory check --mutants --out`` writes it (:data:`MUTATION`, :data:`MUTATION_OVERALL`,
    :data:`MUTATION_RECORD`, :data:`MUTANT_OUTCOME`; plain JSON)."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"the file holds {_a(_type(data))}, expected an object with 'overall' and 'records'")
    if "results" in data and "overall" not in data:
        raise SchemaError("it is a results file (`fedtheory check --out`), not a mutation file (`fedtheory check "
                          "--mutants --out`)")
    _plain_json(data, "the mutation file")
    _expect(data, MUTATION, "the mutation file")
    _expect(data["overall"], MUTATION_OVERALL, "'overall'")
    _counts(data["overall"], "'overall'")
    for i, r in enumerate(data["records"]):
        where = f"mutated record {i}"
        if not isinstance(r, Mapping):
            raise SchemaError(f"{where} is {_a(_type(r))}, expected an object")
        if isinstance(r.get("record"), str):
            where += f" ({r['record'][:80]!r})"
        _expect(r, MUTATION_RECORD, where)
        _counts(r, where)
        for j, o in enumerate(r["outcomes"]):
            w = f"{where}, outcome {j}"
            if not isinstance(o, Mapping):
                raise SchemaError(f"{w} is {_a(_type(o))}, expected an object")
            _expect(o, MUTANT_OUTCOME, w)
            if o["status"] not in MUTANT_STATUSES:
                raise SchemaError(f"{w}: 'status' is {o['status'][:40]!r}, expected one of "
                                  + ", ".join(MUTANT_STATUSES))
        _tally(r, where, r["outcomes"])
    _tally(data["overall"], "'overall'")
    _totals(data)


# ------------------------------------------------------------------------------------ the documentation


def _table(title: str, fields: Mapping[str, Field]) -> list[str]:
    lines = [f"### {title}", "", "| field | JSON type | holds |", "|---|---|---|"]
    for k, f in fields.items():
        types = " or ".join(f.types) + (" (required)" if f.required else "")
        lines.append(f"| `{k}` | {types} | {f.doc.replace('|', '/')} |")
    return lines + [""]


def schema_markdown() -> str:
    """The schema as the Markdown tables of ``docs/results.md``."""
    parts = [("The file", PAYLOAD), ("A record (one entry of `results`)", RECORD),
             ("`extra`: the fields the report reads (any other field: any JSON value)", EXTRA),
             ("`extra.series`", SERIES), ("`extra.measurements`", MEASUREMENTS), ("`findings`", FINDINGS),
             ("`runs`: a run directory's curves over the rounds (`check --runs DIR`)", RUN_CURVES),
             ("The mutation file (`fedtheory check --mutants --out`; `fedtheory report --mutants`)", MUTATION),
             ("The mutation totals (`overall`)", MUTATION_OVERALL), ("A mutated record (one entry of `records`)",
                                                                      MUTATION_RECORD),
             ("A mutant's outcome (one entry of a record's `outcomes`)", MUTANT_OUTCOME)]
    out: list[str] = []
    for title, fields in parts:
        out += _table(title, fields)
    return "\n".join(out).rstrip() + "\n"
