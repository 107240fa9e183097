"""The data part of runs 0009: statuses that were outcomes become `finished`,
imported runs lose the values nobody gave them, old imports become findable."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from runs.core.models import Run
from runs.reviews.models import ReviewItem

pytestmark = pytest.mark.django_db
migration = importlib.import_module("runs.migrations.0009_outcome_and_context")


def _run(sql_list):
    with connection.cursor() as cur:
        for sql in sql_list:
            cur.execute(sql)


def test_succeeded_and_failed_become_finished_with_the_outcome_unchanged(make_run):
    ok = make_run(status="succeeded", success=True)
    wrong = make_run(status="failed", success=False)
    unscored = make_run(status="succeeded", success=None)
    user_stop = make_run(status="stopped", stopped_by="user", success=False)
    watchdog_stop = make_run(status="stopped", stopped_by="watchdog", success=False)
    ReviewItem.objects.create(run=wrong, step_index=0, detector="x", run_status="failed")
    _run(migration.STATUS_SQL)
    got = {r.pk: (r.status, r.success) for r in Run.objects.all()}
    assert got == {ok.pk: ("finished", True), wrong.pk: ("finished", False), unscored.pk: ("finished", None),
                   user_stop.pk: ("stopped", None), watchdog_stop.pk: ("stopped", False)}
    assert ReviewItem.objects.get().run_status == "finished"


def test_imported_runs_lose_invented_settings_and_become_findable(make_run, user):
    from django.utils import timezone

    now = timezone.now()
    jsonl = [make_run(provider="import", source="f", started_at=now, finished_at=now, owner=user,
                      settings={"external_run_id": "r1"}) for _ in range(2)]  # imported twice before dedup
    api = make_run(provider="import", source="api", started_at=now, finished_at=None, settings={"external_id": "e"})
    native = make_run(started_at=now, finished_at=now)
    _run(migration.UNKNOWN_SQL + migration.SOURCE_RUN_SQL)
    first, second = (Run.objects.get(pk=r.pk) for r in jsonl)
    assert (first.temperature, first.max_steps, first.max_tokens, first.started_at) == (None, None, None, None)
    assert (first.source_run_id, second.source_run_id) == ("r1", "")  # the first copy is the one found
    api = Run.objects.get(pk=api.pk)
    assert api.started_at == now and api.temperature is None and api.source_run_id == ""
    native = Run.objects.get(pk=native.pk)
    assert (native.temperature, native.max_tokens, native.started_at) == (0.0, 20000, now)
