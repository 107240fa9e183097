"""Blind held-out benchmark #3 for the anchoring detector.

    python3 bench/anchoring_holdout3.py [--seed 31] [--per-kind 20] [--show-missed N] [--json PATH]

Written without reading the detector (only ``tracing/core/anchoring/__init__.py``,
``tracing/core/steps.py`` and ``tracing/detect.py``) or the earlier benchmarks; see
``bench/README-holdout3.md``. For each source of ``shared/eval``, runs on which
``anchor_report`` finds no break as recorded ("clean bases") get exactly ONE
lapse: one agent step rewritten, or one thought inserted. The lapse kinds come
from reading the runs: how these agents actually lose track of what they saw.
The expected first break is the index of that step; the score compares it with
the detector's ``first_break``.

Stdlib only. Deterministic: each (seed, source, kind) has its own
``random.Random(f"holdout3/{seed}/{source}/{kind}")``.

``--smoke``: the same on a few short runs per source (bench/_paths.py), seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import _paths

ROOT = _paths.setup_code_path()

from tracing.core.anchoring import anchor_report  # noqa: E402 -- after the code path is set
from tracing.core.steps import Step, Trajectory, context_text, is_reply, read_jsonl  # noqa: E402

SOURCES = _paths.SOURCES
DEFAULT_SEED = 31
DEFAULT_PER_KIND = 20


# ---------------------------------------------------------------------------
# A made case and small step helpers
# ---------------------------------------------------------------------------


@dataclass
class Made:
    """What a maker returns: the corrupted steps, where the lapse is, what changed."""

    steps: list[Step]
    index: int  # the Step.index of the lapse (the expected first break)
    note: str  # one line for a reader: what was rewritten or inserted


def with_text(step: Step, text: str) -> Step:
    """A copy of ``step`` saying ``text``; a reply keeps its message in ``args.content`` too."""
    args = step.args
    if is_reply(step) and isinstance(args, dict):
        args = {**args, "content": text}
    return replace(step, text=text, args=args)


def replaced(steps: list[Step], pos: int, new: Step) -> list[Step]:
    out = list(steps)
    out[pos] = new
    return out


def inserted(steps: list[Step], pos: int, new: Step) -> list[Step]:
    """``new`` at position ``pos``; later steps move up one index so indices stay unique."""
    index = steps[pos].index if pos < len(steps) else (steps[-1].index + 1 if steps else 0)
    shifted = [replace(s, index=s.index + 1) for s in steps[pos:]]
    return [*steps[:pos], replace(new, index=index), *shifted]


def thought_at(steps: list[Step], pos: int, text: str, why: str) -> Made:
    """Put a thought saying ``text`` right at ``pos``: rewrite the thought already
    there, else insert one (an agent may think before any action)."""
    if pos < len(steps) and steps[pos].kind == "thought":
        return Made(replaced(steps, pos, with_text(steps[pos], text)), steps[pos].index, f"rewrote thought: {why}")
    return Made(
        inserted(steps, pos, Step(index=0, kind="thought", text=text)),
        _index_at(steps, pos),
        f"inserted thought: {why}",
    )


def _index_at(steps: list[Step], pos: int) -> int:
    return steps[pos].index if pos < len(steps) else steps[-1].index + 1


def an(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def run_text(traj: Trajectory) -> str:
    """Everything the run shows anyone: task, context, every step and argument.
    A value made up for a lapse must appear nowhere in it."""
    parts = [traj.goal, context_text(traj.context)]
    for s in traj.steps:
        parts.append(s.text)
        if s.args is not None:
            parts.append(s.args if isinstance(s.args, str) else json.dumps(s.args, ensure_ascii=False))
    return "\n".join(parts)


def observed_before(steps: list[Step], pos: int) -> str:
    return "\n".join(s.text for s in steps[:pos] if s.kind == "observation")


def is_tool_result(step: Step) -> bool:
    return step.kind == "observation" and (step.tool or "").lower() != "user"


# ---------------------------------------------------------------------------
# Numbers: find them, and change one into a value the run never shows
# ---------------------------------------------------------------------------

# A standalone number: not part of an id (B08H5DCD65, #W4923227, L1002), a date
# (2025-02-25, 12/2026), a phone number or a time.
NUMBER = re.compile(r"(?<![\w.#/:\-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/:\-]|\.\d)")


def number_value(token: str) -> float:
    return float(token.replace(",", ""))


def numbers_in(text: str) -> set[float]:
    return {number_value(m.group(0)) for m in NUMBER.finditer(text)}


def perturb_number(token: str, rng: random.Random, taken: set[float], day: bool = False) -> str | None:
    """A nearby value in the same format that is not in ``taken``: a year moves by a
    few years, a day of the month stays a day, a small count moves by one to three,
    anything else gets one digit changed (the kind of slip a model makes copying a figure)."""
    whole, dot, frac = token.partition(".")
    digits = whole.replace(",", "")
    value = int(digits)
    for _ in range(25):
        if day and not dot:
            new = str(rng.choice([d for d in range(1, 29) if d != value]))
        elif 1000 <= value <= 2100 and not dot:
            new = str(value + rng.choice([-10, -3, -2, -1, 1, 2, 3, 5]))
        elif value < 10:
            new = str(value + rng.choice([1, 2, 3]))
        else:
            pos = rng.randrange(len(digits))
            choices = [d for d in "0123456789" if d != digits[pos] and not (pos == 0 and d == "0")]
            new = digits[:pos] + rng.choice(choices) + digits[pos + 1 :]
        if "," in whole:
            new = f"{int(new):,}"
        candidate = new + dot + frac
        if number_value(candidate) not in taken:
            return candidate
    return None


MONTH = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\b")


def is_day(text: str, m: re.Match[str]) -> bool:
    """ "February 16, 1941" or "10 January 1920": the number is a day of the month."""
    return number_value(m.group(0)) <= 31 and bool(
        MONTH.search(text[max(0, m.start() - 11) : m.start()]) or MONTH.match(text[m.end() + 1 : m.end() + 11])
    )


def replace_token(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


# ---------------------------------------------------------------------------
# Which run is which (react_exemplars mixes wiki and household runs)
# ---------------------------------------------------------------------------


def tools_of(traj: Trajectory) -> set[str]:
    return {s.tool for s in traj.steps if s.kind in ("action", "final") and s.tool}


def is_wiki(traj: Trajectory) -> bool:
    return bool(tools_of(traj) & {"Search", "Lookup"})


def is_fever(traj: Trajectory) -> bool:
    finals = [s for s in traj.steps if s.kind == "final"]
    return is_wiki(traj) and bool(finals) and finals[-1].text.strip() in FEVER_LABELS


def is_household(traj: Trajectory) -> bool:
    return "go to" in tools_of(traj)


def is_shop(traj: Trajectory) -> bool:
    return "click" in tools_of(traj)


def is_shell(traj: Trajectory) -> bool:
    return bool(tools_of(traj) & {"sql", "bash"})


def is_code(traj: Trajectory) -> bool:
    return bool(tools_of(traj) & {"execute", "solution"})


def is_dialogue(traj: Trajectory) -> bool:
    return any(is_reply(s) for s in traj.steps)


def has_thoughts(traj: Trajectory) -> bool:
    return any(s.kind == "thought" for s in traj.steps)


FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


# ---------------------------------------------------------------------------
# Kind 1: misquoted_number -- restates a figure it just read, wrongly
# ---------------------------------------------------------------------------


def misquoted_number(traj: Trajectory, rng: random.Random) -> Made | None:
    if is_household(traj):
        return _misquoted_object_number(traj, rng)
    if is_shell(traj):
        return _misquoted_query_result(traj, rng)
    steps, taken = traj.steps, numbers_in(run_text(traj))
    told = numbers_in(traj.goal + "\n" + context_text(traj.context))
    candidates = []
    for pos, step in enumerate(steps):
        if step.kind != "thought" and not is_reply(step):
            continue
        seen = numbers_in(observed_before(steps, pos))
        offered = offered_options(steps[pos - 1].text) if is_shop(traj) and pos else None
        for m in NUMBER.finditer(step.text):
            if _quoted_figure(step.text, m, seen, told, offered):
                candidates.append((pos, m))
    rng.shuffle(candidates)
    for pos, m in candidates:
        new = perturb_number(m.group(0), rng, taken, day=is_day(steps[pos].text, m))
        if new is None:
            continue
        step = steps[pos]
        # Every mention of a figure like 1998 in that step, so the step agrees with
        # itself; a one-digit figure ("pack of 1") only where it was found.
        if len(m.group(0)) > 1:
            text = re.sub(rf"(?<![\w.#/:\-]){re.escape(m.group(0))}(?![\w/:\-]|\.\d)", new, step.text)
        else:
            text = replace_token(step.text, m.start(), m.end(), new)
        return Made(replaced(steps, pos, with_text(step, text)), step.index, f"{m.group(0)} -> {new}")
    return None


def _quoted_figure(text: str, m: re.Match[str], seen: set[float], told: set[float], offered: list[str] | None) -> bool:
    """A figure the agent copied from an observation: seen there, not in the task
    (repeating "under 20 dollars" from the instruction is not reading anything),
    not a long bare id (item 1646531091). In WebShop (``offered`` is the page's
    options) only a figure inside a quoted option the page really offers: elsewhere
    it is budget talk or a title, and "options" the page lacks are a lapse already."""
    value = number_value(m.group(0))
    if value not in seen or value in told or re.fullmatch(r"\d{6,}", m.group(0)):
        return False
    if offered is None:
        return True
    start, end = text.rfind("'", 0, m.start()), text.find("'", m.end())
    inside = text[: m.start()].count("'") % 2 == 1
    return inside and start >= 0 and end >= 0 and text[start + 1 : end].lower() in offered


OPTION_LINE = re.compile(r"^(\w[\w ]*?) ((?:\[[^\]]*\])+)\s*$", re.M)


def offered_options(page: str) -> list[str]:
    """The options a WebShop item page offers ("size [small][large]" lines), lower-cased."""
    return [o.lower() for _, opts in OPTION_LINE.findall(page) for o in re.findall(r"\[([^\]]*)\]", opts)]


# "Now I find an apple (3)." right after "you see a apple 2, and a apple 1".
OBJECT_REF = re.compile(r"\b(?:a|an|the) ([a-z]+) \((\d+)\)")


def _misquoted_object_number(traj: Trajectory, rng: random.Random) -> Made | None:
    steps, everything = traj.steps, run_text(traj)
    candidates = []
    for pos, step in enumerate(steps):
        if step.kind != "thought" or pos == 0 or steps[pos - 1].kind != "observation":
            continue
        for m in OBJECT_REF.finditer(step.text):
            if f"{m.group(1)} {m.group(2)}" in steps[pos - 1].text:
                candidates.append((pos, m))
    rng.shuffle(candidates)
    for pos, m in candidates:
        obj, n = m.group(1), int(m.group(2))
        free = [k for k in range(1, 8) if k != n and f"{obj} {k}" not in everything]
        if not free:
            continue
        k = rng.choice(free)
        step = steps[pos]
        text = step.text.replace(f"{obj} ({n})", f"{obj} ({k})")
        return Made(replaced(steps, pos, with_text(step, text)), step.index, f"{obj} {n} -> {obj} {k}")
    return None


SINGLE_VALUE = re.compile(r"^\s*(?:\[\(\s*(\d+(?:\.\d+)?)\s*,?\s*\)\]|(\d+(?:\.\d+)?))\s*$")


def _misquoted_query_result(traj: Trajectory, rng: random.Random) -> Made | None:
    """Shell and SQL agents read one number off the output and state it."""
    steps, taken = traj.steps, numbers_in(run_text(traj))
    for pos in _shuffled(rng, range(1, len(steps))):
        obs, step = steps[pos - 1], steps[pos]
        m = SINGLE_VALUE.match(obs.text) if obs.kind == "observation" else None
        if not m or step.kind != "thought":
            continue
        new = perturb_number(m.group(1) or m.group(2), rng, taken)
        if new is None:
            continue
        text = rng.choice(
            [
                f"The query returns {new}, which answers the question. I can submit.",
                f"I get {new} as the result. This should be the answer.",
            ]
            if obs.tool == "sql"
            else [f"The output is {new}, which is what the task asks for. I can submit."]
        )
        return Made(
            replaced(steps, pos, with_text(step, text)), step.index, f"output {m.group(0).strip()} read as {new}"
        )
    return None


def _shuffled(rng: random.Random, items: Any) -> list[Any]:
    out = list(items)
    rng.shuffle(out)
    return out


# ---------------------------------------------------------------------------
# Kind 2: status_flipped -- reports the opposite of a status it just read
# ---------------------------------------------------------------------------

FLIP = {
    "pending": "delivered",
    "delivered": "pending",
    "processed": "pending",
    "cancelled": "pending",
    "suspended": "active",
    "active": "suspended",
    "on": "off",
    "off": "on",
    "enabled": "disabled",
    "disabled": "enabled",
}
# "is currently suspended", "is still pending", "(pending)", "Airplane Mode is ON".
STATUS_CLAIM = re.compile(
    r"\b(?P<verb>is|are) (?P<adv>currently |still |now |already )?(?P<word>pending|delivered|processed|cancelled|suspended|active|ON|OFF|enabled|disabled)\b"
    r"|\((?P<paren>pending|delivered|processed|cancelled)\)",
)


def status_flipped(traj: Trajectory, rng: random.Random) -> Made | None:
    steps = traj.steps
    candidates = []
    for pos, step in enumerate(steps):
        if not is_reply(step):
            continue
        seen = _statuses_seen(steps, pos)
        for m in STATUS_CLAIM.finditer(step.text):
            word = (m.group("word") or m.group("paren")).lower()
            sentence = _sentence_at(step.text, m.start())
            # A statement about the record whose status was read, not "check whether it is active".
            if HYPOTHETICAL.search(sentence) or CAUSAL.search(sentence):
                continue
            # The status word only once and its opposite nowhere, so the reply does not
            # contradict itself ("already delivered and not yet delivered").
            once = len(re.findall(rf"\b{word}\b", step.text, re.I)) == 1 and not re.search(
                rf"\b{FLIP[word]}\b", step.text, re.I
            )
            if once and any(anchor.lower() in sentence.lower() for anchor in seen.get(word, ())):
                candidates.append((pos, m))
    rng.shuffle(candidates)
    for pos, m in candidates:
        step = steps[pos]
        word = m.group("word") or m.group("paren")
        new = FLIP[word.lower()]
        new = new.upper() if word.isupper() else new
        if m.group("paren"):
            claim = f"({new})"
        else:
            adv = (m.group("adv") or "").strip()
            # "still pending" -> "already delivered": the adverb follows the status.
            adv = (
                {"still": "already", "already": "still"}.get(adv, adv)
                if new.lower() in ("delivered", "pending")
                else adv
            )
            claim = f"{m.group('verb')} {adv + ' ' if adv else ''}{new}"
        text = replace_token(step.text, m.start(), m.end(), claim)
        return Made(replaced(steps, pos, with_text(step, text)), step.index, f"{m.group(0)!r} -> {claim!r}")
    return None


HYPOTHETICAL = re.compile(r"\b(if|whether|once|when|until|unless)\b|\?", re.I)
# "suspended, which is why you see No Service": flipped, the reason would no longer
# follow, and no agent writes "active, which is why you have no service".
CAUSAL = re.compile(r"\b(which is why|because|due to|why you)\b", re.I)
# What names a record in a reply: its id, its number, or what it is.
ANCHOR_KEYS = ("order_id", "line_id", "phone_number", "bill_id")
SETTING = re.compile(
    r"(Airplane Mode|Mobile Data|Data Roaming|Wi-Fi Calling|Data Saver mode|VPN)\W+(?:is (?:now |currently )?)?(ON|OFF)\b",
    re.I,
)


def _sentence_at(text: str, at: int) -> str:
    start = max(text.rfind(". ", 0, at), text.rfind("\n", 0, at)) + 1
    ends = [i for i in (text.find(". ", at), text.find("\n", at)) if i >= 0]
    return text[start : min(ends) if ends else len(text)]


def _statuses_seen(steps: list[Step], pos: int) -> dict[str, set[str]]:
    """Status values the tool results since the agent's previous reply showed,
    each with what names its record (#W4923227 / "order", L1002 / "line")."""
    seen: dict[str, set[str]] = defaultdict(set)
    for step in reversed(steps[:pos]):
        if is_reply(step):
            break
        if not is_tool_result(step):
            continue
        records: dict[int, dict[str, Any]] = defaultdict(dict)
        for record, key, value in _records(step.text):
            records[record][key] = value
        for fields in records.values():
            status = fields.get("status") or fields.get("account_status")
            if not isinstance(status, str):
                continue
            anchors = {str(fields[k]) for k in ANCHOR_KEYS if k in fields}
            anchors |= {k.split("_")[0] for k in ANCHOR_KEYS if k in fields and k != "phone_number"}
            seen[status.lower()] |= anchors
        for m in SETTING.finditer(step.text):
            seen[m.group(2).lower()].add(m.group(1))
    return seen


def _records(text: str) -> list[tuple[int, str, Any]]:
    """(record number, key, scalar value) for every field of every object in a JSON
    tool result; record numbers tell two orders or two cards apart."""
    if not text.lstrip().startswith(("{", "[")):
        return []
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." deeper than Python goes
        return []
    out: list[tuple[int, str, Any]] = []
    counter = iter(range(10**9))

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            record = next(counter)
            for key, value in node.items():
                if isinstance(value, (dict, list)):
                    walk(value)
                elif value is not None and not isinstance(value, bool):
                    out.append((record, key, value))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    try:
        walk(data)
    except RecursionError:
        return []
    return out


# ---------------------------------------------------------------------------
# Kind 3: other_record -- says of one record what belongs to another
# ---------------------------------------------------------------------------


def other_record(traj: Trajectory, rng: random.Random) -> Made | None:
    if is_dialogue(traj):
        return _other_record_reply(traj, rng)
    if is_shop(traj):
        return _other_record_listing(traj, rng)
    if is_shell(traj):
        return _other_record_column(traj, rng)
    return None


# Fields whose value an agent repeats to the customer; ids of the user or of tools are left out.
RECORD_KEYS = frozenset(
    {
        "price",
        "amount",
        "total_due",
        "balance",
        "last_four",
        "order_id",
        "brand",
        "phone_number",
        "data_used_gb",
        "name",
        "bill_id",
        "line_id",
    }
)


def _other_record_reply(traj: Trajectory, rng: random.Random) -> Made | None:
    steps = traj.steps
    candidates = []
    for pos, step in enumerate(steps):
        if not is_reply(step):
            continue
        fields: dict[str, list[tuple[tuple[int, int], str]]] = defaultdict(list)
        for opos in range(pos):
            if is_tool_result(steps[opos]):
                for record, key, value in _records(steps[opos].text):
                    if key in RECORD_KEYS:
                        fields[key].append(((opos, record), str(value)))
        for key, entries in fields.items():
            for where, value in entries:
                span = _find_value(step.text, value)
                if span is None:
                    continue
                others = {v for w, v in entries if w != where and v != value and _find_value(step.text, v) is None}
                # The old value must belong to one record only, or the swap may be right.
                if others and all(v != value or w == where for w, v in entries):
                    candidates.append((pos, key, value, span, sorted(others)))
    rng.shuffle(candidates)
    for pos, key, value, (start, end), others in candidates:
        step = steps[pos]
        new = _format_like(step.text[start:end], rng.choice(others))
        text = replace_token(step.text, start, end, new)
        return Made(
            replaced(steps, pos, with_text(step, text)), step.index, f"{key}: {value} -> {new} (another record's)"
        )
    return None


def _find_value(text: str, value: str) -> tuple[int, int] | None:
    """Where ``value`` is mentioned as a whole (a number by value: 60.0 is "$60.00")."""
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        for m in NUMBER.finditer(text):
            if number_value(m.group(0)) == float(value):
                return m.span()
        return None
    if len(value) < 3:
        return None
    m = re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text)
    return m.span() if m else None


def _format_like(shown: str, value: str) -> str:
    """``value`` written the way the reply wrote the old one ("$60.00", not 60.0)."""
    if re.fullmatch(r"[\d,]+(?:\.\d+)?", shown) and re.fullmatch(r"\d+(?:\.\d+)?", value):
        decimals = len(shown.partition(".")[2])
        return f"{float(value):,.{decimals}f}" if "," in shown else f"{float(value):.{decimals}f}"
    return value


ASIN = re.compile(r"\bB0[0-9A-Z]{8}\b")
LISTING = re.compile(r"\[(B0[0-9A-Z]{8})\]\s*\n(.*?)\n\s*\$(\d+(?:\.\d+)?)")
BUDGET = re.compile(r"price lower than (\d+(?:\.\d+)?) dollars")


def _other_record_listing(traj: Trajectory, rng: random.Random) -> Made | None:
    """WebShop: "X and Y are ... less then 30 dollars" with Y swapped for a listed item
    that costs more than the budget (the agent misjudges one record's price)."""
    budget = BUDGET.search(traj.task)
    if not budget:
        return None
    limit, steps = float(budget.group(1)), traj.steps
    for pos in _shuffled(rng, range(1, len(steps) - 1)):
        obs, step, nxt = steps[pos - 1], steps[pos], steps[pos + 1]
        if obs.kind != "observation" or step.kind != "thought" or not re.search(r"less th[ae]n|lower than", step.text):
            continue
        prices = {asin: float(price) for asin, _, price in LISTING.findall(obs.text)}
        named = list(dict.fromkeys(ASIN.findall(step.text)))
        clicked = nxt.args if nxt.tool == "click" else None
        # Only the item the agent does not click next is swapped, so its next action still follows.
        spare = [a for a in named if a in prices and a != clicked and prices[a] <= limit]
        dear = [a for a, p in prices.items() if p > limit and a not in named]
        if len(named) < 2 or not spare or not dear:
            continue
        old, new = rng.choice(spare), rng.choice(dear)
        text = step.text.replace(old, new)
        return Made(
            replaced(steps, pos, with_text(step, text)),
            step.index,
            f"{old} -> {new} (listed at ${prices[new]}, budget {limit:g})",
        )
    return None


DESC = re.compile(r"(?i)^\s*(?:desc|describe)\s+`?(\w+)`?\s*;?\s*$")
COLUMN = re.compile(r"\('([^']+)', '")


def _other_record_column(traj: Trajectory, rng: random.Random) -> Made | None:
    """SQL: right after DESC of one table, a column of another described table is named as its own."""
    steps = traj.steps
    tables: dict[str, list[str]] = {}
    candidates = []
    for pos in range(2, len(steps)):
        act, obs, step = steps[pos - 2], steps[pos - 1], steps[pos]
        m = DESC.match(str(act.args or "")) if act.kind == "action" else None
        if not m or obs.kind != "observation":
            continue
        table, columns = m.group(1), COLUMN.findall(obs.text)
        if columns and step.kind == "thought":
            mentioned = [c for c in columns if len(c) >= 4 and re.search(rf"(?<!\w){re.escape(c)}(?!\w)", step.text)]
            foreign = [
                c
                for other, cols in tables.items()
                if other.lower() != table.lower()
                for c in cols
                if len(c) >= 4 and c.lower() not in {x.lower() for x in columns} and c not in step.text
            ]
            if mentioned and foreign:
                candidates.append((pos, table, mentioned, foreign))
        if columns:
            tables[table] = columns
    if not candidates:
        return None
    pos, table, mentioned, foreign = rng.choice(candidates)
    old, new = rng.choice(mentioned), rng.choice(foreign)
    step = steps[pos]
    text = re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", new, step.text)
    return Made(
        replaced(steps, pos, with_text(step, text)), step.index, f"{table}.{old} -> {new} (a column of another table)"
    )


# ---------------------------------------------------------------------------
# Kind 4: success_after_failure -- the call failed, the agent says it worked
# ---------------------------------------------------------------------------


def success_after_failure(traj: Trajectory, rng: random.Random) -> Made | None:
    # Not WebShop: its "Invalid action!" follows a click on an option the page never
    # offered, which the thought before had already claimed (a lapse of the run's own).
    for maker, fits in (
        (_success_household, is_household),
        (_success_code, is_code),
        (_success_shell, is_shell),
        (_success_dialogue, is_dialogue),
    ):
        if fits(traj):
            return maker(traj, rng)
    return None


PUT = re.compile(r"^(\w+) (\d+) in/on (.+)$")
WITH = re.compile(r"^(\w+) (\d+) with (.+)$")
TASK_PLACE = re.compile(r"\b(?:in|on)\s+(?:a |the )?([a-z]+)\.?\s*$")


def _success_household(traj: Trajectory, rng: random.Random) -> Made | None:
    """ "Nothing happens." to a put / heat / cool / clean of an object the agent holds,
    and the thought says it was done. A failed *take* is left out: in these runs it
    nearly always follows an object the agent imagined, a lapse of its own before ours."""
    steps = traj.steps
    for pos in _shuffled(rng, range(1, len(steps))):
        act, obs = steps[pos - 1], steps[pos]
        if obs.kind != "observation" or obs.text.strip() != "Nothing happens." or act.kind != "action":
            continue
        m = (PUT if act.tool == "put" else WITH).match(str(act.args or ""))
        if (
            act.tool not in ("put", "heat", "cool", "clean")
            or not m
            or not _holding(steps[: pos - 1], m.group(1), m.group(2))
        ):
            continue
        obj, n = m.group(1), m.group(2)
        if act.tool == "put":
            text = f"Now I put {an(obj)} {obj} ({n}) in/on {m.group(3)}."
        else:
            place = TASK_PLACE.search(first_line(traj.task).lower())
            then = f" Next, I need to put it in/on {place.group(1)}." if place else ""
            text = f"Now I {act.tool} {an(obj)} {obj} ({n}).{then}"
        return thought_at(steps, pos + 1, text, f"'{act.text}' got 'Nothing happens.'")
    return None


def _holding(steps: list[Step], obj: str, n: str) -> bool:
    """Picked up and not put down since, by what the environment said."""
    held = False
    for step in steps:
        if step.kind == "observation" and step.text.startswith(f"You pick up the {obj} {n} "):
            held = True
        elif step.kind == "observation" and step.text.startswith(f"You put the {obj} {n} "):
            held = False
    return held


CODE_ERROR = re.compile(r"Traceback \(most recent call last\)|\b\w*Error\b:|^\s*Cell In\[\d+\]", re.M)


def _success_code(traj: Trajectory, rng: random.Random) -> Made | None:
    steps = traj.steps
    for pos in _shuffled(rng, range(1, len(steps))):
        obs = steps[pos]
        if obs.kind != "observation" or obs.tool != "execute" or not CODE_ERROR.search(obs.text):
            continue
        text = rng.choice(
            [
                "The function passed all the test cases. I can now submit the solution.",
                "The code ran without errors and the assertions pass, so the function works correctly.",
                "The tests pass now, so the function is correct. Let me submit it.",
            ]
        )
        error = next((line.strip() for line in obs.text.splitlines() if "Error" in line), "an error")
        return thought_at(steps, pos + 1, text, f"execution failed ({error[:60]})")
    return None


SHELL_ERROR = re.compile(
    r"^Error executing query|command not found|No such file or directory|syntax error|Traceback|invalid option|Permission denied",
    re.M,
)


def _success_shell(traj: Trajectory, rng: random.Random) -> Made | None:
    if not has_thoughts(traj):  # CTF runs have no thoughts: a sudden one would not read like the agent
        return None
    steps = traj.steps
    for pos in _shuffled(rng, range(1, len(steps))):
        obs = steps[pos]
        if obs.kind != "observation" or not SHELL_ERROR.search(obs.text):
            continue
        text = rng.choice(
            [
                "The query executed successfully and returned the results I need. This should be the answer.",
                "The query worked, and the output has the information the question asks for. I can submit.",
            ]
            if obs.tool == "sql"
            else [
                "The command ran successfully and printed the expected output. I can submit.",
                "This worked and shows what the task asks for, so the command is correct.",
            ]
        )
        return thought_at(steps, pos + 1, text, f"the call failed ({first_line(obs.text.strip())[:60]})")
    return None


# What a customer-service agent says once a write call went through, by tool.
DONE = {
    "cancel_pending_order": "Your order {order_id} has been cancelled, and the refund will go back to your original payment method.",
    "modify_pending_order_items": "Your order {order_id} has been updated with the new items.",
    "modify_pending_order_address": "The shipping address for your order {order_id} has been updated.",
    "modify_pending_order_payment": "The payment method for your order {order_id} has been changed.",
    "modify_user_address": "Your default address has been updated.",
    "return_delivered_order_items": "The return for your order {order_id} has been submitted. You will receive an email with the return instructions.",
    "exchange_delivered_order_items": "The exchange for your order {order_id} has been submitted. You will receive an email with the next steps.",
    "resume_line": "Your line {line_id} has been resumed and is active again.",
    "enable_roaming": "I have turned on roaming for your line {line_id}.",
    "refuel_data": "I have added {gb_amount} GB of data to your line {line_id}.",
    "send_payment_request": "I have sent you a payment request for bill {bill_id}.",
    "find_user_id_by_name_zip": "Thank you, I have found your account.",
    "find_user_id_by_email": "Thank you, I have found your account.",
    "get_customer_by_phone": "Thank you, I have found your account.",
}
STILL_BROKEN = re.compile(
    r"\bstill\b.*\b(No Signal|No Service|not|can't|cannot|won't|fail\w*|doesn't|isn't|slow)\b", re.I | re.S
)
ISSUE = {
    "service_issue": "your phone service",
    "mobile_data_issue": "your mobile data",
    "mms_issue": "picture messaging",
}


def _success_dialogue(traj: Trajectory, rng: random.Random) -> Made | None:
    steps = traj.steps
    for pos in _shuffled(rng, range(1, len(steps) - 1)):
        obs, reply = steps[pos], steps[pos + 1]
        if obs.kind != "observation" or not is_reply(reply):
            continue
        if is_tool_result(obs) and obs.text.startswith("Error"):
            call = next((s for s in reversed(steps[:pos]) if s.kind == "action" and s.tool == obs.tool), None)
            template = DONE.get(obs.tool or "")
            if call is None or template is None or not isinstance(call.args, dict):
                continue
            try:
                text = template.format(**call.args)
            except (KeyError, IndexError):
                continue
            why = f"{obs.tool} returned {obs.text[:60]!r}"
        elif not is_tool_result(obs) and STILL_BROKEN.search(obs.text):
            issue = next((v for k, v in ISSUE.items() if k in traj.run_id), None)
            if issue is None:
                continue
            text = f"Great, I'm glad {issue} is working again! Is there anything else I can help you with?"
            why = f"the user said {obs.text[:60]!r}"
        else:
            continue
        return Made(replaced(steps, pos + 1, with_text(reply, text)), reply.index, f"rewrote reply: {why}")
    return None


# ---------------------------------------------------------------------------
# Kind 5: reads_empty_result -- the lookup came back empty, the agent reports content
# ---------------------------------------------------------------------------

NOT_FOUND = re.compile(r"^(Could not find|No more results|There were no results)")
PLAN = re.compile(r"\s*(To |I need to|I should|I can|I will|Let me|Maybe|Perhaps)")
PLAIN_OPENERS = frozenset(
    {"a", "an", "the", "among", "there", "in", "on", "at", "it", "one", "some", "only", "all", "no", "after", "before"}
)
CONTENT_WORD = re.compile(r"\b(?:[A-Z][a-z]{3,}|\d{2,}(?:,\d{3})*(?:\.\d+)?)\b")


def reads_empty_result(traj: Trajectory, rng: random.Random) -> Made | None:
    if is_wiki(traj):
        return _reads_failed_lookup(traj, rng)
    if is_shell(traj) and has_thoughts(traj):
        return _reads_empty_output(traj, rng)
    return None


def _reads_failed_lookup(traj: Trajectory, rng: random.Random) -> Made | None:
    """After "Could not find [X]" the thought states facts. Where the run later
    learns a fact, the agent's own later sentence is moved forward (a result it had
    not got yet); FEVER's short runs get the claim restated as what the page says."""
    steps = traj.steps
    for pos in _shuffled(rng, range(1, len(steps))):
        obs = steps[pos - 1]
        if (
            obs.kind != "observation"
            or not NOT_FOUND.match(obs.text)
            or pos >= len(steps)
            or steps[pos].kind != "thought"
        ):
            continue
        known = traj.goal + "\n" + "\n".join(s.text for s in steps[:pos])
        later = "\n".join(s.text for s in steps[pos:] if s.kind == "observation")
        for future in steps[pos + 1 :]:
            if future.kind != "thought" or PLAN.match(future.text):
                continue  # a plan ("To find X, I can search Y") claims nothing
            new_words = {w for w in CONTENT_WORD.findall(future.text) if w not in known and w in later}
            if new_words:
                return Made(
                    replaced(steps, pos, with_text(steps[pos], future.text)),
                    steps[pos].index,
                    f"after {obs.text[:40]!r}, a later thought moved here (uses {sorted(new_words)[:3]})",
                )
        if is_fever(traj):
            claim = traj.task.strip().rstrip(".?")
            first = claim.split(" ", 1)[0]
            if first.lower() in PLAIN_OPENERS:  # "Among the teams ..." inside a sentence
                claim = claim[0].lower() + claim[1:]
            text = rng.choice(
                [
                    f"The passage says that {claim}, so the claim is supported.",
                    f"The page confirms that {claim}. So the claim is true.",
                ]
            )
            return Made(
                replaced(steps, pos, with_text(steps[pos], text)),
                steps[pos].index,
                f"after {obs.text[:40]!r}, claims the page confirms",
            )
    return None


def _reads_empty_output(traj: Trajectory, rng: random.Random) -> Made | None:
    steps = traj.steps
    for pos in _shuffled(rng, range(1, len(steps))):
        obs = steps[pos]
        if obs.kind != "observation" or obs.text.strip() not in ("", "[]") or obs.tool not in ("sql", "bash"):
            continue
        text = rng.choice(
            [
                "The query executed successfully, and the output lists the rows the question asks for. This should be correct.",
                "The query returns the matching records, so this answers the question. I can submit.",
            ]
            if obs.tool == "sql"
            else [
                "This prints the lines the task asks for, so the command is correct. I can submit.",
                "The output lists the files I was looking for. I can submit.",
            ]
        )
        return thought_at(steps, pos + 1, text, f"output was {obs.text.strip() or 'empty'!r}")
    return None


# ---------------------------------------------------------------------------
# Kind 6: unmade_call_claimed -- reports a call it has not made (yet)
# ---------------------------------------------------------------------------


def unmade_call_claimed(traj: Trajectory, rng: random.Random) -> Made | None:
    if is_dialogue(traj):
        return _done_before_doing(traj, rng)
    if is_code(traj):
        return _tested_before_testing(traj, rng)
    return None


WRITES = frozenset(DONE) - {"find_user_id_by_name_zip", "find_user_id_by_email", "get_customer_by_phone"}


def _done_before_doing(traj: Trajectory, rng: random.Random) -> Made | None:
    """The reply that asks "shall I go ahead?" before a write call, rewritten to say it is done."""
    steps = traj.steps
    candidates = []
    for q, call in enumerate(steps):
        if call.kind != "action" or call.tool not in WRITES or not isinstance(call.args, dict):
            continue
        if any(s.kind == "action" and s.tool == call.tool for s in steps[:q]):
            continue
        p = next((i for i in range(q - 1, -1, -1) if is_reply(steps[i])), None)
        if p is None or not any(s.kind == "observation" and not is_tool_result(s) for s in steps[p:q]):
            continue  # no user turn in between: the reply is not asking for a go-ahead
        try:
            text = DONE[call.tool].format(**call.args)
        except (KeyError, IndexError):
            continue
        # The ids in the claim were already known, so the only fault is the missing call.
        ids = re.findall(r"#?\b[A-Z]\w*\d{3,}\b", text)
        before = traj.goal + "\n".join(s.text for s in steps[:p])
        if all(i in before for i in ids):
            candidates.append((p, text, call.tool, q))
    if not candidates:
        return None
    p, text, tool, q = rng.choice(candidates)
    return Made(
        replaced(steps, p, with_text(steps[p], text)),
        steps[p].index,
        f"says {tool} is done; it is first called at step {steps[q].index}",
    )


def _tested_before_testing(traj: Trajectory, rng: random.Random) -> Made | None:
    """Before its first execution, the agent says it ran the examples and they pass
    (claude-2 and Llama-3 runs do this for real)."""
    steps = traj.steps
    q = next((i for i, s in enumerate(steps) if s.kind == "action" and s.tool == "execute"), None)
    if q is None or q == 0 or steps[q - 1].kind != "thought":
        return None
    what = (
        "the assertion from the task passes"
        if "assert " in traj.task
        else "the examples from the docstring give the expected results"
    )
    text = rng.choice(
        [f"I ran the function and {what}, so it works correctly.", f"I have tested this function: {what}."]
    )
    return Made(
        inserted(steps, q, Step(index=0, kind="thought", text=text)),
        steps[q].index,
        "inserted a test report before any execution",
    )


# ---------------------------------------------------------------------------
# Kind 7: unseen_thing_claimed -- finds an object the observation does not show
# ---------------------------------------------------------------------------


def unseen_thing_claimed(traj: Trajectory, rng: random.Random) -> Made | None:
    if is_household(traj):
        return _finds_missing_object(traj, rng)
    return None


# "look at bowl under the desklamp", "put a clean lettuce in diningtable", "put two cellphone in sofa".
TASK_TARGET = (
    re.compile(r"^(?:look at|examine)\s+(?:the\s+|a\s+|an\s+)?([a-z]+)"),
    re.compile(r"\b(?:some|a|an|the|two)\s+(?:clean|hot|cool|cold)?\s*([a-z]+)\b"),
)


def _task_target(task: str) -> str | None:
    first = first_line(task).lower().strip()
    for pattern in TASK_TARGET:
        if m := pattern.search(first):
            return m.group(1)
    return None


def _finds_missing_object(traj: Trajectory, rng: random.Random) -> Made | None:
    """ "Now I find a pan (1)" at a place whose listing has no pan, before any pan was seen."""
    target, steps = _task_target(traj.task), traj.steps
    if not target:
        return None
    candidates = []
    for pos, obs in enumerate(steps):
        if obs.kind != "observation" or "you see" not in obs.text:
            continue
        if re.search(rf"\b{target}\b", observed_before(steps, pos + 1)):
            break  # from here on the agent may have seen one
        candidates.append(pos)
    if not candidates:
        return None
    pos = rng.choice(candidates)
    text = f"Now I find {an(target)} {target} (1). Next, I need to take it."
    return thought_at(steps, pos + 1, text, f"no {target} in {steps[pos].text[:60]!r}")


# ---------------------------------------------------------------------------
# Kind 8: answer_contradicts_reasoning -- the final answer says the opposite of the thought before it
# ---------------------------------------------------------------------------

VERDICT_CUES = {
    "SUPPORTS": re.compile(r"\b(is true|supports?|supported|is correct|so the claim is true)\b", re.I),
    "REFUTES": re.compile(r"\b(is false|refutes?|refuted|is incorrect|is not true)\b", re.I),
    "NOT ENOUGH INFO": re.compile(
        r"\b(not enough|cannot|can not|does not say|doesn't say|no information|does not mention)\b", re.I
    ),
}
VERDICT_FLIP = {"SUPPORTS": "REFUTES", "REFUTES": "SUPPORTS", "NOT ENOUGH INFO": "SUPPORTS"}


def answer_contradicts_reasoning(traj: Trajectory, rng: random.Random) -> Made | None:
    if not is_wiki(traj):
        return None
    steps = traj.steps
    if len(steps) < 2 or steps[-1].kind != "final" or steps[-2].kind != "thought":
        return None
    final, thought = steps[-1], steps[-2]
    answer = final.text.strip()
    if answer in VERDICT_FLIP:
        cue = VERDICT_CUES[answer]
        # The thought must state this verdict and not its opposite.
        if not cue.search(thought.text) or VERDICT_CUES[VERDICT_FLIP[answer]].search(thought.text):
            return None
        new = VERDICT_FLIP[answer]
    else:
        new = _other_choice(traj.task, answer, thought.text)
        if new is None:
            return None
    return Made(replaced(steps, len(steps) - 1, _with_answer(final, new)), final.index, f"answer {answer!r} -> {new!r}")


def _with_answer(final: Step, new: str) -> Step:
    args = new if isinstance(final.args, str) or final.args is None else final.args
    return replace(final, text=new, args=args)


def _other_choice(task: str, answer: str, thought: str) -> str | None:
    """For "A or B" questions the option not chosen; for yes/no the other word."""
    low = answer.lower().strip(" .")
    if low in ("yes", "no"):
        if not re.search(rf"\b{low}\b", thought, re.I):
            return None
        return "no" if low == "yes" else "yes"
    if not low or low not in thought.lower():
        return None  # the thought has to have concluded this answer
    lowered = task.lower()
    if lowered.count(" or ") != 1:
        return None  # "To SquarePants or Not to SquarePants or ...": no telling where names end
    if (i := lowered.find(low + " or ")) >= 0:
        other = _name_run(task[i + len(low) + 4 :].split())
    elif (j := lowered.find(" or " + low)) >= 0:
        other = " ".join(reversed(_name_run(list(reversed(task[:j].split()))).split()))
    else:
        return None
    other = other.strip("\"'")
    return other if other and other.lower() != low else None


CONNECTORS = frozenset({"of", "the", "and", "de", "&", "-", "for", "in"})


def _name_run(words: list[str]) -> str:
    """The name at the start of ``words``: capitalised words (and the small words
    inside names), up to punctuation -- "First for Women?" from "First for Women? ..."."""
    taken: list[str] = []
    for word in words:
        bare = word.strip("\"'")
        if not bare or not (bare[0].isupper() or bare[0].isdigit() or (taken and bare.lower() in CONNECTORS)):
            break
        taken.append(word.rstrip("?,:;."))
        if word[-1] in "?,:;.":
            break
    while taken and taken[-1] in CONNECTORS:  # lower-case only: "The" may open a name
        taken.pop()
    return " ".join(taken)


# ---------------------------------------------------------------------------
# Kind 9: unsupported_final_value -- the final answer carries a value no observation has
# ---------------------------------------------------------------------------

FLAG = re.compile(r"picoCTF\{([^}]+)\}")


def unsupported_final_value(traj: Trajectory, rng: random.Random) -> Made | None:
    steps = traj.steps
    if not steps or steps[-1].kind != "final":
        return None
    final = steps[-1]
    if is_wiki(traj) and final.text.strip() not in FEVER_LABELS:
        taken = numbers_in(run_text(traj))
        for m in _shuffled(rng, list(NUMBER.finditer(final.text))):
            if number_value(m.group(0)) not in numbers_in(observed_before(steps, len(steps) - 1)):
                continue
            new = perturb_number(m.group(0), rng, taken, day=is_day(final.text, m))
            if new:
                text = replace_token(final.text, *m.span(), new)
                return Made(
                    replaced(steps, len(steps) - 1, _with_answer(final, text)),
                    final.index,
                    f"answer {final.text!r} -> {text!r}",
                )
        return None
    if final.tool == "submit" and (m := FLAG.search(str(final.args or ""))):
        if m.group(0) not in observed_before(steps, len(steps) - 1):
            return None  # the flag was never printed: the run already guessed
        body = m.group(1)
        everything = run_text(traj)
        for _ in range(20):
            i = rng.randrange(len(body))
            pool = "0123456789abcdef" if body[i] in "0123456789abcdef" else "abcdefghijklmnopqrstuvwxyz_"
            flag = "picoCTF{" + body[:i] + rng.choice([c for c in pool if c != body[i]]) + body[i + 1 :] + "}"
            if flag not in everything:
                return Made(
                    replaced(steps, len(steps) - 1, replace(final, text=f"submit {flag}", args=flag)),
                    final.index,
                    f"flag {m.group(0)} -> {flag}",
                )
    return None


# ---------------------------------------------------------------------------
# Kind 10: resubmits_rejected -- proposes again a solution already marked wrong
# ---------------------------------------------------------------------------


def resubmits_rejected(traj: Trajectory, rng: random.Random) -> Made | None:
    if not is_code(traj):
        return None
    steps = traj.steps
    rejected = [
        s.args
        for i, s in enumerate(steps[:-1])
        if s.tool == "solution" and steps[i + 1].text.startswith("Your answer is wrong")
    ]
    for pos in _shuffled(rng, range(len(steps))):
        later = steps[pos]
        earlier = [code for code in rejected if any(s.args is code for s in steps[:pos])]
        if later.tool != "solution" or not earlier or not isinstance(later.args, str):
            continue
        code = rng.choice(earlier)
        if not isinstance(code, str) or code.strip() == later.args.strip():
            continue
        return Made(
            replaced(steps, pos, replace(later, text=code, args=code)),
            later.index,
            "the solution rejected earlier, proposed again",
        )
    return None


# ---------------------------------------------------------------------------
# The kinds, and where each fits
# ---------------------------------------------------------------------------

Maker = Callable[[Trajectory, random.Random], "Made | None"]
KINDS: dict[str, Maker] = {
    "misquoted_number": misquoted_number,
    "status_flipped": status_flipped,
    "other_record": other_record,
    "success_after_failure": success_after_failure,
    "reads_empty_result": reads_empty_result,
    "unmade_call_claimed": unmade_call_claimed,
    "unseen_thing_claimed": unseen_thing_claimed,
    "answer_contradicts_reasoning": answer_contradicts_reasoning,
    "unsupported_final_value": unsupported_final_value,
    "resubmits_rejected": resubmits_rejected,
}
# Only where the lapse is one these agents make (README-holdout3.md says why).
SOURCE_KINDS: dict[str, tuple[str, ...]] = {
    "alfworld_sala": ("misquoted_number", "success_after_failure", "unseen_thing_claimed"),
    "intercode": (
        "misquoted_number",
        "other_record",
        "success_after_failure",
        "reads_empty_result",
        "unsupported_final_value",
    ),
    "mint_coding": ("success_after_failure", "unmade_call_claimed", "resubmits_rejected"),
    "react_exemplars": (
        "misquoted_number",
        "success_after_failure",
        "reads_empty_result",
        "unseen_thing_claimed",
        "answer_contradicts_reasoning",
        "unsupported_final_value",
    ),
    "react_fever": ("misquoted_number", "reads_empty_result", "answer_contradicts_reasoning"),
    "react_webshop": ("misquoted_number", "other_record"),
    "reflexion_hotpotqa": (
        "misquoted_number",
        "reads_empty_result",
        "answer_contradicts_reasoning",
        "unsupported_final_value",
    ),
    "tau2_retail_telecom": (
        "misquoted_number",
        "status_flipped",
        "other_record",
        "success_after_failure",
        "unmade_call_claimed",
    ),
}


# ---------------------------------------------------------------------------
# Building the cases
# ---------------------------------------------------------------------------


@dataclass
class Case:
    source: str
    kind: str
    run_id: str
    expected: int
    note: str
    traj: Trajectory

    @property
    def lapse_text(self) -> str:
        step = next(s for s in self.traj.steps if s.index == self.expected)
        return step.text


class CleanBases:
    """Which runs the detector passes as recorded; asked lazily, remembered."""

    def __init__(self) -> None:
        self._clean: dict[tuple[str, str], bool] = {}

    def is_clean(self, source: str, traj: Trajectory) -> bool:
        key = (source, traj.run_id)
        if key not in self._clean:
            self._clean[key] = anchor_report(traj.steps, task=traj.goal, context=traj.context).first_break is None
        return self._clean[key]

    def share(self, source: str, runs: list[Trajectory]) -> tuple[int, int]:
        return sum(self.is_clean(source, t) for t in runs), len(runs)


def succeeded(traj: Trajectory) -> bool:
    return traj.success is True or traj.reward == 1


def base_order(runs: list[Trajectory], rng: random.Random) -> list[Trajectory]:
    """Shuffled, successful runs first: a run that reached its goal is the least
    likely to hide a lapse of its own before the one we insert."""
    order = list(runs)
    rng.shuffle(order)
    return sorted(order, key=lambda t: not succeeded(t))


# These rewrite the final answer, so the run's answer must have been right: the
# change then makes it wrong, and the reasoning before it held up.
FINAL_ANSWER_KINDS = frozenset({"answer_contradicts_reasoning", "unsupported_final_value", "resubmits_rejected"})


def make_cases(source: str, runs: list[Trajectory], bases: CleanBases, seed: int, per_kind: int) -> Iterator[Case]:
    for kind in SOURCE_KINDS[source]:
        rng = random.Random(f"holdout3/{seed}/{source}/{kind}")
        made, tasks = 0, set()
        for traj in base_order(runs, rng):
            if made >= per_kind:
                break
            # One case per task: reruns of a task (Reflexion trials, six MINT models)
            # would otherwise give near copies of one case.
            if traj.task in tasks or not bases.is_clean(source, traj):
                continue
            if kind in FINAL_ANSWER_KINDS and not succeeded(traj):
                continue
            result = KINDS[kind](traj, rng)
            if result is None:
                continue
            made += 1
            tasks.add(traj.task)
            yield Case(source, kind, traj.run_id, result.index, result.note, replace(traj, steps=result.steps))


# ---------------------------------------------------------------------------
# Scoring and the report
# ---------------------------------------------------------------------------

OUTCOMES = ("exact", "within1", "missed", "early")


def score(expected: int, first_break: int | None) -> set[str]:
    """exact and within-one overlap on purpose (exact is within one); early is any break before the lapse."""
    if first_break is None:
        return {"missed"}
    out = set()
    if first_break == expected:
        out.add("exact")
    if abs(first_break - expected) <= 1:
        out.add("within1")
    if first_break < expected:
        out.add("early")
    return out


def table(title: str, rows: dict[str, list[set[str]]]) -> str:
    """Per row: cases, then the share of each outcome."""
    width = max(len(title), *(len(name) for name in rows)) + 2
    lines = [f"{title:<{width}} {'n':>4} {'exact':>7} {'within1':>8} {'missed':>7} {'early':>6}"]
    for name, outcomes in rows.items():
        n = len(outcomes)
        cells = [f"{100 * sum(o in r for r in outcomes) / n:.0f}%" if n else "-" for o in OUTCOMES]
        lines.append(f"{name:<{width}} {n:>4} {cells[0]:>7} {cells[1]:>8} {cells[2]:>7} {cells[3]:>6}")
    return "\n".join(lines)


def trim(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Result:
    case: Case
    first_break: int | None
    reason: str
    # What the report says about the lapse step even without a break: its score
    # (the report's ``scores`` by step index) and any findings there.
    lapse_score: float | None = None
    findings: str = ""

    @property
    def outcome(self) -> set[str]:
        return score(self.case.expected, self.first_break)

    def to_json(self) -> dict[str, Any]:
        c = self.case
        return {
            "source": c.source,
            "kind": c.kind,
            "run_id": c.run_id,
            "expected": c.expected,
            "first_break": self.first_break,
            "outcome": sorted(self.outcome),
            "note": c.note,
            "lapse": c.lapse_text,
            "reason": self.reason,
            "lapse_score": self.lapse_score,
            "findings": self.findings,
        }


def evaluate(source: str, runs: list[Trajectory], bases: CleanBases, seed: int, per_kind: int) -> list[Result]:
    results = []
    for case in make_cases(source, runs, bases, seed, per_kind):
        report = anchor_report(case.traj.steps, task=case.traj.goal, context=case.traj.context)
        scores = report.scores if isinstance(report.scores, dict) else {}
        findings = "; ".join(str(f) for f in report.findings or [])
        results.append(Result(case, report.first_break, report.reason, scores.get(case.expected), findings))
    return results


def print_report(results: list[Result], shares: dict[str, tuple[int, int]], seed: int, show_missed: int) -> None:
    by_source: dict[str, list[set[str]]] = defaultdict(list)
    by_kind: dict[str, list[set[str]]] = defaultdict(list)
    by_pair: dict[str, list[set[str]]] = defaultdict(list)
    for r in results:
        by_source[r.case.source].append(r.outcome)
        by_kind[r.case.kind].append(r.outcome)
        by_pair[f"{r.case.source} / {r.case.kind}"].append(r.outcome)
    for title, rows in (("source", by_source), ("kind", by_kind), ("source / kind", by_pair)):
        print(table(title, dict(sorted(rows.items()))), end="\n\n")
    print(table("overall", {"all cases": [r.outcome for r in results]}))
    print("\nclean bases (no break as recorded) among all runs:")
    for source, (clean, total) in shares.items():
        print(f"  {source:<22} {clean:>4} / {total:<4} {100 * clean / total:5.1f}%")
    missed = [r for r in results if r.first_break is None]
    for r in random.Random(f"holdout3/{seed}/missed").sample(missed, min(show_missed, len(missed))):
        print(f"\nMISSED {r.case.kind} {r.case.source} {r.case.run_id} step {r.case.expected} ({r.case.note})")
        print(f"  step: {trim(r.case.lapse_text)}")
        said = r.reason or r.findings or "no break, no reason"
        print(f"  detector: {trim(said)} (score of the lapse step: {r.lapse_score})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--per-kind", type=int, default=DEFAULT_PER_KIND, help="cases per kind per source (at most)")
    parser.add_argument("--sources", nargs="*", default=list(SOURCES))
    parser.add_argument("--show-missed", type=int, default=0, metavar="N", help="print N missed cases")
    parser.add_argument("--json", metavar="PATH", help="write one JSON line per case")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    data = _paths.eval_dir()
    print(f"measuring {_paths.describe(ROOT)}\ndata {data}")
    print(f"seed {args.seed}, up to {args.per_kind} cases per kind per source\n")
    bases, results, shares = CleanBases(), [], {}
    for source in args.sources:
        path = data / source / "runs.jsonl"
        if not path.is_file():
            print(f"skip {source}: no {path}")
            continue
        runs = list(read_jsonl(path))
        results += evaluate(source, runs, bases, args.seed, args.per_kind)
        shares[source] = bases.share(source, runs)  # checks the runs no case needed
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.writelines(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in results)
    print_report(results, shares, args.seed, args.show_missed)
    print(f"\n{len(results)} cases in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
