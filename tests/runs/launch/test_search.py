from __future__ import annotations

import pytest

from runs.agent.tools import SearchTool
from runs.core.models import Document
from runs.launch.agent_corpus import PostgresSearch

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(db):
    Document.objects.create(slug="orchid-novel", title="The Glass Orchid", body="The Glass Orchid is a novel by Tomas Verel.")
    Document.objects.create(slug="verel", title="Tomas Verel", body="Tomas Verel was born in Lindqvist and grew up in Marrow.")
    Document.objects.create(slug="hangzhou", title="杭州", body="杭州是浙江省的省会，以西湖闻名。", lang="zh")
    Document.objects.create(slug="haiyan", title="海盐县", body="海盐县位于浙江省北部，是作家余华成长的地方。", lang="zh")
    Document.objects.create(slug="timeout", title="Flaky timetable", body="Train 12 leaves at 9:40.", flags={"fault": "timeout_once"})


def test_english_ranks_the_best_match_first(corpus):
    docs = PostgresSearch().search("Where was Tomas Verel born?", 3)
    assert docs[0].slug == "verel"


def test_chinese_is_segmented_into_bigrams(corpus):
    docs = PostgresSearch().search("浙江省的省会", 3)
    assert docs[0].slug == "hangzhou"
    assert {d.slug for d in docs} >= {"hangzhou", "haiyan"}
    assert PostgresSearch().search("余华成长", 3)[0].slug == "haiyan"


def test_no_match_and_empty_query_give_nothing(corpus):
    assert PostgresSearch().search("zeppelin quantum", 3) == []
    assert PostgresSearch().search("", 3) == []
    assert PostgresSearch().search("?!&|:*'", 3) == []


def test_the_search_tool_over_postgres_reports_empty_and_timeout(corpus):
    tool = SearchTool(PostgresSearch())
    assert tool({"query": "zeppelin"}).status == "empty"
    first = tool({"query": "flaky timetable train"})
    assert first.status == "timeout"
    second = tool({"query": "flaky timetable train"})
    assert second.status == "ok"
    assert "(doc:timeout)" in second.text


def test_documents_added_later_are_searchable(corpus):
    Document.objects.create(slug="new", title="Zeppelin facts", body="Zeppelins are rigid airships.")
    assert PostgresSearch().search("zeppelin", 3)[0].slug == "new"


def test_a_query_sharing_one_common_word_is_empty(corpus):
    # Both sides of MIN_QUERY_COVERAGE: 1 of 3 tokens is not a hit, 2 of 3 is.
    assert PostgresSearch().search("Tolbey Quary timetable", 3) == []
    assert PostgresSearch().search("flaky timetable quary", 3)[0].slug == "timeout"
