"""CSV cells a spreadsheet will not run.

Model names, task slugs and evidence come from users and agents. A cell that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a
formula to Excel, LibreOffice and Sheets (``=HYPERLINK(...)``), so it gets a
leading apostrophe, as OWASP recommends. Numbers are written as numbers: a
negative figure is data, not a formula.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def safe_row(row: Any) -> list[Any]:
    return [safe_cell(v) for v in row]
