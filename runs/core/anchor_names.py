"""Plain-word names of the anchoring patterns and findings (tracing.anchoring
PATTERNS / FINDINGS) for the run page, the run list's filter and chips."""

from __future__ import annotations

ANCHOR_LABELS = {
    "rejected_resubmission": "resubmitted a rejected solution",
    "phantom_call": "claimed a call it never made",
    "stale_value": "used an out-of-date value",
    "wrong_record": "took a value from the wrong record",
    "unconfirmed_success": "claimed success after an error or empty result",
    "unsupported_claim": "claim nothing observed supports",
    "wrong_relation": "answer from the wrong relation",
    "requery": "asked again for what it had",
    "ignored_observation": "ignored what it had just got",
    "answered_from_memory": "answered from memory",
    "untested_claim": "claimed it works before running it",
    "unobserved_argument": "acted on a value it never saw",
    "slip": "a slip the next result caught",
    "against_conclusion": "answered against its own conclusion",
}


def anchor_label(pattern: str) -> str:
    return ANCHOR_LABELS.get(pattern, pattern.replace("_", " "))
