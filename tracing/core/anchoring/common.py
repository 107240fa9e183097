"""What every rule shares: the break a rule returns, how a step's text is read,
how it splits into sentences that assert something, and how values are quoted.

Pure functions over text and steps; the run's memory is ``tracing.core.anchoring.state``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tracing.core.anchoring.evidence import Evidence, dates_in, defined_names
from tracing.core.anchoring.phrases import FAILURE_RE, HEDGE_RE, PLAN_RE
from tracing.core.anchoring.salience import Salient, normalize_number
from tracing.core.anchoring.strength import STRONG
from tracing.core.normalize import tokens
from tracing.core.results import Reading, read_result
from tracing.core.steps import Step, is_reply
from tracing.core.tokenizer import split_sentences

# Numbers up to this are counts, ordinals and list positions ("the 3 results",
# "step 2"), derivable by counting what was seen: not claims on their own.
SMALL_NUMBER = 12

# A failure message is short or says so at its start; past this many
# characters "error" is more likely page content ("Type I error is ...").
FAILURE_PREFIX_CHARS = 80

FINISH_TOOLS = frozenset(["finish", "final_answer", "answer", "final", "submit", "solution"])


@dataclass
class Break:
    step: int
    pattern: str  # one of report.PATTERNS (or report.FINDINGS for a finding)
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)
    # tracing.core.anchoring.strength: a strong break can be the run's shown break,
    # a weak one is a finding worth a look.
    strength: str = STRONG
    evidence_kind: str = ""
    confidence: float = 0.0


def quote(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return f"“{text[:limit]}…”" if len(text) > limit else f"“{text}”"


def args_text(args: Any) -> str:
    if isinstance(args, str):
        return args
    if isinstance(args, dict):
        for key in ("content", "message", "text", "answer", "response"):
            if isinstance(args.get(key), str):
                return args[key]
        return " ".join(str(v) for v in args.values() if isinstance(v, (str, int, float)))
    return ""


def call_text(step: Step) -> str:
    """A call's argument text, or the step's text when it passes none."""
    return args_text(step.args) or step.text or ""


def step_text(step: Step) -> str:
    """What the agent wrote: thought text, a reply's message, or the action's arguments."""
    if step.kind == "thought":
        return step.text or ""
    text = args_text(step.args)
    return text if text.strip() else (step.text or "")


def raw_args(step: Step) -> Any:
    """The arguments as the call gave them, or its text when it has none."""
    return step.args if step.args is not None else step.text


def normal(step: Step) -> str:
    """A submission's content, up to white space: what "the same solution" means."""
    return " ".join(step_text(step).split())


def no_arguments(step: Step) -> bool:
    """An action that passes nothing: its tool's name alone, or empty arguments."""
    args = step.args
    if isinstance(args, dict | list):
        return not any(v not in (None, "", [], {}) for v in (args.values() if isinstance(args, dict) else args))
    text = (args if isinstance(args, str) else "") or ""
    if not text.strip():
        text = step.text or ""
    return not text.strip() or " ".join(text.lower().split()) == (step.tool or "").strip().lower()


def is_final(step: Step) -> bool:
    return step.kind == "final" or (step.kind == "action" and (step.tool or "").strip().lower() in FINISH_TOOLS)


def what(step: Step) -> str:
    if step.kind == "final":
        return "final answer"
    if is_reply(step):
        return "reply"
    return step.kind


# Lines that make a text a program rather than prose.
_CODE_LINE_RE = re.compile(
    r"^\s*(?:def |class |import |from \w+ import |return\b|for .+:|while .+:|if .+:|elif |else:|try:|except\b|"
    r"print\(|assert |\w+\s*=[^=]|\w+\(.*\)\s*$|[{}]\s*$|#include|function |const |let |var |SELECT |INSERT |UPDATE )",
    re.IGNORECASE,
)


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
    result (``tracing.core.results``), a rejected answer, or a generic message."""
    return failed(step, read_result(step.text, step.meta, action_args, step.tool))


def failed(step: Step, reading: Reading) -> bool:
    if reading.rejected or reading.status in ("error", "empty", "timeout"):
        return not reading.silent
    if reading.form != "text":
        return False
    text = (step.text or "").strip()
    return bool(FAILURE_RE.search(text[:FAILURE_PREFIX_CHARS].lower()))


def small(number: str) -> bool:
    try:
        value = float(number)
    except ValueError:
        return False
    return value.is_integer() and 0 <= value <= SMALL_NUMBER


def unsupported_units(
    sal: Salient, evidence: Evidence, text: str = "", statement_numbers: set[str] | None = None
) -> list[str]:
    """Numbers, ids, dates, names and CJK names in ``sal`` that the evidence lacks.
    ``statement_numbers``: the numbers of the whole thought or reply, which
    may total or subtract one another."""
    missing: list[str] = []
    id_numbers = {i.rsplit(" ", 1)[-1] for i in sal.ids if " " in i}
    for number in sorted(sal.numbers):
        if number in id_numbers or small(number):
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


# --- sentences --------------------------------------------------------------

# Clause boundaries inside a sentence: a hedge or a plan in one clause ("...,
# so his family was probably architects") must not hide a claim in another.
CLAUSE_RE = re.compile(
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
LIST_MARK_RE = re.compile(r"^(?:\d{1,2}[.)]|[-•*–·])\s*")
# A line of code in a reply ("grant_app_permission(app_name='messaging')").
CALL_SYNTAX_RE = re.compile(r"\b\w+\([^()]*\)")
# Wondering, not asserting: "check if the table has a Country column".
WONDER_RE = re.compile(r"\b(?:if|whether)\b", re.IGNORECASE)
# "Now I find an apple (0)": a count of none.
NONE_COUNT_RE = re.compile(r"\(\s*0\s*\)")
# A column or field named as such: "the `Horsepower` column", "a Nationality
# field", "column Hometown".
_COLUMN_RE = re.compile(
    r"`(\w+)`\s+(?:column|field)s?\b|\b([A-Z]\w*|\w*_\w*)\s+(?:column|field)s?\b|\b(?:column|field)\s+`?([A-Z]\w*|\w*_\w*)`?"
)


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "？"))


def not_a_claim(sentence: str) -> bool:
    """A whole sentence that plans, hedges or instructs: none of its clauses
    asserts anything ("I can use grep to list the files that contain foo")."""
    head = LIST_MARK_RE.sub("", sentence.strip())
    return bool(PLAN_RE.match(head) or INSTRUCTION_RE.match(head) or is_heading(head))


# A heading or a status line is form, not a claim: a Markdown heading, or a
# few capitalised words closed by a colon or an exclamation mark ("Task
# Completed!", "Next Steps:"). A bare "Wang Guowei." is an answer, not a heading.
HEADING_MAX_WORDS = 5
_HEADING_RE = re.compile(
    rf"^(?:#{{1,6}}\s+.{{1,80}}|(?:[A-Z][\w'’-]*\s+){{1,{HEADING_MAX_WORDS - 1}}}[A-Z][\w'’-]*\s*[!:])$"
)


def is_heading(text: str) -> bool:
    return bool(_HEADING_RE.match(text.strip().strip("*_")))


def asserting_sentences(text: str) -> list[str]:
    """Sentences that are not questions, plans or instructions (hedged ones included)."""
    return [LIST_MARK_RE.sub("", x.strip()) for x in split_sentences(text) if not is_question(x) and not not_a_claim(x)]


def claim_sentences(text: str) -> list[str]:
    """The clauses that assert something: no question, example, plan, hedge,
    instruction or call written out for the user to run."""
    out = []
    for sentence in split_sentences(text):
        if is_question(sentence) or EXAMPLE_RE.search(sentence) or not_a_claim(sentence):
            continue
        for clause in CLAUSE_RE.split(sentence):
            clause = LIST_MARK_RE.sub("", clause.strip())
            if CALL_SYNTAX_RE.search(clause) and ("_" in clause or "=" in clause):
                continue  # a call written out for the user to run, not a claim
            if clause and not PLAN_RE.match(clause) and not HEDGE_RE.search(clause) and not INSTRUCTION_RE.match(clause):
                out.append(clause)
    return out


def instructions(text: str) -> list[str]:
    """Sentences that tell the user what to do (not plans, questions or examples)."""
    out = []
    for sentence in split_sentences(text):
        head = LIST_MARK_RE.sub("", sentence.strip())
        if INSTRUCTION_RE.match(head) and not is_question(sentence) and not EXAMPLE_RE.search(sentence):
            out.append(head)
    return out


def label_blocks(text: str) -> list[str]:
    """A line ending in ":" with the short unmarked lines it introduces
    ("updated to:" + an address over three lines): one statement about a record."""
    out: list[str] = []
    pending: list[str] = []
    for sentence in split_sentences(text):
        if pending and len(pending) <= 4 and len(sentence) <= 80 and not sentence.endswith(":") \
                and not LIST_MARK_RE.match(sentence):
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


def best_sentence(text: str, probe: Salient) -> str:
    """The observation sentence sharing most with ``probe`` (for the reason text)."""
    best, best_hits = "", -1
    probe_words = probe.words
    for sentence in split_sentences(text)[:200]:
        hits = len(set(tokens(sentence)) & probe_words)
        if hits > best_hits:
            best, best_hits = sentence, hits
    return best


def surface(unit: str, sentence: str) -> str:
    """The unit as the agent wrote it ("Haiyan", not "haiyan"; "7,500", not "7500")."""
    if unit[:1].isdigit():
        for found in re.finditer(r"\d[\d,.]*(?:st|nd|rd|th|s)?", sentence):
            if normalize_number(found.group(0).rstrip(".,")) == unit:
                return found.group(0).rstrip(".,")
        return unit
    m = re.search(re.escape(unit).replace(r"\ ", r"[\s\-]+"), sentence, re.IGNORECASE)
    return m.group(0) if m else unit


def shown(units: list[str], sentence: str) -> str:
    """The first three units as the sentence writes them, for a reason."""
    return ", ".join(surface(u, sentence) for u in units[:3])


def column_names(sentence: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _COLUMN_RE.finditer(sentence)]


def names_id(text: str, ident: str) -> bool:
    """Whether ``text`` (lower case, '#' removed) names the record id ``ident`` as a whole word."""
    return re.search(rf"(?<![\w#]){re.escape(ident.lstrip('#'))}\b", text) is not None


def sentence_words(sentence: str) -> set[str]:
    words = re.findall(r"[\w][\w.-]*[\w]|\w", sentence.lower())
    return set(words) | {" ".join(p) for p in zip(words, words[1:], strict=False)}


def content_words(sal: Salient) -> set[str]:
    words = set(sal.terms) | sal.cjk
    words.update(w for e in sal.entities for w in e)
    words.update(i.split(" ")[0] for i in sal.ids)
    return words
