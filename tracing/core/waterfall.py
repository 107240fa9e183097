"""Where a run's time went: model and tool calls on a time axis, and an OTLP trace's span tree. Pure.

The inputs are what is stored, and nothing is made up from them:

* a native run's step is written when its call returns, so a call *ended* at
  the step's ``created_at`` and started ``latency_ms`` before it;
* an OTLP span carries its own start and end;
* an imported run's steps were written at import time, so only their
  durations are known: the chart says so and draws durations, not positions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Bars past this many are left out (and the chart says how many): a
# 5,000-step run's chart stays a few hundred KB.
MAX_BARS = 2000
# Nested <details> deeper than this are drawn at this depth: browsers flatten
# very deep markup anyway, and a hostile trace can chain 100,000 spans.
MAX_TREE_DEPTH = 48
# The chart's width in SVG user units (the bars scale to the page's width).
WIDTH = 1000.0
# A call too short to see still gets a sliver, so it can be clicked.
MIN_BAR = 2.0


@dataclass(frozen=True)
class Call:
    """One model or tool call: its step, and its start (ms from the run's start, None if unknown) and duration."""

    index: int | None  # the step it became (None: a span that gave no step)
    kind: str  # "model" | "tool"
    label: str
    duration_ms: float
    start_ms: float | None = None
    error: bool = False


@dataclass(frozen=True)
class Bar:
    call: Call
    x: float
    width: float

    @property
    def duration(self) -> str:
        return f"{self.call.duration_ms:.0f} ms"


@dataclass
class Chart:
    bars: list[Bar]
    total_ms: float
    timed: bool  # positions are real start times (else: durations only, each bar from 0)
    left_out: int = 0
    untimed_calls: int = 0  # calls with no duration recorded (not drawn)
    ticks: list[str] = field(default_factory=list)


def _ms(value: float) -> str:
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def chart(calls: Iterable[Call]) -> Chart:
    """Calls as bars: on a shared time axis when every drawn call has a start, else durations from 0."""
    calls = list(calls)
    drawn = [c for c in calls if c.duration_ms > 0]
    untimed = len(calls) - len(drawn)
    left_out = max(0, len(drawn) - MAX_BARS)
    drawn = drawn[:MAX_BARS]
    timed = bool(drawn) and all(c.start_ms is not None for c in drawn)
    if timed:
        origin = min(c.start_ms for c in drawn)  # type: ignore[type-var]
        total = max(c.start_ms + c.duration_ms for c in drawn) - origin  # type: ignore[operator]
    else:
        origin, total = 0.0, max((c.duration_ms for c in drawn), default=0.0)
    scale = WIDTH / total if total > 0 else 0.0
    bars = []
    for c in drawn:
        x = min((c.start_ms - origin) * scale if timed else 0.0, WIDTH - MIN_BAR)  # type: ignore[operator]
        width = min(max(MIN_BAR, c.duration_ms * scale), WIDTH - x)
        bars.append(Bar(c, round(x, 1), round(width, 1)))
    ticks = [_ms(total * q / 4) for q in range(5)] if total > 0 else []
    return Chart(bars, total, timed, left_out, untimed, ticks)


# --- the span tree -------------------------------------------------------------------


@dataclass(frozen=True)
class SpanRow:
    """One span as stored: ids, name, kind (llm | tool | agent | chain | other), times, status."""

    span_id: str
    parent_id: str
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status: str
    step: int | None = None  # the first step the span became

    @property
    def duration_ms(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e6


@dataclass
class Node:
    span: SpanRow
    depth: int
    children: list[Node] = field(default_factory=list)
    x: float = 0.0
    width: float = 0.0
    orphan: bool = False  # its parent is not in the trace (not sent, or a cycle)


def span_tree(spans: Sequence[SpanRow]) -> tuple[list[Node], float]:
    """Roots of the parent/child tree (children by start time) and the trace's length in ms.

    Iterative and cycle-safe: a span whose parent never arrived, or that sits
    in a parent cycle (a malformed trace), is shown as a root marked orphan.
    """
    if not spans:
        return [], 0.0
    by_id = {s.span_id: s for s in spans}
    kids: dict[str, list[SpanRow]] = {}
    for s in spans:
        if s.parent_id and s.parent_id in by_id and s.parent_id != s.span_id:
            kids.setdefault(s.parent_id, []).append(s)
    for group in kids.values():
        group.sort(key=lambda s: (s.start_ns, s.span_id))
    starts = [s.start_ns for s in spans if s.start_ns]
    origin = min(starts, default=0)
    total_ns = max((s.end_ns for s in spans), default=0) - origin
    scale = WIDTH / total_ns if total_ns > 0 else 0.0
    seen: set[str] = set()

    def grow(root: SpanRow, orphan: bool) -> Node:
        top = Node(root, 0, orphan=orphan)
        stack = [top]
        seen.add(root.span_id)
        while stack:
            node = stack.pop()
            s = node.span
            node.x = round(max(0.0, (s.start_ns - origin) * scale) if s.start_ns else 0.0, 1)
            node.width = round(max(MIN_BAR, (s.end_ns - s.start_ns) * scale), 1)
            for child in kids.get(s.span_id, []):
                if child.span_id in seen:
                    continue
                seen.add(child.span_id)
                node.children.append(Node(child, node.depth + 1))
            stack.extend(reversed(node.children))
        return top

    roots = [grow(s, False) for s in sorted(spans, key=lambda s: (s.start_ns, s.span_id))
             if not s.parent_id or s.parent_id == s.span_id]
    for s in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        if s.span_id not in seen:
            roots.append(grow(s, True))
    return roots, total_ns / 1e6


def walk(roots: Sequence[Node]) -> Iterable[tuple[str, Node]]:
    """The tree in document order as ("open", node) / ("close", node) events, without recursion."""
    stack: list[tuple[str, Node]] = [("open", r) for r in reversed(roots)]
    while stack:
        event, node = stack.pop()
        yield event, node
        if event == "open":
            stack.append(("close", node))
            stack.extend(("open", c) for c in reversed(node.children))
