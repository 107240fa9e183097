"""Model calls into Postgres, each message stored once.

A turn resends the whole conversation: turn 30 of a run carries the system
prompt, the question and 29 turns of messages again. Stored as is, that is
quadratic in the run's length. Here a call keeps the number of leading
messages it shares with the run's previous call plus the ids of the messages
after them; message bodies are content-addressed (SHA-256 of their canonical
JSON), so the system prompt and the tool schemas are one row for all runs.
bench/model_calls.py measures what this adds to a run's size.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction

from tracing.model_calls import ModelCallRecord
from tracing.models import CallMessage, ModelCall
from tracing.recorder import clean_json, clean_text

# Digests in, ids out, in input order: inserts the bodies not stored yet.
# The CTE's insert is invisible to the outer SELECT's snapshot, hence the
# union of what it returned and what was there.
_UPSERT_SQL = """
WITH input AS (
    SELECT * FROM unnest(%s::bytea[], %s::text[]) WITH ORDINALITY AS t(digest, body, ord)
), ins AS (
    INSERT INTO tracing_callmessage (digest, body)
    SELECT DISTINCT ON (digest) digest, body::jsonb FROM input ORDER BY digest
    ON CONFLICT (digest) DO NOTHING
    RETURNING id, digest
)
SELECT coalesce(ins.id, m.id) FROM input
LEFT JOIN ins ON ins.digest = input.digest
LEFT JOIN tracing_callmessage m ON m.digest = input.digest
ORDER BY input.ord
"""


# One call per (run, turn), as ModelCall's unique constraint says; RETURNING
# gives nothing when the turn was recorded already.
_INSERT_CALL_SQL = """
INSERT INTO tracing_modelcall (run_id, step_index, api, previous_id, prefix_len, suffix_ids, tools_id, params_ref_id,
                               response, error, prompt_tokens, completion_tokens, latency_ms, created_at)
VALUES (%(run)s, %(step_index)s, %(api)s, %(previous)s, %(prefix_len)s, %(suffix_ids)s::bigint[], %(tools)s,
        %(params)s, %(response)s::jsonb, %(error)s, %(prompt_tokens)s, %(completion_tokens)s, %(latency_ms)s, now())
ON CONFLICT (run_id, step_index) DO NOTHING
RETURNING id
"""


def _canonical(body: Any) -> str:
    return clean_json(json.loads(json.dumps(body, ensure_ascii=False, sort_keys=True, default=str))) or "null"


def digest_of(body: Any) -> bytes:
    return hashlib.sha256(_canonical(body).encode()).digest()


def store_messages(bodies: Sequence[Any]) -> list[int]:
    """The ids of `bodies` in the message table, inserting those not there yet."""
    if not bodies:
        return []
    canon = [_canonical(b) for b in bodies]
    digests = [hashlib.sha256(c.encode()).digest() for c in canon]
    with connection.cursor() as cur:
        cur.execute(_UPSERT_SQL, [digests, canon])
        ids = [row[0] for row in cur.fetchall()]
    if None in ids:
        # Another writer inserted the same body in the meantime (its row was
        # not in this statement's snapshot): it is committed now.
        missing = [d for d, i in zip(digests, ids, strict=True) if i is None]
        found = {bytes(d): i for d, i in CallMessage.objects.filter(digest__in=missing).values_list("digest", "id")}
        ids = [i if i is not None else found[d] for d, i in zip(digests, ids, strict=True)]
    return ids


def _common_prefix(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class CallRecorder:
    """The loop's call sink for one run: remembers the previous call's message
    digests, so each call stores only what follows the shared prefix."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.previous: tuple[int, list[bytes]] | None = None

    def __call__(self, call: ModelCallRecord) -> None:
        digests = [digest_of(m) for m in call.messages]
        prefix = 0
        previous_id = None
        if self.previous is not None:
            previous_id, previous_digests = self.previous
            prefix = _common_prefix(previous_digests, digests)
        params = dict(call.params)
        tools = params.pop("tools", None)
        suffix = list(call.messages[prefix:])
        # Every body of the call in one upsert, and the call in one insert: a
        # turn is four round trips (with BEGIN and COMMIT), not eight, which a
        # loaded machine makes the slow part of a short run (bench/evaluation.py).
        with transaction.atomic():
            ids = store_messages([*suffix, *([tools] if tools else []), params])
            suffix_ids, params_id = ids[:len(suffix)], ids[-1]
            tools_id = ids[len(suffix)] if tools else None
            with connection.cursor() as cur:
                cur.execute(_INSERT_CALL_SQL, {
                    "run": self.run_id, "step_index": call.step_index, "api": call.api, "previous": previous_id,
                    "prefix_len": prefix, "suffix_ids": suffix_ids, "tools": tools_id, "params": params_id,
                    "response": clean_json(call.response), "error": clean_text(call.error),
                    "prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens,
                    "latency_ms": call.latency_ms,
                })
                row = cur.fetchone()
            # A re-delivered turn keeps the call first recorded for it.
            pk = row[0] if row else ModelCall.objects.get(run_id=self.run_id, step_index=call.step_index).pk
        self.previous = (pk, digests)


def call_message_ids(call: ModelCall) -> list[int]:
    """The ids of the messages `call` sent, in order (one query for the chain)."""
    chain = {
        pk: (prev, prefix, suffix)
        for pk, prev, prefix, suffix in ModelCall.objects.filter(run_id=call.run_id, step_index__lte=call.step_index)
        .values_list("pk", "previous_id", "prefix_len", "suffix_ids")
    }
    chain[call.pk] = (call.previous_id, call.prefix_len, call.suffix_ids)
    # Walk back to the first call that shares nothing, then forward.
    links: list[tuple[int, list[int]]] = []
    pk: int | None = call.pk
    while pk is not None and pk in chain:
        prev, prefix, suffix = chain[pk]
        links.append((prefix, suffix))
        pk = prev if prefix else None
    ids: list[int] = []
    for prefix, suffix in reversed(links):
        ids = ids[:prefix] + list(suffix)
    return ids


def call_messages(call: ModelCall) -> list[Any]:
    ids = call_message_ids(call)
    bodies = dict(CallMessage.objects.filter(pk__in=set(ids)).values_list("pk", "body"))
    return [bodies[i] for i in ids]
