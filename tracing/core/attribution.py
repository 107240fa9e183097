"""Error attribution: which layer a failed run went wrong in, and where.

DESIGN.md section 1: "When a run fails, attribute it to a layer: plan,
parameters, observation, synthesis, termination." This is the first guess a
reviewer confirms or corrects (issue 17, item 2): a layer, the agent's step it
points at, a reason in plain words and the evidence, computed from what the
run already has — the anchor report (``tracing.core.anchoring``), how each tool
result reads (``tracing.core.results``), the watchdog's per-step signals, the answer
and how the run ended. No model is asked.

The guess follows the failure in two passes.

1. A *decisive* cause before the final turn; the earliest one wins (at one
   step, observation before parameters before plan):
   - termination ``untested``: an answer handed in before any tool was used;
   - observation: success or data claimed right after a failure, a record's
     value misquoted, an informative result ignored, a claim no evidence holds
     (anchor breaks); an item said to be under a price its entry breaks
     (``broken_bound``); a rejected answer followed by another with no check
     of its own failing in between (``ignored_rejection``); a failed check
     "fixed" by changing what it expects (``edited_check``);
   - parameters: a call acting on an id, an object or a file name nothing
     observed (the anchor break ``unobserved_argument``), the same call
     failing again unchanged (``repeated_failure``), or the run's last stretch
     made mostly of failing calls (``failing_calls``) — a form the agent never
     got right;
   - plan: code that runs but keeps failing the task's own check
     (``wrong_results``), asking again and again for what it already had
     (``loop``), or the drift detector's stalled goal coverage (``drift``).
2. Otherwise the ending decides (``basis`` "ending", a weaker guess): handed
   over to a human (plan: the cause lay outside what it checked); ran out or
   was stopped (termination); claimed in the final turn a check it never ran
   (termination); an abstaining answer or one from memory (termination); an
   answer right after a result that failed, came back empty or held only
   nulls (observation); a bare "submit" after a read (parameters: the call
   whose output was handed in) or after changes (observation: the choice,
   made on its reading of the results before); else synthesis — the
   evidence was in, the answer combined it wrongly.

Every rule was checked for what it says about failure: how often it decides
on succeeded runs of the same source, where it should almost never fire
(bench/attribution_eval.py --rates; the figures and the rules that are only
habits are in bench/README-attribution.md).

Pure and bounded: one pass over the steps plus the anchor report's breaks;
given the analysis (``tracing.core.analysis.analyse``) it costs well under a
millisecond a run on shared/eval (the issue allows 5).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tracing.core.analysis import analyse
from tracing.core.anchoring import AnchorReport, Break
from tracing.core.anchoring.common import FINISH_TOOLS
from tracing.core.normalize import call_signature
from tracing.core.results import Reading, is_read_call, read_result
from tracing.core.steps import Step, is_reply, role_of


@dataclass(frozen=True)
class Layer:
    key: str
    name: str
    description: str


# The five layers of DESIGN.md section 1, in the order a ReAct turn meets them.
LAYERS = [
    Layer("plan", "Plan", "Wrong decomposition or goal: the agent set out to do the wrong thing, dropped part of the "
          "task, or went round in circles instead of widening its search."),
    Layer("parameters", "Parameters", "Wrong tool or arguments: the intent was right, but the calls were invalid, "
          "malformed or did not do what the agent meant, and it never got past them."),
    Layer("observation", "Observation", "A result misread, overlooked, or trusted when it should not have been "
          "(success claimed after a failure, an empty result taken as proof)."),
    Layer("synthesis", "Synthesis", "The evidence was there and read, but the answer combined it wrongly."),
    Layer("termination", "Termination", "Stopped too early (gave up, answered untested or from memory) or too late "
          "(ran out of steps)."),
]
LAYER_KEYS = tuple(layer.key for layer in LAYERS)

# --- thresholds ---------------------------------------------------------------

# The same call failing this many times (sent again unchanged after it failed)
# means the argument, not the world, is the problem: a flaky tool fails once,
# a wrong argument fails every time.
PARAM_MIN_REPEATS = 2

# In the run's last stretch (after its last RECOVERY_MIN_OK successes in a
# row), at least this share of calls failing, and at least PARAM_MIN_FAILURES
# of them: the agent never found a form that works. Half: a search that finds
# nothing now and then is normal exploration.
PARAM_FAIL_SHARE = 0.5
PARAM_MIN_FAILURES = 3

# A failure the agent got past: at least this many usable results after it
# (or in a row, for the last stretch). Two: one success can be luck, two is a
# way through.
RECOVERY_MIN_OK = 2

# Re-asking what it already had this many times is a loop, not a re-check (one
# return to a known place is navigation; gold ALFWorld runs walk back to a
# table to put things on it).
LOOP_MIN_REQUERIES = 3

# Code that runs but fails the task's own check this many times (each time
# changed): the idea of the solution is wrong, not its syntax.
CODE_MIN_WRONG_RESULTS = 2

# Anchor patterns that say a result was misread or trusted wrongly.
OBSERVATION_PATTERNS = frozenset(
    {"unconfirmed_success", "ignored_observation", "stale_value", "wrong_record", "rejected_resubmission",
     "unsupported_claim"}
)
# Anchor patterns that say a call's argument was wrong: an id, an email, an
# object or a file name nothing observed (made up or guessed), so the call
# could not do what the agent meant. The intent may be right; the argument is
# not, which is what the parameters layer means (tracing.core.anchoring.rules.unobserved_argument).
PARAMETER_PATTERNS = frozenset({"unobserved_argument"})

# Final answers that abstain: no answer is a stop, not a wrong combination.
ABSTAIN_RE = re.compile(
    r"^\W*(?:not enough info(?:rmation)?|unknown|none|n/?a|no answer|skip|i (?:do not|don't) know|"
    r"cannot (?:be )?(?:determined|answered|find)|unable to (?:determine|answer|find)|insufficient information|"
    r"(?:there is )?no (?:information|data|result))\W*$",
    re.IGNORECASE,
)

# A call that hands the case to someone else: the agent's own plan ran out.
HANDOFF_RE = re.compile(r"transfer|escalat|hand_?off|to_human|human_agent", re.IGNORECASE)

# The task's own check failed on output the code produced: a wrong result, not
# a malformed call.
_WRONG_RESULT_RE = re.compile(r"\bAssertionError\b|\bexpected\b.{0,80}\bbut got\b", re.IGNORECASE | re.DOTALL)

REASON_QUOTE_CHARS = 90

# A submission with no content of its own: the world state is the answer (the
# last command's output, the item in the cart), so the answer cannot have
# "combined evidence wrongly" — the call that made that state did.
BARE_FINAL_RE = re.compile(
    r"^\W*(?:stop|submit|done|finish|end|exit|quit|terminate|buy now|buy|checkout|place order|confirm|purchase)\W*$",
    re.IGNORECASE,
)

# An item's entry in a result: from its identifier to the next identifier, at
# most this many characters (a search listing gives each item a few lines).
ENTRY_CHARS = 600

# Identifiers of items and records: letters and digits mixed, 5+ characters
# ("B09JJP5BR2", "#W2378156", "L1002"), not words or plain numbers.
_ITEM_ID_RE = re.compile(r"(?<![\w#])#?(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{5,}\b")

# "lower than 50 dollars", "under $40" / "more than 3": a bound the agent says
# the item meets. Only a bound its entry's amounts break counts: claimed
# attributes merely absent from a listing were measured and tell nothing
# (as common before a success as before a failure, bench/README-attribution.md).
_UPPER_RE = re.compile(r"\b(?:lower|less|cheaper|under|below)(?:\s+th[ae]n)?\s+\$?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_LOWER_RE = re.compile(r"\b(?:more|greater|higher|over|above)(?:\s+th[ae]n)?\s+\$?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_AMOUNT_RE = re.compile(r"\$\s*(\d+(?:,\d{3})*(?:\.\d+)?)")
# Either bound, on lower-cased text: case-folding alternations cost ~10x, and
# most thoughts name no bound at all (ALFWorld's say "more likely" on every turn).
_ANY_BOUND_RE = re.compile(r"\b(?:lower|less|cheaper|under|below|more|greater|higher|over|above)(?:\s+th[ae]n)?\s+\$?\s*\d")


@dataclass
class Attribution:
    layer: str  # one of LAYER_KEYS
    step: int | None  # the agent's step it points at (None: the run as a whole)
    reason: str  # plain words, names the steps
    evidence: dict[str, Any] = field(default_factory=dict)
    # The rule that decided (e.g. "repeated_failure"): what a reviewer's
    # correction is measured against, rule by rule.
    rule: str = ""
    # "cause": a signal before the final turn decided; "ending": nothing did,
    # and how the run ended chose the layer (a weaker guess, shown as such).
    basis: str = "cause"

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "step": self.step, "reason": self.reason, "evidence": dict(self.evidence),
                "rule": self.rule, "basis": self.basis}


def layer_of(key: str) -> Layer | None:
    return next((layer for layer in LAYERS if layer.key == key), None)


_FAILED_OUTCOMES = frozenset({"failed", "failure", "stopped", "incorrect", "halted"})


def is_failure_outcome(outcome: Any) -> bool:
    """Whether an outcome is a failure of the agent: ``False`` or a failed /
    stopped run status. ``error`` (the model or the tools were down) is the
    infrastructure's failure, not a layer of the agent's; unknown is nothing."""
    if isinstance(outcome, bool):
        return not outcome
    return isinstance(outcome, str) and outcome.strip().lower() in _FAILED_OUTCOMES


def attribute(
    steps: Sequence[Step],
    task: str,
    *,
    outcome: Any,
    analysis: AnchorReport | None = None,
    context: dict[str, Any] | None = None,
) -> Attribution | None:
    """The first-guess layer of a failed run, or None for a run that did not fail.

    ``analysis``: the anchor report ``tracing.core.analysis.analyse`` returned for
    these steps (which also left the watchdog's signals in each step's meta);
    without it the analysis is run here on copies, so ``steps`` are never
    changed.
    """
    if not is_failure_outcome(outcome):
        return None
    ordered = sorted((s for s in steps if isinstance(s, Step)), key=lambda s: s.index)
    if _stopped_by(ordered) == "user":
        return None  # a person interrupted it: not a failure of the agent's
    if analysis is None:
        ordered = [replace(s, meta=dict(s.meta or {})) for s in ordered]
        analysis = analyse(ordered, task=task or "", context=context)
    run = _Run(ordered, analysis, task or "")
    return run.attribute()


# --- the run, read once -------------------------------------------------------


@dataclass
class _Call:
    step: Step
    tool: str
    signature: tuple[str, str]
    result: Step | None = None
    reading: Reading | None = None
    failed: bool = False
    wrong_result: bool = False  # ran, and the task's check said the output is wrong


def _stopped_by(steps: Sequence[Step]) -> str | None:
    """The detector of the intervention that stopped the run (a watchdog
    detector, "budget", "user"), if one did."""
    for step in reversed(steps):
        meta = step.meta if isinstance(step.meta, dict) else {}
        if step.kind == "intervention" and meta.get("tier") == "stop":
            return str(meta.get("detector") or "watchdog")
    return None


def _args(step: Step) -> Any:
    return step.args if step.args is not None and step.args != "" else step.text


def _is_final(step: Step) -> bool:
    """An answer handed in; the loop's fallback after a stop is not one."""
    if isinstance(step.meta, dict) and step.meta.get("fallback"):
        return False
    return step.kind == "final" or (step.kind == "action" and (step.tool or "").strip().lower() in FINISH_TOOLS)


def _final_text(step: Step) -> str:
    args = step.args
    if isinstance(args, str) and args.strip():
        return args
    if isinstance(args, dict):
        for value in args.values():
            if isinstance(value, str) and value.strip():
                return value
    return step.text or ""


def _quote(text: str, limit: int = REASON_QUOTE_CHARS) -> str:
    text = " ".join((text or "").split())
    return f"“{text[:limit]}…”" if len(text) > limit else f"“{text}”"


@dataclass
class _Candidate:
    layer: str
    step: int
    rule: str
    reason: str
    evidence: dict[str, Any]


# When two decisive causes point at the same step, the more specific one wins.
_ORDER = {"observation": 0, "parameters": 1, "plan": 2, "termination": 3, "synthesis": 4}


class _Run:
    def __init__(self, steps: list[Step], report: AnchorReport, task: str) -> None:
        self.steps = steps
        self.task = task
        # The loop's own fallback answer after a stop: its words are not the
        # agent's, so the anchor report's breaks on it are ignored.
        fallback = {st.index for st in steps if isinstance(st.meta, dict) and st.meta.get("fallback")}
        self.report = replace(report, breaks=[b for b in report.breaks if b.step not in fallback],
                              findings=[f for f in report.findings if f.step not in fallback]) if fallback else report
        self.calls: list[_Call] = []
        self.final: Step | None = None
        # Answers handed in, with the environment's verdict when it gave one.
        self.submissions: list[_Call] = []
        self._pair()
        self.final_turn_start = self._final_turn_start()

    def _pair(self) -> None:
        """Each action with the tool result that answered it (oldest pending call
        of the same tool first, as parallel calls are answered in order)."""
        pending: deque[_Call] = deque()
        for step in self.steps:
            if step.kind == "action" and not is_reply(step) or _is_final(step):
                call = _Call(step, (step.tool or "").strip().lower(), call_signature(step.tool, _args(step)))
                if _is_final(step):
                    self.final = step
                    self.submissions.append(call)
                else:
                    self.calls.append(call)
                pending.append(call)
            elif step.kind == "observation" and role_of(step) == "tool" and pending:
                name = (step.tool or "").strip().lower()
                call = next((c for c in pending if c.tool == name), pending[0])
                pending.remove(call)
                call.result = step
                reading = read_result(step.text, step.meta, _args(call.step), call.step.tool)
                call.reading = reading
                failed = reading.rejected or reading.status in ("error", "empty", "timeout")
                call.failed = failed and not reading.silent
                call.wrong_result = call.failed and bool(_WRONG_RESULT_RE.search((step.text or "")[:4000]))

    def _final_turn_start(self) -> int:
        """Index of the first step of the final turn (after the last tool result)."""
        if self.final is None:
            return self.steps[-1].index + 1 if self.steps else 0
        last_result = max((c.result.index for c in self.calls if c.result is not None and
                           c.result.index < self.final.index), default=-1)
        return last_result + 1

    def ok_after(self, index: int) -> int:
        """Usable results after step ``index``."""
        return sum(1 for c in self.calls if c.result is not None and c.result.index > index and not c.failed)

    # -- decisive causes before the final turn ---------------------------------
    def failing_calls(self) -> _Candidate | None:
        """parameters: the same call failing again, or the run's last stretch
        made mostly of failed calls — and the run never got past it."""
        form_failures = [c for c in self.calls if c.failed and not c.wrong_result and not c.reading.rejected]
        if not form_failures:
            return None
        by_signature: dict[tuple[str, str], list[_Call]] = {}
        for call in form_failures:
            by_signature.setdefault(call.signature, []).append(call)
        best: _Candidate | None = None
        for group in by_signature.values():
            if len(group) < PARAM_MIN_REPEATS or self.ok_after(group[-1].result.index) >= RECOVERY_MIN_OK:
                continue
            first = group[0]
            cand = _Candidate("parameters", first.step.index, "repeated_failure", (
                f"the call at step {first.step.index} ({_quote(_args_text(first.step), 60)}) failed "
                f"{len(group)} times, sent again unchanged ({_quote(first.result.text or '(empty)', 60)}); "
                f"the run never got past it"
            ), {"calls": [c.step.index for c in group][:10], "failures": len(group),
                "result": _quote(first.result.text or "(empty)", 120)})
            if best is None or cand.step < best.step:
                best = cand
        stretch = self._failing_stretch()
        if stretch is not None and (best is None or stretch.step < best.step):
            best = stretch
        return best

    def _failing_stretch(self) -> _Candidate | None:
        """The calls after the run's last RECOVERY_MIN_OK successes in a row, when
        mostly failures; pointed at the first failure of the tool that failed
        most there — earlier in the run when that tool had already failed the
        same way (the form was wrong from then on)."""
        answered = [c for c in self.calls if c.result is not None]
        start, in_row = 0, 0
        for pos, call in enumerate(answered):
            in_row = 0 if call.failed else in_row + 1
            if in_row >= RECOVERY_MIN_OK:
                start = pos + 1
        tail = answered[start:]
        failed = [c for c in tail if c.failed and not c.wrong_result and not c.reading.rejected]
        if len(failed) < PARAM_MIN_FAILURES or len(failed) / len(tail) < PARAM_FAIL_SHARE:
            return None
        tool = Counter(c.tool for c in failed).most_common(1)[0][0]
        first = next(c for c in failed if c.tool == tool)
        same = _normal_text(first.result.text)
        earlier = next((c for c in answered[:start] if c.failed and c.tool == tool and
                        _normal_text(c.result.text) == same), None)
        first = earlier or first
        return _Candidate("parameters", first.step.index, "failing_calls", (
            f"{len(failed)} of the last {len(tail)} calls failed, most of them {tool or 'calls'} "
            f"(first at step {first.step.index}: {_quote(_args_text(first.step), 60)} → "
            f"{_quote(first.result.text or '(empty)', 60)}); the agent never found a call that works"
        ), {"first_failure": first.step.index, "failed": len(failed), "calls": len(tail), "tool": tool})

    def wrong_results(self) -> _Candidate | None:
        """plan: code that runs but keeps failing the task's own check, each time changed."""
        wrong = [c for c in self.calls if c.wrong_result]
        if len(wrong) < CODE_MIN_WRONG_RESULTS:
            return None
        first = wrong[0]
        return _Candidate("plan", first.step.index, "wrong_results", (
            f"the code at step {first.step.index} runs but fails the task's check "
            f"({_quote(_last_line(first.result.text), 70)}), and so do {len(wrong) - 1} more versions: "
            f"the idea of the solution is wrong, not its syntax"
        ), {"calls": [c.step.index for c in wrong][:10]})

    def loops(self) -> _Candidate | None:
        """plan: asking again, over and over, for what it already had."""
        requeries = [b for b in self.report.breaks if b.pattern == "requery" and not b.evidence.get("earlier_failed")]
        if len(requeries) < LOOP_MIN_REQUERIES:
            return None
        first = requeries[0]
        return _Candidate("plan", first.step, "loop", (
            f"from step {first.step} the agent asks again for what it already had ({len(requeries)} times, "
            f"first: {first.reason}); the search never widens"
        ), {"requeries": [b.step for b in requeries][:10]})

    def drift(self) -> _Candidate | None:
        """plan: the drift detector saw the goal coverage stop growing."""
        for step in self.steps:
            sig = (step.meta or {}).get("signals") or {}
            if isinstance(sig, dict) and sig.get("drift") == 1 and step.index < self.final_turn_start:
                checkpoint = sig.get("checkpoint") if isinstance(sig.get("checkpoint"), dict) else {}
                missing = [str(m) for m in (checkpoint.get("missing") or [])][:6]
                return _Candidate("plan", step.index, "drift", (
                    f"by step {step.index} the run had stopped closing in on the goal (still missing: "
                    f"{', '.join(missing) or 'part of the goal'})"
                ), {"coverage": sig.get("coverage"), "missing": missing})
        return None

    def untested(self) -> _Candidate | None:
        """termination: an answer submitted before any tool was used (no search,
        no run of the code): it stopped before it started."""
        if not self.submissions:
            return None
        first = self.submissions[0].step
        if any(c.step.index < first.index for c in self.calls):
            return None
        thoughts = [s.index for s in self.steps if s.kind == "thought" and s.index < first.index]
        at = thoughts[-1] if thoughts else first.index
        claim = next((s.text for s in self.steps if s.index == at and s.kind == "thought"), "")
        return _Candidate("termination", at, "untested", (
            f"the answer at step {first.index} was submitted before any tool was used"
            + (f" ({_quote(claim, 70)})" if claim else "")
        ), {"submission_step": first.index, "calls_before": 0})

    def ignored_rejection(self) -> _Candidate | None:
        """observation: the environment rejected an answer, and the agent handed
        in another without any of its own checks failing in between: it trusted
        its checks over the verdict and never found out what was wrong."""
        for pos, sub in enumerate(self.submissions[:-1]):
            if sub.result is None or sub.reading is None or not sub.reading.rejected:
                continue
            again = self.submissions[pos + 1].step
            between = [c for c in self.calls if sub.result.index < c.step.index < again.index]
            if any(c.failed for c in between):
                continue
            at = next((s.index for s in self.steps if s.index > sub.result.index and role_of(s) == "assistant"),
                      again.index)
            return _Candidate("observation", at, "ignored_rejection", (
                f"the answer at step {sub.step.index} was rejected ({_quote(sub.result.text or '', 50)}); the agent "
                f"handed in another at step {again.index} after {len(between)} check(s) of its own, none of which "
                f"failed: the rejection was never explained"
            ), {"rejected_step": sub.step.index, "rejection_step": sub.result.index, "resubmission_step": again.index,
                "checks_between": len(between)})
        return None

    def edited_check(self) -> _Candidate | None:
        """observation: a check of its own failed, and the agent changed what the
        check expects (not the code) until it passed: the failure's message was
        read as noise in the check."""
        for pos, call in enumerate(self.calls[:-1]):
            if not call.wrong_result:
                continue
            after = self.calls[pos + 1]
            before_expect, after_expect = _expected_values(_args_text(call.step)), _expected_values(_args_text(after.step))
            if not before_expect or not after_expect or before_expect == after_expect or after.failed:
                continue
            at = next((s.index for s in self.steps if s.index > call.result.index and role_of(s) == "assistant"),
                      after.step.index)
            return _Candidate("observation", at, "edited_check", (
                f"the check at step {call.step.index} failed ({_quote(_last_line(call.result.text), 70)}); at step "
                f"{after.step.index} the agent changed what the check expects ({', '.join(sorted(before_expect))[:60]} "
                f"→ {', '.join(sorted(after_expect))[:60]}) and it passed"
            ), {"failed_check_step": call.step.index, "edited_check_step": after.step.index,
                "expected_before": sorted(before_expect)[:5], "expected_after": sorted(after_expect)[:5]})
        return None

    def broken_bound(self) -> _Candidate | None:
        """observation: the agent says an item of the latest result is under (or
        over) an amount while the item's own entry shows it is not ("B07… is
        lower than 50 dollars" above "$52.0")."""
        latest: Step | None = None
        for step in self.steps:
            if step.kind == "observation" and role_of(step) == "tool":
                latest = step
                continue
            if step.kind != "thought" or latest is None or step.index >= self.final_turn_start:
                continue
            text = (step.text or "")[:2000]
            if not _ANY_BOUND_RE.search(text.lower()):
                continue  # one scan of the thought; sentences only when it names a bound
            result = latest.text or ""
            for sentence in re.split(r"(?<=[.!?])\s+", text):
                if not (_UPPER_RE.search(sentence) or _LOWER_RE.search(sentence)):
                    continue
                for item in dict.fromkeys(m.group(0) for m in _ITEM_ID_RE.finditer(sentence)):
                    entry = _entry(result, item)
                    broken = _broken_bound(sentence, entry) if entry is not None else None
                    if broken:
                        return _Candidate("observation", step.index, "broken_bound", (
                            f"the thought at step {step.index} says {item} is {broken[0]} "
                            f"({_quote(sentence, 80)}), but its entry in the result at step {latest.index} "
                            f"shows {broken[1]}"
                        ), {"item": item, "result_step": latest.index, "claim": sentence[:200],
                            "entry": _quote(entry or "", 160)})
        return None

    def observation_breaks(self) -> _Candidate | None:
        for brk in self.report.breaks:
            if brk.pattern in OBSERVATION_PATTERNS and brk.step < self.final_turn_start and not self._recalled(brk):
                return _from_break(brk, "observation")
        return None

    def parameter_breaks(self) -> _Candidate | None:
        for brk in self.report.breaks:
            if brk.pattern in PARAMETER_PATTERNS and brk.step < self.final_turn_start:
                return _from_break(brk, "parameters")
        return None

    def _recalled(self, brk: Break) -> bool:
        """A "found it" claim the latest result does not show but an earlier one
        did ("Now I find a mug (2)", seen in the fridge twenty steps before):
        memory, not a misread; what went wrong comes after it."""
        missing = brk.evidence.get("missing") if brk.pattern == "unconfirmed_success" else None
        if not missing or not isinstance(missing, list):
            return False
        seen = [(c.result.text or "").lower() for c in self.calls
                if c.result is not None and c.result.index < brk.step and not c.failed]
        return all(any(str(unit).lower() in text for text in seen) for unit in missing)

    # -- the ending ------------------------------------------------------------
    def ending(self) -> _Candidate:
        final = self.final
        final_breaks = [b for b in self.report.breaks if b.step >= self.final_turn_start]
        handoff = next((c for c in reversed(self.calls) if HANDOFF_RE.search(c.tool)), None)
        if handoff is not None:
            return _Candidate("plan", handoff.step.index, "handed_off", (
                f"the agent handed the case over at step {handoff.step.index} ({handoff.step.tool}) after "
                f"{len(self.calls) - 1} other call(s): the cause lay outside what its plan checked"
            ), {"handoff_step": handoff.step.index, "calls": len(self.calls)})
        if final is None:
            final = self._last_reply()
        if final is None:
            last = next((s for s in reversed(self.steps) if role_of(s) == "assistant" and s.kind != "final"), None)
            at = last.index if last is not None else (self.steps[-1].index if self.steps else 0)
            brake = _stopped_by(self.steps)
            how = f"was stopped ({brake})" if brake else "ran out"
            return _Candidate("termination", at, "no_answer", (
                f"the run ended without an answer, the agent's last step being {at}: it {how} before it finished"
            ), {"last_step": at, "stopped_by": brake})
        unverified = [b for b in [*self.report.findings, *self.report.breaks]
                      if b.pattern in ("untested_claim", "phantom_call") and b.step >= self.final_turn_start]
        if unverified:
            brk = unverified[0]
            return _Candidate("termination", brk.step, "unverified", (
                f"{brk.reason}; it handed in its answer without checking"
            ), {"claim": brk.evidence.get("claim", ""), "final_step": final.index})
        answer = _final_text(final)
        if ABSTAIN_RE.match(answer.strip()) or not answer.strip():
            return _Candidate("termination", final.index, "gave_up", (
                f"the answer at step {final.index} gives up ({_quote(answer or '(empty)', 60)}) with "
                f"{len(self.calls)} call(s) made"
            ), {"answer": answer[:200], "calls": len(self.calls)})
        memory = [f for f in self.report.findings if f.pattern == "answered_from_memory"]
        if memory:
            return _Candidate("termination", final.index, "from_memory", (
                f"{memory[0].reason}: it answered before looking it up"
            ), {"claim": memory[0].evidence.get("claim", "")})
        last_call = self.calls[-1] if self.calls else None
        thought = self._final_thought()
        if last_call is not None and last_call.result is not None and (last_call.failed or _only_nulls(last_call)):
            return _Candidate("observation", thought, "trusted_failure", (
                f"the answer at step {final.index} ({_quote(answer, 50)}) follows a result that failed or came "
                f"back empty at step {last_call.result.index} ({_quote(last_call.result.text or '(empty)', 60)})"
            ), {"result_step": last_call.result.index, "answer": answer[:200]})
        if final_breaks:
            brk = final_breaks[0]
            return _from_break(brk, "parameters" if brk.pattern in PARAMETER_PATTERNS else "synthesis")
        if BARE_FINAL_RE.match(answer) and last_call is not None:
            return self._submitted_state(final)
        return _Candidate("synthesis", thought, "answer", (
            f"nothing before the answer went wrong that the trace shows; the answer at step {final.index} "
            f"({_quote(answer, 60)}) combined the evidence wrongly"
        ), {"answer": answer[:200]})

    def _submitted_state(self, final: Step) -> _Candidate:
        """A bare "submit" / "Buy Now": the state the calls left is the answer.
        After a read (a query, a command) that state is the call's output, so
        its arguments were wrong; after changes (picking an item, an option)
        it is what the agent chose, on its reading of the results before."""
        made = next((c for c in reversed(self.calls) if not c.failed), self.calls[-1])
        if is_read_call(made.step.tool, _args(made.step)):
            return _Candidate("parameters", made.step.index, "submitted_output", (
                f"the submission at step {final.index} hands in the output of the call at step {made.step.index} "
                f"({_quote(_args_text(made.step), 70)}), which was judged wrong"
            ), {"call_step": made.step.index, "final_step": final.index})
        chain = [made]
        for call in reversed(self.calls[: self.calls.index(made)]):
            if call.failed or is_read_call(call.step.tool, _args(call.step)):
                break
            chain.insert(0, call)
        first = chain[0]
        # The thought that made the choice: the last one of the turn the first
        # change was made in, else the change itself.
        previous = max((c.step.index for c in self.calls if c.step.index < first.step.index), default=-1)
        at = max((s.index for s in self.steps if s.kind == "thought" and previous < s.index < first.step.index),
                 default=first.step.index)
        return _Candidate("observation", at, "wrong_choice", (
            f"the submission at step {final.index} commits what the agent chose from step {first.step.index} on "
            f"({_quote(_args_text(first.step), 60)}), on its reading of the results before; it was judged wrong"
        ), {"choice_step": first.step.index, "changes": [c.step.index for c in chain][:10], "final_step": final.index})

    def _last_reply(self) -> Step | None:
        """In a dialogue that the user ended (the last step is the user's turn),
        the agent's last reply stands for its answer."""
        if not self.steps or role_of(self.steps[-1]) != "user":
            return None
        return next((s for s in reversed(self.steps) if is_reply(s)), None)

    def _final_thought(self) -> int:
        """The reasoning that produced the answer: the last thought of the final
        turn, else the final step itself."""
        final = self.final or self._last_reply()
        assert final is not None
        thoughts = [s.index for s in self.steps if s.kind == "thought" and self.final_turn_start <= s.index < final.index]
        return thoughts[-1] if thoughts else final.index

    def attribute(self) -> Attribution:
        causes = (self.untested(), self.observation_breaks(), self.ignored_rejection(), self.edited_check(),
                  self.broken_bound(), self.parameter_breaks(), self.failing_calls(), self.wrong_results(),
                  self.loops(), self.drift())
        decisive = [c for c in causes if c is not None]
        chosen = min(decisive, key=lambda c: (c.step, _ORDER[c.layer])) if decisive else self.ending()
        return Attribution(layer=chosen.layer, step=chosen.step, reason=chosen.reason, evidence=chosen.evidence,
                           rule=chosen.rule, basis="cause" if decisive else "ending")


def _from_break(brk: Break, layer: str) -> _Candidate:
    evidence = {"pattern": brk.pattern, **{k: v for k, v in brk.evidence.items() if k != "pattern"}}
    return _Candidate(layer, brk.step, brk.pattern, brk.reason, evidence)


def _args_text(step: Step) -> str:
    args = _args(step)
    return args if isinstance(args, str) else str(args)


def _entry(result: str, item: str) -> str | None:
    """The item's entry in a result: from its identifier to the next sibling's
    (an identifier of the same length and first character: listings number
    their items alike, while a model number inside a title is another shape)."""
    at = result.find(item)
    if at < 0:
        return None
    end = at + len(item)
    stop = end + ENTRY_CHARS
    for match in _ITEM_ID_RE.finditer(result, end, stop):
        sibling = match.group(0)
        if len(sibling) == len(item) and sibling[:1] == item[:1]:
            stop = match.start()
            break
    return result[at:stop]


def _broken_bound(sentence: str, entry: str) -> tuple[str, str] | None:
    """(what was claimed, what the entry shows) when the entry's amounts break
    the bound the sentence claims."""
    amounts = [float(a.replace(",", "")) for a in _AMOUNT_RE.findall(entry)]
    if not amounts:
        return None
    upper, lower = _UPPER_RE.search(sentence), _LOWER_RE.search(sentence)
    if upper and min(amounts) >= float(upper.group(1)):
        return f"under {upper.group(1)}", f"${min(amounts):g}"
    if lower and max(amounts) <= float(lower.group(1)):
        return f"over {lower.group(1)}", f"${max(amounts):g}"
    return None


# "assert f(10) == 62.83, ..." -> "62.83": what a check expects.
_ASSERT_RE = re.compile(r"^\s*assert\b[^\n]*?==\s*([^,\n]+?)\s*(?:,|$)", re.MULTILINE)


def _expected_values(code: str) -> frozenset[str]:
    return frozenset(" ".join(m.group(1).split()) for m in _ASSERT_RE.finditer(code[:20_000]))


def _only_nulls(call: _Call) -> bool:
    """A result holding nothing but nulls (``[(None,)]`` from an SQL aggregate
    over nothing): read as data, worth as much as an empty one."""
    data = call.reading.data if call.reading is not None else None

    def nulls(value: Any, depth: int = 0) -> bool:
        if value is None:
            return True
        if isinstance(value, (list, tuple)) and value and depth < 4:
            return all(nulls(v, depth + 1) for v in value)
        return False

    return isinstance(data, (list, tuple)) and bool(data) and nulls(data)


def _normal_text(text: str | None) -> str:
    return " ".join((text or "").lower().split())[:300]


def _last_line(text: str | None) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    for line in reversed(lines):
        if _WRONG_RESULT_RE.search(line):
            return line
    return lines[-1] if lines else ""


__all__ = ["LAYERS", "LAYER_KEYS", "Attribution", "Layer", "attribute", "is_failure_outcome", "layer_of"]

