"""Writing results: the verdict table the CLI prints, the JSON payload ``--out`` writes (public API)."""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from typing import Any, Mapping, Sequence, TextIO

from .. import files
from .._validation import ParameterError, printable
from ..theory.core import paper_info
from .results import FINDING_CLASSES, FINDINGS, CheckResult, errors, exit_code, finding_class_of, group_findings
from .robustness import finding_robustness

__all__ = ["cited_lines", "draft_records", "format_table", "format_timings", "print_results", "results_payload",
           "shared_lines", "simulation_text", "summarize", "summarize_findings", "write_json", "write_atomic",
           "check_writable", "fmt_number", "row_marks",
           "LOOSE_FACTOR"]

LOOSE_FACTOR = 1e6  # a bound looser than this factor (bound / measured) is reported as such in the summary

_SHOW_NOTE = {"violated", "not_applicable", "rate_consistent", "rate_inconsistent", "claim_supported", "claim_refuted",
              "inconclusive", "ambiguous", "proof_step_loose", "error"}
_SETTING_KEYS = ("beta", "eta", "rho", "alpha", "bits", "topology")


def fmt_number(x: Any) -> str:
    """3 significant digits; '-' for None; strings as they are."""
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)[:12]
    return f"{v:.3g}"


def _ratio_text(r: CheckResult) -> str:
    """bound / measured; a bound of exactly 0 that holds (the measured value equal to it within the run's rounding,
    rule 10) shows '= 0', not a ratio of 0 that reads like a failure."""
    if r.verdict == "holds" and isinstance(r.bound, (int, float)) and r.bound == 0:
        return "= 0"
    return fmt_number(r.ratio)


def _setting(r: CheckResult) -> str:
    text = "" if r.params.get("setting") is None else str(r.params["setting"])
    mapped = (r.extra or {}).get("quantities") or {}
    said = re.sub(r"\s*=\s*", "=", text)  # "K = 1" says K=1
    parts = [text] if text else []
    for k, v in r.params.items():
        if k == "setting" or v is None:
            continue
        if k in _SETTING_KEYS:
            parts.append(f"{k}={fmt_number(v)}")
        elif k in mapped and not isinstance(v, (list, dict)) and not re.search(
                rf"(?<![\w.]){re.escape(k)}={re.escape(fmt_number(v))}(?![\w.])", said):
            parts.append(f"{k}={fmt_number(v)}")  # a paper symbol the record maps, unless the setting text says it
    return " ".join(parts)


def row_marks(r: CheckResult) -> str:
    """Short markers after a row's verdict: [vacuous] (bound above a trivial bound of its left side),
    [self-check] (implementation self-check), [<scope>] (not counted: outside the statement's scope, see
    ``fedtheory.checks.SCOPES``)."""
    marks = []
    if r.vacuous:
        marks.append("vacuous")
    if r.self_check:
        marks.append("self-check")
    if r.scope != "inside":
        marks.append(r.scope)
    return "".join(f" [{m}]" for m in marks)


def format_table(results: Sequence[CheckResult], width: int | None = None, verbose: bool = False) -> str:
    """One row per result, grouped by paper; the note (failed conditions, claim evidence, missed rate terms,
    an unexpected outcome) on indented lines below it; with ``verbose`` every row's note (holds rows too).
    The setting column shows ``params['setting']`` first, then beta, eta, rho, alpha, bits, topology, and the
    params named by a paper symbol the record maps to a tool quantity (``Record.quantities``: e.g. K=16 H=8).

    Parameters
    ----------
    results : sequence of CheckResult
        The rows.
    width : int, optional
        The terminal's width (default: the current terminal's, or 160).
    verbose : bool, default False
        Print every row's note.

    Returns
    -------
    str
        The table, what ``fedtheory check`` prints.
    """
    width = width or shutil.get_terminal_size((160, 24)).columns
    header = ["id", "problem", "setting", "verdict", "measured", "bound", "ratio"]
    rows = [[r.id, str(r.problem or "-"), _setting(r), r.verdict + row_marks(r), fmt_number(r.measured),
             fmt_number(r.bound), _ratio_text(r)] for r in results]
    widths = [min(max([len(h)] + [len(row[i]) for row in rows]), cap) for i, (h, cap) in
              enumerate(zip(header, (40, 26, 44, 40, 10, 10, 10)))]

    def fmt(row):
        cells = [c if len(c) <= w else c[: w - 1] + "~" for c, w in zip(row, widths)]
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    paper = None
    for r, row in zip(results, rows):
        if r.paper != paper:
            paper = r.paper
            lines.append(f"[{paper}]")
        lines.append(fmt(row))
        if r.verdict in _SHOW_NOTE or verbose:
            note = "; ".join(r.conditions_failed) if r.conditions_failed else r.detail
            if r.is_finding:
                note = f"{r.finding_class}" + (f" '{r.finding}'" if r.finding else "") + f": {note}"
            elif r.finding and r.verdict in FINDINGS:
                note = f"finding '{r.finding}': {note}"
            if note:
                lines += ["    " + ln for ln in textwrap.wrap(note, width=max(60, width - 6))[:6]]
    return "\n".join(lines)


def simulation_text(sim: Mapping[str, Any], names: Mapping[str, str] | None = None) -> str:
    """One simulation summary (``CheckResult.extra['simulations']``) in words, in the paper's symbols where
    ``names`` (tool quantity -> paper symbol, ``Record.paper_names()``) has one: e.g. 'H = 8 local steps per round,
    K = 16 clients (all take part)' for a paper whose K counts workers; the tool's own words otherwise (never a
    bare 'K = ...', which papers use for different things)."""
    names = dict(names or {})

    def named(key: str, value: Any, words: str) -> str:
        return f"{names[key]} = {value} {words}" if key in names else f"{value} {words}"

    C, N = sim.get("clients"), sim.get("per_round", sim.get("clients"))
    clients = named("clients", C, "clients") + (" (all take part)" if N == C else
                                                f", {named('clients_per_round', N, 'per round')}")
    oracle = str(sim.get("oracle", "?"))
    params = sim.get("oracle_params") or {}
    if params:
        oracle += "(" + ", ".join(f"{k}={fmt_number(v)}" for k, v in params.items()) + ")"
    sched = sim.get("schedule") or {}
    step = f"{sim.get('lr_schedule', '?')} step" + (" (" + ", ".join(
        f"{names.get(k, k)} = {fmt_number(v) if not isinstance(v, list) else '[' + ', '.join(map(fmt_number, v)) + ']'}"
        for k, v in sched.items()) + ")" if sched else "")
    plugins = [p for p in sim.get("plugins") or [] if not p.endswith("()")]
    return (f"{sim.get('algorithm', '?')} on {sim.get('problem', '?')}: {sim.get('runs', '?')} runs x "
            f"{named('rounds', sim.get('rounds', '?'), 'rounds')}, "
            f"{named('local_steps', sim.get('local_steps', '?'), 'local steps per round')}, {clients}, {oracle}, {step}"
            + (f"; plug-ins {', '.join(plugins)}" if plugins else "")
            + f"; measures {', '.join(sim.get('measures') or [])}")


def summarize(results: Sequence[CheckResult]) -> dict[str, int]:
    """Verdict -> count, sorted by verdict."""
    out: dict[str, int] = {}
    for r in results:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return dict(sorted(out.items()))


def draft_records(results: Sequence[CheckResult]) -> dict[str, list[str]]:
    """Each draft record among the rows (a record with TODOs, ``Record.todo``: its rows have scope 'draft' and are
    never counted) -> the TODOs that hold it back."""
    out: dict[str, list[str]] = {}
    for r in results:
        rec = (r.extra or {}).get("draft_record")
        if rec and rec not in out:
            out[str(rec)] = [str(t) for t in (r.extra.get("todo") or [])]
    return out


def _row_label(r: CheckResult) -> str:
    setting = r.params.get("setting") if isinstance(r.params, dict) else None
    return " ".join(str(x) for x in (r.id, r.problem and f"on {r.problem}", setting and f"({setting})", r.verdict) if x)


_CITED = re.compile(r"\b(\d{3})(?:_[0-9a-f]{16}\.txt)?:(\d+)((?:\s*[-,]\s*\d+)*)")


def cited_lines(row: CheckResult) -> set[tuple[str, int]]:
    """The printed lines a row cites in its quote and source, as (seed, line): 'SEED.txt:L', 'NNN:L', ranges 'L-M'
    and lists 'L, M'."""
    out: set[tuple[str, int]] = set()
    for text in (row.quote or "", row.source or ""):
        for m in _CITED.finditer(text):
            nums = [int(m.group(2))]
            rest = m.group(3) or ""
            for sep, n in re.findall(r"([-,])\s*(\d+)", rest):
                if sep == "-":
                    nums.extend(range(nums[-1] + 1, int(n) + 1))
                else:
                    nums.append(int(n))
            out.update((m.group(1), n) for n in nums)
    return out


def shared_lines(results: Sequence[CheckResult]) -> list[dict[str, Any]]:
    """Every pair of counted findings whose rows cite a common printed line (issue 45: one cause is one finding):
    {'findings': [a, b], 'lines': ['003:144', ...], 'independent': the reason a row of either gives in
    ``extra['independent_of'][other key]``, or None when neither says why they are two causes}."""
    groups = group_findings(results)
    lines = {k: set().union(*(cited_lines(r) for r in rows)) for k, rows in groups.items()}
    out = []
    keys = sorted(groups)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            common = lines[a] & lines[b]
            if not common:
                continue
            why = next((r.extra.get("independent_of", {}).get(o) for k, o in ((a, b), (b, a)) for r in groups[k]
                        if isinstance(r.extra.get("independent_of"), dict) and r.extra["independent_of"].get(o)), None)
            out.append({"findings": [a, b], "lines": [f"{s}:{n}" for s, n in sorted(common)], "independent": why})
    return out


def summarize_findings(results: Sequence[CheckResult]) -> dict[str, Any]:
    """Distinct findings (rows grouped by cause), what is not counted and why, and the vacuous / loose bounds.

    Returns {'findings': {key: [row labels]}, 'classes': {class: [keys]}, 'errors': [{'row', 'error'}],
    'robustness': {key: {'fragile', 'text', 'margin', 'exact', 'choices'}} (``checks.robustness``: each counted
    finding's margin and free choices swept), 'fragile': [keys lost within 10% of a free choice],
    'ambiguous': [...], 'proof_step_loose': [...], 'not_counted': {key: {'scope': ..., 'rows': [...]}},
    'self_checks': [row labels of implementation self-checks], 'vacuous': [...], 'loose': [...],
    'shared_lines': ``shared_lines``}:
    'findings' are the in-scope causes the exit code counts, 'classes' the same keys by severity class
    (FINDING_CLASSES: a cause's class is the most severe of its rows', ``finding_class_of``); 'errors' the checks that
    failed (never findings); 'ambiguous' rows whose readings of the text disagree, 'proof_step_loose' stated rates that
    follow only from the exact form of a loosened proof step (both listed apart, never counted); 'loose' bounds with
    bound/measured above LOOSE_FACTOR.
    """
    groups = group_findings(results)
    found = {k: [_row_label(r) for r in rows] for k, rows in groups.items()}
    classes = {c: [k for k, rows in groups.items() if finding_class_of(rows) == c] for c in FINDING_CLASSES}
    errs = [{"row": _row_label(r), "error": (r.detail or "").splitlines()[0] if r.detail else ""}
            for r in errors(results)]
    amb = [_row_label(r) for r in results if r.verdict == "ambiguous"]
    psl = [_row_label(r) for r in results if r.verdict == "proof_step_loose"]
    nc = {}
    for k, rows in group_findings(results, counted=False).items():
        rows = [r for r in rows if not r.self_check]
        if rows:
            nc[k] = {"scope": sorted({r.scope for r in rows}), "rows": [_row_label(r) for r in rows]}
    selfc = [_row_label(r) for r in results if r.self_check]
    vac = [_row_label(r) for r in results if r.vacuous]
    loose = [_row_label(r) + f" (bound/measured {r.ratio:.3g})" for r in results
             if r.kind == "bound" and isinstance(r.ratio, (int, float)) and r.ratio is not None
             and r.ratio == r.ratio and r.ratio > LOOSE_FACTOR]
    # a finding's robustness is that of the rows that give it its class (a units erratum found false on a rescaled
    # instance is as robust as the rescaled rows)
    rob = {k: finding_robustness([r for r in rows if r.finding_class == finding_class_of(rows)])
           for k, rows in groups.items()}
    return {"findings": found, "classes": {c: ks for c, ks in classes.items() if ks}, "errors": errs,
            "drafts": draft_records(results),
            "robustness": {k: {"fragile": bool(v.get("fragile")), "text": v.get("text", ""),
                               "margin": v.get("margin"), "exact": v.get("exact", ""),
                               "choices": v.get("choices", [])} for k, v in rob.items()},
            "fragile": [k for k, v in rob.items() if v.get("fragile")],
            "ambiguous": amb, "proof_step_loose": psl, "not_counted": nc, "self_checks": selfc, "vacuous": vac,
            "loose": loose, "shared_lines": shared_lines(results)}


def _findings_text(results: Sequence[CheckResult]) -> str:
    s = summarize_findings(results)
    lines = []
    if s["errors"]:
        lines.append(f"{len(s['errors'])} check(s) FAILED with an error (not findings; exit status 3):")
        lines += [f"  * {e['row']}: {e['error']}" for e in s["errors"]]
    lines.append(f"{len(s['findings'])} distinct finding(s) counted in the exit code"
                 + (f", {len(s['fragile'])} of them fragile (lost within 10% of a free choice)" if s["fragile"] else "")
                 + (":" if s["findings"] else "."))
    for cls, keys in s["classes"].items():
        lines.append(f"  {cls} ({len(keys)}):")
        for k in keys:
            rows = s["findings"][k]
            frag = " [fragile]" if k in s["fragile"] else ""
            lines.append(f"  * {k}{frag}  ({len(rows)} row{'s' if len(rows) != 1 else ''})")
            lines.append(f"      {s['robustness'][k]['text']}")
            lines += ["      - "
                      f"{x}" for x in rows[:12]] + ([f"      - ... {len(rows) - 12} more"] if len(rows) > 12 else [])
    if s["shared_lines"]:
        lines.append(f"{len(s['shared_lines'])} pair(s) of counted findings cite the same printed line (one cause is "
                     "one finding; each pair says why it is two):")
        lines += [f"  * {x['findings'][0]} / {x['findings'][1]} ({', '.join(x['lines'][:4])}"
                  + (" ..." if len(x["lines"]) > 4 else "") + "): "
                  + (x["independent"] or "NOT DECLARED: possibly one cause counted twice") for x in s["shared_lines"]]
    if s["ambiguous"]:
        lines.append(f"{len(s['ambiguous'])} ambiguous row(s) (the readings of the text disagree; each reading's "
                     "verdict is in the row's note): " + "; ".join(s["ambiguous"][:6])
                     + (" ..." if len(s["ambiguous"]) > 6 else ""))
    if s["proof_step_loose"]:
        lines.append(f"{len(s['proof_step_loose'])} proof-step-loose row(s) (the stated rate follows from the exact "
                     "form, not from the loosened step; not counted): " + "; ".join(s["proof_step_loose"]))
    if s["not_counted"]:
        lines.append(f"{len(s['not_counted'])} not counted (outside the statement's scope):")
        for k, v in s["not_counted"].items():
            lines.append(f"  * {k}  [{', '.join(v['scope'])}]  ({len(v['rows'])} rows)")
    if s["drafts"]:
        lines.append(f"{len(s['drafts'])} draft record(s), not counted (rows decided and shown; resolve each TODO in "
                     "the record, then delete it: docs/extending.md, section 10):")
        for rec, todo in s["drafts"].items():
            lines.append(f"  * {rec}: {len(todo)} TODO(s)")
            lines += [f"      - {printable(t, keep='')}" for t in todo[:12]] + (
                [f"      - ... {len(todo) - 12} more"] if len(todo) > 12 else [])
    if s["self_checks"]:
        lines.append(f"{len(s['self_checks'])} implementation self-check row(s) (tautologies / identities by "
                     "construction; not findings about the papers)")
    if s["vacuous"]:
        lines.append(f"{len(s['vacuous'])} vacuous bound row(s) (above a trivial bound of the left side)")
    if s["loose"]:
        lines.append(f"{len(s['loose'])} bound row(s) looser than {LOOSE_FACTOR:.0e}x: " + "; ".join(s["loose"][:6])
                     + (" ..." if len(s["loose"]) > 6 else ""))
    return "\n".join(lines)


def print_results(results: Sequence[CheckResult], elapsed_s: float | None = None, file: TextIO | None = None,
                  verbose: bool = False) -> None:
    """The table, a summary line (verdict counts over rows) and the distinct findings, as ``fedtheory check``
    prints them (``verbose``: every row's note)."""
    file = file or sys.stdout
    print(format_table(results, verbose=verbose), file=file)
    took = f" in {elapsed_s:.1f} s" if elapsed_s is not None else ""
    n_find = len(group_findings(results))
    n_err = len(errors(results))
    n_draft = len(draft_records(results))
    print(f"\n{len(results)} results{took}: " + ", ".join(f"{k} {v}" for k, v in summarize(results).items())
          + f"; {n_find} distinct finding(s)" + (f"; {n_err} check error(s)" if n_err else "")
          + (f"; {n_draft} draft record(s), not counted" if n_draft else ""), file=file)
    for line in collection_lines(results):
        print(line, file=file)
    print(_findings_text(results), file=file)


def _theorems_of(paper: str) -> list[str]:
    from ..theory.core import registered

    return [r.id for r in registered(paper) if getattr(r, "kind", "") in ("bound", "order")]


def collection_summary(results: Sequence[CheckResult]) -> dict[str, dict[str, Any]]:
    """Per collection of papers (``fedtheory.theory.register_paper(..., collection=...)``, e.g. 'zoo', the trusted
    theorems): its papers, rows, distinct counted findings and the findings listed apart (unverified transcriptions);
    'tested': its theorems (bounds and stated orders) that a row of ``results`` tests (the record's own rows, its
    .units / .rate rows, or a row naming it in params['record']), 'statement_only': those no row tests (issue 45: not
    counted among the collection's tested theorems)."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        name = paper_info(r.paper).collection
        if not name:
            continue
        c = out.setdefault(name, {"papers": set(), "rows": [], "counted": 0, "unverified": 0})
        c["papers"].add(r.paper)
        c["rows"].append(r)
    for c in out.values():
        rows = c.pop("rows")
        c["rows"] = len(rows)
        c["counted"] = len(group_findings(rows))
        c["unverified"] = len([r for r in rows if r.verdict in FINDINGS and r.scope == "unverified_transcription"])
        c["papers"] = sorted(c["papers"])
        ids = {r.id for r in rows} | {str(r.params.get("record")) for r in rows if isinstance(r.params, dict)}
        theorems = [t for p in c["papers"] for t in _theorems_of(p)]
        c["tested"] = [t for t in theorems if t in ids or any(i.startswith(t + ".") for i in ids)]
        c["statement_only"] = [t for t in theorems if t not in c["tested"]]
    return out


def collection_lines(results: Sequence[CheckResult]) -> list[str]:
    """One line per collection: 'zoo (trusted theorems): 14 papers, 230 rows, 0 counted findings'."""
    lines = []
    for name, c in collection_summary(results).items():
        label = f"{name} (trusted theorems)" if name == "zoo" else name
        lines.append(f"{label}: {len(c['papers'])} paper(s), {len(c['tested'])} theorem(s) tested, {c['rows']} rows, "
                     f"{c['counted']} counted finding(s)"
                     + (f", {c['unverified']} on unverified transcriptions (listed apart)" if c["unverified"] else "")
                     + (f"; statement only (no check tests it, not counted among the tested): "
                        f"{', '.join(c['statement_only'])}" if c["statement_only"] else ""))
    return lines


def format_timings(timings: Sequence[Any], elapsed_s: float | None = None, load_s: float | None = None) -> str:
    """The per-check timing table of ``fedtheory check --timings``: every check's seconds (slowest first), its share
    of the checks' total, its CPU seconds, where it ran, its rows and its simulations; ``load_s``: the seconds spent
    loading the plug-ins before the first check, ``elapsed_s``: the run's wall-clock seconds (symbolic checks run beside
    the simulations, so the checks' seconds may add up to more)."""
    rows = sorted(timings, key=lambda t: -t.seconds)
    total = sum(t.seconds for t in rows) or 1.0
    header = ["check", "seconds", "share", "cpu s", "where", "rows", "simulations"]
    body = [[t.check, f"{t.seconds:.2f}", f"{100 * t.seconds / total:.1f}%",
             "-" if t.cpu_seconds is None else f"{t.cpu_seconds:.2f}", t.where, str(t.rows), str(t.simulations)]
            for t in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    fmt = lambda r: "  ".join(c.rjust(w) if i in (1, 2, 3, 5, 6) else c.ljust(w)  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    lines = [fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in body]
    cpu = [t.cpu_seconds for t in rows if t.cpu_seconds is not None]
    foot = f"{len(rows)} checks, {sum(t.seconds for t in rows):.1f} s in the checks" + (
        f" ({sum(cpu):.1f} s CPU)" if cpu else "")
    if load_s is not None:
        foot += f", {load_s:.1f} s loading the plug-ins"
    if elapsed_s is not None:
        foot += f", {elapsed_s:.1f} s wall clock"
    lines.append(foot + " (a simulation shared between checks is paid by the first that needs it)")
    return "\n".join(lines)


def results_payload(results: Sequence[CheckResult], **meta: Any) -> dict[str, Any]:
    """The JSON document ``fedtheory check --out`` writes: ``meta`` (command, profile, seed, ...), the exit code,
    the summary and every record."""
    from .. import __version__

    return {"fedtheory": __version__, **meta, "exit_code": exit_code(results), "summary": summarize(results),
            "findings": summarize_findings(results), "collections": collection_summary(results),
            "results": [r.to_json() for r in results]}


def write_atomic(path: str, text: str, flag: str = "--out") -> None:
    """Write ``text`` to ``path`` whole, with the user's file mode (``fedtheory.files.write_atomic``); folders are
    made. An unwritable place (a folder, a full disk, a read-only file system) is a ParameterError naming ``flag``
    (the option that gave the path) and the path."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    try:
        os.makedirs(d, exist_ok=True)
        files.write_atomic(path, text)
    except OSError as exc:
        allowed = "a file in a writable folder" if not os.access(d, os.W_OK) else "a writable file path"
        raise ParameterError(flag, path, f"{allowed} ({exc.strerror or exc})") from None


def check_writable(path: str, flag: str = "--out", *, force: bool = False, inputs: Sequence[str] = (),
                   input_dirs: Sequence[str] = ()) -> None:
    """Before a run: a ParameterError naming ``flag`` unless ``write_atomic`` could write ``path`` now and should
    (``fedtheory.files.check_writable``: a new path or a regular file fedtheory wrote, or any regular file with
    ``force``; never one of the run's ``inputs`` or a file under its ``input_dirs``; in a folder where a file can be
    created)."""
    try:
        files.check_writable(path, force=force, inputs=inputs, input_dirs=input_dirs)
    except files.FileRefused as exc:
        raise ParameterError(flag, path, f"a writable file path ({exc.why})") from None


def write_json(path: str, payload: Any, flag: str = "--out") -> None:
    """Write a JSON document atomically (an unwritable ``path`` is a ParameterError naming ``flag``)."""
    write_atomic(path, json.dumps(payload, indent=2), flag)
