from __future__ import annotations

import pytest
from django.urls import reverse

from runs.core.models import RerunGroup, Run, Task
from tests.projects import team
from tracing.core.alignment import MAX_RUNS
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

pytestmark = pytest.mark.django_db
PAGE = reverse("compare:page")
HX = {"HX-Request": "true"}


def _page(ids) -> str:
    return f"{PAGE}?runs={','.join(str(i) for i in ids)}"


def _trail(run: Run, actions: list[tuple[str, str]], answer: str | None = "Fredville") -> Run:
    """Thought / action / observation per (tool, query), then a final answer."""
    i = 0
    for tool, query in actions:
        for kind in ("thought", "action", "observation"):
            record_step(run.pk, StepRecord(
                index=i, kind=kind, text=f"{kind} about {query}", tool=tool if kind != "thought" else None,
                args={"query": query} if kind == "action" else None,
                meta={"status": "ok"} if kind == "observation" else {}, prompt_tokens=10, completion_tokens=2,
            ))
            i += 1
    if answer is not None:
        record_step(run.pk, StepRecord(index=i, kind="final", text=answer, args={"answer": answer}))
    run.refresh_from_db()
    return run


@pytest.fixture
def split_runs(make_run):
    """Three runs that agree on the first search and split on the second."""
    a = _trail(make_run(success=True), [("search", "Freedonia capital"), ("search", "Fredville population")])
    b = _trail(make_run(success=True), [("search", "Freedonia capital"), ("search", "Fredville population")])
    c = _trail(make_run(success=False), [("search", "Freedonia capital"), ("lookup", "Sylvania border treaty")],
               answer="Sylvania")
    return a, b, c


# -- access ---------------------------------------------------------------------


def test_every_compare_url_requires_login(client, split_runs):
    a, b, _ = split_runs
    group = RerunGroup.objects.create(project=team(), name="g")
    for url in (_page([a.pk, b.pk]), reverse("compare:group", args=[group.pk]),
                f"{reverse('compare:cell')}?run={a.pk}&from=0&to=2", f"{reverse('compare:diff')}?a={a.pk}&b={b.pk}"):
        for headers in ({}, HX):
            response = client.get(url, headers=headers)
            assert response.status_code == 302, url
            assert "/accounts/login/" in response["Location"]
    response = client.post(reverse("compare:save"), {"runs": f"{a.pk},{b.pk}"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not RerunGroup.objects.exclude(pk=group.pk).exists()


def test_a_user_of_another_project_cannot_compare_the_runs(client, other_user, split_runs):
    # Runs of another project look missing (runs.core.access); the message names no run's content.
    client.force_login(other_user)
    response = client.get(_page([r.pk for r in split_runs]))
    assert response.status_code == 400 and split_runs[0].prompt not in response.content.decode()


# -- the page -------------------------------------------------------------------


def test_the_grid_has_one_column_per_run_with_its_header(auth_client, split_runs):
    a, b, c = split_runs
    Run.objects.filter(pk=c.pk).update(intervention_count=2, intervention_tiers=["hint"], first_anchor_break=4)
    response = auth_client.get(_page([a.pk, b.pk, c.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" in body
    assert [col.run.pk for col in response.context["columns"]] == [a.pk, b.pk, c.pk]
    for run in (a, b, c):
        assert f'href="/runs/{run.pk}/" class="ch-id">#{run.pk}</a>' in body
    assert "✓ correct" in body and "✗ wrong" in body
    assert f"{a.step_count} steps" in body and f"{a.total_tokens} tok" in body
    assert "2 interv." in body and "tier-hint" in body
    assert f'href="/runs/{c.pk}/#step-4"' in body and "anchor break #4" in body
    # Same action lines up on one row: the first search is row 1 in every column.
    first_row = response.context["rows"][0]
    assert [cell.label for cell in first_row.cells] == ["search[query=Freedonia capital]"] * 3


def test_the_first_divergence_is_marked_with_who_went_which_way(auth_client, split_runs):
    a, b, c = split_runs
    response = auth_client.get(_page([a.pk, b.pk, c.pk]))
    body = response.content.decode()
    assert response.context["first_divergence"] == 2
    branches = response.context["branches"]
    assert [(br.label, br.runs) for br in branches] == [
        ("search[query=Fredville population]", [a.pk, b.pk]),
        ("lookup[query=Sylvania border treaty]", [c.pk]),
    ]
    assert 'id="row-2" class="first-div"' in body
    assert "⋔ First divergence at" in body and f"#{a.pk}, #{b.pk}" in body
    assert "≠" in body  # the minority cell carries a text mark, not only a colour
    rows = response.context["rows"]
    assert [cell.minority for cell in rows[1].cells] == [False, False, True]


def test_pass_at_k_and_pass_hat_k_are_shown_for_every_k(auth_client, split_runs):
    response = auth_client.get(_page([r.pk for r in split_runs]))
    body = response.content.decode()
    # n = 3, c = 2: pass@1 = pass^1 = 2/3; pass@2 = 1 - C(1,2)/C(3,2) = 1; pass^2 = C(2,2)/C(3,2) = 1/3;
    # pass@3 = 1, pass^3 = 0.
    rows = [(k, round(at, 4), round(hat, 4)) for k, at, hat, _ in response.context["pass_rows"]]
    assert rows == [(1, 0.6667, 0.6667), (2, 1.0, 0.3333), (3, 1.0, 0.0)]
    assert "pass@k" in body and "pass^k" in body
    assert "<td class=\"num\">0.67</td>" in body and "<td class=\"num\">0.33</td>" in body
    overall = response.context["overall"]
    assert overall.success_rate == pytest.approx(2 / 3)
    assert "mean steps" in body and "P95 steps" in body


def test_charts_are_plotly_json_and_plotly_is_served_locally(auth_client, split_runs):
    body = auth_client.get(_page([r.pk for r in split_runs])).content.decode()
    assert '<link rel="preload" href="/static/plotly/plotly.min.js" as="script" data-plotly>' in body
    assert "cdn" not in body.lower()
    for chart in ("chart-steps", "chart-tokens", "chart-pass", "chart-divergence"):
        assert f'data-chart="{chart}"' in body
        assert f'<script id="{chart}" type="application/json">' in body
    assert "/static/compare.js" in body


def test_a_cell_links_to_its_steps_with_htmx(auth_client, split_runs):
    a, b, c = split_runs
    body = auth_client.get(_page([a.pk, b.pk, c.pk])).content.decode()
    # compare.js sends it with htmx.ajax; the href is the no-JS fallback.
    assert (f'<a href="/runs/{c.pk}/#step-3" data-cell="/compare/cell/?run={c.pk}&amp;from=3&amp;to=5&amp;cols=4&amp;row=2"'
            f' data-x="2-{c.pk}"') in body


def test_step_text_and_args_are_escaped_in_the_grid(auth_client, make_run):
    evil = _trail(make_run(), [("search", "<script>alert(1)</script>")])
    other = _trail(make_run(), [("search", "fine")])
    body = auth_client.get(_page([evil.pk, other.pk])).content.decode()
    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_with_hx_request_only_the_body_comes_back_and_polling_stops_when_done(auth_client, split_runs):
    response = auth_client.get(_page([r.pk for r in split_runs]), headers=HX)
    body = response.content.decode()
    assert response.status_code == 286  # HttpResponseStopPolling: nothing is live
    assert "<html" not in body and body.lstrip().startswith('<div id="compare-body"')
    assert "hx-trigger" not in body.split(">", 1)[0]


def test_a_group_with_live_runs_polls_every_2s_until_all_are_done(auth_client, make_run):
    group = RerunGroup.objects.create(project=team(), name="reruns")
    done = _trail(make_run(group=group, success=True), [("search", "Freedonia capital")])
    live = _trail(make_run(group=group, status=Run.Status.RUNNING), [("search", "Freedonia capital")], answer=None)
    url = reverse("compare:group", args=[group.pk])
    response = auth_client.get(url)
    body = response.content.decode()
    assert response.status_code == 200
    assert f'hx-get="{url}" hx-trigger="every 2s"' in body
    assert "1 run still in progress" in body
    # The live run has no outcome yet: pass@k counts the finished run only.
    assert response.context["overall"].scored == 1
    assert [col.run.pk for col in response.context["columns"]] == [done.pk, live.pk]

    polled = auth_client.get(url, headers=HX)
    assert polled.status_code == 200 and 'hx-trigger="every 2s"' in polled.content.decode()

    Run.objects.filter(pk=live.pk).update(status=Run.Status.FINISHED, success=True)
    final = auth_client.get(url, headers=HX)
    assert final.status_code == 286
    assert "hx-trigger" not in final.content.decode()


def test_runs_of_different_tasks_are_compared_with_a_clear_banner(auth_client, make_run):
    other_task = Task.objects.create(slug="other-task", title="Other", prompt="Who?", gold_answer="x")
    a = _trail(make_run(success=True), [("search", "Freedonia capital")])
    b = _trail(make_run(task=other_task, prompt=other_task.prompt, success=False), [("search", "who")])
    response = auth_client.get(_page([a.pk, b.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "Different tasks." in body and "<code>capital-demo</code>" in body and "<code>other-task</code>" in body
    assert 'role="alert"' in body
    # pass@1 averages the tasks' own values: (1 + 0) / 2.
    assert response.context["pass_rows"][0][1] == pytest.approx(0.5)


def test_one_run_is_shown_with_a_note(auth_client, split_runs):
    a = split_runs[0]
    response = auth_client.get(_page([a.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert "Only one run selected" in body
    assert response.context["first_divergence"] is None
    assert len(response.context["columns"]) == 1


def test_runs_with_zero_steps_get_an_empty_column(auth_client, make_run, split_runs):
    a = split_runs[0]
    empty = make_run(steps=0)
    response = auth_client.get(_page([a.pk, empty.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    assert f"No steps recorded by run #{empty.pk}" in body
    assert "(no steps)" in body
    assert all(row.cells[1].kind == "ended" for row in response.context["rows"])

    both_empty = auth_client.get(_page([empty.pk, make_run(steps=0).pk]))
    assert both_empty.status_code == 200
    assert "None of these runs recorded any steps." in both_empty.content.decode()


def test_an_empty_group_says_so(auth_client):
    group = RerunGroup.objects.create(project=team(), name="nothing yet")
    response = auth_client.get(reverse("compare:group", args=[group.pk]))
    assert response.status_code == 200
    assert "This group has no runs yet." in response.content.decode()


def test_unknown_group_is_404(auth_client):
    assert auth_client.get(reverse("compare:group", args=[999999])).status_code == 404


# -- bad selections --------------------------------------------------------------


@pytest.mark.parametrize("query, message", [
    ("", "No runs selected"),
    ("?runs=", "No runs selected"),
    ("?runs=1,abc", "&#x27;abc&#x27; is not a run id"),
    ("?runs=-3", "&#x27;-3&#x27; is not a run id"),
    ("?runs=999999,999998", "No such run: 999999, 999998"),
])
def test_bad_selections_are_400_with_a_message(auth_client, query, message):
    for headers in ({}, HX):
        response = auth_client.get(PAGE + query, headers=headers)
        assert response.status_code == 400
        assert message in response.content.decode()


def test_a_known_and_an_unknown_id_is_400_naming_the_unknown(auth_client, split_runs):
    response = auth_client.get(_page([split_runs[0].pk, 999999]))
    assert response.status_code == 400
    assert "No such run: 999999" in response.content.decode()


def test_more_than_the_limit_is_400_with_a_clear_message(auth_client, split_runs, django_assert_num_queries):
    ids = list(range(1, MAX_RUNS + 2))
    # Refused before touching the runs: 1 session, 2 user, 3 memberships of the user (the header).
    with django_assert_num_queries(3):
        response = auth_client.get(_page(ids))
    assert response.status_code == 400
    body = response.content.decode()
    assert f"At most {MAX_RUNS} runs can be compared at once; this selection has {MAX_RUNS + 1}" in body
    assert "plotly" not in body  # only pages with charts load it


def test_exactly_the_limit_is_accepted(auth_client, make_run):
    runs = [make_run(steps=0) for _ in range(MAX_RUNS)]
    assert auth_client.get(_page([r.pk for r in runs])).status_code == 200


def test_a_group_over_the_limit_is_400(auth_client, make_run):
    group = RerunGroup.objects.create(project=team(), name="big")
    for _ in range(MAX_RUNS + 1):
        make_run(group=group)
    response = auth_client.get(reverse("compare:group", args=[group.pk]))
    assert response.status_code == 400
    assert f"more than {MAX_RUNS} runs" in response.content.decode()


def test_repeated_runs_params_and_duplicates_are_one_selection(auth_client, split_runs):
    a, b, c = split_runs
    response = auth_client.get(f"{PAGE}?runs={a.pk}&runs={b.pk},{c.pk}&runs={a.pk}")
    assert response.status_code == 200
    assert [col.run.pk for col in response.context["columns"]] == [a.pk, b.pk, c.pk]


# -- query count -----------------------------------------------------------------


@pytest.mark.parametrize("n_runs", [2, 20])
def test_the_page_runs_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries, n_runs):
    runs = [make_run(steps=12) for _ in range(n_runs)]
    # 1 session, 2 user, 3 memberships of the user, 4 the selected runs (task and policy joined),
    # 5 every selected run's steps at once
    with django_assert_num_queries(5):
        response = auth_client.get(_page([r.pk for r in runs]))
    assert response.status_code == 200
    assert len(response.context["columns"]) == n_runs


def test_the_group_page_runs_a_constant_number_of_queries(auth_client, make_run, django_assert_num_queries):
    group = RerunGroup.objects.create(project=team(), name="g")
    for _ in range(8):
        make_run(steps=9, group=group)
    # 1 session, 2 user, 3 memberships of the user, 4 group, 5 its runs (task and policy joined),
    # 6 every run's steps at once
    with django_assert_num_queries(6):
        response = auth_client.get(reverse("compare:group", args=[group.pk]))
    assert response.status_code == 200


# -- group by setting ------------------------------------------------------------


def test_runs_under_different_models_are_grouped_by_setting(auth_client, make_run):
    a = _trail(make_run(model_name="gpt-x", provider=Run.Provider.OPENAI, success=True), [("search", "capital")])
    b = _trail(make_run(success=False), [("search", "capital")])
    c = _trail(make_run(model_name="gpt-x", provider=Run.Provider.OPENAI, success=True), [("search", "capital")])
    plain = auth_client.get(_page([a.pk, b.pk, c.pk])).content.decode()
    assert "These runs differ in" in plain and "by=model" in plain

    response = auth_client.get(_page([a.pk, b.pk, c.pk]) + "&by=model")
    body = response.content.decode()
    assert response.status_code == 200
    # Columns of one setting sit together, in selection order within it.
    assert [col.run.pk for col in response.context["columns"]] == [a.pk, c.pk, b.pk]
    settings = {s.name: s for s in response.context["settings"]}
    assert settings["gpt-x"].runs == 2 and settings["gpt-x"].success_rate == 1.0
    assert settings["sim (simulated)"].success_rate == 0.0
    assert '<th colspan="2" scope="colgroup">model: gpt-x</th>' in body


def test_an_unknown_group_by_is_ignored(auth_client, split_runs):
    response = auth_client.get(_page([r.pk for r in split_runs]) + "&by=colour")
    assert response.status_code == 200 and response.context["by"] == ""


# -- cell expansion --------------------------------------------------------------


def test_a_cell_expands_to_its_steps_with_htmx(auth_client, split_runs):
    c = split_runs[2]
    url = f"{reverse('compare:cell')}?run={c.pk}&from=3&to=5&cols=4&row=2"
    response = auth_client.get(url, headers=HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert body.startswith('<tr class="cmp-expand" data-x-open="2-' + str(c.pk) + '"><td colspan="4">')
    # The run page's step row is reused.
    assert 'id="step-3"' in body and 'id="step-5"' in body and 'id="step-6"' not in body
    assert "tag-action" in body and "Sylvania border treaty" in body


def test_a_cell_without_htmx_goes_to_the_step_in_the_run(auth_client, split_runs):
    c = split_runs[2]
    response = auth_client.get(f"{reverse('compare:cell')}?run={c.pk}&from=3&to=5")
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{c.pk}/#step-3"


def test_a_cell_with_bad_params_is_400_and_unknown_run_404(auth_client, split_runs):
    cell = reverse("compare:cell")
    assert auth_client.get(f"{cell}?run=x&from=0&to=1", headers=HX).status_code == 400
    assert auth_client.get(f"{cell}?run={split_runs[0].pk}&from=0", headers=HX).status_code == 400
    assert auth_client.get(f"{cell}?run=999999&from=0&to=1", headers=HX).status_code == 404


# -- two-run diff ----------------------------------------------------------------


def test_the_two_run_diff_aligns_and_marks_the_split(auth_client, split_runs, django_assert_num_queries):
    a, _, c = split_runs
    url = f"{reverse('compare:diff')}?a={a.pk}&b={c.pk}"
    # 1 session, 2 user, 3 memberships of the user, 4 both runs (task and policy joined),
    # 5 both runs' steps at once
    with django_assert_num_queries(5):
        response = auth_client.get(url)
    body = response.content.decode()
    assert response.status_code == 200
    assert [row.relation for row in response.context["rows"]] == ["same", "different", "changed"]
    assert response.context["first_divergence"] == 2
    assert "⋔ First divergence at" in body and "different action" in body
    assert 'id="step-4"' in body  # full steps, through the shared step row
    assert f"?runs={a.pk},{c.pk}" in body


def test_every_column_header_links_a_diff_against_the_first_column(auth_client, split_runs):
    a, b, c = split_runs
    body = auth_client.get(_page([a.pk, b.pk, c.pk])).content.decode()
    assert f'href="/compare/diff/?a={a.pk}&amp;b={b.pk}"' in body
    assert f'href="/compare/diff/?a={a.pk}&amp;b={c.pk}"' in body
    assert 'action="/compare/diff/"' in body  # and a form for any two columns


def test_diff_bad_input(auth_client, split_runs):
    a = split_runs[0]
    diff = reverse("compare:diff")
    assert auth_client.get(f"{diff}?a={a.pk}&b={a.pk}").status_code == 400
    assert auth_client.get(f"{diff}?a={a.pk}&b=999999").status_code == 400
    assert auth_client.get(f"{diff}?a={a.pk}&b=zz").status_code == 400
    assert auth_client.get(f"{diff}?a={a.pk}").status_code == 400


# -- saving a selection ----------------------------------------------------------


def test_a_selection_is_saved_as_a_rerun_group(auth_client, user, split_runs):
    a, b, c = split_runs
    response = auth_client.post(reverse("compare:save"), {"runs": f"{a.pk},{c.pk}", "name": "capital split"})
    group = RerunGroup.objects.get(name="capital split")
    assert response.status_code == 302
    assert response["Location"] == reverse("compare:group", args=[group.pk])
    assert group.owner == user
    assert set(group.runs.values_list("pk", flat=True)) == {a.pk, c.pk}
    page = auth_client.get(response["Location"])
    assert [col.run.pk for col in page.context["columns"]] == [a.pk, c.pk]


def test_save_needs_post_and_a_valid_selection(auth_client):
    assert auth_client.get(reverse("compare:save")).status_code == 405
    response = auth_client.post(reverse("compare:save"), {"runs": "1,x"})
    assert response.status_code == 400
    assert not RerunGroup.objects.exists()


# -- entry points ----------------------------------------------------------------


def test_the_run_list_has_compare_checkboxes(auth_client, make_run):
    run = make_run()
    body = auth_client.get(reverse("runs:list")).content.decode()
    assert 'id="compare-form"' in body and 'action="/compare/"' in body
    assert f'name="runs" value="{run.pk}" form="compare-form"' in body


def test_the_run_page_links_its_group_comparison(auth_client, make_run):
    group = RerunGroup.objects.create(project=team(), name="g")
    grouped, alone = make_run(group=group), make_run()
    body = auth_client.get(reverse("runs:detail", args=[grouped.pk])).content.decode()
    assert f'href="/compare/group/{group.pk}/">Compare reruns</a>' in body
    assert "Compare reruns" not in auth_client.get(reverse("runs:detail", args=[alone.pk])).content.decode()


def test_a_bad_cell_parameter_is_echoed_as_plain_text_not_html(auth_client):
    payload = "<img src=x onerror=alert(1)>"
    response = auth_client.get(reverse("compare:cell"), {"run": payload, "from": "0", "to": "1"},
                               HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")


def test_runs_are_grouped_by_their_tags(auth_client, make_run):
    a = _trail(make_run(tags=["exp-b"], success=True), [("search", "capital")])
    b = _trail(make_run(tags=["exp-a", "<i>x</i>"], success=False), [("search", "capital")])
    c = _trail(make_run(tags=["exp-b"], success=True), [("search", "capital")])
    plain = auth_client.get(_page([a.pk, b.pk, c.pk])).content.decode()
    assert "by=tags" in plain
    response = auth_client.get(_page([a.pk, b.pk, c.pk]) + "&by=tags")
    assert [col.run.pk for col in response.context["columns"]] == [a.pk, c.pk, b.pk]
    settings = {s.name: s for s in response.context["settings"]}
    assert settings["exp-b"].success_rate == 1.0 and settings["<i>x</i>, exp-a"].success_rate == 0.0
    body = response.content.decode()
    assert "&lt;i&gt;x&lt;/i&gt;, exp-a" in body and "<i>x</i>" not in body
