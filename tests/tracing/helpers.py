from __future__ import annotations

from pathlib import Path

from tracing.steps import Step

# CI clones the repo next to shared/: REPO_ROOT.parent / "shared" / "eval".
EVAL_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "eval"


def act(i: int, tool: str | None, args, text: str = "") -> Step:
    return Step(index=i, kind="action", text=text or f"{tool}[{args}]", tool=tool, args=args)


def obs(i: int, text: str, tool: str | None = None, status: str | None = None) -> Step:
    return Step(index=i, kind="observation", text=text, tool=tool, meta={"status": status} if status else {})


def thought(i: int, text: str) -> Step:
    return Step(index=i, kind="thought", text=text)


def loop_run(n_turns: int, text: str = "Nothing happens.", start: int = 0, step: int = 2) -> list[Step]:
    """An agent calling the same action and getting the same useless answer."""
    out: list[Step] = []
    i = start
    for _ in range(n_turns):
        out.append(act(i, "search", "same query"))
        out.append(obs(i + 1, text, "search"))
        i += step
    return out
