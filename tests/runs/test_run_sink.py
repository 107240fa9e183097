"""runs' RunSink (runs/core/run_rows.py): the one place that names the Run
columns tracing writes. A renamed Run field fails here, not in a request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from runs.core.models import Run
from runs.core.run_rows import RunRows, end_columns, summary_columns
from tests.projects import project_of
from tracing.core.label_limits import Labels
from tracing.core.steps import Step
from tracing.core.summary import RunSummary
from tracing.store.ingest.writes import copy_objects
from tracing.store.recorder import record_step
from tracing.store.run_sink import FINISHED, READ_FIELDS, STOPPED, NewRun, RunChange, RunEnd, run_sink

AT = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
FIELDS = {f.name for f in Run._meta.get_fields()}
STEPS = [Step(0, "thought", "look it up", prompt_tokens=120, completion_tokens=8, latency_ms=20.0),
         Step(1, "intervention", "hint", meta={"detector": "repetition", "tier": "hint"})]


def test_runs_hands_its_sink_to_tracing():
    assert isinstance(run_sink(), RunRows)
    assert run_sink().model is Run
    assert set(run_sink().live_statuses) == {str(s) for s in Run.LIVE_STATUSES}


def test_every_column_tracing_reads_or_writes_is_a_run_field():
    end = RunEnd(status=STOPPED, final_answer="", finished_at=AT, stopped_by="watchdog")
    named = {*READ_FIELDS, *summary_columns(RunSummary()), *end_columns(end)}
    assert not named - FIELDS, f"not fields of Run: {sorted(named - FIELDS)}"


def _new(user, **kw) -> Run:
    new = NewRun(owner=user, project_id=project_of(user).pk, source="api", prompt="Who wrote it?", model_name="m" * 200,
                 started_at=AT, settings={"external_id": "x1"}, labels=Labels(tags=["a"], metadata={"k": "v"},
                                                                             session_id="s1"),
                 summary=RunSummary.of(STEPS), **kw)
    run = run_sink().new_run(new)
    copy_objects([run])
    return Run.objects.get(pk=run.pk)


@pytest.mark.django_db
def test_a_new_run_is_an_imported_running_run_with_its_summary(user):
    run = _new(user)
    assert (run.provider, run.source, run.status) == ("import", "api", "running")
    assert len(run.model_name) == 120 and run.temperature is None and run.max_steps is None
    assert (run.tags, run.metadata, run.session_id) == (["a"], {"k": "v"}, "s1")
    assert (run.step_count, run.prompt_tokens, run.intervention_detectors) == (2, 120, ["repetition"])


@pytest.mark.django_db
def test_a_new_run_may_come_ended(user):
    run = _new(user, end=RunEnd(status=FINISHED, final_answer="Ann", finished_at=AT, success=True, reason="done"))
    assert (run.status, run.final_answer, run.success, run.reason, run.finished_at) == ("finished", "Ann", True,
                                                                                        "done", AT)


@pytest.mark.django_db
def test_change_and_end_write_the_row_and_the_instance(user):
    run = _new(user)
    run_sink().change(run, RunChange(model_name="gpt-x", prompt="p\x00", context={"system": "be brief"},
                                     labels=Labels(tags=["b"], metadata={}, session_id="")))
    run_sink().end(run, RunEnd(status=STOPPED, final_answer="half", finished_at=AT, reason="stop",
                               stopped_by="watchdog"))
    stored = Run.objects.get(pk=run.pk)
    for row in (run, stored):
        assert (row.model_name, row.prompt, row.context, row.tags) == ("gpt-x", "p\ufffd", {"system": "be brief"},
                                                                      ["b"])
        assert (row.status, row.stopped_by, row.final_answer, row.success) == ("stopped", "watchdog", "half", None)


@pytest.mark.django_db
def test_end_live_leaves_an_ended_run_as_it_is(user):
    live, ended = _new(user), _new(user, end=RunEnd(status="error", final_answer="", finished_at=AT))
    run_sink().end_live([(r.pk, RunEnd(status=FINISHED, final_answer="A", finished_at=AT, success=True))
                         for r in (live, ended)])
    assert Run.objects.get(pk=live.pk).status == "finished"
    assert Run.objects.get(pk=ended.pk).status == "error"


@pytest.mark.django_db
def test_summaries_add_per_batch_per_step_and_reset(user):
    run = _new(user)
    run_sink().add_to_summaries([(run.pk, RunSummary.of(STEPS))])
    record_step(run.pk, Step(2, "intervention", "stop", meta={"detector": "stagnation", "tier": "stop"},
                             prompt_tokens=5))
    run.refresh_from_db()
    assert (run.step_count, run.prompt_tokens, run.intervention_count) == (5, 245, 3)
    assert (run.intervention_detectors, run.intervention_tiers) == (["repetition", "stagnation"], ["hint", "stop"])
    run_sink().reset_summary(run.pk)
    run.refresh_from_db()
    assert {name: getattr(run, name) for name in summary_columns(RunSummary())} == summary_columns(RunSummary())
