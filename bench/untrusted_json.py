"""What tracing.core.untrusted_json costs over a bare json.loads, on a step-API body of 20,000 steps.

    python bench/untrusted_json.py [--smoke: 500 steps]

Prints the best of 5 for each (the baseline is in the same run, so a busy
machine slows both alike).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import _paths  # noqa: E402

from tracing.core import untrusted_json  # noqa: E402

STEPS = _paths.sized(20_000, 500)


def _best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    steps = [{"index": i, "kind": "observation", "text": "x" * 200, "tool": "search",
              "args": {"q": "abc", "k": [1, 2, {"z": "y"}]}, "meta": {"status": "ok", "detector": {"a": 1}}}
             for i in range(STEPS)]
    text = json.dumps({"steps": steps})
    base = _best(lambda: json.loads(text))
    ours = _best(lambda: untrusted_json.loads(text))
    print(f"body: {STEPS:,} steps, {len(text) / 1e6:.1f} MB")
    print(f"json.loads            {base * 1000:8.1f} ms")
    print(f"untrusted_json.loads  {ours * 1000:8.1f} ms  ({ours / base:.2f}x)")


if __name__ == "__main__":
    main()
