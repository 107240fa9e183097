"""Model calls into Postgres, each message stored once.

A turn resends the whole conversation: turn 30 of a run carries the system
prompt, the question and 29 turns of messages again. Stored as is, that is
quadratic in the run's length. Here a call keeps the number of leading
messages it shares with the run's previous call plus the ids of the messages
after them; message bodies are content-addressed (SHA-256 of their canonical
JSON), so the system prompt and the tool schemas are one row for all runs.
Bodies and raw responses are stored deflated (tracing.core.packing).
bench/model_calls.py measures what this adds to a run's size.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from tracing.core.model_calls import ModelCallRecord
from tracing.core.packing import pack, unpack
from tracing.store.models import CallMessage, ModelCall
from tracing.store.recorder import clean_json, clean_text

# Digests in, ids out, in input order: inserts the bodies not stored yet.
# The CTE's insert is invisible to the outer SELECT's snapshot, hence the
# union of what it returned and what was there.
_UPSERT_SQL = """
WITH input AS (
    SELECT * FROM unnest(%s::uuid[], %s::bytea[]) WITH ORDINALITY AS t(digest, deflated, ord)
), ins AS (
    INSERT INTO tracing_callmessage (digest, deflated)
    SELECT DISTINCT ON (digest) digest, deflated FROM input ORDER BY digest
    ON CONFLICT (digest) DO NOTHING
    RETURNING id, digest
)
SELECT coalesce(ins.id, m.id) FROM input
LEFT JOIN ins ON ins.digest = input.digest
LEFT JOIN tracing_callmessage m ON m.digest = input.digest
ORDER BY input.ord
"""


# One statement for a batch of calls, one array per column: bulk_create built
# a model instance and 13 placeholders per call, which cost as much as the
# rest of the write. ON CONFLICT: a call already on record (a re-delivered
# run) is left as it was.
_INSERT_CALLS_SQL = """
INSERT INTO tracing_modelcall (run_id, step_index, api, prefix_len, suffix_ids, params_ref_id, tools_id,
                               response_deflated, error, prompt_tokens, completion_tokens, latency_ms, created_at)
SELECT run_id, step_index, api, prefix_len, suffix_ids::bigint[], params_ref_id, tools_id,
       response_deflated, error, prompt_tokens, completion_tokens, latency_ms, %s
FROM unnest(%s::bigint[], %s::int[], %s::text[], %s::int[], %s::text[], %s::bigint[], %s::bigint[],
            %s::bytea[], %s::text[], %s::int[], %s::int[], %s::float8[])
     AS t(run_id, step_index, api, prefix_len, suffix_ids, params_ref_id, tools_id,
          response_deflated, error, prompt_tokens, completion_tokens, latency_ms)
ON CONFLICT DO NOTHING
"""


def _canonical(body: Any) -> str:
    # One pass: what clean_json writes, keys sorted (digests of rows already stored must not change).
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, default=str)
    return text.replace("\\u0000", "\\ufffd") if "\\u0000" in text else text


def _digest(canonical: str) -> uuid.UUID:
    return uuid.UUID(bytes=hashlib.sha256(canonical.encode()).digest()[:16])


def digest_of(body: Any) -> uuid.UUID:
    return _digest(_canonical(body))


def store_messages(bodies: Sequence[Any]) -> list[int]:
    """The ids of `bodies` in the message table, inserting those not there yet."""
    if not bodies:
        return []
    canon = [_canonical(b) for b in bodies]
    # Every call of a batch repeats its parameters and tools: each distinct body is deflated once.
    unique = list(dict.fromkeys(canon))
    digests = [_digest(c) for c in unique]
    with connection.cursor() as cur:
        cur.execute(_UPSERT_SQL, [digests, [pack(c) for c in unique]])
        ids = [row[0] for row in cur.fetchall()]
    if None in ids:
        # Another writer inserted the same body in the meantime (its row was
        # not in this statement's snapshot): it is committed now.
        missing = [d for d, i in zip(digests, ids, strict=True) if i is None]
        found = dict(CallMessage.objects.filter(digest__in=missing).values_list("digest", "id"))
        ids = [i if i is not None else found[d] for d, i in zip(digests, ids, strict=True)]
    id_of = dict(zip(unique, ids, strict=True))
    return [id_of[c] for c in canon]


def _common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _store(rows: Sequence[tuple[int, ModelCallRecord, int]]) -> None:
    """(run id, call, leading messages shared with the run's previous call)
    rows in two statements: every body, then every call. A call already on
    record (a re-delivered run) is left as it was."""
    bodies: list[Any] = []
    slots = []
    for _run_id, call, prefix in rows:
        params = dict(call.params)
        tools = params.pop("tools", None)
        start = len(bodies)
        bodies += [*call.messages[prefix:], params, *([tools] if tools else [])]
        slots.append((start, len(call.messages) - prefix, bool(tools)))
    ids = store_messages(bodies)
    columns: list[list[Any]] = [[] for _ in range(12)]
    for (run_id, call, prefix), (start, count, has_tools) in zip(rows, slots, strict=True):
        response = clean_json(call.response)
        row = (run_id, call.step_index, call.api, prefix, ids[start:start + count], ids[start + count],
               ids[start + count + 1] if has_tools else None, None if response is None else pack(response),
               clean_text(call.error), call.prompt_tokens, call.completion_tokens, call.latency_ms)
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    # The suffixes are ragged (unnest takes no array of arrays): they travel as array literals.
    columns[4] = ["{" + ",".join(map(str, suffix)) + "}" for suffix in columns[4]]
    with connection.cursor() as cur:
        cur.execute(_INSERT_CALLS_SQL, [timezone.now(), *columns])


def calls_record(batches: Sequence[tuple[int, Sequence[ModelCallRecord]]]) -> None:
    """The calls of several runs (an OTLP request's traces), each run's in
    step order. The first call of a run here shares no prefix: an earlier
    batch's last call is not at hand, and its messages are stored already, so
    only their ids are repeated."""
    rows = []
    for run_id, calls in batches:
        # Each call of a trace resends the conversation as new dicts, so the
        # shared prefix is found by comparing them, not by digesting every
        # message of every call (quadratic in the run's length: -40% on OTLP
        # ingestion, bench/README-ingest.md); only the rest is digested, once.
        previous: list[Any] = []
        for call in calls:
            rows.append((run_id, call, _common_prefix(previous, call.messages)))
            previous = call.messages
    if not rows:
        return
    with transaction.atomic():
        _store(rows)


class CallRecorder:
    """The loop's call sink for one run: remembers the previous call's message
    digests, so each call stores only what follows the shared prefix."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.previous: list[uuid.UUID] = []

    def __call__(self, call: ModelCallRecord) -> None:
        digests = [digest_of(m) for m in call.messages]
        with transaction.atomic():
            _store([(self.run_id, call, _common_prefix(self.previous, digests))])
        self.previous = digests


def call_message_ids(call: ModelCall) -> list[int]:
    """The ids of the messages `call` sent, in order (one query for the chain)."""
    chain = list(
        ModelCall.objects.filter(run_id=call.run_id, step_index__lt=call.step_index)
        .order_by("step_index").values_list("prefix_len", "suffix_ids")
    )
    chain.append((call.prefix_len, call.suffix_ids))
    # Walk back to the first call that shares nothing, then forward.
    first = len(chain) - 1
    while first > 0 and chain[first][0]:
        first -= 1
    ids: list[int] = []
    for prefix, suffix in chain[first:]:
        ids = ids[:prefix] + list(suffix)
    return ids


def call_messages(call: ModelCall) -> list[Any]:
    ids = call_message_ids(call)
    bodies = {pk: unpack(data) for pk, data in CallMessage.objects.filter(pk__in=set(ids))
              .values_list("pk", "deflated")}
    return [bodies[i] for i in ids]
