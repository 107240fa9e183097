"""CSV cells a spreadsheet will not run.

Model names, task slugs and evidence come from users and agents. A cell that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to Excel, LibreOffice and Sheets (``=HYPERLINK(...)``), so it gets a
leading apostrophe, as OWASP recommends. Numbers are written as numbers: a
negative figure is data, not a formula.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tracing.core import shown_json

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(row: Any) -> list[Any]:
    return [safe_cell(v) for v in row]


def csv_lines(rows: Iterable[dict], columns: Sequence[str], *, json_columns: Sequence[str] = ()) -> Iterator[str]:
    """An export's rows as CSV text, a line at a time (for a StreamingHttpResponse):
    the header, then each row with its ``json_columns`` as JSON and every cell safe."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        row = {**row, **{key: shown_json.dumps(row[key], sort_keys=True) for key in json_columns}}
        writer.writerow({key: safe_cell(value) for key, value in row.items()})
        yield buf.getvalue()
        buf.seek(0)
        buf.truncate()
    yield buf.getvalue()


def jsonl_lines(rows: Iterable[dict]) -> Iterator[str]:
    """An export's rows as JSON lines, depth-limited like every page (tracing.core.shown_json)."""
    return (shown_json.dumps(row) + "\n" for row in rows)
