"""Where a pure-Python bench finds the code it measures and the eval data.

Code: ``AGENTLAB_REPO`` (a checkout whose ``tracing/`` is measured) wins; else
an explicit ``PYTHONPATH`` does (this checkout is appended after it); else
this checkout. Data: ``AGENTLAB_EVAL``, else the first ``shared/eval`` found
beside this checkout or one of its parents (a worktree under ``/work/wt/``
finds ``/work/shared/eval``).

``--smoke`` on any bench's command line (taken out of ``sys.argv`` here, so
every argument parser is left as it is) sets ``SMOKE``: the bench runs at a
size of seconds, reads a small slice of the eval data and exits 0 whatever
its targets say — it proves that the bench still runs and prints its
figures, not the figures (tests/bench/test_smoke.py, run by ``make test``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

SMOKE = "--smoke" in sys.argv
if SMOKE:
    sys.argv.remove("--smoke")
# Runs per source and outcome in the smoke slice of the eval data: enough for
# every source to have succeeded and failed runs to corrupt and score.
SMOKE_RUNS_PER_OUTCOME = 3


def sized(full, smoke):
    """``full``, or ``smoke`` under ``--smoke``."""
    return smoke if SMOKE else full


def exit_code(failed: bool) -> int:
    """A missed target fails a measured run; a smoke run only has to finish."""
    return 1 if failed and not SMOKE else 0


def setup_code_path() -> Path:
    """Put the measured checkout on sys.path; returns the root of ``tracing``'s checkout."""
    override = os.environ.get("AGENTLAB_REPO")
    if override:
        sys.path.insert(0, str(Path(override).resolve()))
    elif os.environ.get("PYTHONPATH"):
        sys.path.append(str(HERE))
    else:
        sys.path.insert(0, str(HERE))
    import tracing

    return Path(tracing.__file__).resolve().parents[1]


# The eight sources of shared/eval, in the order the benches report them.
SOURCES = (
    "alfworld_sala",
    "intercode",
    "mint_coding",
    "react_exemplars",
    "react_fever",
    "react_webshop",
    "reflexion_hotpotqa",
    "tau2_retail_telecom",
)


def eval_dir() -> Path:
    full = full_eval_dir()
    return _smoke_slice(full) if SMOKE and full.is_dir() else full


def full_eval_dir() -> Path:
    override = os.environ.get("AGENTLAB_EVAL")
    if override:
        return Path(override)
    for base in (HERE, *HERE.parents):
        candidate = base.parent / "shared" / "eval"
        if candidate.is_dir():
            return candidate
    return HERE.parent / "shared" / "eval"


def _smoke_slice(full: Path) -> Path:
    """The shortest few succeeded and failed runs of each source, as an eval dir of their own."""
    out = Path(tempfile.gettempdir()) / f"agentlab-smoke-eval-{os.getuid()}-shortest-{SMOKE_RUNS_PER_OUTCOME}"
    for path in sorted(full.glob("*/runs.jsonl")):
        target = out / path.parent.name / "runs.jsonl"
        if target.is_file():
            continue
        by_outcome: dict[object, list[str]] = {}
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                by_outcome.setdefault(json.loads(line).get("success"), []).append(line)
        kept = [line for lines in by_outcome.values() for line in sorted(lines, key=len)[:SMOKE_RUNS_PER_OUTCOME]]
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}")
        partial.write_text("".join(kept), encoding="utf-8")
        partial.replace(target)
    return out


def describe(root: Path) -> str:
    """``root`` with its commit, and "+ uncommitted changes" when tracing/ is dirty."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "tracing"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(root)
    return f"{root} @ {head}" + (" + uncommitted changes in tracing/" if dirty else "")
