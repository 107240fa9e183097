"""Step roles in the database: one set of names, stored resolved by every
writer, and the backfill of rows written before the column existed."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from tracing.core.steps import ROLES, USER_TOOLS, role_of
from tracing.core.steps import Step as StepRecord
from tracing.store.ingest.writes import copy_steps, insert_steps
from tracing.store.models import Step
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db

STEPS = [
    StepRecord(index=0, kind="observation", tool="user", text="hi"),
    StepRecord(index=1, kind="action", tool="respond", args={"content": "hello"}, text="hello"),
    StepRecord(index=2, kind="observation", tool="search", text="data"),
    StepRecord(index=3, kind="intervention", text="stop", meta={"detector": "x", "tier": "stop"}),
    StepRecord(index=4, kind="observation", role="system", text="policy note"),
    StepRecord(index=5, kind="thought", text="thinking"),
    StepRecord(index=6, kind="observation", tool=" Human ", text="a person"),
]


def test_the_model_knows_the_same_roles_as_the_core():
    assert tuple(Step.Role.values) == ROLES


@pytest.mark.parametrize("write", ["recorder", "insert", "copy"])
def test_every_writer_stores_the_resolved_role(make_run, write):
    run = make_run(steps=0)
    if write == "recorder":
        for step in STEPS:
            record_step(run.pk, step)
    elif write == "insert":
        insert_steps(run.pk, STEPS)
    else:
        copy_steps([(run.pk, STEPS)])
    stored = dict(Step.objects.filter(run=run).values_list("index", "role"))
    assert stored == {s.index: role_of(s) for s in STEPS}
    assert stored == {0: "user", 1: "assistant", 2: "tool", 3: "watchdog", 4: "system", 5: "assistant", 6: "user"}
    assert [s.to_record().role for s in Step.objects.filter(run=run).order_by("index")] == [stored[i] for i in range(7)]


def test_a_row_written_without_a_role_gets_the_database_default(make_run):
    run = make_run(steps=0)
    with connection.cursor() as cur:
        cur.execute("INSERT INTO tracing_step (run_id, index, kind, text, tool, meta, prompt_tokens, "
                    "completion_tokens, latency_ms, created_at) VALUES (%s, 0, 'thought', 'x', '', '{}', 0, 0, 0, "
                    "now())", [run.pk])
    assert Step.objects.get(run=run).role == "assistant"


def test_the_migration_backfills_roles_by_the_same_inference(make_run):
    migration = importlib.import_module("tracing.store.migrations.0003_step_role")
    assert set(migration.USER_TOOLS) == USER_TOOLS  # the migration's frozen copy matches today's
    run = make_run(steps=0)
    copy_steps([(run.pk, STEPS)])
    Step.objects.filter(run=run).update(role="assistant")  # as the column's default left old rows
    with connection.cursor() as cur:
        for sql in migration.BACKFILL_SQL:
            cur.execute(sql)
    stored = dict(Step.objects.filter(run=run).values_list("index", "role"))
    # Inferred from kind and tool; a role only the writer knew (step 4's) cannot be recovered.
    assert stored == {0: "user", 1: "assistant", 2: "tool", 3: "watchdog", 4: "tool", 5: "assistant", 6: "user"}
