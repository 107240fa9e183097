"""Requests as htmx sends them: HX-Request always, HX-Target only when the
element the response goes to has an id (htmx names it by that id)."""

from __future__ import annotations

import re


def hx(target_id: str | None = None) -> dict[str, str]:
    return {"HX-Request": "true", **({"HX-Target": target_id} if target_id else {})}


def more_row_id(html: str) -> str | None:
    """The id of a page's "more" row: its link swaps `closest tr`, that row."""
    match = re.search(r'<tr class="more" id="([^"]+)">.*?hx-target="closest tr"', html, re.S)
    return match.group(1) if match else None
