"""Text a form or a query string gives, checked before Postgres or a library sees it. Pure.

Postgres refuses NUL in text (even as a lookup value: a filter on it is a
500, not an empty result) and a lone UTF-16 surrogate cannot be encoded as
UTF-8. Form values cannot hold a surrogate (Django decodes the body with
replacement), JSON typed into a form can (`"\\ud800"`): that is
tracing.core.untrusted_json's to refuse.
"""

from __future__ import annotations

from django.utils.translation import gettext as _


def unstorable(text: str) -> str:
    """Why Postgres cannot take `text`, or "" when it can."""
    if "\x00" in text:
        return _("contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _("contains a lone UTF-16 surrogate")
    return ""
