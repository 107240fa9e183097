"""The errors of services and of pure code (tracing.core, the agent loop) in
the page's language.

Those raise English sentences and stay free of Django (the command line and the
JSON API show them as written). A page translates one here, where it is shown:
the message is matched whole against the sentence templates of its kind, the
names and values it quotes carried over as they were. A message no template
knows is shown in English rather than half translated.
"""

from __future__ import annotations

import re

from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

Table = list[tuple[re.Pattern, object]]


def _table(*pairs: tuple[str, object]) -> Table:
    return [(re.compile(pattern, re.DOTALL), sentence) for pattern, sentence in pairs]


def translated(message: str, table: Table) -> str:
    """`message` in the active language; English (and a message no template knows) as it is."""
    message = str(message)
    if not message or (get_language() or "en").startswith("en"):
        return message
    for pattern, sentence in table:
        m = pattern.fullmatch(message)
        if m:
            return str(sentence) % m.groupdict()
    return message


# runs.compare.selectors.SelectionError
SELECTION = _table(
    (r"'(?P<part>.*)' is not a run id: use numbers, e.g\. \?runs=1,2,3\.",
     _("'%(part)s' is not a run id: use numbers, e.g. ?runs=1,2,3.")),
    (r"No runs selected: tick runs on the run list, or use \?runs=1,2,3\.",
     _("No runs selected: tick runs on the run list, or use ?runs=1,2,3.")),
    (r"At most (?P<max>\d+) runs can be compared at once; this selection has (?P<n>\d+)\. Narrow it \(filter the "
     r"run list by task or model\) and compare again\.",
     _("At most %(max)s runs can be compared at once; this selection has %(n)s. Narrow it (filter the run list by "
       "task or model) and compare again.")),
    (r"No such run: (?P<ids>[\d, ]+)\. Pick runs from the run list\.",
     _("No such run: %(ids)s. Pick runs from the run list.")),
)

# tracing.core.watchdog.PolicyError's problem (its field is a name, kept as it is)
POLICY_PROBLEM = _table(
    (r"a policy must be a JSON object", _("a policy must be a JSON object")),
    (r"unknown field", _("unknown field")),
    (r"must be a non-empty string", _("must be a non-empty string")),
    (r"must be true or false", _("must be true or false")),
    (r"must be a string", _("must be a string")),
    (r"must be an integer", _("must be an integer")),
    (r"must be >= (?P<n>-?\d+)", _("must be >= %(n)s")),
    (r"must be <= (?P<n>[\d,]+)", _("must be <= %(n)s")),
    (r"must be an object", _("must be an object")),
    (r"must be a number", _("must be a number")),
    (r"must be between 0 and 1", _("must be between 0 and 1")),
    (r"must be a non-empty list of tiers", _("must be a non-empty list of tiers")),
    (r"each tier must be one of (?P<tiers>.+)", _("each tier must be one of %(tiers)s")),
    (r"tiers must be distinct and in order hint, redirect, stop",
     _("tiers must be distinct and in order hint, redirect, stop")),
    # runs.whatif.sweep's, about the swept field
    (r"give at least one value", _("give at least one value")),
    (r"at most (?P<n>\d+) values", _("at most %(n)s values")),
    (r"sweep a field like thresholds\.novelty_min or ladder\.stop_streak",
     _("sweep a field like thresholds.novelty_min or ladder.stop_streak")),
)

# runs.policies.services.PolicyProtected
POLICY_PROTECTED = _table(
    (r"the default policy cannot be disabled: every new run uses it\. Save a policy under another name to run "
     r"without the watchdog\.",
     _("the default policy cannot be disabled: every new run uses it. Save a policy under another name to run "
       "without the watchdog.")),
    (r"the default policy needs at least one tier \(hint, redirect or stop\)\.",
     _("the default policy needs at least one tier (hint, redirect or stop).")),
)

# tracing.core.label_limits.LabelError (the body/PATCH ones reach the JSON API only)
LABEL = _table(
    (r"tags: each tag must be a string, got (?P<type>\w+)", _("tags: each tag must be a string, got %(type)s")),
    (r"tags: a tag cannot be empty", _("tags: a tag cannot be empty")),
    (r"tags: (?P<tag>.+)… is longer than (?P<n>\d+) characters",
     _("tags: %(tag)s… is longer than %(n)s characters")),
    (r"tags: (?P<tag>.+) contains control characters", _("tags: %(tag)s contains control characters")),
    (r"tags: expected a list of strings", _("tags: expected a list of strings")),
    (r"tags: (?P<count>\d+) tags, at most (?P<n>\d+) allowed", _("tags: %(count)s tags, at most %(n)s allowed")),
    (r"metadata: expected an object of key/value pairs", _("metadata: expected an object of key/value pairs")),
    (r"metadata: key (?P<key>.+) must be 1-(?P<n>\d+) printable characters",
     _("metadata: key %(key)s must be 1-%(n)s printable characters")),
    (r"metadata: more than (?P<n>\d+) keys", _("metadata: more than %(n)s keys")),
    (r"metadata: larger than (?P<n>\d+) bytes as JSON", _("metadata: larger than %(n)s bytes as JSON")),
    (r"metadata: line (?P<n>\d+) is not key=value", _("metadata: line %(n)s is not key=value")),
    (r"metadata\.(?P<key>.+): longer than (?P<n>\d+) characters",
     _("metadata.%(key)s: longer than %(n)s characters")),
    (r"session_id: at most (?P<n>\d+) printable characters", _("session_id: at most %(n)s printable characters")),
)

# runs.agent.faults.FaultError
FAULT = _table(
    (r"faults must be an object of rates", _("faults must be an object of rates")),
    (r"faults\.(?P<key>.+): unknown fault \(one of (?P<names>.+)\)",
     _("faults.%(key)s: unknown fault (one of %(names)s)")),
    (r"faults\.(?P<key>.+): must be a number", _("faults.%(key)s: must be a number")),
    (r"faults\.(?P<key>.+): must be between 0 and 1", _("faults.%(key)s: must be between 0 and 1")),
    (r"faults: the rates add up to more than 1", _("faults: the rates add up to more than 1")),
)

# runs.evaluations.services.EvaluationError
EVALUATION = _table(
    (r"an evaluation needs at least one task", _("an evaluation needs at least one task")),
    (r"unknown strategy (?P<unknown>.+); known: (?P<known>.+)", _("unknown strategy %(unknown)s; known: %(known)s")),
    (r"an evaluation needs at least one strategy", _("an evaluation needs at least one strategy")),
    (r"reruns must be at least 1", _("reruns must be at least 1")),
    (r"the budget's (?P<name>\w+) must be at least 1", _("the budget's %(name)s must be at least 1")),
    (r"the budget's max_cost must be more than 0 \(leave it out for no cost limit\)",
     _("the budget's max_cost must be more than 0 (leave it out for no cost limit)")),
)

# runs.launch.services.ForkError
FORK = _table(
    (r"the run is still going; fork it when it has ended", _("the run is still going; fork it when it has ended")),
    (r"turns must be between 1 and (?P<n>\d+)", _("turns must be between 1 and %(n)s")),
    (r"the fork step must be a step index of the run", _("the fork step must be a step index of the run")),
    (r"imported runs have no model endpoint to continue with", _("imported runs have no model endpoint to continue with")),
    (r"run (?P<run>\d+) has no step (?P<step>-?\d+)", _("run %(run)s has no step %(step)s")),
    (r"only an existing step can be edited", _("only an existing step can be edited")),
    (r"only an observation or a thought can be edited", _("only an observation or a thought can be edited")),
    (r"the edited text is empty", _("the edited text is empty")),
)

# runs.reviews.services.ReviewError
REVIEW = _table(
    (r"label must be one of (?P<values>.+); got (?P<got>.*)", _("label must be one of %(values)s; got %(got)s")),
    (r"the note is longer than (?P<n>\d+) characters", _("the note is longer than %(n)s characters")),
    (r"the note contains a NUL character, which cannot be stored",
     _("the note contains a NUL character, which cannot be stored")),
)

# runs.breaks.services.BreakError
BREAK = _table(
    (r"verdict must be one of (?P<values>.+); got (?P<got>.*)", _("verdict must be one of %(values)s; got %(got)s")),
    (r"note: longer than (?P<n>\d+) characters", _("note: longer than %(n)s characters")),
    (r"note: contains a NUL character, which cannot be stored", _("note: contains a NUL character, which cannot be stored")),
    (r"run (?P<run>\d+) has no shown break to judge \(no strong break, or its pattern is demoted in this project\); "
     r"its findings are not labelled here",
     _("run %(run)s has no shown break to judge (no strong break, or its pattern is demoted in this project); its "
       "findings are not labelled here")),
    (r"step: the run's shown break is now step (?P<shown>\d+), not step (?P<step>\d+) \(it was re-analysed\); "
     r"reload the run page",
     _("step: the run's shown break is now step %(shown)s, not step %(step)s (it was re-analysed); reload the run "
       "page")),
    (r"pattern: (?P<pattern>.*) is not a break pattern", _("pattern: %(pattern)s is not a break pattern")),
    (r"override must be one of (?P<values>.+); got (?P<got>.*)", _("override must be one of %(values)s; got %(got)s")),
)

# runs.failures.services.LayerLabelError
LAYER_LABEL = _table(
    (r"unknown layer (?P<layer>.*): one of (?P<keys>.+)", _("unknown layer %(layer)s: one of %(keys)s")),
    (r"only a finished run with a wrong answer has a failure layer",
     _("only a finished run with a wrong answer has a failure layer")),
    (r"the note holds a NUL character", _("the note holds a NUL character")),
    (r"the note is longer than (?P<n>\d+) characters", _("the note is longer than %(n)s characters")),
)

# runs.approvals.services.ApprovalError
APPROVAL = _table(
    (r"The arguments are longer than (?P<n>\d+) characters\.", _("The arguments are longer than %(n)s characters.")),
    (r"The arguments hold a NUL character\.", _("The arguments hold a NUL character.")),
    (r"The arguments are not valid JSON: (?P<why>.*)", _("The arguments are not valid JSON: %(why)s")),
    (r'The arguments must be a JSON object, e\.g\. \{"text": "\.\.\."\}\.',
     _('The arguments must be a JSON object, e.g. {"text": "..."}.')),
    (r"Unknown decision (?P<got>.*): approved, edited or denied\.", _("Unknown decision %(got)s: approved, edited or denied.")),
    (r"The reason must be at most (?P<n>\d+) characters, without NUL\.",
     _("The reason must be at most %(n)s characters, without NUL.")),
    (r"Say why the call is denied: the agent reads the reason\.", _("Say why the call is denied: the agent reads the reason.")),
    (r"This request expired at (?P<when>.+); the run has ended\.", _("This request expired at %(when)s; the run has ended.")),
    (r"The run was stopped while this request waited; nothing to decide\.",
     _("The run was stopped while this request waited; nothing to decide.")),
    (r"Already decided: (?P<status>.+) by (?P<who>.+) at (?P<when>.+) UTC\.",
     _("Already decided: %(status)s by %(who)s at %(when)s UTC.")),
)

# runs.core.queue.QueueUnavailable (the broker's own words kept)
QUEUE = _table(
    (r"The run queue \(Redis\) is unavailable: (?P<why>.*)", _("The run queue (Redis) is unavailable: %(why)s")),
)

# tracing.core.untrusted_json.UntrustedJsonError, for the texts a page parses (the JSON decoder's own
# words below: json.JSONDecodeError.msg)
_WHERE = {"the policy": _("the policy")}
_DECODER = {
    "Expecting value": _("a value was expected"),
    "Expecting property name enclosed in double quotes": _("a property name in double quotes was expected"),
    "Expecting ',' delimiter": _("a ',' was expected"),
    "Expecting ':' delimiter": _("a ':' was expected"),
    "Extra data": _("there is more text after the JSON"),
    "Unterminated string starting at": _("a string is not closed"),
    "Invalid control character at": _("a string holds a control character"),
    "Invalid \\escape": _("a string holds an invalid \\ escape"),
}
UNTRUSTED_JSON = _table(
    (r"(?P<where>the policy) is not JSON: (?P<why>.+) at line (?P<line>\d+), column (?P<col>\d+)",
     _("%(where)s is not JSON: %(why)s at line %(line)s, column %(col)s")),
    (r"(?P<where>the policy) is not acceptable JSON: it is nested too deeply \(more than (?P<n>\d+) levels, at "
     r"(?P<path>.+)\)",
     _("%(where)s is not acceptable JSON: it is nested too deeply (more than %(n)s levels, at %(path)s)")),
    (r"(?P<where>the policy) is not acceptable JSON: it is nested too deeply",
     _("%(where)s is not acceptable JSON: it is nested too deeply")),
    (r"(?P<where>the policy) is not acceptable JSON: (?P<why>.+)", _("%(where)s is not acceptable JSON: %(why)s")),
)


def untrusted_json_error(exc) -> str:
    """An UntrustedJsonError of a page's text: the sentence translated, the decoder's words where known."""
    message = str(exc)
    if (get_language() or "en").startswith("en"):
        return message
    for pattern, sentence in UNTRUSTED_JSON:
        m = pattern.fullmatch(message)
        if m:
            parts = m.groupdict()
            parts["where"] = str(_WHERE[parts["where"]])
            if "why" in parts and parts["why"] in _DECODER:
                parts["why"] = str(_DECODER[parts["why"]])
            return str(sentence) % parts
    return message


def policy_error(exc) -> str:
    """A tracing.core.watchdog.PolicyError: its field as named, its problem in the page's language."""
    problem = translated(exc.problem, POLICY_PROBLEM)
    if problem == exc.problem:
        return str(exc)
    return str(_("policy field '%(field)s': %(problem)s")) % {"field": exc.field, "problem": problem}
