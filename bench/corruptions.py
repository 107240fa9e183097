"""Controlled corruptions of real runs, for the anchoring benchmark.

Each generator looks at one real run and lists the places where a corruption
of its kind fits (``Candidate``: the latest original step it touches, and how
to build it). The benchmark keeps the candidates that lie before the
detector's own first break on the clean run and picks one per run and kind.

Everything here is driven by the structure of the run, never by strings of one
source: who speaks (``tracing.core.steps.role_of`` / ``is_reply``), what a tool
result says (``tracing.core.results.read_result``: status, form, parsed data,
rejected), JSON records with an id-like key, row tuples, tool names. Nothing
here asks the detector anything, so the cases do not bend towards it.

Kinds (the expected break is always a step of the agent's):

swap_observation      a tool result that the next statement uses is replaced by
                      another result of the same tool (else any) in the same
                      source that shares none of the used values; the
                      statement is the break.
requery               a call and its (usable) result are inserted again after a
                      later result, with no user turn or write call between;
                      the re-issued call is the break.
changed_claim         a grounded number or name in a prose sentence of a
                      statement is replaced by one no evidence contains. A
                      name is a capitalised word the source never writes in
                      lower case, and so is its replacement, drawn from the
                      names the source's statements use mid-sentence; not a
                      literal, class, abbreviation, month or weekday. Plans,
                      code lines and statements of absence ("I cannot find
                      X") are not claims; the value is changed in the chosen
                      sentence.
false_success         a success claim, in the run's own statement form, is
                      inserted right after a failed result (or after a result
                      replaced by a failed one of the same source).
error_as_success      a successful result that the next statement builds on
                      (quotes a value only that result brought, or reports
                      success / an action done without naming a problem) is
                      replaced by a real error result of the same source
                      (same tool first); the statement is the break.
empty_as_data         a data result is replaced by an empty one of its shape
                      (``[]``, ``{}``/``null``, ``()``, no output); the first
                      statement that quotes a value only that result held is
                      the break.
wrong_record          a statement that quotes field f = v of record R next to
                      another value of R gets v' = f of another record of the
                      same kind observed before it.
stale_after_update    a record seen twice with field f changed (old -> new); a
                      later statement stating new gets old instead.
phantom_call          a call and its result are removed: a read whose values
                      the next statement quotes, or a write the next statement
                      reports as done.
rejected_resubmission after a submission the environment rejected, the next
                      submission (same tool) gets the rejected content again.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from tracing.core.results import Reading, read_result
from tracing.core.steps import Step, Trajectory, context_text, is_reply, role_of

KINDS = (
    "swap_observation",
    "requery",
    "changed_claim",
    "false_success",
    "error_as_success",
    "empty_as_data",
    "wrong_record",
    "stale_after_update",
    "phantom_call",
    "rejected_resubmission",
)
NEW_KINDS = KINDS[4:]

# Texts are scanned up to this many characters (a 1 MB result is not quoted).
MAX_SCAN = 20_000
# A value and the other value of its record that anchors the claim must be
# this close in the statement to be read as one claim.
ANCHOR_WINDOW = 150
# Strings longer than this are descriptions, not values anyone quotes.
MAX_VALUE_CHARS = 60

# Generic failure messages for false_success when a source has no failed result.
GENERIC_FAILURES = ("Nothing happens.", "Invalid action!", "Error: the tool call failed.", "No results found.")
# Success claims inserted by false_success; {what} is the failed call: its
# argument when that is a short phrase (``take apple 1``), else "the NAME call".
SUCCESS_TEMPLATES = ("Now I {what}. Done.", "I found it: {what}.", "Done, {what} worked.", "I have finished: {what}.")
SHORT_ARG_CHARS = 80

# Plain-English markers (not any source's strings).
# A statement that builds on a result as a success.
_SUCCESS_RE = re.compile(
    r"\b(?:works?|worked|working|correct(?:ly)?|success(?:ful(?:ly)?)?|pass(?:ed|es)?|as expected|done|found|"
    r"shows?|returned|returns?|gives?|output|results?|confirmed)\b",
    re.I,
)
# ... unless it acknowledges a problem.
_PROBLEM_RE = re.compile(
    r"\b(?:error|errors|fail\w*|wrong|incorrect|exception|traceback|not|no|none|empty|nothing|doesn't|didn't|"
    r"isn't|can't|cannot|unable|issue|problem|bug|mistake|apologi[sz]e|sorry)\b",
    re.I,
)
# A statement reporting an action as done.
_DONE_RE = re.compile(
    r"\b(?:has been|have been|had been|is now|are now|successfully|done|completed|updated|changed|modified|"
    r"processed|submitted|applied|enabled|disabled|resumed|suspended|sent|refunded|exchanged|returned|booked|"
    r"cancell?ed|toggled|turned (?:on|off)|reset|removed|added|created|deleted|moved|placed|put|took|taken|"
    r"picked up|opened|closed|saved|written|installed)\b",
    re.I,
)
# "Now I take the knife": a text agent narrating what it just did.
_NOW_I_RE = re.compile(r"\bnow,? i\b", re.I)
# Irregular past forms of write verbs (the regular ones end in -ed).
_IRREGULAR_PAST = {
    "take": ("took", "taken"),
    "put": ("put",),
    "make": ("made",),
    "send": ("sent",),
    "pay": ("paid",),
    "buy": ("bought",),
    "set": ("set",),
    "reset": ("reset",),
    "write": ("wrote", "written"),
}
# First word of a tool name that changes the world (snake_case, camelCase or
# a text-mode verb): English verbs, not one benchmark's tool list.
WRITE_VERBS = frozenset(
    [
        "add",
        "append",
        "apply",
        "book",
        "buy",
        "cancel",
        "change",
        "clean",
        "close",
        "cool",
        "create",
        "delete",
        "disable",
        "drop",
        "edit",
        "enable",
        "exchange",
        "heat",
        "insert",
        "install",
        "kill",
        "make",
        "modify",
        "move",
        "open",
        "pay",
        "place",
        "post",
        "purchase",
        "put",
        "refuel",
        "remove",
        "rename",
        "reset",
        "resume",
        "return",
        "save",
        "send",
        "set",
        "start",
        "stop",
        "submit",
        "suspend",
        "take",
        "toggle",
        "transfer",
        "turn",
        "update",
        "upgrade",
        "upload",
        "use",
        "write",
    ]
)
# Sentences that plan or ask rather than assert are not changed by changed_claim.
_PLANNING_RE = re.compile(
    r"\b(?:need to|should|will|let me|let's|search|look up|maybe|likely|if|could|would|might|try)\b|\?", re.I
)
# Prose only: a sentence with code punctuation is not a claim we rewrite.
_CODE_CHARS_RE = re.compile(r"[()\[\]{}=`_<>;\\]")
_SENTENCE_RE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$)|$)", re.M)

# Capitalised words that are sentence furniture, not names.
_STOP = frozenset(
    [
        "the",
        "this",
        "that",
        "these",
        "those",
        "there",
        "then",
        "they",
        "them",
        "their",
        "it",
        "its",
        "in",
        "on",
        "at",
        "for",
        "from",
        "with",
        "and",
        "but",
        "or",
        "if",
        "when",
        "what",
        "which",
        "who",
        "how",
        "why",
        "yes",
        "no",
        "not",
        "you",
        "your",
        "yours",
        "our",
        "we",
        "he",
        "she",
        "his",
        "her",
        "as",
        "by",
        "of",
        "to",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "can",
        "will",
        "would",
        "should",
        "could",
        "may",
        "might",
        "let",
        "here",
        "now",
        "so",
        "also",
        "please",
        "thank",
        "thanks",
        "hello",
        "hi",
        "sure",
        "okay",
        "ok",
        "great",
        "all",
        "any",
        "some",
        "each",
        "one",
        "two",
        "note",
        "after",
        "before",
        "first",
        "next",
        "finally",
        "however",
        "since",
        "because",
        "unfortunately",
        "sorry",
        "welcome",
        "dear",
        "i",
        "my",
        "me",
        "done",
    ]
)
_NUMERIC_ID_RE = re.compile(r"[\w#@.:/+-]*\d[\w#@.:/+-]*")
_SNAKE_RE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_NAME_RE = re.compile(r"\b[A-Z][a-zA-Z]{2,}\b")
# A capitalised word inside a sentence (not after . ! ? or a line start), and lower-case words.
_MID_NAME_RE = re.compile(r"(?<=[\w,;:'\"’”)] )([A-Z][a-z]{3,})\b")
_LOWER_WORD_RE = re.compile(r"\b[a-z]{2,}\b")
# Literals, classes and abbreviations ("SIM", "MMSC": three letters at most,
# or five with no vowel), months and weekdays: not names a claim rests on.
_CODE_WORD_RE = re.compile(
    r"^(?:True|False|None|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,3}|[B-DF-HJ-NP-TV-Z]{4,5}"
    r"|(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday))$"
)
# A line of code inside a thought ("    return res % 9"): not a prose claim.
_CODE_LINE_RE = re.compile(r"^(?: {4}|\t)|^\s*(?:return|def|import|from|for|while|if|elif|else|print|assert)\b(?!\s+[A-Z])")
# "I cannot find X", "the paragraph does not mention X": nothing is asserted of X.
_ABSENCE_RE = re.compile(
    r"\b(?:can ?not|can't|could not|couldn't|unable to) (?:find|locate|see)\b|\b(?:does|did|do) not (?:mention|say|say anything"
    r"|list|include|contain|show)\b|\bnot (?:mentioned|listed|found|included)\b|\bno (?:mention|information|results?)\b",
    re.I,
)
_ID_KEY_RE = re.compile(r"(?:^|_)(?:id|uuid)$|[a-z]Id$|ID$", re.I)


# ---------------------------------------------------------------------------
# Who speaks, and what a step says
# ---------------------------------------------------------------------------
def is_statement(step: Step) -> bool:
    """The agent's own words: a thought, a final answer, a reply to the user."""
    return role_of(step) == "assistant" and (step.kind in ("thought", "final") or is_reply(step))


def is_call(step: Step) -> bool:
    return step.kind == "action" and role_of(step) == "assistant" and not is_reply(step)


def is_result(step: Step) -> bool:
    return step.kind == "observation" and role_of(step) == "tool"


def is_user(step: Step) -> bool:
    return step.kind == "observation" and role_of(step) == "user"


def is_agent(step: Step) -> bool:
    return role_of(step) == "assistant" and step.kind in ("thought", "action", "final")


def args_text(args: Any) -> str:
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(args)


def statement_text(step: Step) -> str:
    if step.text:
        return step.text
    if isinstance(step.args, dict):
        return " ".join(str(v) for v in step.args.values() if isinstance(v, str))
    return args_text(step.args)


def step_words(step: Step) -> str:
    """Everything a step says: its text and, when not already in it, its arguments."""
    extra = args_text(step.args)
    text = step.text or ""
    return text if not extra or extra in text else f"{text}\n{extra}"


def tool_verb(tool: str | None) -> str:
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", (tool or "").strip())
    words = re.findall(r"[A-Za-z]+", name)
    return words[0].lower() if words else ""


def is_write(step: Step) -> bool:
    return is_call(step) and tool_verb(step.tool) in WRITE_VERBS


def without_status(meta: dict[str, Any] | None) -> dict[str, Any]:
    """A replaced result's meta: nothing recorded about the old text survives."""
    return {k: v for k, v in (meta or {}).items() if k not in ("status", "class", "obs_class", "signals")}


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------
def units(text: str) -> set[str]:
    """Checkable values in a text, lower-cased: tokens with a digit (numbers,
    ids, dates, prices), snake_case identifiers, capitalised names."""
    text = (text or "")[:MAX_SCAN]
    out: set[str] = set()
    for m in _NUMERIC_ID_RE.finditer(text):
        u = m.group(0).strip(".,:;/-+$#").lower()
        if len(u) >= 2 and any(c.isdigit() for c in u):
            out.add(u)
    out.update(m.group(0) for m in _SNAKE_RE.finditer(text))
    for m in _NAME_RE.finditer(text):
        w = m.group(0).lower()
        if w not in _STOP:
            out.add(w)
    return out


def value_pattern(value: str) -> re.Pattern[str]:
    """``value`` as a whole token: 60 does not match 160, 60.5 or 60a."""
    flags = re.I if re.search(r"[A-Za-z]", value) else 0
    return re.compile(rf"(?<![\w.]){re.escape(value)}(?!\w|\.\d)", flags)


def find_value(value: str, text: str) -> re.Match[str] | None:
    return value_pattern(value).search(text[:MAX_SCAN])


def _styled(new: str, matched: str) -> str:
    if matched.isupper() and len(matched) > 1:
        return new.upper()
    if matched[:1].isupper() and new[:1].islower():
        return new[:1].upper() + new[1:]
    if matched[:1].islower() and new[:1].isupper() and not new.isupper():
        return new[:1].lower() + new[1:]
    return new


def replace_value(step: Step, old: str, new: str) -> Step:
    """The step with the first whole-token ``old`` replaced by ``new`` in its
    text and the same in its arguments (a reply's text lives in both)."""
    pat = value_pattern(old)

    def sub(text: str) -> str:
        return pat.sub(lambda m: _styled(new, m.group(0)), text, count=1)

    return _edited(step, sub)


def _edited(step: Step, sub: Callable[[str], str]) -> Step:
    """The step with ``sub`` applied to its text and to every string of its arguments."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return sub(value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return replace(step, text=sub(step.text or ""), args=walk(step.args))


def value_forms(value: Any) -> list[str]:
    """How a scalar may be written in a statement."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, float):
        forms = [repr(value)]
        if value.is_integer():
            forms.append(str(int(value)))
        elif round(value, 2) == value:
            forms.append(f"{value:.2f}")
        return list(dict.fromkeys(forms))
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, str):
        v = value.strip()
        if not v or len(v) > MAX_VALUE_CHARS or "\n" in v:
            return []
        return [v]
    return []


def _distinctive(form: str) -> bool:
    """Worth quoting: not a one-character value, a lone small number or a stop word."""
    if len(form) < 2 or form.lower() in _STOP:
        return False
    if form.isdigit() and len(form) < 2:
        return False
    return len(form) >= 3 or any(c.isdigit() for c in form)


def _format_like(new: Any, matched_form: str, old: Any) -> str | None:
    forms = value_forms(new)
    if not forms:
        return None
    if isinstance(old, float) and isinstance(new, (int, float)) and not isinstance(new, bool):
        if "." not in matched_form and float(new).is_integer():
            return str(int(new))
        if re.fullmatch(r"-?\d+\.\d\d", matched_form):
            return f"{float(new):.2f}"
    return forms[0]


# ---------------------------------------------------------------------------
# A run, read once
# ---------------------------------------------------------------------------
@dataclass
class Record:
    """A JSON object with an id-like key, or a row tuple of a result."""

    pos: int  # the result step it was read from
    kind: tuple[Any, ...]
    # Which record this is, for "seen again": the enclosing records' identities
    # and this one's primary key and value. None for rows.
    ident: tuple[Any, ...] | None
    fields: dict[Any, Any]  # field -> scalar value
    id_fields: frozenset[Any] = frozenset()


@dataclass
class _RawObject:
    pos: int
    obj: dict[str, Any]
    parent: _RawObject | None
    id_keys: list[str]
    primary: str = ""

    def ident(self) -> tuple[Any, ...]:
        own = (self.primary, str(self.obj[self.primary]))
        return (self.parent.ident() if self.parent else ()) + own


def _scalar_fields(obj: dict[str, Any]) -> dict[Any, Any]:
    fields_: dict[Any, Any] = {}
    for k, v in obj.items():
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            fields_[k] = v
        elif isinstance(v, dict) and not any(_ID_KEY_RE.search(str(kk)) for kk in v):
            for kk, vv in v.items():
                if isinstance(vv, (str, int, float)) and not isinstance(vv, bool):
                    fields_[f"{k}.{kk}"] = vv
    return fields_


def _json_objects(data: Any, pos: int, parent: _RawObject | None, out: list[_RawObject], depth: int = 0) -> None:
    """Objects with an id-like key, each with the nearest such object around it."""
    if depth > 6:
        return
    if isinstance(data, list):
        for item in data[:500]:
            _json_objects(item, pos, parent, out, depth + 1)
        return
    if not isinstance(data, dict):
        return
    id_keys = [k for k, v in data.items() if _ID_KEY_RE.search(str(k)) and isinstance(v, (str, int)) and v != ""]
    here = parent
    if id_keys:
        here = _RawObject(pos, data, parent, id_keys)
        out.append(here)
    for v in data.values():
        if isinstance(v, (dict, list)):
            _json_objects(v, pos, here, out, depth + 1)


def _json_records(objects: list[_RawObject]) -> list[Record]:
    """Records of a run's JSON objects. An object's primary key is, among its
    id-like keys, the one with the most distinct values over the objects of
    its kind (a foreign key such as the owner's id repeats; ties: the first)."""
    by_kind: dict[frozenset[str], list[_RawObject]] = {}
    for o in objects:
        by_kind.setdefault(frozenset(o.obj), []).append(o)
    for group in by_kind.values():
        keys = group[0].id_keys
        distinct = {k: len({str(o.obj.get(k)) for o in group}) for k in keys}
        primary = max(keys, key=lambda k: (distinct[k], -keys.index(k)))
        for o in group:
            o.primary = primary if primary in o.id_keys else o.id_keys[0]
    return [
        Record(
            pos=o.pos,
            kind=("obj", frozenset(o.obj)),
            ident=o.ident(),
            fields=_scalar_fields(o.obj),
            id_fields=frozenset(o.id_keys),
        )
        for o in objects
    ]


def _row_records(data: Any, pos: int, out: list[Record]) -> None:
    if not isinstance(data, (list, tuple)):
        return
    rows = [r for r in data[:500] if isinstance(r, tuple) and len(r) >= 2]
    for row in rows:
        kind = ("row", len(row), tuple(type(v).__name__ for v in row))
        out.append(Record(pos=pos, kind=kind, ident=None, fields=dict(enumerate(row))))


def pair_results(steps: list[Step]) -> dict[int, int]:
    """Result position -> the position of the call that produced it: the first
    open call of the same tool, else the call just before. A statement closes
    the turn's open calls (parallel calls come back in any order)."""
    open_calls: list[int] = []
    out: dict[int, int] = {}
    for pos, s in enumerate(steps):
        if is_call(s):
            open_calls.append(pos)
        elif is_result(s):
            match = next((c for c in open_calls if (steps[c].tool or "") == (s.tool or "")), None)
            if match is None and open_calls and open_calls[-1] == pos - 1:
                match = open_calls[-1]
            if match is not None:
                out[pos] = match
                open_calls.remove(match)
        elif is_statement(s):
            open_calls.clear()
    return out


class Run:
    """A run's steps renumbered 0..n-1 with what the generators need, computed once."""

    def __init__(self, traj: Trajectory) -> None:
        self.traj = traj
        self.steps = [replace(s, index=i) for i, s in enumerate(traj.steps)]
        self.base = units(f"{traj.goal}\n{context_text(traj.context)}")
        self.step_units = [units(step_words(s)) for s in self.steps]
        self.pairs = pair_results(self.steps)
        self.readings: dict[int, Reading] = {}
        for r, s in enumerate(self.steps):
            if is_result(s):
                call = self.pairs.get(r)
                self.readings[r] = read_result(s.text, s.meta, self.steps[call].args if call is not None else None,
                                               self.steps[call].tool if call is not None else None)
        self._records: list[Record] | None = None
        self._prefix: list[set[str]] | None = None

    def evidence_before(self, pos: int, skip: Iterable[int] = ()) -> set[str]:
        skipped = set(skip)
        if not skipped:
            if self._prefix is None:
                acc = set(self.base)
                self._prefix = [acc]
                for u in self.step_units:
                    acc = acc | u
                    self._prefix.append(acc)
            return self._prefix[pos]
        out = set(self.base)
        for p in range(pos):
            if p not in skipped:
                out |= self.step_units[p]
        return out

    def new_units(self, r: int) -> set[str]:
        """Values that result ``r`` brought: in it and in nothing before it."""
        return self.step_units[r] - self.evidence_before(r)

    def next_agent(self, pos: int) -> int | None:
        return next((q for q in range(pos + 1, len(self.steps)) if is_agent(self.steps[q])), None)

    def statement_style(self) -> Step:
        """A template for an inserted statement in this run's own form."""
        if any(s.kind == "thought" for s in self.steps):
            return Step(index=0, kind="thought")
        reply = next((s for s in self.steps if is_reply(s)), None)
        if reply is not None:
            return Step(index=0, kind="action", tool=reply.tool, role=reply.role)
        return Step(index=0, kind="thought")

    @property
    def records(self) -> list[Record]:
        if self._records is None:
            objects: list[_RawObject] = []
            rows: list[Record] = []
            for r, reading in sorted(self.readings.items()):
                if reading.status != "ok" or reading.data is None:
                    continue
                if reading.form == "json":
                    _json_objects(reading.data, r, None, objects)
                elif reading.form == "literal":
                    _row_records(reading.data, r, rows)
            self._records = _json_records(objects) + rows
        return self._records


def renumber(steps: list[Step]) -> list[Step]:
    return [replace(s, index=i) for i, s in enumerate(steps)]


def with_statement_text(template: Step, text: str) -> Step:
    if template.kind == "action":
        return replace(template, text=text, args={"content": text})
    return replace(template, text=text)


# ---------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------
Built = tuple[list[Step], int, str]  # corrupted steps, expected break, what was done


@dataclass
class Candidate:
    # The latest original step the corruption touches or expects a break at;
    # an insertion after step p counts as p. Kept only if < the clean first break.
    site: int
    build: Callable[[random.Random], Built | None] = field(repr=False)


@dataclass
class Pools:
    """Per source: results the generators draw replacements from."""

    ok_results: list[str] = field(default_factory=list)
    ok_by_tool: dict[str, list[str]] = field(default_factory=dict)
    errors_by_tool: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # error or empty, not rejections
    names: list[str] = field(default_factory=list)
    # Every word the source writes in lower case (statements and results).
    lower_words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, runs: list[Run]) -> Pools:
        pools = cls()
        names: set[str] = set()
        lower_words: set[str] = set()
        for run in runs:
            for r, reading in run.readings.items():
                text = run.steps[r].text or ""
                if reading.status == "ok" and text.strip():
                    pools.ok_results.append(text)
                    pools.ok_by_tool.setdefault(run.steps[r].tool or "", []).append(text)
                if reading.status == "error" and not reading.rejected and text.strip():
                    pools.errors.append(text)
                    pools.errors_by_tool.setdefault(run.steps[r].tool or "", []).append(text)
                if reading.status in ("error", "empty") and not reading.rejected and text.strip():
                    pools.failures.append(text)
            for s in run.steps:
                text = (statement_text(s) if is_statement(s) else s.text or "")[:MAX_SCAN]
                lower_words.update(_LOWER_WORD_RE.findall(text))
                if is_statement(s):
                    names.update(m.group(1) for m in _MID_NAME_RE.finditer(text))
        # A name, not a word that opens a sentence or a common noun written
        # with a capital ("Observation", "Thus", "Update"): a word of the
        # source that is never written in lower case. A hallucinated name is
        # another name, not "Moving".
        pools.lower_words = frozenset(lower_words)
        pools.names = sorted(
            n for n in names if n.lower() not in _STOP and n.lower() not in lower_words and not _CODE_WORD_RE.match(n)
        )
        # Duplicates would weight the draw towards the commonest message.
        pools.errors = sorted(set(pools.errors))
        pools.failures = sorted(set(pools.failures))
        pools.errors_by_tool = {k: sorted(set(v)) for k, v in pools.errors_by_tool.items()}
        return pools


def _replaced_result(run: Run, r: int, text: str) -> list[Step]:
    steps = list(run.steps)
    steps[r] = replace(steps[r], text=text, meta=without_status(steps[r].meta))
    return steps


def _first_user_of(run: Run, r: int, vals: set[str]) -> tuple[int, set[str]] | None:
    """The first agent step after ``r`` that quotes one of ``vals`` (values no
    other result after ``r`` restates), with the values it quotes."""
    other: set[str] = set()
    for q in range(r + 1, len(run.steps)):
        s = run.steps[q]
        if s.kind == "observation":
            other |= run.step_units[q]
            continue
        if not is_agent(s):
            continue
        used = (units(statement_text(s) if is_statement(s) else step_words(s)) & vals) - other
        if used:
            return q, used
    return None


# -- the four original kinds -------------------------------------------------
def swap_observation(run: Run, pools: Pools) -> Iterator[Candidate]:
    for r, reading in run.readings.items():
        if reading.status != "ok" or r + 1 >= len(run.steps) or not is_statement(run.steps[r + 1]):
            continue
        used = run.new_units(r) & units(statement_text(run.steps[r + 1]))
        if not used:
            continue

        # Another result of the same tool when the source has one (a SQL
        # result for a SQL call), else any usable result of the source.
        donors = pools.ok_by_tool.get(run.steps[r].tool or "") or pools.ok_results

        def build(rng: random.Random, r: int = r, used: set[str] = used, donors: list[str] = donors) -> Built | None:
            for _ in range(20):
                donor = rng.choice(donors)
                if donor != run.steps[r].text and not (units(donor) & used):
                    return _replaced_result(run, r, donor), r + 1, f"result {r} swapped for another run's"
            return None

        if pools.ok_results:
            yield Candidate(r + 1, build)


def requery(run: Run, pools: Pools) -> Iterator[Candidate]:
    steps = run.steps
    for r, c in sorted(run.pairs.items()):
        if c != r - 1 or run.readings[r].status != "ok":
            continue
        for o in range(r + 1, len(steps)):
            s = steps[o]
            if is_user(s) or (is_write(s) and o != c):
                break
            if not is_result(s):
                continue

            def build(rng: random.Random, c: int = c, o: int = o) -> Built:
                out = steps[: o + 1] + [replace(steps[c]), replace(steps[c + 1])] + steps[o + 1 :]
                return renumber(out), o + 1, f"call {c} and its result re-inserted after {o}"

            yield Candidate(o, build)


def changed_claim(run: Run, pools: Pools) -> Iterator[Candidate]:
    steps = run.steps
    first_result = next((p for p, s in enumerate(steps) if is_result(s)), None)
    if first_result is None:
        return
    for pos in range(first_result + 1, len(steps)):
        s = steps[pos]
        if not is_statement(s):
            continue
        evidence = run.evidence_before(pos)
        text = statement_text(s)[:MAX_SCAN]
        for m in _SENTENCE_RE.finditer(text):
            sentence = m.group(0)
            if _PLANNING_RE.search(sentence) or _CODE_CHARS_RE.search(sentence) or _CODE_LINE_RE.match(sentence) \
                    or _ABSENCE_RE.search(sentence):
                continue
            for num in re.finditer(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w]|\.\d)", sentence):
                old = num.group(0)
                if old.replace(",", "").lower() in evidence or old.lower() in evidence:
                    yield Candidate(pos, _changed_number(run, pos, old, evidence, sentence))
            for name in _NAME_RE.finditer(sentence):
                old = name.group(0)
                if not sentence[: name.start()].strip() or old.lower() in _STOP or old.lower() not in evidence:
                    continue
                if old.lower() in pools.lower_words or _CODE_WORD_RE.match(old):
                    # "List", "State": a word of the source, not a name; "False",
                    # "IndexError", "SIM": a literal, a class, a code.
                    continue
                yield Candidate(pos, _changed_name(run, pos, old, evidence, pools, sentence))


def _in_sentence(step: Step, sentence: str, old: str, new: str) -> Step:
    """The step with ``old`` changed inside ``sentence`` (the claim chosen),
    not at its first occurrence in the step, which may sit in code or a quote."""
    changed = value_pattern(old).sub(lambda m: _styled(new, m.group(0)), sentence, count=1)
    if changed == sentence or sentence not in (step.text or ""):
        return replace_value(step, old, new)
    return _edited(step, lambda text: text.replace(sentence, changed, 1))


def _changed_number(
    run: Run, pos: int, old: str, evidence: set[str], sentence: str
) -> Callable[[random.Random], Built | None]:
    def build(rng: random.Random) -> Built | None:
        base = float(old.replace(",", ""))
        for _ in range(50):
            value = int(base) + rng.choice([1, 2, 3, 7, 11, 13]) * rng.choice([1, -1])
            new = str(value)
            if value >= 0 and new not in evidence and new != old:
                steps = list(run.steps)
                steps[pos] = _in_sentence(steps[pos], sentence, old, new)
                return steps, pos, f"{old!r} -> {new!r} in step {pos}"
        return None

    return build


def _changed_name(
    run: Run, pos: int, old: str, evidence: set[str], pools: Pools, sentence: str
) -> Callable[[random.Random], Built | None]:
    def build(rng: random.Random) -> Built | None:
        choices = [n for n in pools.names if n.lower() not in evidence and n != old]
        if not choices:
            return None
        new = rng.choice(choices)
        steps = list(run.steps)
        steps[pos] = _in_sentence(steps[pos], sentence, old, new)
        return steps, pos, f"{old!r} -> {new!r} in step {pos}"

    return build


def _what(call: Step) -> str:
    if isinstance(call.args, str) and call.args.strip() and len(call.args) <= SHORT_ARG_CHARS and "\n" not in call.args:
        return " ".join(call.args.split())
    return f"the {call.tool or 'tool'} call"


def false_success(run: Run, pools: Pools) -> Iterator[Candidate]:
    steps = run.steps
    failed = [r for r, rd in run.readings.items() if rd.status in ("error", "empty", "timeout") and r in run.pairs]
    turned = False
    if not failed:
        failed = [r for r in run.readings if r in run.pairs]
        turned = True
    template = run.statement_style()
    for f in failed:

        def build(rng: random.Random, f: int = f) -> Built:
            out = list(steps)
            note = ""
            if turned:
                msg = rng.choice(pools.failures or list(GENERIC_FAILURES))
                out[f] = replace(out[f], text=msg, meta=without_status(out[f].meta))
                note = f"result {f} made a failure; "
            claim = rng.choice(SUCCESS_TEMPLATES).format(what=_what(steps[run.pairs[f]]))
            out = out[: f + 1] + [with_statement_text(template, claim)] + out[f + 1 :]
            return renumber(out), f + 1, note + f"success claim inserted after failed result {f}"

        yield Candidate(f, build)


# -- the six kinds for tool-calling, code and shell agents ------------------
def error_as_success(run: Run, pools: Pools) -> Iterator[Candidate]:
    for r, reading in run.readings.items():
        if reading.status != "ok" or r not in run.pairs:
            continue
        q = run.next_agent(r)
        if q is None or not is_statement(run.steps[q]):
            continue
        text = statement_text(run.steps[q])
        between = [p for p in range(r + 1, q) if is_result(run.steps[p])]
        other = set().union(*(run.step_units[p] for p in between)) if between else set()
        used = (run.new_units(r) & units(text)) - other
        claims = bool(_SUCCESS_RE.search(text) or _DONE_RE.search(text)) and not _PROBLEM_RE.search(text)
        claims = claims and not between
        if not (used or claims):
            continue
        tool = run.steps[r].tool or ""
        pool = pools.errors_by_tool.get(tool) or pools.errors
        if not pool:
            continue
        call_args = run.steps[run.pairs[r]].args

        def build(
            rng: random.Random, r: int = r, q: int = q, pool: list[str] = pool, args: Any = call_args
        ) -> Built | None:
            choices = [e for e in pool if e != run.steps[r].text and read_result(e, None, args).status == "error"]
            if not choices:
                return None
            return _replaced_result(run, r, rng.choice(choices)), q, f"result {r} replaced by an error"

        yield Candidate(q, build)


def empty_of(reading: Reading) -> list[str]:
    """Empty results of the same shape as ``reading``."""
    data = reading.data
    if reading.form == "json":
        if isinstance(data, list):
            return ["[]"]
        if isinstance(data, dict):
            return ["{}", "null"]
        return ["null"]
    if reading.form == "literal":
        return ["()"] if isinstance(data, tuple) else ["[]"]
    return [""]


def empty_as_data(run: Run, pools: Pools) -> Iterator[Candidate]:
    for r, reading in run.readings.items():
        if reading.status != "ok" or reading.form == "empty" or reading.silent or r not in run.pairs:
            continue
        args = run.steps[run.pairs[r]].args
        shapes = [e for e in empty_of(reading) if read_result(e, None, args).status == "empty"]
        if not shapes:
            continue
        hit = _first_user_of(run, r, run.new_units(r))
        if hit is None or not is_statement(run.steps[hit[0]]):
            continue
        q = hit[0]

        def build(rng: random.Random, r: int = r, q: int = q, shapes: list[str] = shapes) -> Built:
            empty = rng.choice(shapes)
            return _replaced_result(run, r, empty), q, f"result {r} replaced by {empty!r}"

        yield Candidate(q, build)


def _quoted(record: Record, text: str, skip: Iterable[Any] = ()) -> dict[Any, tuple[str, int]]:
    """Fields of ``record`` whose value the text quotes: field -> (form, offset)."""
    out: dict[Any, tuple[str, int]] = {}
    skipped = set(skip)
    for f, v in record.fields.items():
        if f in skipped:
            continue
        for form in value_forms(v):
            if not _distinctive(form):
                continue
            m = find_value(form, text)
            if m:
                out[f] = (m.group(0), m.start())
                break
    return out


def wrong_record(run: Run, pools: Pools) -> Iterator[Candidate]:
    records = run.records
    if len(records) < 2:
        return
    by_kind: dict[tuple[Any, ...], list[Record]] = {}
    for rec in records:
        by_kind.setdefault(rec.kind, []).append(rec)
    for pos, s in enumerate(run.steps):
        if not is_statement(s):
            continue
        text = statement_text(s)[:MAX_SCAN]
        for _kind, recs in by_kind.items():
            seen = [rec for rec in recs if rec.pos < pos]
            if len(seen) < 2:
                continue
            for rec in seen:
                quoted = _quoted(rec, text)
                if len(quoted) < 2:
                    continue  # a value and the anchor that says which record
                for f, (form, at) in quoted.items():
                    if f in rec.id_fields:
                        continue
                    for other in seen:
                        if other is rec or other.ident == rec.ident and rec.ident is not None:
                            continue
                        if f not in other.fields:
                            continue
                        new = _format_like(other.fields[f], form, rec.fields[f])
                        if new is None or not _distinctive(new) or find_value(new, text):
                            continue
                        if value_forms(other.fields[f]) == value_forms(rec.fields[f]):
                            continue
                        if any(str(v) == form for v in other.fields.values()):
                            continue  # the quoted value is also the other record's: not telling
                        anchors = [
                            (g, a)
                            for g, (gf, a) in quoted.items()
                            if g != f
                            and abs(a - at) <= ANCHOR_WINDOW
                            and not any(str(v).lower() == gf.lower() for v in other.fields.values())
                        ]
                        if not anchors:
                            continue

                        def build(rng: random.Random, pos: int = pos, form: str = form, new: str = new) -> Built:
                            steps = list(run.steps)
                            steps[pos] = replace_value(steps[pos], form, new)
                            return steps, pos, f"{form!r} -> {new!r} (another record's) in step {pos}"

                        yield Candidate(pos, build)


def stale_updates(run: Run) -> list[tuple[int, int, str, Any, Any, tuple[Any, ...]]]:
    """(first seen, seen again, field, old, new, identity) for records seen twice with a field changed."""
    last: dict[tuple[Any, ...], Record] = {}
    out = []
    for rec in sorted((r for r in run.records if r.ident is not None), key=lambda r: r.pos):
        key = (rec.kind, rec.ident)
        prev = last.get(key)
        if prev is None:
            # The same id may come back with more or fewer fields (a write's echo).
            prev = next((p for k, p in last.items() if k[1] == rec.ident), None)
        if prev is not None and prev.pos != rec.pos:
            for f, new in rec.fields.items():
                old = prev.fields.get(f)
                if f in rec.id_fields or old is None or old == new:
                    continue
                if value_forms(old) and value_forms(new):
                    out.append((prev.pos, rec.pos, f, old, new, rec.ident))
        last[key] = rec
    return out


def stale_after_update(run: Run, pools: Pools) -> Iterator[Candidate]:
    updates = stale_updates(run)
    for _first, second, f, old, new, ident in updates:
        later = [u[1] for u in updates if u[5] == ident and u[2] == f and u[1] > second]
        until = min(later) if later else len(run.steps)
        for pos in range(second + 1, until):
            s = run.steps[pos]
            if not is_statement(s):
                continue
            text = statement_text(s)
            new_forms = [x for x in value_forms(new) if _distinctive(x) and find_value(x, text)]
            if not new_forms or any(find_value(x, text) for x in value_forms(old)):
                continue
            form = find_value(new_forms[0], text).group(0)  # type: ignore[union-attr]
            old_text = _format_like(old, form, new)
            if old_text is None:
                continue

            def build(rng: random.Random, pos: int = pos, form: str = form, old_text: str = old_text) -> Built:
                steps = list(run.steps)
                steps[pos] = replace_value(steps[pos], form, old_text)
                return steps, pos, f"{form!r} -> stale {old_text!r} in step {pos}"

            yield Candidate(pos, build)


def reports_done(verb: str, text: str) -> bool:
    """A sentence of ``text`` says the ``verb`` was done: it names the verb
    (any inflection) in the past, next to a completion marker, or as "now I
    <verb>", and it does not plan or ask."""
    stem = verb[:-1] if len(verb) > 4 and verb[-1] in "ey" else verb
    forms = _IRREGULAR_PAST.get(verb, ())
    for m in _SENTENCE_RE.finditer(text[:MAX_SCAN]):
        sentence = m.group(0)
        if _PLANNING_RE.search(sentence):
            continue
        words = re.findall(r"[a-z]+", sentence.lower())
        named = [w for w in words if w.startswith(stem) or w in forms]
        if not named:
            continue
        past = any(w.endswith(("ed", "en")) or w in forms for w in named)
        if past or _DONE_RE.search(sentence) or _NOW_I_RE.search(sentence):
            return True
    return False


def phantom_call(run: Run, pools: Pools) -> Iterator[Candidate]:
    steps = run.steps
    for r, c in run.pairs.items():
        if run.readings[r].status != "ok":
            continue
        target: int | None = None
        why = ""
        # A read whose values the next statement quotes.
        vals = run.step_units[r] - run.evidence_before(r, skip=(c,))
        hit = _first_user_of(run, r, vals)
        if hit is not None and is_statement(steps[hit[0]]):
            q = hit[0]
            rest = run.evidence_before(q, skip=(c, r))
            if hit[1] - rest:
                target, why = q, "read"
        # A write that the next statement reports as done.
        if target is None and is_write(steps[c]):
            q = run.next_agent(r)
            if (
                q is not None
                and is_statement(steps[q])
                and reports_done(tool_verb(steps[c].tool), statement_text(steps[q]))
            ):
                target, why = q, "write"
        if target is None:
            continue

        def build(rng: random.Random, c: int = c, r: int = r, q: int = target, why: str = why) -> Built:
            out = [s for p, s in enumerate(steps) if p not in (c, r)]
            return renumber(out), q - 2, f"{why} call {c} and its result {r} removed"

        yield Candidate(target, build)


def _norm_submission(step: Step) -> str:
    return " ".join(args_text(step.args).split()) or " ".join((step.text or "").split())


def rejected_submissions(run: Run) -> list[tuple[int, int, bool]]:
    """(rejected call, next submission with the same tool, identical already)."""
    out = []
    for r, reading in run.readings.items():
        if not reading.rejected or r not in run.pairs:
            continue
        c = run.pairs[r]
        tool = run.steps[c].tool
        n = next(
            (
                p
                for p in range(r + 1, len(run.steps))
                if run.steps[p].kind in ("action", "final")
                and role_of(run.steps[p]) == "assistant"
                and run.steps[p].tool == tool
            ),
            None,
        )
        if n is not None:
            out.append((c, n, _norm_submission(run.steps[c]) == _norm_submission(run.steps[n])))
    return out


def rejected_resubmission(run: Run, pools: Pools) -> Iterator[Candidate]:
    for c, n, identical in rejected_submissions(run):
        if identical:
            continue  # already a resubmission: counted as a natural case

        def build(rng: random.Random, c: int = c, n: int = n) -> Built:
            steps = list(run.steps)
            src = steps[c]
            steps[n] = replace(steps[n], text=src.text, args=src.args)
            return steps, n, f"submission {n} made identical to rejected {c}"

        yield Candidate(n, build)


GENERATORS: dict[str, Callable[[Run, Pools], Iterable[Candidate]]] = {
    "swap_observation": swap_observation,
    "requery": requery,
    "changed_claim": changed_claim,
    "false_success": false_success,
    "error_as_success": error_as_success,
    "empty_as_data": empty_as_data,
    "wrong_record": wrong_record,
    "stale_after_update": stale_after_update,
    "phantom_call": phantom_call,
    "rejected_resubmission": rejected_resubmission,
}
assert tuple(GENERATORS) == KINDS


def rng_for(seed: int, source: str, run_id: str, kind: str) -> random.Random:
    """One generator per (run, kind): adding a kind does not move the others."""
    return random.Random(f"{seed}|{source}|{run_id}|{kind}")


def corrupt(run: Run, kind: str, pools: Pools, end: int, rng: random.Random) -> tuple[Built | None, bool]:
    """(a corrupted copy before step ``end``, or None; whether the kind fits the run anywhere)."""
    cands = list(GENERATORS[kind](run, pools))
    eligible = bool(cands)
    before = [c for c in cands if c.site < end]
    rng.shuffle(before)
    for cand in before[:10]:
        built = cand.build(rng)
        if built is not None:
            return built, eligible
    return None, eligible
