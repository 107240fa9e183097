"""Each step row's HTML rendered once per content (issue 31).

Rendering runs/_step_row.html is most of the run page's Python time (about
0.5 ms a row, 200 rows a page, Markdown included). A row depends on the step
and on a few things of the page (the language it is shown in among them): whether it is the run's anchor break (and
then the break's reason), whether it has a model call, the run's price. All of
them go into the key, beside the step id and RENDER_VERSION: a step that
changes — whichever writer changed it, a queryset ``update()`` included — or
a break that moves simply misses and is rendered again; nothing has to be
invalidated by hand, and stale rows age out of the LRU.

No cache backend is configured (agentlab/settings.py), so the rows live in a
local-memory LRU per process: no pickling, no round trip. The HTML is the
template's own autoescaped output, kept as the SafeString it returned.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from django.template import Context
from django.template.loader import get_template
from django.utils.safestring import SafeString
from django.utils.translation import get_language

ROW_TEMPLATE = "runs/_step_row.html"
# Bump when _step_row.html, _signals.html or a filter they use changes what a
# row shows: rows rendered by the old template are never served again.
RENDER_VERSION = 2
# Rows kept per process: a few long runs' pages (a row is 1-4 KB, so this is
# at most some 30 MB), the pages a team has open and polls.
MAX_ROWS = 8_000


class RowCache:
    """A thread-safe LRU of rendered rows (gunicorn runs threads)."""

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._rows: OrderedDict[str, SafeString] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> SafeString | None:
        with self._lock:
            html = self._rows.get(key)
            if html is not None:
                self._rows.move_to_end(key)
            return html

    def set(self, key: str, html: SafeString) -> None:
        with self._lock:
            self._rows[key] = html
            self._rows.move_to_end(key)
            while len(self._rows) > self.max_rows:
                self._rows.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)


rows = RowCache()


def row_key(step: Any, context: Context) -> str | None:
    """The row's cache key, or None for a step not stored (a preview): its id is its name."""
    if getattr(step, "pk", None) is None:
        return None
    run = context.get("run")
    is_break = run is not None and step.index == run.first_anchor_break
    call_steps = context.get("call_steps") or ()
    has_call = run is not None and step.run_id == run.pk and step.index in call_steps
    inputs = (
        step.run_id, step.index, step.kind, step.role, step.text, step.tool, step.args, step.meta,
        step.prompt_tokens, step.completion_tokens, step.latency_ms,
        # What the page adds: the break's verdict, the call toggle, the price of a turn.
        is_break, (run.anchor_reason, (run.anchor_evidence or {}).get("pattern")) if is_break else None,
        has_call, context.get("call_url") if has_call else None, context.get("price"),
    )
    digest = hashlib.blake2b(repr(inputs).encode(), digest_size=16).hexdigest()
    # A row is rendered in the request's language: an English row is never served to a Chinese page.
    return f"{RENDER_VERSION}:{get_language()}:{step.pk}:{digest}"


def render_row(context: Context) -> SafeString:
    """``context["step"]``'s row, from the cache when this content was rendered before."""
    key = row_key(context["step"], context)
    html = rows.get(key) if key is not None else None
    if html is None:
        html = get_template(ROW_TEMPLATE).template.render(context)
        if key is not None:
            rows.set(key, html)
    return html
