"""The search document of a step and the query that finds it (pure)."""

from __future__ import annotations

import pytest

from tests.eval_data import eval_runs
from tracing.core.normalize import search_token_set, search_tokens
from tracing.core.steps import read_jsonl
from tracing.core.stepsearch import (
    MAX_INDEXED_TOKENS,
    MAX_QUERY_TOKENS,
    query_tokens,
    snippet,
    step_document,
    tsquery_literal,
)


def test_the_document_holds_text_tool_and_argument_words_once_each():
    doc = step_document("Search the Annual Report, the report!", "web_search", {"query": "Lantern Salt 2023"})
    # JSON keys too: a key names what the value is ("query", "city").
    assert doc.split() == ["search", "annual", "report", "web", "query", "lantern", "salt", "2023"]


def test_chinese_is_indexed_as_character_bigrams():
    assert step_document("北京人口").split() == ["北京", "京人", "人口"]
    # A query in Chinese asks for every bigram of it.
    assert query_tokens("北京人口") == ["北京", "京人", "人口"]


def test_full_width_letters_search_as_their_plain_selves():
    assert step_document("ＡＢＣ ２０２３") == "abc 2023"


def test_quotes_and_markup_never_reach_the_tsvector_literal():
    doc = step_document("<script>alert('x')</script> O'Brien \\ : * & |", None, {"a": "\"q\""})
    assert not set(doc) & set("'\\:*&|<>\"")


def test_a_huge_observation_is_capped_in_distinct_tokens():
    text = " ".join(f"w{i}" for i in range(MAX_INDEXED_TOKENS + 500))
    assert len(step_document(text).split()) == MAX_INDEXED_TOKENS
    assert len(step_document(" ".join(f"w{i}" for i in range(MAX_INDEXED_TOKENS))).split()) == MAX_INDEXED_TOKENS


def test_the_query_is_an_and_of_at_most_a_few_tokens():
    words = " ".join(f"word{i}" for i in range(MAX_QUERY_TOKENS + 3))
    assert len(query_tokens(words)) == MAX_QUERY_TOKENS
    assert tsquery_literal(["timeout", "report"]) == "'timeout' & 'report'"


def test_punctuation_and_stop_words_give_no_query():
    assert query_tokens("the ... !!") == []


def test_the_snippet_is_cut_around_the_first_hit_and_keeps_the_case():
    text = "x" * 200 + " the Annual REPORT says 3.2bn " + "y" * 200
    before, hit, after = snippet(text, ["report"])
    assert hit == "REPORT"
    assert before.startswith("…") and before.endswith("Annual ")
    assert after.startswith(" says") and after.endswith("…")


def test_no_snippet_when_the_word_is_not_literally_there():
    assert snippet("ＲＥＰＯＲＴ", ["report"]) is None
    assert snippet("", ["report"]) is None


@pytest.mark.parametrize("text", [
    "The annual report, the Annual REPORT and the report again: 3.2bn in 2023.",
    "北京的人口是多少？北京人口约两千万。Beijing population 21.9m; 北京 again.",
    "ＡＢＣ full-width ２０２３ and snake_case_words, don't stop; the of and.",
    "İstanbul straße ǅemal Ωmega — mixed scripts 東京タワー 서울",
    # CJK only after NFKC (Kangxi radicals, parenthesised ideographs): the
    # no-CJK shortcut must look at the normalised text.
    "⼀⼆ ㈠㈡ plain words",
    "x" * 100 + " " + "Y" * 70 + " the of and",
    "",
])
def test_the_index_tokens_are_the_search_tokens_once_each(text):
    assert search_token_set(text) == list(dict.fromkeys(search_tokens(text)))


def test_the_index_tokens_match_the_search_tokens_on_real_trajectories():
    texts = [s.text for t in read_jsonl(eval_runs("react_exemplars")) for s in t.steps if s.text]
    assert len(texts) > 100
    for text in texts:
        assert search_token_set(text) == list(dict.fromkeys(search_tokens(text)))
