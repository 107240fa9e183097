from __future__ import annotations

import pytest

from runs.agent.faults import JUNK_PAGE, FaultError, FaultRates, with_faults
from runs.agent.tools import CorpusSearch, Document, default_tools

DOCS = [Document("a", "Alpha bridge", "The Alpha bridge is 300 metres long.")]


def test_rates_are_validated_and_name_the_fault():
    assert FaultRates.from_dict(None).total == 0
    assert FaultRates.from_dict({"timeout": 0.2, "junk": 0.3}).total == pytest.approx(0.5)
    for bad, message in [({"fire": 0.1}, "faults.fire"), ({"timeout": 1.5}, "between 0 and 1"),
                         ({"empty": "x"}, "must be a number"), ({"timeout": 0.7, "http500": 0.7}, "more than 1"),
                         ([0.1], "object")]:
        with pytest.raises(FaultError, match=message):
            FaultRates.from_dict(bad)


def test_no_faults_returns_the_tools_unchanged():
    tools = default_tools(CorpusSearch(DOCS))
    assert with_faults(tools, FaultRates(), seed=1) is tools


@pytest.mark.parametrize(("kind", "status", "text"), [
    ("timeout", "timeout", "timeout"), ("http500", "error", "HTTP 500"), ("empty", "empty", ""), ("junk", "ok", "<html>"),
])
def test_each_fault_comes_back_as_its_observation(kind, status, text):
    tools = with_faults(default_tools(CorpusSearch(DOCS)), FaultRates(**{kind: 1.0}), seed=1)
    result = tools.get("search")({"query": "alpha bridge"})
    assert result.status == status and text in result.text
    assert result.meta == {"fault": kind, "injected": True}
    if kind == "junk":
        assert result.text == JUNK_PAGE
    # finish is never faulted: the run can always end
    assert tools.get("finish")({"answer": "300"}).status == "ok"


def test_the_same_seed_gives_the_same_faults():
    def pattern(seed):
        tools = with_faults(default_tools(CorpusSearch(DOCS)), FaultRates(timeout=0.5), seed=seed)
        return [tools.get("search")({"query": "alpha"}).status for _ in range(20)]

    assert pattern(3) == pattern(3)
    assert pattern(3) != pattern(4)
    assert {"timeout", "ok"} == set(pattern(3))
