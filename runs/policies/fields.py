"""What each field of a watchdog policy means, in a user's words: the policy
editor's help texts and the what-if page's reading of a sweep come from here.

``stricter`` says which way the field turns the watchdog: +1 when a higher
value makes it intervene more (or sooner), -1 when a higher value makes it
more patient. The defaults and their reasons are in tracing/watchdog.py and
tracing/detectors/.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldDoc:
    label: str
    help: str
    stricter: int = 0  # +1: higher intervenes more; -1: higher is more patient; 0: neither


FIELDS: dict[str, FieldDoc] = {
    # -- thresholds (shares are 0-1)
    "thresholds.repetition_similarity": FieldDoc(
        "repeat similarity", "Two calls of one tool are a repeat from this similarity of their normalised arguments "
        "(0-1). Higher: only near-identical calls count as repeats.", -1),
    "thresholds.novelty_min": FieldDoc(
        "new information, at least", "A result with a smaller share of new words and word pairs than this brought "
        "no new information (0-1). Higher: more results count as nothing new.", +1),
    "thresholds.off_topic_min_overlap": FieldDoc(
        "on-topic overlap, at least", "A search result sharing a smaller share of the query's words than this is "
        "off-topic (0-1). Higher: more results are off-topic.", +1),
    "thresholds.junk_markup_ratio": FieldDoc(
        "junk: markup share", "A result whose share of markup (tags, entities, CSS/JS) reaches this is HTML junk "
        "(0-1). Higher: fewer results are junk.", -1),
    "thresholds.junk_boilerplate_ratio": FieldDoc(
        "junk: page-chrome share", "A result whose share of page-chrome lines (menus, cookie banners, 'log in') "
        "reaches this is junk (0-1). Higher: fewer results are junk.", -1),
    "thresholds.drift_min_gain": FieldDoc(
        "drift: coverage gain, at least", "Between two checkpoints the goal's coverage must grow by this much, or "
        "the run is not closing in (0-1). Higher: drift is flagged sooner.", +1),
    "thresholds.min_content_tokens": FieldDoc(
        "too short: content words", "A text result with fewer content words than this (and no number) is too "
        "short. Higher: more results are too short.", +1),
    "thresholds.off_topic_min_arg_tokens": FieldDoc(
        "off-topic test from query words", "Only queries of at least this many words are tested for off-topic "
        "results. Higher: fewer queries are tested.", -1),
    "thresholds.repetition_min_repeats": FieldDoc(
        "repeats before a trigger", "Earlier similar calls needed before a repeat whose result merely brought "
        "nothing new triggers (a repeat that failed triggers at once). Higher: more patience.", -1),
    # -- windows (counts of steps or observations)
    "windows.repetition": FieldDoc(
        "repetition window", "A call is compared with this many earlier calls of the same tool. Higher: repeats "
        "further back are found.", +1),
    "windows.stagnation": FieldDoc(
        "stagnation window", "Observations in a row without progress before the stagnation detector triggers. "
        "Higher: more patience.", -1),
    "windows.invalid_run": FieldDoc(
        "invalid results in a row", "Unusable results (error, empty, timeout, junk, too short) in a row before the "
        "observation detector triggers. Higher: more patience.", -1),
    "windows.drift_every": FieldDoc(
        "checkpoint every", "Steps between two checkpoints of the goal's coverage. Higher: drift is judged less "
        "often.", -1),
    "windows.drift_patience": FieldDoc(
        "flat checkpoints before drift", "Checkpoints in a row without coverage growth before drift triggers. "
        "Higher: more patience.", -1),
    # -- the ladder
    "ladder.tiers": FieldDoc(
        "tiers", "The interventions, climbed in this order: hint (an observation saying what was tried), redirect "
        "(a concrete new direction), stop (end the run with a fallback answer). Without stop the watchdog never "
        "ends a run."),
    "ladder.cooldown": FieldDoc(
        "cooldown", "Observations between two interventions: the model gets a turn to react before it is judged "
        "again. Higher: fewer interventions.", -1),
    "ladder.stop_streak": FieldDoc(
        "stop: turns without progress", "A stop comes only after a hint and a redirect, and on one of three "
        "grounds. This one: this many observations in a row without progress. Higher: later stops.", -1),
    "ladder.stop_futile": FieldDoc(
        "stop: futile repeats", "Or this many futile repeats since the last progress: a call made again with the "
        "same arguments that got the same unusable result. Higher: later stops.", -1),
    "ladder.stop_invalid": FieldDoc(
        "stop: invalid results in a row", "Or this many unusable results (error, empty, timeout, junk) in a row. "
        "Higher: later stops.", -1),
    "ladder.fast_futile": FieldDoc(
        "fast stop: dead loop", "A shortcut past the redirect: once a call got the same unusable or unchanged "
        "result again this many times (nothing new in between) and a hint followed, making that very call once "
        "more is stopped before it runs. 0 turns the shortcut off. Higher: later stops.", -1),
    "ladder.stop_repeat": FieldDoc(
        "fast stop: the same call again", "A shortcut for deterministic tools: the same call (tool and arguments) "
        "made this many times anywhere in the run, after a hint, is stopped before it runs. Off (0) by default: a "
        "tool polled for a changing status repeats legitimately. Higher: later stops.", -1),
    "ladder.stop_in_a_row": FieldDoc(
        "fast stop: the same call in a row", "The same call made this many times in a row (no other call between), "
        "after a hint, is stopped before it runs. Off (0) by default, as above. Higher: later stops.", -1),
    "ladder.ignored_within": FieldDoc(
        "escalate when ignored", "After a hint or a redirect, the model's next calls judged (this many): one that "
        "goes on with the same loop and still gets nothing moves to the next tier at once, without the cooldown. "
        "0 turns it off. Higher: more calls judged.", +1),
    "ladder.ignored_stop": FieldDoc(
        "stop: interventions ignored", "Or this many interventions in a row that the model ignored (hint, redirect, "
        "redirect again). Higher: later stops.", -1),
    "ladder.reset_after": FieldDoc(
        "reset after progress", "Progress observations in a row after which the ladder starts again at hint. "
        "Higher: the watchdog stays escalated longer.", +1),
    # -- switches
    "enabled": FieldDoc(
        "enabled", "Off: the detectors still compute and show their signals, but nothing is injected and no run "
        "is stopped."),
    "use_complexity": FieldDoc(
        "scale by task complexity", "Stretch or shrink the windows by the goal's estimated complexity (x0.75 for a "
        "plain lookup to x1.5 for a multi-hop comparison); it never triggers anything by itself."),
}


def field_doc(path: str) -> FieldDoc | None:
    return FIELDS.get(path)
