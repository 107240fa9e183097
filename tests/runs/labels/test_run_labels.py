"""Tags, metadata and sessions on the run page, the run list and the session page."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from runs.core.models import Run
from tests.htmx import hx
from tests.runs.reviews.test_reviews_helpers import grant_reviewer
from tracing.core.label_limits import MAX_TAGS

pytestmark = pytest.mark.django_db

ODD = '<script>alert("t")</script>'


@pytest.fixture
def reviewer_client(client, user):
    client.force_login(grant_reviewer(user))
    return client


def _ids(response) -> list[int]:
    return [r.pk for r in response.context["runs"]]


def test_the_run_page_shows_tags_metadata_and_session_escaped(auth_client, make_run):
    run = make_run(tags=[ODD, "数据集"], metadata={"env": "prod", "note": "it's <b>bold</b>"}, session_id="chat 1/2")
    body = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "<script>alert" not in body and "<b>bold</b>" not in body
    assert "&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;" in body
    assert "it&#x27;s &lt;b&gt;bold&lt;/b&gt;" in body
    assert 'href="/runs/?tag=%3Cscript%3Ealert%28%22t%22%29%3C/script%3E"' in body
    assert 'href="/runs/session/?id=chat%201/2"' in body
    assert ">数据集</a>" in body


def test_a_reviewer_edits_the_labels_with_htmx(reviewer_client, make_run):
    run = make_run()
    url = reverse("runs:labels", args=[run.pk])
    form = reviewer_client.get(url, {"edit": "1"}, headers=hx("run-labels"))
    assert form.status_code == 200 and 'name="tags"' in form.content.decode()
    response = reviewer_client.post(url, {"tags": f"exp-7, {ODD}, exp-7", "metadata": "env=prod\nuser.id = u-9",
                                          "session_id": "chat-1"}, headers=hx("run-labels"))
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.tags == ["exp-7", ODD]
    assert run.metadata == {"env": "prod", "user.id": "u-9"}
    assert run.session_id == "chat-1"
    assert "&lt;script&gt;" in response.content.decode()


def test_without_htmx_saving_goes_back_to_the_run(reviewer_client, make_run):
    run = make_run()
    response = reviewer_client.post(reverse("runs:labels", args=[run.pk]), {"tags": "a", "metadata": "", "session_id": ""})
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()


def test_a_thousand_tags_are_refused_with_the_limit_and_nothing_is_written(reviewer_client, make_run):
    run = make_run(tags=["keep"])
    tags = ", ".join(f"t{i}" for i in range(1000))
    response = reviewer_client.post(reverse("runs:labels", args=[run.pk]), {"tags": tags, "metadata": "env=x"},
                                    headers=hx("run-labels"))
    assert response.status_code == 400
    assert f"1000 tags, at most {MAX_TAGS} allowed" in response.content.decode()
    run.refresh_from_db()
    assert run.tags == ["keep"] and run.metadata == {}


@pytest.mark.parametrize(("data", "message"), [
    ({"tags": "x" * 65}, "longer than 64 characters"),
    ({"metadata": "no equals sign"}, "line 1 is not key=value"),
    ({"metadata": "k=" + "v" * 1001}, "metadata.k: longer than 1000"),
    ({"session_id": "s" * 201}, "at most 200 characters"),
])
def test_bad_labels_are_form_errors(reviewer_client, make_run, data, message):
    run = make_run()
    response = reviewer_client.post(reverse("runs:labels", args=[run.pk]), data, headers=hx("run-labels"))
    assert response.status_code == 400
    assert message in response.content.decode()


def test_a_viewer_cannot_edit_labels(client, member, make_run):
    run = make_run()
    auth_client = client
    auth_client.force_login(member("vera", "viewer"))
    assert auth_client.get(reverse("runs:labels", args=[run.pk]), {"edit": "1"}).status_code == 403
    assert auth_client.post(reverse("runs:labels", args=[run.pk]), {"tags": "x"}).status_code == 403
    run.refresh_from_db()
    assert run.tags == []
    assert "edit labels" not in auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()


def test_anonymous_is_sent_to_log_in(client, make_run):
    run = make_run()
    assert client.post(reverse("runs:labels", args=[run.pk]), {"tags": "x"}).status_code == 302
    assert client.get(reverse("runs:session"), {"id": "s"}).status_code == 302


def test_the_list_filters_by_tag_metadata_and_session(auth_client, make_run):
    a = make_run(tags=["prod", ODD], metadata={"env": "prod", "v": 3}, session_id="s1")
    b = make_run(tags=["dev"], metadata={"env": "dev", "v": "3"}, session_id="s1")
    make_run()
    url = reverse("runs:list")
    assert _ids(auth_client.get(url, {"tag": ODD})) == [a.pk]
    assert _ids(auth_client.get(url, {"meta": "env=prod"})) == [a.pk]
    # A number from the API and the same text typed in a form both match "v=3".
    assert _ids(auth_client.get(url, {"meta": "v=3"})) == [b.pk, a.pk]
    assert _ids(auth_client.get(url, {"session": "s1"})) == [b.pk, a.pk]
    bad = auth_client.get(url, {"meta": "novalue"})
    assert "key=value" in bad.content.decode()


def test_the_list_with_tags_runs_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries):
    for i in range(20):
        make_run(tags=[f"t{i}", "shared", ODD], session_id=f"s{i % 3}", metadata={"k": i})
    # 1 session, 2 user, 3 membership (the current project), 4 runs (tags are a column), 5 the price table (the
    # cost column), 6 the reconciler's last sweep (the banner), 7 task list
    with django_assert_num_queries(7):
        response = auth_client.get(reverse("runs:list"), {"tag": "shared"})
    assert len(response.context["runs"]) == 20
    assert "&lt;script&gt;" in response.content.decode()


def test_the_session_page_lists_its_runs_oldest_first(auth_client, make_run, django_assert_num_queries):
    first = make_run(session_id="chat-9", tags=["a"])
    make_run(session_id="other")
    second = make_run(session_id="chat-9")
    # 1 session, 2 user, 3 membership (the current project), 4 the session's runs with their tasks
    with django_assert_num_queries(4):
        response = auth_client.get(reverse("runs:session"), {"id": "chat-9"})
    assert [r.pk for r in response.context["runs"]] == [first.pk, second.pk]
    assert auth_client.get(reverse("runs:session"), {"id": "nope"}).status_code == 404
    assert auth_client.get(reverse("runs:session")).status_code == 404


def test_runagent_tags_its_runs(task, monkeypatch, project):
    from runs.launch.tasks import execute_run

    monkeypatch.setattr(execute_run, "apply_async", lambda *a, **k: None)
    call_command("runagent", "--task", task.slug, "--policy", "off", "--tag", "nightly", "--tag", ODD,
                 "--meta", "build=1234", "--session", "ci-7", stdout=io.StringIO())
    run = Run.objects.get()
    assert (run.tags, run.metadata, run.session_id) == (["nightly", ODD], {"build": "1234"}, "ci-7")


def test_runagent_refuses_too_many_tags(task, project):
    args = ["runagent", "--task", task.slug, "--policy", "off"]
    for i in range(MAX_TAGS + 1):
        args += ["--tag", f"t{i}"]
    with pytest.raises(CommandError, match="at most"):
        call_command(*args, stdout=io.StringIO())
    assert not Run.objects.exists()


def test_the_new_run_form_tags_the_runs_it_starts(auth_client, task, monkeypatch):
    monkeypatch.setattr("runs.launch.tasks.execute_run.apply_async", lambda *a, **k: None)
    data = {"task": task.slug, "provider": "sim", "mode": "tools", "temperature": 0.7, "max_steps": 10,
            "max_tokens": 20000, "reruns": 2, "tags": f"exp-a, {ODD}", "session_id": "s-1"}
    assert auth_client.post(reverse("runs:new"), data).status_code == 302
    assert [(r.tags, r.session_id) for r in Run.objects.all()] == [(["exp-a", ODD], "s-1")] * 2


def test_the_new_run_form_refuses_too_many_tags(auth_client, task):
    data = {"task": task.slug, "provider": "sim", "mode": "tools", "temperature": 0.7, "max_steps": 10,
            "max_tokens": 20000, "reruns": 1, "tags": ",".join(f"t{i}" for i in range(1000))}
    response = auth_client.post(reverse("runs:new"), data)
    assert response.status_code == 400
    assert "1000 tags, at most 64 allowed" in response.content.decode()
    assert not Run.objects.exists()
