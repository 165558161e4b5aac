"""Writing results: the verdict table the CLI prints, the JSON payload ``--out`` writes (public API)."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
from typing import Any, Sequence, TextIO

from .._validation import ParameterError
from .base import CheckResult, exit_code

__all__ = ["format_table", "print_results", "results_payload", "summarize", "write_json", "write_atomic", "fmt_number"]

_SHOW_NOTE = {"violated", "not_applicable", "rate_consistent", "rate_inconsistent", "claim_supported", "claim_refuted",
              "inconclusive", "error"}
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


def _setting(r: CheckResult) -> str:
    parts = []
    for k, v in r.params.items():
        if k == "setting":
            parts.insert(0, str(v))
        elif k in _SETTING_KEYS and v is not None:
            parts.append(f"{k}={fmt_number(v)}")
    return " ".join(parts)


def format_table(results: Sequence[CheckResult], width: int | None = None) -> str:
    """One row per result, grouped by paper; the note (failed conditions, claim evidence, missed rate terms,
    an unexpected outcome) on indented lines below it."""
    width = width or shutil.get_terminal_size((160, 24)).columns
    header = ["id", "problem", "setting", "verdict", "measured", "bound", "ratio"]
    rows = [[r.id, str(r.problem or "-"), _setting(r), r.verdict, fmt_number(r.measured), fmt_number(r.bound),
             fmt_number(r.ratio)] for r in results]
    widths = [min(max([len(h)] + [len(row[i]) for row in rows]), cap) for i, (h, cap) in
              enumerate(zip(header, (40, 26, 44, 17, 10, 10, 10)))]

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
        if r.verdict in _SHOW_NOTE:
            note = "; ".join(r.conditions_failed) if r.conditions_failed else r.detail
            if note:
                lines += ["    " + ln for ln in textwrap.wrap(note, width=max(60, width - 6))[:6]]
    return "\n".join(lines)


def summarize(results: Sequence[CheckResult]) -> dict[str, int]:
    """Verdict -> count, sorted by verdict."""
    out: dict[str, int] = {}
    for r in results:
        out[r.verdict] = out.get(r.verdict, 0) + 1
    return dict(sorted(out.items()))


def print_results(results: Sequence[CheckResult], elapsed_s: float | None = None, file: TextIO | None = None) -> None:
    """The table and a summary line, as ``fedtheory check`` prints them."""
    file = file or sys.stdout
    print(format_table(results), file=file)
    took = f" in {elapsed_s:.1f} s" if elapsed_s is not None else ""
    print(f"\n{len(results)} results{took}: " + ", ".join(f"{k} {v}" for k, v in summarize(results).items()), file=file)


def results_payload(results: Sequence[CheckResult], **meta: Any) -> dict[str, Any]:
    """The JSON document ``fedtheory check --out`` writes: ``meta`` (command, profile, seed, ...), the exit code,
    the summary and every record."""
    from .. import __version__

    return {"fedtheory": __version__, **meta, "exit_code": exit_code(results), "summary": summarize(results),
            "results": [r.to_json() for r in results]}


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder (never a half-written file).
    An unwritable place is a ParameterError naming the path."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".fedtheory-", suffix=".tmp")
    except OSError as exc:
        raise ParameterError("--out", path, f"a file in a writable folder ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ParameterError("--out", path, f"a writable file path ({exc.strerror or exc})") from None


def write_json(path: str, payload: Any) -> None:
    """Write a JSON document atomically."""
    write_atomic(path, json.dumps(payload, indent=2))
