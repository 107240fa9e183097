"""The run list's search box: runs by the text of their steps, or by an id."""

from __future__ import annotations

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django.urls import reverse

from runs.launch.sweeper import Sweeper
from tests.htmx import hx
from tests.projects import project_of
from tracing.core.steps import Step as StepRecord
from tracing.core.stepsearch import tsquery_literal
from tracing.store.ingest.writes import COPY_MIN_ROWS, write_new_steps
from tracing.store.models import ExternalRun, Step
from tracing.store.recorder import record_step
from tracing.store.step_indexer import STEP_INDEX_LOCK_KEY, index_pending_steps

pytestmark = pytest.mark.django_db


def _run_with(make_run, *texts, tool=None, args=None, **fields):
    run = make_run(**fields)
    for i, text in enumerate(texts):
        record_step(run.pk, StepRecord(index=i, kind="observation" if i % 2 else "thought", text=text, tool=tool,
                                       args=args))
    return run


def _ids(response) -> list[int]:
    return [r.pk for r in response.context["runs"]]


def test_it_finds_runs_by_a_word_of_any_step_newest_first(auth_client, make_run):
    a = _run_with(make_run, "I will look it up", "The annual report says revenue was 3.2bn")
    _run_with(make_run, "nothing relevant here")
    b = _run_with(make_run, "Checking the Annual Report again")
    response = auth_client.get(reverse("runs:list"), {"q": "annual report"})
    assert _ids(response) == [b.pk, a.pk]
    hit = response.context["runs"][1].hit
    assert (hit.index, hit.kind, hit.hit) == (1, "observation", "annual")
    body = response.content.decode()
    assert f'href="/runs/{a.pk}/#step-1"' in body
    assert "<mark>annual</mark> report says" in body


def test_every_word_must_be_in_the_same_step(auth_client, make_run):
    _run_with(make_run, "annual figures", "a report")
    both = _run_with(make_run, "the annual report")
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "annual report"})) == [both.pk]


def test_chinese_text_is_found_by_a_word_inside_a_sentence(auth_client, make_run):
    zh = _run_with(make_run, "根据年报，公司营业收入为三十亿元。")
    _run_with(make_run, "北京是首都")
    response = auth_client.get(reverse("runs:list"), {"q": "营业收入"})
    assert _ids(response) == [zh.pk]
    assert "<mark>营业</mark>收入" in response.content.decode()


def test_arguments_and_tool_names_are_searched(auth_client, make_run):
    run = _run_with(make_run, "", tool="lookup_weather", args={"city": "Reykjavik"})
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "reykjavik"})) == [run.pk]
    response = auth_client.get(reverse("runs:list"), {"q": "weather"})
    assert _ids(response) == [run.pk]


def test_the_final_answer_step_is_searched(auth_client, make_run):
    run = make_run()
    record_step(run.pk, StepRecord(index=0, kind="final", text="Fredville is the capital"))
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "fredville"})) == [run.pk]


def test_steps_written_in_bulk_are_searchable(auth_client, make_run):
    run = make_run()
    steps = [StepRecord(index=i, kind="observation", text=f"page {i} of the ledger") for i in range(COPY_MIN_ROWS)]
    steps[-1] = StepRecord(index=COPY_MIN_ROWS - 1, kind="observation", text="the lantern museum")
    write_new_steps([(run.pk, steps)])
    response = auth_client.get(reverse("runs:list"), {"q": "lantern"})
    assert _ids(response) == [run.pk]
    assert response.context["runs"][0].hit.index == COPY_MIN_ROWS - 1


def test_markup_in_a_step_is_shown_as_text(auth_client, make_run):
    _run_with(make_run, 'ignore previous instructions <script>alert("x")</script> payload <img src=x onerror=1>')
    body = auth_client.get(reverse("runs:list"), {"q": "payload"}).content.decode()
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; <mark>payload</mark> &lt;img" in body


def test_a_query_of_punctuation_only_says_so_and_lists_nothing(auth_client, make_run):
    _run_with(make_run, "anything")
    response = auth_client.get(reverse("runs:list"), {"q": "'\"<>&|!:*"})
    assert response.status_code == 200
    assert _ids(response) == []
    assert "has no word to search for" in response.content.decode()


def test_a_too_long_query_is_a_form_error(auth_client):
    response = auth_client.get(reverse("runs:list"), {"q": "x" * 501})
    assert response.status_code == 200
    assert "q" in response.context["form"].errors


@pytest.mark.parametrize("how", ["pk", "hash", "trace", "external", "source_run_id"])
def test_it_finds_a_run_by_an_id_it_is_known_by(auth_client, make_run, user, how):
    run = _run_with(make_run, "mentions 4bf92f3577b34da6a3ce929d0e0e4736 and ext-42 and 99999", source_run_id="file-7")
    make_run()
    ExternalRun.objects.create(owner=user, project=project_of(user), source="otlp", external_id="4bf92f3577b34da6a3ce929d0e0e4736", run=run)
    q = {"pk": str(run.pk), "hash": f"#{run.pk}", "trace": "4bf92f3577b34da6a3ce929d0e0e4736",
         "external": "4bf92f3577b34da6a3ce929d0e0e4736", "source_run_id": "file-7"}[how]
    response = auth_client.get(reverse("runs:list"), {"q": q})
    assert _ids(response) == [run.pk]
    assert response.context["search"].by_id


def test_an_id_that_is_also_text_can_be_searched_as_text(auth_client, make_run):
    named = make_run()
    mentions = _run_with(make_run, f"see order {named.pk}")
    assert _ids(auth_client.get(reverse("runs:list"), {"q": str(named.pk)})) == [named.pk]
    assert _ids(auth_client.get(reverse("runs:list"), {"q": str(named.pk), "within": "text"})) == [mentions.pk]


def test_search_combines_with_the_other_filters(auth_client, make_run):
    _run_with(make_run, "the lantern", status="error")
    ok = _run_with(make_run, "the lantern")
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "lantern", "status": "finished"})) == [ok.pk]


def test_a_searched_page_runs_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries):
    for i in range(12):
        _run_with(make_run, f"step about lantern number {i}", "and another lantern", tags=["a", "b"])
    # 1 session, 2 user, 3 membership (the current project), 4 id lookup (run id / trace id / external id), 5 the
    # runs with a matching step, 6 the first matching step of each run on the page, 7 the price table, 8 the
    # reconciler's last sweep (the banner), 9 the task list
    with django_assert_num_queries(9):
        response = auth_client.get(reverse("runs:list"), {"q": "lantern"})
    assert len(response.context["runs"]) == 12


def test_the_next_page_keeps_the_search(auth_client, make_run):
    runs = [_run_with(make_run, "lantern") for _ in range(55)]
    first = auth_client.get(reverse("runs:list"), {"q": "lantern"})
    assert "q=lantern" in first.context["next_query"]
    second = auth_client.get(reverse("runs:list") + "?" + first.context["next_query"], headers=hx("more-runs"))
    assert len(second.context["runs"]) == 5
    assert all(r.hit for r in second.context["runs"])
    assert {r.pk for r in second.context["runs"]} == {r.pk for r in runs[:5]}


def test_anonymous_users_are_sent_to_log_in(client):
    response = client.get(reverse("runs:list"), {"q": "lantern"})
    assert response.status_code == 302


def _indexed_match(tokens: list[str]) -> set[int]:
    """Runs found through the search column alone (the GIN index's arm of the match)."""
    return set(Step.objects.filter(search__tsmatch=tsquery_literal(tokens)).values_list("run_id", flat=True))


@pytest.mark.django_db(transaction=True)  # the sweep tick closes its connection, as a worker's does
def test_a_step_is_found_at_once_then_indexed_by_a_sweep_tick(auth_client, make_run):
    run = _run_with(make_run, "The harbour timetable lists a ferry at noon")
    other = _run_with(make_run, "the museum opens at nine")
    # Written without its search document: the writer left it to the indexer ...
    assert set(Step.objects.filter(search__isnull=True).values_list("run_id", flat=True)) == {run.pk, other.pk}
    # ... and the search finds it right away through the raw-text fallback,
    # every word in one step, the first hit shown.
    assert _indexed_match(["ferry"]) == set()
    response = auth_client.get(reverse("runs:list"), {"q": "ferry timetable"})
    assert _ids(response) == [run.pk]
    assert response.context["runs"][0].hit.hit == "timetable"
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "ferry museum"})) == []

    Sweeper(send=lambda run_id, task_id: None).sweep_once()

    assert not Step.objects.filter(search__isnull=True).exists()
    assert _indexed_match(["ferry", "timetable"]) == {run.pk}
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "ferry timetable"})) == [run.pk]


def test_a_second_indexer_skips_while_one_indexes(make_run):
    _run_with(make_run, "an old harbour timetable")
    s = connection.settings_dict
    with psycopg.connect(dbname=s["NAME"], user=s["USER"], host=s["HOST"], port=s["PORT"],
                         password=s["PASSWORD"] or None, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [STEP_INDEX_LOCK_KEY])
        assert index_pending_steps() is None
        other.execute("SELECT pg_advisory_unlock(%s)", [STEP_INDEX_LOCK_KEY])
    assert index_pending_steps() == 1


def test_a_tick_indexes_a_bounded_number_of_batches_oldest_first(make_run):
    run = _run_with(make_run, *[f"step number {i}" for i in range(5)])
    assert index_pending_steps(batches=2, batch=2) == 4
    assert list(Step.objects.filter(run=run, search__isnull=True).values_list("index", flat=True)) == [4]
    assert index_pending_steps(batches=2, batch=2) == 1


def test_the_fallback_reads_tool_arguments_and_full_width_text(auth_client, make_run):
    run = _run_with(make_run, "ＡＮＮＵＡＬ figures", tool="lookup_weather", args={"city": "Reykjavik"})
    for q in ("reykjavik", "lookup weather", "annual"):
        assert _ids(auth_client.get(reverse("runs:list"), {"q": q})) == [run.pk], q
    index_pending_steps()
    for q in ("reykjavik", "lookup weather", "annual"):
        assert _ids(auth_client.get(reverse("runs:list"), {"q": q})) == [run.pk], q


@override_settings(STEP_SEARCH_INLINE=True)
def test_inline_writes_index_the_step_with_it(make_run):
    run = _run_with(make_run, "an old harbour timetable")
    assert _indexed_match(["harbour"]) == {run.pk}


def test_indexsteps_fills_steps_written_before_the_column(auth_client, make_run):
    run = _run_with(make_run, "an old harbour timetable")
    call_command("indexsteps", stdout=__import__("io").StringIO())
    assert not Step.objects.filter(search__isnull=True).exists()
    assert _indexed_match(["harbour"]) == {run.pk}
    assert _ids(auth_client.get(reverse("runs:list"), {"q": "harbour"})) == [run.pk]


def test_beat_indexes_steps_too(make_run, settings):
    # One more indexer beside the workers' sweepers, on the control queue every sweep interval.
    from agentlab.celery import app
    from tracing.store.tasks import index_steps

    entry = settings.CELERY_BEAT_SCHEDULE["index-steps"]
    assert entry["task"] == index_steps.name and entry["task"] in app.tasks
    assert entry["options"]["queue"] == settings.RUN_CONTROL_QUEUE
    assert entry["schedule"] == settings.RECONCILE_INTERVAL_S
    run = _run_with(make_run, "a lantern by the harbour")
    assert index_steps.apply().get() == 1
    assert _indexed_match(["lantern"]) == {run.pk}
