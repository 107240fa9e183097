"""Deflated JSON (tracing.core.packing): what is stored must always decode."""

from __future__ import annotations

import hashlib
import json

from tracing.core import packing


def test_a_stored_dictionary_is_never_edited():
    # Rows deflated with dictionary 1 decode only with these exact bytes: a
    # better dictionary goes in under a new version, this one stays.
    assert hashlib.sha256(packing._DICTIONARIES[1]).hexdigest() == (
        "cd4adda1b84f160b7f03f3e0d00f2014112850ff4cf5b43a03ffe0edacaae50d")


def test_json_comes_back_as_it_went_in():
    for text in ('{"b": 1, "a": [null, "中文", 1.5]}', "null", '"' + "x" * 100_000 + '"'):
        data = packing.pack(text)
        assert data[0] == 1 and packing.unpack(data) == json.loads(text)
        assert packing.unpack(memoryview(data)) == json.loads(text)  # as psycopg returns bytea
    assert packing.unpack(None) is None
