"""Files in today's JSONL format import unchanged: a sample of every source of
shared/eval, with roles, context and outcomes as the file gives them."""

from __future__ import annotations

import itertools
import json

import pytest

from runs.core.models import Run
from runs.imports.services import import_lines
from runs.reviews.models import ReviewItem
from tests.eval_data import EVAL_DIR, requires_eval
from tests.projects import project_of
from tracing.core.steps import role_of, trajectory_from_dict
from tracing.store.models import Step

pytestmark = [pytest.mark.django_db, requires_eval]
SOURCES = sorted(p.parent.name for p in EVAL_DIR.glob("*/runs.jsonl"))
# Lines per source: enough to meet successes and failures, user turns and contexts.
SAMPLE = 12


def _sample(source: str) -> list[str]:
    with (EVAL_DIR / source / "runs.jsonl").open(encoding="utf-8") as fh:
        return list(itertools.islice(fh, SAMPLE))


def test_every_source_is_there():
    assert {"tau2_retail_telecom", "mint_coding", "intercode", "reflexion_hotpotqa", "react_fever", "react_webshop",
            "alfworld_sala", "react_exemplars"} <= set(SOURCES)


@pytest.mark.parametrize("source", SOURCES)
def test_a_sample_of_each_source_imports_with_roles_context_and_outcomes(user, source):
    lines = _sample(source)
    result = import_lines(lines, project_id=project_of(user).pk, owner=user)
    assert result.errors == [] and len(result.run_ids) == len(lines)
    runs = {run.source_run_id: run for run in Run.objects.filter(pk__in=result.run_ids)}
    for line in lines:
        traj = trajectory_from_dict(json.loads(line))
        run = runs[traj.run_id]
        assert run.source == source and run.provider == "import"
        assert run.status == "finished"  # ended, whatever the outcome
        assert run.success is traj.success
        assert run.context == traj.context
        stored = list(Step.objects.filter(run=run).order_by("index").values_list("index", "kind", "role"))
        assert stored == [(s.index, s.kind, role_of(s)) for s in traj.steps]
        assert run.step_count == len(traj.steps)
    # Twice is once.
    again = import_lines(lines, project_id=project_of(user).pk, owner=user)
    assert again.run_ids == [] and len(again.existing) == len(lines)


def test_a_dialogue_source_has_user_turns_and_a_context(user):
    result = import_lines(_sample("tau2_retail_telecom"), project_id=project_of(user).pk, owner=user)
    runs = Run.objects.filter(pk__in=result.run_ids)
    assert all(run.context.get("system") for run in runs)  # the domain policy
    roles = set(Step.objects.filter(run__in=runs).values_list("role", flat=True))
    assert {"user", "tool", "assistant"} <= roles
    assert not ReviewItem.objects.filter(run__in=runs).exists()  # no interruptions in the files
