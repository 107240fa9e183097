"""Where the local model (Gemma 3 270M behind llama.cpp) stands: building,
starting, ready, failed (why) or off.

`make demo` (scripts/demo.py) serves the product first and builds the local
model's runtime in the background; it writes its progress to a small JSON state
file that the New-run form reads through `status()`. Without a state file (a
deployment that runs the model server itself, e.g. compose), or when the demo
that wrote it is gone, the model server is asked directly.

No Django here beyond reading two settings in `status()`, so the demo script can
write the file before any settings exist.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

BUILDING, STARTING, READY, FAILED, OFF, NOT_RUNNING = "building", "starting", "ready", "failed", "off", "not running"
# The states after which nothing changes without a new `make demo`: the form stops polling.
SETTLED = {READY, FAILED, OFF, NOT_RUNNING}

# cmake/ninja progress as pip -v prints it: "[ 42%] Building C object ..." or "[37/152] Building CXX object ...".
_PERCENT = re.compile(r"^\s*\[\s*(\d{1,3})%\]", re.M)
_STEPS = re.compile(r"^\s*\[(\d+)/(\d+)\]", re.M)
# A probe of a model server that is not there must not hold up the page.
PROBE_TIMEOUT_S = 0.5


@dataclass
class State:
    state: str
    detail: str = ""
    progress: str = ""
    log: str = ""
    since: float = field(default_factory=time.time)
    pid: int = 0

    @property
    def settled(self) -> bool:
        return self.state in SETTLED

    def elapsed(self, now: float | None = None) -> str:
        seconds = int((now or time.time()) - self.since)
        return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def write_state(path: Path, state: State) -> None:
    """Atomically, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state)), encoding="utf-8")
    os.replace(tmp, path)


def read_state(path: Path) -> State | None:
    """The demo's state, or None when there is none or its writer is gone."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        state = State(**{k: data[k] for k in State.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if state.pid and not _alive(state.pid):
        return None
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build_progress(log_tail: str) -> str:
    """The latest cmake/ninja progress marker in the tail of a `pip install -v` log."""
    steps = list(_STEPS.finditer(log_tail))
    percents = list(_PERCENT.finditer(log_tail))
    last_steps = steps[-1] if steps else None
    last_percent = percents[-1] if percents else None
    if last_steps and (not last_percent or last_steps.start() > last_percent.start()):
        done, total = int(last_steps.group(1)), int(last_steps.group(2))
        return f"{round(100 * done / total)}% ({done}/{total} files compiled)" if total else ""
    if last_percent:
        return f"{last_percent.group(1)}%"
    return ""


def probe(base_url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Does an OpenAI-compatible server answer at base_url?"""
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def status() -> State:
    """For the New-run form: the demo's state file, else a probe of the configured server."""
    from django.conf import settings
    from django.utils.translation import gettext as _

    state = read_state(Path(settings.LOCAL_MODEL_STATE_FILE))
    if state is not None:
        return state
    url = settings.LOCAL_MODEL_BASE_URL
    if probe(url):
        return State(READY, _("at %(url)s") % {"url": url})
    return State(NOT_RUNNING, _("no server answers at %(url)s; `make demo` builds and starts it") % {"url": url})
