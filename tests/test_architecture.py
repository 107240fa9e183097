"""The house rules of DESIGN.md 3, checked on the source.

The floors between packages (features, runs/core, the agent loop, tracing;
tracing never importing runs) are import-linter's contracts in pyproject.toml
(tests/test_contracts.py). Here, what a contract cannot say:

- The pure core (the agent loop, the detectors, the watchdog, anchoring,
  alignment, metrics, the replay...) imports no Django: it runs in a bare
  interpreter.
- No import circles between modules, and no import of the project's own
  modules inside a function (the way circles get hidden), but for AppConfig.ready.
- One name per idea: no two modules share a basename for different things.
- README's Layout names every package of runs/ and tracing/.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agentlab", "runs", "tracing")

PURE_MODULES = [
    # Everything under tracing/core, the CLI and the client at the top of tracing.
    *sorted(".".join(p.relative_to(ROOT).with_suffix("").parts[: -1 if p.stem == "__init__" else None])
            for p in (ROOT / "tracing/core").rglob("*.py")),
    "tracing.detect", "tracing.client",
    "runs.whatif.sweep",
    *sorted(f"runs.agent.{p.stem}" for p in (ROOT / "runs/agent").glob("*.py") if p.stem != "__init__"),
]

# Imports inside a function that are allowed: receivers connected once the
# models are loaded (Django's app-loading rule, not a way around a circle).
READY_IMPORTS = {("runs/apps.py", "ready"), ("agentlab/preferences/apps.py", "ready")}


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


# Names Django (or the layer) gives: a views.py in every feature is one idea, the layer.
LAYER_NAMES = {"__init__", "models", "views", "urls", "forms", "services", "selectors", "tasks", "admin", "apps",
               "management", "commands", "templatetags",
               # The ground floor of runs and of tracing.
               "core"}


def _names() -> dict[str, list[str]]:
    """Basename -> the modules and packages carrying it (migrations apart)."""
    names: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            # A template tag library is named for what it shows ({% load evaluations %}).
            if "migrations" in rel.parts or (rel.parent.name == "templatetags" and path.stem != "__init__"):
                continue
            name = rel.parent.name if path.stem == "__init__" else path.stem
            names.setdefault(name, []).append(rel.as_posix())
    return names


def test_one_name_per_idea():
    repeated = {name: where for name, where in _names().items()
                if len(where) > 1 and name not in LAYER_NAMES}
    assert not repeated, f"one basename, several ideas: {repeated}"


def _layout_paths() -> set[str]:
    """The folders README's Layout names, from the indentation of its tree (two spaces a level)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    paths: set[str] = set()
    stack: list[str] = []
    for line in block.splitlines():
        stripped = line.lstrip(" ")
        head = stripped.split(" ", 1)[0]
        if not head.endswith("/") or not stripped:
            continue
        depth = (len(line) - len(stripped)) // 2
        stack = [*stack[:depth], head.rstrip("/")]
        paths.add("/".join(stack))
    return paths


def test_the_readme_layout_names_every_package():
    named = _layout_paths()
    packages = sorted(init.parent.relative_to(ROOT).as_posix() for top in ("runs", "tracing")
                      for init in (ROOT / top).rglob("__init__.py")
                      if not {"migrations", "commands"} & set(init.relative_to(ROOT).parts))
    missing = [p for p in packages if p not in named]
    assert not missing, f"README's Layout does not name: {missing}"
