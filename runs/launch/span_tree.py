"""An OTLP trace's span tree as nested, collapsible HTML (built here, not in a
template: the nesting is as deep as the trace, and a template would recurse)."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from tracing.core.waterfall import MAX_TREE_DEPTH, Node, walk


def _ms(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def _row(node: Node, run_url: str) -> SafeString:
    s = node.span
    step = (format_html('<a class="span-step" href="{}?step={}#step-{}" data-step="{}">{}</a>',
                        run_url, s.step, s.step, s.step, _("step %(n)s") % {"n": s.step}) if s.step is not None
            else format_html('<span class="muted small" title="{}">{}</span>', _("this span gave no step"),
                             _("no step")))
    return format_html(
        '<span class="span-row"><span class="span-name">{}{}</span> <span class="tag tag-span-{}">{}</span>'
        ' <span class="badge span-status-{}">{}</span> <span class="num span-ms">{}</span> {}'
        '<svg class="span-bar" viewBox="0 0 1000 8" preserveAspectRatio="none" aria-hidden="true">'
        '<rect x="{}" width="{}" height="8"/></svg></span>',
        format_html('<span class="badge sig-flag" title="{}">{}</span> ', _("its parent span is not in this trace"),
                    _("orphan"))
        if node.orphan else "",
        s.name or _("(unnamed span)"), s.kind, s.kind,
        s.status, s.status, _ms(s.duration_ms), step, node.x, node.width,
    )


def tree_html(roots: Sequence[Node], run_url: str) -> SafeString:
    """<ul> of <details open> per span with children; leaves as plain rows; past MAX_TREE_DEPTH, flat."""
    parts: list[str] = ['<ul class="span-tree">']
    for event, node in walk(roots):
        nests = bool(node.children) and node.depth < MAX_TREE_DEPTH
        if event == "open":
            row = _row(node, run_url)
            parts.append(f"<li><details open><summary>{row}</summary><ul>" if nests else f"<li>{row}</li>")
        elif nests:
            parts.append("</ul></details></li>")
    parts.append("</ul>")
    return mark_safe("".join(parts))  # every piece above is format_html-escaped
