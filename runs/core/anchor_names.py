"""Plain-word names of the anchoring patterns and findings (tracing.core.anchoring
PATTERNS / FINDINGS) for the run page, the run list's filter and chips."""

from __future__ import annotations

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

ANCHOR_LABELS = {
    "rejected_resubmission": _("resubmitted a rejected solution"),
    "phantom_call": _("claimed a call it never made"),
    "stale_value": _("used an out-of-date value"),
    "wrong_record": _("took a value from the wrong record"),
    "unconfirmed_success": _("claimed success after an error or empty result"),
    "unsupported_claim": _("claim nothing observed supports"),
    "wrong_relation": _("answer from the wrong relation"),
    "requery": _("asked again for what it had"),
    "ignored_observation": _("ignored what it had just got"),
    "answered_from_memory": _("answered from memory"),
    "untested_claim": _("claimed it works before running it"),
    "unobserved_argument": _("acted on a value it never saw"),
    "slip": _("a slip the next result caught"),
    "against_conclusion": _("answered against its own conclusion"),
}


def anchor_label(pattern: str) -> str:
    label = ANCHOR_LABELS.get(pattern)
    return gettext(label) if label is not None else pattern.replace("_", " ")
