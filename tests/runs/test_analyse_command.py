"""manage.py analyse: every stored run judged again with the current detectors,
in batches, with a progress line on a terminal."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from runs.core.models import Run
from runs.management.commands.analyse import Progress
from runs.reviews.models import ReviewItem
from tests.projects import team
from tracing.core.steps import Step as StepRecord
from tracing.store.models import Step
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _broken_run(**fields) -> Run:
    """A run whose thought says it read a birthplace the observation does not
    give (a strong anchor break), stored with stale analysis columns."""
    run = Run.objects.create(project=team(), prompt="Where was he born?", status="finished", anchor_reason="stale",
                             anchor_evidence={"pattern": "old"}, **fields)
    record_step(run.pk, StepRecord(index=0, kind="observation", text="He was born in Calder Bay."))
    record_step(run.pk, StepRecord(index=1, kind="thought", text="The observation says he was born in Haiyan."))
    return run


def test_it_recomputes_breaks_findings_and_signals_of_every_ended_run(capsys):
    runs = [_broken_run() for _ in range(5)]
    live = _broken_run()
    Run.objects.filter(pk=live.pk).update(status="running")
    call_command("analyse", "--all", "--batch-runs", "2")
    for run in runs:
        run.refresh_from_db()
        assert run.first_anchor_break == 1 and run.anchor_reason != "stale" and run.anchor_findings == []
        assert "signals" in Step.objects.get(run=run, index=0).meta
    assert Run.objects.get(pk=live.pk).anchor_reason == "stale"  # a live run is judged when it ends
    out = capsys.readouterr()
    assert re.search(r"analysed 5 runs in [\d.]+ s \([\d.]+ runs/s\)", out.out)
    assert out.err == ""  # not a terminal: no progress line


def test_it_draws_progress_on_a_terminal_and_not_with_no_progress(monkeypatch):
    for _ in range(3):
        _broken_run()
    err = Tty()
    call_command("analyse", "--all", "--batch-runs", "1", stderr=err, stdout=io.StringIO())
    lines = err.getvalue()
    assert "3/3 runs" in lines and "runs/s" in lines and "ETA" in lines and lines.endswith("\n")
    err = Tty()
    call_command("analyse", "--all", "--no-progress", stderr=err, stdout=io.StringIO())
    assert err.getvalue() == ""


def test_the_progress_line_says_done_total_rate_and_eta(monkeypatch):
    progress = Progress(200, Tty(), enabled=True)
    monkeypatch.setattr("runs.management.commands.analyse.time.perf_counter", lambda: progress.started + 10.0)
    assert progress.line(50) == "[######..................] 50/200 runs · 5.0 runs/s · ETA 30s"


def test_source_and_since_narrow_the_runs():
    old, api, new = _broken_run(source="import"), _broken_run(source="api"), _broken_run(source="import")
    Run.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=10))
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    call_command("analyse", "--source", "import", "--since", since, stdout=io.StringIO())
    assert [Run.objects.get(pk=r.pk).anchor_reason == "stale" for r in (old, api, new)] == [True, True, False]
    with pytest.raises(CommandError, match="say which runs"):
        call_command("analyse")


def test_batches_are_bounded_by_steps_too():
    from runs.management.commands.analyse import _batches

    for count in (5, 5, 30, 1, 1):
        Run.objects.create(project=team(), prompt="p", status="finished", step_count=count)
    sizes = [len(b) for b in _batches(Run.objects.all(), batch_runs=3, batch_steps=12)]
    assert sizes == [2, 1, 2]


def test_it_uses_each_runs_context_and_syncs_review_items():
    run = _broken_run(context={"system": "Employees are born in Haiyan."})
    record_step(run.pk, StepRecord(index=2, kind="intervention", text="stop",
                                   meta={"detector": "repetition", "tier": "stop", "evidence": {}}))
    Run.objects.filter(pk=run.pk).update(intervention_count=1)
    call_command("analyse", "--run", str(run.pk), stdout=io.StringIO())
    run.refresh_from_db()
    assert run.first_anchor_break is None  # the context says it: grounded
    assert ReviewItem.objects.filter(run=run, step_index=2).exists()
