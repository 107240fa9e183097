"""Line up reruns of the same prompt so that the same action sits on the same row.

Index-based comparison lies as soon as one run takes a detour: every later
step is then "different". We align on *action units* instead: an action (or
final answer, or unparsable turn) together with the thoughts before it and the
observations / interventions after it, keyed by (tool, normalised arguments)
from ``tracing.core.normalize``. Thoughts never take part in the matching: a thought
is not verifiable (DESIGN.md), the action trail is.

Algorithm (pure Python, no Django, no numpy):

1. Segment each run into units (``units_of``).
2. Cluster the distinct action keys into *classes*: same tool and Jaccard of
   normalised arguments >= ``SIMILAR_ARGS_JACCARD`` against the class leader
   (leader clustering through an inverted token index, so near-linear). After
   this a run is a sequence of small ints and comparing two actions is ``==``.
3. Progressive alignment on a centre star: the centre is the run that
   shares most actions with the others (an O(N * L) estimate of the medoid);
   each other run, most similar first, is aligned against the growing profile
   (one column = one future grid row, holding the classes and tools seen there)
   with a Needleman-Wunsch global alignment. That is O(L * M) per run,
   O(N * L^2) in all; a diagonal band caps very long runs (``MAX_DP_CELLS``).
   Runs whose class sequence equals an already placed run are copied, not
   re-aligned (temperature-0 reruns are often identical).
4. Rows where the runs do not all take the same action class mark divergence;
   the first one, with the branches (groups of run positions), is reported.

Inputs are duck-typed: anything with ``index``, ``kind``, ``text``, ``tool`` and
``args`` attributes works (``tracing.core.steps.Step`` or the Django model rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracing.core.normalize import action_key, jaccard

# Two calls of the same tool are "the same action" when their normalised
# arguments share at least half their tokens: reruns rephrase ("Pete Doherty"
# vs "Pete Doherty bands" = 2/3) but a different target ("drawer 1" vs
# "drawer 2" = 1/3) is a different action.
SIMILAR_ARGS_JACCARD = 0.5

# Scores of the global alignment. A match must outweigh the gaps that a detour
# costs, so a shared step after a detour re-synchronises the runs (one match
# pays for two gaps).
MATCH_SCORE = 2.0
# Same tool, different arguments (a rephrased search, another drawer): better
# than a different tool so that two runs that split keep their parallel steps
# on one row (the split is the divergence) instead of staggering them.
SAME_TOOL_SCORE = -0.5
# Different tool on one row: still cheaper than two gaps (2 * GAP_SCORE), so runs
# that go different ways are shown side by side, not as a staircase of gaps.
MISMATCH_SCORE = -1.0
# A unit with no counterpart. Skipping a profile row that few runs occupy costs
# proportionally less (a rare detour of one run must not push the others away).
GAP_SCORE = -1.0

# The comparison page caps selections here (issue 6): beyond it the grid is
# unreadable and the alignment no longer fits the page budget.
MAX_RUNS = 50

# Above this many DP cells for one run against the profile, only a diagonal band
# is filled: it keeps thousand-step runs from taking seconds, and a detour
# longer than the band is then shown as substitutions rather than gaps.
MAX_DP_CELLS = 250_000
# Half-width of that band, in units, on top of the length difference.
BAND_HALF_WIDTH = 64

# Labels for runs with no unit on a row, in the branches of a divergence.
GAP_LABEL = "(gap)"  # the run has more steps later: it skipped this one
ENDED_LABEL = "(ended)"  # the run has no more steps (or none at all)

_GAP = -1
_ENDED = -2
_NEG = float("-inf")

# Phases of a unit: thoughts lead, the action acts, observations trail.
_LEAD, _ACT, _TAIL = 0, 1, 2
_PHASE = {
    "thought": _LEAD,
    "action": _ACT,
    "final": _ACT,
    # An unparsable turn stands where the action would have been.
    "error": _ACT,
    "observation": _TAIL,
    # The watchdog's hint answers the action before it, like an observation.
    "intervention": _TAIL,
}
# Tool names of the keys of non-action units; they cannot clash with a real
# tool because action_key lower-cases and these carry a sentinel character.
_FINAL_TOOL = "\u27c2final"
_ERROR_TOOL = "\u27c2error"
_NO_ACTION_TOOL = "\u27c2none"

_LABEL_CHARS = 80


class StepLike(Protocol):
    index: int
    kind: str
    text: str
    tool: str | None
    args: Any


class AlignmentError(ValueError):
    """Input the alignment refuses (too many runs); the message says why."""


# eq=False: units are compared by identity (their steps may be unhashable rows).
@dataclass(frozen=True, eq=False)
class Unit:
    """One action with the thoughts before it and the observations after it."""

    run: int  # position of the run in the input
    position: int  # ordinal of the unit within its run
    steps: tuple[Any, ...]
    kind: str  # "action", "final", "error", or "thought" when no action was taken
    tool: str | None
    args: Any
    key: tuple[str, frozenset[str]] = field(repr=False, compare=False)

    @property
    def action(self) -> Any | None:
        for step in self.steps:
            if step.kind in ("action", "final", "error"):
                return step
        return None

    @property
    def thoughts(self) -> list[Any]:
        return [s for s in self.steps if s.kind == "thought"]

    @property
    def observations(self) -> list[Any]:
        return [s for s in self.steps if s.kind == "observation"]

    @property
    def interventions(self) -> list[Any]:
        return [s for s in self.steps if s.kind == "intervention"]

    @property
    def first_index(self) -> int:
        return self.steps[0].index

    @property
    def last_index(self) -> int:
        return self.steps[-1].index

    @property
    def label(self) -> str:
        """Short text naming the action, e.g. ``Search[Pete Doherty]``."""
        act = self.action
        if act is None:
            return "(no action)"
        if act.kind == "error":
            text = f"error: {act.text}"
        else:
            args = act.args if act.args is not None else act.text
            if isinstance(args, str):
                shown = args
            else:
                shown = ", ".join(f"{k}={v}" for k, v in args.items()) if isinstance(args, dict) else str(args)
            tool = act.tool or ("Finish" if act.kind == "final" else "")
            text = f"{tool}[{shown}]" if tool else shown
        text = " ".join(text.split())
        return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "\u2026"


@dataclass(frozen=True)
class Branch:
    """Runs that did the same thing on one row of the grid."""

    label: str  # the action's label, GAP_LABEL or ENDED_LABEL
    runs: tuple[int, ...]  # positions of the runs (input order)
    unit: Unit | None  # a representative unit; None for a gap / ended run


@dataclass
class AlignedGrid:
    """Runs side by side: ``rows[r][k]`` is run k's unit on row r, or None (a gap)."""

    rows: list[list[Unit | None]]
    n_runs: int
    # Per row: share of runs that took the row's most common action (gaps never
    # count as agreeing). 1.0 = every run did the same thing.
    agreement: list[float]
    # First row where the runs do not all take the same action; None when they
    # never split (also for one run, or for runs with no steps at all).
    first_divergence: int | None
    # Who went which way on that row, the biggest group first; [] if no divergence.
    branches: list[Branch]
    _classes: list[list[int]] = field(repr=False, default_factory=list)

    def branches_at(self, row: int) -> list[Branch]:
        """The groups of runs on any row (largest first, gaps last)."""
        return _branches(self.rows[row], self._classes[row])

    def column(self, run: int) -> list[Unit | None]:
        return [row[run] for row in self.rows]


def units_of(steps: Sequence[StepLike], run: int = 0) -> list[Unit]:
    """Split one run's steps (in index order) into action units.

    A new unit starts when a step belongs to an earlier phase than the current
    unit has reached (a thought after an observation), or when a second action
    comes. Observations before any action and thoughts after the last one form
    units of kind "thought" with no action.
    """
    units: list[Unit] = []
    current: list[Any] = []
    phase = -1
    for step in steps:
        p = _PHASE.get(step.kind, _TAIL)
        if current and (p < phase or (p == _ACT and phase >= _ACT)):
            units.append(_make_unit(current, run, len(units)))
            current = []
        current.append(step)
        phase = max(phase, p) if len(current) > 1 else p
    if current:
        units.append(_make_unit(current, run, len(units)))
    return units


def _make_unit(steps: list[Any], run: int, position: int) -> Unit:
    act = next((s for s in steps if _PHASE.get(s.kind) == _ACT), None)
    if act is None:
        return Unit(run, position, tuple(steps), "thought", None, None, (_NO_ACTION_TOOL, frozenset()))
    if act.kind == "error":
        # Errors differ in wording but all mean "this turn produced no action".
        key: tuple[str, frozenset[str]] = (_ERROR_TOOL, frozenset())
    elif act.kind == "final":
        # Every way to finish shares one tool; the answer decides same/different.
        key = (_FINAL_TOOL, action_key(None, act.args if act.args is not None else act.text)[1])
    else:
        payload = act.args if act.args is not None else ("" if act.tool else act.text)
        key = action_key(act.tool, payload)
    return Unit(run, position, tuple(steps), act.kind, act.tool, act.args, key)


def similarity(a: Unit | None, b: Unit | None) -> float:
    """Jaccard of the normalised arguments when the tools match, else 0.0."""
    if a is None or b is None or a.key[0] != b.key[0]:
        return 0.0
    return jaccard(a.key[1], b.key[1])


def same_action(a: Unit | None, b: Unit | None) -> bool:
    return similarity(a, b) >= SIMILAR_ARGS_JACCARD


class _Classes:
    """Leader clustering of action keys: a key joins the most similar class of
    its tool whose leader it matches, else founds one. Order-dependent and not
    transitive (A~B, B~C, A!~C may end in one class); fine for display."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, frozenset[str]], int] = {}
        self.tool_of: list[str] = []
        self._leaders: list[frozenset[str]] = []
        self._index: dict[tuple[str, str], list[int]] = {}
        self._empty: dict[str, int] = {}

    def of(self, key: tuple[str, frozenset[str]]) -> int:
        cid = self.by_key.get(key)
        if cid is not None:
            return cid
        tool, toks = key
        if not toks:
            # Only another argument-less call is similar (jaccard of empties).
            cid = self._empty.get(tool)
            if cid is None:
                cid = self._new(tool, toks)
                self._empty[tool] = cid
        else:
            best, best_sim = -1, SIMILAR_ARGS_JACCARD
            candidates = {c for t in toks for c in self._index.get((tool, t), ())}
            for c in sorted(candidates):
                sim = jaccard(toks, self._leaders[c])
                if sim > best_sim or (sim == best_sim and best < 0):
                    best, best_sim = c, sim
            if best < 0:
                best = self._new(tool, toks)
                for t in toks:
                    self._index.setdefault((tool, t), []).append(best)
            cid = best
        self.by_key[key] = cid
        return cid

    def _new(self, tool: str, toks: frozenset[str]) -> int:
        self.tool_of.append(tool)
        self._leaders.append(toks)
        return len(self._leaders) - 1


def align_runs(runs: Sequence[Sequence[StepLike]]) -> AlignedGrid:
    """Align N runs (each a sequence of steps in index order), one column per run."""
    if len(runs) > MAX_RUNS:
        raise AlignmentError(f"at most {MAX_RUNS} runs can be aligned at once, got {len(runs)}")
    n = len(runs)
    units = [units_of(list(steps), run=k) for k, steps in enumerate(runs)]
    classes = _Classes()
    seqs = [[classes.of(u.key) for u in us] for us in units]
    placement = _progressive(seqs, classes.tool_of)
    n_rows = max((max(p) + 1 for p in placement if p), default=0)

    rows: list[list[Unit | None]] = [[None] * n for _ in range(n_rows)]
    cls_rows: list[list[int]] = [[_GAP] * n for _ in range(n_rows)]
    for k, cols in enumerate(placement):
        for pos, r in enumerate(cols):
            rows[r][k] = units[k][pos]
            cls_rows[r][k] = seqs[k][pos]
        last = cols[-1] if cols else -1
        for r in range(last + 1, n_rows):
            cls_rows[r][k] = _ENDED

    agreement = []
    first: int | None = None
    for r, cls in enumerate(cls_rows):
        counts = Counter(c for c in cls if c >= 0)
        top = counts.most_common(1)[0][1] if counts else 0
        agreement.append(top / n)
        if first is None and n > 1 and top < n:
            first = r
    branches = _branches(rows[first], cls_rows[first]) if first is not None else []
    return AlignedGrid(rows, n, agreement, first, branches, cls_rows)


def align(a: Sequence[StepLike], b: Sequence[StepLike]) -> AlignedGrid:
    """Focused two-run diff: the same alignment with two columns (0 = a, 1 = b).

    Use ``similarity(row[0], row[1])`` to shade how close the two calls are.
    """
    return align_runs([a, b])


def _branches(row: list[Unit | None], cls: list[int]) -> list[Branch]:
    groups: dict[int, list[int]] = {}
    for k, c in enumerate(cls):
        groups.setdefault(c, []).append(k)
    out = []
    for c, members in groups.items():
        if c >= 0:
            unit = row[members[0]]
            out.append(Branch(unit.label if unit else "", tuple(members), unit))
        else:
            out.append(Branch(GAP_LABEL if c == _GAP else ENDED_LABEL, tuple(members), None))
    # Actions before gaps, bigger groups first, then by first run position.
    out.sort(key=lambda b: (b.unit is None, -len(b.runs), b.runs[0]))
    return out


def _centre_order(seqs: list[list[int]]) -> list[int]:
    """Runs in alignment order: the estimated medoid first, then by overlap with it.

    Sum over others of |r| + |s| - 2 * shared is minimised by maximising
    2 * sum(df[c] - 1 for c in set(r)) - (N - 1) * |r|, with df the number of
    runs containing class c: O(N * L) instead of N^2 pairwise alignments.
    """
    n = len(seqs)
    sets = [set(s) for s in seqs]
    df: Counter[int] = Counter()
    for s in sets:
        df.update(s)
    score = [2 * sum(df[c] - 1 for c in sets[k]) - (n - 1) * len(seqs[k]) for k in range(n)]
    centre = max(range(n), key=lambda k: (score[k], len(seqs[k]) > 0, -k))
    rest = sorted((k for k in range(n) if k != centre), key=lambda k: (-len(sets[k] & sets[centre]), k))
    return [centre, *rest]


def _progressive(seqs: list[list[int]], tool_of: list[str]) -> list[list[int]]:
    """Place every run's units on profile columns; returns per run the column of
    each of its units (increasing)."""
    placement: list[list[int]] = [[] for _ in seqs]
    if not seqs:
        return placement
    order = _centre_order(seqs)
    # The profile: per column, the classes and tools seen there and how many runs
    # occupy it. Columns are kept in a Python list and re-numbered after each run.
    col_cls: list[set[int]] = []
    col_tools: list[set[str]] = []
    col_occ: list[int] = []
    # Columns are identified by a stable id while the list grows by insertion.
    col_ids: list[int] = []
    next_id = 0
    run_cols: dict[int, list[int]] = {}  # run -> stable column ids
    done: dict[tuple[int, ...], int] = {}  # class sequence -> a run already placed
    aligned = 0
    for k in order:
        seq = seqs[k]
        if not seq:
            run_cols[k] = []
            continue
        twin = done.get(tuple(seq))
        if twin is not None:
            ids = run_cols[twin]
            pos_of = {cid: j for j, cid in enumerate(col_ids)}
            for c, cid in zip(seq, ids, strict=True):
                j = pos_of[cid]
                col_cls[j].add(c)
                col_occ[j] += 1
            run_cols[k] = ids
            aligned += 1
            continue
        path = _nw(seq, col_cls, col_tools, col_occ, aligned, tool_of)
        # Rebuild the profile following the path: (i, j) pairs, None for gaps.
        new_cls: list[set[int]] = []
        new_tools: list[set[str]] = []
        new_occ: list[int] = []
        new_ids: list[int] = []
        mine: list[int] = []
        for i, j in path:
            if j is None:
                new_cls.append(set())
                new_tools.append(set())
                new_occ.append(0)
                new_ids.append(next_id)
                next_id += 1
            else:
                new_cls.append(col_cls[j])
                new_tools.append(col_tools[j])
                new_occ.append(col_occ[j])
                new_ids.append(col_ids[j])
            if i is not None:
                c = seq[i]
                new_cls[-1].add(c)
                new_tools[-1].add(tool_of[c])
                new_occ[-1] += 1
                mine.append(new_ids[-1])
        col_cls, col_tools, col_occ, col_ids = new_cls, new_tools, new_occ, new_ids
        run_cols[k] = mine
        done[tuple(seq)] = k
        aligned += 1
    final_pos = {cid: j for j, cid in enumerate(col_ids)}
    for k, ids in run_cols.items():
        placement[k] = [final_pos[cid] for cid in ids]
    return placement


def _nw(
    seq: list[int],
    col_cls: list[set[int]],
    col_tools: list[set[str]],
    col_occ: list[int],
    aligned: int,
    tool_of: list[str],
) -> list[tuple[int | None, int | None]]:
    """Global alignment of one run against the profile.

    Runs on the *reversed* sequences so that the traceback, which prefers the
    diagonal, walks the original order from the start: among equal-score
    alignments, matches come as early as possible. A run that goes away and
    comes back to the same action is then shown agreeing first and detouring
    after, which is what puts the first divergence on the right row.
    """
    n, m = len(seq), len(col_cls)
    if m == 0:
        return [(i, None) for i in range(n)]
    rseq = seq[::-1]
    rcls = col_cls[::-1]
    rtools = col_tools[::-1]
    # Skipping a column costs in proportion to the runs that occupy it.
    skip = [GAP_SCORE * occ / aligned for occ in col_occ[::-1]]
    gap = GAP_SCORE

    # Full matrix when affordable; else a band around the diagonal that is wide
    # enough for the length difference plus BAND_HALF_WIDTH of shifting.
    half = BAND_HALF_WIDTH + abs(n - m) if n * m > MAX_DP_CELLS else max(n, m)
    ratio = m / n

    prev = [_NEG] * (m + 1)
    prev[0] = 0.0
    acc = 0.0
    for j in range(1, min(m, half) + 1):
        acc += skip[j - 1]
        prev[j] = acc
    # 0 = diagonal, 1 = up (the run's unit opens a new column), 2 = left (skip column).
    trace: list[bytearray] = [bytearray([2]) * (m + 1)]
    for i in range(1, n + 1):
        c = rseq[i - 1]
        tool = tool_of[c]
        centre = int(i * ratio)
        lo = max(1, centre - half)
        hi = min(m, centre + half)
        cur = [_NEG] * (m + 1)
        tb = bytearray(m + 1)
        if lo == 1:
            cur[0] = prev[0] + gap
            tb[0] = 1
        left = cur[lo - 1]
        for j in range(lo, hi + 1):
            cls = rcls[j - 1]
            if c in cls:
                s = MATCH_SCORE
            elif tool in rtools[j - 1]:
                s = SAME_TOOL_SCORE
            else:
                s = MISMATCH_SCORE
            d = prev[j - 1] + s
            u = prev[j] + gap
            lft = left + skip[j - 1]
            if d >= u and d >= lft:
                left = d
            elif u >= lft:
                left = u
                tb[j] = 1
            else:
                left = lft
                tb[j] = 2
            cur[j] = left
        prev = cur
        trace.append(tb)
    return _traceback(trace, n, m)


def _traceback(trace: list[bytearray], n: int, m: int) -> list[tuple[int | None, int | None]]:
    """The alignment path from the end of the reversed sequences = the start of the originals."""
    path: list[tuple[int | None, int | None]] = []
    i, j = n, m
    while i > 0 or j > 0:
        move = trace[i][j] if i > 0 else 2
        if j == 0:
            move = 1
        if move == 0:
            path.append((n - i, m - j))
            i -= 1
            j -= 1
        elif move == 1:
            path.append((n - i, None))
            i -= 1
        else:
            path.append((None, m - j))
            j -= 1
    return path
