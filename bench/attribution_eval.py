"""Error attribution measured against hand labels (issue 17, item 2).

The sample: 60 failed runs of shared/eval, drawn once by ``sample()`` (a
generator seeded per source, so adding a source does not reshuffle the
others) and labelled by hand before the guesser was written
(tests/tracing/attribution_labels.jsonl; how, in bench/README-attribution.md).

Reported: layer accuracy with precision / recall per layer and the confusion
matrix; accuracy per source; step agreement (exact, within 2); the time of
``attribute()`` per run over every failed run of every source, next to the
analysis it follows; with --rates, how often each rule decides on succeeded
runs (attributed as if they had failed) against failed ones, per source — a
rule that decides as often before a success says nothing about the failure.

    .venv/bin/python bench/attribution_eval.py            # about 40 s
    .venv/bin/python bench/attribution_eval.py --rates    # + rule rates
    .venv/bin/python bench/attribution_eval.py --sample   # the ids to label
Target (issue 17): attribution adds <= 5 ms per run to the analysis.

``--smoke``: the same on a few short runs per source (bench/_paths.py), seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _paths import SMOKE, describe, eval_dir, full_eval_dir, setup_code_path  # noqa: E402

CODE_ROOT = setup_code_path()

from tracing.core.analysis import analyse  # noqa: E402
from tracing.core.attribution import LAYER_KEYS, attribute  # noqa: E402
from tracing.core.steps import Trajectory, read_jsonl  # noqa: E402

EVAL_DIR = eval_dir()
LABELS = Path(__file__).resolve().parents[1] / "tests" / "tracing" / "attribution_labels.jsonl"
SEED = 17
SAMPLE_SIZE = 60
TARGET_MS = 5.0
STEP_NEAR = 2
# --smoke scores this many labelled runs (read from the whole data: the slice
# holds few of them).
SMOKE_LABELS = 5


def failed_runs(source: str) -> list[Trajectory]:
    return [t for t in read_jsonl(EVAL_DIR / source / "runs.jsonl") if t.success is False]


def sample(seed: int = SEED, size: int = SAMPLE_SIZE) -> list[tuple[str, str]]:
    """(source, run_id) of ``size`` failed runs, spread evenly over the sources
    that have failures; the remainder goes to the sources with most failures."""
    pools = {p.parent.name: failed_runs(p.parent.name) for p in sorted(EVAL_DIR.glob("*/runs.jsonl"))}
    pools = {s: runs for s, runs in pools.items() if runs}
    share, extra = divmod(size, len(pools))
    larger = sorted(pools, key=lambda s: (-len(pools[s]), s))[:extra]
    out: list[tuple[str, str]] = []
    for source in sorted(pools):
        rng = random.Random(f"{seed}:{source}")
        picked = rng.sample(pools[source], share + (source in larger))
        out.extend((source, t.run_id) for t in picked)
    return out


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_runs(root: Path = EVAL_DIR) -> dict[tuple[str, str], Trajectory]:
    return {(p.parent.name, t.run_id): t for p in sorted(root.glob("*/runs.jsonl")) for t in read_jsonl(p)}


def pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:5.1f}% ({num}/{den})" if den else "      n/a"


def score(labels: list[dict[str, Any]], guesses: dict[tuple[str, str], Any]) -> dict[str, Any]:
    """Accuracy, per-layer precision/recall, confusion, per source, step agreement."""
    confusion: Counter[tuple[str, str]] = Counter()
    by_source: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    exact = near = hits = 0
    for lab in labels:
        guess = guesses[(lab["source"], lab["run_id"])]
        layer = guess.layer if guess is not None else "none"
        confusion[(lab["layer"], layer)] += 1
        ok = layer == lab["layer"]
        hits += ok
        by_source[lab["source"]][0] += ok
        by_source[lab["source"]][1] += 1
        if guess is not None and guess.step is not None:
            exact += guess.step == lab["step"]
            near += abs(guess.step - lab["step"]) <= STEP_NEAR
    per_layer = {}
    for layer in LAYER_KEYS:
        tp = confusion[(layer, layer)]
        guessed = sum(n for (_, g), n in confusion.items() if g == layer)
        actual = sum(n for (a, _), n in confusion.items() if a == layer)
        per_layer[layer] = (tp, guessed, actual)
    return {"n": len(labels), "hits": hits, "confusion": confusion, "per_layer": per_layer,
            "by_source": dict(by_source), "exact": exact, "near": near}


def print_score(title: str, result: dict[str, Any]) -> None:
    n = result["n"]
    print(f"\n== {title}: layer accuracy {pct(result['hits'], n)}")
    print(f"   step agreement: exact {pct(result['exact'], n)}, within {STEP_NEAR} {pct(result['near'], n)}")
    print(f"\n{'layer':12} {'precision':>18} {'recall':>18}")
    for layer, (tp, guessed, actual) in result["per_layer"].items():
        print(f"{layer:12} {pct(tp, guessed):>18} {pct(tp, actual):>18}")
    print("\nconfusion (rows: label, columns: guess)")
    cols = [*LAYER_KEYS, "none"]
    print(f"{'':12} " + " ".join(f"{c[:5]:>6}" for c in cols))
    for layer in LAYER_KEYS:
        print(f"{layer:12} " + " ".join(f"{result['confusion'][(layer, c)]:6}" for c in cols))
    print("\nper source")
    for source, (ok, total) in sorted(result["by_source"].items()):
        print(f"{source:22} {pct(ok, total):>16}")


def timing(runs: dict[tuple[str, str], Trajectory]) -> None:
    """attribute() on every failed run, its analysis given (as the run's end
    gives it), next to the analysis itself."""
    analysis_ms: list[float] = []
    attribution_ms: list[float] = []
    layers: dict[str, Counter[str]] = defaultdict(Counter)
    for (source, _), traj in runs.items():
        if traj.success is not False:
            continue
        t0 = time.perf_counter()
        report = analyse(traj.steps, task=traj.goal, context=traj.context)
        t1 = time.perf_counter()
        guess = attribute(traj.steps, traj.goal, outcome=False, analysis=report, context=traj.context)
        t2 = time.perf_counter()
        analysis_ms.append(1000 * (t1 - t0))
        attribution_ms.append(1000 * (t2 - t1))
        layers[source][guess.layer if guess else "none"] += 1
    q = statistics.quantiles(attribution_ms, n=100)
    mean = statistics.fmean(attribution_ms)
    print(f"\n== time over {len(attribution_ms)} failed runs of {len(layers)} sources")
    print(f"   analysis (baseline): mean {statistics.fmean(analysis_ms):.2f} ms/run")
    print(f"   attribution:         mean {mean:.2f} ms/run, p95 {q[94]:.2f}, max {max(attribution_ms):.2f}"
          f"  {'ok' if mean <= TARGET_MS else 'OVER'} (target <= {TARGET_MS:g} ms)")
    print("\n== layers guessed over all failed runs, per source")
    for source, counts in sorted(layers.items()):
        total = sum(counts.values())
        print(f"{source:22} " + "  ".join(f"{k} {100 * counts[k] / total:4.1f}%" for k in LAYER_KEYS))


def rates(runs: dict[tuple[str, str], Trajectory]) -> None:
    """How often each rule decides on succeeded runs (attributed as if they had
    failed) against failed runs, per source."""
    counts: dict[str, list[Counter[str]]] = defaultdict(lambda: [Counter(), Counter()])
    for (source, _), traj in runs.items():
        if traj.success is None:
            continue
        guess = attribute(traj.steps, traj.goal, outcome=False, context=traj.context)
        counts[source][traj.success is False][guess.rule if guess else "none"] += 1
    print("\n== rules: share of succeeded vs failed runs each decides (a habit fires on both alike)")
    for source, (succeeded, failed) in sorted(counts.items()):
        ns, nf = sum(succeeded.values()), sum(failed.values())
        print(f"{source} (succeeded {ns}, failed {nf})")
        for rule in sorted(set(succeeded) | set(failed), key=lambda r: -failed[r]):
            print(f"   {rule:22} succeeded {100 * succeeded[rule] / max(ns, 1):5.1f}%   "
                  f"failed {100 * failed[rule] / max(nf, 1):5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", action="store_true", help="print the runs to label and exit")
    parser.add_argument("--rates", action="store_true", help="also the rule rates on succeeded vs failed runs")
    args = parser.parse_args()
    if args.sample:
        for source, run_id in sample():
            print(source, run_id)
        return
    print(f"measuring {describe(CODE_ROOT)}\ndata {EVAL_DIR}")
    runs = load_runs()
    labels = load_labels()
    if SMOKE:
        labels = labels[:SMOKE_LABELS]
        whole = load_runs(full_eval_dir())
        runs.update({key: whole[key] for key in ((lab["source"], lab["run_id"]) for lab in labels)})
    guesses = {}
    for lab in labels:
        traj = runs[(lab["source"], lab["run_id"])]
        guesses[(lab["source"], lab["run_id"])] = attribute(traj.steps, traj.goal, outcome=False, context=traj.context)
    print_score(f"{len(labels)} hand-labelled failed runs", score(labels, guesses))
    agent = [lab for lab in labels if lab.get("agent_error", True)]
    if len(agent) != len(labels):
        print_score(f"the {len(agent)} whose failure is the agent's (grader disagreements left out)",
                    score(agent, guesses))
    print("\nmisses (label -> guess)")
    for lab in labels:
        guess = guesses[(lab["source"], lab["run_id"])]
        if guess is None or guess.layer != lab["layer"]:
            print(f"  {lab['source']:20} {lab['run_id'][:44]:44} {lab['layer']:>11}@{lab['step']:<3} -> "
                  f"{guess.layer if guess else 'none':>11}@{guess.step if guess else '-'} ({guess.rule if guess else ''})")
    timing(runs)
    if args.rates:
        rates(runs)


if __name__ == "__main__":
    main()
