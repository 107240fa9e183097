from __future__ import annotations

import pytest

from tracing.core.steps import Step as StepRecord
from tracing.store.models import Step
from tracing.store.recorder import Recorder, record_step

pytestmark = pytest.mark.django_db


def test_it_writes_the_step_and_keeps_the_summary_current(make_run):
    run = make_run(status="running")
    rec = Recorder(run.pk)
    rec(StepRecord(index=0, kind="thought", text="hm", prompt_tokens=100, completion_tokens=7, latency_ms=12.5))
    rec(StepRecord(index=1, kind="action", tool="search", args={"query": "x"}, completion_tokens=3))
    run.refresh_from_db()
    assert run.step_count == 2
    assert run.prompt_tokens == 100
    assert run.completion_tokens == 10
    assert run.latency_ms == 12.5
    step = Step.objects.get(run=run, index=1)
    assert step.args == {"query": "x"}
    assert step.tool == "search"


def test_a_redelivered_write_neither_duplicates_nor_double_counts(make_run):
    run = make_run(status="running")
    step = StepRecord(index=0, kind="thought", text="once", prompt_tokens=5)
    record_step(run.pk, step)
    record_step(run.pk, step)
    run.refresh_from_db()
    assert Step.objects.filter(run=run).count() == 1
    assert run.step_count == 1
    assert run.prompt_tokens == 5


@pytest.mark.django_db(transaction=True)
def test_a_step_commits_without_waiting_for_the_wal_flush_and_only_its_own_transaction(make_run):
    from django.db import connection, transaction

    def synchronous_commit() -> str:
        with connection.cursor() as cur:
            cur.execute("SHOW synchronous_commit")
            return cur.fetchone()[0]

    run = make_run(status="running")
    with transaction.atomic():
        record_step(run.pk, StepRecord(index=0, kind="thought", text="async"))
        assert synchronous_commit() == "off"
    # Set for that transaction only: the session's other writes still wait.
    assert synchronous_commit() == "on"
    record_step(run.pk, StepRecord(index=1, kind="thought", text="autocommit"))
    assert synchronous_commit() == "on" and Step.objects.filter(run=run).count() == 2


def test_it_stores_hostile_text_verbatim(make_run):
    run = make_run(status="running")
    nasty = "<script>alert(1)</script>\x00 ünïcode 中文 " + "x" * 100_000
    record_step(run.pk, StepRecord(index=0, kind="observation", text=nasty, meta={"raw": "\x00"}))
    stored = Step.objects.get(run=run, index=0)
    assert stored.text.startswith("<script>alert(1)</script>")
    assert "\x00" not in stored.text  # Postgres text cannot hold NUL
    assert len(stored.text) == len(nasty)


def test_interventions_are_summarised_on_the_run(make_run):
    run = make_run(status="running")
    rec = Recorder(run.pk)
    rec(StepRecord(index=0, kind="intervention", text="hint", meta={"detector": "repetition", "tier": "hint"}))
    rec(StepRecord(index=1, kind="intervention", text="again", meta={"detector": "repetition", "tier": "redirect"}))
    rec(StepRecord(index=2, kind="intervention", text="out of turns", meta={"detector": "budget", "tier": "stop"}))
    rec(StepRecord(index=2, kind="intervention", text="re-delivered", meta={"detector": "user", "tier": "stop"}))
    rec(StepRecord(index=3, kind="observation", text="x", meta={"detector": "not-an-intervention"}))
    run.refresh_from_db()
    assert run.intervention_count == 3
    assert run.intervention_detectors == ["repetition", "budget"]
    assert run.intervention_tiers == ["hint", "redirect", "stop"]


def test_context_pressure_is_summarised_on_the_run(make_run):
    run = make_run(status="running")
    rec = Recorder(run.pk)
    rec(StepRecord(index=0, kind="thought", text="a", prompt_tokens=120))
    rec(StepRecord(index=1, kind="action", tool="search", args={"q": "x"}))
    rec(StepRecord(index=2, kind="observation", text="long", meta={"truncated": True}))
    rec(StepRecord(index=3, kind="thought", text="b", prompt_tokens=900))
    rec(StepRecord(index=3, kind="thought", text="again", prompt_tokens=900))  # re-delivered: no double count
    run.refresh_from_db()
    assert run.context_steps == [0, 3]
    assert run.context_tokens == [120, 900]
    assert run.truncated_steps == [2]
