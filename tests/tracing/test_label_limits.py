"""Tags, metadata and session limits (tracing.core.label_limits) and the OTLP attribute mapping (pure)."""

from __future__ import annotations

import json

import pytest

from tracing.core.formats.otlp_labels import labels_from_attributes
from tracing.core.label_limits import (
    MAX_METADATA_BYTES,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_CHARS,
    MAX_SESSION_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    LabelError,
    Labels,
    apply_patch,
    clean_labels,
    clean_metadata,
    clean_tags,
    parse_metadata_text,
    parse_tag_text,
)


def test_tags_up_to_the_limit_are_kept_in_order_once_each():
    tags = [f"t{i}" for i in range(MAX_TAGS)]
    assert clean_tags([*tags, " t0 "]) == tags


def test_one_tag_over_the_limit_is_refused_naming_the_limit():
    with pytest.raises(LabelError, match=f"{MAX_TAGS + 1} tags, at most {MAX_TAGS}"):
        clean_tags([f"t{i}" for i in range(MAX_TAGS + 1)])


def test_a_thousand_tags_are_refused():
    with pytest.raises(LabelError, match="1000 tags"):
        clean_tags([f"t{i}" for i in range(1000)])


def test_tag_length_on_both_sides_of_the_limit():
    assert clean_tags(["x" * MAX_TAG_CHARS]) == ["x" * MAX_TAG_CHARS]
    with pytest.raises(LabelError, match=f"longer than {MAX_TAG_CHARS}"):
        clean_tags(["x" * (MAX_TAG_CHARS + 1)])


def test_odd_characters_are_kept_as_typed():
    odd = ["<script>alert(1)</script>"[:MAX_TAG_CHARS], "it's \"quoted\"", "数据集-β", "emoji 🚀"]
    assert clean_tags(odd) == odd


@pytest.mark.parametrize("bad", ["", "   ", "tab\there", "nul\x00", 5])
def test_empty_control_and_non_string_tags_are_refused(bad):
    with pytest.raises(LabelError, match="tags"):
        clean_tags([bad])


def test_tags_must_be_a_list():
    with pytest.raises(LabelError, match="list"):
        clean_tags("a,b")


def test_not_strict_trims_instead_of_refusing():
    tags = clean_tags([f"t{i}" for i in range(1000)] + ["x" * 500, "a\tb"], strict=False)
    assert len(tags) == MAX_TAGS


def test_metadata_limits_on_both_sides():
    assert len(clean_metadata({f"k{i}": i for i in range(MAX_METADATA_KEYS)})) == MAX_METADATA_KEYS
    with pytest.raises(LabelError, match="more than"):
        clean_metadata({f"k{i}": i for i in range(MAX_METADATA_KEYS + 1)})
    assert clean_metadata({"k": "v" * MAX_METADATA_VALUE_CHARS})
    with pytest.raises(LabelError, match="metadata.k"):
        clean_metadata({"k": "v" * (MAX_METADATA_VALUE_CHARS + 1)})
    big = {f"k{i}": "v" * (MAX_METADATA_VALUE_CHARS - 10) for i in range(MAX_METADATA_KEYS // 2)}
    assert len(json.dumps(big)) > MAX_METADATA_BYTES
    with pytest.raises(LabelError, match="bytes"):
        clean_metadata(big)


def test_nested_metadata_is_kept_as_json_text():
    assert clean_metadata({"cfg": {"a": [1, 2]}, "n": 3, "ok": True, "none": None}) == {
        "cfg": '{"a": [1, 2]}', "n": 3, "ok": True, "none": None}


def test_session_length_on_both_sides():
    assert clean_labels(session_id="s" * MAX_SESSION_CHARS).session_id == "s" * MAX_SESSION_CHARS
    with pytest.raises(LabelError, match="session_id"):
        clean_labels(session_id="s" * (MAX_SESSION_CHARS + 1))


def test_typed_boxes_parse_to_tags_and_pairs():
    assert parse_tag_text("a, b\nc,,") == ["a", "b", "c"]
    assert parse_metadata_text("env = prod\nurl=http://x/?a=b\n") == {"env": "prod", "url": "http://x/?a=b"}
    with pytest.raises(LabelError, match="line 1"):
        parse_metadata_text("no pair here")


def test_a_patch_adds_removes_and_merges():
    current = Labels(tags=["a", "b"], metadata={"env": "dev", "user.id": "u1"}, session_id="s1")
    after = apply_patch(current, {"add_tags": ["c", "a"], "remove_tags": ["b"],
                                  "metadata": {"env": "prod", "user.id": None, "v": 2}})
    assert after == Labels(tags=["a", "c"], metadata={"env": "prod", "v": 2}, session_id="s1")
    assert apply_patch(current, {"tags": [], "session_id": ""}) == Labels(tags=[], metadata=current.metadata)


def test_a_patch_past_the_limit_or_with_unknown_fields_is_refused():
    current = Labels(tags=[f"t{i}" for i in range(MAX_TAGS)])
    with pytest.raises(LabelError, match="at most"):
        apply_patch(current, {"add_tags": ["one more"]})
    with pytest.raises(LabelError, match="unknown field"):
        apply_patch(current, {"colour": "red"})


def test_openinference_attributes_become_labels():
    labels = labels_from_attributes([
        {"tag.tags": ["prod", "exp-7"], "metadata": json.dumps({"dataset": "hotpot", "v": 3}), "session.id": "chat-1",
         "user.id": "u-9"},
        {"tag.tags": ["exp-7", "retry"], "metadata": {"dataset": "other"}, "session.id": "chat-2"},
    ])
    assert labels == Labels(tags=["prod", "exp-7", "retry"],
                            metadata={"dataset": "hotpot", "v": 3, "user.id": "u-9"}, session_id="chat-1")


def test_bad_attributes_are_trimmed_not_refused():
    labels = labels_from_attributes([{"tag.tags": [f"t{i}" for i in range(1000)], "metadata": "not json",
                                      "session.id": "s" * 500}])
    assert len(labels.tags) == MAX_TAGS
    assert labels.metadata == {"metadata": "not json"}
    assert len(labels.session_id) == MAX_SESSION_CHARS
    assert labels_from_attributes([{"tag.tags": "solo"}]).tags == ["solo"]
