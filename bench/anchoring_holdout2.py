"""A second, blind held-out benchmark for the anchoring detector (``tracing.core.anchoring``).

    python bench/anchoring_holdout2.py [--seed 23] [--per-source N] [--show-missed K]

Bases are real runs of the eight sources in ``shared/eval`` on which
``anchor_report`` reports no break. Each case copies one base and injects ONE
lost-grounding lapse at a known step (written from how agents fail, not from
the detector's code; see ``bench/README-holdout2.md``), then scores the
detector's ``first_break`` against the step where a careful reviewer would put
the first break:

- exact: first_break == expected;  near: 0 < |first_break - expected| <= 2;
- early: first_break < expected - 2;  late: first_break > expected + 2;
- missed: no break at all.

``--per-source N`` is the number of cases per kind within each source (fewer
when fewer clean runs fit the kind). Pure Python, stdlib only, no Django.
Deterministic: one ``random.Random`` per (seed, source, kind), seeded with a
string (hashed with SHA-512 by ``random``, not by ``hash()``), and everything
iterated in sorted or recorded order.

``--smoke``: the same on a few short runs per source (bench/_paths.py), seconds.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paths import SOURCES, describe, eval_dir, setup_code_path  # noqa: E402

setup_code_path()

from tracing.core.steps import Step, Trajectory, context_text, read_jsonl  # noqa: E402

# Kinds, in the order they are generated and printed.
KINDS = (
    "value_swap",
    "misread_output",
    "answer_swap",
    "obs_failure",
    "claim_after_error",
    "unseen_argument",
    "wrong_record",
    "repeat_rejected",
    "stale_value",
    "phantom_call",
)

# Which kinds fit which kind of agent (a "domain", read from the run's tools).
# A kind is left out where it would not be a lapse or does not occur: answers
# that are free-text entities only exist in QA; several JSON records side by
# side only in tool-calling dialogues; search terms (QA) and code (MINT) are
# chosen freely, so "an argument nothing showed" is no lapse there.
DOMAIN_KINDS: dict[str, tuple[str, ...]] = {
    "alfworld": (
        "value_swap",
        "obs_failure",
        "claim_after_error",
        "unseen_argument",
        "repeat_rejected",
        "phantom_call",
    ),
    "qa": ("value_swap", "answer_swap", "obs_failure", "claim_after_error", "repeat_rejected", "phantom_call"),
    "webshop": ("value_swap", "obs_failure", "claim_after_error", "unseen_argument", "repeat_rejected", "phantom_call"),
    "sql": ("value_swap", "obs_failure", "claim_after_error", "unseen_argument", "repeat_rejected", "phantom_call"),
    "bash": ("value_swap", "obs_failure", "claim_after_error", "unseen_argument", "repeat_rejected", "phantom_call"),
    "code": ("misread_output", "obs_failure", "claim_after_error", "repeat_rejected", "phantom_call"),
    "dialogue": (
        "value_swap",
        "obs_failure",
        "unseen_argument",
        "wrong_record",
        "repeat_rejected",
        "stale_value",
        "phantom_call",
    ),
}

DEFAULT_SEED = 23
DEFAULT_PER_SOURCE = 20
# Distance (in steps) within which a break counts as "near" the expected step.
NEAR = 2
AGENT_TEXT_KINDS = ("thought", "final")


@dataclass
class Case:
    source: str
    run_id: str
    kind: str
    steps: list[Step]
    expected: int  # step index where the first break should be reported
    changed: int  # step index whose content was corrupted
    before: str
    after: str
    trajectory: Trajectory | None = field(default=None, repr=False)


# ---------------------------------------------------------------------------
# Reading a run
# ---------------------------------------------------------------------------

ALFWORLD_TOOLS = frozenset({"go to", "take", "put", "open", "close", "cool", "heat", "clean", "use", "examine", "look"})
QA_TOOLS = frozenset({"Search", "Lookup", "Finish"})
DIALOGUE_HINT_TOOLS = frozenset({"respond", "user"})
RETAIL_TOOLS = frozenset({"get_order_details", "get_user_details", "find_user_id_by_email", "find_user_id_by_name_zip"})
TELECOM_TOOLS = frozenset({"get_customer_by_phone", "get_details_by_id", "get_bills_for_customer", "check_status_bar"})


def domain_of(traj: Trajectory) -> str:
    tools = {s.tool for s in traj.steps if s.tool}
    if tools & DIALOGUE_HINT_TOOLS or tools & RETAIL_TOOLS or tools & TELECOM_TOOLS:
        return "dialogue"
    if tools & {"execute", "solution"}:
        return "code"
    if "sql" in tools:
        return "sql"
    if "bash" in tools:
        return "bash"
    if tools & {"search", "click"}:
        return "webshop"
    if tools & QA_TOOLS:
        return "qa"
    if tools & ALFWORLD_TOOLS:
        return "alfworld"
    return "other"


def is_agent_text(step: Step) -> bool:
    """A step carrying the agent's own words: a thought, a final answer, or a reply."""
    return step.kind in AGENT_TEXT_KINDS or (step.kind == "action" and (step.tool or "") == "respond")


def is_tool_obs(step: Step) -> bool:
    return step.kind == "observation" and (step.tool or "").lower() != "user"


def pair_observations(steps: list[Step]) -> dict[int, int]:
    """Position of each tool observation -> position of the call that produced it.

    Calls are matched first-in first-out per tool name, so parallel calls
    (tau2: two actions, then their two observations) pair correctly.
    """
    pending: dict[str, list[int]] = {}
    out: dict[int, int] = {}
    for pos, s in enumerate(steps):
        if s.kind in ("action", "final") and s.tool and s.tool != "respond":
            pending.setdefault(s.tool, []).append(pos)
        elif is_tool_obs(s) and pending.get(s.tool or ""):
            out[pos] = pending[s.tool or ""].pop(0)
    return out


def step_blob(step: Step) -> str:
    args = step.args
    extra = args if isinstance(args, str) else (json.dumps(args, ensure_ascii=False, sort_keys=True) if args else "")
    return f"{step.text}\n{extra}"


def corpus_of(traj: Trajectory) -> str:
    """Every text the run holds: a replacement value must be absent from all of it."""
    parts = [traj.task, traj.goal, context_text(traj.context)]
    parts.extend(step_blob(s) for s in traj.steps)
    return "\n".join(parts)


def evidence_before(traj: Trajectory, pos: int) -> str:
    """What the agent had seen or said before the step at ``pos``."""
    parts = [traj.goal, context_text(traj.context)]
    parts.extend(step_blob(s) for s in traj.steps[:pos])
    return "\n".join(parts)


@functools.lru_cache(maxsize=8192)
def _bounded(token: str) -> re.Pattern[str]:
    # A whole token: "15" is not inside "15.1", "2004" not inside "12004".
    return re.compile(r"(?<!\w)(?<!\d\.)" + re.escape(token) + r"(?!\w)(?!\.\d)", re.IGNORECASE)


def contains(text: str, token: str) -> bool:
    return bool(_bounded(token).search(text))


def replace_token(text: str, old: str, new: str) -> str:
    return _bounded(old).sub(lambda _m: new, text)


def replace_in_args(args: Any, old: str, new: str) -> Any:
    if isinstance(args, str):
        return replace_token(args, old, new)
    if isinstance(args, list):
        return [replace_in_args(a, old, new) for a in args]
    if isinstance(args, dict):
        return {k: replace_in_args(v, old, new) for k, v in args.items()}
    return args


def clone(steps: list[Step]) -> list[Step]:
    return [copy.deepcopy(s) for s in steps]


def build(traj: Trajectory, kind: str, pos: int, new_step: Step, expected_pos: int, before: str | None = None) -> Case:
    steps = clone(traj.steps)
    old = steps[pos]
    steps[pos] = new_step
    return Case(
        source=traj.source,
        run_id=traj.run_id,
        kind=kind,
        steps=steps,
        expected=traj.steps[expected_pos].index,
        changed=old.index,
        before=before if before is not None else old.text,
        after=new_step.text,
        trajectory=traj,
    )


def with_token_replaced(step: Step, old: str, new: str) -> Step:
    s = copy.deepcopy(step)
    s.text = replace_token(s.text, old, new)
    s.args = replace_in_args(s.args, old, new)
    return s


def with_text(step: Step, text: str) -> Step:
    """The agent step re-worded; a reply's ``content`` argument follows its text."""
    s = copy.deepcopy(step)
    s.text = text
    if isinstance(s.args, dict) and "content" in s.args:
        s.args = {**s.args, "content": text}
    return s


# ---------------------------------------------------------------------------
# Values and how to change them
# ---------------------------------------------------------------------------

# A token with at least two digits (ids, prices, years, dates, counts), or a CTF flag.
_VALUE_RE = re.compile(r"#?[A-Za-z0-9_]*\d[A-Za-z0-9_]*(?:[.:/-][A-Za-z0-9_]+)*|\w+\{[^{}\s]+\}")
_ORDINAL_RE = re.compile(r"^\d+(st|nd|rd|th)$", re.IGNORECASE)
# ALFWorld names objects and receptacles "potato 1"; thoughts also write "potato (1)".
# "(1-3)" is a range the agent plans over, not an object, and is left alone.
_ALF_OBJ_RE = re.compile(r"\b([a-z]+) (?:\((\d+)\)|(\d+)\b(?!-))")


def value_tokens(text: str) -> list[str]:
    out: list[str] = []
    for m in _VALUE_RE.finditer(text):
        tok = m.group(0).rstrip(".:/-_")
        if "{" not in tok and (sum(c.isdigit() for c in tok) < 2 or _ORDINAL_RE.match(tok)):
            continue
        if tok not in out:
            out.append(tok)
    return out


def perturbations(token: str, rng: random.Random) -> list[str]:
    """Variants of ``token`` that a slip would produce: one digit (or flag letter) changed."""
    if "{" in token:
        head, inner = token.split("{", 1)
        inner = inner[:-1]
        spots = [i for i, c in enumerate(inner) if c.isalpha()]
        out = []
        for i in spots:
            for repl in ("e", "a", "o", "i", "x"):
                if repl != inner[i].lower():
                    out.append(f"{head}{{{inner[:i]}{repl}{inner[i + 1 :]}}}")
                    break
        rng.shuffle(out)
        return out
    digits = [i for i, c in enumerate(token) if c.isdigit()]
    # Prefer a digit of the integer part (32.99 -> 38.99) over the cents.
    integer = [i for i in digits if "." not in token[:i]]
    order = list(reversed(integer or digits))
    if len(order) > 1 and token[order[-1]] != "0":
        order = order[:-1] if len(order) > 2 else order  # keep the leading digit of long numbers
    out = []
    for i in order[:3]:
        deltas = [1, 2, 3, 4, 5, 6, 7, 8, 9]
        rng.shuffle(deltas)
        for d in deltas:
            c = str((int(token[i]) + d) % 10)
            if i == 0 and c == "0":
                continue
            out.append(token[:i] + c + token[i + 1 :])
    return out


def unseen_variant(token: str, corpus: str, rng: random.Random) -> str | None:
    for cand in perturbations(token, rng):
        if cand != token and not contains(corpus, cand):
            return cand
    return None


def alf_objects(text: str) -> list[tuple[str, str, str]]:
    """(as written, name, number) for each "potato 1" / "potato (1)" in an ALFWorld text."""
    return [(m.group(0), m.group(1), m.group(2) or m.group(3)) for m in _ALF_OBJ_RE.finditer(text)]


def unseen_alf_number(name: str, number: str, corpus: str, rng: random.Random) -> str | None:
    # Small numbers first: ALFWorld rooms rarely hold more than five of a thing.
    low = [str(n) for n in range(1, 6) if str(n) != number]
    high = [str(n) for n in range(6, 10) if str(n) != number]
    rng.shuffle(low)
    rng.shuffle(high)
    choices = low + high
    for n in choices:
        if not contains(corpus, f"{name} {n}") and not contains(corpus, f"{name} ({n})"):
            return n
    return None


# ---------------------------------------------------------------------------
# Failures, as each environment words them
# ---------------------------------------------------------------------------

_BASH_FAIL_RE = re.compile(
    r"No such file or directory|command not found|syntax error|Permission denied|cannot access|cannot stat|"
    r"unexpected EOF|Error executing|Traceback|invalid option|missing operand",
    re.IGNORECASE,
)
_STEPS_LEFT_RE = re.compile(r"\nYou have \d+ steps? left.*$", re.DOTALL)


def is_rejection(domain: str, obs: Step) -> bool:
    """The environment refused or failed the call (never a timeout: retrying one is fine)."""
    t = obs.text.strip()
    if "timed out" in t.lower() or "timeout" in t.lower():
        return False
    if domain == "alfworld":
        return t == "Nothing happens."
    if domain == "qa":
        return t.startswith("Could not find") or t.startswith("Invalid action")
    if domain == "webshop":
        return t == "Invalid action!"
    if domain == "sql":
        return t.startswith("Error executing query")
    if domain == "bash":
        return bool(_BASH_FAIL_RE.search(t)) or t.startswith("Submitted flag is incorrect")
    if domain == "code":
        return "Traceback" in t or t.startswith("Your answer is wrong") or "Error:" in t.split("\n", 3)[-1][:200]
    if domain == "dialogue":
        return t.startswith("Error")
    return False


def is_failure(domain: str, obs: Step) -> bool:
    """A rejection, or a result that is empty."""
    t = obs.text.strip()
    if domain == "sql" and t == "[]":
        return True
    if domain == "qa" and t in ("No Results", "No more results."):
        return True
    if domain == "webshop" and "Total results: 0" in t:
        return True
    return is_rejection(domain, obs)


def failure_text(domain: str, call: Step, obs: Step) -> str | None:
    """What the environment would have said had the call failed."""
    args = call.args if isinstance(call.args, str) else ""
    if domain == "alfworld":
        return "Nothing happens."
    if domain == "qa":
        if call.tool == "Search":
            return f"Could not find [{args}]. Similar: []."
        if call.tool == "Lookup":
            return "No more results."
        return None
    if domain == "webshop":
        return "Invalid action!" if call.tool == "click" else None
    if domain == "sql":
        if args.strip().lower().startswith("select"):
            return "[]"
        return "Error executing query: (1146) table does not exist"
    if domain == "bash":
        prog = (args.strip().split() or ["sh"])[0]
        return f"/bin/bash: line 1: {prog}: No such file or directory\n"
    if domain == "code":
        if call.tool != "execute":
            return None
        m = _STEPS_LEFT_RE.search(obs.text)
        tail = m.group(0) if m else ""
        return (
            "---------------------------------------------------------------------------\n"
            "IndexError                                Traceback (most recent call last)\n"
            "Cell In[1], line 4\n----> 4 result = solve(data)\n\nIndexError: list index out of range" + tail
        )
    if domain == "dialogue":
        name = (call.tool or "").lower()
        for word, what in (("order", "Order"), ("user", "User"), ("product", "Product"), ("customer", "Customer")):
            if word in name:
                return f"Error: {what} not found"
        if name == "get_details_by_id":
            return "Error: ID not found"
        return "Error: the request could not be completed"
    return None


# Words with which an agent owns up to a failure: a step that says them is not
# a false claim of success.
_ACK_RE = re.compile(
    r"\b(not|no|nothing|error|fail\w*|wrong|incorrect|couldn't|could not|didn't|did not|unable|empty|invalid|"
    r"isn't|doesn't|seems|try again|instead|retry|mistake|oops|sorry|unfortunately)\b",
    re.IGNORECASE,
)
# Words with which an agent states that a result came out as wanted.
_SUCCESS_RE = re.compile(
    r"\b(pass(es|ed)?|correct(ly)?|works?|worked|working|expected|success\w*|as intended|right|"
    r"returns?|returned|shows?|showed|prints?|printed|outputs?|gives?|gave|found|get|got|is the answer|"
    r"should be the answer)\b",
    re.IGNORECASE,
)
_CAP_RE = re.compile(r"\b[A-Z][a-zA-Z'-]{3,}\b")
# Capitalised words that start sentences or name the environment, not an entity.
_COMMON_CAPS_WORDS = (
    "This That There These Those Then Next Now First Finish Search Lookup Thought Action Observation Here "
    "Which What When Where True False None Your Please Thank Thanks Since However Also Let Let's Could Would "
    "Should They Their Yes Sure Great Okay Alright Hello Dear Based According Looks SUPPORTS REFUTES NOT "
    "ENOUGH INFO Buy Back Prev Page"
)
_COMMON_CAPS = frozenset(_COMMON_CAPS_WORDS.split())


def distinctive_tokens(step_text: str, obs_text: str, before: str) -> list[str]:
    """Tokens of ``step_text`` that the observation gave and nothing before it did."""
    cands = value_tokens(step_text) + [w for w in _CAP_RE.findall(step_text) if w not in _COMMON_CAPS]
    out = []
    for tok in cands:
        if tok in out:
            continue
        if contains(obs_text, tok) and not contains(before, tok):
            out.append(tok)
    return out


# ---------------------------------------------------------------------------
# The corruption makers. Each takes a run and a seeded generator and returns
# one Case, or None when the kind does not fit the run. Candidates are listed
# in step order and one is drawn with ``rng``.
# ---------------------------------------------------------------------------

Maker = Callable[[Trajectory, random.Random], "Case | None"]


def _last_tool_obs_before(steps: list[Step], pos: int) -> int | None:
    for p in range(pos - 1, -1, -1):
        if is_tool_obs(steps[p]):
            return p
    return None


def make_value_swap(traj: Trajectory, rng: random.Random) -> Case | None:
    """The agent restates a value (number, id, date, object number) an observation
    gave, but gets it wrong; the wrong value occurs nowhere in the run."""
    domain = domain_of(traj)
    steps = traj.steps
    corpus = corpus_of(traj)
    sites: list[tuple[int, str, str]] = []
    for pos, s in enumerate(steps):
        if not is_agent_text(s) or (s.kind == "final" and domain == "sql"):  # an SQL final is just "submit"
            continue
        before = evidence_before(traj, pos)
        obs_text = "\n".join(x.text for x in steps[:pos] if is_tool_obs(x))
        if not obs_text:
            continue
        if domain == "alfworld":
            for written, name, number in alf_objects(s.text):
                plain = f"{name} {number}"
                if contains(obs_text, plain) and not contains(traj.goal, plain):
                    n = unseen_alf_number(name, number, corpus, rng)
                    if n is not None:
                        sites.append((pos, written, written.replace(number, n)))
            continue
        # The value must be one the agent read, not one it chose: absent from the task,
        # the user's turns and the agent's own earlier steps (its code, its queries).
        others = "\n".join(step_blob(x) for x in steps[:pos] if not is_tool_obs(x))
        if domain == "code":
            # Code output is full of numbers: only what the last result printed counts.
            last = _last_tool_obs_before(steps, pos)
            obs_text = steps[last].text if last is not None else ""
        for tok in value_tokens(s.text):
            if not contains(obs_text, tok) or contains(traj.goal, tok) or contains(others, tok):
                continue
            new = unseen_variant(tok, corpus, rng)
            if new is not None and not contains(before, new):
                sites.append((pos, tok, new))
    if not sites:
        return None
    pos, old, new = rng.choice(sites)
    return build(traj, "value_swap", pos, with_token_replaced(steps[pos], old, new), pos)


_YES_NO = frozenset({"yes", "no", "supports", "refutes", "not enough info", "unknown"})


def _entity_answer(ans: str) -> bool:
    """A final answer that names an entity: capitalised words, no digits, not a label."""
    words = ans.split()
    return (
        bool(words)
        and ans.lower() not in _YES_NO
        and not any(c.isdigit() for c in ans)
        and words[0][:1].isupper()
        and len(words) <= 6
    )


def answer_pool(runs: Iterable[Trajectory]) -> list[str]:
    """Entity answers given in a source's runs: the stand-ins answer_swap draws from."""
    out = set()
    for t in runs:
        for s in t.steps:
            if s.kind == "final" and isinstance(s.args, str) and _entity_answer(s.args.strip()):
                out.add(s.args.strip())
    return sorted(out)


def make_answer_swap(traj: Trajectory, rng: random.Random, pool: Iterable[str] = ()) -> Case | None:
    """QA: the final answer names an entity no observation contains. The stand-in is
    another run's answer (a real entity of the same source) that occurs nowhere in
    this run, so the wrong answer reads like the ones agents actually make up."""
    if domain_of(traj) != "qa":
        return None
    steps = traj.steps
    corpus = corpus_of(traj)
    for pos, s in enumerate(steps):
        if s.kind != "final" or not isinstance(s.args, str):
            continue
        ans = s.args.strip()
        obs_text = "\n".join(x.text for x in steps[:pos] if is_tool_obs(x))
        if not _entity_answer(ans) or not contains(obs_text, ans) or contains(traj.task, ans):
            return None
        n = len(ans.split())
        cands = [c for c in pool if c != ans and abs(len(c.split()) - n) <= 1 and not contains(corpus, c)]
        if not cands:
            return None
        new = rng.choice(cands)
        ns = copy.deepcopy(s)
        ns.args = new
        ns.text = s.text.replace(ans, new) if ans in s.text else new
        return build(traj, "answer_swap", pos, ns, pos)
    return None


def _claims_result(domain: str, step: Step, obs: Step, call: Step, before: str) -> bool:
    """The agent step uses the observation as a success (so a failed one would make it a false claim)."""
    if _ACK_RE.search(step.text) and domain not in ("alfworld",):
        return False
    if domain == "alfworld":
        m = re.match(r"You (pick up|put|cool|heat|clean|open|turn on)\b", obs.text)
        if not m or step.kind != "thought" or not step.text.startswith("Now I"):
            return False
        objs = {f"{n} {k}" for _w, n, k in alf_objects(obs.text)}
        return any(f"{n} {k}" in objs for _w, n, k in alf_objects(step.text))
    if distinctive_tokens(step.text, obs.text, before):
        return True
    if domain in ("code", "sql", "bash") and step.kind == "thought":
        return bool(_SUCCESS_RE.search(step.text))
    return False


def make_obs_failure(traj: Trajectory, rng: random.Random) -> Case | None:
    """The call failed (the observation is turned into the environment's own error,
    "Nothing happens.", ``[]``, a traceback...), yet the agent's next step reports
    what the successful result had said."""
    domain = domain_of(traj)
    steps = traj.steps
    pairs = pair_observations(steps)
    sites: list[tuple[int, int, str]] = []
    for pos in sorted(pairs):
        obs, call = steps[pos], steps[pairs[pos]]
        if pos + 1 >= len(steps) or is_failure(domain, obs):
            continue
        nxt = steps[pos + 1]
        if not is_agent_text(nxt):
            continue
        fail = failure_text(domain, call, obs)
        if fail is None:
            continue
        before = evidence_before(traj, pos)
        if _claims_result(domain, nxt, obs, call, before):
            sites.append((pos, pos + 1, fail))
    if not sites:
        return None
    pos, exp, fail = rng.choice(sites)
    ns = copy.deepcopy(steps[pos])
    ns.text = fail
    return build(traj, "obs_failure", pos, ns, exp)


def _misprint(line: str, rng: random.Random) -> str | None:
    """The printed value a buggy function would have given instead: True/False flipped,
    or one digit changed."""
    if line in ("True", "False"):
        return "False" if line == "True" else "True"
    digits = [i for i, c in enumerate(line) if c.isdigit()]
    if not digits:
        return None
    i = digits[-1]
    d = rng.choice([1, 2, 3])
    return line[:i] + str((int(line[i]) + d) % 10) + line[i + 1 :]


def make_misread_output(traj: Trajectory, rng: random.Random) -> Case | None:
    """Code: a test printed a value other than the one its comment expects, and the
    agent's next thought says the tests pass (the observation is changed: one printed
    line no longer matches its "# expected ..." comment)."""
    if domain_of(traj) != "code":
        return None
    steps = traj.steps
    sites: list[tuple[int, int, str]] = []
    for pos, s in enumerate(steps):
        if s.kind != "action" or s.tool != "execute" or not isinstance(s.args, str) or pos + 2 >= len(steps):
            continue
        obs, nxt = steps[pos + 1], steps[pos + 2]
        if not is_tool_obs(obs) or nxt.kind != "thought":
            continue
        if not _SUCCESS_RE.search(nxt.text) or _ACK_RE.search(nxt.text):
            continue
        prints = [ln for ln in s.args.split("\n") if ln.startswith("print(") and "#" in ln]
        if len(prints) != len([ln for ln in s.args.split("\n") if ln.startswith("print(")]):
            continue
        m = _STEPS_LEFT_RE.search(obs.text)
        body = obs.text[: m.start()] if m else obs.text
        tail = obs.text[m.start() :] if m else ""
        lines = body.split("\n")
        if not prints or len(prints) != len(lines):
            continue
        comments = [p.split("#", 1)[1] for p in prints]
        if not all(ln.strip() and contains(c, ln.strip()) for ln, c in zip(lines, comments, strict=True)):
            continue  # every printed value must be the one its comment expects
        i = rng.randrange(len(lines))
        bad = _misprint(lines[i], rng)
        if bad is None or contains(comments[i], bad):
            continue
        new_lines = list(lines)
        new_lines[i] = bad
        sites.append((pos + 1, pos + 2, "\n".join(new_lines) + tail))
    if not sites:
        return None
    pos, exp, text = rng.choice(sites)
    ns = copy.deepcopy(steps[pos])
    ns.text = text
    return build(traj, "misread_output", pos, ns, exp)


def _alf_success_claim(call: Step) -> str:
    args = call.args if isinstance(call.args, str) else ""
    verb = call.tool or ""
    if verb == "take":
        obj = args.split(" from ")[0]
        return f"Now I take {obj}. Next, I need to carry on with the task."
    if verb == "open":
        return f"Now {args} is open, and I can take what I need from it."
    if verb == "put":
        return f"Now I put {args}. The task is done."
    if verb in ("cool", "heat", "clean"):
        obj = args.split(" with ")[0]
        return f"Now I {verb} {obj}. Next, I need to put it in place."
    if verb == "use":
        return f"Now {args} is on, and I can look at the object under it."
    if verb == "go to":
        return f"Now I am at {args}, and I see what I am looking for."
    return "That worked. Next, I need to carry on with the task."


def success_claim(domain: str, call: Step, obs: Step) -> str | None:
    args = call.args if isinstance(call.args, str) else ""
    if domain == "alfworld":
        return _alf_success_claim(call)
    if domain == "qa":
        if call.tool == "Search":
            return f"The page for {args} has the information I need, so I can answer from it."
        return "The lookup found the sentence I need on this page, so I can answer now."
    if domain == "webshop":
        if _ASIN_RE.match(args.strip()):
            return f"The page for {args} is open, and the item matches every requirement."
        return f"I have selected {args}, and the item now matches every requirement."
    if domain == "sql":
        return "The query returned the rows I need. This should be the answer."
    if domain == "bash":
        return "The command ran successfully and printed the expected output."
    if domain == "code":
        if obs.text.strip().startswith("Your answer is wrong"):
            return "The solution was accepted, so the task is complete."
        return "The code ran without errors and printed the expected results, so the function is correct."
    if domain == "dialogue":
        return "All set: that went through successfully on my end. Is there anything else I can help with?"
    return None


def make_claim_after_error(traj: Trajectory, rng: random.Random) -> Case | None:
    """Right after an error, empty result or "Nothing happens.", the agent's next
    words claim that the call worked."""
    domain = domain_of(traj)
    steps = traj.steps
    pairs = pair_observations(steps)
    sites: list[tuple[int, str]] = []
    for pos in sorted(pairs):
        obs, call = steps[pos], steps[pairs[pos]]
        if pos + 1 >= len(steps) or not is_failure(domain, obs):
            continue
        nxt = steps[pos + 1]
        if nxt.kind != "thought" and not (domain == "dialogue" and is_agent_text(nxt) and nxt.kind == "action"):
            continue
        if domain == "alfworld" and call.tool == "go to":
            continue  # "go to" where the agent already is says "Nothing happens.": no failure to deny
        claim = success_claim(domain, call, obs)
        if claim:
            sites.append((pos + 1, claim))
    if not sites:
        return None
    pos, claim = rng.choice(sites)
    return build(traj, "claim_after_error", pos, with_text(steps[pos], claim), pos)


_SQL_TABLE_RE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|DESC|DESCRIBE)\s+`?([A-Za-z_][A-Za-z0-9_]*)`?", re.IGNORECASE)
_PATH_RE = re.compile(r"(?<![\w/.-])((?:/[\w.-]+)+|[\w-]+\.[A-Za-z][\w]{0,5})(?![\w/])")
_ASIN_RE = re.compile(r"^[A-Z0-9]{10}$", re.IGNORECASE)


def _sql_variants(name: str) -> list[str]:
    out = [name[:-1]] if name.endswith("s") and len(name) > 3 else [name + "s"]
    out += [name + "_info", name + "_list", "tbl_" + name]
    return out


def _path_variants(path: str) -> list[str]:
    head, _, base = path.rpartition("/")
    prefix = head + "/" if head or path.startswith("/") else ""
    stem, dot, ext = base.rpartition(".")
    if dot and stem:
        cands = [f"{stem}2.{ext}", f"{stem}_old.{ext}", f"{stem}.{ext}.bak"]
    else:
        cands = [f"{base}2", f"{base}_old", f"{base}.bak"]
    return [prefix + c for c in cands]


def _string_values(args: Any) -> list[str]:
    if isinstance(args, str):
        return [args]
    if isinstance(args, list):
        return [v for a in args for v in _string_values(a)]
    if isinstance(args, dict):
        return [v for k in sorted(args) for v in _string_values(args[k])]
    return []


def make_unseen_argument(traj: Trajectory, rng: random.Random) -> Case | None:
    """A tool call uses an argument (id, object, file, table, product) that nothing
    showed: the seen one is swapped for a look-alike absent from the whole run."""
    domain = domain_of(traj)
    steps = traj.steps
    corpus = corpus_of(traj)
    sites: list[tuple[int, str, str]] = []
    for pos, s in enumerate(steps):
        if s.kind != "action" or s.tool in (None, "respond"):
            continue
        before = evidence_before(traj, pos)
        obs_before = "\n".join(x.text for x in steps[:pos] if x.kind == "observation")
        args = s.args
        if domain == "dialogue":
            for val in _string_values(args):
                tok = val.strip()
                if sum(c.isdigit() for c in tok) < 3 or not contains(obs_before, tok):
                    continue
                new = unseen_variant(tok, corpus, rng)
                if new:
                    sites.append((pos, tok, new))
        elif domain == "alfworld" and isinstance(args, str):
            for _written, name, number in alf_objects(args):
                if contains(before, f"{name} {number}"):
                    n = unseen_alf_number(name, number, corpus, rng)
                    if n:
                        sites.append((pos, f"{name} {number}", f"{name} {n}"))
                    break  # the object of the verb, not the receptacle
        elif domain == "sql" and isinstance(args, str):
            for m in _SQL_TABLE_RE.finditer(args):
                name = m.group(1)
                if not contains(obs_before, name) or contains(traj.goal, name):
                    continue
                for cand in _sql_variants(name):
                    if not contains(corpus, cand):
                        sites.append((pos, name, cand))
                        break
        elif domain == "bash" and isinstance(args, str):
            for m in _PATH_RE.finditer(args):
                path = m.group(1)
                if len(path) < 4 or not contains(obs_before, path) or contains(traj.goal, path):
                    continue
                for cand in _path_variants(path):
                    if not contains(corpus, cand):
                        sites.append((pos, path, cand))
                        break
        elif domain == "webshop" and s.tool == "click" and isinstance(args, str):
            tok = args.strip()
            if _ASIN_RE.match(tok) and any(c.isdigit() for c in tok) and contains(obs_before, tok):
                new = unseen_variant(tok, corpus, rng)
                if new:
                    sites.append((pos, tok, new))
    # One site per (step, value): the draw must not favour steps with repeated values.
    sites = sorted(set(sites))
    if not sites:
        return None
    pos, old, new = rng.choice(sites)
    return build(traj, "unseen_argument", pos, with_token_replaced(steps[pos], old, new), pos)


# --- JSON records (tool-calling dialogues) ---------------------------------


_ID_FIELDS = ("order_id", "line_id", "user_id", "customer_id", "bill_id", "plan_id", "device_id")


def _json_obs(step: Step) -> Any:
    if not is_tool_obs(step):
        return None
    t = step.text.strip()
    if not t.startswith("{") and not t.startswith("["):
        return None
    try:
        return json.loads(t)
    except ValueError:
        return None


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


def _record_groups(obj: Any) -> list[list[dict[str, Any]]]:
    """Lists (or dicts) of two or more sibling records with scalar fields in common."""
    groups: list[list[dict[str, Any]]] = []
    if isinstance(obj, dict):
        members = list(obj.values())
        for k in sorted(obj):
            groups.extend(_record_groups(obj[k]))
    elif isinstance(obj, list):
        members = list(obj)
        for v in obj:
            groups.extend(_record_groups(v))
    else:
        return groups
    recs = [m for m in members if isinstance(m, dict) and any(_scalar(v) for v in m.values())]
    if len(recs) >= 2:
        groups.append(recs)
    return groups


def _renderings(v: Any) -> list[str]:
    """How a value may be written in a reply: 60.0 is "$60.00" or "60"."""
    if isinstance(v, float):
        out = [f"{v:.2f}", repr(v)]
        if v.is_integer():
            out.append(str(int(v)))
        return out
    return [str(v)]


def _found(text: str, v: Any) -> str | None:
    for r in _renderings(v):
        if len(r) >= 2 and contains(text, r):
            return r
    return None


def _render_like(written: str, v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.2f}" if "." in written and len(written.split(".")[1]) == 2 else repr(v)
    return str(v)


def _same_record(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two versions of one record (an order before and after an update) are no siblings."""
    return any(k in a and k in b and a[k] == b[k] for k in (*_ID_FIELDS, "id", "item_id"))


def make_wrong_record(traj: Trajectory, rng: random.Random) -> Case | None:
    """A tool result held several records (cards, items, lines); the agent names one
    record but quotes a field of its sibling."""
    if domain_of(traj) != "dialogue":
        return None
    steps = traj.steps
    sites: list[tuple[int, str, str]] = []
    groups: list[list[dict[str, Any]]] = []
    top: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for pos, s in enumerate(steps):
        data = _json_obs(s)
        if data is not None:
            groups.extend(_record_groups(data))
            if isinstance(data, dict):
                top.setdefault(tuple(sorted(data)), []).append(data)
            continue
        if not (is_agent_text(s) and s.kind == "action"):
            continue
        # Whole observations of the same shape (line L1001, line L1002) are siblings too.
        all_groups = groups + [g for _k, g in sorted(top.items()) if len(g) >= 2]
        text = s.text
        for recs in all_groups:
            for a in recs:
                for b in recs:
                    if a is b or _same_record(a, b):
                        continue
                    # Fields of record a that the reply quotes (and b's differing value it does not).
                    quoted = {
                        g: w
                        for g in sorted(a)
                        if g in b
                        and _scalar(a[g])
                        and _scalar(b[g])
                        and str(b[g]) != str(a[g])
                        and (w := _found(text, a[g]))
                        and not _found(text, b[g])
                    }
                    for f, written in sorted(quoted.items()):
                        if not any(ch.isdigit() for ch in written):
                            continue  # swap a figure (price, card digits, item id); names stay as anchors
                        # Another quoted field names the record (brand, item name, id), so the
                        # reply is about a, and quoting b's value for f mixes the records up.
                        if any(g != f and len(w) >= 3 and w != written for g, w in quoted.items()):
                            sites.append((pos, written, _render_like(written, b[f])))
    sites = sorted(set(sites))
    if not sites:
        return None
    pos, old, new = rng.choice(sites)
    return build(traj, "wrong_record", pos, with_token_replaced(steps[pos], old, new), pos)


_STATE_PHRASE_RE = re.compile(
    r"\b(is now|are now|has been|have been|is|are|was|were|status is|marked as|now in|status of)\s+[“\"']?\x00",
    re.IGNORECASE,
)


def make_stale_value(traj: Trajectory, rng: random.Random) -> Case | None:
    """A newer tool result updated a field (status, balance, data used...); the agent's
    next reply still states the older value."""
    if domain_of(traj) != "dialogue":
        return None
    steps = traj.steps
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    fresh: list[tuple[str, Any, Any]] = []  # (field, old, new) changed by the last update
    sites: list[tuple[int, str, str]] = []
    for pos, s in enumerate(steps):
        data = _json_obs(s)
        if isinstance(data, dict):
            for idf in _ID_FIELDS:
                if _scalar(data.get(idf)):
                    key = (idf, str(data[idf]))
                    old = latest.get(key)
                    if old is not None:
                        for f in sorted(data):
                            if f in old and _scalar(data[f]) and _scalar(old[f]) and str(data[f]) != str(old[f]):
                                fresh.append((f, old[f], data[f]))
                    latest[key] = data
                    break
            continue
        if not (is_agent_text(s) and s.kind == "action") or not fresh:
            continue
        for _f, old_v, new_v in fresh:
            written = _found(s.text, new_v)
            if not written or _found(s.text, old_v) or (isinstance(new_v, str) and len(new_v) < 3):
                continue
            # A state word counts only where the reply states it ("is now cancelled"),
            # not where it lists it as an option ("tell me if it shows Active").
            lead = s.text[: s.text.lower().find(written.lower())][-30:]
            if (
                isinstance(new_v, str)
                and not any(ch.isdigit() for ch in new_v)
                and not _STATE_PHRASE_RE.search(lead + "\x00")
            ):
                continue
            sites.append((pos, written, _render_like(written, old_v)))
        fresh = []  # only the first reply after the update
    sites = sorted(set(sites))
    if not sites:
        return None
    pos, old, new = rng.choice(sites)
    step = steps[pos]
    if not any(ch.isdigit() for ch in new):
        # A state word: "has been cancelled" becomes "is still pending", not "has been pending".
        phrase = re.compile(r"\b(has|have) been " + re.escape(old) + r"(?![\w])", re.IGNORECASE)
        if phrase.search(step.text):
            ns = copy.deepcopy(step)

            def still(m: re.Match[str]) -> str:
                return ("is" if m.group(1).lower() == "has" else "are") + f" still {new}"

            ns.text = phrase.sub(still, ns.text)
            if isinstance(ns.args, dict) and "content" in ns.args:
                ns.args = {**ns.args, "content": ns.text}
            return build(traj, "stale_value", pos, ns, pos)
    return build(traj, "stale_value", pos, with_token_replaced(steps[pos], old, new), pos)


def _call_key(s: Step) -> tuple[str, str]:
    return (s.tool or "", json.dumps(s.args, sort_keys=True, ensure_ascii=False))


def make_repeat_rejected(traj: Trajectory, rng: random.Random) -> Case | None:
    """The environment rejected a call ("Nothing happens.", "Invalid action!", an
    SQL error, "Your answer is wrong."); the agent's next call is the same one."""
    domain = domain_of(traj)
    steps = traj.steps
    pairs = pair_observations(steps)
    sites: list[tuple[int, int]] = []
    for pos in sorted(pairs):
        obs, cpos = steps[pos], pairs[pos]
        call = steps[cpos]
        if call.kind != "action" or not is_rejection(domain, obs):
            continue
        nxt = next((p for p in range(pos + 1, len(steps)) if steps[p].kind in ("action", "final")), None)
        if nxt is None:
            continue
        b = steps[nxt]
        if b.tool == "respond" or _call_key(b) == _call_key(call):
            continue
        if b.kind == "final" and b.tool != call.tool:
            continue
        sites.append((cpos, nxt))
    if not sites:
        return None
    cpos, nxt = rng.choice(sites)
    ns = copy.deepcopy(steps[nxt])
    src = steps[cpos]
    ns.tool, ns.args, ns.text = src.tool, copy.deepcopy(src.args), src.text
    return build(traj, "repeat_rejected", nxt, ns, nxt)


_RETAIL_PHANTOMS = {
    "cancel_pending_order": "I've cancelled order {oid}; the refund will go back to the original payment method.",
    "modify_pending_order_address": "Done: the shipping address on order {oid} has been updated.",
    "return_delivered_order_items": "The return for order {oid} has been processed; the refund is on its way.",
    "exchange_delivered_order_items": "The exchange on order {oid} has been placed; the new item will ship soon.",
}
_TELECOM_PHANTOMS = {
    "resume_line": "Line {lid} has been resumed and is active again.",
    "enable_roaming": "Roaming is now enabled on line {lid}, so it will work abroad.",
    "refuel_data": "I've added the extra data to line {lid}; it is available right away.",
    "send_payment_request": "I've sent the payment request for your overdue bill; you can pay it now.",
}


def _phantom_text(domain: str, nxt: Step) -> str | None:
    args = nxt.args if isinstance(nxt.args, str) else ""
    if domain == "qa" and nxt.tool in ("Search", "Lookup"):
        return f"I already searched [{args}], and it confirms what I need."
    if domain == "webshop" and nxt.tool == "click" and _ASIN_RE.match(args.strip()) and any(c.isdigit() for c in args):
        return f"I already opened {args}, and it matches every requirement."
    if domain in ("sql", "bash"):
        return f"I already ran `{args}`, and it returned what I need."
    if domain == "code" and nxt.tool == "execute":
        return "I have already run this approach on the examples in the task, and every one of them passes."
    return None


def make_phantom_call(traj: Trajectory, rng: random.Random) -> Case | None:
    """The agent reports the result of a call it never made (before making it, if at all)."""
    domain = domain_of(traj)
    steps = traj.steps
    sites: list[tuple[int, str]] = []
    done: set[tuple[str, str]] = set()
    tools_done: set[str] = set()
    held: str | None = None
    for pos, s in enumerate(steps):
        if s.kind in ("action", "final") and s.tool != "respond":
            done.add(_call_key(s))
            tools_done.add(s.tool or "")
        if domain == "alfworld":
            if s.kind == "observation":
                m = re.match(r"You pick up the ([a-z]+ \d+)", s.text)
                held = m.group(1) if m else held
            if s.kind == "thought" and held and pos > 0 and steps[pos - 1].kind == "observation":
                for verb in ("cool", "heat", "clean"):
                    if re.search(rf"\b{verb}\b", traj.task) and verb not in tools_done:
                        sites.append((pos, f"Now I {verb} the {held}. Next, I need to put it in place."))
            continue
        if domain == "dialogue":
            if not (s.kind == "action" and s.tool == "respond"):
                continue
            before = evidence_before(traj, pos)
            oids = re.findall(r"#W\d{7}", before)
            lids = re.findall(r"\bL\d{4}\b", before)
            for tool in sorted(_RETAIL_PHANTOMS):
                if oids and tool not in tools_done and tools_done & RETAIL_TOOLS:
                    sites.append((pos, _RETAIL_PHANTOMS[tool].format(oid=oids[-1])))
            for tool in sorted(_TELECOM_PHANTOMS):
                if lids and tool not in tools_done and tools_done & TELECOM_TOOLS:
                    sites.append((pos, _TELECOM_PHANTOMS[tool].format(lid=lids[-1])))
            continue
        if s.kind != "thought" or pos + 1 >= len(steps):
            continue
        nxt = steps[pos + 1]
        if nxt.kind != "action" or _call_key(nxt) in done:
            continue
        if domain == "code" and "execute" in tools_done:
            continue
        text = _phantom_text(domain, nxt)
        if text:
            sites.append((pos, text))
    if not sites:
        return None
    pos, text = rng.choice(sites)
    return build(traj, "phantom_call", pos, with_text(steps[pos], text), pos)


MAKERS: dict[str, Maker] = {
    "value_swap": make_value_swap,
    "answer_swap": make_answer_swap,
    "obs_failure": make_obs_failure,
    "claim_after_error": make_claim_after_error,
    "unseen_argument": make_unseen_argument,
    "wrong_record": make_wrong_record,
    "repeat_rejected": make_repeat_rejected,
    "stale_value": make_stale_value,
    "phantom_call": make_phantom_call,
    "misread_output": make_misread_output,
}


def make_case(kind: str, traj: Trajectory, rng: random.Random, pool: Iterable[str] = ()) -> Case | None:
    """The corruption of ``kind`` on ``traj``, or None when the kind does not fit it.
    ``pool``: the source's entity answers, for answer_swap."""
    if kind not in DOMAIN_KINDS.get(domain_of(traj), ()):
        return None
    if kind == "answer_swap":
        return make_answer_swap(traj, rng, pool)
    return MAKERS[kind](traj, rng)


# ---------------------------------------------------------------------------
# Running and scoring
# ---------------------------------------------------------------------------

OUTCOMES = ("exact", "near", "early", "late", "missed")


def outcome(first_break: int | None, expected: int) -> str:
    if first_break is None:
        return "missed"
    d = first_break - expected
    if d == 0:
        return "exact"
    if abs(d) <= NEAR:
        return "near"
    return "early" if d < 0 else "late"


def load_source(root: Path, source: str) -> list[Trajectory]:
    return list(read_jsonl(root / source / "runs.jsonl"))


def first_break(steps: list[Step], traj: Trajectory) -> int | None:
    from tracing.core.anchoring import anchor_report

    return anchor_report(steps, task=traj.goal, context=traj.context).first_break


def generate(
    runs: list[Trajectory],
    source: str,
    seed: int,
    per_kind: int,
    kinds: Iterable[str] = KINDS,
    is_clean: Callable[[Trajectory], bool] | None = None,
) -> list[Case]:
    """Up to ``per_kind`` cases of each kind, each on a different clean base of ``source``."""
    cases: list[Case] = []
    pool = answer_pool(runs)
    for kind in kinds:
        rng = random.Random(f"holdout2/{seed}/{source}/{kind}")
        order = list(range(len(runs)))
        rng.shuffle(order)
        got = 0
        for i in order:
            if got >= per_kind:
                break
            traj = runs[i]
            case = make_case(kind, traj, rng, pool)
            if case is None or (is_clean is not None and not is_clean(traj)):
                continue
            cases.append(case)
            got += 1
    return cases


@dataclass
class Result:
    case: Case
    first_break: int | None
    outcome: str


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:5.1f}%" if d else "    - "


def table(title: str, rows: list[tuple[str, list[Result]]]) -> str:
    head = f"{title:<22} {'cases':>5} " + " ".join(f"{o:>13}" for o in OUTCOMES) + f" {'hit@±2':>7}"
    lines = [head, "-" * len(head)]
    for name, rs in rows:
        n = len(rs)
        counts = {o: sum(1 for r in rs if r.outcome == o) for o in OUTCOMES}
        cells = " ".join(f"{counts[o]:>5} {_pct(counts[o], n)}" for o in OUTCOMES)
        hit = counts["exact"] + counts["near"]
        lines.append(f"{name:<22} {n:>5} {cells} {_pct(hit, n):>7}")
    return "\n".join(lines)


def matrix(results: list[Result], sources: list[str], kinds: list[str]) -> str:
    """exact/cases for each source x kind."""
    head = f"{'exact/cases':<20}" + "".join(f"{k[:14]:>15}" for k in kinds)
    lines = [head, "-" * len(head)]
    for src in sources:
        cells = []
        for k in kinds:
            rs = [r for r in results if r.case.source == src and r.case.kind == k]
            e = sum(1 for r in rs if r.outcome == "exact")
            cells.append(f"{f'{e}/{len(rs)}' if rs else '-':>15}")
        lines.append(f"{src:<20}" + "".join(cells))
    return "\n".join(lines)


def _short(text: str, n: int = 160) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _around_change(before: str, after: str, n: int = 160) -> tuple[str, str]:
    """The two texts cut to the part that differs, so a long reply shows its edit."""
    b, a = " ".join(before.split()), " ".join(after.split())
    if len(b) <= n and len(a) <= n:
        return b, a
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    lo = max(0, start - n // 2)
    cut_b, cut_a = b[lo : lo + n], a[lo : lo + n]
    pre = "…" if lo else ""
    return pre + cut_b + ("…" if lo + n < len(b) else ""), pre + cut_a + ("…" if lo + n < len(a) else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--per-source", type=int, default=DEFAULT_PER_SOURCE, help="cases per kind within each source")
    parser.add_argument("--show-missed", type=int, default=0, metavar="K", help="print K missed cases")
    parser.add_argument("--sources", default=",".join(SOURCES), help="comma-separated subset of sources")
    parser.add_argument("--json", metavar="FILE", help="write one line per case with its outcome")
    args = parser.parse_args(argv)

    root = eval_dir()
    code_root = setup_code_path()
    started = time.perf_counter()
    sources = [s for s in SOURCES if s in args.sources.split(",")]
    results: list[Result] = []
    bases = {}
    for source in sources:
        runs = load_source(root, source)
        clean: dict[str, bool] = {}

        def is_clean(traj: Trajectory, _clean: dict[str, bool] = clean) -> bool:
            if traj.run_id not in _clean:
                _clean[traj.run_id] = first_break(traj.steps, traj) is None
            return _clean[traj.run_id]

        for case in generate(runs, source, args.seed, args.per_source, is_clean=is_clean):
            assert case.trajectory is not None
            fb = first_break(case.steps, case.trajectory)
            results.append(Result(case, fb, outcome(fb, case.expected)))
        bases[source] = (sum(1 for v in clean.values() if v), len(clean), len(runs))
    elapsed = time.perf_counter() - started

    print(f"anchoring holdout2 — code {describe(code_root)}; data {root}")
    print(f"seed {args.seed}, up to {args.per_source} cases per kind per source, {len(results)} cases, {elapsed:.1f} s")
    print("bases (clean/checked/runs): " + ", ".join(f"{s} {c}/{k}/{n}" for s, (c, k, n) in bases.items()))
    print()
    print(table("source", [(s, [r for r in results if r.case.source == s]) for s in sources]))
    print()
    kinds = [k for k in KINDS if any(r.case.kind == k for r in results)]
    print(table("kind", [(k, [r for r in results if r.case.kind == k]) for k in kinds]))
    print()
    print(table("overall", [("all", results)]))
    print()
    print(matrix(results, sources, kinds))
    if args.show_missed:
        missed = [r for r in results if r.outcome == "missed"]
        pick = random.Random(f"holdout2/missed/{args.seed}").sample(missed, min(args.show_missed, len(missed)))
        pick.sort(key=lambda r: (r.case.source, r.case.kind, r.case.run_id))
        print(f"\nmissed cases ({len(pick)} of {len(missed)}):")
        for r in pick:
            c = r.case
            print(f"- {c.source} / {c.kind} / {c.run_id} step {c.expected} (changed {c.changed})")
            b, a = _around_change(c.before, c.after)
            print(f"    before: {b}")
            print(f"    after:  {a}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            for r in results:
                c = r.case
                row = {
                    "source": c.source,
                    "run_id": c.run_id,
                    "kind": c.kind,
                    "expected": c.expected,
                    "changed": c.changed,
                    "first_break": r.first_break,
                    "outcome": r.outcome,
                    "before": c.before,
                    "after": c.after,
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
