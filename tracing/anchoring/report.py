"""Where did the reasoning stop tracking the observations? (DESIGN.md section 1)

"The thought is useful but not trustworthy": what can be checked is whether
the step after an observation used it, and whether what the agent asserts is
backed by something it actually observed. One pass over the run:

- a score per thought / action / final after an observation: of the salient
  content the step takes from its context, the share that comes from the
  latest observation rather than from older context (task, earlier
  observations);
- break patterns, each a ``Break`` with a plain-words reason:
  ``unsupported_claim``  a number / name / id asserted in a thought (or the
                         final answer) that no observation and not the task
                         contains;
  ``unconfirmed_success`` "done" / "found it" right after an error, an empty
                         result, "Nothing happens.", "Invalid action", or
                         about something the latest observation does not show;
  ``requery``            an action re-issued whose answer the agent already
                         had (or that just failed the same way);
  ``ignored_observation`` an informative, on-task observation of which the
                         next turn uses nothing and which it does not
                         acknowledge.

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

from tracing.anchoring.relation import wrong_relation
from tracing.anchoring.salience import (
    FILLER_WORDS,
    ZH_COMMON,
    Salient,
    extract,
    is_cjk,
    normalize_number,
    split_sentences,
)
from tracing.normalize import action_key, jaccard, tokens
from tracing.steps import Step, context_text

# --- thresholds -------------------------------------------------------------

# Unit conversions an agent computes with but no page states (minutes in an
# hour, hours in a day, ...): using them is arithmetic, not an invented fact.
CONVERSION_NUMBERS = frozenset({"60", "24", "7", "12", "100", "1000", "365"})
# Number words that back the digits a thought writes for them.
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "twice": 2, "double": 2, "pair": 2, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
    "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
}

# An entity counts as observed when at least this share of its words occurs in
# the evidence: "Mussolini" for "Benito Amilcare Andrea Mussolini" passes, so
# does a 2-of-3 match ("President Richard Nixon"); "Alexander McNair" against
# a page that only says "Alexander" (1 of 2) does not.
ENTITY_SUPPORT_MIN = 0.6

# Names sharing this many leading letters are one stem ("Canad-a/-ian",
# "Japan/-ese"); shorter stems start to merge unrelated names.
STEM_CHARS = 5

# A final answer is grounded when at least this share of its content words is
# observed; answers are short, so one invented word in two ("political
# science" against pages that only say "political") is already a break.
FINAL_SUPPORT_MIN = 0.6

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

# A failure message is short or says so at its start; past this many
# characters "error" is more likely page content ("Type I error is ...").
FAILURE_PREFIX_CHARS = 80

# --- generic phrases (English and Chinese) ---------------------------------

# Observation text meaning "the call did not work" (generic tool and
# environment messages; no source-specific strings).
FAILURE_RE = re.compile(
    r"nothing happens|invalid action|could not find|couldn't find|no results?\b|not found|"
    r"\berror\b|failed|failure|timed? ?out|cannot |can't |unable to|does not exist|no such|"
    r"没有找到|未找到|找不到|错误|失败|无结果|没有结果|什么也没有发生|超时|无效"
)

# Sentences that plan, ask or hedge assert no fact.
PLAN_RE = re.compile(
    r"^(?:(?:so|then|now|next|first|and|but|ok|okay|thus|therefore|after that)[, ]+)*"
    r"(?:i need|i should|i will|i'll|i must|i have to|i can(?! see)|i could|i may|i might|i want|"
    r"i am going|i'm going|let me|let's|lets|we need|we should|maybe|perhaps|to find|to solve|"
    r"search|look up|lookup|find|check|try|if\b|i'?m not sure|i do not know|i don't know)"
    r"|^(?:我需要|我应该|我要|我会|接下来|下一步|让我|我们需要|搜索|查找|查询|也许|可能|如果|首先)",
    re.IGNORECASE,
)

# Hedged sentences guess, they do not assert ("a mug is more likely to appear
# in cabinet (1-9)"); a guess is not a claim about what was observed.
HEDGE_RE = re.compile(
    r"\b(?:likely|probably|possibly|presumably|i think|i guess|i believe|i assume|might|could be|may be|"
    r"seems?|appears? to)\b|可能|也许|大概|估计|应该是",
    re.IGNORECASE,
)

# Sentences that report something as absent or unknown legitimately name
# things no observation contains ("It does not mention Haiyan").
NEGATED_RE = re.compile(
    r"\b(?:not|no|never|nothing|none|neither|nor|without|doesn't|don't|didn't|isn't|wasn't|aren't|"
    r"weren't|cannot|can't|couldn't|unable|unclear|unknown)\b|没有|未|不|无",
    re.IGNORECASE,
)

# Clauses that report something as *not observed* ("it does not mention
# Haiyan") legitimately name what no observation contains; other negations
# ("X is not from Haiyan") still assert facts and are checked.
ABSENCE_RE = re.compile(
    r"\b(?:not|n't|never|no|nothing)\b\s+(?:\w+\s+){0,2}?(?:mention|mentions|mentioned|say|says|said|state|states|"
    r"contain|contains|include|includes|list|lists|listed|show|shows|tell|tells|find|found|know|known|"
    r"give|gives|provide|provides|information|info|sure|clear|about|exist|exists)\b"
    r"|没有提到|没有提及|未提及|没有说|不知道|没找到|没有找到|不清楚",
    re.IGNORECASE,
)

# "Done", "found it", "Now I take the X": the agent reports success/progress.
# "done" alone is too common in prose ("he has done voice acting"), so only
# first-person and task-level forms count.
SUCCESS_RE = re.compile(
    r"\b(?:found it|i found|i(?:'ve| have) found|now i (?:find|found|have|take|took|put|open|opened|"
    r"clean|cleaned|heat|heated|cool|cooled|use|used|get|got|place|placed|pick|picked|toggle|slice)|"
    r"i(?:'m| am) done|all done|^done|succeeded|successfully|it worked|"
    r"(?:task|goal|job) (?:is |has been )?(?:complete|completed|finished|done|accomplished)|"
    r"i(?:'ve| have) (?:put|placed|taken|cleaned|heated|cooled|finished|completed))\b"
    r"|找到了|已找到|完成了|已完成|成功|搞定|已经(?:拿|放|找|打开|完成)",
    re.IGNORECASE,
)

# The agent saying a result failed is acknowledging it, not claiming success.
ACK_FAILURE_RE = re.compile(
    r"nothing happen|did(?:n't| not) work|failed|invalid|not (?:found|work)|could(?:n't| not)|"
    r"again|retry|error|wrong|没有|失败|错误|无效|再试",
    re.IGNORECASE,
)

# A final answer made only of capital letters is a label from a closed set
# (SUPPORTS / NOT ENOUGH INFO), not a claim about the world.
LABEL_RE = re.compile(r"^[A-Z][A-Z _-]*$")

FINISH_TOOLS = frozenset(["finish", "final_answer", "answer", "final", "submit"])

AGENT_KINDS = ("thought", "action", "final")

# Weights of unit kinds in the anchoring score: a shared number or name says
# more about use of the observation than a shared common word.
UNIT_WEIGHTS = {"n": 2.0, "i": 2.0, "e": 2.0, "c": 1.0, "t": 1.0}

PATTERNS = ("unsupported_claim", "wrong_relation", "unconfirmed_success", "requery", "ignored_observation")
# When two patterns hit the same step, the more specific reason is reported.
_PRIORITY = {name: pos for pos, name in enumerate(PATTERNS)}


@dataclass
class Break:
    step: int
    pattern: str  # one of PATTERNS
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class AnchorReport:
    first_break: int | None
    reason: str
    evidence: dict[str, Any]
    scores: dict[int, float]
    breaks: list[Break]

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_anchor_break": self.first_break,
            "anchor_reason": self.reason,
            "anchor_evidence": self.evidence,
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


def _quote(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return f"“{text[:limit]}…”" if len(text) > limit else f"“{text}”"


def _step_text(step: Step) -> str:
    """What the agent wrote: thought text, or the action's arguments."""
    if step.kind == "thought":
        return step.text or ""
    args = step.args
    if isinstance(args, str) and args.strip():
        return args
    if isinstance(args, dict):
        return " ".join(str(v) for v in args.values() if isinstance(v, (str, int, float)))
    return step.text or ""


def _is_final(step: Step) -> bool:
    return step.kind == "final" or (step.kind == "action" and (step.tool or "").strip().lower() in FINISH_TOOLS)


def is_failure(step: Step) -> bool:
    """An observation that reports a failed call (status, or a generic message)."""
    status = str((step.meta or {}).get("status", "ok")).lower()
    if status in ("error", "empty", "timeout"):
        return True
    text = (step.text or "").strip()
    if not text:
        return True
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


class _Evidence:
    """Everything observed so far (task + observations): words, numbers, ids."""

    def __init__(self) -> None:
        self.words: set[str] = set()
        self.numbers: set[str] = set(CONVERSION_NUMBERS)
        self.ids: set[str] = set()
        # Words that head an identifier somewhere ("potato" in "potato 3"):
        # for those the exact identifier must have been observed.
        self.id_heads: set[str] = set()
        # Word stems, so "Canada" is backed by "Canadian" (names only).
        self.prefixes: set[str] = set()

    def add(self, sal: Salient) -> None:
        self.words |= sal.words
        self.numbers |= sal.numbers
        # "two adults" backs a later "2 x 12.40"; 两名成人 likewise.
        self.numbers.update(str(NUMBER_WORDS[w]) for w in sal.words if w in NUMBER_WORDS)
        self.numbers.update(str(NUMBER_WORDS[ch]) for piece in sal.cjk for ch in piece if ch in NUMBER_WORDS)
        self.ids |= sal.ids
        self.id_heads.update(i.split(" ")[0] for i in sal.ids if " " in i)
        self.prefixes.update(w[:STEM_CHARS] for w in sal.words if len(w) >= STEM_CHARS + 1 and w.isalpha())

    def id_supported(self, ident: str) -> bool:
        if ident in self.ids:
            return True
        head, _, number = ident.rpartition(" ")
        # "ended 66": "ended" never names a thing; judge the number alone.
        return bool(head) and head not in self.id_heads and number in self.numbers

    def word_supported(self, word: str) -> bool:
        if word in self.words or word.replace(".", "") in self.words:
            return True
        return len(word) >= STEM_CHARS + 1 and word.isalpha() and word[:STEM_CHARS] in self.prefixes

    def entity_supported(self, entity: tuple[str, ...]) -> bool:
        content = [w for w in entity if w not in ("of", "the", "and", "&")]
        if not content:
            return True
        hits = sum(1 for w in content if self.word_supported(w))
        return hits / len(content) >= ENTITY_SUPPORT_MIN

    def cjk_supported(self, piece: str) -> bool:
        if len(piece) < 2:
            return True
        bigrams = [piece[i : i + 2] for i in range(len(piece) - 1)]
        return any(b in self.words or b in ZH_COMMON for b in bigrams)


def _unsupported_units(sal: Salient, evidence: _Evidence) -> list[str]:
    """Numbers, ids, names and CJK names in ``sal`` that the evidence lacks (in text order where possible)."""
    missing: list[str] = []
    id_numbers = {i.rsplit(" ", 1)[-1] for i in sal.ids if " " in i}
    for number in sorted(sal.numbers):
        if number not in evidence.numbers and number not in id_numbers:
            missing.append(number)
    for ident in sorted(sal.ids):
        if not evidence.id_supported(ident):
            missing.append(ident)
    for entity in sal.entities:
        if not evidence.entity_supported(entity):
            name = " ".join(entity)
            if name not in missing:
                missing.append(name)
    for piece in sal.cjk_pieces:
        if not evidence.cjk_supported(piece) and piece not in missing:
            missing.append(piece)
    return missing


# Clause boundaries inside a sentence: a hedge or a plan in one clause ("...,
# so his family was probably architects") must not hide a claim in another.
_CLAUSE_RE = re.compile(
    r",\s*(?=(?:so|but|and|which|while|whereas|because|then)\b)|;\s*|\s+and\s+(?=\w+\s+(?:is|was|are|were|has|have|seems?)\b)|，|、"
)


def _claim_sentences(text: str) -> list[str]:
    out = []
    for sentence in split_sentences(text):
        if sentence.rstrip().endswith(("?", "？")):
            continue
        for clause in _CLAUSE_RE.split(sentence):
            clause = clause.strip()
            if clause and not PLAN_RE.match(clause) and not HEDGE_RE.search(clause):
                out.append(clause)
    return out


def _best_sentence(text: str, probe: Salient) -> str:
    """The observation sentence sharing most with ``probe`` (for the reason text)."""
    best, best_hits = "", -1
    probe_words = probe.words
    for sentence in split_sentences(text)[:200]:
        hits = len(set(tokens(sentence)) & probe_words)
        if hits > best_hits:
            best, best_hits = sentence, hits
    return best


@dataclass
class _Obs:
    step: Step
    sal: Salient
    new_units: set[str]
    failed: bool
    relevant: bool
    query_units: set[str] = field(default_factory=set)
    # Shares nothing with the action it answers although it names things.
    off_query: bool = False


def anchor_report(
    steps: Sequence[Step],
    task: str = "",
    *,
    context: dict[str, Any] | None = None,
    similarity: Similarity | None = None,
) -> AnchorReport:
    """Anchoring scores and break patterns over one run, in step order.

    ``similarity`` (experiments only) replaces the lexical per-step score and
    the "did the next turn use this observation" test; the claim, success and
    re-query checks are about exact values and stay lexical.
    """
    sem = similarity
    if sem is not None:
        # One batch per run instead of one encoder call per pair.
        sem.prime([(s.text or "")[:2000] if s.kind == "observation" else _step_text(s)[:2000] for s in steps])
    ordered = sorted(steps, key=lambda s: s.index)
    evidence = _Evidence()
    # What the agent was told before its first step (system prompt, domain
    # policy, tool schemas) is evidence as much as the task is.
    told = context_text(context)
    task_sal = extract(f"{task}\n{told}" if told else (task or ""))
    evidence.add(task_sal)
    older_units: set[str] = set(task_sal.units)
    # Units the agent has been after: the task plus its own recent plans;
    # an observation sharing none of them is off-topic and may be ignored.
    wanted_words: set[str] = _content_words(task_sal)
    scores: dict[int, float] = {}
    breaks: list[Break] = []
    last: _Obs | None = None
    turn_units: set[str] = set()
    turn_texts: list[str] = []
    # Thoughts of the current turn (since the latest observation), in order.
    turn_thoughts: list[tuple[int, str]] = []
    turn_first: int | None = None
    turn_ack = False
    # Per tool: recent (action index, token set, observation step or None).
    history: dict[str, deque[list[Any]]] = {}
    pending_requery: tuple[Step, list[Any]] | None = None
    # Per tool: index of the last successful observation of *another* tool.
    changed_at: dict[str, int] = {}
    last_action_tool = ""
    last_action_entry: list[Any] | None = None
    last_action_producing: Salient | None = None

    def close_turn() -> None:
        if last is None or turn_first is None or turn_ack or len(turn_units) < IGNORED_MIN_TURN_UNITS:
            return
        informative = not last.failed and last.relevant and len(last.new_units) >= MIN_INFORMATIVE_NEW_UNITS
        if not (last.off_query or informative):
            return
        if sem is not None:
            turn_text = " ".join(turn_texts)[:2000]
            if sem.similarity(turn_text, (last.step.text or "")[:2000]) >= sem.used_min:
                return
        # Any unit counts as use here, the echo of the query included: a turn
        # that builds on the page it asked for has not ignored it.
        elif len(turn_units & last.sal.units) > IGNORED_MAX_UPTAKE:
            return
        if last.off_query:
            # The result is about something else than what was asked, and the
            # agent carries on as if it had answered.
            topic = sorted(u[2:] for u in last.sal.strong_units)[:3]
            asked = sorted(u[2:] for u in last.query_units if not u.startswith("n:"))[:3]
            reason = (
                f"the observation at step {last.step.index} ({_quote(last.step.text or '', 80)}) is not "
                f"about what was asked ({', '.join(asked)}); step {turn_first} carries on without "
                f"using it or saying so"
            )
            ev: dict[str, Any] = {"asked": asked, "observation_units": topic}
        else:
            sample = sorted(u[2:] for u in last.new_units if not u.startswith("t:"))[:5]
            reason = (
                f"the observation at step {last.step.index} brought new facts ({', '.join(sample)}); "
                f"the next step ({turn_first}) uses none of them and does not say why"
            )
            ev = {"new_units": sample}
        ev.update(observation_step=last.step.index, observation=_quote(last.step.text or ""))
        breaks.append(Break(step=turn_first, pattern="ignored_observation", reason=reason, evidence=ev))

    observed: list[tuple[int, str]] = []  # (index, text) of observations so far
    for step in ordered:
        kind = step.kind
        if kind == "observation":
            observed.append((step.index, step.text or ""))
            close_turn()
            sal = extract(step.text or "")
            failed = is_failure(step)
            if pending_requery is not None:
                action, earlier = pending_requery
                pending_requery = None
                earlier_obs: Step | None = earlier[2]
                if earlier_obs is not None:
                    same = jaccard(sal.units, earlier[3]) >= SAME_RESULT_MIN_JACCARD
                    if same:
                        if earlier[4]:
                            reason = (
                                f"the action at step {action.index} repeats step {earlier[0]}, which had failed "
                                f"({_quote(earlier_obs.text or '', 60)}), and fails the same way"
                            )
                        else:
                            reason = (
                                f"the action at step {action.index} asks again what step {earlier[0]} already "
                                f"obtained (observation at step {earlier_obs.index}: "
                                f"{_quote(earlier_obs.text or '', 80)})"
                            )
                        breaks.append(
                            Break(
                                step=action.index,
                                pattern="requery",
                                reason=reason,
                                evidence={
                                    "action": _quote(_step_text(action), 80),
                                    "earlier_action_step": earlier[0],
                                    "earlier_observation_step": earlier_obs.index,
                                    "earlier_failed": bool(earlier[4]),
                                },
                            )
                        )
            if last_action_entry is not None and not failed:
                acted = action_key(last_action_tool, None)[0]
                for other in history:
                    if other != acted:
                        changed_at[other] = step.index
            if last_action_entry is not None and last_action_entry[2] is None:
                last_action_entry[2] = step
                last_action_entry[3] = sal.units
                last_action_entry[4] = failed
            producing = last_action_producing.units if last_action_producing is not None else set()
            if last is not None:
                older_units |= last.sal.units
            new_units = sal.strong_units - older_units - producing
            # On-topic when the new content shares a word with what the agent
            # is after (task, its own plans); numbers alone do not count.
            new_words = {w for u in new_units if u[0] in "eict" for w in u[2:].split(" ") if not w.isdigit()}
            relevant = bool(new_words & wanted_words)
            query = {u for u in producing if not u.startswith("n:")}
            # A failure message counts only when it names something else
            # ("Could not find [Other Page]. Similar: [...]"); "Invalid
            # action!" names nothing (its one capital opens the sentence).
            names = len(sal.strong_units) >= (2 if failed else 1)
            off_query = bool(query) and names and not (sal.units & producing)
            last = _Obs(
                step=step,
                sal=sal,
                new_units=new_units,
                failed=failed,
                relevant=relevant,
                query_units=query,
                off_query=off_query,
            )
            evidence.add(sal)
            # The call's status is observed too: "Timeout" after a timed-out search is no invention.
            status = (step.meta or {}).get("status")
            if isinstance(status, str) and status:
                evidence.words.add(status.lower())
            turn_units = set()
            turn_texts = []
            turn_thoughts = []
            turn_first = None
            turn_ack = False
            last_action_entry = None
            last_action_producing = None
            continue
        if kind not in AGENT_KINDS:
            continue
        text = _step_text(step)
        sal = extract(text)
        if kind == "thought":
            wanted_words |= _content_words(sal)
        if last is None:
            # Before the first observation the agent can only plan from the
            # task; nothing to be anchored to yet.
            if kind == "action":
                last_action_entry, last_action_producing = _remember_action(step, history), sal
                last_action_tool = step.tool or ""
            continue
        units = sal.units
        if units:
            if sem is not None:
                cos = sem.similarity(text[:2000], (last.step.text or "")[:2000])
                scores[step.index] = round(min(1.0, max(0.0, cos)), 3)
            else:
                scores[step.index] = lexical_score(sal, last.sal, older_units)
        if text.strip():
            turn_units |= units
            turn_texts.append(text)
            if turn_first is None and units:
                turn_first = step.index
            if NEGATED_RE.search(text) or ACK_FAILURE_RE.search(text):
                turn_ack = True

        if kind == "thought":
            _check_thought(step, text, last, evidence, breaks)
            turn_thoughts.append((step.index, text))
        elif _is_final(step):
            _check_final(step, text, evidence, breaks, turn_thoughts)
            if not any(b.step >= (turn_first if turn_first is not None else step.index) for b in breaks):
                _check_relation(step, text, task or "", observed, breaks, turn_thoughts)
        if kind == "action" and not _is_final(step):
            earlier = _find_requery(step, history, changed_at)
            if earlier is not None:
                pending_requery = (step, earlier)
            last_action_entry, last_action_producing = _remember_action(step, history), sal
            last_action_tool = step.tool or ""
    close_turn()

    breaks.sort(key=lambda b: (b.step, _PRIORITY[b.pattern]))
    if not breaks:
        return AnchorReport(first_break=None, reason="", evidence={}, scores=scores, breaks=[])
    first = breaks[0]
    ev = {"pattern": first.pattern, "step": first.step, **first.evidence}
    return AnchorReport(first_break=first.step, reason=first.reason, evidence=ev, scores=scores, breaks=breaks)


def _content_words(sal: Salient) -> set[str]:
    words = set(sal.terms) | sal.cjk
    words.update(w for e in sal.entities for w in e)
    words.update(i.split(" ")[0] for i in sal.ids)
    return words


def _remember_action(step: Step, history: dict[str, deque[list[Any]]]) -> list[Any]:
    tool, toks = action_key(step.tool or "", _action_args(step))
    entry: list[Any] = [step.index, toks, None, set(), False]
    history.setdefault(tool, deque(maxlen=REQUERY_WINDOW)).append(entry)
    return entry


def _action_args(step: Step) -> Any:
    if step.args is not None and step.args != "":
        return step.args
    return step.text


def _find_requery(step: Step, history: dict[str, deque[list[Any]]], changed_at: dict[str, int]) -> list[Any] | None:
    tool, toks = action_key(step.tool or "", _action_args(step))
    for entry in reversed(history.get(tool, ())):
        if entry[2] is not None and jaccard(toks, entry[1]) >= REQUERY_MIN_JACCARD:
            # A successful action of another tool since then may have changed
            # the world (took the apple, opened the drawer): asking again is
            # then legitimate, as in the ReAct ALFWorld exemplars.
            if changed_at.get(tool, -1) > entry[0]:
                return None
            return entry
    return None


def _check_thought(step: Step, text: str, last: _Obs, evidence: _Evidence, breaks: list[Break]) -> None:
    claims = _claim_sentences(text)
    # Success right after a failed observation, or about what the latest
    # observation does not show.
    for sentence in claims:
        if not SUCCESS_RE.search(sentence) or NEGATED_RE.search(sentence) or ACK_FAILURE_RE.search(sentence):
            continue
        if last.failed:
            breaks.append(
                Break(
                    step=step.index,
                    pattern="unconfirmed_success",
                    reason=(
                        f"the observation at step {last.step.index} reports a failure "
                        f"({_quote(last.step.text or '(empty)', 80)}); the thought at step {step.index} "
                        f"claims success: {_quote(sentence, 100)}"
                    ),
                    evidence={
                        "observation_step": last.step.index,
                        "observation": _quote(last.step.text or "(empty)", 120),
                        "claim": sentence[:200],
                    },
                )
            )
            return
        sent_sal = extract(sentence)
        local = _Evidence()
        local.add(last.sal)
        local.id_heads = evidence.id_heads
        missing = [u for u in _unsupported_units(sent_sal, local) if not u.isdigit()]
        if missing:
            breaks.append(
                Break(
                    step=step.index,
                    pattern="unconfirmed_success",
                    reason=(
                        f"the thought at step {step.index} claims {_quote(sentence, 100)}, but the observation "
                        f"at step {last.step.index} ({_quote(last.step.text or '', 80)}) does not show "
                        f"{', '.join(missing[:3])}"
                    ),
                    evidence={
                        "observation_step": last.step.index,
                        "observation": _quote(last.step.text or "", 120),
                        "claim": sentence[:200],
                        "missing": missing[:5],
                    },
                )
            )
            return
    for sentence in claims:
        if ABSENCE_RE.search(sentence):
            continue
        sent_sal = extract(sentence)
        missing = _unsupported_units(sent_sal, evidence)
        if missing:
            _add_claim_break(step, "thought", sentence, missing, last, breaks)
            return


def _check_final(
    step: Step, text: str, evidence: _Evidence, breaks: list[Break], turn_thoughts: list[tuple[int, str]]
) -> None:
    answer = text.strip()
    if not answer or LABEL_RE.match(answer):
        return
    sal = extract(answer)
    missing = _unsupported_units(sal, evidence)
    content = [t for t in tokens(answer) if not t.isdigit() and t not in FILLER_WORDS]
    if not is_cjk(answer) and content:
        seen = sum(1 for t in content if t in evidence.words)
        if seen / len(content) < FINAL_SUPPORT_MIN:
            extra = [t for t in content if t not in evidence.words and t not in missing]
            missing = missing + extra
    if not missing:
        return
    # The answer usually restates the thought just before it: the break is
    # where the unobserved content first appeared in this turn.
    wanted = {w for u in missing for w in tokens(u)}
    flagged = {b.step for b in breaks}
    for index, thought in turn_thoughts:
        if index not in flagged and wanted & set(tokens(thought)):
            shown = ", ".join(_surface(u, answer) for u in missing[:3])
            reason = (
                f"the thought at step {index} asserts {shown}, which no observation (nor the task) contains, "
                f"and the final answer at step {step.index} ({_quote(answer, 60)}) rests on it"
            )
            ev = {"claim": thought[:200], "missing": missing[:5], "final_step": step.index}
            breaks.append(Break(step=index, pattern="unsupported_claim", reason=reason, evidence=ev))
            return
    _add_claim_break(step, "final answer", answer, missing, None, breaks)


def _check_relation(step: Step, text: str, task: str, observed: list[tuple[int, str]], breaks: list[Break],
                    turn_thoughts: list[tuple[int, str]]) -> None:
    answer = step.args if isinstance(step.args, str) and step.args.strip() else text
    if isinstance(step.args, dict) and len(step.args) == 1:
        answer = str(next(iter(step.args.values())))
    slip = wrong_relation(task, answer, observed)
    if slip is None:
        return
    # The slip happened where the reasoning first took the value up.
    needle = answer.strip().lower()
    at = next((i for i, thought in turn_thoughts if needle and needle in thought.lower()), step.index)
    who = f"the thought at step {at}" if at != step.index else f"the final answer at step {step.index}"
    reason = (
        f"the observation at step {slip['observation']} ties {', '.join(slip['cues'])} to {slip['rival']} "
        f"({_quote(slip['other_sentence'], 90)}); {who} takes {_quote(answer.strip(), 40)} from "
        f"{_quote(slip['answer_sentence'], 90)}, which says nothing about it"
    )
    breaks.append(Break(step=at, pattern="wrong_relation", reason=reason, evidence={**slip, "final_step": step.index}))


def _surface(unit: str, sentence: str) -> str:
    """The unit as the agent wrote it ("Haiyan", not "haiyan"; "7,500", not "7500")."""
    if unit[:1].isdigit():
        for found in re.finditer(r"\d[\d,.]*(?:st|nd|rd|th|s)?", sentence):
            if normalize_number(found.group(0).rstrip(".,")) == unit:
                return found.group(0).rstrip(".,")
        return unit
    m = re.search(re.escape(unit).replace(r"\ ", r"[\s\-]+"), sentence, re.IGNORECASE)
    return m.group(0) if m else unit


def _add_claim_break(
    step: Step, what: str, sentence: str, missing: list[str], last: _Obs | None, breaks: list[Break]
) -> None:
    shown = ", ".join(_surface(u, sentence) for u in missing[:3])
    reason = f"the {what} at step {step.index} uses {shown}, which no observation (nor the task) contains"
    ev: dict[str, Any] = {"claim": sentence[:200], "missing": missing[:5]}
    if last is not None and last.step.text:
        probe = extract(sentence)
        quoted = _best_sentence(last.step.text, probe)
        if quoted:
            reason = (
                f"the observation at step {last.step.index} says {_quote(quoted, 100)}; "
                f"the {what} at step {step.index} uses {shown}, which no observation (nor the task) contains"
            )
            ev["observation_step"] = last.step.index
            ev["observation"] = _quote(quoted, 160)
    breaks.append(Break(step=step.index, pattern="unsupported_claim", reason=reason, evidence=ev))
