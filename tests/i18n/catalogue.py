"""The Chinese catalogue, read without gettext: msgid -> msgstr (and which are fuzzy)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

PO = Path(__file__).resolve().parents[2] / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


@dataclass(frozen=True)
class Entry:
    context: str
    msgid: str
    msgstr: str
    fuzzy: bool


def _field(block: str, name: str) -> str | None:
    """A (possibly multi-line) quoted field of a .po block, unescaped."""
    m = re.search(rf'^{re.escape(name)} ((?:".*"\n?)+)', block, re.M)
    if not m:
        return None
    return "".join(ast.literal_eval(line) for line in m.group(1).splitlines() if line.strip())


def entries(path: Path = PO) -> list[Entry]:
    found = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        msgid = _field(block, "msgid")
        if not msgid:  # the header
            continue
        msgstr = _field(block, "msgstr") if "msgid_plural" not in block else _field(block, "msgstr[0]")
        flags = re.search(r"^#, (.*)$", block, re.M)
        found.append(Entry(context=_field(block, "msgctxt") or "", msgid=msgid, msgstr=msgstr or "",
                           fuzzy=bool(flags and "fuzzy" in flags.group(1))))
    return found
