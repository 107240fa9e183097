"""Fault injection per run: make tools time out, fail, come back empty or junk.

So observation governance and the watchdog can be exercised on purpose. The
draw is seeded by the run's seed: the same run gets the same faults.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, fields
from typing import Any

from runs.agent.tools import Tool, ToolRegistry, ToolResult

# Tools that never get faults: `finish` ends the run, it calls nothing remote.
EXEMPT_TOOLS = frozenset({"finish"})

JUNK_PAGE = (
    "<html><head><style>.nav{display:flex}</style><script>var _gaq=_gaq||[];</script></head>"
    "<body><nav>Home | About | Careers | Contact | Cookie settings</nav>"
    "<div class='cookie'>We use cookies to improve your experience. Accept all | Reject</div>"
    "<footer>© 2026 All rights reserved · Privacy · Terms · Sitemap</footer></body></html>"
)


class FaultError(ValueError):
    pass


@dataclass(frozen=True)
class FaultRates:
    timeout: float = 0.0
    http500: float = 0.0
    empty: float = 0.0
    junk: float = 0.0

    @classmethod
    def from_dict(cls, data: Any) -> FaultRates:
        if data in (None, {}):
            return cls()
        if not isinstance(data, dict):
            raise FaultError("faults must be an object of rates")
        names = {f.name for f in fields(cls)}
        values = {}
        for key, value in data.items():
            if key not in names:
                raise FaultError(f"faults.{key}: unknown fault (one of {', '.join(sorted(names))})")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                raise FaultError(f"faults.{key}: must be a number")
            if not 0 <= value <= 1:
                raise FaultError(f"faults.{key}: must be between 0 and 1")
            values[key] = float(value)
        rates = cls(**values)
        if rates.total > 1:
            raise FaultError("faults: the rates add up to more than 1")
        return rates

    @property
    def total(self) -> float:
        return self.timeout + self.http500 + self.empty + self.junk

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}


class FaultyTool:
    def __init__(self, tool: Tool, rates: FaultRates, rng: random.Random) -> None:
        self.tool = tool
        self.rates = rates
        self.rng = rng
        self.name = tool.name
        self.description = tool.description
        self.parameters = tool.parameters
        self.text_arg = tool.text_arg
        self.side_effect = tool.side_effect

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        draw = self.rng.random()
        for kind in ("timeout", "http500", "empty", "junk"):
            rate = getattr(self.rates, kind)
            if draw < rate:
                return _injected(kind)
            draw -= rate
        return self.tool(args)

    def __getattr__(self, name: str) -> Any:
        # lookup reads the search tool's last documents through the wrapper.
        return getattr(self.tool, name)


def _injected(kind: str) -> ToolResult:
    meta = {"fault": kind, "injected": True}
    if kind == "timeout":
        return ToolResult("The tool did not answer within 10 s (timeout).", "timeout", meta)
    if kind == "http500":
        return ToolResult("HTTP 500 Internal Server Error from the source.", "error", meta)
    if kind == "empty":
        return ToolResult("", "empty", meta)
    return ToolResult(JUNK_PAGE, "ok", meta)


def with_faults(tools: ToolRegistry, rates: FaultRates, seed: int | None) -> ToolRegistry:
    if rates.total == 0:
        return tools
    rng = random.Random(f"faults:{seed}")
    wrapped = [
        tool if tool.name in EXEMPT_TOOLS else FaultyTool(tool, rates, rng)
        for tool in (tools.get(name) for name in tools.names)
    ]
    return ToolRegistry(wrapped)
