"""What each field of a watchdog policy means, in a user's words: the policy
editor's help texts and the what-if page's reading of a sweep come from here.

``stricter`` says which way the field turns the watchdog: +1 when a higher
value makes it intervene more (or sooner), -1 when a higher value makes it
more patient. The defaults and their reasons are in tracing/core/watchdog.py and
tracing/core/detectors/.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class FieldDoc:
    label: str  # lazily translated (gettext_lazy): the editor shows it in the page's language
    help: str
    stricter: int = 0  # +1: higher intervenes more; -1: higher is more patient; 0: neither


FIELDS: dict[str, FieldDoc] = {
    # -- thresholds (shares are 0-1)
    "thresholds.repetition_similarity": FieldDoc(
        _("repeat similarity"), _("Two calls of one tool are a repeat from this similarity of their normalised arguments "
        "(0-1). Higher: only near-identical calls count as repeats."), -1),
    "thresholds.novelty_min": FieldDoc(
        _("new information, at least"), _("A result with a smaller share of new words and word pairs than this brought "
        "no new information (0-1). Higher: more results count as nothing new."), +1),
    "thresholds.off_topic_min_overlap": FieldDoc(
        _("on-topic overlap, at least"), _("A search result sharing a smaller share of the query's words than this is "
        "off-topic (0-1). Higher: more results are off-topic."), +1),
    "thresholds.junk_markup_ratio": FieldDoc(
        _("junk: markup share"), _("A result whose share of markup (tags, entities, CSS/JS) reaches this is HTML junk "
        "(0-1). Higher: fewer results are junk."), -1),
    "thresholds.junk_boilerplate_ratio": FieldDoc(
        _("junk: page-chrome share"), _("A result whose share of page-chrome lines (menus, cookie banners, 'log in') "
        "reaches this is junk (0-1). Higher: fewer results are junk."), -1),
    "thresholds.drift_min_gain": FieldDoc(
        _("drift: coverage gain, at least"), _("Between two checkpoints the goal's coverage must grow by this much, or "
        "the run is not closing in (0-1). Higher: drift is flagged sooner."), +1),
    "thresholds.min_content_tokens": FieldDoc(
        _("too short: content words"), _("A text result with fewer content words than this (and no number) is too "
        "short. Higher: more results are too short."), +1),
    "thresholds.off_topic_min_arg_tokens": FieldDoc(
        _("off-topic test from query words"), _("Only queries of at least this many words are tested for off-topic "
        "results. Higher: fewer queries are tested."), -1),
    "thresholds.repetition_min_repeats": FieldDoc(
        _("repeats before a trigger"), _("Earlier similar calls needed before a repeat whose result merely brought "
        "nothing new triggers (a repeat that failed triggers at once). Higher: more patience."), -1),
    # -- windows (counts of steps or observations)
    "windows.repetition": FieldDoc(
        _("repetition window"), _("A call is compared with this many earlier calls of the same tool. Higher: repeats "
        "further back are found."), +1),
    "windows.stagnation": FieldDoc(
        _("stagnation window"), _("Observations in a row without progress before the stagnation detector triggers. "
        "Higher: more patience."), -1),
    "windows.invalid_run": FieldDoc(
        _("invalid results in a row"), _("Unusable results (error, empty, timeout, junk, too short) in a row before the "
        "observation detector triggers. Higher: more patience."), -1),
    "windows.drift_every": FieldDoc(
        _("checkpoint every"), _("Steps between two checkpoints of the goal's coverage. Higher: drift is judged less "
        "often."), -1),
    "windows.drift_patience": FieldDoc(
        _("flat checkpoints before drift"), _("Checkpoints in a row without coverage growth before drift triggers. "
        "Higher: more patience."), -1),
    # -- the ladder
    "ladder.tiers": FieldDoc(
        _("tiers"), _("The interventions, climbed in this order: hint (an observation saying what was tried), redirect "
        "(a concrete new direction), stop (end the run with a fallback answer). Without stop the watchdog never "
        "ends a run.")),
    "ladder.cooldown": FieldDoc(
        _("cooldown"), _("Observations between two interventions: the model gets a turn to react before it is judged "
        "again. Higher: fewer interventions."), -1),
    "ladder.stop_streak": FieldDoc(
        _("stop: turns without progress"), _("A stop comes only after a hint and a redirect, and on one of three "
        "grounds. This one: this many observations in a row without progress. Higher: later stops."), -1),
    "ladder.stop_futile": FieldDoc(
        _("stop: futile repeats"), _("Or this many futile repeats since the last progress: a call made again with the "
        "same arguments that got the same unusable result. Higher: later stops."), -1),
    "ladder.stop_invalid": FieldDoc(
        _("stop: invalid results in a row"), _("Or this many unusable results (error, empty, timeout, junk) in a row. "
        "Higher: later stops."), -1),
    "ladder.fast_futile": FieldDoc(
        _("fast stop: dead loop"), _("A shortcut past the redirect: once a call got the same unusable or unchanged "
        "result again this many times (nothing new in between) and a hint followed, making that very call once "
        "more is stopped before it runs. 0 turns the shortcut off. Higher: later stops."), -1),
    "ladder.stop_repeat": FieldDoc(
        _("fast stop: the same call again"), _("A shortcut for deterministic tools: the same call (tool and arguments) "
        "made this many times anywhere in the run, after a hint, is stopped before it runs. Off (0) by default: a "
        "tool polled for a changing status repeats legitimately. Higher: later stops."), -1),
    "ladder.stop_in_a_row": FieldDoc(
        _("fast stop: the same call in a row"), _("The same call made this many times in a row (no other call "
        "between), after a hint, is stopped before it runs. Off (0) by default, as above. Higher: later stops."), -1),
    "ladder.ignored_within": FieldDoc(
        _("escalate when ignored"), _("After a hint or a redirect, the model's next calls judged (this many): one that "
        "goes on with the same loop and still gets nothing moves to the next tier at once, without the cooldown. "
        "0 turns it off. Higher: more calls judged."), +1),
    "ladder.ignored_stop": FieldDoc(
        _("stop: interventions ignored"), _("Or this many interventions in a row that the model ignored (hint, redirect, "
        "redirect again). Higher: later stops."), -1),
    "ladder.reset_after": FieldDoc(
        _("reset after progress"), _("Progress observations in a row after which the ladder starts again at hint. "
        "Higher: the watchdog stays escalated longer."), +1),
    # -- switches
    "enabled": FieldDoc(
        _("enabled"), _("Off: the detectors still compute and show their signals, but nothing is injected and no run "
        "is stopped.")),
    "use_complexity": FieldDoc(
        _("scale by task complexity"), _("Stretch or shrink the windows by the goal's estimated complexity (x0.75 for a "
        "plain lookup to x1.5 for a multi-hop comparison); it never triggers anything by itself.")),
}


def field_doc(path: str) -> FieldDoc | None:
    return FIELDS.get(path)
