"""The waterfall and span tree, pure (issue 15 item 2)."""

from __future__ import annotations

from tracing.core.waterfall import MAX_BARS, MIN_BAR, WIDTH, Call, SpanRow, chart, span_tree, walk


def test_timed_calls_share_one_axis_from_the_first_start():
    c = chart([Call(0, "model", "model", 500, start_ms=1000), Call(1, "tool", "search", 250, start_ms=1500),
               Call(2, "model", "model", 250, start_ms=1750)])
    assert c.timed and c.total_ms == 1000
    assert [(b.x, b.width) for b in c.bars] == [(0, 500), (500, 250), (750, 250)]
    assert c.ticks == ["0 ms", "250 ms", "500 ms", "750 ms", "1.0 s"]


def test_without_start_times_bars_are_durations_from_zero_and_say_so():
    c = chart([Call(0, "model", "model", 400), Call(1, "tool", "search", 100)])
    assert not c.timed and [(b.x, b.width) for b in c.bars] == [(0, WIDTH), (0, 250)]


def test_one_call_without_a_start_makes_the_whole_chart_durations_only():
    # Never place some bars by time and guess the others.
    c = chart([Call(0, "model", "model", 400, start_ms=0), Call(1, "tool", "search", 100)])
    assert not c.timed


def test_calls_without_a_duration_are_counted_not_drawn():
    c = chart([Call(0, "model", "model", 0), Call(1, "tool", "search", 0)])
    assert c.bars == [] and c.untimed_calls == 2 and c.ticks == []


def test_a_tiny_call_still_gets_a_clickable_sliver_and_bars_stay_in_the_box():
    c = chart([Call(0, "model", "model", 10_000, start_ms=0), Call(1, "tool", "t", 0.001, start_ms=10_000)])
    tiny = c.bars[1]
    assert tiny.width == MIN_BAR and tiny.x + tiny.width <= WIDTH


def test_bars_past_the_cap_are_left_out_and_counted():
    c = chart(Call(i, "tool", "t", 1, start_ms=i) for i in range(MAX_BARS + 5))
    assert len(c.bars) == MAX_BARS and c.left_out == 5


def _span(sid, parent="", start=0, end=10, kind="llm", step=None):
    return SpanRow(sid, parent, f"span {sid}", kind, start, end, "ok", step)


def test_span_tree_nests_children_by_start_time():
    # (a start of 0 is OTLP's "not set": real starts are nanoseconds since 1970)
    roots, total = span_tree([_span("c", "a", 5, 8), _span("a", "", 1, 21, "agent"), _span("b", "a", 2, 4)])
    assert total == 20 / 1e6
    assert [r.span.span_id for r in roots] == ["a"]
    assert [c.span.span_id for c in roots[0].children] == ["b", "c"]
    assert roots[0].children[0].depth == 1


def test_missing_parents_and_cycles_become_orphan_roots_without_looping():
    roots, _ = span_tree([_span("x", "gone"), _span("p", "q"), _span("q", "p"), _span("s", "s")])
    ids = {r.span.span_id: r.orphan for r in roots}
    assert ids["x"] is True and ids["s"] is False
    assert sum(1 for r in roots if r.span.span_id in ("p", "q")) == 1  # the cycle appears once


def test_a_chain_of_100000_spans_is_walked_without_recursion():
    spans = [_span(str(i), str(i - 1) if i else "", i, i + 1) for i in range(100_000)]
    roots, _ = span_tree(spans)
    events = list(walk(roots))
    assert len(events) == 200_000
