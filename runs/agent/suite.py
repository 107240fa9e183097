"""The built-in task suite: tasks with gold answers, the corpus with its traps, scoring.

Data lives in ``suite/tasks.json`` and ``suite/documents.json``. Every entity is
fictional but self-consistent, so no outside knowledge helps a model: the
answer must come from the observations. A task's ``plan`` is read only by the
simulated model (``sim_model.py``); ``loaddemo`` may ignore it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from runs.agent.tools import Document

SUITE_DIR = Path(__file__).resolve().parent / "suite"
SCORINGS = ("exact", "contains", "numeric")

# Years are usually context ("in 2023 it earned 41.7"), not the asked figure;
# skipped when reading a numeric answer unless the gold itself is one.
YEAR_RANGE = (1900, 2100)

_NUMBER_RE = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?|-?\.\d+")
_ARTICLES_RE = re.compile(r"\b(?:the|a|an)\b")


@lru_cache(maxsize=1)
def _load() -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    tasks = json.loads((SUITE_DIR / "tasks.json").read_text(encoding="utf-8"))
    docs = json.loads((SUITE_DIR / "documents.json").read_text(encoding="utf-8"))
    return tuple(tasks), tuple(docs)


def load_suite() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tasks, documents) as fresh dicts, ready for ``loaddemo`` to upsert by slug.

    Task keys: slug, title, prompt, gold, scoring, tolerance, suite, lang, trap,
    plan (sim only), optional fallback. Document keys: slug, title, body, lang,
    optional fault ("timeout_once").
    """
    tasks, docs = _load()
    return json.loads(json.dumps(tasks)), json.loads(json.dumps(docs))


def builtin_tasks() -> tuple[dict[str, Any], ...]:
    """The cached task dicts (read-only by convention; ``load_suite`` for copies)."""
    return _load()[0]


def load_documents() -> list[Document]:
    return [Document(d["slug"], d["title"], d["body"], d.get("lang", "en"), d.get("fault", "")) for d in _load()[1]]


def get_task(slug: str) -> dict[str, Any] | None:
    return next((dict(t) for t in _load()[0] if t["slug"] == slug), None)


def normalize_answer(text: str) -> str:
    """NFKC, lower case, no articles, punctuation and whitespace removed."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    text = _ARTICLES_RE.sub(" ", text)
    return "".join(ch for ch in text if ch.isalnum() or ch in ":.")  # keep 16:30 and 4.9 intact


def _numbers(text: str) -> list[float]:
    return [float(m.replace(",", "")) for m in _NUMBER_RE.findall(unicodedata.normalize("NFKC", text))]


def _is_year(value: float) -> bool:
    return value.is_integer() and YEAR_RANGE[0] <= value <= YEAR_RANGE[1]


def score(task: dict[str, Any], answer: str | None) -> bool:
    """Is ``answer`` right for ``task``? Rules: exact | contains | numeric (absolute tolerance).

    numeric reads the first number of the answer, skipping years unless the
    gold is a year: hedged answers listing several candidates do not get
    credit for a later one.
    """
    if answer is None:
        return False
    gold = str(task["gold"])
    rule = task.get("scoring", "exact")
    if rule == "numeric":
        target = float(gold.replace(",", ""))
        candidates = [n for n in _numbers(answer) if _is_year(target) or not _is_year(n)]
        return bool(candidates) and abs(candidates[0] - target) <= float(task.get("tolerance") or 0.0)
    norm_answer, norm_gold = normalize_answer(answer).rstrip("."), normalize_answer(gold).rstrip(".")
    if rule == "contains":
        return bool(norm_gold) and norm_gold in norm_answer
    if rule == "exact":
        return norm_answer == norm_gold
    raise ValueError(f"unknown scoring rule {rule!r}; expected one of {', '.join(SCORINGS)}")
