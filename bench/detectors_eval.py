"""The watchdog on the real trajectories of ../shared/eval (issue 11).

Per source, with the policy replayed as if live (``tracing.core.replay``: a stop
ends the run): share of succeeded runs with any intervention (target <= 10%)
and with a stop (target <= 1%); share of failed runs stopped; steps saved =
share of the failed runs' steps that come after the stop. The same figures
for a naive watchdog measured in the same run, in two variants:

  naive/row  stop at the 3rd identical call in a row (consecutive tool calls;
             thoughts, replies and user turns between them do not break the
             row) or the 3rd invalid result in a row (consecutive tool results);
  naive/run  stop at the 3rd identical call anywhere in the run or the 3rd
             invalid result anywhere in the run.

"Identical" = same tool and byte-identical arguments after canonical JSON
(sorted keys) or white-space normalisation; "invalid" = a tool result that
``read_result`` reads as error / empty / timeout (user turns never count). A
naive stop at a call saves the steps after that call.

Then a sweep of the policy's stop aggressiveness (ladder.cooldown, tiers
without redirect, stop_futile, stop_invalid, stop_streak; fields main does not
know are skipped) printed per source as succeeded-stop rate vs steps saved,
next to the naive points, and the best point at no more false kills than the
naive one. Then equal false kills (issue 26): per source, for at most 0, 1, 2
succeeded runs stopped, the best point of that sweep against the best point of
the naive rule's own sweep (the Nth identical call in a row or anywhere, the
Nth invalid result in a row, N in 2..6, each arm on or off), with a verdict. Then: where the default policy stops the long identical-call loops
of tau2 (the 96 x get_details_by_id run; target <= 10th identical call); how
many legitimate no-argument repeats in tau2 (a user turn or another successful
call since the previous one) get an intervention (should be ~0); the time of
``python -m tracing.detect`` over all of shared/eval concatenated, on one core
(target < 30 s); the detectors' own flags with interventions off.

Run (measures the checkout that provides ``tracing``):
    .venv/bin/python bench/detectors_eval.py [--policy NAME_OR_JSON] [--eval DIR] [--no-speed]
    PYTHONPATH=/work/main /work/main/.venv/bin/python bench/detectors_eval.py   # another checkout's detectors

``--smoke``: the same on a few short runs per source (bench/_paths.py), seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import describe, eval_dir, setup_code_path  # noqa: E402

CODE_ROOT = setup_code_path()

from corruptions import is_call, is_result, is_user, pair_results  # noqa: E402

from tracing.core.replay import replay  # noqa: E402
from tracing.core.results import read_result  # noqa: E402
from tracing.core.steps import Step, Trajectory, read_jsonl  # noqa: E402
from tracing.core.watchdog import OFF_POLICY, Policy, PolicyError  # noqa: E402
from tracing.detect import load_policy  # noqa: E402

TARGET_OK_INTERVENED = 0.10
TARGET_OK_STOPPED = 0.01
TARGET_LOOP_CALLS = 10
TARGET_DETECT_SECONDS = 30.0
LOOP_MIN_CALLS = 10  # identical calls that make a "long loop" worth printing
NAIVE_NTH = 3
NAIVE_NS = range(2, 7)  # the naive rule's thresholds, swept
BUDGETS = (0, 1, 2)  # succeeded runs stopped per source: the equal-false-kills budgets
DETECTORS = ("repetition", "observation", "stagnation", "drift")

# Stop aggressiveness, one knob at a time from the policy under test, then all
# at once. Values for fields the policy does not have are skipped.
SWEEP: list[tuple[str, dict[str, Any]]] = [
    ("cooldown=0", {"ladder": {"cooldown": 0}}),
    ("cooldown=1", {"ladder": {"cooldown": 1}}),
    ("cooldown=2", {"ladder": {"cooldown": 2}}),
    ("tiers=hint,stop", {"ladder": {"tiers": ["hint", "stop"]}}),
    ("tiers=stop", {"ladder": {"tiers": ["stop"]}}),
    ("stop_futile=1", {"ladder": {"stop_futile": 1}}),
    ("stop_futile=3", {"ladder": {"stop_futile": 3}}),
    ("stop_invalid=3", {"ladder": {"stop_invalid": 3}}),
    ("stop_invalid=4", {"ladder": {"stop_invalid": 4}}),
    ("stop_invalid=7", {"ladder": {"stop_invalid": 7}}),
    ("stop_streak=6", {"ladder": {"stop_streak": 6}}),
    ("stop_streak=8", {"ladder": {"stop_streak": 8}}),
    ("stop_streak=14", {"ladder": {"stop_streak": 14}}),
    (
        "all aggressive",
        {
            "ladder": {
                "cooldown": 0,
                "tiers": ["hint", "stop"],
                "stop_futile": 1,
                "stop_invalid": 3,
                "stop_streak": 6,
            }
        },
    ),
    # Ignored interventions (issue 26): off, or fewer of them to stop.
    ("ignored_within=0", {"ladder": {"ignored_within": 0}}),
    ("ignored_stop=1", {"ladder": {"ignored_stop": 1}}),
    ("ignored_stop=2", {"ladder": {"ignored_stop": 2}}),
    # The same call made N times anywhere in the run, after a hint (off by default).
    *[(f"stop_repeat={n}", {"ladder": {"stop_repeat": n}}) for n in (2, 3, 4)],
    # Its stop grounds with no ladder, over the naive rule's own grid: the same
    # call N times anywhere (N 2..5) or M unusable results in a row (M 3..6, or off),
    # so that at equal false kills the comparison is family against family.
    *[
        (f"no ladder, stop_repeat={n}, stop_invalid={m}",
         {"ladder": {"tiers": ["stop"], "cooldown": 0, "stop_repeat": n, "stop_invalid": m, "stop_futile": 99,
                     "stop_streak": 99, "fast_futile": 0}, "use_complexity": False})
        for n in (2, 3, 4, 5) for m in (3, 4, 5, 6, 99)
    ],
    # The same with the call counted in a row (no other call between), the
    # naive rule's other call arm.
    *[
        (f"no ladder, stop_in_a_row={n}, stop_invalid={m}",
         {"ladder": {"tiers": ["stop"], "cooldown": 0, "stop_in_a_row": n, "stop_invalid": m, "stop_futile": 99,
                     "stop_streak": 99, "fast_futile": 0}, "use_complexity": False})
        for n in (2, 3, 4, 5) for m in (3, 4, 5, 6, 99)
    ],
    # Milder than the default, for sources where it already stops successes.
    ("mild", {"ladder": {"stop_invalid": 7, "fast_futile": 0, "stop_futile": 3}}),
    ("tiers=hint,redirect", {"ladder": {"tiers": ["hint", "redirect"]}}),
    # The policy's stop gates over the naive rule's range, no ladder, no
    # complexity scaling: unusable results in a row N (2..6), the first futile
    # repeat, six turns without progress.
    *[
        (
            f"no ladder, stop_invalid={n}",
            {
                "ladder": {"tiers": ["stop"], "cooldown": 0, "stop_futile": 1, "stop_invalid": n, "stop_streak": 6},
                "use_complexity": False,
            },
        )
        for n in range(2, 7)
    ],
]


def pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:5.1f}% ({num}/{den})" if den else "    n/a"


def share(num: int, den: int) -> float:
    return num / den if den else 0.0


def mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# ---------------------------------------------------------------------------
# Per-source figures for one stopping rule
# ---------------------------------------------------------------------------
@dataclass
class Figures:
    ok: int = 0
    ok_intervened: int = 0
    ok_stopped: int = 0
    failed: int = 0
    failed_stopped: int = 0
    failed_steps: int = 0
    failed_saved: int = 0
    stop_positions: list[float] = field(default_factory=list)

    def add(self, traj: Trajectory, intervened: bool, stop_pos: int | None) -> None:
        n = len(traj.steps)
        if traj.success:
            self.ok += 1
            self.ok_intervened += intervened
            self.ok_stopped += stop_pos is not None
            return
        self.failed += 1
        self.failed_steps += n
        if stop_pos is not None:
            self.failed_stopped += 1
            self.failed_saved += n - 1 - stop_pos
            self.stop_positions.append(stop_pos / max(1, n - 1))

    @property
    def saved(self) -> float:
        return share(self.failed_saved, self.failed_steps)

    @property
    def false_kill(self) -> float:
        return share(self.ok_stopped, self.ok)


def position_of(traj: Trajectory, index: int | None) -> int | None:
    if index is None:
        return None
    return next((p for p, s in enumerate(traj.steps) if s.index == index), None)


def measure(data: dict[str, list[Trajectory]], policy: Policy) -> tuple[dict[str, Figures], dict[str, list[Any]]]:
    figs: dict[str, Figures] = {}
    replays: dict[str, list[Any]] = {}
    for source, trajs in data.items():
        f = Figures()
        reps = []
        for traj in trajs:
            rep = replay(traj.steps, goal=traj.goal, policy=policy, context=traj.context)
            reps.append(rep)
            f.add(traj, bool(rep.interventions), position_of(traj, rep.stopped_at))
        figs[source] = f
        replays[source] = reps
    return figs, replays


# ---------------------------------------------------------------------------
# The naive watchdog
# ---------------------------------------------------------------------------
def canonical_args(args: Any) -> str:
    if isinstance(args, str):
        stripped = args.strip()
        if stripped[:1] in "{[":
            try:
                args = json.loads(stripped)
            except ValueError:
                return " ".join(args.split())
        else:
            return " ".join(args.split())
    if args is None:
        return ""
    try:
        return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return " ".join(str(args).split())


def invalid_results(steps: list[Step]) -> dict[int, bool]:
    """Tool result position -> whether read_result calls it error/empty/timeout."""
    pairs = pair_results(steps)
    out = {}
    for pos, s in enumerate(steps):
        if is_result(s):
            call = pairs.get(pos)
            reading = read_result(s.text, s.meta, steps[call].args if call is not None else None,
                                  steps[call].tool if call is not None else None)
            out[pos] = reading.status in ("error", "empty", "timeout")
    return out


def naive_arms(steps: list[Step], invalid: dict[int, bool] | None = None) -> dict[tuple[str, int], int]:
    """Position where each arm of the naive watchdog first fires, for N in NAIVE_NS:
    ("row", N) the Nth identical call in a row, ("run", N) the Nth identical call
    anywhere in the run, ("bad", N) the Nth invalid result in a row, ("badrun", N)
    the Nth invalid result anywhere. An arm that never fires is absent."""
    invalid = invalid_results(steps) if invalid is None else invalid
    seen: Counter[tuple[str, str]] = Counter()
    last_key: tuple[str, str] | None = None
    counts = {"row": 0, "run": 0, "bad": 0, "badrun": 0}
    out: dict[tuple[str, int], int] = {}
    for pos, s in enumerate(steps):
        if is_call(s):
            key = call_key(s)
            seen[key] += 1
            counts["row"] = counts["row"] + 1 if key == last_key else 1
            counts["run"] = seen[key]
            last_key = key
            arms = ("row", "run")
        elif pos in invalid:
            if not invalid[pos]:
                counts["bad"] = 0
                continue
            counts["bad"] += 1
            counts["badrun"] += 1
            arms = ("bad", "badrun")
        else:
            continue
        for arm in arms:
            for n in NAIVE_NS:
                if counts[arm] >= n:
                    out.setdefault((arm, n), pos)
    return out


def naive_stop(steps: list[Step], in_a_row: bool, invalid: dict[int, bool] | None = None) -> int | None:
    """Position of the naive watchdog's stop (the NAIVE_NTH identical call / invalid result), or None."""
    arms = naive_arms(steps, invalid)
    picks = ("row", "bad") if in_a_row else ("run", "badrun")
    hits = [arms[(arm, NAIVE_NTH)] for arm in picks if (arm, NAIVE_NTH) in arms]
    return min(hits) if hits else None


# The naive rule's own sweep: its call arm (the Nth identical call in a row or
# anywhere, or none) with its result arm (the Nth invalid result in a row, or none).
def naive_sweep_points() -> list[tuple[str, tuple[tuple[str, int], ...]]]:
    calls: list[tuple[str, int] | None] = [None] + [(mode, n) for mode in ("row", "run") for n in NAIVE_NS]
    bads: list[tuple[str, int] | None] = [None] + [("bad", n) for n in NAIVE_NS]
    out = []
    for call in calls:
        for bad in bads:
            arms = tuple(a for a in (call, bad) if a is not None)
            if arms:
                out.append((" + ".join(NAIVE_LABEL[a[0]].format(n=a[1]) for a in arms), arms))
    return out


NAIVE_LABEL = {"row": "call#{n} in a row", "run": "call#{n} anywhere", "bad": "bad#{n} in a row"}


def measure_naive_sweep(data: dict[str, list[Trajectory]]) -> list[tuple[str, dict[str, Figures]]]:
    points = naive_sweep_points()
    figs: list[tuple[str, dict[str, Figures]]] = [(label, {}) for label, _ in points]
    for source, trajs in data.items():
        for _, per in figs:
            per[source] = Figures()
        for traj in trajs:
            arms = naive_arms(traj.steps)
            for (_, picks), (_, per) in zip(points, figs, strict=True):
                hits = [arms[a] for a in picks if a in arms]
                stop = min(hits) if hits else None
                per[source].add(traj, stop is not None, stop)
    return figs


def measure_naive(data: dict[str, list[Trajectory]]) -> dict[str, dict[str, Figures]]:
    out: dict[str, dict[str, Figures]] = {"naive/row": {}, "naive/run": {}}
    for source, trajs in data.items():
        row, run = Figures(), Figures()
        for traj in trajs:
            invalid = invalid_results(traj.steps)
            for figs, in_a_row in ((row, True), (run, False)):
                stop = naive_stop(traj.steps, in_a_row, invalid)
                figs.add(traj, stop is not None, stop)
        out["naive/row"][source] = row
        out["naive/run"][source] = run
    return out


# ---------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------
def print_main(policy: Policy, figs: dict[str, Figures], naive: dict[str, dict[str, Figures]]) -> None:
    print(
        f"\n== {policy.name} v{policy.version} replayed as if live, per source "
        f"(targets: succeeded with any intervention <= {TARGET_OK_INTERVENED:.0%}, with a stop "
        f"<= {TARGET_OK_STOPPED:.0%}; steps saved above both naive variants)"
    )
    print(
        f"{'source':20} {'succ. intervened':>17} {'':6} {'succ. stopped':>15} {'':6} {'failed stopped':>18} "
        f"{'steps saved':>18}  {'vs naive/row':13} {'vs naive/run':13} median stop at (share of run)"
    )
    tot = Figures()
    for source, f in figs.items():
        nr, nn = naive["naive/row"][source], naive["naive/run"][source]
        where = f"{statistics.median(f.stop_positions):.2f}" if f.stop_positions else "-"
        vs = [f"{100 * n.saved:5.1f}% {mark(f.saved > n.saved) if f.failed else '-':6}" for n in (nr, nn)]
        print(
            f"{source:20} {pct(f.ok_intervened, f.ok):>17} {mark(share(f.ok_intervened, f.ok) <= TARGET_OK_INTERVENED):6} "
            f"{pct(f.ok_stopped, f.ok):>15} {mark(f.false_kill <= TARGET_OK_STOPPED):6} "
            f"{pct(f.failed_stopped, f.failed):>18} {pct(f.failed_saved, f.failed_steps):>18}  {vs[0]} {vs[1]} {where}"
        )
        for name in ("ok", "ok_intervened", "ok_stopped", "failed", "failed_stopped", "failed_steps", "failed_saved"):
            setattr(tot, name, getattr(tot, name) + getattr(f, name))
    print(
        f"{'ALL':20} {pct(tot.ok_intervened, tot.ok):>17} {'':6} {pct(tot.ok_stopped, tot.ok):>15} {'':6} "
        f"{pct(tot.failed_stopped, tot.failed):>18} {pct(tot.failed_saved, tot.failed_steps):>18}"
    )

    print("\n-- the naive watchdog, same runs (row = 3rd in a row; run = 3rd anywhere in the run)")
    print(f"{'source':20} {'variant':10} {'succ. stopped':>17} {'failed stopped':>18} {'steps saved':>18}")
    for source in figs:
        for variant in ("naive/row", "naive/run"):
            n = naive[variant][source]
            print(
                f"{source:20} {variant:10} {pct(n.ok_stopped, n.ok):>17} {pct(n.failed_stopped, n.failed):>18} "
                f"{pct(n.failed_saved, n.failed_steps):>18}"
            )


def sweep_points(base: Policy) -> list[tuple[str, Policy | str]]:
    out: list[tuple[str, Policy | str]] = [(f"{base.name} (as given)", base)]
    for label, override in SWEEP:
        data = base.to_dict()
        for section, values in override.items():
            data[section] = {**data.get(section, {}), **values} if isinstance(values, dict) else values
        data["name"] = f"sweep {label}"
        try:
            out.append((label, Policy.from_dict(data)))
        except PolicyError as exc:
            out.append((label, f"skipped: {exc}"))
    return out


def print_sweep(
    data: dict[str, list[Trajectory]], base: Policy, naive: dict[str, dict[str, Figures]]
) -> list[tuple[str, dict[str, Figures]]]:
    """Print the policy's sweep beside the two naive variants; returns its points' figures."""
    points = sweep_points(base)
    results: list[tuple[str, dict[str, Figures]]] = []
    for label, pol in points:
        if isinstance(pol, str):
            print(f"   sweep point {label}: {pol}")
            continue
        results.append((label, measure(data, pol)[0]))
    print(
        "\n== stop aggressiveness at equal false kills: succeeded runs stopped (false kills) vs steps saved, per source"
    )
    for source in data:
        print(f"\n-- {source}")
        print(f"   {'point':24} {'succ. stopped':>17} {'failed stopped':>18} {'steps saved':>18}")
        for label, figs in results:
            f = figs[source]
            print(
                f"   {label:24} {pct(f.ok_stopped, f.ok):>17} {pct(f.failed_stopped, f.failed):>18} "
                f"{pct(f.failed_saved, f.failed_steps):>18}"
            )
        for variant in ("naive/row", "naive/run"):
            n = naive[variant][source]
            print(
                f"   {variant:24} {pct(n.ok_stopped, n.ok):>17} {pct(n.failed_stopped, n.failed):>18} "
                f"{pct(n.failed_saved, n.failed_steps):>18}"
            )
        for variant in ("naive/row", "naive/run"):
            n = naive[variant][source]
            fair = [(label, figs[source]) for label, figs in results if figs[source].false_kill <= n.false_kill]
            if not fair:
                print(f"   at <= {variant}'s false kills ({100 * n.false_kill:.1f}%): no policy point")
                continue
            label, best = max(fair, key=lambda item: item[1].saved)
            verdict = "policy saves more" if best.saved > n.saved else "naive saves more or equal"
            print(
                f"   at <= {variant}'s false kills ({100 * n.false_kill:.1f}%): best point '{label}' saves "
                f"{100 * best.saved:.1f}% vs naive {100 * n.saved:.1f}% -> {verdict}"
            )
    return results


def best_within(results: list[tuple[str, dict[str, Figures]]], source: str, budget: int) -> tuple[str, Figures] | None:
    """The point that saves most failed-run steps with at most `budget` succeeded runs stopped."""
    fair = [(label, figs[source]) for label, figs in results if figs[source].ok_stopped <= budget]
    return max(fair, key=lambda item: item[1].saved) if fair else None


def print_budgets(
    data: dict[str, list[Trajectory]],
    policy_points: list[tuple[str, dict[str, Figures]]],
    naive_points: list[tuple[str, dict[str, Figures]]],
) -> None:
    """Equal false kills: per source and budget, the best point of each sweep."""
    print(
        f"\n== equal false kills: per source, at most {', '.join(map(str, BUDGETS))} succeeded runs stopped, the best "
        f"point of the policy's sweep ({len(policy_points)} points) vs the best of the naive rule's "
        f"({len(naive_points)} points: its call arm, the Nth identical call in a row or anywhere, and its result arm, "
        f"the Nth invalid result in a row, N in {NAIVE_NS.start}..{NAIVE_NS.stop - 1}); steps saved on failed runs"
    )
    print(f"{'source':20} {'budget':>6} {'policy':>7} {'naive':>7}  verdict        policy point | naive point")
    for source, trajs in data.items():
        if all(t.success for t in trajs):
            continue
        for budget in BUDGETS:
            ours, theirs = best_within(policy_points, source, budget), best_within(naive_points, source, budget)
            if ours is None:
                verdict = "no policy point" if theirs is not None else "neither"
            elif theirs is None:
                verdict = "ok (no naive point)"
            else:
                gap = 100 * (ours[1].saved - theirs[1].saved)
                verdict = "ok" if gap >= -1e-9 else f"BEHIND {gap:+.1f}"
            cells = [f"{100 * p[1].saved:6.1f}%" if p else f"{'-':>7}" for p in (ours, theirs)]
            names = " | ".join(f"{p[0]} ({p[1].ok_stopped} ok stopped)" if p else "-" for p in (ours, theirs))
            print(f"{source:20} {budget:6} {cells[0]} {cells[1]}  {verdict:14} {names}")


def call_key(s: Step) -> tuple[str, str]:
    return (s.tool or "").strip(), canonical_args(s.args)


def print_loops(trajs: list[Trajectory], replays: list[Any]) -> None:
    print(
        f"\n== long identical-call loops in tau2 (>= {LOOP_MIN_CALLS} identical calls): where the policy stops them "
        f"(target: by the {TARGET_LOOP_CALLS}th identical call)"
    )
    found = False
    for traj, rep in zip(trajs, replays, strict=True):
        counts = Counter(call_key(s) for s in traj.steps if is_call(s))
        if not counts:
            continue
        key, n = counts.most_common(1)[0]
        if n < LOOP_MIN_CALLS:
            continue
        found = True
        stop = position_of(traj, rep.stopped_at)
        args = key[1] if len(key[1]) < 60 else key[1][:57] + "..."
        if stop is None:
            verdict = "not stopped  MISSED"
        else:
            nth = sum(1 for s in traj.steps[: stop + 1] if is_call(s) and call_key(s) == key)
            verdict = f"stopped at step {rep.stopped_at}, at identical call #{nth}  {mark(nth <= TARGET_LOOP_CALLS)}"
        first_iv = rep.interventions[0] if rep.interventions else None
        first = (
            f"; first intervention step {first_iv['step']} ({first_iv['detector']}/{first_iv['tier']})"
            if first_iv
            else ""
        )
        print(f"   {traj.run_id:58} {key[0]}({args}) x{n}: {verdict}{first}")
    if not found:
        print("   none")


def no_args(args: Any) -> bool:
    return args in (None, "", {}, []) or (isinstance(args, str) and args.strip() in ("{}", "[]", "()"))


def print_legit_repeats(trajs: list[Trajectory], replays: list[Any]) -> None:
    """No-argument calls repeated after something that could change their answer."""
    legit = intervened = stopped = unreached = immediate = immediate_iv = 0
    tools: Counter[str] = Counter()
    hit_tools: Counter[str] = Counter()
    by_detector: Counter[str] = Counter()
    for traj, rep in zip(trajs, replays, strict=True):
        steps = traj.steps
        invalid = invalid_results(steps)
        pairs = pair_results(steps)
        result_of = {c: r for r, c in pairs.items()}
        iv_steps = {iv["step"]: f"{iv['detector']}/{iv['tier']}" for iv in rep.interventions}
        evaluated = {s.index for s in rep.evaluated}
        last: dict[str, int] = {}
        for pos, s in enumerate(steps):
            if not is_call(s) or not no_args(s.args):
                continue
            tool = (s.tool or "").strip()
            prev = last.get(tool)
            last[tool] = pos
            if prev is None:
                continue
            between = steps[prev + 1 : pos]
            effective = any(is_user(b) for b in between) or any(
                is_result(steps[p])
                and not invalid.get(p, True)
                and pairs.get(p) not in (None, prev)
                and call_key(steps[pairs[p]]) != call_key(s)
                for p in range(prev + 1, pos)
            )
            end = result_of.get(pos, pos)
            nxt = next(
                (q for q in range(end + 1, len(steps)) if steps[q].kind in ("thought", "action", "final")), len(steps)
            )
            window = [steps[q].index for q in range(pos, nxt)]
            if s.index not in evaluated:
                unreached += 1
                continue
            got = [iv_steps[i] for i in window if i in iv_steps]
            if effective:
                legit += 1
                tools[tool] += 1
                if got:
                    intervened += 1
                    hit_tools[tool] += 1
                    stopped += any(g.endswith("/stop") for g in got)
                    by_detector.update(got)
            else:
                immediate += 1
                immediate_iv += bool(got)
    print(
        "\n== legitimate no-argument repeats in tau2 (same no-argument call again after a user turn or another "
        "successful call): interventions should be ~0"
    )
    print(
        f"   {legit} legitimate repeats; with an intervention on the repeat or its result: {pct(intervened, legit)} "
        f"(stops: {stopped}); by tool: {dict(tools.most_common())}"
    )
    if hit_tools:
        print(f"   intervened, by tool: {dict(hit_tools.most_common())}; by detector/tier: {dict(by_detector)}")
    print(
        f"   for contrast, repeats with nothing effective in between: {immediate}, with an intervention: "
        f"{pct(immediate_iv, immediate)}; repeats after the replay's stop (not evaluated): {unreached}"
    )


def print_flags(data: dict[str, list[Trajectory]]) -> None:
    """What each detector would act on, with interventions off."""
    print("\n== detector triggers with interventions off (runs with >= 1 trigger: succeeded / failed)")
    print(f"{'source':20} " + " ".join(f"{d:>24}" for d in DETECTORS))
    for source, trajs in data.items():
        ok = sum(1 for t in trajs if t.success)
        bad = len(trajs) - ok
        hit: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for traj in trajs:
            rep = replay(traj.steps, goal=traj.goal, policy=OFF_POLICY, context=traj.context)
            fired = {d for sig in rep.watchdog.signals.values() for d in sig.get("triggers", ())}
            for det in fired:
                hit[det][0 if traj.success else 1] += 1
        cells = []
        for det in DETECTORS:
            a, b = hit[det]
            cells.append(f"{100 * share(a, ok):5.1f}% / {100 * share(b, bad):5.1f}%".rjust(24))
        print(f"{source:20} " + " ".join(cells))


def time_detect(files: list[Path]) -> None:
    """``python -m tracing.detect`` over all files concatenated, pinned to one core."""
    with tempfile.TemporaryDirectory() as tmp:
        combined = Path(tmp) / "all.jsonl"
        runs = steps = 0
        with combined.open("w", encoding="utf-8") as out:
            for path in files:
                for line in path.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        out.write(line + "\n")
                        runs += 1
                        steps += len(json.loads(line).get("steps") or [])
        cmd = [sys.executable, "-m", "tracing.detect", str(combined)]
        pinned = shutil.which("taskset")
        if pinned:
            cmd = [pinned, "-c", "0", *cmd]
        env = {**os.environ, "PYTHONPATH": str(CODE_ROOT)}
        start = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=tmp, check=False)
        took = time.perf_counter() - start
    note = "one core (taskset -c 0)" if pinned else "one process (no taskset)"
    status = "" if proc.returncode == 0 else f"; exit {proc.returncode}: {proc.stderr.decode()[-300:]}"
    print(
        f"\n== speed: python -m tracing.detect over all of shared/eval concatenated ({runs} runs, {steps} steps), "
        f"{note}: {took:.1f} s (target < {TARGET_DETECT_SECONDS:.0f} s): {mark(took < TARGET_DETECT_SECONDS)}{status}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default=None, help="built-in name, JSON object or JSON file (default: default)")
    parser.add_argument("--eval", default=str(eval_dir()))
    parser.add_argument("--no-speed", action="store_true", help="skip timing python -m tracing.detect")
    parser.add_argument("--no-sweep", action="store_true", help="skip the stop-aggressiveness sweep")
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy)
    except PolicyError as exc:
        print(f"bad --policy: {exc}", file=sys.stderr)
        return 2
    files = sorted(Path(args.eval).glob("*/runs.jsonl"))
    if not files:
        print(f"no trajectories under {args.eval}", file=sys.stderr)
        return 1
    data = {p.parent.name: list(read_jsonl(p)) for p in files}
    print(f"detectors from {describe(CODE_ROOT)}; data from {args.eval}; policy {policy.name} v{policy.version}")

    figs, replays = measure(data, policy)
    naive = measure_naive(data)
    print_main(policy, figs, naive)
    if not args.no_sweep:
        policy_points = print_sweep(data, policy, naive)
        print_budgets(data, policy_points, measure_naive_sweep(data))
    tau2 = "tau2_retail_telecom"
    if tau2 in data:
        print_loops(data[tau2], replays[tau2])
        print_legit_repeats(data[tau2], replays[tau2])
    print_flags(data)
    if not args.no_speed:
        time_detect(files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
