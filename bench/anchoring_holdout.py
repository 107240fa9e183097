"""Held-out anchoring benchmark: corruptions written from failure descriptions,
independently of the detector and of ``bench/corruptions.py``.

Each corruption makes ONE step of a real run lose its grounding at a known step
index (the *target*): the step that now says or uses what no observation gives.

- answer_swap      the final answer / last claim names an entity, id, number or
                   flag that an observation contained; it is replaced by one of
                   the same shape taken from another run of the same source that
                   this run never mentions. Target: that statement.
- ignored_failure  an observation whose content the next agent step uses is
                   replaced by a failure typical of the tool (search miss,
                   "Nothing happens.", a traceback, ``command not found``, an SQL
                   error, ``Error: ... not found``); the next step is kept.
                   Target: the next agent step.
- empty_result     the same with an empty result (``[]``, ``{}``, "" , "you see
                   nothing", "[Executed Successfully with No Output]").
- number_drift     a number of an agent statement that came from the preceding
                   observation is changed to one no evidence holds and no sum,
                   difference, product or ratio of two evidence numbers gives.
                   Target: that statement.
- invented_call    a tool call and its result are deleted (later steps are
                   renumbered); the next agent step, which used the result, stays.
                   Target: that step (renumbered).
- stale_value      a record read twice whose field changed in between (an
                   update): the agent's next statement states the OLD value.
                   Target: that statement.

A case is made only when the target (and every step changed) comes before the
detector's first break on the uncorrupted run. One case per (run, kind), chosen
with a seed. Run by hand::

    python bench/anchoring_holdout.py [--seed 11] [--sources a,b] [--limit N]
                                      [--show-missed N]

``--smoke``: the same on a few short runs per source (bench/_paths.py), seconds.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _paths  # noqa: E402

_paths.setup_code_path()

from tracing.core.steps import Step, Trajectory, is_reply, read_jsonl, role_of  # noqa: E402

KINDS = ("answer_swap", "ignored_failure", "empty_result", "number_drift", "invented_call", "stale_value")
SOURCES = (
    "reflexion_hotpotqa",
    "react_fever",
    "react_webshop",
    "alfworld_sala",
    "react_exemplars",
    "tau2_retail_telecom",
    "mint_coding",
    "intercode",
)
NEW_SOURCES = ("tau2_retail_telecom", "mint_coding", "intercode")
ALF_TOOLS = frozenset({"go to", "open", "close", "take", "put", "cool", "heat", "clean", "use", "toggle", "look"})


@dataclass
class Case:
    kind: str
    steps: list[Step]
    target: int  # index (in ``steps``) of the step that lost its grounding
    changed: dict[int, str]  # original index -> "edited" | "deleted"
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- spans

_FLAG = re.compile(r"\b[A-Za-z]{2,}\{[^{}\s]{2,}\}")
_ID = re.compile(r"(?<![\w#])#?(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])[A-Za-z0-9_]{4,}\b")
_ORDINAL = re.compile(r"^\d+(st|nd|rd|th|s|gb|mb|kb|ms|g|m|k)$", re.I)
_NUM = re.compile(
    r"(?<![\w.,#/:-])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w/:-]|[.,]\d)|(?<![\w.,#/:-])\d+(?:\.\d+)?(?![\w/:-]|[.,]\d)"
)
_OBJ = re.compile(r"\b([a-z]+) \(?(\d{1,2})\)?(?![\w.])")
_ENTITY = re.compile(
    r"\b[A-Z][\w'’&.]*(?:-[A-Z][\w'’&.]*)*"
    r"(?:\s+(?:(?:of|the|and|de|von|van|da|del|du|la|le|in|on|for|&)\s+)*[A-Z][\w'’&.]*(?:-[A-Z][\w'’&.]*)*)*"
)
_WORD = re.compile(r"\b[a-z_][a-z0-9_]{4,}\b")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP_ENTITY = _wordset(
    """the a an i it its this that these those now next first then so yes no thank thanks hello hi please
    however but and or if since because there here my we you your our they he she his her let okay ok sure
    also finally after before to in on at of for with from by as is are was were be based great perfect
    sorry unfortunately alright all once what which who when where why how action thought observation
    answer finish search lookup true false none null error traceback cell you've i'm i'll i've let's it's"""
)
_STOP_WORD = _wordset(
    """about above after again against because before being below between could doing during every
    further having other should their there these those through under until which while would where
    would whose itself first second third output result results function value values returns return
    print table tables column columns query number string error check seems should using first
    command files directory"""
)
_SUCCESS = re.compile(
    r"\b(works|worked|working (?:correctly|fine|as expected)|pass(?:es|ed)|correct(?:ly)?|as expected|"
    r"success(?:ful(?:ly)?)?|expected (?:output|result)s?|(?:output|result) is)\b",
    re.I,
)
_NEGATED = re.compile(r"\b(not|no|incorrect|wrong|fail\w*|error\w*|mistake\w*|issue\w*|bug\w*)\b|n't", re.I)
_ERRORISH = re.compile(
    r"traceback|error|not found|no such file|nothing happens|invalid action|could not find|no results|"
    r"unable to|cannot|can't|permission denied|failed|fatal|usage:|invalid|not supported|no more results",
    re.I,
)
# A statement that already says the step failed does not rely on the step's content.
_ACK = re.compile(
    r"not (?:available|found|exist|work|installed|recogni[sz]ed)|does(?:n't| not) (?:exist|work)|error|fail|unable|"
    r"cannot|can't|no such|empty|no results|did not|didn't|could not|couldn't|nothing happen|no output",
    re.I,
)


def _alfish(tool: str | None) -> bool:
    return (tool or "") in ALF_TOOLS


def num_value(s: str) -> float:
    return round(float(s.replace(",", "")), 6)


def spans(text: str, *, alf: bool = False, words: bool = False) -> list[tuple[str, str]]:
    """(span, category) found in ``text``: flag, id, number, obj, entity, word."""
    out: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    for m in _FLAG.finditer(text):
        out.append((m.group(), "flag"))
        taken.append(m.span())
    for m in _ID.finditer(text):
        if free(*m.span()) and not _ORDINAL.match(m.group().lstrip("#")):
            out.append((m.group(), "id"))
            taken.append(m.span())
    if alf:
        for m in _OBJ.finditer(text):
            if free(*m.span()) and m.group(1) not in _STOP_ENTITY:
                out.append((f"{m.group(1)} {m.group(2)}", "obj"))
                taken.append(m.span())
    for m in _NUM.finditer(text):
        if not free(*m.span()):
            continue
        digits = re.sub(r"\D", "", m.group())
        if len(digits) >= 2 or "." in m.group():
            out.append((m.group(), "number"))
            taken.append(m.span())
    for m in _ENTITY.finditer(text):
        if not free(*m.span()):
            continue
        taken.append(m.span())
        # "Dubai International Airport. So ..." is two sentences, not one name.
        for piece in re.split(r"(?<=[a-z0-9)]{2}[.])\s+", m.group()):
            parts = piece.rstrip(".").split()
            while parts and parts[0].lower() in _STOP_ENTITY:
                parts = parts[1:]
            while parts and parts[-1].lower() in _STOP_ENTITY:
                parts = parts[:-1]
            if not parts:
                continue
            ent = " ".join(parts)
            start = text.find(ent, m.start())
            sentence_start = start <= 0 or re.search(r"(^|[.!?:\n]\s*|[-*]\s)$", text[:start]) is not None
            if len(parts) == 1 and (sentence_start or len(ent) < 3):
                continue
            out.append((ent, "entity"))
    if words:
        for m in _WORD.finditer(text):
            if free(*m.span()) and m.group() not in _STOP_WORD:
                out.append((m.group(), "word"))
    return out


class Evidence:
    """Text a step can be grounded in, searchable by span."""

    def __init__(self, texts: list[str] | None = None):
        self.lower: list[str] = []
        self.numbers: set[float] = set()
        for t in texts or []:
            self.add(t)

    def add(self, text: str) -> None:
        if not text:
            return
        self.lower.append(text.lower())
        for m in _NUM.finditer(text):
            self.numbers.add(num_value(m.group()))
        for m in re.finditer(r"\d+(?:\.\d+)?", text):  # numbers inside ids / dates count as mentioned too
            self.numbers.add(num_value(m.group()))

    def has(self, span: str, cat: str) -> bool:
        if cat == "number":
            return num_value(span) in self.numbers
        s = span.lower()
        if cat == "obj":
            noun, n = s.split()
            pat = re.compile(rf"\b{re.escape(noun)} \(?{n}\)?(?!\d)")
            return any(pat.search(t) for t in self.lower)
        pat = re.compile(rf"(?<![a-z0-9]){re.escape(s)}(?![a-z0-9])")
        return any(pat.search(t) for t in self.lower)


def step_text(step: Step) -> str:
    """What a step says, including a call's arguments."""
    if step.kind == "action" and not is_reply(step) and step.args is not None:
        args = step.args if isinstance(step.args, str) else json.dumps(step.args, ensure_ascii=False)
        return f"{step.text}\n{args}" if args not in step.text else step.text
    return step.text


def is_agent(step: Step) -> bool:
    return role_of(step) == "assistant" and step.kind in ("thought", "action", "final")


def is_statement(step: Step) -> bool:
    return (
        role_of(step) == "assistant"
        and (step.kind in ("thought", "final") or is_reply(step))
        and bool(step.text.strip())
    )


def is_tool_obs(step: Step) -> bool:
    return step.kind == "observation" and role_of(step) == "tool"


def _map_strings(value: Any, fn) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    return value


def edit_step(step: Step, fn) -> Step:
    """A copy of ``step`` with ``fn`` applied to its text and every string of its args."""
    return replace(
        step, text=fn(step.text), args=_map_strings(copy.deepcopy(step.args), fn), meta=copy.deepcopy(step.meta)
    )


def _span_pattern(span: str, cat: str) -> re.Pattern:
    if cat == "number":
        return re.compile(rf"(?<![\w.,#/:-]){re.escape(span)}(?![\w/:-]|[.,]\d)")
    if cat == "obj":
        noun, n = span.split()
        return re.compile(rf"\b{re.escape(noun)} (\(?){n}(\)?)(?![\w.])")
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(span)}(?![A-Za-z0-9_])")


def replace_span(text: str, span: str, cat: str, new: str) -> str:
    pat = _span_pattern(span, cat)
    if cat == "obj":
        nnoun, nn = new.split()
        return pat.sub(lambda m: f"{nnoun} {m.group(1)}{nn}{m.group(2)}", text)
    return pat.sub(lambda m: new, text)


def _shape(span: str, cat: str) -> str:
    if cat in ("id", "number"):
        return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", span)))
    if cat == "flag":
        return span.split("{")[0]
    if cat == "entity":
        return f"words{min(len(span.split()), 3)}"
    return cat


def final_answer(step: Step) -> str:
    return step.args if isinstance(step.args, str) and step.args.strip() else step.text


def _answer_kind(answer: str) -> str:
    return "number" if re.search(r"\d", answer) and len(re.sub(r"[^A-Za-z]", "", answer)) <= 4 else "text"


def context_texts(traj: Trajectory) -> list[str]:
    from tracing.core.steps import context_text

    return [traj.goal, context_text(traj.context)]


# --------------------------------------------------------------------------- pools


def build_pool(runs: list[Trajectory]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Spans that agents stated AND an earlier observation of their run held, by
    (category, shape): plausible replacements for another run's answer."""
    pool: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    answers: dict[str, set[str]] = defaultdict(set)
    for traj in runs:
        for step in traj.steps:
            if step.kind == "final" and final_answer(step).strip():
                answers[final_answer(step).strip()].add(traj.run_id)
    stated: dict[str, set[str]] = defaultdict(set)
    for traj in runs:
        for step in traj.steps:
            if is_statement(step):
                for span, _cat in spans(step.text):
                    stated[span].add(traj.run_id)
    common = max(3, len(runs) // 20)
    pool[("common", "*")] = {span: "" for span, ids in stated.items() if len(ids) > common}
    for traj in runs:
        ev = Evidence()
        for step in traj.steps:
            if step.kind == "observation":
                ev.add(step.text)
                continue
            if not is_statement(step):
                continue
            answer = final_answer(step).strip()
            if (
                step.kind == "final"
                and len(answers.get(answer, ())) <= 2
                and 2 < len(answer) <= 80
                and ev.has(answer, "entity")
            ):
                pool[("answer", _answer_kind(answer))].setdefault(answer, traj.run_id)
            alf = any(_alfish(s.tool) for s in traj.steps)
            for span, cat in spans(step.text, alf=alf):
                if ev.has(span, cat) and (cat != "entity" or len(span) >= 4):
                    pool[(cat, _shape(span, cat))].setdefault(span, traj.run_id)
                    pool[(cat, "*")].setdefault(span, traj.run_id)
    return {k: sorted(v.items()) for k, v in pool.items()}


# --------------------------------------------------------------------------- corruptions


def _before(idx: int, limit: int | None) -> bool:
    return limit is None or idx < limit


def _run_mentions(traj: Trajectory) -> Evidence:
    return Evidence([*context_texts(traj), *(step_text(s) for s in traj.steps)])


def answer_swap(traj: Trajectory, rng: random.Random, pool, limit: int | None = None) -> Case | None:
    steps = traj.steps
    alf = any(_alfish(s.tool) for s in steps)
    statements = [p for p, s in enumerate(steps) if is_statement(s)]
    if not statements:
        return None
    # A claim, not code (MINT's <solution>), a plan ("I should search X") or an admission ("cannot find X").
    statements = [
        p
        for p in statements
        if (steps[p].tool or "") not in ("solution", "execute")
        and not _ACK.search(steps[p].text)
        and not _PLAN.search(re.split(r"(?<=[.!?])\s", steps[p].text.strip(), maxsplit=1)[0])
    ]
    finals = [p for p in statements if steps[p].kind == "final"]
    order = ([finals[-1]] if finals else []) + [p for p in reversed(statements) if p not in finals][:2]
    everything = _run_mentions(traj)
    task = Evidence([traj.goal])
    if finals and _before(steps[finals[-1]].index, limit):
        # The whole answer was read in an observation: answer another run's answer instead.
        p = finals[-1]
        answer = final_answer(steps[p]).strip()
        ev = Evidence([steps[q].text for q in range(p) if steps[q].kind == "observation"])
        options = [o for o, rid in pool.get(("answer", _answer_kind(answer)), []) if rid != traj.run_id]
        options = [o for o in options if not everything.has(o, "entity")]
        if (
            answer in {o for o, _ in pool.get(("answer", _answer_kind(answer)), [])}
            and ev.has(answer, "entity")
            and options
        ):
            new = rng.choice(options)
            out = [copy.copy(s) for s in steps]
            out[p] = edit_step(steps[p], lambda t: t.replace(answer, new))
            if out[p].text != steps[p].text:
                return Case("answer_swap", out, steps[p].index, {steps[p].index: "edited"}, f"{answer!r} -> {new!r}")
    for p in order:
        if not _before(steps[p].index, limit):
            continue
        ev = Evidence([steps[q].text for q in range(p) if steps[q].kind == "observation"])
        common = {o for o, _ in pool.get(("common", "*"), [])}
        found = [
            (sp, cat)
            for sp, cat in spans(steps[p].text, alf=alf)
            if ev.has(sp, cat)
            and not task.has(sp, cat)
            and sp not in common
            and (cat != "entity" or len(sp.split()) > 1)
        ]
        if steps[p].kind == "final" and isinstance(steps[p].args, str):
            found = [(sp, cat) for sp, cat in found if sp in steps[p].args] or found
        rng.shuffle(found)
        for span, cat in found:
            options = pool.get((cat, _shape(span, cat))) or pool.get((cat, "*")) or []
            options = [o for o, rid in options if rid != traj.run_id and o != span and not everything.has(o, cat)]
            if cat == "number":  # a value of the same size: 1922 -> 1924, not 1922 -> 7
                options = sorted(options, key=lambda o: abs(num_value(o) - num_value(span)))[:5]
            if cat == "obj":  # another instance of the same thing first ("pan 2" for "pan 1")
                same = [o for o in options if o.split()[0] == span.split()[0]]
                options = same or options
            if not options:
                continue
            new = rng.choice(options)
            out = [copy.copy(s) for s in steps]
            out[p] = edit_step(steps[p], lambda t, span=span, cat=cat, new=new: replace_span(t, span, cat, new))
            if out[p].text == steps[p].text:
                continue
            return Case("answer_swap", out, steps[p].index, {steps[p].index: "edited"}, f"{span!r} -> {new!r}")
    return None


def _next_agent(steps: list[Step], p: int) -> int | None:
    for q in range(p + 1, len(steps)):
        if is_agent(steps[q]):
            return q
        if steps[q].kind == "observation":
            return None
    return None


_PLAN = re.compile(r"\b(?:I (?:should|need to|will|can|could|must|'ll|have to|want to|may)|Let me|Let's)\b", re.I)
_MENTIONS_OUTPUT = re.compile(
    r"\b(output|print(?:s|ed)?|results?|return(?:s|ed)?|shows?|showed|displays?|gives?|gave|got)\b", re.I
)


def _relies(traj: Trajectory, obs_pos: int, q: int, prior: Evidence, *, empty: bool = False) -> list[tuple[str, str]]:
    """Spans of step ``q`` that observation ``obs_pos`` gave and nothing before it did."""
    steps = traj.steps
    src = traj.source
    alf = any(_alfish(s.tool) for s in steps)
    words = src in ("mint_coding", "intercode")
    if _ACK.search(steps[q].text):
        return []
    # MINT's "You have 3 steps left and 2 chances to propose solution left." is the harness, not the result.
    obs = Evidence([_STEPS_LEFT.sub("", steps[obs_pos].text)])
    used = [
        (sp, cat)
        for sp, cat in spans(step_text(steps[q]), alf=alf, words=words)
        if obs.has(sp, cat) and not prior.has(sp, cat)
    ]
    if used:
        return used
    text = steps[obs_pos].text
    if (
        alf
        and _alfish(steps[obs_pos].tool)
        and text.startswith("You ")
        and steps[q].kind == "thought"
        and re.search(
            r"\b(?:now|so|then),? I (?:have )?(?:take|took|taken|cool|cooled|heat|heated|clean|cleaned|put|open|"
            r"opened|turn|turned|use|used|pick|picked|find|found)\b",
            steps[q].text,
            re.I,
        )
    ):
        # "You pick up the pan 1 ..." then "Now I take a pan (1)": the thought reports the action's success.
        objs = [sp for sp, cat in spans(text, alf=True) if cat == "obj"]
        if objs and Evidence([steps[q].text]).has(objs[0], "obj"):
            return [(objs[0], "obj")]
    if (
        src in ("mint_coding", "intercode")
        and steps[q].kind in ("thought", "final")
        and steps[obs_pos].tool in ("execute", "bash", "sql")
        and text.strip()
        and not _ERRORISH.search(text)
        and not text.startswith("[Executed Successfully with No Output]")
        and _SUCCESS.search(steps[q].text)
        and not _NEGATED.search(steps[q].text)
        # "works" after an empty run of code can be true (asserts pass silently); a claim
        # about what it printed or returned cannot.
        and (not empty or _MENTIONS_OUTPUT.search(steps[q].text))
    ):
        return [("<claims the output>", "claim")]
    return []


def _prior(traj: Trajectory, p: int) -> Evidence:
    return Evidence([*context_texts(traj), *(step_text(s) for s in traj.steps[:p])])


_STEPS_LEFT = re.compile(r"\n?You have \d+ steps? left.*$", re.S)


_ID_KINDS = {"L": "Line", "P": "Plan", "D": "Device", "C": "Customer", "B": "Bill"}


def failure_text(traj: Trajectory, obs: Step, action: Step | None, rng: random.Random) -> str | None:
    tool = obs.tool or ""
    arg = action.args if action is not None and isinstance(action.args, str) else ""
    if (
        tool in ("Search", "search")
        and traj.source != "react_webshop"
        and not (tool == "search" and arg and "[" in obs.text[:20])
    ):
        if traj.source == "reflexion_hotpotqa" and rng.random() < 0.5:
            return "Could not find that page, please try again."
        return (
            f"Could not find [{arg}]. Similar: []."
            if traj.source != "react_fever"
            else f"Could not find {arg}. Similar: []."
        )
    if tool == "Lookup":
        return "No Results" if traj.source == "reflexion_hotpotqa" else "No more results."
    if tool in ("search", "click"):
        return "Invalid action!"
    if _alfish(tool):
        return "Nothing happens."
    if tool == "execute":
        m = _STEPS_LEFT.search(obs.text)
        tail = m.group() if m else ""
        code = [
            c
            for c in (action.args if action is not None and isinstance(action.args, str) else "").splitlines()
            if c.strip()
        ]
        code = code or ["pass"]
        line = rng.randrange(len(code))
        err = rng.choice(
            [
                "TypeError: 'NoneType' object is not subscriptable",
                "IndexError: list index out of range",
                "NameError: name 'result' is not defined",
                "ValueError: invalid literal for int() with base 10: ''",
                "KeyError: 0",
            ]
        )
        name = err.split(":")[0]
        return (
            "---------------------------------------------------------------------------\n"
            f"{name:<42}Traceback (most recent call last)\n"
            f"Cell In[{rng.randint(1, 4)}], line {line + 1}\n"
            f"----> {line + 1} {code[line]}\n\n{err}" + ("\n" + tail.lstrip("\n") if tail else "")
        )
    if tool == "sql":
        near = (arg.split(None, 3)[-1] if arg else "")[:40]
        return (
            "Error executing query: You have an error in your SQL syntax; check the manual that corresponds to "
            f"your MySQL server version for the right syntax to use near '{near}' at line 1"
        )
    if tool == "bash":
        cmd = (arg or (action.text if action else "")).strip()
        cmd = re.sub(r"^execute\[|\]$", "", cmd)
        first = (cmd.split() or ["sh"])[0]
        paths = re.findall(r"(/[\w./-]+)", cmd)
        if paths and rng.random() < 0.5:
            return f"{first}: cannot access '{paths[0]}': No such file or directory\n"
        return f"/bin/bash: line 1: {first}: command not found\n"
    ident = action.args.get("id") if action is not None and isinstance(action.args, dict) else None
    if isinstance(ident, str) and ident[:1] in _ID_KINDS:
        return f"Error: {_ID_KINDS[ident[:1]]} with ID {ident} not found"
    if traj.source == "tau2_retail_telecom" or obs.text.lstrip().startswith(("{", "[")):
        noun = re.sub(r"^(get|find|check|search|list)_", "", tool)
        noun = re.sub(r"_(details|by_.*|id|info|status)$", "", noun) or "record"
        noun = noun.split("_")[-1] if noun.startswith("user") is False else "user"
        return f"Error: {noun.capitalize()} not found"
    return None


def empty_text(traj: Trajectory, obs: Step, action: Step | None) -> str | None:
    tool = obs.tool or ""
    text = obs.text
    if tool == "Lookup":
        return "No Results" if traj.source == "reflexion_hotpotqa" else "No more results."
    if tool == "Search" or (tool == "search" and traj.source != "react_webshop" and not text.startswith("[Back")):
        return "There were no results matching the query."
    if tool == "search" and text.startswith("[Back to Search]"):
        return "[Back to Search] \nPage 1 (Total results: 0) \n[Next >] \n"
    if _alfish(tool):
        m = re.match(r"On the (\w+ \d+), you see ", text)
        if m:
            return f"On the {m.group(1)}, you see nothing."
        m = re.match(r"You open the (\w+ \d+)\. The \1 is open\. In it, you see ", text)
        if m:
            return f"You open the {m.group(1)}. The {m.group(1)} is open. In it, you see nothing."
        return None
    if tool == "execute":
        m = _STEPS_LEFT.search(text)
        return "[Executed Successfully with No Output]" + (("\n" + m.group().lstrip("\n")) if m else "")
    if tool == "sql":
        return "[]"
    if tool == "bash":
        return ""
    if text.lstrip().startswith("["):
        return "[]"
    if text.lstrip().startswith("{"):
        return "{}"
    if traj.source == "tau2_retail_telecom":
        return "null"
    return None


def _prev_action(steps: list[Step], p: int) -> Step | None:
    for q in range(p - 1, -1, -1):
        if steps[q].kind == "action":
            return steps[q]
        if steps[q].kind == "observation":
            return None
    return None


def _replace_observation(kind: str, traj: Trajectory, rng: random.Random, limit: int | None) -> Case | None:
    steps = traj.steps
    sites = []
    for p, s in enumerate(steps):
        if not is_tool_obs(s) or not s.text.strip() or _ERRORISH.search(s.text[:200]):
            continue
        if s.text.strip() in ("[]", "{}", "null") or s.text.startswith("[Executed Successfully with No Output]"):
            continue
        if (s.tool or "") == "solution":
            continue
        q = _next_agent(steps, p)
        if q is None or not _before(steps[q].index, limit):
            continue
        used = _relies(traj, p, q, _prior(traj, p), empty=kind == "empty_result")
        if used:
            sites.append((p, q, used))
    rng.shuffle(sites)
    for p, q, used in sites:
        action = _prev_action(steps, p)
        new = (
            failure_text(traj, steps[p], action, rng)
            if kind == "ignored_failure"
            else empty_text(traj, steps[p], action)
        )
        if new is None or new == steps[p].text:
            continue
        out = [copy.copy(s) for s in steps]
        out[p] = replace(steps[p], text=new, meta=copy.deepcopy(steps[p].meta))
        return Case(
            kind,
            out,
            steps[q].index,
            {steps[p].index: "edited"},
            f"obs {steps[p].index} -> {new[:60]!r}; step {steps[q].index} used {used[0][0]!r}",
            {"observation": steps[p].index, "link": used[0][1]},
        )
    return None


def ignored_failure(traj, rng, pool=None, limit=None):
    return _replace_observation("ignored_failure", traj, rng, limit)


def empty_result(traj, rng, pool=None, limit=None):
    return _replace_observation("empty_result", traj, rng, limit)


def _format_like(value: float, original: str) -> str:
    decimals = len(original.split(".")[1]) if "." in original else 0
    s = f"{value:.{decimals}f}"
    if "," in original:
        whole, _, frac = s.partition(".")
        s = f"{int(whole):,}" + (f".{frac}" if frac else "")
    return s


def _derivable(c: float, nums: list[float]) -> bool:
    have = {round(n, 4) for n in nums}
    if round(c, 4) in have:
        return True
    for a in nums:
        if round(c - a, 4) in have or round(a - c, 4) in have:
            return True
        if a and (round(c / a, 4) in have or (c and round(a / c, 4) in have)):
            return True
    return False


def drift_value(original: str, evidence: list[float], rng: random.Random) -> str | None:
    v = num_value(original)
    integer = "." not in original
    for _ in range(30):
        if integer and 1000 <= v <= 2100:
            c = v + rng.choice([-1, 1]) * rng.randint(2, 9)
        elif integer and v < 20:
            c = v + rng.choice([-1, 1]) * rng.randint(2, 6)
        else:
            c = v * rng.choice([rng.uniform(0.55, 0.85), rng.uniform(1.2, 1.7)])
        if integer:
            c = float(round(c))
        c = round(c, len(original.split(".")[1]) if not integer else 0)
        if c <= 0 or c == v:
            continue
        if _derivable(c, evidence):
            continue
        return _format_like(c, original)
    return None


def number_drift(traj: Trajectory, rng: random.Random, pool=None, limit=None) -> Case | None:
    steps = traj.steps
    alf = any(_alfish(s.tool) for s in steps)
    task_ev = Evidence(context_texts(traj)[:1])
    sites = []
    for p, s in enumerate(steps):
        if not is_statement(s) or not _before(s.index, limit):
            continue
        prev = next((q for q in range(p - 1, -1, -1) if steps[q].kind == "observation"), None)
        if prev is None:
            continue
        obs = Evidence([steps[prev].text])
        for span, cat in spans(s.text, alf=alf):
            if cat == "number" and obs.has(span, cat) and not task_ev.has(span, cat):
                sites.append((p, span))
    rng.shuffle(sites)
    for p, span in sites:
        ev = _prior(traj, p)
        nums = sorted(ev.numbers)[:400]
        new = drift_value(span, nums, rng)
        if new is None:
            continue
        out = [copy.copy(s) for s in steps]
        out[p] = edit_step(steps[p], lambda t, span=span, new=new: replace_span(t, span, "number", new))
        if out[p].text == steps[p].text:
            continue
        return Case("number_drift", out, steps[p].index, {steps[p].index: "edited"}, f"{span} -> {new}")
    return None


def invented_call(traj: Trajectory, rng: random.Random, pool=None, limit=None) -> Case | None:
    steps = traj.steps
    sites = []
    for p in range(len(steps) - 2):
        a, o = steps[p], steps[p + 1]
        if a.kind != "action" or is_reply(a) or role_of(a) != "assistant" or not is_tool_obs(o):
            continue
        if not o.text.strip() or _ERRORISH.search(o.text[:200]) or (o.tool or "") == "solution":
            continue
        q = _next_agent(steps, p + 1)
        if q is None or not _before(steps[q].index, limit):
            continue
        used = _relies(traj, p + 1, q, _prior(traj, p))
        if used:
            sites.append((p, q, used))
    rng.shuffle(sites)
    for p, q, used in sites:
        gone = (steps[p].index, steps[p + 1].index)
        out = []
        for pos, s in enumerate(steps):
            if pos in (p, p + 1):
                continue
            t = copy.copy(s)
            if pos > p + 1:
                t = replace(s, index=s.index - 2)
            out.append(t)
        return Case(
            "invented_call",
            out,
            steps[q].index - 2,
            {gone[0]: "deleted", gone[1]: "deleted"},
            f"deleted {steps[p].text[:60]!r}; step {steps[q].index} used {used[0][0]!r}",
            {"original_target": steps[q].index, "link": used[0][1]},
        )
    return None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = value
    return out


def _record(text: str) -> dict[str, Any] | None:
    t = text.strip()
    if not t.startswith("{"):
        return None
    try:
        data = json.loads(t)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _identity(rec: dict[str, Any]) -> tuple[str, str] | None:
    for key in ("order_id", "line_id", "customer_id", "user_id", "bill_id", "id"):
        if isinstance(rec.get(key), (str, int)):
            return key, str(rec[key])
    return None


def _same_item(key: str, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A field inside a list element is compared only when the element is the same
    thing in both reads (same name), not another item that moved into its place."""
    m = re.match(r"^(.*\[\d+\])\.", key)
    if not m:
        return True
    name = f"{m.group(1)}.name"
    return name in old and old.get(name) == new.get(name)


def stale_value(traj: Trajectory, rng: random.Random, pool=None, limit=None) -> Case | None:
    steps = traj.steps
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    sites = []
    for p, s in enumerate(steps):
        if not is_tool_obs(s):
            continue
        rec = _record(s.text)
        ident = _identity(rec) if rec else None
        if ident is None:
            continue
        flat = _flatten(rec)
        old = seen.get(ident)
        seen[ident] = flat
        if old is None:
            continue
        changed = [
            (k, old[k], flat[k])
            for k in flat
            if k in old
            and old[k] != flat[k]
            and _same_item(k, old, flat)
            and old[k] is not None
            and flat[k] is not None
            and not isinstance(flat[k], bool)
            and len(str(flat[k])) >= 2
            and len(str(old[k])) >= 2
        ]
        if not changed:
            continue
        q = next(
            (
                r
                for r in range(p + 1, len(steps))
                if is_statement(steps[r]) or steps[r].kind == "observation" and role_of(steps[r]) == "user"
            ),
            None,
        )
        if q is None or not is_statement(steps[q]) or not _before(steps[q].index, limit):
            continue
        said = Evidence([steps[q].text])
        for key, was, now in changed:
            cat = "number" if isinstance(now, (int, float)) else "string"
            now_s, was_s = str(now), str(was)
            if cat == "number":
                hits = [sp for sp, c in spans(steps[q].text) if c == "number" and num_value(sp) == round(float(now), 6)]
                if hits and not said.has(str(was), "number"):
                    sites.append((p, q, key, hits[0], "number", _format_like(float(was), hits[0])))
            elif said.has(now_s, "id") and not said.has(was_s, "id"):
                sites.append((p, q, key, now_s, "id", was_s))
    rng.shuffle(sites)
    for p, q, key, span, cat, new in sites:
        out = [copy.copy(s) for s in steps]

        def swap(t: str, span=span, cat=cat, new=new) -> str:
            if cat == "number":
                return replace_span(t, span, "number", new)
            pat = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(span)}(?![A-Za-z0-9_])", re.I)
            return pat.sub(lambda m: new.capitalize() if m.group()[:1].isupper() else new, t)

        out[q] = edit_step(steps[q], swap)
        if out[q].text == steps[q].text:
            continue
        return Case(
            "stale_value",
            out,
            steps[q].index,
            {steps[q].index: "edited"},
            f"{key}: now {span!r}, said {new!r} (update at step {steps[p].index})",
        )
    return None


CORRUPTIONS = {
    "answer_swap": answer_swap,
    "ignored_failure": ignored_failure,
    "empty_result": empty_result,
    "number_drift": number_drift,
    "invented_call": invented_call,
    "stale_value": stale_value,
}


def corrupt(kind: str, traj: Trajectory, seed: int, pool=None, limit: int | None = None) -> Case | None:
    rng = random.Random(f"{seed}:{traj.source}:{traj.run_id}:{kind}")
    return CORRUPTIONS[kind](traj, rng, pool or {}, limit)


# --------------------------------------------------------------------------- run


def _report(steps: list[Step], traj: Trajectory):
    from tracing.core.anchoring import anchor_report

    return anchor_report(steps, task=traj.goal, context=traj.context)


def _pct(a: int, n: int) -> str:
    return f"{a:4d} ({100 * a / n:3.0f}%)" if n else "   -      "


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--sources", default=",".join(SOURCES))
    ap.add_argument("--limit", type=int, default=0, help="runs per source (0: all)")
    ap.add_argument("--show-missed", type=int, default=0, help="print N missed cases per source")
    ap.add_argument("--show-kind", default="", help="only show missed cases of this kind")
    args = ap.parse_args(argv)
    t0 = time.time()
    root = _paths.setup_code_path()
    data = _paths.eval_dir()
    print(f"anchoring hold-out, seed {args.seed}; code {_paths.describe(root)}; data {data}")
    rows: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    control: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_target: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_link: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for src in args.sources.split(","):
        path = data / src / "runs.jsonl"
        if not path.exists():
            print(f"{src}: no data")
            continue
        runs = list(read_jsonl(path))
        pool = build_pool(runs)
        if args.limit:
            runs = runs[: args.limit]
        missed: list[tuple[Trajectory, Case, Any]] = []
        for traj in runs:
            traj.source = traj.source or src
            base = _report(traj.steps, traj).first_break
            outcome = "succeeded" if traj.success else "failed"
            control[src][f"{outcome}_n"] += 1
            control[src][f"{outcome}_break"] += base is not None
            for kind in KINDS:
                case = corrupt(kind, traj, args.seed, pool, base)
                if case is None:
                    continue
                fb = _report(case.steps, traj).first_break
                r = rows[(src, kind)]
                r["n"] += 1
                tgt = next(s for s in case.steps if s.index == case.target)
                cls = "call" if tgt.kind == "action" and not is_reply(tgt) else "statement"
                by_target[(src, cls)]["n"] += 1
                by_target[(src, cls)]["missed"] += fb is None
                if "link" in case.extra:
                    by_link[(src, case.extra["link"], cls)]["n"] += 1
                    by_link[(src, case.extra["link"], cls)]["missed"] += fb is None
                if fb is None:
                    r["missed"] += 1
                    missed.append((traj, case, None))
                else:
                    r["exact"] += fb == case.target
                    r["within1"] += abs(fb - case.target) <= 1
                    r["before"] += fb < case.target
                    r["after"] += fb > case.target + 1
        if args.show_missed:
            shown = [m for m in missed if not args.show_kind or m[1].kind == args.show_kind]
            random.Random(args.seed).shuffle(shown)
            print(f"\n--- {src}: {len(missed)} missed; showing {min(args.show_missed, len(shown))}")
            for traj, case, _ in shown[: args.show_missed]:
                tgt = next(s for s in case.steps if s.index == case.target)
                print(f"* {traj.run_id} {case.kind} target {case.target}: {case.note}")
                print(f"    target ({tgt.kind}/{tgt.tool}): {step_text(tgt)[:300]!r}")
                obs = case.extra.get("observation")
                if obs is not None:
                    orig = next(s for s in traj.steps if s.index == obs)
                    print(f"    original obs: {orig.text[:200]!r}")
        print(f"{src}: {len(runs)} runs done, {time.time() - t0:.0f}s", flush=True)

    print("\nper source and kind (within1 includes exact; before = break earlier than the corrupted step;")
    print("after = break more than one step later)")
    head = (
        f"{'source':22} {'kind':16} {'n':>5} {'exact':>11} {'within1':>11} {'missed':>11} {'before':>11} {'after':>11}"
    )
    print(head)
    print("-" * len(head))
    totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (src, kind), r in sorted(
        rows.items(), key=lambda kv: (SOURCES.index(kv[0][0]) if kv[0][0] in SOURCES else 99, KINDS.index(kv[0][1]))
    ):
        n = r["n"]
        print(
            f"{src:22} {kind:16} {n:5d} {_pct(r['exact'], n)} {_pct(r['within1'], n)} {_pct(r['missed'], n)} "
            f"{_pct(r['before'], n)} {_pct(r['after'], n)}"
        )
        for key in ("all", "new" if src in NEW_SOURCES else "old"):
            for f in ("n", "exact", "within1", "missed", "before", "after"):
                totals[f"{key}:{kind}"][f] += r[f]
                totals[f"{key}:*"][f] += r[f]
    print("-" * len(head))
    for key in sorted(
        totals, key=lambda k: (k.split(":")[0], KINDS.index(k.split(":")[1]) if k.split(":")[1] in KINDS else 99)
    ):
        r = totals[key]
        n = r["n"]
        group, kind = key.split(":")
        label = {"all": "ALL sources", "new": "new (tau2/mint/ic)", "old": "old (5 ReAct)"}[group]
        print(
            f"{label:22} {'all kinds' if kind == '*' else kind:16} {n:5d} {_pct(r['exact'], n)} {_pct(r['within1'], n)} "
            f"{_pct(r['missed'], n)} {_pct(r['before'], n)} {_pct(r['after'], n)}"
        )
    print("\nmissed, by what the corrupted step is (a statement: thought/reply/final; a call: a tool call's arguments)")
    print(f"{'source':22} {'statement n':>12} {'missed':>11} {'call n':>8} {'missed':>11}")
    for src in dict.fromkeys(s for s, _ in by_target):
        a, b = by_target[(src, "statement")], by_target[(src, "call")]
        print(f"{src:22} {a['n']:12d} {_pct(a['missed'], a['n'])} {b['n']:8d} {_pct(b['missed'], b['n'])}")
    print("\nignored_failure + empty_result + invented_call missed, by what links the target to the observation")
    print("(claim: a generic 'works / worked / I get' claim about a code run; word: a lower-case identifier)")
    print(f"{'source':22} {'link':8} {'target':10} {'n':>5} {'missed':>11}")
    for (src, link, cls), r in sorted(
        by_link.items(), key=lambda kv: (SOURCES.index(kv[0][0]) if kv[0][0] in SOURCES else 99, kv[0][1:])
    ):
        print(f"{src:22} {link:8} {cls:10} {r['n']:5d} {_pct(r['missed'], r['n'])}")
    print("\nuncorrupted runs: share with a break (false-positive proxy on succeeded runs)")
    print(f"{'source':22} {'succeeded':>18} {'failed':>18}")
    for src, c in control.items():
        print(
            f"{src:22} {c['succeeded_break']:5d}/{c['succeeded_n']:<5d}{_pct_s(c['succeeded_break'], c['succeeded_n'])} "
            f"{c['failed_break']:5d}/{c['failed_n']:<5d}{_pct_s(c['failed_break'], c['failed_n'])}"
        )
    print(f"\ntime {time.time() - t0:.1f}s")
    return 0


def _pct_s(a: int, n: int) -> str:
    return f" {100 * a / n:4.0f}%" if n else "     -"


if __name__ == "__main__":
    raise SystemExit(main())
