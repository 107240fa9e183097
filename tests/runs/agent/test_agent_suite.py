from __future__ import annotations

import re

import pytest
from helpers_agent import CLEAN, run_task

from runs.agent import suite
from runs.agent.sim_server import sim_client
from runs.agent.suite import load_documents, load_suite, score
from runs.agent.tools import CorpusSearch, SearchTool

TASKS, DOCS = load_suite()


def test_suite_size_languages_and_fields():
    assert len(TASKS) >= 20
    assert {t["lang"] for t in TASKS} == {"en", "zh"}
    assert {"multi-hop", "figures", "timetable", "faults"} <= {t["suite"] for t in TASKS}
    for task in TASKS:
        assert {"slug", "title", "prompt", "gold", "scoring", "tolerance", "suite", "lang", "plan"} <= set(task)
        assert task["scoring"] in suite.SCORINGS
        assert task["plan"][-1]["tool"] == "finish"
    assert len({t["slug"] for t in TASKS}) == len(TASKS)
    assert len({d["slug"] for d in DOCS}) == len(DOCS)


def test_corpus_holds_the_traps():
    bodies = " ".join(d["body"] for d in DOCS)
    assert any(d.get("fault") == "timeout_once" for d in DOCS)
    assert "<script>" in bodies
    assert "ignore the previous question" in bodies and "忽略之前的问题" in bodies
    assert "adjusted net profit" in bodies and "grew up in" in bodies


def test_plan_patterns_compile():
    for task in TASKS:
        for step in task["plan"]:
            for rule in step.get("extract", []) + step.get("trap", []):
                assert re.compile(rule["pattern"]).groups == 1, (task["slug"], rule)


@pytest.mark.parametrize("task", TASKS, ids=[t["slug"] for t in TASKS])
def test_every_task_is_solvable_by_a_careful_agent(task):
    outcome, _ = run_task(task["slug"], client=sim_client(**CLEAN))
    assert outcome.status == "succeeded"
    assert score(task, outcome.final_answer), outcome.final_answer


def test_empty_result_trap():
    search = SearchTool(CorpusSearch(load_documents()))
    assert search({"query": "Tolbey Quary Playhouse"}).status == "empty"
    assert search({"query": "澜沧剧场"}).status == "empty"


def test_key_facts_are_inside_the_snippets():
    # The sim reads snippets; a fact past the snippet needs lookup (glass orchard, on purpose).
    search = SearchTool(CorpusSearch(load_documents()))
    assert "born in Calder Bay" in search({"query": "Orren Vasquel"}).text
    assert "born in Port Ashby" not in search({"query": "Ilse Marrow"}).text


@pytest.mark.parametrize(
    ("scoring", "gold", "answer", "expected"),
    [
        ("exact", "Calder Bay", "calder bay.", True),
        ("exact", "Calder Bay", "The Calder Bay", True),
        ("exact", "Calder Bay", "Calder Bay, England", False),
        ("contains", "Calder Bay", "He was born in Calder Bay.", True),
        ("contains", "Calder Bay", "Mirefield", False),
        ("contains", "白沙市", "他出生于白沙市。", True),
        ("contains", "16:30", "It closes at 16:30 on Saturdays", True),
        ("contains", "16:30", "16.30", False),
        ("numeric", "41.7", "41.7 million pounds", True),
        ("numeric", "41.7", "In 2023 it reported 41.7 million", True),  # the year is context
        ("numeric", "41.7", "48.2 million (adjusted); 41.7 reported", False),  # first number counts
        ("numeric", "1284", "1,284 metres", True),
        ("numeric", "1998", "1998年", True),  # gold is a year: years count
        ("numeric", "4.9", "４.９亿元", True),  # full-width digits
        ("numeric", "31", "no idea", False),
    ],
)
def test_scoring_rules(scoring, gold, answer, expected):
    assert score({"gold": gold, "scoring": scoring, "tolerance": 0.05}, answer) is expected


def test_numeric_tolerance_both_sides():
    task = {"gold": "3.8", "scoring": "numeric", "tolerance": 0.05}
    assert score(task, "3.84")
    assert not score(task, "3.86")


def test_no_answer_scores_false_and_unknown_rule_raises():
    assert score({"gold": "x", "scoring": "exact"}, None) is False
    with pytest.raises(ValueError):
        score({"gold": "x", "scoring": "fuzzy"}, "x")


def test_load_suite_returns_copies():
    tasks, _ = load_suite()
    tasks[0]["gold"] = "changed"
    assert load_suite()[0][0]["gold"] != "changed"
