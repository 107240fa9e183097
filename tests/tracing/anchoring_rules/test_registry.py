"""The rule registry: every pattern has a module, rules switch off by name,
no function of tracing/core/anchoring is longer than a screen, and no private name
crosses a module boundary."""

from __future__ import annotations

import ast
import pathlib

import pytest

from tests.tracing.helpers import Run
from tracing.core.anchoring import PATTERNS, anchor_report, registry

ROOT = pathlib.Path(__file__).resolve().parents[3] / "tracing" / "core" / "anchoring"
MAX_FUNCTION_LINES = 80


def _modules():
    return sorted(ROOT.rglob("*.py"))


def test_every_pattern_has_a_rule_module():
    for pattern in PATTERNS:
        assert (ROOT / "rules" / f"{pattern}.py").exists(), pattern
        assert pattern in registry.NAMES


def test_no_function_over_80_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                    and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert long == []


def test_no_private_name_imported_across_modules():
    crossing = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tracing"):
                crossing += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert crossing == []


CODE = "def f(x):\n    return x + 1"


def _resubmitted():
    return (Run().call("solution", CODE).result("solution", "Your answer is wrong.\nYou have 3 steps left.")
            .thought("I think it is right after all.").final(CODE, tool="solution", args=CODE))


def test_a_rule_switched_off_by_name():
    steps = _resubmitted().steps
    assert anchor_report(steps).first_break == 3
    off = anchor_report(steps, disabled=frozenset(["rejected_resubmission"]))
    assert off.first_break is None
    assert all(b.pattern != "rejected_resubmission" for b in off.breaks)


def test_an_unknown_rule_name_is_refused():
    with pytest.raises(ValueError):
        anchor_report(_resubmitted().steps, disabled=frozenset(["no_such_rule"]))
