"""Errors raised in English by services and pure code, shown on pages in Chinese (issue 30).

tracing.core, the agent loop and the services word their errors in English (the
command line and the JSON API show them so); runs.core.error_text says them in
the page's language where a page shows one. Each page here is asked for in
zh-hans and must say the error in Chinese, the values it names as they were;
the English pages keep the English word for word (the apps' own tests).
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from runs.core.error_text import EVALUATION, translated
from runs.core.models import Task
from tests.htmx import hx
from tests.runs.reviews.test_reviews_helpers import grant_reviewer

pytestmark = pytest.mark.django_db
ZH = {"Accept-Language": "zh-hans"}


def _body(response) -> str:
    return response.content.decode()


def test_the_compare_selection_error_is_in_chinese(auth_client):
    response = auth_client.get(reverse("compare:page") + "?runs=1,abc", headers=ZH)
    assert "“abc”不是运行 ID：请使用数字，例如 ?runs=1,2,3。" in _body(response)
    response = auth_client.get(reverse("compare:page") + "?runs=999999", headers=ZH)
    assert "没有这些运行：999999。请从运行列表中选择运行。" in _body(response)
    english = auth_client.get(reverse("compare:page") + "?runs=", headers={"Accept-Language": "en"})
    assert "No runs selected: tick runs on the run list" in _body(english)


def test_a_policy_error_names_its_field_in_a_chinese_sentence(auth_client):
    response = auth_client.post(reverse("policy_new"), {"name": "bad", "use_json": "on",
                                                        "config": '{"ladder": {"tiers": ["stop", "hint"]}}'},
                                headers=ZH)
    assert response.status_code == 400
    assert ("策略字段“ladder.tiers”：级别不得重复，且须按 hint、redirect、stop 的顺序排列" in
            _body(response).replace("&ldquo;", "“").replace("&rdquo;", "”"))
    response = auth_client.post(reverse("policy_new"), {"name": "bad", "use_json": "on", "config": '{"colour": 1}'},
                                headers=ZH)
    assert "策略字段“colour”：未知字段" in _body(response)


def test_a_protected_default_policy_says_why_in_chinese(auth_client, project):
    from runs.core.models import Policy
    from tests.runs.policies.test_policies import fields_of

    Policy.objects.create(name="default", config={}, project=project)
    response = auth_client.post(reverse("policy_edit", args=["default"]), fields_of(name="default", enabled=""),
                                headers=ZH)
    assert response.status_code == 400
    assert "不能停用默认策略：每个新运行都会使用它。" in _body(response)


def test_a_label_error_is_in_chinese(client, user, make_run):
    client.force_login(grant_reviewer(user))
    run = make_run()
    tags = ", ".join(f"t{i}" for i in range(1000))
    response = client.post(reverse("runs:labels", args=[run.pk]), {"tags": tags, "metadata": ""},
                           headers={**hx("run-labels"), **ZH})
    assert response.status_code == 400 and "标签：共 1000 个标签，最多允许" in _body(response)
    response = client.post(reverse("runs:labels", args=[run.pk]), {"metadata": "no equals sign"},
                           headers={**hx("run-labels"), **ZH})
    assert "元数据：第 1 行不是 key=value 格式" in _body(response)


def _launch(task: Task, **overrides) -> dict:
    data = {"task": task.slug, "provider": "sim", "mode": "tools", "temperature": 0.7, "max_steps": 10,
            "max_tokens": 20000, "reruns": 1}
    data.update(overrides)
    return data


def test_a_fault_error_on_the_launch_form_is_in_chinese(auth_client, task, monkeypatch):
    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda *a, **kw: None)
    response = auth_client.post(reverse("runs:new"), _launch(task, fault_timeout=0.6, fault_empty=0.6), headers=ZH)
    assert response.status_code == 400 and "故障：各比率之和超过 1" in _body(response)


def test_the_evaluation_form_errors_are_in_chinese(auth_client, monkeypatch):
    from kombu.exceptions import OperationalError

    tasks = [Task.objects.create(slug=f"task-{i}", title=f"Task {i}", prompt="?", gold_answer="1") for i in (1, 2)]

    def refuse(*args, **kwargs):
        raise OperationalError("Connection refused.")

    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", refuse)
    data = {"tasks": [t.slug for t in tasks], "strategies": ["no_tools"], "provider": "sim", "mode": "tools",
            "temperature": 0, "reruns": 1, "max_steps": 8, "max_tokens": 10000, "max_seconds": 60}
    response = auth_client.post(reverse("evaluations:new"), data, headers=ZH)
    assert response.status_code == 400
    assert "运行队列 (Redis) 不可用：Connection refused.。没有任何内容进入队列" in _body(response)


def test_evaluation_errors_are_translated_and_english_stays():
    # The form refuses these first (its own Chinese sentences); the service's words reach a page only
    # should a rule of the form and of the service ever part, and then in Chinese too.
    message = "unknown strategy magic; known: no_tools, react"
    with translation.override("en"):
        assert translated(message, EVALUATION) == message
    with translation.override("zh-hans"):
        assert translated(message, EVALUATION) == "未知策略 magic；已知策略：no_tools, react"
        assert translated("the budget's max_steps must be at least 1", EVALUATION) == "预算的 max_steps 至少为 1"
        assert translated("something else", EVALUATION) == "something else"  # never half translated


def test_a_what_if_policy_error_is_in_chinese(auth_client):
    response = auth_client.post(reverse("whatif_new"), {"config": '{"thresholds": {"novelty_min": 3}}'}, headers=ZH)
    assert response.status_code == 400
    assert "策略字段“thresholds.novelty_min”：必须在 0 到 1 之间" in _body(response)


def test_a_review_label_error_is_in_chinese(client, user, make_run):
    from tests.runs.reviews.test_reviews_helpers import interrupted_run

    run = interrupted_run(make_run)
    client.force_login(grant_reviewer(user))
    response = client.post(reverse("reviews:label", args=[run.pk, 6]), {"value": "maybe"},
                           headers={**hx(), **ZH})
    assert response.status_code == 400 and _body(response).startswith("标注必须是 ")
    assert "收到的是 'maybe'" in _body(response)


def test_a_break_verdict_error_is_in_chinese(client, member, make_run, settings):
    from tests.runs.breaks.breaks_helpers import requery_run

    settings.BREAKS_REANALYSE_INLINE = True
    run = requery_run(make_run)
    client.force_login(member("rita", "reviewer"))
    response = client.post(reverse("breaks:label", args=[run.pk]), {"verdict": "maybe", "step": 4},
                           headers={**hx("break-panel"), **ZH})
    assert response.status_code == 400
    assert _body(response).startswith("判定必须是 right, earlier, later, none 之一；收到的是 'maybe'")
    response = client.post(reverse("breaks:label", args=[run.pk]), {"verdict": "none", "step": "x"},
                           headers={**hx("break-panel"), **ZH})
    assert "step 必须是步骤序号" in _body(response)


@pytest.mark.parametrize(("table", "english", "chinese"), [
    ("FORK", "run 7 has no step 40", "运行 7 没有步骤 40"),
    ("FORK", "the edited text is empty", "编辑后的文本为空"),
    ("APPROVAL", "Unknown decision 'maybe': approved, edited or denied.",
     "未知决定 'maybe'：应为 approved、edited 或 denied。"),
    ("APPROVAL", 'The arguments must be a JSON object, e.g. {"text": "..."}.', '参数必须是一个 JSON 对象，例如 {"text": "..."}。'),
    ("LAYER_LABEL", "unknown layer 'x': one of planning, tool", "未知层 'x'：应为 planning, tool 之一"),
    ("QUEUE", "The run queue (Redis) is unavailable: refused", "运行队列 (Redis) 不可用：refused"),
])
def test_the_other_service_errors_are_translated_and_english_stays(table, english, chinese):
    from runs.core import error_text

    with translation.override("en"):
        assert translated(english, getattr(error_text, table)) == english
    with translation.override("zh-hans"):
        assert translated(english, getattr(error_text, table)) == chinese


def test_a_policy_that_is_not_json_is_said_in_chinese(auth_client):
    response = auth_client.post(reverse("policy_new"), {"name": "bad", "use_json": "on", "config": "{not json"},
                                headers=ZH)
    assert response.status_code == 400
    assert "该策略不是 JSON：此处应为带双引号的属性名（第 1 行，第 2 列）" in _body(response)
    response = auth_client.post(reverse("whatif_new"), {"config": "[1, 2]"}, headers=ZH)
    assert '策略必须是一个 JSON 对象：{&quot;thresholds&quot;: {...}, &quot;ladder&quot;: {...}}' in _body(response)


def test_the_launch_form_says_the_queue_is_down_in_chinese(auth_client, task, monkeypatch):
    from kombu.exceptions import OperationalError

    def refuse(*args, **kwargs):
        raise OperationalError("Connection refused.")

    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", refuse)
    response = auth_client.post(reverse("runs:new"), _launch(task), headers=ZH)
    assert response.status_code in (400, 503)
    assert "运行队列 (Redis) 不可用：Connection refused.。没有任何内容进入队列；请在队列恢复后重试。" in _body(response)
