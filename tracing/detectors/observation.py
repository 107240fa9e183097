"""Observation validity: "a return is not progress".

Classifies each observation as one of

- ``ok``          a usable, new, on-topic result;
- ``timeout``     the call failed by time (never "not found");
- ``error``       the call failed (invalid action, exception, HTTP 5xx);
- ``empty``       the call worked and found nothing / had no effect;
- ``junk``        mostly markup or page chrome;
- ``too_short``   fewer content tokens than anything useful;
- ``off_topic``   shares almost nothing with the action's arguments;
- ``no_new_info`` nothing that was not already observed earlier in the run;
- ``injection``   text that tries to instruct the agent.

Novelty is measured against everything observed before through one growing
feature set, so each step costs O(length of this observation), capped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracing.normalize import content_tokens, features, normalize_args
from tracing.steps import STATUSES, Step

# Share of the analysed text inside markup (tags, entities, CSS/JS blocks) above
# which the page is junk: real prose with a few links stays far below 0.3.
JUNK_MARKUP_RATIO = 0.3

# Share of non-empty lines that are page chrome (cookie banners, menus, "log
# in") above which the observation is junk. 0.5: chrome must dominate, not
# merely be present (Wikipedia heads carry one chrome line before the article).
JUNK_BOILERPLATE_RATIO = 0.5

# Fewer content tokens than this and the observation carries nothing usable.
# 2 keeps terse confirmations ("You have clicked black.") valid.
MIN_CONTENT_TOKENS = 2

# Share of the action's argument tokens that must reappear in the observation.
# 0.2 is loose on purpose: results paraphrase; only a near-total miss is off-topic.
OFF_TOPIC_MIN_OVERLAP = 0.2

# Off-topic is only judged for actions with at least this many argument tokens:
# a one-token click target (a product id, "next") need not echo in the page.
OFF_TOPIC_MIN_ARG_TOKENS = 2

# Share of new features (unigrams + bigrams) below which the observation told
# the agent nothing new. 0.15: a revisited page scores ~0, a new page > 0.5.
NOVELTY_MIN = 0.15

# Only this many chars of a page are analysed: the cost bound per step. 2000
# holds the lead of a Wikipedia article, where the answer usually is.
ANALYSIS_CHARS = 2000

BAD_CLASSES = frozenset({"timeout", "error", "empty", "junk", "too_short"})
# Classes that count as progress for stagnation: only a usable new result.
PROGRESS_CLASSES = frozenset({"ok"})

# Status is inferred from the head of short texts only: a long article that
# mentions "error" or "timeout" is content, not a failed call.
_STATUS_HEAD = 240
_TIMEOUT_RE = re.compile(r"\btimed?[ -]?out\b|\btimeout\b|deadline exceeded")
_ERROR_START_RE = re.compile(
    r"\s*(?:invalid action|error\b|exception\b|traceback \(most recent|fatal\b|failed\b"
    r"|could not (?:parse|execute))"
)
_ERROR_ANY_RE = re.compile(
    r"\b(?:http|status)[ :]*(?:error )?5\d\d\b|internal server error|service unavailable|bad gateway"
)
_ERROR_ANY_HINTS = ("http", "status", "server", "unavailable", "gateway")
_EMPTY_RE = re.compile(
    r"^\s*(?:no (?:more )?results?\b|no results for\b|could not find\b|nothing happens"
    r"|not found\b|no matches\b|no such\b|\[\]\s*$|none\s*$|null\s*$|\{\}\s*$)",
    re.I,
)

# Text that addresses the agent rather than describing the world. Kept narrow:
# a false alarm only wraps the text as quoted data, a miss lets it steer the run.
INJECTION_RE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|all|any|your)\b"
    r"[^.\n]{0,30}?\b(?:instructions?|questions?|prompts?|tasks?|rules|directions)\b"
    r"|\byou are now (?:a|an|in)\b|\bnew instructions?\s*:|\bsystem prompt\b"
    r"|\b(?:assistant|ai|agent|model)\s*,?\s*(?:must|should) (?:now )?(?:say|answer|respond|reply|output)\b"
    r"|\b(?:answer|respond|reply|say)\b[^.\n]{0,40}\binstead\b"
    r"|\bdo not (?:tell|inform|mention (?:this )?to) the user\b"
    r"|忽略(?:之前|以上|前面|先前|所有|上述)|你现在是|新的指令|不要告诉用户|无视(?:之前|以上)",
    re.I,
)

_MARKUP_RE = re.compile(
    r"<(?:script|style)\b.*?</(?:script|style)\s*>|<[^<>]{1,300}>|&#?\w{1,8};"
    # CSS/JS rule bodies; anchored on "{" so the scan stays linear.
    r"|\{[^{}<>]{0,400}:[^{}<>]{0,400}\}",
    re.I | re.S,
)
# Page chrome, matched as lower-case substrings (C-speed ``in`` tests).
BOILERPLATE_PHRASES = (
    "cookie",
    "javascript",
    "log in",
    "login",
    "sign in",
    "sign up",
    "subscribe",
    "privacy policy",
    "terms of use",
    "terms of service",
    "all rights reserved",
    "skip to content",
    "skip to main content",
    "navigation",
    "main menu",
    "advertisement",
    "logged out editors",
    "mw-parser-output",
    "enable js",
    "accept all",
)


@dataclass
class ObservationSignal:
    step: int
    status: str  # ok | empty | error | timeout (given in meta, or inferred)
    obs_class: str
    novelty: float  # share of features never observed before in the run
    overlap: float | None  # share of the action's argument tokens found here
    junk_ratio: float
    tokens: int
    injection: bool
    action_step: int | None
    # Content tokens, shared with the drift detector so nothing tokenises twice.
    toks: list[str] = field(default_factory=list, repr=False)

    @property
    def progress(self) -> bool:
        return self.obs_class in PROGRESS_CLASSES

    @property
    def bad(self) -> bool:
        return self.obs_class in BAD_CLASSES

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "obs_class": self.obs_class,
            "novelty": round(self.novelty, 3),
            "overlap": None if self.overlap is None else round(self.overlap, 3),
            "junk_ratio": round(self.junk_ratio, 3),
            "injection": int(self.injection),
        }


def infer_status(text: str, meta: dict[str, Any] | None = None) -> str:
    """The call's status: the recorded one when present, else guessed from text."""
    given = (meta or {}).get("status")
    if isinstance(given, str) and given in STATUSES:
        return given
    stripped = text.strip()
    if not stripped:
        return "empty"
    low = stripped[:_STATUS_HEAD].lower()
    short = len(stripped) <= _STATUS_HEAD * 2
    if short and ("time" in low or "deadline" in low) and _TIMEOUT_RE.search(low):
        return "timeout"
    if _ERROR_START_RE.match(low) and (short or low.startswith(("error", "traceback"))):
        return "error"
    if short and any(h in low for h in _ERROR_ANY_HINTS) and _ERROR_ANY_RE.search(low):
        return "error"
    if _EMPTY_RE.match(low):
        return "empty"
    return "ok"


def junk_scores(text: str) -> tuple[float, float]:
    """(markup share of chars, boilerplate share of lines), on the analysed head."""
    head = text[:ANALYSIS_CHARS]
    if not head.strip():
        return 0.0, 0.0
    markup = 0.0
    if "<" in head or "&" in head or "{" in head:  # skip the scan for plain prose
        markup = sum(m.end() - m.start() for m in _MARKUP_RE.finditer(head)) / len(head)
    low = head.lower()
    found = [p for p in BOILERPLATE_PHRASES if p in low]
    if not found:
        return min(1.0, markup), 0.0
    lines = [ln for ln in low.splitlines() if ln.strip()]
    if len(lines) >= 3:
        chrome = sum(1 for ln in lines if len(ln) < 200 and any(p in ln for p in found)) / len(lines)
    else:
        # One-line pages: chrome is judged by its share of characters instead.
        chrome = sum(len(p) * low.count(p) for p in found) * 4 / len(head)
    return min(1.0, markup), min(1.0, chrome)


def junk_ratio(text: str) -> float:
    return max(junk_scores(text))


# Cheap substring pre-check: the full pattern only runs on texts that contain
# one of these (C-speed ``in`` tests instead of a regex tried at every offset).
_INJECTION_HINTS = (
    "ignore",
    "disregard",
    "forget",
    "override",
    "you are now",
    "instruction",
    "system prompt",
    "must",
    "instead",
    "do not",
    "忽略",
    "你现在",
    "指令",
    "不要告诉",
    "无视",
)


def is_injection(text: str) -> bool:
    head = text[:ANALYSIS_CHARS]
    low = head.lower()
    if not any(h in low for h in _INJECTION_HINTS):
        return False
    return bool(INJECTION_RE.search(head))


@dataclass
class ObservationDetector:
    junk_markup_ratio: float = JUNK_MARKUP_RATIO
    junk_boilerplate_ratio: float = JUNK_BOILERPLATE_RATIO
    min_content_tokens: int = MIN_CONTENT_TOKENS
    off_topic_min_overlap: float = OFF_TOPIC_MIN_OVERLAP
    off_topic_min_arg_tokens: int = OFF_TOPIC_MIN_ARG_TOKENS
    novelty_min: float = NOVELTY_MIN
    _seen: set[str] = field(default_factory=set)
    _last_action: tuple[int, frozenset[str]] | None = None

    def update(self, step: Step) -> ObservationSignal | None:
        if step.kind == "action":
            args = step.args if step.args is not None or step.tool else step.text
            self._last_action = (step.index, frozenset(normalize_args(args)))
            return None
        if step.kind != "observation":
            return None
        text = step.text if isinstance(step.text, str) else str(step.text or "")
        status = infer_status(text, step.meta)
        toks = content_tokens(text, ANALYSIS_CHARS)
        feats = features(toks)
        new = len(feats - self._seen) if feats else 0
        novelty = new / len(feats) if feats else 0.0
        self._seen |= feats
        markup, chrome = junk_scores(text) if len(text) > 40 else (0.0, 0.0)
        jr = max(markup, chrome)
        injection = is_injection(text)
        overlap = None
        action_step = None
        if self._last_action is not None:
            action_step, arg_toks = self._last_action
            if len(arg_toks) >= self.off_topic_min_arg_tokens:
                tokset = set(toks)
                overlap = sum(1 for t in arg_toks if t in tokset) / len(arg_toks)
            self._last_action = None
        markup_junk = markup >= self.junk_markup_ratio or chrome >= self.junk_boilerplate_ratio
        if injection:
            cls = "injection"
        elif status != "ok":
            cls = status
        elif markup_junk:
            cls = "junk"
        elif len(toks) < self.min_content_tokens:
            cls = "too_short"
        elif overlap is not None and overlap < self.off_topic_min_overlap:
            cls = "off_topic"
        elif novelty < self.novelty_min:
            cls = "no_new_info"
        else:
            cls = "ok"
        return ObservationSignal(
            step=step.index,
            status=status,
            obs_class=cls,
            novelty=novelty,
            overlap=overlap,
            junk_ratio=jr,
            tokens=len(toks),
            injection=injection,
            action_step=action_step,
            toks=toks,
        )


def classify(step: Step, previous: Iterable[Step] = ()) -> ObservationSignal | None:
    """One observation judged against the steps before it (convenience, O(n))."""
    det = ObservationDetector()
    for prev in previous:
        det.update(prev)
    return det.update(step)


def scan(steps: Iterable[Step]) -> list[ObservationSignal]:
    det = ObservationDetector()
    return [sig for step in steps if (sig := det.update(step)) is not None]
