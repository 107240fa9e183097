"""Observation validity: "a return is not progress".

Classifies each observation by its role first (``tracing.core.steps.role_of``):

- ``user``        a person's turn in a dialogue: never junk, off-topic or
                  "no progress" (a dialogue that is moving is not stagnating);
- ``system``      a system / policy note met mid-run: neutral.

and a tool's result, read from its structure (``tracing.core.results``), as one of

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
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracing.core.normalize import content_tokens, features, normalize_args
from tracing.core.results import Reading, is_command, read_result
from tracing.core.steps import REPLY_TOOLS, Step, role_of

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

# ...and at most this many: past it the argument is code, a command line or a
# message, whose output need not repeat its words (a program prints numbers).
OFF_TOPIC_MAX_ARG_TOKENS = 12

# Share of new features (unigrams + bigrams) below which the observation told
# the agent nothing new. 0.15: a revisited page scores ~0, a new page > 0.5.
NOVELTY_MIN = 0.15

# Only this many chars of a page are analysed: the cost bound per step. 2000
# holds the lead of a Wikipedia article, where the answer usually is.
ANALYSIS_CHARS = 2000

BAD_CLASSES = frozenset({"timeout", "error", "empty", "junk", "too_short"})
# Classes that count as progress for stagnation: a usable new result, or a
# user's turn (the dialogue moved).
PROGRESS_CLASSES = frozenset({"ok", "user"})
# Classes that take no part in stagnation at all.
NEUTRAL_CLASSES = frozenset({"system"})

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

# A result that is one number ("5", "-1,284.50", "1e-3"): the value a
# calculation or a lookup returns. It cannot echo the call's arguments, so the
# off-topic test (overlap with the arguments) does not apply to it.
_BARE_NUMBER_RE = re.compile(r"[-+]?\d[\d,_]*(?:\.\d+)?(?:[eE][-+]?\d+)?%?")

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


def infer_status(text: str, meta: dict[str, Any] | None = None, action_args: Any = None) -> str:
    """The call's status: the recorded one when present, else read from the result."""
    return read_result(text, meta, action_args).status


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


class SeenFeatures:
    """The features observed so far in a run, in memory. ``add`` returns how
    many of ``feats`` are new. The step API's guard keeps them in Postgres
    instead (tracing.store.guard), so a long run is not reloaded on every request."""

    def __init__(self) -> None:
        self.features: set[str] = set()

    def add_features(self, feats: set[str]) -> int:
        new = len(feats - self.features)
        self.features |= feats
        return new


@dataclass
class ObservationDetector:
    junk_markup_ratio: float = JUNK_MARKUP_RATIO
    junk_boilerplate_ratio: float = JUNK_BOILERPLATE_RATIO
    min_content_tokens: int = MIN_CONTENT_TOKENS
    off_topic_min_overlap: float = OFF_TOPIC_MIN_OVERLAP
    off_topic_min_arg_tokens: int = OFF_TOPIC_MIN_ARG_TOKENS
    novelty_min: float = NOVELTY_MIN
    seen: SeenFeatures = field(default_factory=SeenFeatures)
    # Calls waiting for their result, oldest first: parallel tool calls are
    # answered in order, each result by the oldest pending call of its tool.
    _pending: deque[tuple[int, str, Any, frozenset[str]]] = field(default_factory=deque)
    # The latest result read (for anchoring and the watchdog).
    last_reading: Reading | None = None

    def update(self, step: Step) -> ObservationSignal | None:
        if step.kind == "action":
            args = step.args if step.args is not None or step.tool else step.text
            self._pending.append((step.index, (step.tool or "").strip().lower(), args, frozenset(normalize_args(args))))
            if len(self._pending) > 64:
                self._pending.popleft()
            return None
        if step.kind != "observation":
            return None
        text = step.text if isinstance(step.text, str) else str(step.text or "")
        role = role_of(step)
        toks = content_tokens(text, ANALYSIS_CHARS)
        feats = features(toks)
        new = self.seen.add_features(feats) if feats else 0
        novelty = new / len(feats) if feats else 0.0
        injection = is_injection(text)
        if role in ("user", "system"):
            # The user's turn answers the agent's reply: replies wait for no tool result.
            self._pending = deque(p for p in self._pending if p[1] not in REPLY_TOOLS)
            return ObservationSignal(
                step=step.index, status="ok", obs_class=role,
                novelty=novelty, overlap=None, junk_ratio=0.0, tokens=len(toks), injection=injection,
                action_step=None, toks=toks,
            )
        action = self._take_action(step.tool)
        action_step, action_args, arg_toks = action if action else (None, None, frozenset())
        reading = read_result(text, step.meta, action_args, step.tool)
        self.last_reading = reading
        status = reading.status
        # A program's or a command's output is data however many braces it
        # prints ({'a': 1} per line); markup and chrome are a web page's junk.
        structured = reading.form in ("json", "literal") or is_command(action_args)
        markup, chrome = junk_scores(text) if len(text) > 40 and not structured else (0.0, 0.0)
        jr = max(markup, chrome)
        overlap = None
        if (reading.form == "text" and self.off_topic_min_arg_tokens <= len(arg_toks) <= OFF_TOPIC_MAX_ARG_TOKENS
                and not _BARE_NUMBER_RE.fullmatch(text.strip())):
            tokset = set(toks)
            overlap = sum(1 for t in arg_toks if t in tokset) / len(arg_toks)
        markup_junk = markup >= self.junk_markup_ratio or chrome >= self.junk_boilerplate_ratio
        if injection:
            cls = "injection"
        elif status != "ok":
            cls = status
        elif reading.silent:
            cls = "ok"  # a command that prints nothing when it works, worked
        elif markup_junk:
            cls = "junk"
        elif reading.form == "text" and len(toks) < self.min_content_tokens and not any(c.isdigit() for c in text[:200]):
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

    def _take_action(self, tool: str | None) -> tuple[int, Any, frozenset[str]] | None:
        if not self._pending:
            return None
        name = (tool or "").strip().lower()
        for pos, (index, pending_tool, args, toks) in enumerate(self._pending):
            if not name or pending_tool == name:
                del self._pending[pos]
                return index, args, toks
        index, _, args, toks = self._pending.popleft()
        return index, args, toks


def classify(step: Step, previous: Iterable[Step] = ()) -> ObservationSignal | None:
    """One observation judged against the steps before it (convenience, O(n))."""
    det = ObservationDetector()
    for prev in previous:
        det.update(prev)
    return det.update(step)


def scan(steps: Iterable[Step]) -> list[ObservationSignal]:
    det = ObservationDetector()
    return [sig for step in steps if (sig := det.update(step)) is not None]
