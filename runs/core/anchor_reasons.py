"""A detector's reason ("the thought at step 3 says “…”, but nothing was run
yet") in the page's language.

tracing/core/anchoring builds its reasons as English sentences and stays free of
Django; they are translated here, where they are shown. A reason is cut into
its clauses (joined by "; "), each clause matched against the sentence
templates below; the agent's own words — the quoted “…” parts, the names and
values a rule quotes without marks — are carried over as they were, never
translated. A reason with a clause no template knows is shown in English
whole rather than half translated.
"""

from __future__ import annotations

import re

from django.utils.translation import get_language, pgettext_lazy
from django.utils.translation import gettext_lazy as _

# What the sentence is about: the step kinds as the rules name them (tracing.core.anchoring.common.what).
SUBJECTS = {
    "thought": pgettext_lazy("anchor subject", "thought"),
    "action": pgettext_lazy("anchor subject", "action"),
    "observation": pgettext_lazy("anchor subject", "observation"),
    "final answer": pgettext_lazy("anchor subject", "final answer"),
    "final": pgettext_lazy("anchor subject", "final answer"),
    "reply": pgettext_lazy("anchor subject", "reply"),
    "submission": pgettext_lazy("anchor subject", "submission"),
}
_HELD = r"\x00\d+\x00"  # a quoted part, held aside while the clause is matched
_W = "(?P<what>" + "|".join(sorted(map(re.escape, SUBJECTS), key=len, reverse=True)) + ")"


def _t(pattern: str) -> re.Pattern:
    return re.compile("^" + pattern.replace("{W}", _W).replace("{Q}", _HELD).replace("{N}", r"\d+") + "$")


# (clause pattern, its sentence in the catalogue). Named groups fill the sentence's placeholders.
CLAUSES = [
    (_t(r"the {W} at step (?P<n>{N}) says (?P<q>{Q}), but nothing was run yet"),
     _("the %(what)s at step %(n)s says %(q)s, but nothing was run yet")),
    (_t(r"the {W} at step (?P<n>{N}) writes its own observation \((?P<q>{Q})\): it acts as if a tool had answered"),
     _("the %(what)s at step %(n)s writes its own observation (%(q)s): it acts as if a tool had answered")),
    (_t(r"the {W} at step (?P<n>{N}) reads out (?P<q>{Q}), but no call returned anything since the agent last "
        r"spoke: (?P<q2>{Q})"),
     _("the %(what)s at step %(n)s reads out %(q)s, but no call returned anything since the agent last spoke: "
       "%(q2)s")),
    (_t(r"the {W} at step (?P<n>{N}) says (?P<q>{Q}), but no (?P<verb>\S+) call was made since the agent last "
        r"spoke: (?P<q2>{Q})"),
     _("the %(what)s at step %(n)s says %(q)s, but no %(verb)s call was made since the agent last spoke: %(q2)s")),
    (_t(r"at step (?P<n>{N}) the agent says what it does next \((?P<q>{Q})\), but no call was made and no result "
        r"came back since"),
     _("at step %(n)s the agent says what it does next (%(q)s), but no call was made and no result came back "
       "since")),
    (_t(r"the {W} at step (?P<n>{N}) reports how it went: (?P<q>{Q})"),
     _("the %(what)s at step %(n)s reports how it went: %(q)s")),
    (_t(r"the thought at step (?P<n>{N}) planned a lookup \((?P<q>{Q})\) that was never made"),
     _("the thought at step %(n)s planned a lookup (%(q)s) that was never made")),
    (_t(r"the {W} at step (?P<n>{N}) states (?P<x>.+) as if it had been read"),
     _("the %(what)s at step %(n)s states %(x)s as if it had been read")),
    (_t(r"the submission at step (?P<n>{N}) is the one step (?P<m>{N}) made, which the environment rejected at "
        r"step (?P<k>{N}) \((?P<q>{Q})\)"),
     _("the submission at step %(n)s is the one step %(m)s made, which the environment rejected at step %(k)s "
       "(%(q)s)")),
    (_t(r"it was sent again unchanged"), _("it was sent again unchanged")),
    (_t(r"the action at step (?P<n>{N}) repeats step (?P<m>{N}), which had failed \((?P<q>{Q})\), and fails the "
        r"same way"),
     _("the action at step %(n)s repeats step %(m)s, which had failed (%(q)s), and fails the same way")),
    (_t(r"the action at step (?P<n>{N}) asks again what step (?P<m>{N}) already obtained \(observation at step "
        r"(?P<k>{N}): (?P<q>{Q})\)"),
     _("the action at step %(n)s asks again what step %(m)s already obtained (observation at step %(k)s: %(q)s)")),
    (_t(r"the observation at step (?P<n>{N}) reports a failure \((?P<q>{Q})\)"),
     _("the observation at step %(n)s reports a failure (%(q)s)")),
    (_t(r"the run at step (?P<n>{N}) gave no output \(result at step (?P<m>{N}): (?P<q>{Q})\)"),
     _("the run at step %(n)s gave no output (result at step %(m)s: %(q)s)")),
    (_t(r"the {W} at step (?P<n>{N}) says what it showed: (?P<q>{Q})"),
     _("the %(what)s at step %(n)s says what it showed: %(q)s")),
    (_t(r"the {W} at step (?P<n>{N}) uses (?P<x>.+), which no observation \(nor the task\) contains"),
     _("the %(what)s at step %(n)s uses %(x)s, which no observation (nor the task) contains")),
    (_t(r"the observation at step (?P<n>{N}) says (?P<q>{Q})"), _("the observation at step %(n)s says %(q)s")),
    (_t(r"the final answer at step (?P<n>{N}) submits (?P<q>{Q}), which no result printed"),
     _("the final answer at step %(n)s submits %(q)s, which no result printed")),
    (_t(r"the thought at step (?P<n>{N}) asserts (?P<x>.+), which no observation \(nor the task\) contains, and the "
        r"final answer at step (?P<m>{N}) \((?P<q>{Q})\) rests on it"),
     _("the thought at step %(n)s asserts %(x)s, which no observation (nor the task) contains, and the final "
       "answer at step %(m)s (%(q)s) rests on it")),
    (_t(r"the final answer at step (?P<n>{N}) \((?P<q>{Q})\) is not what the thought at step (?P<m>{N}) concluded "
        r"\((?P<q2>{Q})\)"),
     _("the final answer at step %(n)s (%(q)s) is not what the thought at step %(m)s concluded (%(q2)s)")),
    (_t(r"the {W} at step (?P<n>{N}) addresses the user as (?P<q>{Q}), a name neither the user nor any result "
        r"gave: (?P<q2>{Q})"),
     _("the %(what)s at step %(n)s addresses the user as %(q)s, a name neither the user nor any result gave: "
       "%(q2)s")),
    (_t(r"the observation at step (?P<n>{N}) brought new facts \((?P<x>.+)\)"),
     _("the observation at step %(n)s brought new facts (%(x)s)")),
    (_t(r"the next step \((?P<n>{N})\) uses none of them and does not say why"),
     _("the next step (%(n)s) uses none of them and does not say why")),
    (_t(r"the call at step (?P<n>{N}) for (?P<x>.+) failed \(result at step (?P<m>{N})\)"),
     _("the call at step %(n)s for %(x)s failed (result at step %(m)s)")),
    (_t(r"the {W} at step (?P<n>{N}) reports it done: (?P<q>{Q})"),
     _("the %(what)s at step %(n)s reports it done: %(q)s")),
    (_t(r"the lookup of (?P<x>.+) at step (?P<n>{N}) came back with nothing \(result at step (?P<m>{N})\)"),
     _("the lookup of %(x)s at step %(n)s came back with nothing (result at step %(m)s)")),
    (_t(r"the {W} at step (?P<n>{N}) states its details: (?P<q>{Q})"),
     _("the %(what)s at step %(n)s states its details: %(q)s")),
    (_t(r"the call at step (?P<n>{N}) failed \((?P<q>{Q}), step (?P<m>{N})\)"),
     _("the call at step %(n)s failed (%(q)s, step %(m)s)")),
    (_t(r"the {W} at step (?P<n>{N}) neither says so nor takes it up, and goes on as if it had worked"),
     _("the %(what)s at step %(n)s neither says so nor takes it up, and goes on as if it had worked")),
    (_t(r"the call at step (?P<n>{N}) asked for (?P<key>\S+) (?P<asked>.+), but the result at step (?P<m>{N}) is for "
        r"(?P<got>.+)"),
     _("the call at step %(n)s asked for %(key)s %(asked)s, but the result at step %(m)s is for %(got)s")),
    (_t(r"the {W} at step (?P<n>{N}) goes on as if it were (?P<x>.+)'s"),
     _("the %(what)s at step %(n)s goes on as if it were %(x)s's")),
    (_t(r"the call at step (?P<n>{N})(?P<call>(?: \({Q}\))?) uses (?P<x>.+), which no earlier result, user turn, the "
        r"task or the context contains"),
     _("the call at step %(n)s%(call)s uses %(x)s, which no earlier result, user turn, the task or the context "
       "contains")),
    (_t(r"the call at step (?P<n>{N})(?P<call>(?: \({Q}\))?) uses (?P<x>.+), which no earlier observation, the task "
        r"or the context contains"),
     _("the call at step %(n)s%(call)s uses %(x)s, which no earlier observation, the task or the context contains")),
    (_t(r"no call had returned anything before it"), _("no call had returned anything before it")),
    (_t(r"the latest result \(step (?P<n>{N})\) does not hold it either"),
     _("the latest result (step %(n)s) does not hold it either")),
    (_t(r"the call at step (?P<n>{N}) returned an error \((?P<q>{Q})\)"),
     _("the call at step %(n)s returned an error (%(q)s)")),
    (_t(r"the observation at step (?P<n>{N}) \((?P<q>{Q})\) is not about what was asked \((?P<x>.+)\)"),
     _("the observation at step %(n)s (%(q)s) is not about what was asked (%(x)s)")),
    (_t(r"step (?P<n>{N}) carries on without using it or saying so"),
     _("step %(n)s carries on without using it or saying so")),
    (_t(r"the {W} at step (?P<n>{N}) claims success: (?P<q>{Q})"),
     _("the %(what)s at step %(n)s claims success: %(q)s")),
    (_t(r"the observation at step (?P<n>{N}) ties (?P<x>.+) to (?P<y>.+) \((?P<q>{Q})\)"),
     _("the observation at step %(n)s ties %(x)s to %(y)s (%(q)s)")),
    (_t(r"the {W} at step (?P<n>{N}) takes (?P<q>{Q}) from (?P<q2>{Q}), which says nothing about it"),
     _("the %(what)s at step %(n)s takes %(q)s from %(q2)s, which says nothing about it")),
    (_t(r"the {W} at step (?P<n>{N}) gives (?P<rec>.+) the (?P<field>.+) (?P<q>{Q}), which belongs to (?P<other>.+)"),
     _("the %(what)s at step %(n)s gives %(rec)s the %(field)s %(q)s, which belongs to %(other)s")),
    (_t(r"(?P<rec>\S+) has (?P<q>{Q}) \(result at step (?P<n>{N})\): (?P<q2>{Q})"),
     _("%(rec)s has %(q)s (result at step %(n)s): %(q2)s")),
    (_t(r"the {W} at step (?P<n>{N}) reports (?P<q>{Q}) as done, but no call of (?P<tool>\S+) was made before it: "
        r"(?P<q2>{Q})"),
     _("the %(what)s at step %(n)s reports %(q)s as done, but no call of %(tool)s was made before it: %(q2)s")),
    (_t(r"the {W} at step (?P<n>{N}) says (?P<field>.+) of (?P<rec>.+) is (?P<q>{Q}), but the result at step "
        r"(?P<m>{N}) shows it is now (?P<q2>{Q}): (?P<q3>{Q})"),
     _("the %(what)s at step %(n)s says %(field)s of %(rec)s is %(q)s, but the result at step %(m)s shows it is now "
       "%(q2)s: %(q3)s")),
    (_t(r"the {W} at step (?P<n>{N}) claims (?P<q>{Q}), but the observation at step (?P<m>{N}) \((?P<q2>{Q})\) does "
        r"not show (?P<x>.+)"),
     _("the %(what)s at step %(n)s claims %(q)s, but the observation at step %(m)s (%(q2)s) does not show %(x)s")),
    (_t(r"the thought at step (?P<n>{N}) states (?P<x>.+), which no observation \(nor the task\) contains, and the "
        r"final answer \((?P<q>{Q})\) gives it: it comes from the model's own knowledge, not from the trace"),
     _("the thought at step %(n)s states %(x)s, which no observation (nor the task) contains, and the final answer "
       "(%(q)s) gives it: it comes from the model's own knowledge, not from the trace")),
    (_t(r"the thought at step (?P<n>{N}) states (?P<x>.+), which no observation \(nor the task\) contains, and the "
        r"final answer at step (?P<m>{N}) \((?P<q>{Q})\) gives it: it comes from the model's own knowledge, not from "
        r"the trace"),
     _("the thought at step %(n)s states %(x)s, which no observation (nor the task) contains, and the final answer "
       "at step %(m)s (%(q)s) gives it: it comes from the model's own knowledge, not from the trace")),
]
_QUOTED = re.compile(r"“[^”]*”")
_HOLD = re.compile(r"\x00(\d+)\x00")


def _clause(text: str) -> str | None:
    for pattern, sentence in CLAUSES:
        m = pattern.match(text)
        if m:
            parts = m.groupdict()
            if "what" in parts:
                parts["what"] = str(SUBJECTS[parts["what"]])
            return str(sentence) % parts
    return None


def anchor_reason(reason: str) -> str:
    """`reason` in the active language; English (and any reason a template does not know) as it is."""
    if not reason or (get_language() or "en").startswith("en"):
        return reason
    quotes: list[str] = []

    def hold(m: re.Match) -> str:
        quotes.append(m.group(0))
        return f"\x00{len(quotes) - 1}\x00"

    clauses = []
    for clause in _QUOTED.sub(hold, reason.replace("\x00", "")).split("; "):
        translated = _clause(clause)
        if translated is None:
            return reason
        clauses.append(translated)
    joined = str(_("; ")).join(clauses) if len(clauses) > 1 else clauses[0]
    return _HOLD.sub(lambda m: quotes[int(m.group(1))], joined)
