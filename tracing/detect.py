"""Replay a watchdog policy over recorded trajectories, offline.

    python -m tracing.detect FILE.jsonl [--policy NAME_OR_JSON]

One JSON line per run on stdout: ``run_id``, ``signals`` (per step index),
``interventions`` the policy would have made, replayed as if live — a stop ends
the run, so nothing after it is evaluated — plus whatever the run-level
analyzers add. No database, no Django. A bad line is reported on stderr with
its number and skipped; a bad ``--policy`` exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from tracing.core.anchoring import anchor_report
from tracing.core.replay import replay as replay_steps
from tracing.core.steps import Step, Trajectory, TrajectoryError, trajectory_from_dict
from tracing.core.watchdog import BUILTIN_POLICIES, DEFAULT_POLICY, Policy, PolicyError, Watchdog

# ---------------------------------------------------------------------------
# EXTENSION POINT — run-level analyzers.
# Each callable gets (trajectory, evaluated_steps, watchdog) and returns a dict
# merged into the run's output line (later analyzers win on key clashes). The
# lead plugs anchoring in here, e.g. ``ANALYZERS.append(anchoring_analyzer)``.
# An analyzer that raises is reported under "analyzer_errors"; the run goes on.
# ---------------------------------------------------------------------------
Analyzer = Callable[[Trajectory, Sequence[Step], Watchdog], dict[str, Any]]
def anchoring_analyzer(traj: Trajectory, evaluated: Sequence[Step], wd: Watchdog) -> dict[str, Any]:
    """first_anchor_break / anchor_reason / anchor_evidence over the whole run
    as recorded (the agent's anchoring does not depend on the policy)."""
    return anchor_report(traj.steps, task=traj.goal, context=traj.context).to_dict()


ANALYZERS: list[Analyzer] = [anchoring_analyzer]


def load_policy(spec: str | None) -> Policy:
    """A built-in policy name, a JSON object, or a path to a JSON file."""
    if not spec:
        return DEFAULT_POLICY
    if spec in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[spec]
    text = spec
    if not spec.lstrip().startswith("{"):
        path = Path(spec)
        if not path.is_file():
            known = ", ".join(BUILTIN_POLICIES)
            raise PolicyError("(root)", f"'{spec}' is neither a policy name ({known}), JSON nor a file")
        text = path.read_text(encoding="utf-8")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError("(root)", f"not valid JSON ({exc.msg} at char {exc.pos})") from exc
    return Policy.from_dict(obj)


def replay(
    traj: Trajectory, policy: Policy = DEFAULT_POLICY, analyzers: Iterable[Analyzer] | None = None
) -> dict[str, Any]:
    """Evaluate one run as if the policy had been live."""
    rep = replay_steps(traj.steps, goal=traj.goal, policy=policy, context=traj.context)
    wd, evaluated, interventions = rep.watchdog, rep.evaluated, rep.interventions
    out: dict[str, Any] = {
        "run_id": traj.run_id,
        "source": traj.source,
        "success": traj.success,
        "policy": {"name": policy.name, "version": policy.version},
        "steps_evaluated": len(evaluated),
        "stopped_at": rep.stopped_at,
        "signals": {str(k): v for k, v in wd.signals.items() if k in {s.index for s in evaluated}},
        "interventions": interventions,
        "checkpoints": [cp.as_dict() for cp in wd.drift.checkpoints],
        "errors": [{"step": i, "detector": d, "message": m} for i, d, m in wd.errors],
    }
    for analyzer in ANALYZERS if analyzers is None else analyzers:
        try:
            out.update(analyzer(traj, evaluated, wd))
        except Exception as exc:  # noqa: BLE001 -- one broken analyzer must not lose the run
            name = getattr(analyzer, "__name__", repr(analyzer))
            out.setdefault("analyzer_errors", []).append(f"{name}: {type(exc).__name__}: {exc}")
    return out


def run_file(path: str | Path, policy: Policy, out: TextIO, err: TextIO) -> tuple[int, int]:
    """Write one line per good run; returns (runs written, bad lines)."""
    ok = bad = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                traj = trajectory_from_dict(json.loads(line))
            except json.JSONDecodeError as exc:
                print(f"{path}:{lineno}: not JSON ({exc.msg})", file=err)
                bad += 1
                continue
            except TrajectoryError as exc:
                print(f"{path}:{lineno}: {exc}", file=err)
                bad += 1
                continue
            out.write(json.dumps(replay(traj, policy), ensure_ascii=False) + "\n")
            ok += 1
    return ok, bad


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracing.detect", description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="trajectories, one JSON run per line (shared/eval format)")
    parser.add_argument(
        "--policy",
        default=None,
        help=f"built-in name ({', '.join(BUILTIN_POLICIES)}), a JSON object, or a JSON file path",
    )
    args = parser.parse_args(argv)
    try:
        policy = load_policy(args.policy)
    except PolicyError as exc:
        print(f"error: bad --policy: {exc}", file=sys.stderr)
        return 2
    try:
        _, bad = run_file(args.file, policy, sys.stdout, sys.stderr)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
