"""The lock files in requirements/ stay in step with pyproject.toml, and
scripts/venv.sh installs one with uv and, failing uv, with pip (issue 30, item 1).

`make lock` regenerates the files; these tests fail when a dependency is added
to, removed from or re-bounded in pyproject.toml without it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Each lock and the extras of pyproject.toml it is compiled with (scripts/venv.sh lock).
LOCKS = {"demo.lock": (), "test.lock": ("dev", "local")}


def pins(lock: Path) -> dict[str, tuple[Version, bool]]:
    """name -> (pinned version, whether pyproject.toml asks for it directly), read
    from uv's output: `name==version` then its `# via` lines."""
    found: dict[str, tuple[Version, bool]] = {}
    name = ""
    for line in lock.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            pinned, _, version = line.partition("==")
            name = canonicalize_name(pinned)
            found[name] = (Version(version.strip()), False)
        elif name and "agentlab (pyproject.toml)" in line:
            found[name] = (found[name][0], True)
    return found


def wanted(extras: tuple[str, ...]) -> list[Requirement]:
    listed = PYPROJECT["dependencies"] + [r for extra in extras for r in PYPROJECT["optional-dependencies"][extra]]
    return [Requirement(r) for r in listed]


@pytest.mark.parametrize("lock", LOCKS)
def test_a_lock_pins_what_pyproject_asks_for_within_its_bounds(lock):
    locked = pins(ROOT / "requirements" / lock)
    requirements = wanted(LOCKS[lock])
    direct = {name for name, (_, asked) in locked.items() if asked}
    names = {canonicalize_name(r.name) for r in requirements}
    assert names - locked.keys() == set(), f"in pyproject.toml, not in {lock}: run `make lock`"
    assert direct == names, f"{lock} was made from another pyproject.toml: run `make lock`"
    for requirement in requirements:
        version = locked[canonicalize_name(requirement.name)][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock} pins {requirement.name}=={version}, outside {requirement}: run `make lock`")


def test_the_demo_lock_is_the_test_lock_less_the_extras():
    """`make test` after `make demo` only adds packages: none changes version."""
    demo, test = pins(ROOT / "requirements" / "demo.lock"), pins(ROOT / "requirements" / "test.lock")
    assert {name: version for name, (version, _) in demo.items()} == {
        name: test[name][0] for name in demo if name in test}
    assert demo.keys() <= test.keys()


def test_the_locks_name_the_python_the_machines_run():
    script = (ROOT / "scripts" / "venv.sh").read_text()
    python = script.split("LOCK_PYTHON=", 1)[1].split()[0]
    for lock in LOCKS:
        header = (ROOT / "requirements" / lock).read_text().splitlines()[1]
        assert f"uv pip compile pyproject.toml --python-version {python}" in header, header


TINY_LOCK = "six==1.17.0\n"


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_venv_sh_installs_a_lock_and_the_project(tmp_path, installer):
    """The real script against PyPI: uv (from PATH, or installed into the venv),
    and pip alone when INSTALLER=pip (what a machine gets when uv cannot be had)."""
    lock = tmp_path / "tiny.lock"
    lock.write_text(TINY_LOCK)
    venv = tmp_path / "venv"
    env = {**os.environ, "INSTALLER": installer, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "venv.sh"), "install", str(venv), str(lock)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"installing {lock} with {installer}" in done.stderr
    python = venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import importlib.util, six; print(six.__version__, importlib.util.find_spec('agentlab').origin)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    version, where = probe.stdout.split()
    assert version == "1.17.0" and where.startswith(str(ROOT))  # editable: the checkout's own code
    # pip is there either way: the demo's background build of the local model uses it.
    assert subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True).returncode == 0
    assert (venv / "bin" / "uv").exists() == (installer == "uv" and not shutil.which("uv"))
