"""Parameter repetition: the same tool called again with near-identical arguments.

Compared against the last W actions *of the same tool*, not only the previous
action: agents wander off and come back. An entry signal, never a verdict on
its own (deepening one topic also looks similar); the watchdog only acts on it
when the repeated call also brought nothing new.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracing.core.normalize import action_key, jaccard
from tracing.core.steps import Step

# How many earlier calls of the same tool are compared. 6 covers the "go away
# and come back" loops seen in ALFWorld/HotpotQA logs while keeping O(W) small.
REPETITION_WINDOW = 6

# Jaccard of normalised arguments at or above which two calls are "the same".
# 0.8 lets "Search[High Plains]" vs "Search[High Plains (United States)]" (0.5)
# through as a refinement while catching reordering/spacing/stop-word variants.
REPETITION_SIMILARITY = 0.8


@dataclass
class RepetitionSignal:
    step: int
    tool: str
    similarity: float  # best Jaccard against the window; 0.0 when no earlier call
    compared_step: int | None  # index of the most similar earlier call
    repeats: int  # earlier calls in the window at or above the threshold
    flag: bool
    args_text: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "similarity": round(self.similarity, 3),
            "compared_step": self.compared_step,
            "repeats": self.repeats,
            "repetition": int(self.flag),
        }


def args_of(step: Step) -> Any:
    # Text-mode actions that did not parse into tool/args still carry the call
    # in their text; compare that rather than nothing.
    if step.args is None and not step.tool:
        return step.text
    return step.args


def args_preview(args: Any, limit: int = 80) -> str:
    text = args if isinstance(args, str) else ("" if args is None else str(args))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class RepetitionDetector:
    window: int = REPETITION_WINDOW
    threshold: float = REPETITION_SIMILARITY
    _history: dict[str, deque[tuple[int, frozenset[str]]]] = field(default_factory=dict)

    def update(self, step: Step) -> RepetitionSignal | None:
        if step.kind != "action":
            return None
        args = args_of(step)
        tool, toks = action_key(step.tool, args)
        past = self._history.get(tool)
        if past is None:
            past = self._history[tool] = deque(maxlen=max(1, self.window))
        best, best_idx, repeats = 0.0, None, 0
        for idx, prev in past:  # O(W)
            sim = jaccard(toks, prev)
            if sim >= self.threshold:
                repeats += 1
            # ">=" so ties go to the most recent call: the one the agent remembers.
            if sim >= best:
                best, best_idx = sim, idx
        past.append((step.index, toks))
        return RepetitionSignal(
            step=step.index,
            tool=tool,
            similarity=best,
            compared_step=best_idx,
            repeats=repeats,
            flag=best >= self.threshold and best_idx is not None,
            args_text=args_preview(args),
        )


def scan(
    steps: Iterable[Step], window: int = REPETITION_WINDOW, threshold: float = REPETITION_SIMILARITY
) -> list[RepetitionSignal]:
    det = RepetitionDetector(window=window, threshold=threshold)
    return [sig for step in steps if (sig := det.update(step)) is not None]
