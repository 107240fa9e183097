"""The registry of break patterns: which rule module is asked at which hook, in order.


A rule is a pure function ``check(state, step, text) -> list[Break]`` over
the run's state (``tracing.core.anchoring.state``), registered under the pattern
it judges and the hook at which the pass calls it:

  ``turn_end``   the turn after a result, when the next observation comes;
  ``result``     a tool result, once the state has taken it in;
  ``call``       an action, once the state has taken it in;
  ``early``      a thought or reply, before anything else (first break wins);
  ``first_look`` a thought before the first observation (first wins);
  ``statement``, then ``sentence`` (each asserting sentence), then ``claims``
                 a thought or reply after the first observation (first wins);
  ``submit``     a final step: what it submits;
  ``flag``, ``conclusion``, ``final`` (first wins), then ``answer``
                 the final answer;
  ``end``        the run is over.

Within a first-wins hook the first rule whose check returns a break ends the
hook (a NOTES finding does not). ``anchor_report(..., disabled=...)`` switches
rules off by pattern name: their checks are not run and their breaks dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tracing.core.anchoring.rules import (
    against_conclusion,
    ignored_observation,
    phantom_call,
    rejected_resubmission,
    requery,
    stale_value,
    unconfirmed_success,
    unobserved_argument,
    unsupported_claim,
    wrong_record,
    wrong_relation,
)

# Hooks where the first rule that breaks ends the hook.
FIRST_WINS = frozenset(["early", "first_look", "statement", "sentence", "claims", "flag", "conclusion", "final"])
# Findings a rule may return beside its breaks that never end a hook.
NOTES = frozenset([phantom_call.UNTESTED])


@dataclass(frozen=True)
class Rule:
    name: str  # the pattern it judges
    hook: str
    check: Callable[[Any, Any, str], list[Any]]


RULES: tuple[Rule, ...] = (
    Rule(ignored_observation.NAME, "turn_end", ignored_observation.on_turn_end),
    Rule(unobserved_argument.NAME, "result", unobserved_argument.on_result),
    Rule(requery.NAME, "result", requery.on_result),
    Rule(requery.NAME, "call", requery.on_call),
    Rule(rejected_resubmission.NAME, "call", rejected_resubmission.on_call),
    Rule(unobserved_argument.NAME, "call", unobserved_argument.on_call),
    Rule(phantom_call.NAME, "early", phantom_call.read_out),
    Rule(unsupported_claim.NAME, "early", unsupported_claim.invented_identifier),
    Rule(phantom_call.NAME, "early", phantom_call.unrun_outcome),
    Rule(phantom_call.NAME, "first_look", phantom_call.before_looking),
    Rule(wrong_record.NAME, "statement", wrong_record.other_answer),
    Rule(unconfirmed_success.NAME, "statement", unconfirmed_success.unanswered_details),
    Rule(phantom_call.NAME, "statement", phantom_call.columns_unread),
    Rule(unsupported_claim.NAME, "statement", unsupported_claim.misnamed_user),
    Rule(unconfirmed_success.NAME, "statement", unconfirmed_success.done_by_failed_call),
    Rule(unconfirmed_success.NAME, "sentence", unconfirmed_success.after_failure),
    Rule(phantom_call.NAME, "sentence", phantom_call.reported_done),
    Rule(unconfirmed_success.NAME, "sentence", unconfirmed_success.silent_output),
    Rule(stale_value.NAME, "claims", stale_value.on_statement),
    Rule(wrong_record.NAME, "claims", wrong_record.named_record),
    Rule(unsupported_claim.NAME, "claims", unsupported_claim.on_claims),
    Rule(ignored_observation.NAME, "claims", ignored_observation.error_passed_over),
    Rule(phantom_call.NAME, "submit", phantom_call.click),
    Rule(rejected_resubmission.NAME, "submit", rejected_resubmission.check),
    Rule(unsupported_claim.NAME, "flag", unsupported_claim.flag),
    Rule(against_conclusion.NAME, "conclusion", against_conclusion.on_final),
    Rule(stale_value.NAME, "final", stale_value.on_final),
    Rule(unconfirmed_success.NAME, "final", unconfirmed_success.after_failure),
    Rule(unsupported_claim.NAME, "answer", unsupported_claim.final_answer),
    Rule(wrong_relation.NAME, "answer", wrong_relation.on_final),
    Rule(requery.NAME, "end", requery.on_end),
)

NAMES = tuple(dict.fromkeys(rule.name for rule in RULES))


def by_hook(disabled: Iterable[str] = ()) -> dict[str, tuple[Rule, ...]]:
    """The enabled rules of each hook, in registry order."""
    off = set(disabled)
    unknown = off - set(NAMES)
    if unknown:
        raise ValueError(f"unknown rules: {', '.join(sorted(unknown))}")
    out: dict[str, list[Rule]] = {}
    for rule in RULES:
        if rule.name not in off:
            out.setdefault(rule.hook, []).append(rule)
    return {hook: tuple(rules) for hook, rules in out.items()}
