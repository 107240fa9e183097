"""When reviewers' verdicts demote a break pattern in a project. Pure (no Django):
the Breaks page, the label service and bench/calibration.py share it.

A reviewer judges a run's shown break: ``right`` (the lapse is at that step),
``earlier`` / ``later`` (there is a lapse, at another step), ``none`` (no
lapse). A pattern's *confirmed precision* in a project is right ÷ labelled:
only ``right`` confirms that the shown step is the place to look. Under the
floor, over at least ``min_labels`` labels, the pattern is demoted there: its
breaks become findings ("worth a look") and the run shows its next strong
break, if any. An admin may override either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

RIGHT, EARLIER, LATER, NONE = "right", "earlier", "later", "none"
VERDICTS = (RIGHT, EARLIER, LATER, NONE)

# A break that is right less often than wrong costs a reviewer more than it
# saves (issue 26: "default 50%").
DEFAULT_FLOOR = 0.5
# Below 20 labels the 95% interval of a precision is wider than ±20 points
# (binomial, p = 0.5): too few to take a signal away from a team.
DEFAULT_MIN_LABELS = 20

# An admin's word on a pattern, over the rule.
AUTO, FORCE_SHOWN, FORCE_DEMOTED = "", "shown", "demoted"
OVERRIDES = (AUTO, FORCE_SHOWN, FORCE_DEMOTED)


@dataclass(frozen=True)
class Tally:
    """One pattern's verdicts in one project."""

    right: int = 0
    earlier: int = 0
    later: int = 0
    none: int = 0

    @property
    def labelled(self) -> int:
        return self.right + self.earlier + self.later + self.none

    @property
    def precision(self) -> float | None:
        return self.right / self.labelled if self.labelled else None

    @classmethod
    def of(cls, verdicts: Iterable[str]) -> Tally:
        counts = dict.fromkeys(VERDICTS, 0)
        for verdict in verdicts:
            counts[verdict] += 1
        return cls(**counts)


def under_floor(tally: Tally, *, floor: float = DEFAULT_FLOOR, min_labels: int = DEFAULT_MIN_LABELS) -> bool:
    """Whether the verdicts alone demote the pattern: precision < floor over ≥ min_labels labels."""
    return tally.labelled >= max(1, min_labels) and (tally.precision or 0.0) < floor


def is_demoted(tally: Tally, override: str = AUTO, *, floor: float = DEFAULT_FLOOR,
               min_labels: int = DEFAULT_MIN_LABELS) -> bool:
    """Whether the pattern is demoted in the project: the admin's override, else the rule."""
    if override == FORCE_SHOWN:
        return False
    if override == FORCE_DEMOTED:
        return True
    return under_floor(tally, floor=floor, min_labels=min_labels)


def demoted_set(tallies: Mapping[str, Tally], overrides: Mapping[str, str] | None = None, *,
                floor: float = DEFAULT_FLOOR, min_labels: int = DEFAULT_MIN_LABELS) -> frozenset[str]:
    """The project's demoted patterns, for ``anchor_report(demoted=...)``."""
    overrides = overrides or {}
    patterns = set(tallies) | set(overrides)
    return frozenset(p for p in patterns
                     if is_demoted(tallies.get(p, Tally()), overrides.get(p, AUTO), floor=floor, min_labels=min_labels))


def verdict_of(shown: int | None, lapse: int | None) -> str | None:
    """The verdict a reviewer who knows where the lapse is (``lapse``, None for
    no lapse) gives a shown break at step ``shown``; None when nothing is shown.
    The calibration bench draws its labels with it."""
    if shown is None:
        return None
    if lapse is None:
        return NONE
    if shown == lapse:
        return RIGHT
    return EARLIER if lapse < shown else LATER
