from __future__ import annotations

import json

from tracing.core.normalize import (
    MAX_ARG_CHARS,
    MAX_JSON_DEPTH,
    MAX_TOKEN_CHARS,
    action_key,
    jaccard,
    normalize_args,
)


def test_case_punctuation_and_stop_words():
    assert normalize_args("The Eiffel Tower!") == ("eiffel", "tower")
    assert normalize_args("eiffel, TOWER?") == ("eiffel", "tower")


def test_json_compared_by_value_not_spacing_or_key_order():
    a = normalize_args('{"query": "Eiffel Tower", "k": 3}')
    b = normalize_args({"k": 3, "query": "eiffel   tower"})
    c = normalize_args('{ "k":3,"query":"eiffel tower" }')
    assert set(a) == set(b) == set(c)


def test_json_list_and_nested():
    assert set(normalize_args([{"a": "x"}, ["zed", None, True]])) == {"x", "zed", "true"}


def test_invalid_json_string_is_plain_text():
    assert normalize_args("{broken json") == ("broken", "json")


def test_chinese_bigrams_split_at_particles():
    assert normalize_args("北京的人口") == ("北京", "人口")
    # mixed-language input keeps both scripts
    toks = normalize_args("population 北京人口 2020")
    assert "population" in toks and "北京" in toks and "京人" in toks and "2020" in toks


def test_single_cjk_char_kept_as_unigram():
    assert normalize_args("猫") == ("猫",)


def test_empty_and_none():
    assert normalize_args(None) == ()
    assert normalize_args("") == ()
    assert normalize_args("   ") == ()
    assert normalize_args({}) == ()
    assert normalize_args("the of and") == ()


def test_binary_looking_input_never_raises():
    assert normalize_args(b"\x00\xff\xfeabc") == ("abc",)
    assert normalize_args("\x00\x01\x02\ufffd") == ()
    normalize_args(object())  # odd object: stringified, no exception


def test_huge_input_is_capped():
    toks = normalize_args("word " * 20_000 + "tail")
    assert "tail" not in toks
    long_tok = normalize_args("x" * 100_000)
    assert len(long_tok) == 1 and len(long_tok[0]) == MAX_TOKEN_CHARS
    # just under the cap survives


def test_arg_cap_both_sides():
    under = "x " * ((MAX_ARG_CHARS - 10) // 2) + "last"
    over = "x " * (MAX_ARG_CHARS // 2) + "last"
    assert "last" in normalize_args(under)
    assert "last" not in normalize_args(over)


def test_token_cap_both_sides():
    assert normalize_args("y" * MAX_TOKEN_CHARS) == ("y" * MAX_TOKEN_CHARS,)
    assert normalize_args("y" * (MAX_TOKEN_CHARS + 1)) == ("y" * MAX_TOKEN_CHARS,)


def test_json_depth_both_sides():
    shallow: object = "deep"
    for _ in range(MAX_JSON_DEPTH):
        shallow = [shallow]
    assert normalize_args(shallow) == ("deep",)
    assert normalize_args([shallow]) == ()
    # very deep JSON string does not raise
    normalize_args(json.dumps(shallow).replace("[", "[" * 500).replace("]", "]" * 500))


def test_jaccard_edges():
    assert jaccard([], []) == 1.0
    assert jaccard(["a"], []) == 0.0
    assert jaccard([], ["a"]) == 0.0
    assert jaccard(["a", "b"], ["b", "c"]) == 1 / 3
    assert jaccard({"a"}, frozenset({"a"})) == 1.0


def test_action_key():
    assert action_key("Search", "Eiffel Tower") == ("search", frozenset({"eiffel", "tower"}))
    assert action_key(None, None) == ("", frozenset())
    assert action_key("  SEARCH ", {"q": "eiffel tower"}) == action_key("search", "eiffel tower!")
