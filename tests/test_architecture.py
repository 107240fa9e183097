"""The house rules of DESIGN.md 3, checked on the source.

- The pure core (the agent loop, the detectors, the watchdog, anchoring,
  alignment, metrics, the replay...) imports no Django: it runs in a bare
  interpreter.
- tracing never imports runs: runs reacts to tracing.signals instead.
- No import circles, and no import of the project's own modules inside a
  function (the way circles get hidden), but for AppConfig.ready.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agentlab", "runs", "tracing")

PURE_MODULES = [
    "tracing.steps", "tracing.normalize", "tracing.watchdog", "tracing.alignment", "tracing.metrics",
    "tracing.course", "tracing.governance", "tracing.detect", "tracing.analysis", "tracing.replay",
    "tracing.summary", "tracing.attribution", "tracing.waterfall", "tracing.coverage", "tracing.intervals",
    "tracing.stepsearch", "tracing.labels", "tracing.stepindex", "tracing.ingest.otlp", "tracing.ingest.jsonapi",
    "runs.whatif.replay",
    *sorted(f"tracing.detectors.{p.stem}" for p in (ROOT / "tracing/detectors").glob("*.py") if p.stem != "__init__"),
    *sorted(f"tracing.anchoring.{p.stem}" for p in (ROOT / "tracing/anchoring").glob("*.py") if p.stem != "__init__"),
    *sorted(f"runs.agent.{p.stem}" for p in (ROOT / "runs/agent").glob("*.py") if p.stem != "__init__"),
]

# Imports inside a function that are allowed: receivers connected once the
# models are loaded (Django's app-loading rule, not a way around a circle).
READY_IMPORTS = {("runs/apps.py", "ready")}


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if "migrations" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(imported module, enclosing function or None, line) for every import of the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    found: list[tuple[str, str | None, int]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, function, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(module.split(".")[: -child.level] + ([base] if base else []))
                for alias in child.names:
                    # `from pkg import mod` imports the module pkg.mod when there is one.
                    sub = f"{base}.{alias.name}"
                    found.append((sub if sub in MODULES else base, function, child.lineno))
            visit(child, function)

    visit(tree, None)
    return found


def _project(name: str) -> str | None:
    """The project module an import names (or the nearest package of it), None if outside."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def test_the_pure_core_imports_no_django():
    code = (
        "import importlib, sys\n"
        f"for name in {PURE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print('\\n'.join(loaded))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"the pure core loaded Django: {result.stdout.split()[:5]}"


def test_the_pure_core_list_names_real_modules():
    assert all(name in MODULES for name in PURE_MODULES)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m == "tracing" or m.startswith("tracing.")))
def test_tracing_never_imports_runs(module):
    bad = [(name, line) for name, _, line in _imports(MODULES[module]) if name == "runs" or name.startswith("runs.")]
    assert not bad, f"{module} imports {bad}"


def test_no_project_import_inside_a_function():
    bad = []
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        for name, function, line in _imports(path):
            if function is not None and _project(name) and (rel, function) not in READY_IMPORTS:
                bad.append(f"{rel}:{line} {function}() imports {name}")
    assert not bad, "\n".join(bad)


def test_no_import_circles():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for name, _, _ in _imports(path):
            target = _project(name)
            while target:
                # Importing a.b.c runs a/__init__ and a/b/__init__ first, but
                # those of the importer's own packages are already running.
                if target != module and not module.startswith(target + "."):
                    graph[module].add(target)
                target = target.rpartition(".")[0] if "." in target else ""
    circles = _strongly_connected(graph)
    assert not circles, f"import circles: {circles}"


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return out
