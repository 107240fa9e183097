"""How code and shell agents lose grounding on their own runs, as text tests:

1. an outcome needs a run: "it works" after a plan, with no call made since;
2. output needs output: after a run that printed nothing, only what silently
   passing asserts back ("the tests pass") is grounded, not "it printed …";
3. names in a database or a file system are read, not recalled: a table,
   column or file named as such must appear, spelt as it is, in the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tracing.core.anchoring.common import LIST_MARK_RE, WONDER_RE
from tracing.core.anchoring.phrases import (
    CODE_SUCCESS_RE,
    DATA_CLAIM_RE,
    EMPTY_CONTENT_RE,
    EXECUTED_RE,
    NEGATED_RE,
    PLAN_RE,
)
from tracing.core.steps import Step, is_reply
from tracing.core.tokenizer import split_sentences

# "I get a list of earnings", "I got 3 rows": the agent reading out a result.
GOT_RE = re.compile(
    r"\b(?:i|we) (?:now |finally |still |also )?(?:get|got|obtain(?:ed)?|receive[ds]?|can see|see) "
    r"(?:a|an|the|all|some|several|back|\d+|one|two|three)\b",
    re.IGNORECASE,
)

# What a run displayed: its output, or the run, showing / printing / listing.
DISPLAY_RE = re.compile(
    r"\b(?:output|outputs|results?|code(?: block)?|query|command|script|program|cell|execution|run|it|this|that)\b"
    r"[^.\n]{0,40}?\b(?:shows|showed|prints|printed|displays|displayed|lists|listed|outputs|outputted)\b",
    re.IGNORECASE,
)

# How a run went, in more words than CODE_SUCCESS_RE has: "still returns the
# expected result", "the output is 18", "the test case passes now",
# "correctly prints the negative numbers", "ran successfully".
OUTCOME_RE = re.compile(
    r"\b(?:returns?|returned|returning|gives?|gave|produces?|produced|prints?|printed|printing|outputs?|generat\w*)"
    r" (?:the |an? |all )?(?:expected|correct|right)\b"
    r"|\b(?:the |my )?(?:output|result)s? (?:is|was|are|were|looks?|matches|match|equals?)\b"
    r"|\btests?(?: cases?)? (?:now )?(?:pass|passes|passed)\b|\bpass(?:es|ed)? (?:the |all |both )?(?:\w+ )?"
    r"(?:tests?|test cases?|assertions?|examples?)\b"
    r"|\bcorrectly (?:prints?|outputs?|identifies|matches|works|detects|counts|converts|checks|removes|extracts)\b"
    r"|\bsuccessfully\b",
    re.IGNORECASE,
)

# A forecast or a hope is no report of a run ("this should work", "I hope it passes").
FORECAST_RE = re.compile(
    r"\b(?:will|would|should|shall|hope|hopefully|confident|expect to|ought|must|going to|let me know)\b"
    r"|\b(?:i|we) (?:can|could|may|might)\b(?! see)",
    re.IGNORECASE,
)

# A success the display reports, not content: "the observation shows that the
# code executed successfully without any errors" after silent asserting code.
_NO_ERROR_RE = re.compile(r"\b(?:without|with no|no)\s+(?:any\s+)?(?:errors?|exceptions?|failures?|issues?)\b", re.I)

_PRINTED_RE = re.compile(r"\b(?:printed|displayed|listed|outputted)\b", re.IGNORECASE)
_ASSERT_RE = re.compile(r"^\s*assert\b", re.MULTILINE)
_PRINT_RE = re.compile(r"\bprint\s*\(|\bconsole\.log\s*\(|\bSystem\.out\.print|\becho\b|\bprintf\b")

def _plain(sentence: str) -> str:
    return LIST_MARK_RE.sub("", sentence.strip())


def reports_outcome(sentence: str) -> bool:
    """The sentence reports how a run went: it works, tests pass, the query
    returned / printed something, "I get a list of ..."."""
    head = _plain(sentence)
    if not head or head.endswith(("?", "？")) or PLAN_RE.match(head) or FORECAST_RE.search(head):
        return False
    if NEGATED_RE.search(head.replace("without any errors", "").replace("without errors", "")):
        return False
    return bool(
        CODE_SUCCESS_RE.search(head) or EXECUTED_RE.search(head) or GOT_RE.search(head) or OUTCOME_RE.search(head)
        or (DATA_CLAIM_RE.search(head) and not EMPTY_CONTENT_RE.search(head))
    )


def plan_sentence(text: str) -> str | None:
    """The first sentence of a statement that says what the agent does next."""
    for sentence in split_sentences(text):
        head = _plain(sentence)
        if head and PLAN_RE.match(head) and not head.endswith(("?", "？")):
            return head
    return None


def code_checks(code: str) -> tuple[bool, bool]:
    """(asserts, prints) of a program or command the agent ran."""
    head = code[:20_000]
    return bool(_ASSERT_RE.search(head)), bool(_PRINT_RE.search(head))


def claims_output(sentence: str, *, asserts: bool, prints: bool) -> bool:
    """After a run that printed nothing: does the sentence claim it printed
    something? ``asserts``/``prints``: what the program run did."""
    head = _plain(sentence)
    if not head or head.endswith(("?", "？")) or PLAN_RE.match(head) or FORECAST_RE.search(head):
        return False
    if NEGATED_RE.search(head) or EMPTY_CONTENT_RE.search(head):
        return False  # "no output", "it printed nothing", "an empty list"
    got = GOT_RE.search(head) is not None
    shown = DISPLAY_RE.search(head) is not None
    if prints and not asserts:
        # It was meant to print and printed nothing: no outcome is backed.
        return bool(got or shown or DATA_CLAIM_RE.search(head) or CODE_SUCCESS_RE.search(head)
                    or OUTCOME_RE.search(head) and "output" in head.lower())
    if asserts:
        # Its asserts passed silently: "it returns the expected result" and
        # "the observation shows it executed without errors" read out a pass;
        # only what it printed, displayed or listed, or "I get ...", is output.
        passed = CODE_SUCCESS_RE.search(head) or EXECUTED_RE.search(head) or _NO_ERROR_RE.search(head)
        return got or (shown and not passed) or _PRINTED_RE.search(head) is not None
    return got or shown or DATA_CLAIM_RE.search(head) is not None


# A table, column or file named as such: "the `airports` table", "the
# singer table", "column `Name`", "the flag.txt file".
_SCHEMA_RE = re.compile(
    r"\b(?i:the|a|an|this|that)\s+`?(?P<a>[a-z][a-z0-9_]*)`?\s+(?:table|column|field)s?\b"
    r"|\b(?i:the|a|an|this|that)\s+`?(?P<f>[\w./-]*[A-Za-z0-9]\.[A-Za-z0-9]{1,5}|[\w.-]*/[\w./-]*)`?\s+"
    r"(?:file|directory|folder)s?\b"
    r"|\b(?:table|column|field|file|directory|folder)\s+`(?P<b>[^`\s]{2,80})`"
    r"|`(?P<c>[^`\s]{2,80})`\s+(?:table|column|field|file|directory|folder)s?\b"
)
# Determiners and common words the first form may catch ("the same table").
_NOT_NAMES = frozenset(
    ["same", "following", "new", "given", "other", "first", "second", "last", "correct", "right", "wrong", "main", "whole", "entire", "original", "resulting", "result", "results", "output", "input", "current", "specified", "relevant", "appropriate", "corresponding", "required", "necessary", "desired", "target", "previous", "next", "final", "temporary", "empty", "existing", "only", "two", "three", "both", "each", "available", "above", "below", "such", "full", "specific", "particular", "single", "separate", "additional", "extra", "another", "different", "similar", "actual", "real", "proper", "sql", "mysql", "database"]
)


def schema_names(sentence: str) -> list[str]:
    """Table, column and file names an asserting sentence names as such (plans,
    questions and "if / whether" sentences name none)."""
    head = _plain(sentence)
    if not head or head.endswith(("?", "？")) or PLAN_RE.match(head) or WONDER_RE.search(head):
        return []
    out = []
    for m in _SCHEMA_RE.finditer(head):
        name = next(g for g in m.groups() if g).strip("`'\"/.,")
        if name and name.lower() not in _NOT_NAMES and not name.isdigit() and name not in out:
            out.append(name)
    return out


def name_seen(name: str, seen: str) -> bool:
    """The name, spelt as it is (case aside), as a whole word of ``seen``."""
    low = name.lower().strip("/")
    return bool(low) and re.search(rf"(?<![\w]){re.escape(low)}(?![\w])", seen) is not None


def next_try(steps: Sequence[Step], index: int) -> tuple[Step, Step] | None:
    """The agent's next call after step ``index`` and its result, when no other
    statement comes between."""
    pos = next((p for p, s in enumerate(steps) if s.index == index), None)
    if pos is None:
        return None
    call: Step | None = None
    for step in steps[pos + 1:]:
        if call is None:
            if step.kind == "action" and not is_reply(step):
                call = step
            elif step.kind != "thought":
                return None
        elif step.kind == "observation":
            return call, step
    return None
