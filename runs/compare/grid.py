"""The compare page's shapes: the aligned grid, its branches, the per-setting
summaries and the charts, from the runs and their alignment. Pure (no queries)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from runs.core import charts
from runs.core.models import Run
from tracing.core.alignment import AlignedGrid, same_action, similarity
from tracing.core.metrics import RunStats, summarize_tasks

# Settings a comparison can be grouped by (runs of one task under different
# models / watchdog policies / agent modes).
GROUP_BY = ("model", "policy", "mode", "tags")


@dataclass(slots=True)
class Cell:
    kind: str  # the unit's kind, or "gap" / "ended"
    run: int  # run id
    label: str = ""
    # Built here rather than in the template: thousands of cells, and every
    # template variable costs a lookup and a localisation.
    href: str = ""  # the unit's first step on the run page (no-JS fallback)
    hx: str = ""  # the htmx expansion
    key: str = ""  # row-run, pairs a cell with its open expansion
    first: int | None = None
    last: int | None = None
    steps: int = 0
    # The run did something else than the row's most common action.
    minority: bool = False
    bad_status: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()


@dataclass(slots=True)
class Row:
    number: int  # 1-based, as shown
    agreement: float
    pct: int  # agreement in whole percent, for display
    first_divergence: bool
    cells: list[Cell]


@dataclass
class Column:
    run: Run
    setting: str
    url: str
    diff_against: int | None = None  # the first column's run, for the header's diff link


@dataclass
class SettingSummary:
    name: str
    runs: int
    scored: int
    successes: int
    success_rate: float | None
    pass_at_n: float | None
    pass_hat_n: float | None
    steps_mean: float | None
    steps_p95: float | None
    tokens_mean: float | None
    span: int = 0  # columns of the grid under this setting


# Run ids listed by name in a branch of the divergence; the rest are counted
# (with 50 runs, "(gap) <- 44 runs" reads better than 44 ids).
BRANCH_IDS_SHOWN = 8


@dataclass
class BranchView:
    label: str
    runs: list[int]  # run ids
    gap: bool

    @property
    def shown(self) -> list[int]:
        return self.runs[:BRANCH_IDS_SHOWN]

    @property
    def more(self) -> int:
        return max(0, len(self.runs) - BRANCH_IDS_SHOWN)

    @property
    def all_ids(self) -> str:
        return " ".join(f"#{pk}" for pk in self.runs)


@dataclass
class Chart:
    id: str
    title: str
    figure: dict = field(repr=False)


def setting(run: Run, by: str) -> str:
    if by == "model":
        return run.model_name if run.provider != Run.Provider.SIM else f"{run.model_name} (simulated)"
    if by == "policy":
        return str(run.policy) if run.policy else "watchdog off"
    if by == "mode":
        return run.mode
    if by == "tags":
        # Runs with the same set of tags side by side (A/B runs tagged "exp-a" / "exp-b").
        return ", ".join(sorted(run.tags)) if run.tags else "no tags"
    return ""


def task_key(run: Run) -> str:
    return run.task.slug if run.task else f"prompt: {run.prompt[:40]}"


def run_stats(run: Run) -> RunStats:
    return RunStats(
        task=task_key(run),
        # A live run has no outcome yet: it counts in steps, not in pass@k.
        success=None if run.is_live else run.success,
        steps=run.step_count,
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        latency_ms=run.latency_ms,
        hit_max_steps=run.stopped_by == "max_steps",
    )


def grid_rows(grid: AlignedGrid, columns: list[Column], cell_url: str) -> list[Row]:
    n_cols = len(columns) + 1
    last_row = [max((r for r, row in enumerate(grid.rows) if row[k] is not None), default=-1)
                for k in range(grid.n_runs)]
    out = []
    for r, units in enumerate(grid.rows):
        majority: set[int] = set()
        if grid.agreement[r] < 1.0 and grid.n_runs > 1:
            branches = [b for b in grid.branches_at(r) if b.unit is not None]
            if branches:
                majority = set(branches[0].runs)
        cells = []
        for k, unit in enumerate(units):
            run_id = columns[k].run.pk
            if unit is None:
                if r <= last_row[k]:
                    cells.append(Cell("gap", run_id))
                else:
                    # Say it once, on the first row after the run's last unit.
                    label = ("(no steps)" if last_row[k] < 0 else "(ended)") if r == last_row[k] + 1 else ""  # (shown through |term)
                    cells.append(Cell("ended", run_id, label=label))
                continue
            first, last = unit.first_index, unit.last_index
            cells.append(Cell(
                kind=unit.kind,
                run=run_id,
                label=unit.label,
                href=f"{columns[k].url}#step-{first}",
                hx=f"{cell_url}?run={run_id}&from={first}&to={last}&cols={n_cols}&row={r + 1}",
                key=f"{r + 1}-{run_id}",
                first=first,
                last=last,
                steps=len(unit.steps),
                minority=bool(majority) and k not in majority,
                bad_status=tuple(s.status for s in unit.steps
                                 if s.kind == "observation" and s.status and s.status != "ok"),
                tiers=tuple(s.tier or "?" for s in unit.steps if s.kind == "intervention"),
            ))
        out.append(Row(r + 1, grid.agreement[r], round(grid.agreement[r] * 100), r == grid.first_divergence, cells))
    return out


def branch_views(grid: AlignedGrid, runs: list[Run]) -> list[BranchView]:
    return [BranchView(b.label, [runs[k].pk for k in b.runs], b.unit is None) for b in grid.branches]


def setting_summaries(columns: list[Column]) -> list[SettingSummary]:
    grouped: dict[str, list[Run]] = {}
    for col in columns:
        grouped.setdefault(col.setting, []).append(col.run)
    out = []
    for name, runs in grouped.items():
        s = summarize_tasks(run_stats(r) for r in runs)
        o = s.overall
        out.append(SettingSummary(
            name=name, runs=o.runs, scored=o.scored, successes=o.successes, success_rate=o.success_rate,
            pass_at_n=s.pass_at[-1] if s.pass_at else None, pass_hat_n=s.pass_hat[-1] if s.pass_hat else None,
            steps_mean=o.steps.mean, steps_p95=o.steps.p95, tokens_mean=o.tokens.mean, span=len(runs),
        ))
    return out


def differing_settings(runs: list[Run]) -> list[tuple[str, int]]:
    out = []
    for by in GROUP_BY:
        distinct = len({setting(r, by) for r in runs})
        if distinct > 1:
            out.append((by, distinct))
    return out


@dataclass
class DiffRow:
    number: int
    a: Any
    b: Any
    relation: str  # same | changed | different | only-a | only-b
    relation_label: str
    similarity: float
    first_divergence: bool


RELATION_TEXT = {
    "same": gettext_lazy("same action"),
    "changed": gettext_lazy("same tool, other arguments"),
    "different": gettext_lazy("different action"),
    "only-a": gettext_lazy("only in A"),
    "only-b": gettext_lazy("only in B"),
}


def relation(a, b) -> str:
    if a is None:
        return "only-b"
    if b is None:
        return "only-a"
    if same_action(a, b):
        return "same"
    return "changed" if a.key[0] == b.key[0] else "different"


# The compare page's charts: smaller than the dashboard's, no legend unless it
# tells two lines apart.
_CHART = {"height": 230, "margin": {"l": 45, "r": 10, "t": 34, "b": 36}, "showlegend": False}


def _distributions(columns: list[Column]) -> list[Chart]:
    grouped: dict[str, list[Run]] = {}
    for col in columns:
        grouped.setdefault(col.setting or _("all runs"), []).append(col.run)
    out = []
    for key, title, value in (("steps", _("Steps per run"), lambda r: r.step_count),
                              ("tokens", _("Tokens per run"), lambda r: r.total_tokens)):
        fig = charts.figure(
            [charts.box([value(r) for r in runs], name=name, boxpoints="all", jitter=0.4, pointpos=0,
                        text=[_("run %(id)s") % {"id": r.pk} for r in runs], hovertemplate="%{text}: %{y}<extra></extra>")
             for name, runs in grouped.items()],
            title=title, yaxis={"rangemode": "tozero"}, **_CHART)
        out.append(Chart(f"chart-{key}", title, fig))
    return out


def _pass_chart(ks: list[int], pass_at: list[float], pass_hat: list[float]) -> Chart:
    # The legend sits mid-right, where pass@k (near 1) and pass^k (falling) leave room.
    fig = charts.figure(
        [charts.lines(ks, pass_at, name="pass@k"), charts.lines(ks, pass_hat, name="pass^k", line={"dash": "dash"})],
        title=_("pass@k (solid) and pass^k (dashed)"), x_title="k", xaxis={"dtick": 1} if len(ks) <= 12 else None,
        yaxis={"range": [0, 1.05]},
        **{**_CHART, "showlegend": True},
        legend={"x": 0.98, "xanchor": "right", "y": 0.5, "yanchor": "middle", "bgcolor": "rgba(255,255,255,0.85)"})
    return Chart("chart-pass", _("pass@k and pass^k"), fig)


def _divergence_chart(grid: AlignedGrid) -> Chart:
    rows = list(range(1, len(grid.rows) + 1))
    # Colour repeats what the grid says in text (row numbers, the ⑂ band).
    colours = [charts.RED if r - 1 == grid.first_divergence else (charts.YELLOW if a < 1 else charts.GREEN)
               for r, a in zip(rows, grid.agreement, strict=True)]
    annotations = []
    if grid.first_divergence is not None:
        annotations.append({"x": grid.first_divergence + 1, "y": 1.02, "text": _("first divergence"), "showarrow": False,
                            "yanchor": "bottom", "font": {"color": charts.RED}})
    fig = charts.figure(
        [charts.bar(rows, grid.agreement, marker={"color": colours},
                    hovertemplate=_("row %{x}: %{y:.0%} agree") + "<extra></extra>")],
        title=_("Agreement per aligned row"), x_title=_("aligned row"), yaxis={"range": [0, 1.15], "tickformat": ".0%"},
        annotations=annotations, **_CHART)
    return Chart("chart-divergence", _("Where the runs diverged"), fig)


def compare_charts(columns: list[Column], grid: AlignedGrid, ks: list[int], pass_at: list[float],
                   pass_hat: list[float]) -> list[Chart]:
    out = _distributions(columns)
    if ks:
        out.append(_pass_chart(ks, pass_at, pass_hat))
    if grid.rows and grid.n_runs > 1:
        out.append(_divergence_chart(grid))
    return out


def diff_rows(grid) -> list[DiffRow]:
    """The rows of a two-run diff (tracing.core.alignment.align's grid)."""
    out = []
    for r, (a, b) in enumerate(grid.rows):
        rel = relation(a, b)
        out.append(DiffRow(r + 1, a, b, rel, RELATION_TEXT[rel], similarity(a, b), r == grid.first_divergence))
    return out
