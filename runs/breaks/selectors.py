"""The reads of break calibration: a project's demoted patterns (for analysis),
the Breaks page's rows, a run's labels, the export."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.db.models import Count, Q
from django.db.models.fields.json import KeyTextTransform
from django.utils.translation import gettext_lazy as _

from runs.breaks import rule
from runs.breaks.models import BreakLabel, BreakSettings, PatternState
from runs.core.models import Run
from tracing.core.anchoring import PATTERNS
from tracing.core.anchoring.strength import EVIDENCE, STRONG, WEAK_PATTERNS

# The patterns a run can show (strong by their evidence): the Breaks page
# lists each, labelled or not, so an admin can demote one before any label.
SHOWABLE = tuple(p for p in PATTERNS if p not in WEAK_PATTERNS and EVIDENCE[p].strength == STRONG)


def demoted_patterns(project_ids: Iterable[int | None]) -> dict[int | None, frozenset[str]]:
    """Per project, the patterns demoted there (one query, whatever the number of projects)."""
    ids = {pid for pid in project_ids if pid is not None}
    out: dict[int | None, frozenset[str]] = {pid: frozenset() for pid in ids}
    found: dict[int, set[str]] = {}
    for pid, pattern in PatternState.objects.filter(project_id__in=ids, demoted=True).values_list("project_id",
                                                                                                 "pattern"):
        found.setdefault(pid, set()).add(pattern)
    out.update({pid: frozenset(patterns) for pid, patterns in found.items()})
    return out


def settings_of(project_id: int) -> BreakSettings:
    """The project's rule (unsaved defaults when it has no row)."""
    return BreakSettings.objects.filter(project_id=project_id).first() or BreakSettings(project_id=project_id)


def tallies(project_id: int, patterns: Iterable[str] | None = None) -> dict[str, rule.Tally]:
    """Per pattern, the verdicts of the project's labels (one aggregate query)."""
    qs = BreakLabel.objects.filter(project_id=project_id)
    if patterns is not None:
        qs = qs.filter(pattern__in=list(patterns))
    counts = {v: Count("pk", filter=Q(verdict=v)) for v in rule.VERDICTS}
    rows = qs.order_by().values("pattern").annotate(**counts)
    return {row["pattern"]: rule.Tally(**{v: row[v] for v in rule.VERDICTS}) for row in rows}


@dataclass
class Outcomes:
    """Runs counted by outcome."""

    runs: int = 0
    failed: int = 0
    succeeded: int = 0

    def add(self, success: bool | None) -> None:
        self.runs += 1
        self.failed += success is False
        self.succeeded += success is True


@dataclass
class PatternRow:
    pattern: str
    tally: rule.Tally
    shown: Outcomes  # runs whose shown break has this pattern now
    override: str
    demoted: bool
    under_floor: bool
    # A demoted pattern: runs where it is a finding that would be their shown
    # break again if it were restored (earlier than their break, or no break).
    restorable: Outcomes = field(default_factory=Outcomes)

    @property
    def state(self) -> str:
        if self.override == rule.FORCE_DEMOTED:
            return "demoted by an admin"
        if self.override == rule.FORCE_SHOWN:
            return "kept shown by an admin" + (" (under the floor)" if self.under_floor else "")
        return "demoted: precision under the floor" if self.demoted else "shown"


def _shown_by_pattern(project_id: int) -> dict[str, Outcomes]:
    """Runs per shown-break pattern, by outcome (one aggregate query, served by run_anchor_pattern_idx)."""
    rows = (Run.objects.filter(project_id=project_id, first_anchor_break__isnull=False)
            .annotate(anchor_pattern=KeyTextTransform("pattern", "anchor_evidence"))
            .order_by().values("anchor_pattern")
            .annotate(runs=Count("pk"), failed=Count("pk", filter=Q(success=False)),
                      succeeded=Count("pk", filter=Q(success=True))))
    return {row["anchor_pattern"]: Outcomes(row["runs"], row["failed"], row["succeeded"]) for row in rows}


def _restorable(project_id: int, patterns: Iterable[str]) -> dict[str, Outcomes]:
    """For demoted patterns: the runs where one is a finding before the run's
    shown break (or in a run with none), by outcome. One query over the runs
    that hold any of them as a finding; nothing when none is demoted."""
    patterns = set(patterns)
    out = {p: Outcomes() for p in patterns}
    if not patterns:
        return out
    holds = Q()
    for pattern in sorted(patterns):
        holds |= Q(anchor_findings__contains=[{"pattern": pattern}])
    rows = (Run.objects.filter(holds, project_id=project_id)
            .values_list("first_anchor_break", "anchor_findings", "success").iterator(2000))
    for shown, findings, success in rows:
        for pattern in patterns:
            steps = [f.get("step") for f in findings or [] if f.get("pattern") == pattern]
            if any(isinstance(s, int) and (shown is None or s < shown) for s in steps):
                out[pattern].add(success)
    return out


def pattern_rows(project_id: int, settings: BreakSettings) -> list[PatternRow]:
    """The Breaks page: every showable pattern, and any other the project has
    labels, shown breaks or a state for."""
    marks = tallies(project_id)
    shown = _shown_by_pattern(project_id)
    states = {s.pattern: s for s in PatternState.objects.filter(project_id=project_id)}
    demoted = [p for p, s in states.items() if s.demoted]
    restorable = _restorable(project_id, demoted)
    patterns = list(SHOWABLE) + sorted((set(marks) | set(shown) | set(states)) - set(SHOWABLE))
    rows = []
    for pattern in patterns:
        tally = marks.get(pattern, rule.Tally())
        state = states.get(pattern)
        rows.append(PatternRow(
            pattern=pattern, tally=tally, shown=shown.get(pattern, Outcomes()),
            override=state.override if state else rule.AUTO, demoted=bool(state and state.demoted),
            under_floor=rule.under_floor(tally, floor=settings.floor, min_labels=settings.min_labels),
            restorable=restorable.get(pattern, Outcomes()),
        ))
    return rows


def run_labels(run: Run) -> list[BreakLabel]:
    """The run's break labels, newest first, with their reviewers."""
    return list(BreakLabel.objects.filter(run=run).select_related("reviewer").order_by("-updated_at", "-id"))


# -- export ------------------------------------------------------------------

EXPORT_COLUMNS = ("run", "step", "pattern", "verdict", "reviewer", "note", "labelled_at", "updated_at",
                  "run_success", "task", "model", "shown_break_now", "shown_pattern_now", "evidence")


def export_rows(project_id: int) -> Iterator[dict]:
    """One row per break label of the project, with what the run shows now (a
    label is about the break it judged, which a re-analysis may have moved)."""
    labels = (BreakLabel.objects.filter(project_id=project_id)
              .select_related("reviewer", "run", "run__task")
              # Not the runs' context, findings and summary arrays: an export reads thousands.
              .only("run_id", "step", "pattern", "verdict", "note", "created_at", "updated_at", "reviewer__username",
                    "run__success", "run__model_name", "run__first_anchor_break", "run__anchor_evidence",
                    "run__task_id", "run__task__slug")
              .order_by("run_id", "step", "created_at", "id"))
    for label in labels.iterator(chunk_size=2000):
        run = label.run
        evidence = run.anchor_evidence or {}
        yield {
            "run": label.run_id, "step": label.step, "pattern": label.pattern, "verdict": label.verdict,
            "reviewer": label.reviewer.username, "note": label.note, "labelled_at": label.created_at.isoformat(),
            "updated_at": label.updated_at.isoformat(), "run_success": run.success,
            "task": run.task.slug if run.task_id else None, "model": run.model_name,
            "shown_break_now": run.first_anchor_break, "shown_pattern_now": evidence.get("pattern"),
            "evidence": evidence if run.first_anchor_break == label.step else {},
        }


# -- the run page's panel -------------------------------------------------------

# Keys of the verdicts on the run page, as in the review queue (a digit per label).
VERDICT_KEYS = (("1", rule.RIGHT, _("right step")), ("2", rule.EARLIER, _("lapse is earlier")),
                ("3", rule.LATER, _("lapse is later")), ("4", rule.NONE, _("no lapse")))


@dataclass
class Panel:
    """What the run page shows about its break's verdicts."""

    step: int | None  # the shown break
    pattern: str
    evidence_kind: str
    confidence: float | None
    labels: list[BreakLabel]
    mine: BreakLabel | None  # the user's label on the shown step
    keys: tuple = VERDICT_KEYS

    @property
    def others(self) -> list[BreakLabel]:
        """Labels of other steps (breaks the run showed before a re-analysis)."""
        return [label for label in self.labels if label.step != self.step]


def run_panel(run: Run, user) -> Panel:
    """The run page's verdict panel: one query (the run's labels) when the run
    shows a break, none otherwise (a run with no break has nothing to judge)."""
    evidence = run.anchor_evidence or {}
    labels = run_labels(run) if run.first_anchor_break is not None else []
    step = run.first_anchor_break
    mine = next((label for label in labels if label.reviewer_id == user.pk and label.step == step), None)
    confidence = evidence.get("confidence")
    return Panel(step=step, pattern=str(evidence.get("pattern") or ""), evidence_kind=str(evidence.get("evidence_kind") or ""),
                 confidence=confidence if isinstance(confidence, int | float) else None, labels=labels, mine=mine)
