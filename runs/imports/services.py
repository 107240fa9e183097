"""Import trajectories in the JSONL format of shared/eval/README.md as runs.

Each line is one run and its own transaction: a bad line is reported with its
number and nothing of it is stored, a good line lands whole (run, steps,
summary, signals, anchor break, review items for its interruptions), whatever
the lines around it hold. Importing a file again is a no-op: a run
is found by (owner, source, its id in the file) and reported as already there.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from runs.breaks.selectors import demoted_patterns
from runs.core.models import Run
from runs.core.run_rows import summary_columns
from runs.launch.run_analysis import attribution_column, default_policy, report_columns
from runs.reviews.services import review_items_sync
from tracing.core.analysis import analyse
from tracing.core.formats.jsonapi import ApiError, check_context_size, loads_strict
from tracing.core.steps import Trajectory, TrajectoryError, trajectory_from_dict
from tracing.core.summary import RunSummary
from tracing.store.ingest.writes import write_new_steps
from tracing.store.recorder import clean_text, clean_value

logger = logging.getLogger(__name__)

# A line longer than this is refused before parsing: one run of 10,000 steps
# of 1 KB each fits; a 100 MB line is a mistake or an attack.
MAX_LINE_BYTES = 16 * 1024 * 1024
# Steps per imported run; past this the run page and detectors still work,
# but an import should not hold one transaction for minutes.
MAX_STEPS_PER_RUN = 20_000
# Run.source_run_id is varchar(200): a run id longer than this names no run a
# person would look up, and is refused rather than cut (cut ids could collide).
MAX_RUN_ID_CHARS = 200
# Run.source is varchar(40).
SOURCE_CHARS = 40


@dataclass
class ImportResult:
    # Runs this import created.
    run_ids: list[int] = field(default_factory=list)
    # (line, run id) of lines whose run an earlier import already made.
    existing: list[tuple[int, int]] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _final_answer(traj: Trajectory) -> str:
    finals = [s for s in traj.steps if s.kind == "final"]
    if not finals:
        return ""
    last = finals[-1]
    return last.args if isinstance(last.args, str) and last.args else last.text


def outcome_of(traj: Trajectory) -> bool | None:
    """The run's outcome from the file: `success`, else `reward` (full marks, 1,
    is a success: the benchmarks' success rate counts only those), else unscored."""
    if traj.success is not None:
        return traj.success
    if traj.reward is None or not math.isfinite(traj.reward):
        return None
    return traj.reward >= 1.0


# stopped_by of an imported run that ended before its agent did (issue 30, item 12).
UNFINISHED = "unfinished"


@dataclass(frozen=True)
class Ending:
    status: str
    stopped_by: str = ""
    reason: str = ""


def ending_of(traj: Trajectory) -> Ending:
    """How an imported run ended. The file's own word first (its meta's status,
    as agentlab's export writes it); an error step last is `error`; a run with
    no final answer and no outcome (no success, no reward) never got to its end:
    `stopped`, by `unfinished`, as the sample's run stopped by hand; anything
    else ended on its own: `finished`, whatever its outcome."""
    said = (traj.meta or {}).get("status")
    if said == Run.Status.ERROR or (traj.steps and traj.steps[-1].kind == "error"):
        return Ending(Run.Status.ERROR)
    if said in (Run.Status.FINISHED, Run.Status.STOPPED):
        return Ending(said)
    if not any(s.kind == "final" for s in traj.steps) and traj.success is None and traj.reward is None:
        last = traj.steps[-1].kind if traj.steps else "no"
        return Ending(Run.Status.STOPPED, UNFINISHED,
                      f"the file's run ends at {'an' if last[0] in 'aeio' else 'a'} {last} step, without a final "
                      "answer or an outcome: it did not finish")
    return Ending(Run.Status.FINISHED)


def _temperature(meta: dict[str, Any]) -> float | None:
    value = meta.get("temperature")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 2:
        return float(value)
    return None


def source_of(traj: Trajectory, source: str) -> str:
    """The run's source label: the one asked for, else the line's (what dedup keys on)."""
    return clean_text(source or traj.source or "import")[:SOURCE_CHARS]


def _new_run(traj: Trajectory, *, owner, project_id: int, source: str, run_key: str, report) -> Run:
    meta = traj.meta or {}
    ending, success = ending_of(traj), outcome_of(traj)
    status = ending.status
    return Run(
        prompt=clean_text(traj.task),
        owner=owner,
        project_id=project_id,
        source=source,
        source_run_id=run_key,
        provider=Run.Provider.IMPORT,
        model_name=clean_text(str(meta.get("model") or "unknown"))[:120],
        mode=Run.Mode.TEXT if any(isinstance(s.args, str) for s in traj.steps) else Run.Mode.TOOLS,
        # What the file does not say stays unknown (shown as "—"): no budget,
        # no temperature unless its meta gives one, no start time.
        temperature=_temperature(meta),
        max_steps=None,
        max_tokens=None,
        status=status,
        stopped_by=ending.stopped_by,
        reason=ending.reason,
        success=success,
        attribution=attribution_column(traj.steps, goal=traj.goal, status=status, success=success, report=report,
                                       context=traj.context),
        final_answer=clean_text(_final_answer(traj))[:10_000],
        settings=clean_value({"external_run_id": traj.run_id, "source": traj.source, "reward": traj.reward,
                              "meta": meta}),
        context=clean_value(traj.context or {}),
        started_at=None,
        # When it became a finished run here (what-if snapshots by it).
        finished_at=timezone.now(),
        **report_columns(report),
        **summary_columns(RunSummary.of(traj.steps)),
    )


def _existing(owner, project_id: int, source: str, run_id: str) -> Run | None:
    return Run.objects.filter(owner=owner, project_id=project_id, source=source, source_run_id=run_id).only("pk").first()


def import_trajectory(traj: Trajectory, *, project_id: int, owner=None, source: str = "") -> tuple[Run, bool]:
    """The run of this trajectory and whether this call created it (False: an
    earlier import did, and it is returned as it is)."""
    if len(traj.steps) > MAX_STEPS_PER_RUN:
        raise TrajectoryError(f"{len(traj.steps)} steps; at most {MAX_STEPS_PER_RUN} per run")
    if len(traj.run_id) > MAX_RUN_ID_CHARS:
        raise TrajectoryError(f"'run_id' is longer than {MAX_RUN_ID_CHARS} characters")
    try:
        check_context_size(traj.context, "'context'")
    except ApiError as exc:
        raise TrajectoryError(str(exc)) from exc
    label, run_key = source_of(traj, source), clean_text(traj.run_id)
    found = _existing(owner, project_id, label, run_key)
    if found is not None:
        return found, False
    # Signals and anchoring go into each step's meta before the insert, so an
    # imported run lands complete in one pass.
    # A run no watchdog of ours watched gets the default policy replayed (the
    # interruptions of the agent's own watchdog, if any, are the record).
    watched = any(s.kind == "intervention" for s in traj.steps)
    report = analyse(traj.steps, task=traj.goal, context=traj.context or None,
                     replay_policy=None if watched else default_policy(project_id),
                     demoted=demoted_patterns([project_id]).get(project_id, frozenset()))
    run = _new_run(traj, owner=owner, project_id=project_id, source=label, run_key=run_key, report=report)
    try:
        with transaction.atomic():
            run.save()
            write_new_steps([(run.pk, traj.steps)])
            if run.intervention_count:
                # Interruptions recorded by the agent's own watchdog are reviewed like ours.
                review_items_sync(run.pk)
    except IntegrityError:
        # The same line imported at the same moment by another request: theirs won.
        found = _existing(owner, project_id, label, run_key)
        if found is None:
            raise
        return found, False
    return run, True


def _decode(raw: bytes | str) -> str:
    if isinstance(raw, str):
        return raw
    if len(raw) > MAX_LINE_BYTES:
        raise TrajectoryError(f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrajectoryError(f"not UTF-8 (byte {exc.start})") from exc


def import_lines(lines: Iterable[bytes | str], *, project_id: int, owner=None, source: str = "") -> ImportResult:
    result = ImportResult()
    for lineno, raw in enumerate(lines, start=1):
        try:
            text = _decode(raw)
            if not text.strip():
                continue
            data = loads_strict(text, "the line", "line")
            run, created = import_trajectory(trajectory_from_dict(data), project_id=project_id, owner=owner,
                                             source=source)
        except (TrajectoryError, ApiError) as exc:
            result.errors.append((lineno, str(exc)))
            continue
        except DatabaseError as exc:
            # Rolled back with the line's transaction: nothing of it was written.
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            result.errors.append((lineno, f"could not be stored: {first}"))
            continue
        except Exception as exc:  # one line's bug must not cost the lines after it
            # Rolled back like a database error; logged, since validation should have caught it.
            logger.exception("import: line %d failed", lineno)
            result.errors.append((lineno, f"could not be imported ({type(exc).__name__}); nothing of it was stored"))
            continue
        if created:
            result.run_ids.append(run.pk)
        else:
            result.existing.append((lineno, run.pk))
    return result
