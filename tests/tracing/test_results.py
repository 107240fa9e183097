"""What a tool result says, read from its structure (tracing.core.results)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracing.core.results import (
    JSON_PARSE_MAX_CHARS,
    is_command,
    is_read_call,
    is_silent_command,
    read_result,
    strip_notices,
)
from tracing.core.steps import recorded_status


@pytest.mark.parametrize(
    ("text", "status", "form"),
    [
        ('{"order_id": "#W1", "status": "pending", "items": []}', "ok", "json"),
        ("[]", "empty", "json"),
        ("{}", "empty", "json"),
        ("null", "empty", "json"),
        ('{"error": "User not found"}', "error", "json"),
        ('{"status": "failed", "reason": "x"}', "error", "json"),
        ('{"success": false}', "error", "json"),
        # A record whose *field* mentions errors is data.
        ('{"error_count": 0, "name": "ok"}', "ok", "json"),
        ("[('city',), ('country',)]", "ok", "literal"),
        ("[(None,)]", "ok", "literal"),
        ("[(Decimal('34.5000'), 25, 43)]", "ok", "literal"),
        ("()", "empty", "literal"),
        ("Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: name 'x' is not defined", "error",
         "traceback"),
        ("----\nAssertionError    Traceback (most recent call last)\nCell In[3], line 13", "error", "traceback"),
        ("  File \"<string>\", line 1\n    def f(:\nSyntaxError: invalid syntax", "error", "traceback"),
        ("bash: foo: command not found", "error", "text"),
        ("find: '/system': No such file or directory", "error", "text"),
        ("find: missing argument to `-exec'", "error", "text"),
        ("cut: option requires an argument -- 'd'", "error", "text"),
        ("Malformed command", "error", "text"),
        ("Error executing query: Unknown column 'email' in 'field list'", "error", "text"),
        ("ERROR 1064 (42000): You have an error in your SQL syntax", "error", "text"),
        ("Your answer is wrong.\nYou have 3 steps left and 1 chances to propose solution left.", "error", "text"),
        ("Submitted flag is incorrect. Keep trying!", "error", "text"),
        ("Command timed out", "timeout", "text"),
        ("Nothing happens.", "empty", "text"),
        ("Could not find [Haiyan]. Similar: ['Haiyan County']", "empty", "text"),
        ("", "empty", "empty"),
        ("The Eiffel Tower is 330 metres tall.", "ok", "text"),
        # A long article that mentions errors is content.
        ("Type I error is the rejection of a true null hypothesis. " * 20, "ok", "text"),
    ],
)
def test_status_and_form(text, status, form):
    reading = read_result(text)
    assert (reading.status, reading.form) == (status, form)


def test_a_rejected_answer_is_marked_rejected():
    assert read_result("Your answer is wrong.").rejected
    assert not read_result("Error: 500").rejected


def test_recorded_status_wins():
    assert read_result("All fine, nothing to see", {"status": "timeout"}).status == "timeout"
    assert read_result("[]", {"status": "ok"}).status == "ok"


def test_no_output_is_silent_success_after_a_command_that_prints_nothing():
    assert read_result("", None, "cd /tmp").status == "ok"
    assert read_result("", None, "mkdir out").silent
    assert read_result("", None, "INSERT INTO t VALUES (1)").status == "ok"
    assert read_result("", None, "echo hi > notes.txt").status == "ok"
    assert read_result("[Executed Successfully with No Output]", None, "assert f(1) == 2").status == "ok"
    # Code that only defines prints nothing; the harness saying it ran is success.
    assert read_result("", None, "import math\ndef area(r):\n    return math.pi * r * r").status == "ok"
    assert read_result("[Executed Successfully with No Output]", None, "x = area(2)").status == "ok"
    assert read_result("", None, "print(area(2))").status == "empty"
    # ...and "nothing found" after a query.
    assert read_result("", None, "find / -name nope").status == "empty"
    assert read_result("", None, "SELECT * FROM t WHERE 0").status == "empty"


def test_an_empty_list_a_program_prints_is_a_value():
    assert read_result("[]", None, "print(sorted([]))").status == "ok"
    assert read_result("[]", None, "SELECT name FROM singer").status == "empty"


def test_budget_notices_of_the_harness_are_set_aside():
    assert strip_notices("1.0\nYou have 1 steps left and 1 chances to propose solution left.") == "1.0"
    assert strip_notices("You have 4 steps left and 2 chances to propose solution left.") == ""
    assert read_result("[Executed Successfully with No Output]\nYou have 2 steps left.", None, "assert x").silent


def test_huge_json_is_data_without_parsing_it():
    big = json.dumps([{"id": i, "v": "x" * 50} for i in range(JSON_PARSE_MAX_CHARS // 40)])
    assert len(big) > JSON_PARSE_MAX_CHARS
    reading = read_result(big)
    assert reading.status == "ok" and reading.data is None


def test_invalid_json_is_read_as_text():
    assert read_result('{"a": 1,').form == "text"
    assert read_result('{"a": 1,').status == "ok"


def test_commands_and_reads():
    assert is_command("ls -la /tmp") and is_command("SELECT 1") and is_command("x = 1\nprint(x)")
    assert not is_command("Nicholas Ray") and not is_command("The 100 (TV series)")
    assert is_read_call("get_order_details", {"order_id": "#W1"}) and is_read_call("Search", "x")
    assert is_read_call("bash", "cat file.txt") and not is_read_call("bash", "cat a > b")
    assert not is_read_call("cancel_pending_order", {}) and not is_read_call("sql", "UPDATE t SET a=1")
    assert is_read_call("go to", "drawer 1")  # a move changes nothing another call asks about
    assert is_silent_command("rm -rf x") and not is_silent_command("ls")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.binary(max_size=2000).map(lambda b: b.decode("latin-1"))))
def test_any_text_is_read_without_raising(text):
    reading = read_result(text, {"status": "bogus"}, text[:50])
    assert reading.status in ("ok", "empty", "error", "timeout")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                    max_leaves=40).filter(lambda v: isinstance(v, (list, dict))))
def test_any_json_is_data_error_or_empty_never_a_crash(value):
    reading = read_result(json.dumps(value))
    assert reading.form == "json"
    assert reading.status in ("ok", "empty", "error")


def test_an_empty_answer_to_a_write_call_is_its_silent_success():
    for text in ("", "None", "null", "[]", "{}", '""'):
        reading = read_result(text, None, {"channel": "general", "body": "hi"}, "send_channel_message")
        assert (reading.status, reading.silent) == ("ok", True), text


def test_an_empty_answer_to_a_read_a_get_or_a_runner_is_not_a_write_success():
    assert read_result("None", None, {"order_id": "1"}, "get_order_details").status == "empty"
    assert read_result("[]", None, {"query": "alice"}, "search_contacts").status == "empty"
    assert read_result("", None, {"item": "dye"}, "get").status == "empty"
    assert read_result("", None, {"code": "x = compute()\nx"}, "python").status == "empty"
    # A text environment's "Nothing happens." is its failure, not a write's success.
    assert read_result("Nothing happens.", None, "take apple 1", "take").status == "empty"
    # A recorded status wins.
    assert read_result("", {"status": "error"}, {"body": "hi"}, "send_message").status == "error"


def test_a_json_body_after_a_one_line_preamble_is_the_data():
    ok = read_result('Status Code: 200. Response: {"id": "A12", "status": "open"}')
    assert (ok.status, ok.form, ok.data) == ("ok", "json", {"id": "A12", "status": "open"})
    framework = read_result('Here is the response from the GET request:\n{"resourceType": "Bundle", "total": 0}')
    assert (framework.status, framework.form) == ("ok", "json")
    assert read_result("Status Code: 200. Response: []").status == "empty"
    # A failing HTTP status in the preamble is the call's failure, whatever the body holds.
    missing = read_result('Status Code: 404. Response: {"details": "no such image"}')
    assert (missing.status, missing.why, missing.data) == ("error", "HTTP 404", {"details": "no such image"})
    # Not JSON after the colon: plain text, read as before.
    assert read_result("Results for x: {not json").status == "ok"


def test_an_error_named_in_the_first_words_is_an_error():
    assert read_result('Parameter type error: "category", expected one of [habits, habitat]').status == "error"
    assert read_result("Validation error - the date is in the past").status == "error"
    assert read_result("No error: the file was saved").status == "ok"


def test_a_recorded_status_is_one_of_the_statuses_or_none():
    assert [recorded_status(m) for m in ({"status": "timeout"}, {"status": "ok"}, {}, None)] == ["timeout", "ok",
                                                                                               None, None]
    # Not a status (a framework's own word, not a string): not recorded, so the text is read instead.
    assert recorded_status({"status": "done"}) is None and recorded_status({"status": 500}) is None
    assert read_result("Timed out", {"status": "done"}).status == read_result("Timed out").status
