"""Tables on the terminal (:func:`print_table`): columns cut to the terminal's width, the last one wrapped on demand."""
from __future__ import annotations

import shutil

__all__ = ["print_table"]


def print_table(header, rows, wrap_last: bool = False) -> None:
    width = shutil.get_terminal_size((160, 24)).columns
    cols = list(zip(*([header] + rows))) if rows else [[h] for h in header]
    widths = [min(max(len(str(c)) for c in col), 48) for col in cols]
    if wrap_last:
        used = sum(widths[:-1]) + 2 * (len(widths) - 1)
        widths[-1] = max(30, width - used)

    def fmt(row):
        cells = [str(c) for c in row]
        cells = [c if len(c) <= w else c[: w - 1] + "~" for c, w in zip(cells, widths)]
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    print(fmt(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        if not wrap_last:
            print(fmt(row))
            continue
        import textwrap

        parts = textwrap.wrap(str(row[-1]), widths[-1]) or [""]
        print(fmt(list(row[:-1]) + [parts[0]]))
        for more in parts[1:]:
            print(fmt([""] * (len(row) - 1) + [more]))
