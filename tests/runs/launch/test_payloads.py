"""Readable payloads (issue 15 item 6): Markdown model text, folded JSON, every field inert."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from runs.core.step_payloads import FOLD_LINES, FOLD_SLACK, INLINE_ARGS_CHARS, args_html, json_payload, markdown_html
from tracing.core.steps import Step as StepRecord
from tracing.store.recorder import record_step

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pixel](http://evil.example/t.png)",
    "<svg onload=alert(1)>",
    "```html\n<script>alert(1)</script>\n```",
    "<iframe src=//evil>",
    '<div style="position:fixed">x</div>',
    "**unclosed *emph [link(",
    "| a | b\n|--\n| <b onmouseover=alert(1)>x</b> |",
    "<<script>script>alert(1)<</script>/script>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
]


# What an attack looks like once it is live markup (escaped, none of these survives).
RAW_ATTACKS = [r"<script", r"<img", r"<svg", r"<iframe", r"<b\s", r"<a\s[^>]*href=\"\s*(javascript|data):",
               r"<[a-z]+\s[^>]*\son\w+=", r"<[a-z]+\s[^>]*style="]


def _inert(html: str) -> None:
    for raw in RAW_ATTACKS:
        assert not re.search(raw, html, re.I), (raw, html)


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_of_hostile_text_is_inert(text):
    _inert(markdown_html(text))


def test_markdown_renders_emphasis_lists_code_and_safe_links():
    html = markdown_html("I will **search** for `birthplace`.\n\n- one\n- two\n\n[docs](https://example.org/a)")
    assert "<strong>search</strong>" in html and "<code>birthplace</code>" in html
    assert "<li>one</li>" in html
    assert '<a href="https://example.org/a" rel="noopener noreferrer">docs</a>' in html


def test_raw_html_is_shown_as_text_not_dropped():
    # A debugger shows what the model said: the tag is visible, escaped.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown_html("say <script>alert(1)</script>")


def test_plain_text_takes_the_fast_path_with_the_same_result():
    text = "First line\nsecond line\n\nNew paragraph, 42 dollars."
    import nh3

    from runs.core.step_payloads import _md, _plain_paragraphs

    assert _plain_paragraphs(text) == nh3.clean(_md.render(text)).strip()


def test_json_payloads_are_pretty_printed_and_folded_past_a_few_lines():
    small = json_payload({"q": "x"})
    assert small is not None and not small.folded
    big = json_payload(json.dumps({f"k{i}": i for i in range(20)}))
    assert big is not None and big.folded and big.lines > FOLD_LINES + FOLD_SLACK
    # Both sides of the threshold: one more line than the slack allows folds, the slack itself does not.
    assert not json_payload(list(range(FOLD_LINES + FOLD_SLACK - 2))).folded  # "[", n items, "]"
    assert json_payload(list(range(FOLD_LINES + FOLD_SLACK - 1))).folded
    assert json_payload("not json {") is None and json_payload("[") is None and json_payload("12") is None


def test_short_arguments_stay_inline_long_ones_become_a_copyable_block():
    assert args_html({"query": "q1"}) == ' <code class="args">{&quot;query&quot;: &quot;q1&quot;}</code>'
    long = {"query": "x" * INLINE_ARGS_CHARS, "filters": {"year": [2020, 2021], "lang": "en"}, "k": 5}
    html = args_html(long)
    assert 'class="payload' in html and 'class="copy"' in html and '<pre class="json">' in html


@pytest.mark.django_db
def test_run_page_keeps_every_field_inert(auth_client, make_run):
    """HTML and script in thought, final, args (short and long), JSON and plain observations, tool names."""
    run = make_run(steps=0)
    evil = " ".join(HOSTILE)
    steps = [
        StepRecord(index=0, kind="thought", text=evil),
        StepRecord(index=1, kind="action", text="search(...)", tool="<b onmouseover=alert(1)>search</b>",
                   args={"q": "<img src=x onerror=alert(1)>", "long": evil}),
        StepRecord(index=2, kind="observation", text=json.dumps({"html": evil, "rows": list(range(12))}), tool="search"),
        StepRecord(index=3, kind="observation", text=evil, tool="search", meta={"status": "ok"}),
        StepRecord(index=4, kind="final", text="**Answer:** Paris <script>alert(1)</script>"),
        StepRecord(index=5, kind="thought", text=evil),
    ]
    for s in steps:
        record_step(run.pk, s)
    body = auth_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    timeline = body.split('id="timeline"')[1]
    _inert(timeline)
    assert "<strong>Answer:</strong> Paris" in timeline
    assert timeline.count('class="copy"') >= 2  # the long arguments and the JSON result
    assert "show all" in timeline


@pytest.mark.django_db
def test_malformed_markdown_and_a_huge_text_still_render(auth_client, make_run):
    run = make_run(steps=0)
    record_step(run.pk, StepRecord(index=0, kind="thought", text="**" * 5000 + "[" * 3000 + "`" * 2001))
    record_step(run.pk, StepRecord(index=1, kind="thought", text="<p>" + "x" * 1_000_000))
    response = auth_client.get(reverse("runs:detail", args=[run.pk]))
    assert response.status_code == 200
    assert "<p>x" not in response.content.decode().replace("<p>&lt;p&gt;x", "")
