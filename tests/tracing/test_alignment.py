from __future__ import annotations

from collections import defaultdict

import pytest

from tests.eval_data import eval_runs
from tracing.core import alignment
from tracing.core.alignment import (
    ENDED_LABEL,
    GAP_LABEL,
    MAX_RUNS,
    SIMILAR_ARGS_JACCARD,
    AlignedGrid,
    AlignmentError,
    align,
    align_runs,
    same_action,
    similarity,
    units_of,
)
from tracing.core.normalize import jaccard, normalize_args
from tracing.core.steps import Step, read_jsonl


def run(*actions: str) -> list[Step]:
    """Steps from compact actions: "Search:query" -> thought, action, observation;
    "=answer" -> thought, final."""
    steps: list[Step] = []
    for act in actions:
        steps.append(Step(len(steps), "thought", f"I will {act}"))
        if act.startswith("="):
            steps.append(Step(len(steps), "final", act[1:], tool="Finish", args=act[1:]))
            continue
        tool, _, args = act.partition(":")
        steps.append(Step(len(steps), "action", f"{tool}[{args}]", tool=tool, args=args))
        steps.append(Step(len(steps), "observation", f"result of {args}", tool=tool))
    return steps


def labels(grid: AlignedGrid) -> list[list[str | None]]:
    return [[u.label if u else None for u in row] for row in grid.rows]


def check_invariants(grid: AlignedGrid, runs: list[list[Step]]) -> None:
    """Every unit of every run appears once, in its own column, in order."""
    assert grid.n_runs == len(runs)
    assert len(grid.agreement) == len(grid.rows)
    for k, steps in enumerate(runs):
        placed = [u for u in grid.column(k) if u is not None]
        expected = units_of(steps, run=k)
        assert [u.position for u in placed] == list(range(len(expected)))
        assert [u.steps for u in placed] == [u.steps for u in expected]
        assert all(u.run == k for u in placed)
    for row in grid.rows:
        assert any(u is not None for u in row)  # no all-gap row


# -- hand-made cases ---------------------------------------------------------


def test_identical_runs_agree_everywhere():
    runs = [run("Search:eiffel tower", "Lookup:height", "=330 m") for _ in range(3)]
    grid = align_runs(runs)
    check_invariants(grid, runs)
    assert len(grid.rows) == 3
    assert all(u is not None for row in grid.rows for u in row)
    assert grid.agreement == [1.0, 1.0, 1.0]
    assert grid.first_divergence is None
    assert grid.branches == []
    # The thought before and the observation after travel with the action.
    unit = grid.rows[0][1]
    assert [s.kind for s in unit.steps] == ["thought", "action", "observation"]
    assert unit.label == "Search[eiffel tower]"


def test_inserted_detour_shows_as_gaps_not_a_shifted_staircase():
    a = run("Search:eiffel tower", "Search:gustave eiffel", "Lookup:height", "=330 m")
    b = run("Search:eiffel tower", "Search:paris weather", "Search:gustave eiffel", "Lookup:height", "=330 m")
    grid = align_runs([a, b])
    check_invariants(grid, [a, b])
    assert labels(grid) == [
        ["Search[eiffel tower]", "Search[eiffel tower]"],
        [None, "Search[paris weather]"],
        ["Search[gustave eiffel]", "Search[gustave eiffel]"],
        ["Lookup[height]", "Lookup[height]"],
        ["Finish[330 m]", "Finish[330 m]"],
    ]
    assert grid.first_divergence == 1
    assert [(br.label, br.runs) for br in grid.branches] == [("Search[paris weather]", (1,)), (GAP_LABEL, (0,))]
    assert grid.agreement == [1.0, 0.5, 1.0, 1.0, 1.0]


def test_runs_that_split_at_step_3_stay_side_by_side():
    common = ("Search:alpha centauri", "Lookup:distance", "Search:proxima b")
    a = run(*common, "Search:habitable zone", "=yes")
    b = run(*common, "Search:habitable zone", "=yes")
    c = run(*common, "Calculate:4.24 * 9.46", "=no")
    grid = align_runs([a, b, c])
    check_invariants(grid, [a, b, c])
    assert grid.first_divergence == 3
    assert [(br.label, br.runs) for br in grid.branches] == [
        ("Search[habitable zone]", (0, 1)),
        ("Calculate[4.24 * 9.46]", (2,)),
    ]
    # A split is a substitution on one row (MISMATCH_SCORE < 2 * GAP_SCORE), not gaps.
    assert len(grid.rows) == 5
    assert grid.agreement[3] == pytest.approx(2 / 3)
    assert labels(grid)[4] == ["Finish[yes]", "Finish[yes]", "Finish[no]"]
    assert grid.agreement[4] == pytest.approx(2 / 3)


def test_gap_inside_a_run_and_a_run_that_ended():
    full = run("Search:one", "Search:two", "Search:three")
    skipped = run("Search:one", "Search:three")
    short = run("Search:one", "Search:two")
    grid = align_runs([full, skipped, short])
    check_invariants(grid, [full, skipped, short])
    assert labels(grid) == [
        ["Search[one]", "Search[one]", "Search[one]"],
        ["Search[two]", None, "Search[two]"],
        ["Search[three]", "Search[three]", None],
    ]
    assert grid.first_divergence == 1
    assert [(br.label, br.runs) for br in grid.branches_at(1)] == [("Search[two]", (0, 2)), (GAP_LABEL, (1,))]
    assert [(br.label, br.runs) for br in grid.branches_at(2)] == [("Search[three]", (0, 1)), (ENDED_LABEL, (2,))]


def test_run_that_returns_to_the_same_action_agrees_first_then_detours():
    a = run("Search:saturn moons", "Lookup:titan", "=titan")
    b = run("Search:saturn moons", "Lookup:titan", "Search:jupiter moons", "Lookup:titan", "=titan")
    grid = align_runs([a, b])
    check_invariants(grid, [a, b])
    # a's Lookup pairs with b's *first* Lookup: the runs really did the same at step 1.
    assert grid.rows[1][1].position == 1
    assert labels(grid) == [
        ["Search[saturn moons]", "Search[saturn moons]"],
        ["Lookup[titan]", "Lookup[titan]"],
        [None, "Search[jupiter moons]"],
        [None, "Lookup[titan]"],
        ["Finish[titan]", "Finish[titan]"],
    ]
    assert grid.first_divergence == 2


def test_finals_with_different_answers_share_the_last_row():
    # SAME_TOOL_SCORE > MISMATCH_SCORE: the two finals pair up rather than one
    # final facing another run's search.
    a = run("Search:capital of australia", "=sydney")
    b = run("Search:capital of australia", "Search:canberra", "=canberra")
    grid = align_runs([a, b])
    assert labels(grid) == [
        ["Search[capital of australia]", "Search[capital of australia]"],
        [None, "Search[canberra]"],
        ["Finish[sydney]", "Finish[canberra]"],
    ]


def test_one_run():
    steps = run("Search:x ray", "=done")
    grid = align_runs([steps])
    check_invariants(grid, [steps])
    assert len(grid.rows) == 2
    assert grid.first_divergence is None
    assert grid.agreement == [1.0, 1.0]


def test_no_runs_and_runs_with_zero_steps():
    assert align_runs([]).rows == []
    empty = align_runs([[], []])
    assert empty.rows == [] and empty.first_divergence is None
    steps = run("Search:x ray", "=done")
    grid = align_runs([[], steps])
    check_invariants(grid, [[], steps])
    assert grid.first_divergence == 0
    assert [(br.label, br.runs) for br in grid.branches] == [("Search[x ray]", (1,)), (ENDED_LABEL, (0,))]


def test_unequal_lengths_many_runs():
    runs = [run(*[f"Search:topic {i}" for i in range(n)]) for n in (0, 1, 5, 9, 3)]
    grid = align_runs(runs)
    check_invariants(grid, runs)
    assert len(grid.rows) == 9
    assert grid.first_divergence == 0  # the empty run


def test_run_limit():
    steps = run("Search:a b")
    assert align_runs([steps] * MAX_RUNS).first_divergence is None
    with pytest.raises(AlignmentError, match=f"at most {MAX_RUNS} runs"):
        align_runs([steps] * (MAX_RUNS + 1))


def test_pairwise_align_is_a_two_column_grid():
    a = run("Search:pete doherty", "=pete")
    b = run("Search:pete doherty bands", "=pete")
    grid = align(a, b)
    assert grid.n_runs == 2 and len(grid.rows) == 2
    assert grid.first_divergence is None
    assert similarity(*grid.rows[0]) == pytest.approx(2 / 3)
    assert similarity(*grid.rows[1]) == 1.0


# -- the similarity threshold, both sides --------------------------------------


def test_similar_args_threshold_both_sides():
    at = ("Search:alpha bravo charlie", "Search:alpha bravo charlie delta echo foxtrot")  # 3/6
    below = ("Search:alpha bravo charlie", "Search:alpha bravo charlie delta echo foxtrot golf")  # 3/7
    assert jaccard(normalize_args("alpha bravo charlie"), normalize_args("alpha bravo charlie delta echo foxtrot")) == (
        SIMILAR_ARGS_JACCARD
    )
    grid_at = align_runs([run(at[0], "=x"), run(at[1], "=x")])
    assert grid_at.first_divergence is None
    assert same_action(*grid_at.rows[0])
    grid_below = align_runs([run(below[0], "=x"), run(below[1], "=x")])
    assert grid_below.first_divergence == 0
    assert not same_action(*grid_below.rows[0])
    # Still one row: same tool, different request.
    assert len(grid_below.rows) == 2


def test_same_args_different_tool_is_a_different_action():
    grid = align_runs([run("Search:eiffel tower"), run("Lookup:eiffel tower")])
    assert grid.first_divergence == 0
    assert similarity(*grid.rows[0]) == 0.0


def test_json_and_text_args_of_one_request_align():
    a = [Step(0, "action", "", tool="search", args={"query": "Eiffel Tower", "k": 3})]
    b = [Step(0, "action", "", tool="Search", args='{"k": 3, "query": "eiffel tower"}')]
    assert align(a, b).first_divergence is None


def test_band_beyond_max_dp_cells(monkeypatch):
    # b is a shifted by 10 units. Full DP: 10 gaps each side, the shared 30 match.
    a = run(*[f"Lookup:x{i} prelude" for i in range(10)], *[f"Search:shared {i}" for i in range(30)])
    b = run(*[f"Search:shared {i}" for i in range(30)], *[f"Calculate:{i} + {i}" for i in range(10)])
    full = align_runs([a, b])
    assert len(full.rows) == 50
    assert sum(1 for ag in full.agreement if ag == 1.0) == 30
    # Beyond MAX_DP_CELLS only a band is filled: a shift wider than the band
    # degrades to substitutions, but every unit is still placed once, in order.
    monkeypatch.setattr(alignment, "MAX_DP_CELLS", 40 * 40 - 1)
    monkeypatch.setattr(alignment, "BAND_HALF_WIDTH", 4)
    banded = align_runs([a, b])
    check_invariants(banded, [a, b])
    assert len(banded.rows) < 50
    monkeypatch.setattr(alignment, "MAX_DP_CELLS", 40 * 40)
    assert len(align_runs([a, b]).rows) == 50


# -- units ---------------------------------------------------------------------


def test_units_attach_interventions_and_keep_thought_only_tails():
    steps = [
        Step(0, "thought", "think"),
        Step(1, "action", "Search[x]", tool="Search", args="x"),
        Step(2, "observation", "nothing", tool="Search"),
        Step(3, "intervention", "you tried this", meta={"detector": "repetition"}),
        Step(4, "action", "Search[y]", tool="Search", args="y"),
        Step(5, "action", "Search[z]", tool="Search", args="z"),
        Step(6, "error", "could not parse"),
        Step(7, "observation", "Invalid format"),
        Step(8, "thought", "out of budget"),
    ]
    units = units_of(steps)
    assert [[s.index for s in u.steps] for u in units] == [[0, 1, 2, 3], [4], [5], [6, 7], [8]]
    assert [u.kind for u in units] == ["action", "action", "action", "error", "thought"]
    assert len(units[0].interventions) == 1 and units[0].thoughts[0].text == "think"
    assert units[3].label.startswith("error:")
    assert units[4].label == "(no action)" and units[4].action is None


def test_error_units_line_up_whatever_their_wording():
    a = [Step(0, "error", "bad json at 3"), Step(1, "action", "", tool="finish", args="x")]
    b = [Step(0, "error", "unexpected token"), Step(1, "action", "", tool="finish", args="x")]
    assert align(a, b).first_divergence is None


def test_duck_typed_steps():
    class Row:
        def __init__(self, index: int, kind: str, tool: str | None = None, args: object = None) -> None:
            self.index, self.kind, self.text, self.tool, self.args = index, kind, "", tool, args

    grid = align([Row(0, "action", "Search", "a b")], [Row(0, "action", "Search", "a b"), Row(1, "final", None, "c")])
    assert grid.first_divergence == 1


# -- real trajectories ---------------------------------------------------------


def load(source: str):
    path = eval_runs(source)
    return list(read_jsonl(path))


def common_prefix(unit_lists) -> int:
    """Leading units on which every run took the very same (tool, args) key."""
    n = 0
    while all(len(us) > n for us in unit_lists) and len({us[n].key for us in unit_lists}) == 1:
        n += 1
    return n


def test_reflexion_trials_line_up_their_shared_first_search():
    groups = defaultdict(list)
    for t in load("reflexion_hotpotqa"):
        groups[t.task].append(t)
    shared_first = 0
    for trials in groups.values():
        runs = [t.steps for t in trials]
        grid = align_runs(runs)
        check_invariants(grid, runs)
        units = [units_of(s, run=k) for k, s in enumerate(runs)]
        prefix = common_prefix(units)
        if prefix:
            shared_first += 1
            # Row 0 holds every trial's first Search, all agreeing.
            assert [u.position for u in grid.rows[0]] == [0] * len(runs)
            assert grid.rows[0][0].tool == "Search"
            assert grid.agreement[0] == 1.0
        # Nothing diverges inside the identical opening...
        assert all(ag == 1.0 for ag in grid.agreement[:prefix])
        if grid.first_divergence is not None:
            assert grid.first_divergence >= prefix
            # ...and the branches at the divergence split all trials between them.
            members = sorted(k for br in grid.branches for k in br.runs)
            assert members == list(range(len(runs)))
            assert len(grid.branches) >= 2
        else:
            assert all(ag == 1.0 for ag in grid.agreement)
    assert shared_first >= 50  # most questions start every trial with the same search


def test_alfworld_same_game_by_different_models():
    groups = defaultdict(list)
    for t in load("alfworld_sala"):
        groups[t.meta.get("game_file")].append(t)
    multi = [g for g in groups.values() if len({t.meta.get("model") for t in g}) >= 3]
    assert multi
    for trials in multi:
        runs = [t.steps for t in trials]
        grid = align_runs(runs)
        check_invariants(grid, runs)
        prefix = common_prefix([units_of(s, run=k) for k, s in enumerate(runs)])
        assert all(ag == 1.0 for ag in grid.agreement[:prefix])
        if prefix:
            assert grid.first_divergence is None or grid.first_divergence >= prefix
        # Long looping runs stay compact: alignment re-synchronises shared steps.
        assert len(grid.rows) < sum(len(units_of(s)) for s in runs)
