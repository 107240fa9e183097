from __future__ import annotations

import pytest

from runs.agent import tools as T
from runs.agent.tools import (
    CalculateTool,
    CorpusSearch,
    Document,
    FinishTool,
    LookupTool,
    SearchTool,
    ToolRegistry,
    calculate,
    default_tools,
)
from tracing.core.normalize import search_tokens

DOCS = [
    Document("salt", "The Salt Lantern", "The Salt Lantern is a novel written by Orren Vasquel. It won a prize."),
    Document(
        "orren", "Orren Vasquel", "Orren Vasquel grew up in Mirefield. He was born in Calder Bay. He wrote novels."
    ),
    Document("huayue", "华岳电子年度报告", "本公司2023年归属于母公司股东的净利润为4.9亿元。", "zh"),
    Document("flaky-port", "Port statistics", "The port handled 3.8 million tonnes."),
    Document("junk", "Junk page", "<script>alert('x')</script> cargo"),
]


# --- calculate ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 * 12.40 + 6.20", "31"),
        ("2 * (2 * 8.75 - 15.00)", "5"),
        ("-3 + 10 // 3", "0"),
        ("7 % 4", "3"),
        ("(11 * 60 + 50) - (09 * 60 + 15)", "155"),  # leading zeros from times
        ("1,204 - 4", "1200"),
        ("2 ** 10", "1024"),
        ("1 / 3", "0.3333333333"),
        ("3 × 4 ÷ 2", "6"),
    ],
)
def test_calculate_arithmetic(expression, expected):
    assert calculate(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "x + 1",
        "abs(-1)",
        "[1, 2]",
        "'a' * 3",
        "1 if 1 else 2",
        "True + 1",
        "1 / 0",
        "",
    ],
)
def test_calculate_rejects_non_arithmetic(expression):
    result = CalculateTool()({"expression": expression})
    assert result.status == "error"
    assert result.text


def test_calculate_exponent_limit_both_sides():
    assert calculate(f"2 ** {T.MAX_EXPONENT}") == str(2**T.MAX_EXPONENT)
    result = CalculateTool()({"expression": f"2 ** {T.MAX_EXPONENT + 1}"})
    assert result.status == "error" and "exponent" in result.text
    assert CalculateTool()({"expression": "9 ** 9 ** 9"}).status == "error"


def test_calculate_result_size_limit_both_sides():
    assert CalculateTool()({"expression": f"10 ** {T.MAX_RESULT_DIGITS - 1}"}).status == "ok"  # 100 digits
    assert CalculateTool()({"expression": f"10 ** {T.MAX_RESULT_DIGITS}"}).status == "error"
    assert CalculateTool()({"expression": "1e99 * 10"}).status == "error"


def test_calculate_length_limit_both_sides():
    ok = "+".join(["1"] * (T.MAX_EXPRESSION_CHARS // 2))
    assert len(ok) <= T.MAX_EXPRESSION_CHARS
    assert CalculateTool()({"expression": ok}).status == "ok"
    too_long = ok + "+1+1"
    assert CalculateTool()({"expression": too_long}).status == "error"


# --- search ---------------------------------------------------------------------


def test_search_tokens_english_and_cjk_bigrams():
    # One tokeniser for both search backends and the sim (tracing.core.normalize).
    assert search_tokens("The Salt Lantern!") == ["salt", "lantern"]
    assert search_tokens("净利润") == ["净利", "利润"]
    assert search_tokens("ＦＹ２０２３ 营收") == ["fy2023", "营收"]  # full-width reads as plain
    assert search_tokens("lantern salt lantern") == ["lantern", "salt", "lantern"]  # counts kept for ranking


def test_corpus_search_ranks_and_handles_chinese():
    search = CorpusSearch(DOCS)
    assert [d.slug for d in search.search("Orren Vasquel", 5)][:2] == ["orren", "salt"]
    assert [d.slug for d in search.search("华岳电子 净利润", 5)] == ["huayue"]
    assert search.search("", 5) == []


def test_corpus_search_min_coverage_both_sides():
    search = CorpusSearch(DOCS)
    # 1 of 2 terms matched: coverage 0.5, kept; 1 of 3: dropped.
    assert [d.slug for d in search.search("Mirefield zzz", 5)] == ["orren"]
    assert search.search("Mirefield zzz yyy", 5) == []


def test_search_tool_formats_results():
    result = SearchTool(CorpusSearch(DOCS))({"query": "Salt Lantern"})
    assert result.status == "ok"
    assert result.text.startswith("[1] The Salt Lantern (doc:salt)\nThe Salt Lantern is a novel")
    assert result.meta["docs"][0] == "salt"


def test_search_tool_snippet_is_capped():
    long_doc = Document("long", "Long", "word " * 500)
    text = SearchTool(CorpusSearch([long_doc]))({"query": "word"}).text
    assert len(text.split("\n", 1)[1]) == T.SNIPPET_CHARS


def test_search_tool_empty_result():
    result = SearchTool(CorpusSearch(DOCS))({"query": "Zorblat"})
    assert result.status == "empty"
    assert result.text == "No results for 'Zorblat'."


def test_search_tool_times_out_once_on_flaky_document():
    tool = SearchTool(CorpusSearch(DOCS))
    first = tool({"query": "port tonnes"})
    assert first.status == "timeout"
    second = tool({"query": "port tonnes"})
    assert second.status == "ok" and "3.8 million" in second.text


def test_search_tool_times_out_on_fault_flag():
    doc = Document("quiet", "Quiet", "answer here", fault=T.FAULT_TIMEOUT_ONCE)
    tool = SearchTool(CorpusSearch([doc]))
    assert tool({"query": "answer"}).status == "timeout"
    assert tool({"query": "answer"}).status == "ok"


def test_search_tool_reports_backend_failure_as_error():
    class Broken:
        def search(self, query, k):
            raise RuntimeError("database is down")

    result = SearchTool(Broken())({"query": "x"})
    assert result.status == "error" and "database is down" in result.text


def test_search_keeps_html_as_plain_text():
    result = SearchTool(CorpusSearch(DOCS))({"query": "cargo"})
    assert "<script>alert('x')</script>" in result.text


# --- lookup, finish, registry ------------------------------------------------------


def test_lookup_finds_sentences_in_last_results():
    search = SearchTool(CorpusSearch(DOCS))
    lookup = LookupTool(search)
    assert lookup({"term": "born"}).status == "error"  # nothing searched yet
    search({"query": "Orren Vasquel"})
    result = lookup({"term": "born"})
    assert result.text == "(doc:orren) He was born in Calder Bay."
    assert lookup({"term": "zebra"}).status == "empty"


def test_lookup_sentence_cap_both_sides():
    body = " ".join(f"Fact {i} about tin." for i in range(T.LOOKUP_MAX_SENTENCES + 1))
    search = SearchTool(CorpusSearch([Document("tin", "Tin", body)]))
    search({"query": "tin"})
    text = LookupTool(search)({"term": "tin"}).text
    assert f"Fact {T.LOOKUP_MAX_SENTENCES - 1} " in text
    assert f"Fact {T.LOOKUP_MAX_SENTENCES} " not in text


def test_finish_returns_the_answer():
    assert FinishTool()({"answer": "Calder Bay"}).text == "Calder Bay"


def test_registry_schemas_and_text_descriptions():
    registry = default_tools(CorpusSearch(DOCS))
    assert registry.names == ["search", "lookup", "calculate", "finish"]
    schema = registry.openai_schemas()[0]
    assert schema["type"] == "function"
    assert schema["function"]["parameters"]["required"] == ["query"]
    assert "search[query]:" in registry.text_descriptions()
    assert registry.get("Search") is registry.get("search")
    assert registry.get("nope") is None


def test_tools_satisfy_the_protocol():
    registry = default_tools(CorpusSearch(DOCS))
    assert all(isinstance(registry.get(n), T.Tool) for n in registry.names)
    assert isinstance(ToolRegistry([CalculateTool()]).get("calculate"), CalculateTool)
