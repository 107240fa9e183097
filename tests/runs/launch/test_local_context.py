"""The local model's 2,048-token window, end to end through the worker's code
(issue 16, item 10): a fork of a long local run fits its context, and the run
page says which observations were trimmed for it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.endpoints import config_for
from runs.core.models import Run
from runs.launch import services
from runs.launch.execution import run_execute
from tests.projects import team
from tests.runs.agent.test_context_fit import WINDOW, LongPages, WindowServer, client_for
from tracing.core.steps import Step as StepRecord
from tracing.store.models import Step
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db


def long_local_run(user, turns: int = 12) -> Run:
    run = Run.objects.create(project=team(), prompt="How long is the Lumen Bridge?", owner=user, provider="local",
                             model_name="gemma-3-270m", mode="text", status="finished", max_steps=30)
    index = 0
    for turn in range(turns):
        query = f"part {turn} of the Lumen report"
        record_step(run.pk, StepRecord(index=index, kind="thought", text=f"I need part {turn}.", prompt_tokens=900,
                                       completion_tokens=12))
        record_step(run.pk, StepRecord(index=index + 1, kind="action", text=f"search[{query}]", tool="search",
                                       args=query))
        record_step(run.pk, StepRecord(index=index + 2, kind="observation", tool="search",
                                       text=LongPages()({"query": query}).text, meta={"status": "ok"}))
        index += 3
    run.refresh_from_db()
    return run


def test_the_local_model_runs_with_its_window(user, settings):
    settings.LOCAL_MODEL_CONTEXT_TOKENS = 2048
    run = Run.objects.create(project=team(), prompt="p", provider="local", mode="text")
    assert config_for(run).context_tokens == 2048
    assert config_for(Run.objects.create(project=team(), prompt="p", provider="sim")).context_tokens is None


def test_a_fork_of_a_long_local_run_fits_and_the_page_says_what_was_trimmed(auth_client, user, settings):
    settings.LOCAL_MODEL_CONTEXT_TOKENS = WINDOW
    parent = long_local_run(user)
    fork = services.fork_create(parent=parent, fork_from=parent.step_count, owner=user, enqueue=False)
    server = WindowServer(turns_before_answer=0)
    fork = run_execute(run_id=fork.pk, client=client_for(server))
    assert fork.status == "finished", fork.reason
    assert server.refused == 0
    first = Step.objects.filter(run=fork).order_by("index").first()
    cut = first.meta["context_cut"]
    assert cut["limit"] == WINDOW and cut["left_out"][0] == 2  # the oldest observation first
    assert first.index in fork.truncated_steps  # the context-pressure strip marks the turn
    body = auth_client.get(reverse("runs:detail", args=[fork.pk])).content.decode()
    row = body.split(f'id="step-{first.index}"', 1)[1]
    assert f"context trimmed to {WINDOW} tokens" in row and 'href="#step-2"' in row
