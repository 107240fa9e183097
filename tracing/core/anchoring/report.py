"""Where did the reasoning stop tracking the observations? (DESIGN.md section 1)

One pass over the run, judging each step by its role (``tracing.core.steps.role_of``):
tool results and user turns are evidence (``tracing.core.anchoring.evidence``);
thoughts, replies and final answers are claims, checked against it. Each break
pattern is a module of ``tracing.core.anchoring.rules``; the run's memory is
``tracing.core.anchoring.state``, which only ``feed`` updates. Code is not a claim:
a program is judged by what running it returned, not word by word.

Cost: every step is scanned once (capped) and a re-query looks back over at
most state.REQUERY_WINDOW calls of one tool: O(capped text + steps * window).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracing.core.anchoring import registry
from tracing.core.anchoring.common import (
    Break,
    asserting_sentences,
    content_words,
    is_failure,
    is_final,
    looks_like_code,
    quote,
    step_text,
    what,
)
from tracing.core.anchoring.phrases import FLAG_RE, LABEL_RE, MARKUP_TAG_RE, PROTOCOL_FINAL_RE
from tracing.core.anchoring.rules.requery import is_revisit
from tracing.core.anchoring.rules.slip import caught
from tracing.core.anchoring.salience import Salient, extract
from tracing.core.anchoring.state import RunState, lexical_score
from tracing.core.anchoring.strength import STRONG, WEAK, evidence_of, is_shown
from tracing.core.steps import Step, is_reply, role_of

__all__ = ["FINDINGS", "PATTERNS", "AnchorReport", "Break", "Similarity", "anchor_report", "is_failure",
           "lexical_score", "looks_like_code"]

AGENT_KINDS = ("thought", "action", "final")

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
# Findings: shown, never the anchor break. "answered_from_memory"
# (rules.answered_from_memory), "untested_claim" (rules.phantom_call), "slip":
# a lapse the next result refuted and the agent let go (rules.slip).
FINDINGS = ("answered_from_memory", "untested_claim", "slip")
# When two patterns hit the same step, the more specific reason is reported.
_PRIORITY = {name: pos for pos, name in enumerate(PATTERNS)}


@dataclass
class AnchorReport:
    # The shown break: the first strong one (tracing.core.anchoring.strength).
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
    """A pluggable text similarity: the benchmark's MiniLM experiment, which
    lost to the lexical scorer (bench/README-anchoring.md); kept to rerun it."""

    used_min: float  # a turn "used" the observation from this similarity on

    def prime(self, texts: list[str]) -> None: ...

    def similarity(self, a: str, b: str) -> float: ...



def anchor_report(
    steps: Sequence[Step],
    task: str = "",
    *,
    context: dict[str, Any] | None = None,
    similarity: Similarity | None = None,
    demoted: frozenset[str] = frozenset(),
    promoted: frozenset[str] = frozenset(),
    disabled: Iterable[str] = frozenset(),
) -> AnchorReport:
    """Anchoring scores and break patterns over one run, in step order.

    ``demoted``: patterns a project's reviewers found unreliable, weak there;
    ``promoted``: weak patterns a project shows as breaks all the same;
    ``disabled``: rules switched off by name (``registry.NAMES``), not run at all.
    ``similarity`` (experiments only) replaces the lexical score and the "did
    the next turn use it" test; the checks of exact values stay lexical.
    """
    if similarity is not None:
        # One batch per run instead of one encoder call per pair.
        similarity.prime(
            [(s.text or "")[:2000] if s.kind == "observation" else step_text(s)[:2000] for s in steps]
        )
    ordered = sorted(steps, key=lambda s: s.index)
    run = _Pass(RunState(task or "", context, similarity, ordered), frozenset(disabled))
    for step in ordered:
        run.feed(step)
    run.fire("turn_end", None)
    return run.report(demoted, promoted)


class _Pass:
    """One pass over a run: ``feed`` updates the state and asks the rules of each hook."""

    def __init__(self, state: RunState, disabled: frozenset[str]) -> None:
        self.state = state
        self.disabled = disabled
        self.hooks = registry.by_hook(disabled)

    def fire(self, hook: str, step: Step | None, text: str = "") -> bool:
        """Ask the hook's rules; True when one broke (in a first-wins hook, the first that did)."""
        st = self.state
        broke = False
        for rule in self.hooks.get(hook, ()):
            for brk in rule.check(st, step, text):
                if brk.pattern in self.disabled:
                    continue
                if hook == "result" and is_revisit(brk):
                    st.pending_move = brk  # judged at the next call
                    continue
                (st.findings if brk.pattern in FINDINGS else st.breaks).append(brk)
                broke = broke or brk.pattern not in registry.NOTES
            if broke and hook in registry.FIRST_WINS:
                return True
        return broke

    def feed(self, step: Step) -> None:
        st = self.state
        if step.kind == "observation":
            st.on_observation()
            role = role_of(step)
            self.fire("turn_end", None)
            if role == "tool":
                st.on_result(step)
                self.fire("result", step, step.text or "")
            else:
                st.on_told(step, role)
        elif step.kind in AGENT_KINDS:
            self._agent(step)

    def _agent(self, step: Step) -> None:
        st = self.state
        # Curly apostrophes read as straight ones ("I’ve found" = "I've found").
        text = step_text(step).replace("’", "'")
        code = step.kind == "action" and not is_reply(step) or looks_like_code(text)
        if not code and (step.kind != "action" or is_reply(step)):
            # A model's own markup tags ("<thinking>", "</search_quality_reflection>")
            # are form, not words of a claim; each one ends a block.
            text = MARKUP_TAG_RE.sub("\n", text)
        sal = extract(text) if not code or step.kind == "action" else Salient()
        statement = step.kind == "thought" or is_reply(step)
        if statement:
            st.wanted_words |= content_words(sal)
            st.arguments.said(text, step.index, what(step))
        elif step.kind == "action":
            st.on_call(step, sal)
            self.fire("call", step, text)
        if statement and not code and self.fire("early", step, text):
            st.spoke(step, text)
            return
        if not st.seen_observation:
            # Before the first observation the agent can only plan from the
            # task; nothing to be anchored to yet, but a lookup it skipped.
            if statement and not code and not is_final(step) and not self.fire("first_look", step, text):
                st.note_plans(step, text, next_action=False)
            return
        st.on_statement(step, text, sal)
        if is_final(step):
            self._final(step, text, code)
        elif statement:
            if not code:
                st.take_since()
                self._statement(step, text)
                st.note_plans(step, text)
            st.spoke(step, text)

    def _statement(self, step: Step, text: str) -> None:
        """A thought or a reply: success, completion, records, then plain claims."""
        if self.fire("statement", step, text):
            return
        # A hedge does not make a success claim safe ("the function seems to
        # work" after a traceback): every asserting sentence is read for it.
        for sentence in asserting_sentences(text):
            if self.fire("sentence", step, sentence):
                return
        self.fire("claims", step, text)

    def _final(self, step: Step, text: str, code: bool) -> None:
        if step.kind == "final":
            self.fire("submit", step, text)
            self.state.on_submission(step)
        answer = text.strip()
        flag = FLAG_RE.search(answer)
        if flag is not None and not code:
            self.fire("flag", step, flag.group(0))
            return
        if not code and answer and self.fire("conclusion", step, answer):
            return
        if code or not answer or LABEL_RE.match(answer.strip("#* ")) or PROTOCOL_FINAL_RE.match(answer):
            return
        if self.state.broke_at(step.index) or self.fire("final", step, answer):
            return
        self.fire("answer", step, text)

    def _slip(self, brk: Break) -> bool:
        """Whether ``brk`` is a slip (a finding, not a break); noted in findings if so."""
        st = self.state
        where = caught(st.steps, brk.pattern, brk.step, brk.evidence,
                       lambda result, call: is_failure(result, call.args), asserting_sentences)
        if where is None:
            return False
        if any(f.pattern == "slip" and f.step == brk.step for f in st.findings):
            return True  # two patterns on one lapse: one finding
        result = next(s for s in st.steps if s.index == where["refuted_at"])
        reason = (
            f"{brk.reason}; the result at step {where['refuted_at']} ({quote(result.text or '(empty)', 60)}) "
            f"refuted it at once and the agent did not use {', '.join(where['values'])} again"
        )
        st.findings.append(Break(step=brk.step, pattern="slip", reason=reason,
                                 evidence={**brk.evidence, "lapse": brk.pattern, **where}))
        return True

    def report(self, demoted: frozenset[str] = frozenset(), promoted: frozenset[str] = frozenset()) -> AnchorReport:
        st = self.state
        self.fire("end", None)
        breaks = sorted(st.breaks, key=lambda b: (b.step, _PRIORITY[b.pattern]))
        breaks = [b for b in breaks if not self._slip(b)]
        for brk in breaks:
            row = evidence_of(brk.pattern, cited=bool(brk.evidence.get("cited")), probe=bool(brk.evidence.get("probe")))
            brk.evidence_kind, brk.confidence = row.kind, row.confidence
            strength = STRONG if brk.pattern in promoted else row.strength
            brk.strength = STRONG if is_shown(brk.pattern, strength, demoted) else WEAK
        st.findings.sort(key=lambda f: f.step)
        shown = [b for b in breaks if b.strength == STRONG]
        if not shown:
            return AnchorReport(first_break=None, reason="", evidence={}, scores=st.scores, breaks=breaks,
                                findings=st.findings)
        first = shown[0]
        ev = {"pattern": first.pattern, "step": first.step, "strength": first.strength,
              "evidence_kind": first.evidence_kind, "confidence": first.confidence, **first.evidence}
        return AnchorReport(first_break=first.step, reason=first.reason, evidence=ev, scores=st.scores,
                            breaks=breaks, findings=st.findings)
