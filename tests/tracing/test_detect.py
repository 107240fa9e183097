from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.eval_data import eval_runs
from tracing import detect
from tracing.core.steps import trajectory_from_dict
from tracing.core.watchdog import DEFAULT_POLICY, PolicyError

REPO = Path(__file__).resolve().parents[2]


def loop_run_dict(run_id: str, turns: int = 30) -> dict:
    steps = []
    for k in range(turns):
        steps.append({"index": 2 * k, "kind": "action", "content": "Search[x]", "tool": "Search", "args": "x"})
        steps.append({"index": 2 * k + 1, "kind": "observation", "content": "No results", "tool": "Search"})
    return {"run_id": run_id, "task": "find x", "success": False, "steps": steps}


def write_jsonl(tmp_path: Path) -> Path:
    good = {
        "run_id": "ok-1",
        "task": "Where is the Eiffel Tower?",
        "success": True,
        "steps": [
            {"index": 0, "kind": "thought", "content": "search it"},
            {"index": 1, "kind": "action", "content": "Search[Eiffel Tower]", "tool": "Search", "args": "Eiffel Tower"},
            {"index": 5, "kind": "observation", "content": "The Eiffel Tower is in Paris.", "tool": "Search"},
            {"index": 9, "kind": "final", "content": "Paris", "tool": "Finish", "args": "Paris"},
        ],
    }
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"run_id": "bad", "steps": "nope"}),
        "",
        json.dumps(loop_run_dict("loop-1")),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_run_file_reports_bad_lines_and_continues(tmp_path):
    path = write_jsonl(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    ok, bad = detect.run_file(path, DEFAULT_POLICY, out, err)
    assert (ok, bad) == (2, 2)
    assert ":2: not JSON" in err.getvalue() and ":3: " in err.getvalue()
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["run_id"] for r in rows] == ["ok-1", "loop-1"]
    assert set(rows[0]["signals"]) == {"0", "1", "5", "9"}
    assert rows[0]["interventions"] == []
    loop = rows[1]
    assert loop["interventions"][-1]["tier"] == "stop"
    assert set(loop["interventions"][0]) == {"step", "detector", "tier", "evidence"}
    # replayed as if live: nothing after the stop is evaluated
    stop_step = loop["interventions"][-1]["step"]
    assert max(int(k) for k in loop["signals"]) == stop_step == loop["stopped_at"]


def test_cli_exit_codes(tmp_path):
    path = write_jsonl(tmp_path)
    cmd = [sys.executable, "-m", "tracing.detect", str(path)]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    assert res.returncode == 1 and len(res.stdout.splitlines()) == 2 and "line" not in res.stdout
    res = subprocess.run(
        [*cmd, "--policy", '{"windows": {"stagnation": "x"}}'], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert res.returncode == 2 and "windows.stagnation" in res.stderr
    res = subprocess.run([*cmd, "--policy", "{oops"], cwd=REPO, capture_output=True, text=True, check=False)
    assert res.returncode == 2 and "JSON" in res.stderr
    res = subprocess.run([*cmd, "--policy", "off"], cwd=REPO, capture_output=True, text=True, check=False)
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert all(r["interventions"] == [] for r in rows)


def test_load_policy():
    assert detect.load_policy(None) is DEFAULT_POLICY
    assert detect.load_policy("hints-only").name == "hints-only"
    assert detect.load_policy('{"name": "mine", "version": 2}').version == 2
    with pytest.raises(PolicyError) as exc:
        detect.load_policy('{"ladder": {"stop_streak": 0}}')
    assert exc.value.field == "ladder.stop_streak"
    with pytest.raises(PolicyError):
        detect.load_policy("no-such-policy")


def test_analyzer_extension_point():
    traj = trajectory_from_dict(loop_run_dict("r", 3))

    def steps_seen(t, evaluated, wd):
        return {"n_evaluated": len(evaluated), "policy_seen": wd.policy.name}

    def broken(t, evaluated, wd):
        raise ValueError("nope")

    out = detect.replay(traj, DEFAULT_POLICY, analyzers=[steps_seen, broken])
    # The third identical failing call is stopped before it runs (the fast lane): 5 steps seen.
    assert out["n_evaluated"] == 5 and out["policy_seen"] == "default"
    assert out["analyzer_errors"] == ["broken: ValueError: nope"]
    assert isinstance(detect.ANALYZERS, list)


@pytest.mark.parametrize("source", ["react_exemplars", "react_fever"])
def test_real_file(source, tmp_path):
    path = eval_runs(source)
    out, err = io.StringIO(), io.StringIO()
    ok, bad = detect.run_file(path, DEFAULT_POLICY, out, err)
    assert bad == 0 and ok > 20
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert all(r["errors"] == [] for r in rows)
    if source == "react_exemplars":
        # known-good runs: the default policy must not stop them
        assert not any(iv["tier"] == "stop" for r in rows for iv in r["interventions"])


def test_each_line_carries_the_shown_break_and_the_first_finding(tmp_path):
    import io
    import json as _json

    from tracing.core.watchdog import DEFAULT_POLICY
    from tracing.detect import run_file

    line = {"run_id": "a", "task": "Where was the author born?", "steps": [
        {"index": 0, "kind": "observation", "content": "The author was born in Calder Bay."},
        {"index": 1, "kind": "thought", "content": "So the author was born in Haiyan."},
    ]}
    path = tmp_path / "one.jsonl"
    path.write_text(_json.dumps(line) + "\n")
    out = io.StringIO()
    run_file(path, DEFAULT_POLICY, out, io.StringIO())
    result = _json.loads(out.getvalue())
    # A name nothing observed supports is weak evidence: a finding, not the break.
    assert result["first_anchor_break"] is None
    assert result["first_finding"] == 1
    assert "Haiyan" in result["anchor_findings"][0]["reason"]
    line["steps"][1]["content"] = "The observation says the author was born in Haiyan."
    path.write_text(_json.dumps(line) + "\n")
    out = io.StringIO()
    run_file(path, DEFAULT_POLICY, out, io.StringIO())
    result = _json.loads(out.getvalue())
    assert result["first_anchor_break"] == 1  # it names its source, which lacks the value: strong
    assert "Haiyan" in result["anchor_reason"]
