"""The package contracts of pyproject.toml ([tool.importlinter]), checked by
import-linter: the floors of DESIGN.md 3 (features, runs/core, the agent loop,
tracing), tracing never importing runs, the pure core free of Django. And a
deliberate bad import, in a copy of the tree, that the contracts must refuse."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(root / "pyproject.toml")], cwd=root,
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_contracts_are_kept():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    copy.mkdir()
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for package in ("agentlab", "runs", "tracing"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__", "templates"))
    return copy


def _add_import(path: Path, line: str) -> None:
    path.write_text(f"{line}\n{path.read_text()}")


def test_a_bad_import_breaks_a_contract(tmp_path):
    copy = _copy(tmp_path)
    # The ground floor reaching up into a feature, tracing reaching into runs,
    # and the pure core loading Django.
    _add_import(copy / "runs/core/paging.py", "import runs.launch.services  # noqa")
    _add_import(copy / "tracing/core/steps.py", "import runs.core.models  # noqa")
    _add_import(copy / "tracing/core/steps.py", "import django.db  # noqa")
    _add_import(copy / "tracing/core/results.py", "import tracing.store.models  # noqa")
    result = _lint(copy)
    assert result.returncode != 0
    assert "runs.core is not allowed to import runs.launch" in result.stdout
    assert "tracing never imports runs BROKEN" in result.stdout
    assert "no Django BROKEN" in result.stdout
    assert "tracing.core is not allowed to import tracing.store" in result.stdout
