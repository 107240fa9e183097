"""Direction drift: every step looks reasonable, but the run stopped closing in
on the goal.

Seen at trajectory level, at checkpoints every K steps: goal coverage (the
share of the goal's terms met in observations or acted on) that stopped
growing, and a "still missing" set that stopped shrinking. Each checkpoint keeps
a short state summary — goal, strategy, obtained, missing — for the timeline
and for the redirect message.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracing.core.detectors.repetition import args_of, args_preview
from tracing.core.normalize import content_tokens, normalize_args
from tracing.core.steps import Step

# Steps between checkpoints (K). 8 ≈ three ReAct turns: long enough for one
# line of enquiry to return something, short enough to catch a wander early.
DRIFT_CHECK_EVERY = 8

# Checkpoints in a row without gain before drift is flagged. 2 (= 16 steps):
# one flat checkpoint is a detour, two is a pattern.
DRIFT_PATIENCE = 2

# Coverage gain per checkpoint that still counts as closing in (one goal term
# in twenty).
DRIFT_MIN_GAIN = 0.05

# Goal terms kept: task statements longer than this are mostly context, and the
# cap bounds the per-step intersection cost.
DRIFT_MAX_GOAL_TERMS = 32

# Imperative filler of task statements: never "obtained" from the world, so
# they would stay "missing" forever and make every long run look stalled.
_GOAL_FILLER_TEXT = (
    "find examine put take get buy need want looking look search tell name answer "
    "question determine identify whether which who whose when where many much"
)
GOAL_FILLER = frozenset(_GOAL_FILLER_TEXT.split())


@dataclass
class Checkpoint:
    step: int
    goal: str
    strategy: str
    obtained: list[str]
    missing: list[str]
    coverage: float
    stalled: int  # consecutive checkpoints without gain, this one included

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "goal": self.goal,
            "strategy": self.strategy,
            "obtained": self.obtained,
            "missing": self.missing,
            "coverage": round(self.coverage, 3),
            "stalled": self.stalled,
        }


@dataclass
class DriftSignal:
    step: int
    checkpoint: Checkpoint
    flag: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "coverage": round(self.checkpoint.coverage, 3),
            "missing": len(self.checkpoint.missing),
            "drift": int(self.flag),
            "checkpoint": self.checkpoint.as_dict(),
        }


def goal_terms(goal: str) -> frozenset[str]:
    terms = [t for t in normalize_args(goal or "") if t not in GOAL_FILLER]
    return frozenset(terms[:DRIFT_MAX_GOAL_TERMS])


@dataclass
class DriftDetector:
    goal: str = ""
    every: int = DRIFT_CHECK_EVERY
    patience: int = DRIFT_PATIENCE
    min_gain: float = DRIFT_MIN_GAIN
    terms: frozenset[str] = frozenset()
    obtained: set[str] = field(default_factory=set)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    _count: int = 0
    _stalled: int = 0
    _prev_coverage: float = 0.0
    _prev_missing: int | None = None
    _last_thought: str = ""
    _recent_actions: deque[str] = field(default_factory=lambda: deque(maxlen=3))

    def __post_init__(self) -> None:
        if not self.terms:
            self.terms = goal_terms(self.goal)

    @property
    def coverage(self) -> float:
        return len(self.obtained) / len(self.terms) if self.terms else 0.0

    def update(self, step: Step, obs_tokens: list[str] | None = None) -> DriftSignal | None:
        if step.kind == "intervention":
            return None  # the watchdog's own words are not the agent's progress
        terms = self.terms
        if step.kind == "thought":
            self._last_thought = " ".join(str(step.text or "").split())[:160]
        elif step.kind == "action":
            args = args_of(step)
            self._recent_actions.append(f"{step.tool or '?'}[{args_preview(args, 40)}]")
            if terms:
                self.obtained.update(t for t in normalize_args(args) if t in terms)
        elif step.kind == "observation" and terms:
            toks = obs_tokens if obs_tokens is not None else content_tokens(step.text)
            self.obtained.update(t for t in toks if t in terms)
        self._count += 1
        if not terms or self._count % max(1, self.every):
            return None
        return self._checkpoint(step.index)

    def _checkpoint(self, index: int) -> DriftSignal:
        coverage = self.coverage
        missing = sorted(self.terms - self.obtained)
        shrunk = self._prev_missing is not None and len(missing) < self._prev_missing
        gained = coverage - self._prev_coverage >= self.min_gain
        if missing and not gained and not shrunk and self._prev_missing is not None:
            self._stalled += 1
        else:
            self._stalled = 0
        self._prev_coverage, self._prev_missing = coverage, len(missing)
        strategy = self._last_thought or "; ".join(self._recent_actions)
        cp = Checkpoint(
            step=index,
            goal=self.goal[:160],
            strategy=strategy,
            obtained=sorted(self.obtained)[:12],
            missing=missing[:12],
            coverage=coverage,
            stalled=self._stalled,
        )
        self.checkpoints.append(cp)
        return DriftSignal(step=index, checkpoint=cp, flag=self._stalled >= self.patience)


def scan(
    steps: Iterable[Step],
    goal: str,
    every: int = DRIFT_CHECK_EVERY,
    patience: int = DRIFT_PATIENCE,
) -> list[DriftSignal]:
    det = DriftDetector(goal=goal, every=every, patience=patience)
    return [sig for step in steps if (sig := det.update(step)) is not None]
