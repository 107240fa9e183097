"""The real trajectories of shared/eval, for the tests that read them.

Found as the benches find them (``bench/_paths.eval_dir()``: ``AGENTLAB_EVAL``,
else ``shared/eval`` beside the checkout or one of its parents), so a worktree
under /work/wt/ reads /work/shared/eval instead of skipping. A test skips only
when the data is truly absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench._paths import eval_dir

EVAL_DIR = eval_dir()
_MISSING = f"shared/eval not found at {EVAL_DIR} (AGENTLAB_EVAL gives its path)"

requires_eval = pytest.mark.skipif(not EVAL_DIR.is_dir(), reason=_MISSING)


def eval_runs(source: str) -> Path:
    """``shared/eval/<source>/runs.jsonl``; skips the calling test when it is not there."""
    path = EVAL_DIR / source / "runs.jsonl"
    if not path.is_file():
        pytest.skip(f"{path.relative_to(EVAL_DIR)}: {_MISSING}")
    return path
