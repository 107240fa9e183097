"""Where a pure-Python bench finds the code it measures and the eval data.

Code: ``AGENTLAB_REPO`` (a checkout whose ``tracing/`` is measured) wins; else
an explicit ``PYTHONPATH`` does (this checkout is appended after it); else
this checkout. Data: ``AGENTLAB_EVAL``, else the first ``shared/eval`` found
beside this checkout or one of its parents (a worktree under ``/work/wt/``
finds ``/work/shared/eval``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


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
    override = os.environ.get("AGENTLAB_EVAL")
    if override:
        return Path(override)
    for base in (HERE, *HERE.parents):
        candidate = base.parent / "shared" / "eval"
        if candidate.is_dir():
            return candidate
    return HERE.parent / "shared" / "eval"


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
