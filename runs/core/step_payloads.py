"""Step payloads made readable: model text as sanitised Markdown, JSON pretty-printed and folded.

Everything here renders attacker-controlled text (thoughts quote web pages,
arguments carry injections), so the output is built to be inert:

* Markdown goes through markdown-it-py with raw HTML *off* (``<script>`` is
  shown as text, which is what a debugger wants: the model said it), images
  off (a remote image is a tracking pixel), and then through nh3 (ammonia) with
  an allowlist of tags and attributes and only http(s)/mailto links, each
  given ``rel="noopener noreferrer"``. Two layers, so a parser bug alone does
  not open a hole.
* JSON is escaped text inside ``<pre>``; folding and copying are CSS and
  static/app.js, no markup comes from the payload.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import nh3
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from markdown_it import MarkdownIt

from tracing.core import shown_json

# A JSON payload longer than this many lines (and a little: folding away one
# or two lines hides more than it saves) is folded to about this many, with "show all".
FOLD_LINES = 6
FOLD_SLACK = 2
# Arguments whose compact JSON fits this many characters stay on the call's
# line; longer ones become a pretty-printed block.
INLINE_ARGS_CHARS = 100
# Model text longer than this (characters or lines) is clamped with "show all".
LONG_TEXT_CHARS = 400
LONG_TEXT_LINES = 4
# Text above this size is not parsed as JSON or Markdown (1 MB observations
# exist): it is shown as escaped plain text, which is always correct.
MAX_RENDER_CHARS = 200_000
# Rendered Markdown of recent texts, per process: the live poll and reloads of
# the same run render the same thoughts again.
MARKDOWN_CACHE_SIZE = 4096

_ALLOWED_TAGS = {"p", "br", "strong", "em", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a",
                 "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td"}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}
_URL_SCHEMES = {"http", "https", "mailto"}

_md = (MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
       .enable(["table", "strikethrough"]).disable("image"))

# Characters and line starts that can make Markdown; text with none of them is
# one or more plain paragraphs and skips the parser (most observations-like
# prose in thoughts), which keeps a 300-step page within its time budget.
_MARKDOWN_SYNTAX = re.compile(r"[*_`#>\[\]|~<&\\]|^\s*(?:[-+]\s|\d+[.)]\s|={2,}|-{2,})|^ {4}|\t", re.M)
_BLANK_LINES = re.compile(r"\n\s*\n")


def _plain_paragraphs(text: str) -> str:
    # What markdown-it renders for syntax-free text with breaks on: paragraphs
    # on blank lines, <br> on single newlines, each line's edges trimmed.
    paras = (p.strip() for p in _BLANK_LINES.split(text.strip()))
    return "\n".join("<p>" + "<br>\n".join(escape(line.strip()) for line in p.split("\n")) + "</p>"
                     for p in paras if p)


@lru_cache(maxsize=MARKDOWN_CACHE_SIZE)
def markdown_html(text: str) -> str:
    """`text` as sanitised HTML: Markdown rendered, raw HTML shown as text, links made safe."""
    if not text:
        return ""
    if len(text) > MAX_RENDER_CHARS:
        return f"<p>{escape(text)}</p>"
    if not _MARKDOWN_SYNTAX.search(text):
        return _plain_paragraphs(text)
    return nh3.clean(_md.render(text), tags=_ALLOWED_TAGS, attributes=_ALLOWED_ATTRIBUTES, url_schemes=_URL_SCHEMES,
                     link_rel="noopener noreferrer", strip_comments=True)


def is_long(text: str) -> bool:
    return len(text) > LONG_TEXT_CHARS or text.count("\n") >= LONG_TEXT_LINES


@dataclass(frozen=True)
class JsonPayload:
    pretty: str
    lines: int

    @property
    def folded(self) -> bool:
        return self.lines > FOLD_LINES + FOLD_SLACK


def json_payload(value: Any) -> JsonPayload | None:
    """A dict or list (or a string holding one) pretty-printed; None for anything else."""
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped or stripped[0] not in "[{" or len(stripped) > MAX_RENDER_CHARS:
            return None
        # Nested past shown_json's depth (a string 5,000 deep is accepted as text): shown as text.
        value = shown_json.parse(stripped)
    if not isinstance(value, (dict, list)) or not value:
        return None
    pretty = shown_json.dumps(value, indent=2, sort_keys=True)
    return JsonPayload(pretty, pretty.count("\n") + 1)


def payload_block(payload: JsonPayload, label: str) -> SafeString:
    """The folded, copyable <pre> of a JSON payload (its text escaped)."""
    more = _("show all %(n)s lines") % {"n": payload.lines}
    fold = (format_html('<button type="button" class="fold-toggle" aria-expanded="false" data-more="{}"'
                        ' data-less="{}">{}</button>', more, _("fold"), more)
            if payload.folded else "")
    return format_html(
        '<div class="payload{}" data-label="{}"><pre class="json">{}</pre>'
        '<div class="payload-tools"><button type="button" class="copy" title="{}" data-copied="{}">{}</button>{}'
        '</div></div>',
        " fold" if payload.folded else "", label, payload.pretty, _("copy the JSON"), _("copied"), _("copy"), fold,
    )


def args_html(args: Any) -> SafeString:
    """A tool call's arguments: compact on the call's line when short, else a folded block."""
    if args is None:
        return mark_safe("")
    compact = args if isinstance(args, str) else shown_json.dumps(args, sort_keys=True)
    payload = json_payload(args) if len(compact) > INLINE_ARGS_CHARS else None
    if payload is None:
        return format_html(' <code class="args">{}</code>', compact)
    return payload_block(payload, "arguments")


def _show_all(text: str) -> str:
    if not is_long(text):
        return ""
    return format_html('<button type="button" class="show-all" aria-expanded="false" data-more="{}" data-less="{}">'
                       '{}</button>', _("show all"), _("fold"), _("show all"))


def step_text_html(step: Any, label: str) -> SafeString:
    """A timeline step's text: a JSON result pretty-printed, the model's words as
    Markdown, anything else (observations, user turns, notes) as plain text;
    long text clamped with "show all"."""
    text = step.text
    if not text:
        return mark_safe("")
    if step.kind == "observation":
        payload = json_payload(text)
        if payload is not None:
            return payload_block(payload, "result")
    elif label == "reply" or (step.role == "assistant" and step.kind in ("thought", "final")):
        # markdown_html's output is sanitised (nh3 allowlist) before it is marked safe.
        return mark_safe(f'<div class="text md clamp">{markdown_html(text)}</div>{_show_all(text)}')  # noqa: S308
    return format_html('<div class="text clamp">{}</div>{}', text, mark_safe(_show_all(text)))
