"""Import trajectories in the JSONL format of shared/eval/README.md as runs.

Each line is its own transaction: a bad line is reported with its number and
skipped, a good line lands whole (run, steps, summary, signals, anchor break).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from runs.launch.models import Run
from tracing.analysis import analyse
from tracing.models import Step
from tracing.steps import Trajectory, TrajectoryError, trajectory_from_dict
from tracing.summary import RunSummary, step_tokens

# A line longer than this is refused before parsing: one run of 10,000 steps
# of 1 KB each fits; a 100 MB line is a mistake or an attack.
MAX_LINE_BYTES = 16 * 1024 * 1024
# Steps per imported run; past this the run page and detectors still work,
# but an import should not hold one transaction for minutes.
MAX_STEPS_PER_RUN = 20_000


@dataclass
class ImportResult:
    run_ids: list[int] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _clean_text(text: str) -> str:
    return text.replace("\x00", "\ufffd")


def _final_answer(traj: Trajectory) -> str:
    finals = [s for s in traj.steps if s.kind == "final"]
    if not finals:
        return ""
    last = finals[-1]
    return last.args if isinstance(last.args, str) and last.args else last.text


def _new_run(traj: Trajectory, *, owner, source: str, report) -> Run:
    now = timezone.now()
    meta = traj.meta or {}
    return Run(
        prompt=_clean_text(traj.task),
        owner=owner,
        source=(source or traj.source or "import")[:40],
        provider=Run.Provider.IMPORT,
        model_name=str(meta.get("model") or "unknown")[:120],
        mode=Run.Mode.TEXT if any(isinstance(s.args, str) for s in traj.steps) else Run.Mode.TOOLS,
        max_steps=min(1000, max(1, len(traj.steps))),
        status=Run.Status.SUCCEEDED if any(s.kind == "final" for s in traj.steps) else Run.Status.FAILED,
        success=traj.success,
        final_answer=_clean_text(_final_answer(traj))[:10_000],
        settings={"external_run_id": traj.run_id, "source": traj.source, "reward": traj.reward,
                  "meta": json.loads(json.dumps(meta, default=str).replace("\\u0000", "\\ufffd"))},
        started_at=now,
        finished_at=now,
        first_anchor_break=report.first_break,
        anchor_reason=report.reason or "",
        anchor_evidence=report.evidence or {},
        **RunSummary.of(traj.steps).columns(),
    )


def import_trajectory(traj: Trajectory, *, owner=None, source: str = "") -> Run:
    if len(traj.steps) > MAX_STEPS_PER_RUN:
        raise TrajectoryError(f"{len(traj.steps)} steps; at most {MAX_STEPS_PER_RUN} per run")
    # Signals and anchoring go into each step's meta before the insert, so an
    # imported run lands complete in one pass.
    report = analyse(traj.steps, task=traj.goal, context=traj.context)
    run = _new_run(traj, owner=owner, source=source, report=report)
    with transaction.atomic():
        run.save()
        Step.objects.bulk_create(
            [
                Step(run=run, index=s.index, kind=s.kind, text=_clean_text(s.text), tool=(s.tool or "")[:120],
                     args=s.args, meta=s.meta, prompt_tokens=prompt, completion_tokens=completion, latency_ms=latency)
                for s in traj.steps
                for prompt, completion, latency in [step_tokens(s)]
            ],
            batch_size=1000,
        )
    return run


def import_lines(lines: Iterable[bytes | str], *, owner=None, source: str = "") -> ImportResult:
    result = ImportResult()
    for lineno, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            if len(raw) > MAX_LINE_BYTES:
                result.errors.append((lineno, f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB"))
                continue
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                result.errors.append((lineno, f"not UTF-8 (byte {exc.start})"))
                continue
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            result.errors.append((lineno, f"not JSON: {exc.msg} at column {exc.colno}"))
            continue
        except RecursionError:
            result.errors.append((lineno, "JSON nested too deeply"))
            continue
        try:
            run = import_trajectory(trajectory_from_dict(data), owner=owner, source=source)
        except TrajectoryError as exc:
            result.errors.append((lineno, str(exc)))
            continue
        result.run_ids.append(run.pk)
    return result
