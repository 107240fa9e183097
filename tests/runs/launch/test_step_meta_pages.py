"""A step's meta is data from agents, imports and OTLP: any JSON object must
render, on every page that shows steps (issue 13, item 8)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.reviews.models import ReviewItem
from tracing.store.models import Step

pytestmark = pytest.mark.django_db

# What Postgres jsonb stores: no NaN/Infinity, no NUL, no lone surrogates
# (the ingestion paths refuse those with a 400, tested there).
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=10,
)
# The keys the pages read, with values of any type, plus keys nobody reads.
KNOWN = ["truncated", "chars", "raw_chars", "status", "class", "trust", "fault", "anchor_score", "signals",
         "course", "detector", "tier", "evidence", "model", "tool_call_id", "content_captured", "findings"]
metas = st.dictionaries(st.sampled_from(KNOWN) | text, json_values, max_size=6)


def _pages(run, other) -> list[str]:
    ReviewItem.objects.get_or_create(run=run, step_index=1, defaults={"detector": "repetition", "tier": "hint"})
    return [
        reverse("reviews:item", args=[run.pk, 1]),
        reverse("runs:detail", args=[run.pk]),
        reverse("runs:steps", args=[run.pk]) + "?after=-1",
        reverse("compare:diff") + f"?a={run.pk}&b={other.pk}",
        reverse("compare:page") + f"?runs={run.pk},{other.pk}",
    ]


def test_truncated_without_chars_renders_everywhere(auth_client, make_run):
    run, other = make_run(steps=6), make_run(steps=3)
    Step.objects.filter(run=run, kind="observation").update(meta={"truncated": True})
    for url in _pages(run, other):
        assert auth_client.get(url).status_code == 200, url


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=metas, kind=st.sampled_from(["thought", "action", "observation", "intervention", "final", "error"]))
def test_any_meta_on_any_step_renders(auth_client, make_run, meta, kind):
    run, other = make_run(steps=3), make_run(steps=3)
    Step.objects.filter(run=run, index=1).update(meta=meta, kind=kind)
    for url in _pages(run, other):
        assert auth_client.get(url).status_code == 200, (url, meta)
