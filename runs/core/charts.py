"""Plotly figures for the pages: one way to build them, one look.

A figure is a plain dict ``{"data": [traces], "layout": {...}}`` that a page
hands to ``json_script`` and ``static/charts.js`` draws with ``Plotly.react``
(a point whose ``customdata`` is a URL links to the runs behind it). Building
dicts here instead of plotly's Python objects costs nothing per chart and
keeps the web process free of plotly's validators; the look every page shares
is the layout below (plotly.js's plain defaults plus these).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

BLUE = "#2456d6"
OCHRE = "#a05a00"
GREEN = "#1f7a4d"
PURPLE = "#6d4bd1"
RED = "#b3261e"
DARK_RED = "#8c1d18"
ORANGE = "#d9480f"
YELLOW = "#c9a227"
TEAL = "#0b6e99"

_AXIS = {"gridcolor": "#eceff3", "zeroline": False, "automargin": True}
_LAYOUT = {
    "font": {"size": 11, "family": "system-ui, sans-serif", "color": "#1d2330"},
    "paper_bgcolor": "#fff",
    "plot_bgcolor": "#fff",
    "colorway": [BLUE, OCHRE, GREEN, PURPLE, RED, TEAL],
}


def figure(traces: Iterable[dict[str, Any]], *, title: str = "", height: int = 260, x_title: str = "",
           y_title: str = "", xaxis: dict | None = None, yaxis: dict | None = None,
           margin: dict | None = None, **layout: Any) -> dict[str, Any]:
    """A figure in the house look. `xaxis` / `yaxis` add to the axis defaults;
    any other keyword is a layout key of its own (legend, barmode, ...)."""
    data = list(traces)
    x = {**_AXIS, **({"title": {"text": x_title}} if x_title else {}), **(xaxis or {})}
    y = {**_AXIS, **({"title": {"text": y_title}} if y_title else {}), **(yaxis or {})}
    out: dict[str, Any] = {**_LAYOUT, "height": height, "xaxis": x, "yaxis": y,
                           "margin": margin or {"l": 50, "r": 40, "t": 36, "b": 40}}
    if title:
        out["title"] = {"text": title, "font": {"size": 14}}
    if any(trace.get("yaxis") == "y2" for trace in data):
        out["yaxis2"] = {"overlaying": "y", "side": "right", "showgrid": False, "rangemode": "tozero"}
    return {"data": data, "layout": {**out, **layout}}


def bar(x: Sequence, y: Sequence, **trace: Any) -> dict[str, Any]:
    return {"type": "bar", "x": list(x), "y": list(y), **trace}


def lines(x: Sequence, y: Sequence, *, markers: bool = True, **trace: Any) -> dict[str, Any]:
    return {"type": "scatter", "mode": "lines+markers" if markers else "lines", "x": list(x), "y": list(y), **trace}


def box(y: Sequence, **trace: Any) -> dict[str, Any]:
    return {"type": "box", "y": list(y), **trace}


def is_empty(fig: dict[str, Any]) -> bool:
    """No trace has a point to draw."""
    return not any(trace.get("x") or trace.get("y") for trace in fig["data"])
