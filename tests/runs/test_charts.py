"""Plotly figures as plain dicts, one look for every page (runs.core.charts)."""

from __future__ import annotations

import json

from runs.core import charts


def test_a_figure_has_the_house_layout_and_keeps_the_callers_keys():
    fig = charts.figure([charts.bar(["a", "b"], [1, 2], customdata=["/runs/?x=a", "/runs/?x=b"])],
                        title="Runs", x_title="x", y_title="runs", yaxis={"range": [0, 1]}, barmode="group")
    layout = fig["layout"]
    assert layout["title"]["text"] == "Runs" and layout["barmode"] == "group"
    assert layout["xaxis"]["title"]["text"] == "x" and layout["xaxis"]["gridcolor"] == "#eceff3"
    assert layout["yaxis"]["range"] == [0, 1] and layout["font"]["family"].startswith("system-ui")
    assert fig["data"] == [{"type": "bar", "x": ["a", "b"], "y": [1, 2], "customdata": ["/runs/?x=a", "/runs/?x=b"]}]
    json.dumps(fig)  # json_script-able as is


def test_a_trace_on_the_second_axis_gets_one():
    fig = charts.figure([charts.lines([1], [2]), charts.bar([1], [3], yaxis="y2")])
    assert fig["layout"]["yaxis2"]["overlaying"] == "y"
    assert "yaxis2" not in charts.figure([charts.lines([1], [2])])["layout"]


def test_a_figure_without_points_is_empty():
    assert charts.is_empty(charts.figure([charts.bar([], [])]))
    assert not charts.is_empty(charts.figure([charts.box([1, 2])]))
