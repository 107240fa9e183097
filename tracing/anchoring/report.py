"""Where did the reasoning stop tracking the observations? (DESIGN.md section 1)

"The thought is useful but not trustworthy": what can be checked is whether
what the agent asserts is backed by what it was given and got, and whether the
step after a result used it. One pass over the run, judging each step by its
role (``tracing.steps.role_of``): tool results and user turns are evidence;
thoughts, replies to the user and final answers are claims.

A claim is something checkable: a number, an identifier, a date, a name the
answer depends on, a status, an action reported as done. Evidence is the task,
the context, every observation and the agent's own earlier actions
(``tracing.anchoring.evidence``). Break patterns, each a ``Break`` whose
reason names both steps in plain words:

  ``rejected_resubmission`` a solution submitted again unchanged after the
                         environment rejected it;
  ``phantom_call``       an action reported as done ("I've cancelled your
                         order") with no call made that could have done it;
  ``stale_value``        a record's value from before a later result showed
                         it changed;
  ``wrong_record``       a value of one record attributed to another;
  ``unconfirmed_success`` success, or data, claimed right after an error, an
                         empty result, "Nothing happens.", a rejected answer;
  ``unsupported_claim``  a number / id / date / name asserted that no evidence
                         contains and no arithmetic over it gives;
  ``unobserved_argument`` a call whose argument carries an identifier (a record
                         id, an object instance) that no evidence holds
                         (``tracing.anchoring.arguments``);
  ``wrong_relation``     the answer taken from the sentence of another relation;
  ``requery``            an action re-issued whose answer the agent already had
                         (or that just failed the same way), with nothing in
                         between that could have changed the world;
  ``ignored_observation`` an informative, on-task search result of which the
                         next turn uses nothing and which it does not
                         acknowledge.

Code is not a claim: a program the agent wrote (an action's argument, a code
answer) is judged by what running it returned, not word by word.

Cost: every step is scanned once (capped), support sets grow by union, and the
re-query check looks back over at most REQUERY_WINDOW actions of one tool, so a
run costs O(total capped text + steps * REQUERY_WINDOW).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracing.anchoring.arguments import ArgumentCheck
from tracing.anchoring.conclusion import against
from tracing.anchoring.evidence import (  # noqa: F401 -- thresholds re-exported for tests and docs
    CONVERSION_NUMBERS,
    ENTITY_SUPPORT_MIN,
    NUMBER_WORDS,
    STEM_CHARS,
    Evidence,
    dates_in,
    defined_names,
)
from tracing.anchoring.execution import (
    claims_output,
    code_checks,
    name_seen,
    next_try,
    plan_sentence,
    reports_outcome,
    schema_names,
)
from tracing.anchoring.phrases import (
    ABSENCE_RE,
    ACK_FAILURE_RE,
    ASSERTION_RE,
    ATTRIBUTION_RE,
    CALLED_WITH_RE,
    CODE_SUCCESS_RE,
    COMPLETION_RE,
    DATA_CLAIM_RE,
    DENIED_FAILURE_RE,
    EMPTY_CONTENT_RE,
    FAILURE_RE,
    FAKE_OBSERVATION_RE,
    FLAG_RE,
    FOUND_RE,
    HEDGE_RE,
    LOOKED_UP_RE,
    LOOKUP_PLAN_RE,
    NEGATED_RE,
    NOW_ACTION_RE,
    PAST_CALL_RE,
    PLAN_RE,
    PRESENT_DATA_RE,
    PROTOCOL_FINAL_RE,
    SUCCESS_RE,
    verb_stem,
)
from tracing.anchoring.records import RecordIndex
from tracing.anchoring.relation import wrong_relation
from tracing.anchoring.salience import FILLER_WORDS, Salient, extract, is_cjk, normalize_number, split_sentences
from tracing.anchoring.slips import caught
from tracing.anchoring.strength import STRONG, WEAK, evidence_of, is_shown
from tracing.normalize import EN_STOP_WORDS, action_key, call_signature, jaccard, tokens
from tracing.results import Reading, is_command, is_move_call, is_read_call, move_place, read_result
from tracing.steps import REPLY_TOOLS, Step, context_text, is_reply, role_of

# --- thresholds -------------------------------------------------------------

# A final answer is grounded when at least this share of its content words is
# observed; answers are short, so one invented word in two ("political
# science" against pages that only say "political") is already a break.
FINAL_SUPPORT_MIN = 0.6

# Numbers up to this are counts, ordinals and list positions ("the 3 results",
# "step 2"), derivable by counting what was seen: not claims on their own.
SMALL_NUMBER = 12

# Two actions of the same tool are "the same request" from this Jaccard on
# normalised arguments (word order, case and stop words already ignored).
REQUERY_MIN_JACCARD = 0.9

# A re-issued request "got the same answer" when the two observations' salient
# units overlap this much: near-identical. A paginated Lookup, or a room
# revisited after taking something from it, differs by at least one unit.
SAME_RESULT_MIN_JACCARD = 0.95

# Look back this many actions of one tool for a re-query: bounds the per-step
# cost, and an answer obtained 50 calls ago may legitimately be re-checked.
REQUERY_WINDOW = 50

# An observation is informative when it brings at least this many new strong
# units (numbers, names, ids, CJK bigrams) not already in the context: "The
# drawer 1 is closed." brings none, a biography brings dozens.
MIN_INFORMATIVE_NEW_UNITS = 3

# The next turn "ignored" an observation when it takes up at most this many of
# the observation's units (0 = none at all: one shared name already shows the
# turn read it).
IGNORED_MAX_UPTAKE = 0

# ...and only when that turn itself says something substantive (this many
# salient units): a bare "OK." or an empty thought is not a decision.
IGNORED_MIN_TURN_UNITS = 3

# Ignored results are judged after search-like calls only: an argument of at
# most this many tokens. A program's output need not echo the program.
IGNORED_MAX_QUERY_TOKENS = 12

# A failure message is short or says so at its start; past this many
# characters "error" is more likely page content ("Type I error is ...").
FAILURE_PREFIX_CHARS = 80

# A final answer made only of capital letters is a label from a closed set
# (SUPPORTS / NOT ENOUGH INFO), not a claim about the world.
LABEL_RE = re.compile(r"^[A-Z][A-Z _-]*$")

FINISH_TOOLS = frozenset(["finish", "final_answer", "answer", "final", "submit", "solution"])

AGENT_KINDS = ("thought", "action", "final")

# Weights of unit kinds in the anchoring score: a shared number or name says
# more about use of the observation than a shared common word.
UNIT_WEIGHTS = {"n": 2.0, "i": 2.0, "e": 2.0, "c": 1.0, "t": 1.0}

PATTERNS = (
    "rejected_resubmission",
    "phantom_call",
    "stale_value",
    "wrong_record",
    "unconfirmed_success",
    "unsupported_claim",
    "unobserved_argument",
    "wrong_relation",
    "requery",
    "ignored_observation",
    "against_conclusion",
)
# Findings: shown, never the anchor break. "answered_from_memory": a final
# answer of names that no observation contains but that the agent's own
# reasoning in the final turn states: right or wrong, it came from the model's
# knowledge, not from the trace (a correct one is common in strong models).
# "untested_claim": "the code works on the examples" before anything was run.
# "slip": a lapse the next result refuted and the agent let go (slips.py).
FINDINGS = ("answered_from_memory", "untested_claim", "slip")
# When two patterns hit the same step, the more specific reason is reported.
_PRIORITY = {name: pos for pos, name in enumerate(PATTERNS)}

# Lines that make a text a program rather than prose.
_CODE_LINE_RE = re.compile(
    r"^\s*(?:def |class |import |from \w+ import |return\b|for .+:|while .+:|if .+:|elif |else:|try:|except\b|"
    r"print\(|assert |\w+\s*=[^=]|\w+\(.*\)\s*$|[{}]\s*$|#include|function |const |let |var |SELECT |INSERT |UPDATE )",
    re.IGNORECASE,
)


@dataclass
class Break:
    step: int
    pattern: str  # one of PATTERNS
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)
    # tracing.anchoring.strength: a strong break can be the run's shown break,
    # a weak one is a finding worth a look.
    strength: str = STRONG
    evidence_kind: str = ""
    confidence: float = 0.0


@dataclass
class AnchorReport:
    # The shown break: the first strong one (tracing.anchoring.strength).
    first_break: int | None
    reason: str
    evidence: dict[str, Any]
    scores: dict[int, float]
    # Every break, strong and weak, in step order; each says its strength.
    breaks: list[Break]
    # Worth a look, not a break: an answer the agent reasoned its way to from
    # its own knowledge, which no observation backs (FINDINGS).
    findings: list[Break] = field(default_factory=list)

    @property
    def weak(self) -> list[Break]:
        return [b for b in self.breaks if b.strength != STRONG]

    @property
    def first_finding(self) -> int | None:
        """The first weak break's step: where to look when nothing is shown."""
        weak = self.weak
        return weak[0].step if weak else None

    def to_dict(self) -> dict[str, Any]:
        # Weak breaks are listed with the findings, first by step, so every
        # page that shows findings shows them apart from the break.
        listed = sorted([*self.findings, *self.weak], key=lambda f: f.step)
        return {
            "first_anchor_break": self.first_break,
            "first_finding": self.first_finding,
            "anchor_reason": self.reason,
            "anchor_evidence": self.evidence,
            "anchor_findings": [
                {"step": f.step, "pattern": f.pattern, "reason": f.reason, **f.evidence,
                 **({"strength": f.strength, "evidence_kind": f.evidence_kind, "confidence": f.confidence}
                    if f.pattern in PATTERNS else {})}
                for f in listed
            ],
        }


class Similarity(Protocol):
    """A pluggable text similarity (the benchmark's MiniLM experiment).

    The product uses the lexical scorer only: the semantic one was measured and
    lost (bench/README-anchoring.md). The hook stays so the comparison can be
    rerun without forking this module.
    """

    used_min: float  # a turn "used" the observation from this similarity on

    def prime(self, texts: list[str]) -> None: ...

    def similarity(self, a: str, b: str) -> float: ...


_NONE_COUNT_RE = re.compile(r"\(\s*0\s*\)")


def _quote(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return f"“{text[:limit]}…”" if len(text) > limit else f"“{text}”"


def _args_text(args: Any) -> str:
    if isinstance(args, str):
        return args
    if isinstance(args, dict):
        for key in ("content", "message", "text", "answer", "response"):
            if isinstance(args.get(key), str):
                return args[key]
        return " ".join(str(v) for v in args.values() if isinstance(v, (str, int, float)))
    return ""


def _step_text(step: Step) -> str:
    """What the agent wrote: thought text, a reply's message, or the action's arguments."""
    if step.kind == "thought":
        return step.text or ""
    text = _args_text(step.args)
    return text if text.strip() else (step.text or "")


def _no_arguments(step: Step) -> bool:
    """An action that passes nothing: its tool's name alone, or empty arguments."""
    args = step.args
    if isinstance(args, dict | list):
        return not any(v not in (None, "", [], {}) for v in (args.values() if isinstance(args, dict) else args))
    text = (args if isinstance(args, str) else "") or ""
    if not text.strip():
        text = step.text or ""
    return not text.strip() or " ".join(text.lower().split()) == (step.tool or "").strip().lower()


def _is_final(step: Step) -> bool:
    return step.kind == "final" or (step.kind == "action" and (step.tool or "").strip().lower() in FINISH_TOOLS)


def looks_like_code(text: str) -> bool:
    """A program (or a query) rather than prose: most of its lines read as code."""
    lines = [ln for ln in text[:5000].splitlines() if ln.strip()]
    if not lines:
        return False
    if len(lines) == 1:
        line = lines[0]
        return bool(re.match(r"^\s*(?:def |class |import |lambda\b|SELECT\b|return\b)", line, re.I)) or (
            line.count("(") >= 2 and line.count(")") >= 2 and " = " in line
        )
    code = sum(1 for ln in lines if _CODE_LINE_RE.match(ln) or ln.startswith(("    ", "\t")))
    return code / len(lines) >= 0.5


def is_failure(step: Step, action_args: Any = None) -> bool:
    """An observation that reports a failed call: its status read from the
    result (``tracing.results``), a rejected answer, or a generic message."""
    return _failed(step, read_result(step.text, step.meta, action_args))


def _failed(step: Step, reading: Reading) -> bool:
    if reading.rejected or reading.status in ("error", "empty", "timeout"):
        return not reading.silent
    if reading.form != "text":
        return False
    text = (step.text or "").strip()
    return bool(FAILURE_RE.search(text[:FAILURE_PREFIX_CHARS].lower()))


def lexical_score(step_sal: Salient, obs_sal: Salient, older_units: set[str]) -> float:
    """Share (by weight) of the step's context-derived units that come from the latest observation."""
    units = step_sal.units
    obs_units = obs_sal.units
    from_obs = sum(UNIT_WEIGHTS[u[0]] for u in units if u in obs_units)
    from_older = sum(UNIT_WEIGHTS[u[0]] for u in units if u not in obs_units and u in older_units)
    if from_obs + from_older == 0:
        return 0.0
    return round(from_obs / (from_obs + from_older), 3)


def _unsupported_units(
    sal: Salient, evidence: Evidence, text: str = "", statement_numbers: set[str] | None = None
) -> list[str]:
    """Numbers, ids, dates, names and CJK names in ``sal`` that the evidence lacks.
    ``statement_numbers``: the numbers of the whole thought or reply, which
    may total or subtract one another."""
    missing: list[str] = []
    id_numbers = {i.rsplit(" ", 1)[-1] for i in sal.ids if " " in i}
    for number in sorted(sal.numbers):
        if number in id_numbers or _small(number):
            continue
        if not evidence.number_supported(number, statement_numbers or sal.numbers):
            missing.append(number)
    defined = defined_names(text) if text else set()
    for ident in sorted(sal.ids):
        if ident in defined:
            continue  # the agent's own name for a value ("so arr_h is 11")
        if not evidence.id_supported(ident) or (ident in sal.instances and not evidence.instance_supported(ident)):
            missing.append(ident)
    if text and "-" in text:
        for key in sorted(dates_in(text)):
            if len(key) == 10 and not evidence.date_supported(key) and key not in missing:
                missing.append(key)
    for entity in sal.entities:
        if not evidence.entity_supported(entity):
            name = " ".join(entity)
            if name not in missing:
                missing.append(name)
    for piece in sal.cjk_pieces:
        if not evidence.cjk_supported(piece) and piece not in missing:
            missing.append(piece)
    return missing


def _small(number: str) -> bool:
    try:
        value = float(number)
    except ValueError:
        return False
    return value.is_integer() and 0 <= value <= SMALL_NUMBER


# Clause boundaries inside a sentence: a hedge or a plan in one clause ("...,
# so his family was probably architects") must not hide a claim in another.
_CLAUSE_RE = re.compile(
    r",\s*(?=(?:so|but|and|which|while|whereas|because|then)\b)|;\s*|\s+and\s+(?=\w+\s+(?:is|was|are|were|has|have|seems?)\b)"
    # "... has options 'grey' and seems good to buy": the hedge is its own clause.
    r"|\s+and\s+(?=(?:seems?|looks?|appears?)\b)|，|、"
)


# Sentences that instruct the user or give an example assert nothing about
# the world ("Swipe down to open Quick Settings", "an id like #W0000000").
INSTRUCTION_RE = re.compile(
    r"^(?:(?:on|in|from|at|for|if needed|then|next|first|now)\b[^,]{0,40},\s*)?"
    r"(?:please|kindly|make sure|ensure|try|tap|tapping|swipe|swiping|open|opening|go to|click|select|press|hold|use|"
    r"turn|toggle|restart|reboot|navigate|scroll|confirm|provide|share|reply|let me know|feel free|you can|you may|"
    r"you should|you'?ll need|you will need|you need|could you|can you|would you|do you|if you|once you|when you)\b",
    re.IGNORECASE,
)
EXAMPLE_RE = re.compile(r"\b(?:for example|for instance|e\.g\.|such as|should look like|in the format|format like)\b",
                        re.IGNORECASE)


_LIST_MARK_RE = re.compile(r"^(?:\d{1,2}[.)]|[-•*–·])\s*")

# The user reporting what they did: "I went ahead and reset the APN settings",
# "I've turned off Airplane Mode", "I just enabled roaming".
USER_DID_RE = re.compile(
    r"\bi(?:'ve| have)?(?:\s+(?:just|already|then|now|also|went ahead and|tried|did))*\s+"
    r"(?P<verb>turned (?:on|off)|reset|set|put|\w{3,}ed)\b",
    re.IGNORECASE,
)

_FIRST_PERSON_RE = re.compile(r"\bI\b")
_PAST_VERB_RE = re.compile(r"\b(\w{3,}ed|reset|set|put)\b", re.IGNORECASE)
# "I've turned Data Roaming on": a switch the user set on the device.
_USER_SWITCHED_RE = re.compile(r"\bi(?:['’]ve| have)?\s+(?:\w+\s+){0,2}(?:turned|switched|toggled)\b", re.IGNORECASE)

# Reasoning about a failure ("I suspect the issue is …", "because"), not a
# claim about what the failed call returned.
REASONING_RE = re.compile(
    r"\b(?:issue|problem|bug|suspect|because|reason|fix|mistake|incorrect|expected|instead|typo|missing|"
    r"should|need|requires?|must|might|maybe|probably|seems?)\b",
    re.IGNORECASE,
)
# Identifiers that must have been read: snake_case, or letters and digits
# mixed ("poker_player", "l1002", "#w8855135"), not "drawer 3" or "1990s".
_IDENTIFIER_LIKE_RE = re.compile(r"^#?(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{4,})$")

_ASSIGNMENT_RE = re.compile(r"\w\s*[-+*/]?=\s*\S")

# A line of code in a reply ("grant_app_permission(app_name='messaging')").
_CALL_SYNTAX_RE = re.compile(r"\b\w+\([^()]*\)")

# A change proposed, asked for or about to happen: the value it names is the
# one the record does not hold yet.
# A button or link as text pages print it: "[Buy Now]", "[B08SL7LRRQ]".
_UI_LABEL_RE = re.compile(r"\[([^\[\]\n]{1,80})\]")
MAX_UI_SCAN = 20_000
_CLAUSE_SPLIT_RE = re.compile(r",[\"”’']?\s+(?:and|but|so|while)\s+|\s*[—–]\s*", re.IGNORECASE)
PROPOSAL_RE = re.compile(
    r"\b(?:will|would|shall|want(?:s|ed)? to|wish to|like to|going to|to confirm|confirm|proceed|can|could|may|"
    r"should|please|let me|i'll|we'll|request(?:ed)? to|plan to|about to)\b"
    r"|^\W*(?:modify|change|update|cancel|return|exchange|swap|replace|switch|move|set|add|remove)\b"
    # ...or names the earlier state on purpose ("still set to the old address").
    r"|\b(?:old|previous|former|original|originally|prior|before)\b",
    re.IGNORECASE,
)


def _asserting_sentences(text: str) -> list[str]:
    """Sentences that are not questions, plans or instructions (hedged ones included)."""
    return [
        _LIST_MARK_RE.sub("", x.strip()) for x in split_sentences(text)
        if not x.rstrip().endswith(("?", "？")) and not _not_a_claim(x)
    ]


def _not_a_claim(sentence: str) -> bool:
    """A whole sentence that plans, hedges or instructs: none of its clauses
    asserts anything ("I can use grep to list the files that contain foo")."""
    head = _LIST_MARK_RE.sub("", sentence.strip())
    return bool(PLAN_RE.match(head) or INSTRUCTION_RE.match(head) or _is_heading(head))


# A heading or a status line is form, not a claim: a Markdown heading, or a
# few capitalised words closed by a colon or an exclamation mark ("Task
# Completed!", "Next Steps:"). A bare "Wang Guowei." is an answer, not a heading.
HEADING_MAX_WORDS = 5
_HEADING_RE = re.compile(
    rf"^(?:#{{1,6}}\s+.{{1,80}}|(?:[A-Z][\w'’-]*\s+){{1,{HEADING_MAX_WORDS - 1}}}[A-Z][\w'’-]*\s*[!:])$"
)


def _is_heading(text: str) -> bool:
    return bool(_HEADING_RE.match(text.strip().strip("*_")))


# A column or field named as such: "the `Horsepower` column", "a Nationality
# field", "column Hometown".
_COLUMN_RE = re.compile(
    r"`(\w+)`\s+(?:column|field)s?\b|\b([A-Z]\w*|\w*_\w*)\s+(?:column|field)s?\b|\b(?:column|field)\s+`?([A-Z]\w*|\w*_\w*)`?"
)
# A plan to read a table's layout ("I should check what columns are available").
_SCHEMA_PLAN_RE = re.compile(r"\b(?:columns?|fields?|schema|structure)\b", re.IGNORECASE)
# Wondering, not asserting: "check if the table has a Country column".
_WONDER_RE = re.compile(r"\b(?:if|whether)\b", re.IGNORECASE)


def _column_names(sentence: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _COLUMN_RE.finditer(sentence)]


# Tools whose answer a click (opening a page, picking an option) leaves as it was.
_SEARCH_TOOLS = frozenset(["search", "search_products", "find", "lookup"])
# Calls that put something in the agent's hands.
HOLD_VERBS = frozenset(["take", "pick", "grab", "get", "collect"])
# "Now I <verb> X" that says X is at hand, not that something was done to it.
FIND_VERBS = frozenset(["find", "found", "see", "locate", "have", "get", "got", "check", "look"])
# "Next, I need to take it.": the action the agent says it does next.
_NEXT_ACTION_RE = re.compile(r"\bnext,? i (?:need|have|want|will need|am going) to (?P<verb>[a-z]+)\b", re.IGNORECASE)
_NOT_FOUND_RE = re.compile(
    r"\b(?:could ?n[o']t|can ?n[o']t|cannot|unable to|did ?n[o']t|was ?n[o']t able to|not able to)\s+"
    r"(?:find|locate|see|access|retrieve)\b|\bno (?:order|record|account|user|item|entry) (?:with|for|matching)\b",
    re.IGNORECASE,
)


# Values only a record gives: long numbers (card endings, zip codes), amounts
# with cents, identifiers with digits.
_RECORD_VALUE_RE = re.compile(r"\d{4,}|\d+\.\d\d|(?=\S*\d)(?=\S*[a-z])[\w#-]{4,}")


def _instructions(text: str) -> list[str]:
    """Sentences that tell the user what to do (not plans, questions or examples)."""
    out = []
    for sentence in split_sentences(text):
        head = _LIST_MARK_RE.sub("", sentence.strip())
        if INSTRUCTION_RE.match(head) and not sentence.rstrip().endswith(("?", "？")) and not EXAMPLE_RE.search(sentence):
            out.append(head)
    return out


def _answers_other(args: Any, data: Any) -> tuple[str, str, str] | None:
    """(key, asked, returned) when a result names another record under the id
    key the call was made with ({"order_id": "#W1"} answered by "#W2")."""
    if not isinstance(args, dict) or not isinstance(data, dict):
        return None
    for key, asked in args.items():
        if not isinstance(key, str) or not (key.lower() == "id" or key.lower().endswith("_id")):
            continue
        got = data.get(key)
        if isinstance(asked, (str, int)) and isinstance(got, (str, int)) and not isinstance(got, bool) \
                and str(asked).strip().lower() != str(got).strip().lower():
            return key, str(asked).strip().lower(), str(got).strip().lower()
    return None


# Verbs of switching a setting: "enabled" is what "I've turned it on" did.
_SWITCH_STEMS = {"enabl": "toggl", "disabl": "toggl", "turn": "toggl", "switch": "toggl", "activat": "toggl"}
# A passive past with its means or time: a record's history ("was paid with
# your Mastercard", "were shipped on May 3"), not an action just reported.
_RECORD_HISTORY_RE = re.compile(r"^(?:was|were)\b[^.;]{0,40}?\b(?:with|by|using|via|on|in)\b", re.IGNORECASE)


def _said_done(stem: str, verb: str, texts: Sequence[str]) -> bool:
    """A result says the verb was done ("Roaming enabled", "refunded"): the
    stem as a word of its own, not inside a field name ("roaming_enabled":
    false) or another word ("address" for "add")."""
    pattern = re.compile(
        rf"(?<!\w)(?:{re.escape(stem)}(?:e|ed|d|es|s|ing|red|ted|led|ion|ions)?|{re.escape(verb)})(?!\w)"
    )
    return any(pattern.search(text) for text in texts)


def _asked_ids(args: Any) -> list[str]:
    """The id values a call was made with ({"order_id": "#W1"} -> ["#w1"])."""
    if not isinstance(args, dict):
        return []
    return [str(v).strip().lower() for k, v in args.items()
            if isinstance(k, str) and (k.lower() == "id" or k.lower().endswith("_id"))
            and isinstance(v, (str, int)) and not isinstance(v, bool) and len(str(v).strip()) >= 4]


# The user addressed by name: "Thank you, Mei.", "You're very welcome, Lei!",
# "Thanks for your patience, Ivan Johnson."; "under the name Noah Ito".
ADDRESS_RE = re.compile(
    r"^(?i:thank you|thanks|hi|hello|hey|dear|welcome|you(?:'re| are) (?:very |most )?welcome|"
    r"good (?:morning|afternoon|evening)|goodbye|bye)\b[^.!?]{0,60}?,\s*"
    r"(?P<name>(?:[A-Z][a-z]+\.?\s+)?[A-Z][a-z]+)\s*[.!?,]"
    r"|\b(?i:under|with) the name\s+(?P<named>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b"
)
_HONORIFICS = frozenset(["mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "miss", "sir", "madam"])
_CAPITALISED_RE = re.compile(r"\b[A-Z][a-z]+\b")
# Emails and ids made of words ("mia.garcia2723@example.com", "mia_garcia_4516").
_HANDLE_RE = re.compile(r"[\w.+-]+@[\w-]+|\b[a-z]+(?:_[a-z]+)+_?\d*\b", re.IGNORECASE)
MAX_HANDLE_SCAN = 4000  # characters of a turn or result read for handles
# Keys that hold a person's name in a record.
_PERSON_KEY_RE = re.compile(r"^(?:first|last|full|given|family|middle|display|customer|contact|person)_?name$",
                            re.IGNORECASE)
MAX_NAME_SCAN = 400  # leaves visited per result for person names


def _person_names(data: Any) -> set[str]:
    """Words of the values of person-name keys ("first_name": "Mei") in a parsed result."""
    out: set[str] = set()
    stack, seen = [data], 0
    while stack and seen < MAX_NAME_SCAN:
        obj = stack.pop()
        seen += 1
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(value, str) and isinstance(key, str) and _PERSON_KEY_RE.match(key):
                    out.update(w.lower() for w in value.split())
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(obj, list):
            stack.extend(obj[:50])
    return out


# The auxiliaries of COMPLETION_RE before any past participle; the verb must
# name a tool of the run (see _Pass._completion).
ANY_COMPLETION_RE = re.compile(
    r"\b(?:i(?:'ve| have)?(?: just| now| successfully| already)?|we(?:'ve| have)|"
    r"(?:has|have)(?: now| successfully| already)? been(?: successfully)?|(?:was|were)(?: successfully)?|"
    r"(?:is|are) now)\s+(?P<verb>[a-z]{3,}ed)\b",
    re.IGNORECASE,
)
# A tool's verb shorter than this says too little to match ("set", "get").
MIN_TOOL_VERB = 4


def _tool_verb(tool: str) -> str:
    """The verb a tool is named after, as verb_stem gives it: "refuel_data" -> "refuel"."""
    first = re.split(r"[_\s.-]+", tool.strip().lower())[0]
    return verb_stem(first + "ed") if not first.endswith("e") else first[:-1]


# A completion the agent claims as its own act ("I've enabled", "we have reset").
_FIRST_PERSON_DONE_RE = re.compile(r"(?:i|we)\b", re.IGNORECASE)


# A reply that says a call went wrong. A bare negation or "again" does not
# ("why MMS isn't working", "your line is active again"): it must be about
# what the call asked (see _error_passed_over).
_SAYS_FAILED_RE = re.compile(
    r"\b(?:error|fail(?:ed|s|ure)?|unable|(?:n't|not) (?:able|find|found|locate|retrieve|access|work|succeed|go "
    r"through|possible|complete)|could(?:n't| not)|can(?:'t|not)|problem|wrong|invalid)\b",
    re.IGNORECASE,
)


def _call_words(call: Step) -> set[str]:
    """The words a call asked with: its tool's name and its arguments."""
    return {w for w in tokens(f"{call.tool or ''} {_args_text(call.args)}".replace("_", " "))
            if len(w) >= 3 and w not in EN_STOP_WORDS and w not in FILLER_WORDS}


# Words of an error message that say nothing of its content.
_ERROR_FILLER = frozenset(["error", "found", "failed", "failure", "invalid", "exception", "code", "message"])
# "I'm sorry, …", "Unfortunately, …", "It looks like …": a reply that breaks bad news.
APOLOGY_RE = re.compile(r"\b(?:sorry|unfortunately|apologi[sz]e|it (?:looks|seems) like|appears)\b", re.IGNORECASE)


def _error_words(call: Step, error: str) -> set[str]:
    """What an error message says beyond the call it answers: "Error: Order
    not found" after get_order_details says nothing more; "Payment method
    should be the original payment method" does."""
    asked = set(tokens(f"{call.tool or ''} {_args_text(call.args)}".replace("_", " ")))
    return {w for w in tokens(error[:500]) if len(w) >= 3 and not w.isdigit() and w not in EN_STOP_WORDS
            and w not in FILLER_WORDS and w not in _ERROR_FILLER and w not in asked}


def _sentence_words(sentence: str) -> set[str]:
    words = re.findall(r"[\w][\w.-]*[\w]|\w", sentence.lower())
    return set(words) | {" ".join(p) for p in zip(words, words[1:], strict=False)}


# A record's state named as such ("delivered", "pending", "suspended").
_STATE_WORD_RE = re.compile(
    r"\b(?:pending|delivered|cancell?ed|processed|shipped|returned|exchanged|active|suspended|paid|overdue)\b",
    re.IGNORECASE)

# A statement that says a result is not the one asked for.
_MISMATCH_RE = re.compile(
    r"\b(?:different|mismatch|does(?:n't| not) match|not the (?:same|one|right)|wrong|another (?:user|order|account|"
    r"record|customer|product)|instead)\b", re.IGNORECASE)


def _claim_sentences(text: str) -> list[str]:
    out = []
    for sentence in split_sentences(text):
        if sentence.rstrip().endswith(("?", "？")) or EXAMPLE_RE.search(sentence) or _not_a_claim(sentence):
            continue
        for clause in _CLAUSE_RE.split(sentence):
            clause = _LIST_MARK_RE.sub("", clause.strip())
            if _CALL_SYNTAX_RE.search(clause) and ("_" in clause or "=" in clause):
                continue  # a call written out for the user to run, not a claim
            if clause and not PLAN_RE.match(clause) and not HEDGE_RE.search(clause) and not INSTRUCTION_RE.match(clause):
                out.append(clause)
    return out


def _label_blocks(text: str) -> list[str]:
    """A line ending in ":" with the short unmarked lines it introduces
    ("updated to:" + an address over three lines): one statement about a record."""
    out: list[str] = []
    pending: list[str] = []
    for sentence in split_sentences(text):
        if pending and len(pending) <= 4 and len(sentence) <= 80 and not sentence.endswith(":") \
                and not _LIST_MARK_RE.match(sentence):
            pending.append(sentence)
            continue
        if pending:
            out.append(" ".join(pending))
            pending = []
        if sentence.endswith(":"):
            pending = [sentence]
    if pending:
        out.append(" ".join(pending))
    return [block for block in out if " " in block and not block.endswith(":")]


def _best_sentence(text: str, probe: Salient) -> str:
    """The observation sentence sharing most with ``probe`` (for the reason text)."""
    best, best_hits = "", -1
    probe_words = probe.words
    for sentence in split_sentences(text)[:200]:
        hits = len(set(tokens(sentence)) & probe_words)
        if hits > best_hits:
            best, best_hits = sentence, hits
    return best


def _surface(unit: str, sentence: str) -> str:
    """The unit as the agent wrote it ("Haiyan", not "haiyan"; "7,500", not "7500")."""
    if unit[:1].isdigit():
        for found in re.finditer(r"\d[\d,.]*(?:st|nd|rd|th|s)?", sentence):
            if normalize_number(found.group(0).rstrip(".,")) == unit:
                return found.group(0).rstrip(".,")
        return unit
    m = re.search(re.escape(unit).replace(r"\ ", r"[\s\-]+"), sentence, re.IGNORECASE)
    return m.group(0) if m else unit


def _what(step: Step) -> str:
    if step.kind == "final":
        return "final answer"
    if is_reply(step):
        return "reply"
    return step.kind


@dataclass
class _Obs:
    step: Step
    sal: Salient
    new_units: set[str]
    failed: bool
    relevant: bool
    reading: Reading
    query_units: set[str] = field(default_factory=set)
    # Shares nothing with the action it answers although it names things.
    off_query: bool = False
    # The action this result answers (None when it cannot be paired).
    action: Step | None = None


@dataclass
class _Call:
    """An action waiting for (or paired with) its result."""

    step: Step
    tool: str
    toks: frozenset[str]
    sal: Salient
    obs: Step | None = None
    obs_units: set[str] = field(default_factory=set)
    failed: bool = False
    # Whether the call only reads (a write done again must come back word for
    # word the same to count: a toggle answers "ON", then "OFF").
    read: bool = True


def anchor_report(
    steps: Sequence[Step],
    task: str = "",
    *,
    context: dict[str, Any] | None = None,
    similarity: Similarity | None = None,
    demoted: frozenset[str] = frozenset(),
    promoted: frozenset[str] = frozenset(),
) -> AnchorReport:
    """Anchoring scores and break patterns over one run, in step order.

    ``demoted``: patterns a project's reviewers found unreliable for their
    agents; their breaks are weak there (findings, never the shown break).
    ``promoted``: weak patterns a project shows as breaks all the same (a team
    whose agents never compute or paraphrase; the what-if "with" column).

    ``similarity`` (experiments only) replaces the lexical per-step score and
    the "did the next turn use this observation" test; the claim, success and
    re-query checks are about exact values and stay lexical.
    """
    if similarity is not None:
        # One batch per run instead of one encoder call per pair.
        similarity.prime(
            [(s.text or "")[:2000] if s.kind == "observation" else _step_text(s)[:2000] for s in steps]
        )
    ordered = sorted(steps, key=lambda s: s.index)
    run = _Pass(task or "", context, similarity, ordered)
    for step in ordered:
        run.feed(step)
    run.close_turn()
    return run.report(demoted, promoted)


def _names_id(text: str, ident: str) -> bool:
    """Whether ``text`` (lower case, '#' removed) names the record id ``ident`` as a whole word."""
    return re.search(rf"(?<![\w#]){re.escape(ident.lstrip('#'))}\b", text) is not None


class _Pass:
    """One pass over a run; ``feed`` each step in order, then ``report``."""

    def __init__(self, task: str, context: dict[str, Any] | None, sem: Similarity | None, steps: list[Step]) -> None:
        self.task = task
        self.sem = sem
        self.evidence = Evidence()
        # What the agent was told before its first step (system prompt, domain
        # policy, tool schemas) is evidence as much as the task is.
        told = context_text(context)
        opening = f"{task}\n{told}" if told else task
        task_sal = extract(opening)
        self.evidence.add(task_sal, opening)
        self.arguments = ArgumentCheck(opening)
        self.older_units: set[str] = set(task_sal.units)
        # Units the agent has been after: the task plus its own recent plans;
        # an observation sharing none of them is off-topic and may be ignored.
        self.wanted_words: set[str] = _content_words(extract(task))
        self.task_names: set[str] = {w for e in extract(task).entities for w in e} - EN_STOP_WORDS
        self.records = RecordIndex()
        self.scores: dict[int, float] = {}
        self.breaks: list[Break] = []
        self.findings: list[Break] = []
        self.last: _Obs | None = None  # the latest tool result
        self.judged: _Obs | None = None  # the result the current turn is judged on
        self.seen_observation = False
        self._reset_turn()
        # Per tool: recent calls, for re-queries; and per tool the index of the
        # last event that may have changed the world since.
        self.history: dict[str, deque[_Call]] = {}
        self.changed_at: dict[str, int] = {}
        self.world_changed_at = -1
        self.pending: deque[_Call] = deque()
        self.pending_requery: tuple[Step, _Call] | None = None
        # A revisit waiting for the agent's next call: (step, reason, evidence).
        self.pending_move: tuple[int, str, dict[str, Any]] | None = None
        self.observed: list[tuple[int, str]] = []
        # Phantom calls: the tools the run knows of, the successful calls made,
        # and since the user's latest turn.
        self.catalogue = _tool_names(context, steps)
        self.tool_verbs = {v for v in map(_tool_verb, self.catalogue) if len(v) >= MIN_TOOL_VERB}
        self.done_tools: set[str] = set()
        # Tools called at all, their result failed or not: an action of one of
        # them reported done is judged by the failure rules, not as a phantom.
        self.called_tools: set[str] = set()
        # What the agent picked up and holds ("take watch 1 from dresser 1"
        # succeeded): "Now I find a watch (1)" later needs no new sighting.
        self.held: set[str] = set()
        self.done_texts: deque[str] = deque(maxlen=200)
        self.calls_since_user = 0
        self.writes_since_user = 0
        self.any_user_turn = False
        # Stems of what the user reports having done ("I reset", "I've turned off").
        self.user_done: set[str] = set()
        # Submissions the environment rejected: normalised content -> (action, result).
        self.rejected: dict[str, tuple[Step, Step]] = {}
        self.submissions: deque[_Call] = deque(maxlen=8)
        # Failure of each result of the latest batch of calls: after parallel
        # calls, success may be claimed of any one that worked.
        self.batch: list[bool] = []
        self.batch_done = False
        self.planned = _planned_calls(steps)
        self.looked_up = _looked_up(steps)
        self.next_calls = _next_calls(steps)
        # Since the agent last spoke: tool results come back, calls made.
        self.results_since_statement = 0
        self.calls_since_statement: set[str] = set()
        # A lookup the agent said it would make ("I need to search Tim Kaine")
        # and has not made yet: facts stated before it is made read a page
        # that never came.
        self.unmade_lookup: tuple[int, str] | None = None
        # "Next, I need to take it.": the action a statement said comes next,
        # until a call or an observation.
        self.planned_action: tuple[int, str] | None = None
        # A result about another record than the call asked for: (result
        # step, call step, key, asked, returned), until the next statement.
        self.answered_other: tuple[int, int, str, str, str] | None = None
        # Ids whose lookup came back failed or empty since the last statement:
        # id -> (call step, result step).
        self.unanswered: dict[str, tuple[int, int]] = {}
        # Function calls that failed since the agent last spoke and were not
        # made again with success: (call, result).
        self.failed_calls: list[tuple[Step, Step]] = []
        # Ids only failed calls were made with since the agent last spoke (a
        # call of the same batch that worked did not ask for them): id ->
        # (call step, result step); and the ids calls that worked asked for.
        self.failed_ids: dict[str, tuple[int, int]] = {}
        self.worked_ids: set[str] = set()
        # Whom the agent talks to: names the user gave and person names in
        # records ("first_name": "Mei"), lower case -> step first seen.
        self.person_names: dict[str, int] = {}
        # Buttons and links the pages showed ("[Buy Now]", "[B08SL7LRRQ]").
        self.ui_labels: set[str] = set()
        self.told_since_statement = False
        self.recent_calls: deque[str] = deque(maxlen=2)
        # Whether any call was made at all (None: the agent has run nothing).
        self.ran: bool | None = None
        self.answers = _final_answers(steps)
        self.steps = steps
        self.acted_text = ""  # the agent's own commands, lower case: names it wrote are its own
        self.flags_seen: set[str] = {m.group(0).lower() for m in FLAG_RE.finditer(opening)}
        self.flag_text = opening.lower()

    def _reset_turn(self) -> None:
        self.turn_units: set[str] = set()
        self.turn_texts: list[str] = []
        # Thoughts and replies of the current turn (since the latest observation).
        self.turn_thoughts: list[tuple[int, str]] = []
        self.turn_first: int | None = None
        self.turn_ack = False

    # -- observations ----------------------------------------------------------
    def feed(self, step: Step) -> None:
        if step.kind == "observation":
            self.unmade_lookup = self.planned_action = None
            role = role_of(step)
            if role == "tool":
                self._tool_result(step)
            else:
                self._told(step, role)
        elif step.kind in AGENT_KINDS:
            self._agent(step)

    def _told(self, step: Step, role: str) -> None:
        """A user's turn or a system note: evidence, and the world may have changed."""
        text = step.text or ""
        self.close_turn()
        self._reset_turn()
        self.seen_observation = True
        self.observed.append((step.index, text))
        self.arguments.told(text, role)
        sal = extract(text)
        self.evidence.add(sal, text)
        self.older_units |= sal.units
        self.world_changed_at = step.index
        self.judged = None
        self.told_since_statement = True
        if role == "user":
            self.user_done.update(verb_stem(m.group("verb")) for m in USER_DID_RE.finditer(text[:4000]))
            if _USER_SWITCHED_RE.search(text[:4000]):
                self.user_done.add("toggl")
            # "I followed your instructions and reset the APN settings": every
            # past verb of a sentence the user says in the first person.
            for sentence in split_sentences(text[:4000]):
                if _FIRST_PERSON_RE.search(sentence):
                    self.user_done.update(verb_stem(w) for w in _PAST_VERB_RE.findall(sentence))
            self.any_user_turn = True
            for word in _CAPITALISED_RE.findall(text[:4000]):
                self.person_names.setdefault(word.lower(), step.index)
            self._note_handle_names(text, step.index)
            self.failed_calls = []  # the reply answers the new request
            self.failed_ids, self.worked_ids = {}, set()
            self.calls_since_user = 0
            self.writes_since_user = 0
            self.records.forget_writes()
            # A new request: pending replies are answered by this turn.
            self.pending = deque(c for c in self.pending if c.tool not in REPLY_TOOLS)

    def _take_call(self, tool: str | None) -> _Call | None:
        name = (tool or "").strip().lower()
        for pos, call in enumerate(self.pending):
            if not name or call.tool == name:
                del self.pending[pos]
                return call
        return self.pending.popleft() if self.pending else None

    def _tool_result(self, step: Step) -> None:
        self.ui_labels.update(m.strip().lower() for m in _UI_LABEL_RE.findall((step.text or "")[:MAX_UI_SCAN]))
        text = step.text or ""
        self.observed.append((step.index, text))
        self.close_turn()
        self.seen_observation = True
        call = self._take_call(step.tool)
        reading = read_result(text, step.meta, call.step.args if call and call.step.args is not None else
                              (call.step.text if call else None))
        sal = extract(text)
        failed = _failed(step, reading)
        late = self.arguments.result(step.index, call.step.index if call else None, text, failed,
                                     reading.status == "empty")
        if late is not None:
            self._break(*late)
        self._check_requery(step, sal)
        if reading.data is not None and reading.data is not ...:
            self.records.add(reading.data, step.index)
            for name in _person_names(reading.data):
                self.person_names.setdefault(name, step.index)
            self.evidence.add_data(reading.data)
            if call is not None and not failed:
                other = _answers_other(call.step.args, reading.data)
                if other is not None:
                    self.answered_other = (step.index, call.step.index, *other)
        if call is not None and isinstance(call.step.args, dict):
            self._note_handle_names(text, step.index)  # dialogues with function calls: whom the agent talks to
        if call is not None and (failed or reading.status == "empty"):
            for ident in _asked_ids(call.step.args):
                self.unanswered[ident] = (call.step.index, step.index)
        if call is not None and isinstance(call.step.args, dict):
            self._note_failed_call(call, step, failed)
            for ident in _asked_ids(call.step.args):
                if failed:
                    self.failed_ids.setdefault(ident, (call.step.index, step.index))
                else:
                    self.worked_ids.add(ident)
        if call is not None:
            call.obs, call.obs_units, call.failed = step, sal.units, failed
            if reading.rejected and call in self.submissions:
                self.rejected.setdefault(_normal(call.step), (call.step, step))
            if not failed:
                self.calls_since_user += 1
                self.done_tools.add(call.tool)
                if not is_read_call(call.step.tool, call.step.args if call.step.args is not None else call.step.text):
                    self.writes_since_user += 1
                    self.records.note_write(call.step.args)
                    self._hold(call)
                    # A call that may have changed the world: asking another
                    # tool again since is legitimate (a read changes nothing).
                    # A click opens a page or picks an option: it changes what
                    # the agent looks at, not what a search returns, so the
                    # same search after it still asks again.
                    acted = action_key(call.tool, None)[0]
                    for other in self.history:
                        if other != acted and not (acted == "click" and other in _SEARCH_TOOLS):
                            self.changed_at[other] = step.index
        if not failed:
            self.done_texts.append(text[:2000].lower())
        producing = call.sal.units if call is not None else set()
        if self.last is not None:
            self.older_units |= self.last.sal.units
        new_units = sal.strong_units - self.older_units - producing
        # On-topic when the new content shares a word with what the agent
        # is after (task, its own plans); numbers alone do not count.
        new_words = {w for u in new_units if u[0] in "eict" for w in u[2:].split(" ") if not w.isdigit()}
        relevant = bool(new_words & self.wanted_words)
        query = {u for u in producing if not u.startswith("n:")}
        # A failure message counts only when it names something else
        # ("Could not find [Other Page]. Similar: [...]"); "Invalid
        # action!" names nothing (its one capital opens the sentence).
        names = len(sal.strong_units) >= (2 if failed else 1)
        off_query = bool(query) and names and not (sal.units & producing)
        self.batch.append(failed)
        self.batch_done = True
        self.results_since_statement += 1
        self.last = self.judged = _Obs(
            step=step, sal=sal, new_units=new_units, failed=failed, relevant=relevant, reading=reading,
            query_units=query, off_query=off_query, action=call.step if call else None,
        )
        self.evidence.add(sal, text)
        if "{" in text:
            self.flags_seen.update(m.group(0).lower() for m in FLAG_RE.finditer(text[:200_000]))
        if len(self.flag_text) < 2_000_000:
            self.flag_text += "\n" + text[:200_000].lower()
        # The call's status is observed too: "Timeout" after a timed-out search is no invention.
        status = (step.meta or {}).get("status")
        if isinstance(status, str) and status:
            self.evidence.words.add(status.lower())
        self._reset_turn()

    def _check_requery(self, step: Step, sal: Salient) -> None:
        if self.pending_requery is None:
            return
        action, earlier = self.pending_requery
        self.pending_requery = None
        if earlier.obs is None or jaccard(sal.units, earlier.obs_units) < SAME_RESULT_MIN_JACCARD:
            return
        if not earlier.read and not earlier.failed and (
            not (step.text or "").strip()  # a silent write done twice asks nothing
            or " ".join((step.text or "").split()) != " ".join((earlier.obs.text or "").split())
        ):
            return
        if earlier.failed:
            reason = (
                f"the action at step {action.index} repeats step {earlier.step.index}, which had failed "
                f"({_quote(earlier.obs.text or '', 60)}), and fails the same way"
            )
        else:
            reason = (
                f"the action at step {action.index} asks again what step {earlier.step.index} already "
                f"obtained (observation at step {earlier.obs.index}: {_quote(earlier.obs.text or '', 80)})"
            )
        evidence = {
            "action": _quote(_step_text(action), 80),
            "earlier_action_step": earlier.step.index,
            "earlier_observation_step": earlier.obs.index,
            "earlier_failed": bool(earlier.failed),
        }
        if not earlier.failed and not earlier.read:
            # A write that worked, done again ("craft 1 wool" twice, a second
            # item into the cart), makes another one: it asks no question whose
            # answer the agent already had. Worth a look, not proof.
            evidence["probe"] = True
        elif not earlier.failed and _no_arguments(action):
            # A call that asks nothing ("inventory", "get_status({})") reads the
            # state of the world; reading it again is checking, not a question
            # already answered: no lapse at all.
            return
        if not earlier.failed and is_move_call(action.tool, action.args):
            # Going back to a place seen before is a requery only if the agent
            # does nothing there: coming back to put the pencil down is not.
            place = move_place(_args_text(action.args) or action.text or "")
            self.pending_move = (action.index, reason, {**evidence, "place": " ".join(tokens(place))})
            return
        self._break(action.index, "requery", reason, evidence)

    # -- the agent's steps -------------------------------------------------------
    def _agent(self, step: Step) -> None:
        # Curly apostrophes read as straight ones ("I’ve found" = "I've found").
        text = _step_text(step).replace("’", "'")
        code = step.kind == "action" and not is_reply(step) or looks_like_code(text)
        sal = extract(text) if not code or step.kind == "action" else Salient()
        if step.kind == "thought" or is_reply(step):
            self.wanted_words |= _content_words(sal)
        if step.kind == "action" and not is_reply(step):
            self._call(step, sal)
        statement = step.kind == "thought" or is_reply(step)
        if statement:
            self.arguments.said(text, step.index, _what(step))
        if statement and not code and (self._phantom_result(step, text) or self._invented_identifier(step, text)
                                       or self._unrun_outcome(step, text)):
            self.results_since_statement, self.calls_since_statement = 0, set()
            self.told_since_statement = False
            self.turn_thoughts.append((step.index, text))
            return
        if not self.seen_observation:
            # Before the first observation the agent can only plan from the
            # task; nothing to be anchored to yet, but a lookup it skipped.
            if statement and not code and not _is_final(step):
                self._before_looking(step, text)
            return
        judged = self.judged
        if sal.units and judged is not None:
            if self.sem is not None:
                cos = self.sem.similarity(text[:2000], (judged.step.text or "")[:2000])
                self.scores[step.index] = round(min(1.0, max(0.0, cos)), 3)
            else:
                self.scores[step.index] = lexical_score(sal, judged.sal, self.older_units)
        if text.strip():
            self.turn_units |= sal.units
            self.turn_texts.append(text)
            if self.turn_first is None and sal.units:
                self.turn_first = step.index
            if NEGATED_RE.search(text) or ACK_FAILURE_RE.search(text):
                self.turn_ack = True
        if _is_final(step):
            self._final(step, text, code)
        elif statement:
            if not code:
                self._statement(step, text)
                self._note_lookup_plan(step, text)
                planned = _NEXT_ACTION_RE.search(text)
                self.planned_action = (step.index, planned.group("verb").lower()) if planned else None
            self.turn_thoughts.append((step.index, text))
            self.results_since_statement, self.calls_since_statement = 0, set()
            self.told_since_statement = False

    def _call(self, step: Step, sal: Salient) -> None:
        self.unmade_lookup = self.planned_action = None
        if step.tool:
            self.called_tools.add(step.tool)
        if self.pending_move is not None:
            index, reason, evidence = self.pending_move
            self.pending_move = None
            args = _args_text(step.args) or step.text or ""
            if is_move_call(step.tool, args) or evidence["place"] not in " ".join(tokens(args)):
                self._break(index, "requery", reason, evidence)
        self.calls_since_statement.add((step.tool or "").strip().lower())
        if self.ran is None and not _is_final(step):
            self.ran = False  # something was run; its result may come
        self.recent_calls.append((step.tool or "").strip().lower())
        if self.batch_done:
            # A new call after results came back: a new batch of calls.
            self.batch, self.batch_done = [], False
        tool = (step.tool or "").strip().lower()
        args = step.args if step.args is not None and step.args != "" else step.text
        toks = action_key(tool, args)[1]
        call = _Call(step=step, tool=tool, toks=toks, sal=sal)
        if not _is_final(step):
            earlier = self._find_requery(step, tool, toks)
            if earlier is not None:
                self.pending_requery = (step, earlier)
            self.history.setdefault(tool, deque(maxlen=REQUERY_WINDOW)).append(call)
        else:
            self._check_resubmission(step)
            self.submissions.append(call)
        self.pending.append(call)
        if not _is_final(step):
            unseen = self.arguments.check(step.index, step.tool, step.args, step.text or "")
            if unseen is not None:
                self._break(*unseen)
        # The agent's own arguments are evidence for what it says later.
        args_text = _args_text(step.args) or (step.text or "")
        if len(self.acted_text) < 2_000_000:
            self.acted_text += "\n" + args_text[:200_000].lower()
        self.evidence.add(sal, args_text)

    def _uses_other_answer(self, step: Step, text: str) -> bool:
        """The call asked for one record and the result is another's
        (get_user_details(mia_garcia_4516) answered with ivan_johnson_6036);
        the next statement goes on without a word about it."""
        other, self.answered_other = self.answered_other, None
        if other is None:
            return False
        result_at, call_at, key, asked, got = other
        low = text.lower()
        if got in low or _MISMATCH_RE.search(text):
            return False  # it noticed
        self._break(step.index, "wrong_record", (
            f"the call at step {call_at} asked for {key} {asked}, but the result at step {result_at} is for "
            f"{got}; the {_what(step)} at step {step.index} goes on as if it were {asked}'s"
        ), {"call_step": call_at, "result_step": result_at, "field": key, "asked": asked, "returned": got})
        return True

    def _details_of_unanswered(self, step: Step, text: str, unanswered: dict[str, tuple[int, int]]) -> bool:
        """A record's details stated right after its lookup came back empty or
        failed ("3. Order #W6111398 (Status: Cancelled) - Skateboard" when
        get_order_details(#W6111398) answered null), and no earlier result
        held that record."""
        if not unanswered:
            return False
        known = {ident for _, ident in self.records.latest}
        for sentence in split_sentences(text):
            if NEGATED_RE.search(sentence) or ACK_FAILURE_RE.search(sentence) or sentence.rstrip().endswith("?"):
                continue
            low = sentence.lower()
            for ident, (call_at, result_at) in unanswered.items():
                if ident in known or not _names_id(low.replace("#", ""), ident):
                    continue
                details = _STATE_WORD_RE.search(sentence) or any(
                    t != ident and t in self.records.owners for t in _sentence_words(sentence))
                if details:
                    self._break(step.index, "unconfirmed_success", (
                        f"the lookup of {ident} at step {call_at} came back with nothing (result at step "
                        f"{result_at}); the {_what(step)} at step {step.index} states its details: "
                        f"{_quote(sentence, 100)}"
                    ), {"call_step": call_at, "result_step": result_at, "asked": ident, "claim": sentence[:200]})
                    return True
        return False

    def _columns_unread(self, step: Step, text: str) -> bool:
        """"I should check what columns are available." then, with no call in
        between, "The `teacher` table has a `Hometown` column": it names
        columns it planned to read and did not (the question may well use the
        word; the schema was never shown)."""
        if self.unmade_lookup is None or not _SCHEMA_PLAN_RE.search(self.unmade_lookup[1]):
            return False
        for sentence in split_sentences(text):
            if sentence.rstrip().endswith("?") or _WONDER_RE.search(sentence):
                continue
            unread = [c for c in _column_names(sentence)
                      if not any(c.lower() in seen.lower() for _, seen in self.observed)]
            if unread:
                return self._unmade_lookup_break(step, sentence, unread)
        return False

    def _check_click(self, step: Step) -> None:
        """A run-ending click on a button no page showed ("click[Buy Now]" with
        only the search results seen): it acts on a page it never opened. An
        earlier click on a missing label is answered "Invalid action!", which
        the run sees and may recover from (judged as any failed call)."""
        if not _is_final(step) or (step.tool or "").strip().lower() != "click" or not self.ui_labels:
            return
        label = (_args_text(step.args) or "").strip().lower()
        parts = [p.strip() for p in label.split(",")]
        if not label or label in self.ui_labels or all(p in self.ui_labels for p in parts if p):
            return
        if any(b.step == step.index for b in self.breaks):
            return
        self._break(step.index, "phantom_call", (
            f"the {_what(step)} at step {step.index} clicks {_quote(label, 60)}, which no page shown so far offers: "
            "it acts on a page it never opened"
        ), {"claim": label[:200]})

    def _find_requery(self, step: Step, tool: str, toks: frozenset[str]) -> _Call | None:
        args = step.args if step.args is not None else step.text
        read = is_read_call(step.tool, args)
        exact = is_command(args)  # a program edited by one token is another program
        signature = call_signature(step.tool, args)
        for call in reversed(self.history.get(tool, ())):
            same = (
                call_signature(call.step.tool, call.step.args if call.step.args is not None else call.step.text)
                == signature if exact else jaccard(toks, call.toks) >= REQUERY_MIN_JACCARD
            )
            if call.obs is not None and same:
                # A successful action of another tool, or a user's turn, since
                # then may have changed the world (took the apple, toggled a
                # setting): asking again is then legitimate.
                if max(self.changed_at.get(tool, -1), self.world_changed_at) > call.step.index:
                    return None
                call.read = read
                return call
        return None

    def _check_resubmission(self, step: Step) -> bool:
        if not self.rejected:
            return False
        earlier = self.rejected.get(_normal(step))
        if earlier is None:
            return False
        action, result = earlier
        self._break(step.index, "rejected_resubmission", (
            f"the submission at step {step.index} is the one step {action.index} made, which the environment "
            f"rejected at step {result.index} ({_quote(result.text or '', 60)}); it was sent again unchanged"
        ), {"earlier_submission_step": action.index, "rejection_step": result.index,
            "rejection": _quote(result.text or "", 120)})
        return True

    # -- claims ----------------------------------------------------------------
    def _statement(self, step: Step, text: str) -> None:
        """A thought or a reply: success, completion, records, then plain claims."""
        unanswered, self.unanswered = self.unanswered, {}
        failed_calls, self.failed_calls = self.failed_calls, []
        failed_ids = {i: at for i, at in self.failed_ids.items() if i not in self.worked_ids}
        self.failed_ids, self.worked_ids = {}, set()
        if self._uses_other_answer(step, text) or self._details_of_unanswered(step, text, unanswered) \
                or self._columns_unread(step, text) or self._misnamed_user(step, text) \
                or self._done_by_failed_call(step, text, failed_ids):
            return
        claims = _claim_sentences(text)
        last = self.last
        # A hedge does not make a success claim safe ("the function seems to
        # work" after a traceback): every asserting sentence is read for it.
        for sentence in _asserting_sentences(text):
            if self._after_failure(step, sentence, last) or self._phantom(step, sentence) \
                    or self._silent_output(step, sentence, last):
                return
        # Whole sentences: "its status" in a clause refers to the order the
        # sentence named before it.
        sentences = [x for x in split_sentences(text) if not x.rstrip().endswith(("?", "？")) and not _not_a_claim(x)]
        for before, sentence in [*zip(["", *sentences], sentences, strict=False), *(("", b) for b in _label_blocks(text))]:
            if self._record_slip(step, sentence, before):
                return
        if self._named_record_slip(step, text):
            return
        statement_numbers = extract(text).numbers
        planned = self.planned.get(step.index)
        for sentence in claims:
            if ABSENCE_RE.search(sentence):
                continue
            sent_sal = extract(sentence)
            missing = _unsupported_units(sent_sal, self.evidence, sentence, statement_numbers)
            if missing and _NONE_COUNT_RE.search(sentence):
                missing = [u for u in missing if not u.endswith(" 0")]  # "an apple (0)": none of them
            if missing and planned is not None and not self._reads_failed_call(sentence, last):
                # Values the thought plans to use in the call it goes on to make.
                missing = [u for u in missing if not _in_plan(u, planned)]
            if missing and self._unmade_lookup_break(step, sentence, missing):
                return
            # Right after the search for it failed, a fact about what it asked
            # for is written as read, not recalled.
            if missing and not self._reads_failed_call(sentence, last) and self._from_memory(step, sentence, missing):
                return
            if missing:
                self._claim_break(step, _what(step), sentence, missing, self.judged)
                return
        # "You can change it to your Visa ending in 8905": an offer to the user
        # still quotes the record it rests on; "I couldn't find order
        # #9502114" claims nothing was found, but names the order asked for.
        for sentence in [*_instructions(text), *(x for x in split_sentences(text) if _NOT_FOUND_RE.search(x))]:
            missing = [u for u in _unsupported_units(extract(sentence), self.evidence, sentence, statement_numbers)
                       if _RECORD_VALUE_RE.fullmatch(u)]
            if missing:
                self._claim_break(step, _what(step), sentence, missing, self.judged)
                return
        self._error_passed_over(step, text, failed_calls)

    def _note_handle_names(self, text: str, index: int) -> None:
        """An email or a user id names its owner too ("mia.garcia2723@…",
        "mia_garcia_4516"): its letters are names the agent may use."""
        head = text[:MAX_HANDLE_SCAN]
        if "_" not in head and "@" not in head:
            return
        for handle in _HANDLE_RE.findall(head):
            for word in re.findall(r"[a-z]{2,}", handle.lower()):
                self.person_names.setdefault(word, index)

    def _done_by_failed_call(self, step: Step, text: str, failed_ids: dict[str, tuple[int, int]]) -> bool:
        """Of a batch of calls, the one for #W6729841 failed; "Order #W6729841:
        the air purifier has been changed" reports it done. A claim is judged
        against the call it names by id, whatever the other calls returned."""
        if not failed_ids:
            return False
        for sentence in _asserting_sentences(text):
            if NEGATED_RE.search(sentence) or ACK_FAILURE_RE.search(sentence):
                continue
            if not (self._completion(sentence) or SUCCESS_RE.search(sentence)):
                continue
            low = sentence.lower().replace("#", "")
            for ident, (call_at, result_at) in failed_ids.items():
                if _names_id(low, ident):
                    self._break(step.index, "unconfirmed_success", (
                        f"the call at step {call_at} for {ident} failed (result at step {result_at}); the "
                        f"{_what(step)} at step {step.index} reports it done: {_quote(sentence, 100)}"
                    ), {"call_step": call_at, "result_step": result_at, "asked": ident, "claim": sentence[:200]})
                    return True
        return False

    def _misnamed_user(self, step: Step, text: str) -> bool:
        """"Thank you, Processed." when the user is Mei: a reply that addresses
        the user by a name neither the user nor any record gave has lost track
        of whom it talks to (judged only once some person's name is known)."""
        if not is_reply(step) or not self.person_names:
            return False
        for sentence in split_sentences(text[:2000]):
            m = ADDRESS_RE.search(sentence)
            if m is None:
                continue
            said = m.group("name") or m.group("named")
            words = [w for w in said.split() if w.lower() not in _HONORIFICS]
            unknown = [w for w in words if w.lower() not in self.person_names]
            if words and unknown:
                self._break(step.index, "unsupported_claim", (
                    f"the {_what(step)} at step {step.index} addresses the user as {_quote(said, 40)}, "
                    f"a name neither the user nor any result gave: {_quote(sentence, 100)}"
                ), {"claim": sentence[:200], "missing": unknown[:5]})
                return True
        return False

    def _note_failed_call(self, call: _Call, result: Step, failed: bool) -> None:
        """Keep a failed function call until the agent speaks. A call that
        works settles it when made after the error came back (a retry, or
        another way to the same answer), or when it is the same tool asked in
        parallel (two emails tried at once: the reply needs only the answer).
        Another tool's call sent with it in parallel does not."""
        if failed:
            self.failed_calls.append((call.step, result))
        else:
            self.failed_calls = [(c, r) for c, r in self.failed_calls
                                 if r.index > call.step.index and c.tool != call.step.tool]

    def _error_passed_over(self, step: Step, text: str, failed_calls: list[tuple[Step, Step]]) -> bool:
        """A function call failed ("Error: Plan with ID P1010 not found") and
        the reply to the user that follows neither says so nor takes up what
        the error said ("the refund must go to the original payment method"):
        it goes on as if the call had worked."""
        if not failed_calls or not is_reply(step) or _SAYS_FAILED_RE.search(text) or APOLOGY_RE.search(text):
            return False
        said = set(tokens(text))
        for call, result in failed_calls:
            asked = _error_words(call, result.text or "") | _call_words(call)
            if asked & said and NEGATED_RE.search(text) or _error_words(call, result.text or "") & said:
                continue  # it answers the error's content, or denies something about what was asked
            self._break(step.index, "ignored_observation", (
                f"the call at step {call.index} failed ({_quote(result.text or '', 80)}, step {result.index}); "
                f"the {_what(step)} at step {step.index} neither says so nor takes it up, and goes on as if it "
                f"had worked"
            ), {"call_step": call.index, "observation_step": result.index,
                "observation": _quote(result.text or "", 120)})
            return True
        return False

    def _after_failure(self, step: Step, sentence: str, last: _Obs | None) -> bool:
        plain = DENIED_FAILURE_RE.sub("", sentence)
        if last is None or NEGATED_RE.search(plain) or ACK_FAILURE_RE.search(plain):
            return False
        if _NONE_COUNT_RE.search(sentence):
            return False  # "Now I find an apple (0)": a count of none, and it keeps looking
        success = SUCCESS_RE.search(sentence) or CODE_SUCCESS_RE.search(sentence) or (
            # "Your payment method has been changed" right after the change
            # failed; "I have verified your account" right after the lookup did.
            (LOOKED_UP_RE.search(sentence) or self._completion(sentence)) if last.failed else None
        )
        if success and self._found_nothing(last):
            # After a query that found nothing, only a claim of having found
            # or got something is false; "I am done" may be right.
            success = FOUND_RE.search(sentence)
        data = (DATA_CLAIM_RE.search(sentence) or (last.failed and PRESENT_DATA_RE.search(sentence))) \
            and not EMPTY_CONTENT_RE.search(sentence)
        if not data and last.failed and all(self.batch or [True]):
            # "The `teacher` table has a Name column" right after DESC teacher
            # failed: an assertion about what the failed call asked for.
            data = ASSERTION_RE.search(sentence) is not None and self._about_failed_call(sentence, last)
        if not (success or data):
            return False
        now = NOW_ACTION_RE.search(sentence)
        if last.failed and now and self._done_before(now.group("verb"), sentence[now.end():]):
            return False  # "Now I cool the potato" after it did, then bumped into "Nothing happens."
        if last.failed and all(self.batch or [True]):
            claim = "success" if success else "what the result holds"
            self._break(step.index, "unconfirmed_success", (
                f"the observation at step {last.step.index} reports a failure "
                f"({_quote(last.step.text or '(empty)', 80)}); the {_what(step)} at step {step.index} claims "
                f"{claim}: {_quote(sentence, 100)}"
            ), {"observation_step": last.step.index, "observation": _quote(last.step.text or "(empty)", 120),
                "claim": sentence[:200]})
            return True
        if not FOUND_RE.search(sentence) or last.reading.form != "text" or is_reply(step):
            # Only "found it" / "now I take X" names what the latest result
            # should show; a reply to the user may report any earlier result.
            return False
        if now and now.group("verb").lower() in self.next_calls.get(step.index, set()):
            return False  # "Now I put the watch in the safe." said of the put it goes on to make
        sent_sal = extract(sentence)
        local = Evidence()
        local.add(last.sal)
        if not now or now.group("verb").lower() in ("find", "found", "see", "locate", "have", "get", "got"):
            # Finding what it holds needs no sighting; cleaning it still needs a call.
            local.ids |= self.held
        local.id_heads = self.evidence.id_heads
        missing = [u for u in _unsupported_units(sent_sal, local) if not u[:1].isdigit()]
        if missing:
            self._break(step.index, "unconfirmed_success", (
                f"the {_what(step)} at step {step.index} claims {_quote(sentence, 100)}, but the observation "
                f"at step {last.step.index} ({_quote(last.step.text or '', 80)}) does not show "
                f"{', '.join(missing[:3])}"
            ), {"observation_step": last.step.index, "observation": _quote(last.step.text or "", 120),
                "claim": sentence[:200], "missing": missing[:5]})
            return True
        return False

    def _phantom_result(self, step: Step, text: str) -> bool:
        """The agent reads out a result no call returned ("The observation says
        …" with nothing observed since it last spoke), writes the observation
        itself, says tests pass when nothing was ever run, or says it now does
        what only a tool it did not call could do ("Now I take the knife")."""
        fake = FAKE_OBSERVATION_RE.search(text)
        if fake is not None:
            self._break(step.index, "phantom_call", (
                f"the {_what(step)} at step {step.index} writes its own observation "
                f"({_quote(text[fake.start():], 80)}): it acts as if a tool had answered"
            ), {"claim": text[fake.start():fake.start() + 200]})
            return True
        for sentence in split_sentences(text):
            if self.ran is None and CODE_SUCCESS_RE.search(sentence) and not NEGATED_RE.search(sentence) \
                    and not PLAN_RE.match(sentence) and not any(f.step == step.index for f in self.findings):
                # Some models say this of code they are about to submit, as a
                # habit: worth seeing, not the break (it fires on whole models).
                self.findings.append(Break(step=step.index, pattern="untested_claim", reason=(
                    f"the {_what(step)} at step {step.index} says {_quote(sentence, 80)}, but nothing was run yet"
                ), evidence={"claim": sentence[:200]}))
            if NEGATED_RE.search(sentence):
                continue
            if self._made_up_call(step, sentence):
                return True
            attribution = ATTRIBUTION_RE.search(sentence)
            if attribution and self.results_since_statement == 0 and not self.told_since_statement:
                self._break(step.index, "phantom_call", (
                    f"the {_what(step)} at step {step.index} reads out {_quote(attribution.group(0), 40)}, but no "
                    f"call returned anything since the agent last spoke: {_quote(sentence, 100)}"
                ), {"claim": sentence[:200]})
                return True
            now = NOW_ACTION_RE.search(sentence)
            if now is None:
                continue
            verb = now.group("verb").lower()
            tools = {t for t in self.catalogue if t == verb or t.split(" ")[0] == verb}
            if not tools and self.planned_action is not None and self.planned_action[1] == verb \
                    and verb not in FIND_VERBS:
                # A verb the agent itself said it would act on next: a tool it
                # knows, though this run never called it.
                tools = {verb}
            # The call may come just before the thought that names it, or
            # before the one before (models write "found it" then "now I take"),
            # or right after it (the thought announcing its own action).
            if tools and not (tools & set(self.recent_calls)) and not (tools & self.next_calls.get(step.index, set())) \
                    and not self._done_before(verb, sentence[now.end():]):
                self._break(step.index, "phantom_call", (
                    f"the {_what(step)} at step {step.index} says {_quote(now.group(0), 40)}, but no {verb} "
                    f"call was made since the agent last spoke: {_quote(sentence, 100)}"
                ), {"claim": sentence[:200], "verb": verb, "tools": sorted(tools)})
                return True
        return False

    def _made_up_call(self, step: Step, sentence: str) -> bool:
        """"I already searched [X]" with no search of X made; "I have already run
        it on the examples" with nothing run at all."""
        past = PAST_CALL_RE.search(sentence)
        if past is None or PLAN_RE.match(sentence.strip()):
            return False
        arg = CALLED_WITH_RE.match(past.group("rest"))
        if arg is not None:
            what = " ".join(next(g for g in arg.groups() if g).lower().split())
            if what in " ".join(self.acted_text.split()):
                return False
            why = f"no earlier call was made with {_quote(what, 60)}"
        elif self.ran is None:
            why = "no call was made before it"
        else:
            return False
        self._break(step.index, "phantom_call", (
            f"the {_what(step)} at step {step.index} says {_quote(past.group(0), 60)}, but {why}"
        ), {"claim": sentence[:200], "verb": past.group("verb").lower()})
        return True

    def _done_before(self, verb: str, rest: str) -> bool:
        """A result earlier in the run says it was done to the thing the
        sentence names ("You cool the potato 1" at step 16, "Now I cool a
        potato (1)" at step 23: a restatement, not a phantom)."""
        thing = next((w for w in tokens(rest) if w not in EN_STOP_WORDS and not w.isdigit()), "")
        stem = verb_stem(verb)
        return bool(thing) and len(stem) >= 3 and any(stem in t and thing in t for t in self.done_texts)

    @staticmethod
    def _found_nothing(last: _Obs) -> bool:
        """An empty answer of a read (``[]`` from a SELECT, no output from
        find): nothing found, which may be the answer. An empty result of an
        action ("Nothing happens." after "take") is its failure."""
        action = last.action
        if last.reading.status != "empty" or last.reading.form == "text" or action is None:
            return False  # "Could not find X" is a search that failed, not an empty answer
        return is_read_call(action.tool, action.args if action.args is not None else action.text)

    def _about_failed_call(self, sentence: str, last: _Obs) -> bool:
        """The sentence asserts something about what a failed read asked for
        (a command, a query or a function call; a failed text search is often
        followed by what the model knows, judged as a claim like any other)."""
        action = last.action
        if action is None or REASONING_RE.search(sentence):
            return False
        args = action.args if action.args is not None else action.text
        if not is_read_call(action.tool, args) or not (is_command(args) or isinstance(args, dict)):
            return False
        asked = {w for w in tokens(_args_text(last.action.args) or last.action.text or "")
                 if len(w) >= 3 and not w.isdigit() and w not in FILLER_WORDS}
        asked |= {i for i in extract(_args_text(last.action.args) or "").ids if "_" in i}
        said = set(tokens(sentence)) | extract(sentence).ids
        return bool(asked & said)

    @staticmethod
    def _reads_failed_call(sentence: str, last: _Obs | None) -> bool:
        """The sentence states what the call that just failed was asked for,
        as if it had answered ("Invalid Action" after Search[Tim Kaine], then
        "Tim Kaine is from Virginia"): a value it then plans to look up is
        still a claim, because the agent writes it as read."""
        if last is None or not last.failed or last.action is None or PLAN_RE.match(sentence.strip()):
            return False
        if REASONING_RE.search(sentence) or HEDGE_RE.search(sentence):
            return False
        asked = {w for w in tokens(_args_text(last.action.args) or last.action.text or "")
                 if len(w) >= 3 and not w.isdigit() and w not in FILLER_WORDS}
        return bool(asked & set(tokens(sentence)))

    def _completion(self, sentence: str) -> re.Match[str] | None:
        """An action reported as done: a verb of the common list ("has been
        cancelled"), or the verb a tool of this run is named after ("Your line
        has been refueled" when the run has refuel_data): the run's own tools
        say which actions there are."""
        m = COMPLETION_RE.search(sentence)
        if m is not None or not self.tool_verbs:
            return m
        low = sentence.lower()
        if not any(verb in low for verb in self.tool_verbs):
            return None  # cheap test first: no tool's verb in the sentence
        for m in ANY_COMPLETION_RE.finditer(sentence):
            if verb_stem(m.group("verb")) in self.tool_verbs:
                return m
        return None

    def _phantom(self, step: Step, sentence: str) -> bool:
        """An action reported as done that no call did."""
        m = self._completion(sentence)
        if m is None or NEGATED_RE.search(sentence) or not self.any_user_turn and not self.catalogue:
            return False
        stem = verb_stem(m.group("verb"))
        if len(stem) < 3:
            return False
        candidates = {t for t in self.catalogue if stem in t}
        verb = m.group("verb").lower()
        if any(stem in t for t in self.done_tools) or _said_done(stem, verb, self.done_texts):
            return False
        if any(stem in t for t in self.called_tools - self.done_tools):
            return False  # it was called and failed: "the code I executed" after its traceback is no phantom
        if self.writes_since_user and any(stem in text for text in self.done_texts):
            return False  # a write was made since the user spoke; its result may name it otherwise
        if _RECORD_HISTORY_RE.search(sentence[m.start():]):
            return False  # "was paid with your Mastercard": the record's history, not an action just done
        user_did = {_SWITCH_STEMS.get(x, x) for x in self.user_done}
        if _SWITCH_STEMS.get(stem, stem) in user_did and not _FIRST_PERSON_DONE_RE.match(m.group(0)):
            # The user reports having done it ("I went ahead and reset the APN
            # settings"); "I've enabled roaming" is the agent's own claim,
            # which only its own call backs.
            return False
        if candidates:
            why = f"no call of {', '.join(sorted(candidates)[:3])} was made before it"
        elif self.any_user_turn and self.writes_since_user == 0:
            why = (
                "no tool was called since the user's last turn" if self.calls_since_user == 0
                else "only lookups were made since the user's last turn"
            )
        else:
            return False
        self._break(step.index, "phantom_call", (
            f"the {_what(step)} at step {step.index} reports {_quote(m.group(0), 60)} as done, but {why}: "
            f"{_quote(sentence, 100)}"
        ), {"claim": sentence[:200], "verb": m.group("verb"), "tools": sorted(candidates)[:5]})
        return True

    def _named_record_slip(self, step: Step, text: str) -> bool:
        """A record named by its id (or the user's own thing) with another's
        label or values, or a thing placed in a record it is not part of:
        judged in plans and questions too."""
        if not self.records.latest:
            return False
        header = ""  # the line ending in ":" that a list under it belongs to
        for sentence in split_sentences(text):
            listed = bool(header) and _LIST_MARK_RE.match(sentence) is not None
            slip = self.records.labelled_id(sentence) or self.records.owned_line(sentence)
            if slip is not None:
                self._record_break(step, slip, sentence)
                return True
            slip = self.records.foreign_member(sentence)
            if slip is not None:
                self._break(step.index, "wrong_record", (
                    f"the {_what(step)} at step {step.index} places {slip['said']} in {slip['record']}, whose lines "
                    f"are {slip['own']} (result at step {slip['step']}); it is {slip['belongs_to']}'s: "
                    f"{_quote(sentence, 100)}"
                ), {**slip, "claim": sentence[:200]})
                return True
            slip = self.records.listed_member(header, sentence) if listed else None
            if slip is not None:
                self._record_break(step, slip, sentence)
                return True
            header = sentence if sentence.endswith(":") else header if listed else ""
        return False

    def _record_slip(self, step: Step, sentence: str, before: str = "") -> bool:
        # "The status is now X, and you will receive an email": a clause that
        # states a record's state is judged even when another one proposes.
        proposal = all(PROPOSAL_RE.search(clause) for clause in _CLAUSE_SPLIT_RE.split(sentence))
        slip = self.records.check(sentence, proposal=proposal, before=before)
        if slip is None:
            return False
        if slip["slip"] == "stale":
            self._break(step.index, "stale_value", (
                f"the {_what(step)} at step {step.index} says {slip['field']} of {slip['record']} is "
                f"“{slip['said']}”, but the result at step {slip['step']} shows it is now “{slip['current']}”: "
                f"{_quote(sentence, 100)}"
            ), {**slip, "claim": sentence[:200]})
        else:
            self._record_break(step, slip, sentence)
        return True

    def _record_break(self, step: Step, slip: dict[str, Any], sentence: str) -> None:
        # Values are matched lower-cased; the reason quotes the words as written ("T-Shirt").
        written = re.search(re.escape(slip["said"]), sentence, re.IGNORECASE)
        said = written.group(0) if written else slip["said"]
        self._break(step.index, "wrong_record", (
            f"the {_what(step)} at step {step.index} gives {slip['record']} the {slip['field']} "
            f"“{said}”, which belongs to {slip['belongs_to']}; {slip['record']} has “{slip['own']}” "
            f"(result at step {slip['step']}): {_quote(sentence, 100)}"
        ), {**slip, "claim": sentence[:200]})

    def _final(self, step: Step, text: str, code: bool) -> None:
        if step.kind == "final":
            self._check_click(step)
            self._check_resubmission(step)
            self.submissions.append(_Call(step=step, tool=(step.tool or "").lower(), toks=frozenset(), sal=Salient()))
        answer = text.strip()
        flag = FLAG_RE.search(answer)
        if flag is not None and not code:
            self._check_flag(step, flag.group(0))
            return
        if not code and answer and self._against_conclusion(step, answer):
            return
        if code or not answer or LABEL_RE.match(answer.strip("#* ")) or PROTOCOL_FINAL_RE.match(answer):
            return
        if any(b.step == step.index for b in self.breaks):
            return
        if self._record_slip(step, answer) or self._after_failure(step, answer, self.last):
            return
        self._check_final(step, answer)
        first = self.turn_first if self.turn_first is not None else step.index
        if not any(b.step >= first for b in self.breaks):
            self._check_relation(step, text)

    def _against_conclusion(self, step: Step, answer: str) -> bool:
        """A final answer other than the one the thought just before it concluded."""
        if not self.turn_thoughts:
            return False
        at, thought = self.turn_thoughts[-1]
        concluded = against(thought, answer)
        if concluded is None:
            return False
        self._break(step.index, "against_conclusion", (
            f"the final answer at step {step.index} ({_quote(answer, 60)}) is not what the thought at step {at} "
            f"concluded ({_quote(concluded, 80)})"
        ), {"claim": answer[:200], "concluded": concluded[:200], "thought_step": at})
        return True

    def _check_flag(self, step: Step, flag: str) -> None:
        inner = FLAG_RE.match(flag).group(1).lower()
        if flag.lower() in self.flags_seen or inner in self.flag_text:
            return  # printed whole, or its content printed (a password in the source)
        chunks = [c for c in re.split(r"[_\W]+", inner) if len(c) >= 4]
        if chunks and all(c in self.flag_text for c in chunks):
            return  # printed in pieces ("part 2/3: …")
        if re.fullmatch(r"[0-9a-f]{1,16}", inner) and re.search(
            rf"(?<![\w.]){int(inner, 16)}(?![\w.])", self.flag_text
        ):
            return  # a printed integer written in hex, as the flag format asks ("48" -> 00000030)
        squeezed = re.sub(r"[\W_]+", "", inner)
        if len(squeezed) >= 8 and squeezed in re.sub(r"[\W_]+", "", self.flag_text):
            return  # spelt out letter by letter (ASCII art, "( p ) ( i ) ( c ) …")
        self._break(step.index, "unsupported_claim", (
            f"the final answer at step {step.index} submits {_quote(flag, 60)}, which no result printed"
        ), {"claim": flag[:200], "missing": [flag[:80]]})

    def _check_final(self, step: Step, answer: str) -> None:
        sal = extract(answer)
        missing = _unsupported_units(sal, self.evidence, answer)
        content = [t for t in tokens(answer) if not t.isdigit() and t not in FILLER_WORDS]
        if not is_cjk(answer) and content:
            seen = sum(1 for t in content if self.evidence.word_supported(t))
            if seen / len(content) < FINAL_SUPPORT_MIN:
                extra = [t for t in content if not self.evidence.word_supported(t) and t not in missing]
                missing = missing + extra
        if not missing:
            return
        if any(f.step >= (self.turn_first if self.turn_first is not None else step.index) for f in self.findings):
            return  # the thought that states it was recorded as answered from memory
        # The answer usually restates the thought just before it: the break is
        # where the unobserved content first appeared in this turn.
        wanted = {w for u in missing for w in tokens(u)}
        flagged = {b.step for b in self.breaks}
        names_only = all(not u[:1].isdigit() and not any(c.isdigit() for c in u) for u in missing)
        for index, thought in self.turn_thoughts:
            if index not in flagged and wanted & set(tokens(thought)):
                shown = ", ".join(_surface(u, answer) for u in missing[:3])
                ev = {"claim": thought[:200], "missing": missing[:5], "final_step": step.index}
                if names_only and wanted <= set(tokens(thought)) and not self._spoken_to(thought, wanted):
                    self.findings.append(Break(step=index, pattern="answered_from_memory", reason=(
                        f"the thought at step {index} states {shown}, which no observation (nor the task) contains, "
                        f"and the final answer at step {step.index} ({_quote(answer, 60)}) gives it: it comes from "
                        f"the model's own knowledge, not from the trace"
                    ), evidence=ev))
                    return
                reason = (
                    f"the thought at step {index} asserts {shown}, which no observation (nor the task) contains, "
                    f"and the final answer at step {step.index} ({_quote(answer, 60)}) rests on it"
                )
                self._break(index, "unsupported_claim", reason, ev)
                return
        self._claim_break(step, "final answer", answer, missing, None)

    def _invented_identifier(self, step: Step, text: str) -> bool:
        """An identifier no evidence holds ("the `cars_data` table", "order
        W123X"), even in a plan: a name can be recalled, a table name or a
        record id has to have been read somewhere."""
        for sentence in split_sentences(text):
            if sentence.rstrip().endswith(("?", "？")) or EXAMPLE_RE.search(sentence) or NEGATED_RE.search(sentence):
                continue
            if _CALL_SYNTAX_RE.search(sentence) or _ASSIGNMENT_RE.search(sentence):
                continue  # code the agent writes out: it names what it defines
            # Sorted, not in set order: the reason names the first three.
            defined = defined_names(sentence)  # the agent's own name for a value ("so arr_h is 11")
            ids = [i for i in sorted(extract(sentence).ids) if _IDENTIFIER_LIKE_RE.match(i) and i not in defined]
            missing = [i for i in ids if not self.evidence.id_supported(i)]
            plan = PLAN_RE.match(_LIST_MARK_RE.sub("", sentence.strip()))
            if not plan and self.seen_observation and not _WONDER_RE.search(sentence):
                # "The conductor table has a Nationality field" after DESC
                # listed its columns: a column is a name that was read.
                missing += [c for c in _column_names(sentence) if not self._column_known(c) and c not in missing]
                missing += self._unread_names(step, sentence, missing)
            if missing and plan and not self.seen_observation and self.unmade_lookup is None:
                continue  # before it has looked at anything, a plan can only guess
            if missing and plan and self.unmade_lookup is not None and self._unmade_lookup_break(
                    step, sentence, missing):
                return True  # "what tables are there?" was never asked, yet it names one
            if missing and plan:
                # A plan may name what its next call creates (a variable, a
                # file) or the program it runs; only what a read looks up had
                # to be read before.
                missing = [i for i in missing if i in self.looked_up.get(step.index, ())]
            if missing:
                self._claim_break(step, _what(step), sentence, missing, self.judged)
                return True
        return False

    # -- code and shell runs (tracing.anchoring.execution) ------------------------
    def _unrun_outcome(self, step: Step, text: str) -> bool:
        """The previous statement said what comes next; this one reports how
        the run went, and no call was made nor result came back between."""
        if self.ran is None or self.results_since_statement or self.calls_since_statement \
                or self.told_since_statement or not self.turn_thoughts:
            return False
        before, said = self.turn_thoughts[-1]
        plan = plan_sentence(said)
        claim = next((x for x in split_sentences(text) if reports_outcome(x)), None) if plan else None
        if claim is None:
            return False
        self._break(step.index, "phantom_call", (
            f"at step {before} the agent says what it does next ({_quote(plan or '', 80)}), but no call was made and "
            f"no result came back since; the {_what(step)} at step {step.index} reports how it went: {_quote(claim, 100)}"
        ), {"plan_step": before, "plan": (plan or "")[:200], "claim": claim[:200]})
        return True

    def _silent_output(self, step: Step, sentence: str, last: _Obs | None) -> bool:
        """Right after a run that printed nothing, a claim of what it printed."""
        if last is None or last.failed or not self.results_since_statement or last.action is None:
            return False
        reading = last.reading
        if reading.form != "empty" and not (reading.status == "empty" and reading.data in ([], (), {}, "")):
            return False
        code = _args_text(last.action.args) or last.action.text or ""
        asserts, prints = code_checks(code)
        if not claims_output(sentence, asserts=asserts, prints=prints):
            return False
        shown = (last.step.text or "").strip() or "(no output)"
        self._break(step.index, "unconfirmed_success", (
            f"the run at step {last.action.index} gave no output (result at step {last.step.index}: "
            f"{_quote(shown, 60)}); the {_what(step)} at step {step.index} says what it showed: {_quote(sentence, 100)}"
        ), {"observation_step": last.step.index, "observation": _quote(shown, 120), "claim": sentence[:200]})
        return True

    def _unread_names(self, step: Step, sentence: str, missing: list[str]) -> list[str]:
        """Table, column and file names the sentence asserts about that no
        evidence spells (a guess the next call tries, and fails, is exploration)."""
        names = [n for n in schema_names(sentence) if n not in missing and not self._name_known(n)]
        if names:
            tried = next_try(self.steps, step.index)
            if tried is not None and is_failure(tried[1], tried[0].args if tried[0].args is not None else tried[0].text):
                call = (_args_text(tried[0].args) or tried[0].text or "").lower()
                names = [n for n in names if not name_seen(n, call)]
        return names

    def _name_known(self, name: str) -> bool:
        low = name.lower()
        if low in self.evidence.words or self.evidence.id_supported(low):
            return True
        return name_seen(low, self.flag_text) or name_seen(low, self.acted_text)

    def _hold(self, call: _Call) -> None:
        text = _args_text(call.step.args) or call.step.text or ""
        if (tokens(call.tool or text) or ("",))[0] in HOLD_VERBS:
            # The object is what is named before "from", not the place.
            self.held |= extract(re.split(r"\s+from\s+", text, maxsplit=1, flags=re.I)[0]).ids

    def _column_known(self, name: str) -> bool:
        low = name.lower()
        return low in self.evidence.words or self.evidence.id_supported(low)

    def _unmade_lookup_break(self, step: Step, sentence: str, missing: list[str]) -> bool:
        if self.unmade_lookup is None or is_reply(step):
            return False
        planned_at, plan = self.unmade_lookup
        shown = ", ".join(_surface(u, sentence) for u in missing[:3])
        self._break(step.index, "phantom_call", (
            f"the thought at step {planned_at} planned a lookup ({_quote(plan, 80)}) that was never made; "
            f"the {_what(step)} at step {step.index} states {shown} as if it had been read"
        ), {"claim": sentence[:200], "missing": missing[:5], "plan_step": planned_at})
        return True

    def _before_looking(self, step: Step, text: str) -> None:
        """Before the first observation a thought can only plan from the task;
        but one that states facts right after planning the lookup that would
        give them acts as if the lookup had been made."""
        if self.unmade_lookup is not None:
            for sentence in _claim_sentences(text):
                missing = _unsupported_units(extract(sentence), self.evidence, sentence)
                if missing and self._unmade_lookup_break(step, sentence, missing):
                    return
        self._note_lookup_plan(step, text)

    def _note_lookup_plan(self, step: Step, text: str) -> None:
        plan = next((x for x in split_sentences(text) if LOOKUP_PLAN_RE.search(x)), None)
        if plan:
            self.unmade_lookup = (step.index, plan)

    def _from_memory(self, step: Step, sentence: str, missing: list[str]) -> bool:
        """A thought of the final turn stating the answer from the model's own
        knowledge (names only, no page speaking to it): a finding, not a break."""
        answer = self.answers.get(step.index)
        if answer is None or any(any(c.isdigit() for c in u) for u in missing):
            return False
        wanted = {w for u in missing for w in tokens(u)}
        answer_words = set(tokens(answer))
        # The thought states the answer (and maybe the bridge it recalled).
        if (
            not any(set(tokens(u)) <= answer_words for u in missing)
            or ATTRIBUTION_RE.search(sentence)
            or self._spoken_to(sentence, wanted)
        ):
            return False
        shown = ", ".join(_surface(u, sentence) for u in missing[:3])
        self.findings.append(Break(step=step.index, pattern="answered_from_memory", reason=(
            f"the thought at step {step.index} states {shown}, which no observation (nor the task) contains, and the "
            f"final answer ({_quote(answer, 60)}) gives it: it comes from the model's own knowledge, not from the trace"
        ), evidence={"claim": sentence[:200], "missing": missing[:5]}))
        return True

    def _spoken_to(self, claim: str, missing_words: set[str]) -> bool:
        """Some observation sentence speaks to this claim: it names the claim's
        subject and its relation ("Wang Guowei … born … in Hangzhou" against
        "born in Haiyan") and so holds a competing answer."""
        sal = extract(claim)
        if is_cjk(claim):
            # No capitals: the claim's bigrams outside the unobserved name.
            context = {b for b in sal.cjk if not any(b in m for m in missing_words)}
            return any(len(context & set(tokens(s))) >= 2 for _, t in self.observed[-50:]
                       for s in split_sentences(t[:20_000])[:400])
        subject = {w for e in sal.entities for w in e if w not in missing_words}
        subject |= {w.lower() for w in re.findall(r"\b[A-Z][a-z]+", claim)} - missing_words - FILLER_WORDS
        # The question's own subject stands in for "he", "the author", "it".
        subject |= self.task_names
        subject -= EN_STOP_WORDS
        relation = {t for t in sal.terms if t not in missing_words and t not in subject}
        if not subject or not relation:
            return False
        for _, text in self.observed[-50:]:
            for sentence in split_sentences(text[:20_000])[:400]:
                words = set(tokens(sentence))
                if subject & words and relation & words:
                    return True
        return False

    def _check_relation(self, step: Step, text: str) -> None:
        answer = step.args if isinstance(step.args, str) and step.args.strip() else text
        if isinstance(step.args, dict) and len(step.args) == 1:
            answer = str(next(iter(step.args.values())))
        slip = wrong_relation(self.task, answer, self.observed)
        if slip is None:
            return
        # The slip happened where the reasoning first took the value up.
        needle = answer.strip().lower()
        at = next((i for i, thought in self.turn_thoughts if needle and needle in thought.lower()), step.index)
        who = f"the thought at step {at}" if at != step.index else f"the final answer at step {step.index}"
        reason = (
            f"the observation at step {slip['observation']} ties {', '.join(slip['cues'])} to {slip['rival']} "
            f"({_quote(slip['other_sentence'], 90)}); {who} takes {_quote(answer.strip(), 40)} from "
            f"{_quote(slip['answer_sentence'], 90)}, which says nothing about it"
        )
        self._break(at, "wrong_relation", reason, {**slip, "final_step": step.index})

    def _claim_break(self, step: Step, what: str, sentence: str, missing: list[str], last: _Obs | None) -> None:
        shown = ", ".join(_surface(u, sentence) for u in missing[:3])
        reason = f"the {what} at step {step.index} uses {shown}, which no observation (nor the task) contains"
        ev: dict[str, Any] = {"claim": sentence[:200], "missing": missing[:5]}
        if ATTRIBUTION_RE.search(sentence):
            ev["cited"] = True  # "the page says …": the agent names its source, which lacks the value
        if last is not None and last.step.text:
            quoted = _best_sentence(last.step.text, extract(sentence))
            if quoted:
                reason = (
                    f"the observation at step {last.step.index} says {_quote(quoted, 100)}; "
                    f"the {what} at step {step.index} uses {shown}, which no observation (nor the task) contains"
                )
                ev["observation_step"] = last.step.index
                ev["observation"] = _quote(quoted, 160)
        self._break(step.index, "unsupported_claim", reason, ev)

    # -- turns ---------------------------------------------------------------
    def close_turn(self) -> None:
        last = self.judged
        if last is None or self.turn_first is None or self.turn_ack or len(self.turn_units) < IGNORED_MIN_TURN_UNITS:
            return
        action = last.action
        if last.reading.form != "text" or (
            action is not None
            and (
                is_command(action.args)
                or isinstance(action.args, dict)  # a function call: its result is data, not a page to quote
                or len(action_key(action.tool, action.args)[1]) > IGNORED_MAX_QUERY_TOKENS
            )
        ):
            return  # structured data and program output: uptake is not word overlap
        informative = not last.failed and last.relevant and len(last.new_units) >= MIN_INFORMATIVE_NEW_UNITS
        if not (last.off_query or informative):
            return
        if self.sem is not None:
            turn_text = " ".join(self.turn_texts)[:2000]
            if self.sem.similarity(turn_text, (last.step.text or "")[:2000]) >= self.sem.used_min:
                return
        # Any unit counts as use here, the echo of the query included: a turn
        # that builds on the page it asked for has not ignored it.
        elif len(self.turn_units & last.sal.units) > IGNORED_MAX_UPTAKE:
            return
        if last.off_query:
            # The result is about something else than what was asked, and the
            # agent carries on as if it had answered.
            topic = sorted(u[2:] for u in last.sal.strong_units)[:3]
            asked = sorted(u[2:] for u in last.query_units if not u.startswith("n:"))[:3]
            reason = (
                f"the observation at step {last.step.index} ({_quote(last.step.text or '', 80)}) is not "
                f"about what was asked ({', '.join(asked)}); step {self.turn_first} carries on without "
                f"using it or saying so"
            )
            ev: dict[str, Any] = {"asked": asked, "observation_units": topic}
        else:
            sample = sorted(u[2:] for u in last.new_units if not u.startswith("t:"))[:5]
            reason = (
                f"the observation at step {last.step.index} brought new facts ({', '.join(sample)}); "
                f"the next step ({self.turn_first}) uses none of them and does not say why"
            )
            ev = {"new_units": sample}
        ev.update(observation_step=last.step.index, observation=_quote(last.step.text or ""))
        self._break(self.turn_first, "ignored_observation", reason, ev)

    def _break(self, step: int, pattern: str, reason: str, evidence: dict[str, Any]) -> None:
        self.breaks.append(Break(step=step, pattern=pattern, reason=reason, evidence=evidence))

    def _slip(self, brk: Break) -> bool:
        """Whether ``brk`` is a slip (a finding, not a break); noted in findings if so."""
        where = caught(self.steps, brk.pattern, brk.step, brk.evidence,
                       lambda result, call: is_failure(result, call.args), _asserting_sentences)
        if where is None:
            return False
        if any(f.pattern == "slip" and f.step == brk.step for f in self.findings):
            return True  # two patterns on one lapse: one finding
        result = next(s for s in self.steps if s.index == where["refuted_at"])
        reason = (
            f"{brk.reason}; the result at step {where['refuted_at']} ({_quote(result.text or '(empty)', 60)}) "
            f"refuted it at once and the agent did not use {', '.join(where['values'])} again"
        )
        self.findings.append(Break(step=brk.step, pattern="slip", reason=reason,
                                   evidence={**brk.evidence, "lapse": brk.pattern, **where}))
        return True

    def report(self, demoted: frozenset[str] = frozenset(), promoted: frozenset[str] = frozenset()) -> AnchorReport:
        if self.pending_move is not None:  # the run ended at the revisited place, doing nothing there
            index, reason, evidence = self.pending_move
            self._break(index, "requery", reason, evidence)
            self.pending_move = None
        breaks = sorted(self.breaks, key=lambda b: (b.step, _PRIORITY[b.pattern]))
        breaks = [b for b in breaks if not self._slip(b)]
        for brk in breaks:
            row = evidence_of(brk.pattern, cited=bool(brk.evidence.get("cited")), probe=bool(brk.evidence.get("probe")))
            brk.evidence_kind, brk.confidence = row.kind, row.confidence
            strength = STRONG if brk.pattern in promoted else row.strength
            brk.strength = STRONG if is_shown(brk.pattern, strength, demoted) else WEAK
        self.findings.sort(key=lambda f: f.step)
        shown = [b for b in breaks if b.strength == STRONG]
        if not shown:
            return AnchorReport(first_break=None, reason="", evidence={}, scores=self.scores, breaks=breaks,
                                findings=self.findings)
        first = shown[0]
        ev = {"pattern": first.pattern, "step": first.step, "strength": first.strength,
              "evidence_kind": first.evidence_kind, "confidence": first.confidence, **first.evidence}
        return AnchorReport(first_break=first.step, reason=first.reason, evidence=ev, scores=self.scores,
                            breaks=breaks, findings=self.findings)


def _content_words(sal: Salient) -> set[str]:
    words = set(sal.terms) | sal.cjk
    words.update(w for e in sal.entities for w in e)
    words.update(i.split(" ")[0] for i in sal.ids)
    return words


def _planned_calls(steps: Sequence[Step]) -> dict[int, Salient]:
    """For each thought, the salient units of the calls it goes on to make in
    the same turn (until the next observation): what it plans, it may name."""
    out: dict[int, Salient] = {}
    waiting: list[int] = []
    for step in steps:
        if step.kind == "thought":
            waiting.append(step.index)
        elif step.kind == "observation":
            waiting = []
        elif step.kind == "action" and waiting and not is_reply(step) and not _is_final(step):
            sal = extract(_args_text(step.args) or step.text or "")
            for index in waiting:
                out[index] = sal
    return out


def _final_answers(steps: Sequence[Step]) -> dict[int, str]:
    """For each thought of a run's final turn, the final answer that follows it."""
    out: dict[int, str] = {}
    waiting: list[int] = []
    for step in steps:
        if step.kind == "thought":
            waiting.append(step.index)
        elif step.kind == "observation":
            waiting = []
        elif _is_final(step):
            for index in waiting:
                out[index] = _step_text(step)
            waiting = []
    return out


def _next_calls(steps: Sequence[Step], ahead: int = 2) -> dict[int, set[str]]:
    """For each thought, the tools of the next ``ahead`` calls after it."""
    out: dict[int, set[str]] = {}
    waiting: list[tuple[int, int]] = []  # (thought index, calls still to collect)
    for step in steps:
        if step.kind == "thought":
            waiting.append((step.index, ahead))
        elif step.kind == "action" and not is_reply(step):
            tool = (step.tool or "").strip().lower()
            still = []
            for index, left in waiting:
                out.setdefault(index, set()).add(tool)
                if left > 1:
                    still.append((index, left - 1))
            waiting = still
    return out


_PROGRAM_RE = re.compile(
    r"(?:^\s*(?:[A-Za-z_]\w*\[)?|[|;&]\s*|\$\(\s*|-exec(?:dir)?\s+|\bxargs\s+(?:-\S+\s+)*|\bsudo\s+)([\w.-]+)"
)


def _looked_up(steps: Sequence[Step]) -> dict[int, set[str]]:
    """For each thought, the identifiers its next read looks up: the
    arguments of a read call, minus the program it runs."""
    out: dict[int, set[str]] = {}
    waiting: list[int] = []
    for step in steps:
        if step.kind == "thought":
            waiting.append(step.index)
        elif step.kind == "observation":
            waiting = []
        elif step.kind == "action" and waiting and not is_reply(step):
            args = step.args if step.args is not None else step.text
            if is_read_call(step.tool, args):
                text = _args_text(args) or step.text or ""
                ids = set(extract(text).ids)
                # Programs a pipeline runs are tools, not what it looks up
                # ("find … -exec md5sum {} +", "… | sha256sum").
                for program in _PROGRAM_RE.finditer(text):
                    ids.discard(program.group(1).lower())
                for index in waiting:
                    out.setdefault(index, set()).update(ids)
            waiting = []
    return out


def _in_plan(unit: str, planned: Salient) -> bool:
    if unit in planned.numbers or unit in planned.ids:
        return True
    words = unit.split(" ")
    return all(w in planned.words for w in words)


def _normal(step: Step) -> str:
    """A submission's content, up to white space: what "the same solution" means."""
    return " ".join(_step_text(step).split())


def _tool_names(context: dict[str, Any] | None, steps: Sequence[Step]) -> frozenset[str]:
    """Tools the run knows of: from the context's schemas and every call made."""
    names = {(s.tool or "").strip().lower() for s in steps if s.kind == "action" and s.tool}
    for schema in (context or {}).get("tools") or []:
        if isinstance(schema, dict):
            fn = schema.get("function") if isinstance(schema.get("function"), dict) else schema
            name = fn.get("name")
            if isinstance(name, str):
                names.add(name.strip().lower())
    return frozenset(n for n in names if n and n not in REPLY_TOOLS and n not in FINISH_TOOLS)
