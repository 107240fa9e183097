"""Baselines a ReAct run is compared with under the same budget (issue 17).

DESIGN.md section 1: "Compare against baselines under the same budget (no
tools, one retrieval, fixed workflow)." A baseline is a run like any other:
the same model client, the same tools, the same sink, so its steps are
recorded and its run page, list row and metrics work unchanged. What differs
is who chooses the actions:

- ``no_tools``: nobody; the model answers from the question alone;
- ``one_retrieval``: one scripted ``search`` with the task as its query;
- ``fixed_workflow``: scripted ``search`` (the task) then ``lookup`` (the
  question's key term in those results);

then one answer turn in which the model is offered ``finish`` only. A model
that still asks for another tool gets the loop's "unknown tool" observation
(an invalid action) and may try again while the budget lasts. Scripted calls
count as steps against ``max_steps``, so every strategy spends one budget.

The ReAct strategies are ``run_agent`` itself (with the chosen watchdog
policy, or with the watchdog off); the caller passes the watchdog.
"""

from __future__ import annotations

import re
from typing import Any

# The baselines drive the loop's own run object, so their answer turn, budgets,
# context building and recording are the loop's, not a copy of them.
from runs.agent.loop import (
    Outcome,
    _Call,
    _Halt,
    _Run,
    run_agent,
)
from runs.agent.tools import ToolRegistry

REACT = "react"
REACT_OFF = "react_off"
NO_TOOLS = "no_tools"
ONE_RETRIEVAL = "one_retrieval"
FIXED_WORKFLOW = "fixed_workflow"

STRATEGIES: dict[str, str] = {
    NO_TOOLS: "no tools (answer directly)",
    ONE_RETRIEVAL: "one retrieval (search the task, answer)",
    FIXED_WORKFLOW: "fixed workflow (search → lookup → answer)",
    REACT: "ReAct with the watchdog",
    REACT_OFF: "ReAct, watchdog off",
}
BASELINES = (NO_TOOLS, ONE_RETRIEVAL, FIXED_WORKFLOW)
# The strategies that take a watchdog policy: the others run with it off
# (a scripted call has no reasoning for a watchdog to steer).
WATCHED = (REACT,)

# Words of a question that never name what it is about (lookup's key term).
_QUESTION_WORDS_TEXT = ("what which who whom whose when where why how is are was were do does did the a an of in on "
                        "at to for by from with and or its it his her their this that these those many much")
_QUESTION_WORDS = frozenset(_QUESTION_WORDS_TEXT.split())
_NAME_RE = re.compile(r"(?:[A-Z][\w'-]*)(?:\s+(?:[A-Z][\w'-]*))*")
_CJK_RUN_RE = re.compile(r"[\u4e00-\u9fff]{2,}")


def key_term(question: str) -> str:
    """The term the fixed workflow looks up: the longest capitalised name of
    the question not at its start ("The Salt Lantern"), else its first run of
    Chinese characters, else its longest word that is not a question word.
    A rule, not a model: the workflow is scripted."""
    names = [m.group(0) for m in _NAME_RE.finditer(question)]
    names = [n for n in names if n.lower() not in _QUESTION_WORDS]
    if names:
        return max(names, key=len)
    cjk = _CJK_RUN_RE.findall(question)
    if cjk:
        # The subject comes before its first 的/是 ("雾港信札的作者…" -> 雾港信札).
        return re.split(r"[的是在于]", cjk[0])[0] or cjk[0]
    words = [w for w in re.findall(r"[^\W_]+", question) if w.lower() not in _QUESTION_WORDS]
    return max(words, key=len) if words else question.strip()


def scripted_calls(strategy: str, prompt: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a baseline makes before its answer turn."""
    if strategy == NO_TOOLS:
        return []
    if strategy == ONE_RETRIEVAL:
        return [("search", {"query": prompt})]
    if strategy == FIXED_WORKFLOW:
        return [("search", {"query": prompt}), ("lookup", {"term": key_term(prompt)})]
    raise ValueError(f"unknown baseline strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")


def run_strategy(strategy: str, **loop: Any) -> Outcome:
    """One run of ``strategy``; every step goes to ``sink`` as it happens.

    ``loop``: run_agent's keyword arguments, passed on whole, so whatever the
    loop takes (an approval gate, a call sink) reaches baselines too.

    ``history``: a resumed baseline (a redelivered task) does not repeat the
    scripted calls already recorded."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    if strategy in (REACT, REACT_OFF):
        return run_agent(**loop)
    tools, prompt = loop["tools"], loop["prompt"]
    answer_tools = ToolRegistry([t for t in (tools.get("finish"),) if t is not None])
    run = _Run(**loop)
    calls = scripted_calls(strategy, prompt)
    done = sum(1 for s in run.steps if s.kind == "action" and s.meta.get("scripted"))
    run.turns += done
    try:
        for tool, args in calls[done:]:
            run.checkpoint()
            run.check_budget()
            run.act(_Call(tool, args), meta={"scripted": True})
            run.turns += 1  # a scripted call spends a step of the budget
    except _Halt as halt:
        return halt.outcome
    # Only finish is offered now; the context still shows the scripted calls
    # (the loop formats a call to a tool it no longer offers from its arguments).
    run.tools = answer_tools
    return run.run()
