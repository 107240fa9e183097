from __future__ import annotations

import json

from tracing.core.anchoring import PATTERNS, anchor_report
from tracing.core.steps import Step


def report_all(steps, task: str = "", **kw):
    """The anchor report with every pattern shown, weak ones too: the pattern
    tests pin what each pattern detects; which patterns are shown by default
    is pinned in test_anchoring_strength.py."""
    return anchor_report(steps, task, promoted=frozenset(PATTERNS), **kw)


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


class Run:
    """A tiny trajectory builder for the anchoring tests: steps numbered in order."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def _add(self, **kw) -> Run:
        self.steps.append(Step(index=len(self.steps), **kw))
        return self

    def user(self, text: str) -> Run:
        return self._add(kind="observation", text=text, tool="user")

    def reply(self, text: str) -> Run:
        return self._add(kind="action", text=text, tool="respond", args={"content": text})

    def call(self, tool: str, args) -> Run:
        """A function call: JSON arguments."""
        return self._add(kind="action", text=f"{tool}({json.dumps(args)})", tool=tool, args=args)

    def run(self, tool: str, code: str) -> Run:
        """Code or a query sent to an interpreter tool, as MINT and InterCode do."""
        return self._add(kind="action", text=code, tool=tool, args=code)

    def command(self, text: str, tool: str | None = None) -> Run:
        """A text-mode command ("take mug 2 from shelf 1", "cat flag.txt"): the tool is its verb."""
        verb = tool or text.split(" ", 1)[0]
        args = text[len(verb):].strip() if text.startswith(verb) else text
        return self._add(kind="action", text=text, tool=verb, args=args or text)

    def result(self, tool: str, data) -> Run:
        text = data if isinstance(data, str) else json.dumps(data)
        return self._add(kind="observation", text=text, tool=tool)

    def thought(self, text: str) -> Run:
        return self._add(kind="thought", text=text)

    def final(self, text: str, tool: str = "Finish", args=None) -> Run:
        return self._add(kind="final", text=text, tool=tool, args=args if args is not None else text)

    def report(self, task: str = "", context=None):
        return report_all(self.steps, task=task, context=context)
