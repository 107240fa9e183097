"""tracing.core.untrusted_json: what it refuses, what it cleans, and that it never raises anything else."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracing.core.untrusted_json import MAX_DEPTH, UntrustedJsonError, clean_text, loads


def test_plain_json_comes_back_as_it_was():
    text = '{"a": [1, 2.5, "x", null, true], "b": {"c": "用户"}, "pair": "\\ud83d\\ude00"}'
    assert loads(text) == json.loads(text)
    assert loads(text.encode()) == json.loads(text)


def test_an_integer_past_4300_digits_is_refused_by_name():
    with pytest.raises(UntrustedJsonError, match="an integer of 5,000 digits") as exc:
        loads('{"n": ' + "7" * 5000 + "}", where="the body")
    assert str(exc.value).startswith("the body is not acceptable JSON")
    assert "set_int_max_str_digits" not in str(exc.value)
    assert loads("-" + "9" * 4300) == -int("9" * 4300)


@pytest.mark.parametrize("text", ["[" * 200_000, "[" * 200_000 + "]" * 200_000, '{"a":' * 50_000 + "1" + "}" * 50_000])
def test_nesting_past_the_recursion_limit_is_refused(text):
    with pytest.raises(UntrustedJsonError, match="nested too deeply"):
        loads(text)


def test_nesting_past_max_depth_is_refused_with_its_path():
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    with pytest.raises(UntrustedJsonError, match=f"more than {MAX_DEPTH} levels"):
        loads(deep)
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(UntrustedJsonError, match=r"at \$\.a\.b"):
        loads('{"a": {"b": [1]}}', max_depth=2)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"x": -Infinity}', "1e999", "[-1.5e400]"])
def test_numbers_jsonb_refuses_are_refused(text):
    with pytest.raises(UntrustedJsonError, match="not acceptable JSON"):
        loads(text)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udbff", "\\udc00", "\\uDFFF", "\\udc80", "\\ude00\\ud83d"])
def test_a_lone_surrogate_is_refused_naming_its_path(escape):
    with pytest.raises(UntrustedJsonError, match=r"body\.steps\[1\]\.text contains a lone UTF-16 surrogate"):
        loads('{"steps": [{}, {"text": "a' + escape + 'b"}]}', root="body")


def test_a_lone_surrogate_in_a_key_is_refused():
    with pytest.raises(UntrustedJsonError, match="a key"):
        loads('{"k\\udc00": 1}')


def test_nul_is_kept_as_a_replacement_character_in_values_and_keys():
    assert loads('{"a\\u0000": ["x\\u0000y", {"n": "\\u0000"}]}') == {"a\ufffd": ["x\ufffdy", {"n": "\ufffd"}]}
    assert clean_text("a\x00b") == "a\ufffdb"


def test_bytes_that_are_not_utf8_are_refused_with_the_offset():
    with pytest.raises(UntrustedJsonError, match="byte 0xff at offset 3"):
        loads(b'"ab\xff"', where="the line")


def test_invalid_json_names_line_and_column():
    with pytest.raises(UntrustedJsonError, match="the policy is not JSON: .* at line 2, column 1"):
        loads('{"a": 1,\n}', where="the policy")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.binary(), st.text(alphabet="[]{}\":,0123456789eE.-\\ud", max_size=200)))
def test_anything_parses_or_raises_untrusted_json_error(text):
    try:
        value = loads(text)
    except UntrustedJsonError as exc:
        assert str(exc)
        return
    # What comes back is storable: encodable as UTF-8 and free of NUL.
    dumped = json.dumps(value, ensure_ascii=False)
    dumped.encode("utf-8")
    assert "\\u0000" not in dumped and "\x00" not in dumped
