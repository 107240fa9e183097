"""unsupported_claim: a number, id, date or name asserted that no evidence
contains and no arithmetic over it gives.

Agents fill gaps: a birth year the page never gave, a table named from the
question rather than the schema, an order id with a digit changed, a user
addressed by a name no one gave, a flag submitted that no program printed, a
final answer whose words the pages do not hold. Each value stands alone:
nothing the agent was told, observed or wrote itself backs it.

Evidence: ``strength.EVIDENCE["unsupported_claim"]`` ("nothing observed
supports it", weak: agents compute, convert and know common facts); a value
the text says it read in a result ("the page says …") is
``EVIDENCE["misread_result"]`` (strong).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tracing.core.anchoring.code_claims import name_seen, next_try, schema_names
from tracing.core.anchoring.common import (
    CALL_SYNTAX_RE,
    EXAMPLE_RE,
    LIST_MARK_RE,
    NONE_COUNT_RE,
    WONDER_RE,
    Break,
    best_sentence,
    call_text,
    claim_sentences,
    column_names,
    instructions,
    is_failure,
    is_question,
    quote,
    raw_args,
    shown,
    unsupported_units,
    what,
)
from tracing.core.anchoring.evidence import defined_names
from tracing.core.anchoring.phrases import ABSENCE_RE, ATTRIBUTION_RE, FLAG_RE, HEDGE_RE, NEGATED_RE, PLAN_RE
from tracing.core.anchoring.rules import answered_from_memory
from tracing.core.anchoring.rules.phantom_call import unmade_lookup
from tracing.core.anchoring.rules.unconfirmed_success import REASONING_RE, asked_words
from tracing.core.anchoring.salience import FILLER_WORDS, Salient, extract
from tracing.core.normalize import tokens
from tracing.core.steps import Step, is_reply
from tracing.core.tokenizer import is_cjk, split_sentences

if TYPE_CHECKING:
    from tracing.core.anchoring.state import Observed, RunState

NAME = "unsupported_claim"

# A final answer is grounded when at least this share of its content words is
# observed; answers are short, so one invented word in two ("political
# science" against pages that only say "political") is already a break.
FINAL_SUPPORT_MIN = 0.6
# ... judged by its words only while it is an answer ("political science"),
# not a report: in a paragraph to the user most words are language, not facts.
ANSWER_MAX_WORDS = 8

# Identifiers that must have been read: snake_case, or letters and digits
# mixed ("poker_player", "l1002", "#w8855135"), not "drawer 3" or "1990s".
_IDENTIFIER_LIKE_RE = re.compile(r"^#?(?:[a-z][a-z0-9]*(?:_[a-z0-9]+)+|(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{4,})$")
_ASSIGNMENT_RE = re.compile(r"\w\s*[-+*/]?=\s*\S")
# Values only a record gives: long numbers (card endings, zip codes), amounts
# with cents, identifiers with digits.
_RECORD_VALUE_RE = re.compile(r"\d{4,}|\d+\.\d\d|(?=\S*\d)(?=\S*[a-z])[\w#-]{4,}")
_NOT_FOUND_RE = re.compile(
    r"\b(?:could ?n[o']t|can ?n[o']t|cannot|unable to|did ?n[o']t|was ?n[o']t able to|not able to)\s+"
    r"(?:find|locate|see|access|retrieve)\b|\bno (?:order|record|account|user|item|entry) (?:with|for|matching)\b",
    re.IGNORECASE,
)
# The user addressed by name: "Thank you, Mei.", "You're very welcome, Lei!",
# "Thanks for your patience, Ivan Johnson."; "under the name Noah Ito".
ADDRESS_RE = re.compile(
    r"^(?i:thank you|thanks|hi|hello|hey|dear|welcome|you(?:'re| are) (?:very |most )?welcome|"
    r"good (?:morning|afternoon|evening)|goodbye|bye)\b[^.!?]{0,60}?,\s*"
    r"(?P<name>(?:[A-Z][a-z]+\.?\s+)?[A-Z][a-z]+)\s*[.!?,]"
    r"|\b(?i:under|with) the name\s+(?P<named>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b"
)
_HONORIFICS = frozenset(["mr", "mr.", "mrs", "mrs.", "ms", "ms.", "dr", "dr.", "miss", "sir", "madam"])


def claim_break(step: Step, said: str, sentence: str, missing: list[str], last: Observed | None,
                values: bool = True) -> list[Break]:
    """The break for ``missing`` values of ``sentence``, quoting the latest result when there is one.
    ``values``: some of ``missing`` are values, not only words (only a value can be misread)."""
    reason = f"the {said} at step {step.index} uses {shown(missing, sentence)}, which no observation (nor the task) contains"
    ev: dict[str, Any] = {"claim": sentence[:200], "missing": missing[:5]}
    if values and ATTRIBUTION_RE.search(sentence):
        ev["cited"] = True  # "the page says …": the agent names its source, which lacks the value
    if last is not None and last.step.text:
        quoted = best_sentence(last.step.text, extract(sentence))
        if quoted:
            reason = (
                f"the observation at step {last.step.index} says {quote(quoted, 100)}; "
                f"the {said} at step {step.index} uses {shown(missing, sentence)}, which no observation (nor the task) "
                f"contains"
            )
            ev["observation_step"] = last.step.index
            ev["observation"] = quote(quoted, 160)
    return [Break(step=step.index, pattern=NAME, reason=reason, evidence=ev)]


def invented_identifier(state: RunState, step: Step, text: str) -> list[Break]:
    """An identifier no evidence holds ("the `cars_data` table", "order
    W123X"), even in a plan: a name can be recalled, a table name or a
    record id has to have been read somewhere."""
    for sentence in split_sentences(text):
        if is_question(sentence) or EXAMPLE_RE.search(sentence) or NEGATED_RE.search(sentence):
            continue
        if CALL_SYNTAX_RE.search(sentence) or _ASSIGNMENT_RE.search(sentence):
            continue  # code the agent writes out: it names what it defines
        # Sorted, not in set order: the reason names the first three.
        defined = defined_names(sentence)  # the agent's own name for a value ("so arr_h is 11")
        # A tool's name is the agent's own vocabulary (its schema, its calls), not a fact to read.
        ids = [i for i in sorted(extract(sentence).ids)
               if _IDENTIFIER_LIKE_RE.match(i) and i not in defined and i.lower() not in state.catalogue]
        missing = [i for i in ids if not state.evidence.id_supported(i)]
        plan = PLAN_RE.match(LIST_MARK_RE.sub("", sentence.strip()))
        if not plan and state.seen_observation and not WONDER_RE.search(sentence):
            # "The conductor table has a Nationality field" after DESC
            # listed its columns: a column is a name that was read.
            missing += [c for c in column_names(sentence) if not state.name_known(c, acted=False) and c not in missing]
            missing += _unread_names(state, step, sentence, missing)
        if missing and plan and not state.seen_observation and state.unmade_lookup is None:
            continue  # before it has looked at anything, a plan can only guess
        if missing and plan and state.unmade_lookup is not None:
            found = unmade_lookup(state, step, sentence, missing)
            if found:
                return found  # "what tables are there?" was never asked, yet it names one
        if missing and plan:
            # A plan may name what its next call creates (a variable, a file)
            # or the program it runs; only what a read looks up had to be read before.
            missing = [i for i in missing if i in state.looked_up.get(step.index, ())]
        if missing:
            return claim_break(step, what(step), sentence, missing, state.judged)
    return []


def _unread_names(state: RunState, step: Step, sentence: str, missing: list[str]) -> list[str]:
    """Table, column and file names the sentence asserts about that no
    evidence spells (a guess the next call tries, and fails, is exploration)."""
    names = [n for n in schema_names(sentence) if n not in missing and not state.name_known(n)]
    if names:
        tried = next_try(state.steps, step.index)
        if tried is not None and is_failure(tried[1], raw_args(tried[0])):
            call = call_text(tried[0]).lower()
            names = [n for n in names if not name_seen(n, call)]
    return names


def misnamed_user(state: RunState, step: Step, text: str) -> list[Break]:
    """"Thank you, Processed." when the user is Mei: a reply that addresses
    the user by a name neither the user nor any record gave has lost track
    of whom it talks to (judged only once some person's name is known)."""
    if not is_reply(step) or not state.person_names:
        return []
    for sentence in split_sentences(text[:2000]):
        m = ADDRESS_RE.search(sentence)
        if m is None:
            continue
        said = m.group("name") or m.group("named")
        words = [w for w in said.split() if w.lower() not in _HONORIFICS]
        unknown = [w for w in words if w.lower() not in state.person_names]
        if words and unknown:
            return [Break(step=step.index, pattern=NAME, reason=(
                f"the {what(step)} at step {step.index} addresses the user as {quote(said, 40)}, "
                f"a name neither the user nor any result gave: {quote(sentence, 100)}"
            ), evidence={"claim": sentence[:200], "missing": unknown[:5]})]
    return []


def _reads_failed_call(sentence: str, last: Observed | None) -> bool:
    """The sentence states what the call that just failed was asked for,
    as if it had answered ("Invalid Action" after Search[Tim Kaine], then
    "Tim Kaine is from Virginia"): a value it then plans to look up is
    still a claim, because the agent writes it as read."""
    if last is None or not last.failed or last.action is None or PLAN_RE.match(sentence.strip()):
        return False
    if REASONING_RE.search(sentence) or HEDGE_RE.search(sentence):
        return False
    return bool(asked_words(last.action) & set(tokens(sentence)))


def _in_plan(unit: str, planned: Salient) -> bool:
    if unit in planned.numbers or unit in planned.ids:
        return True
    return all(w in planned.words for w in unit.split(" "))


def on_claims(state: RunState, step: Step, text: str) -> list[Break]:
    """Each claim of a thought or reply, then what it offers or says it could not find."""
    statement_numbers = extract(text).numbers
    planned = state.planned.get(step.index)
    last = state.last
    for sentence in claim_sentences(text):
        if ABSENCE_RE.search(sentence):
            continue
        missing = unsupported_units(extract(sentence), state.evidence, sentence, statement_numbers)
        if missing and NONE_COUNT_RE.search(sentence):
            missing = [u for u in missing if not u.endswith(" 0")]  # "an apple (0)": none of them
        if missing and planned is not None and not _reads_failed_call(sentence, last):
            # Values the thought plans to use in the call it goes on to make.
            missing = [u for u in missing if not _in_plan(u, planned)]
        if not missing:
            continue
        # Right after the search for it failed, a fact about what it asked
        # for is written as read, not recalled.
        found = unmade_lookup(state, step, sentence, missing) or (
            [] if _reads_failed_call(sentence, last) else answered_from_memory.recalled(state, step, sentence, missing))
        return found or claim_break(step, what(step), sentence, missing, state.judged)
    # "You can change it to your Visa ending in 8905": an offer to the user
    # still quotes the record it rests on; "I couldn't find order #9502114"
    # claims nothing was found, but names the order asked for.
    for sentence in [*instructions(text), *(x for x in split_sentences(text) if _NOT_FOUND_RE.search(x))]:
        missing = [u for u in unsupported_units(extract(sentence), state.evidence, sentence, statement_numbers)
                   if _RECORD_VALUE_RE.fullmatch(u)]
        if missing:
            return claim_break(step, what(step), sentence, missing, state.judged)
    return []


def flag(state: RunState, step: Step, text: str) -> list[Break]:
    """A capture-the-flag answer no result printed, whole, in pieces, in hex or spelt out."""
    inner = FLAG_RE.match(text).group(1).lower()
    seen = state.flag_text
    if text.lower() in state.flags_seen or inner in seen:
        return []  # printed whole, or its content printed (a password in the source)
    chunks = [c for c in re.split(r"[_\W]+", inner) if len(c) >= 4]
    if chunks and all(c in seen for c in chunks):
        return []  # printed in pieces ("part 2/3: …")
    if re.fullmatch(r"[0-9a-f]{1,16}", inner) and re.search(rf"(?<![\w.]){int(inner, 16)}(?![\w.])", seen):
        return []  # a printed integer written in hex, as the flag format asks ("48" -> 00000030)
    squeezed = re.sub(r"[\W_]+", "", inner)
    if len(squeezed) >= 8 and squeezed in re.sub(r"[\W_]+", "", seen):
        return []  # spelt out letter by letter (ASCII art, "( p ) ( i ) ( c ) …")
    return [Break(step=step.index, pattern=NAME, reason=(
        f"the final answer at step {step.index} submits {quote(text, 60)}, which no result printed"
    ), evidence={"claim": text[:200], "missing": [text[:80]]})]


def final_answer(state: RunState, step: Step, text: str) -> list[Break]:
    """A final answer's values and words that nothing observed holds; the
    break is the thought of the turn where they first appeared."""
    answer = text.strip()
    missing = unsupported_units(extract(answer), state.evidence, answer)
    values = bool(missing)
    content = [t for t in tokens(answer) if not t.isdigit() and t not in FILLER_WORDS]
    if not is_cjk(answer) and 0 < len(content) <= ANSWER_MAX_WORDS:
        seen = sum(1 for t in content if state.evidence.word_supported(t))
        if seen / len(content) < FINAL_SUPPORT_MIN:
            missing = missing + [t for t in content if not state.evidence.word_supported(t) and t not in missing]
    first = state.turn_first if state.turn_first is not None else step.index
    if not missing or any(f.step >= first for f in state.findings):
        return []  # the thought that states it was recorded as answered from memory
    # The answer usually restates the thought just before it: the break is
    # where the unobserved content first appeared in this turn.
    wanted = {w for u in missing for w in tokens(u)}
    flagged = {b.step for b in state.breaks}
    names_only = all(not any(c.isdigit() for c in u) for u in missing)
    for index, thought in state.turn_thoughts:
        if index in flagged or not wanted & set(tokens(thought)):
            continue
        ev = {"claim": thought[:200], "missing": missing[:5], "final_step": step.index}
        if names_only and wanted <= set(tokens(thought)) and not answered_from_memory.spoken_to(state, thought, wanted):
            return [answered_from_memory.finding(index, shown(missing, answer), answer, ev, step.index)]
        return [Break(step=index, pattern=NAME, reason=(
            f"the thought at step {index} asserts {shown(missing, answer)}, which no observation (nor the task) "
            f"contains, and the final answer at step {step.index} ({quote(answer, 60)}) rests on it"
        ), evidence=ev)]
    return claim_break(step, "final answer", answer, missing, None, values=values)
