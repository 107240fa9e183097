"""Read-only tools of the agent: search, lookup, calculate, finish.

A tool takes a dict of arguments and returns a ``ToolResult``; it never raises
for bad input (the loop records what it returns as the observation). Search is
split into a backend (anything with ``search(query, k) -> list[Document]``:
``CorpusSearch`` here, ``PostgresSearch`` in ``runs/launch/agent_corpus.py``) and the
``SearchTool`` that formats the observation text the simulated model parses.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tracing.core.normalize import search_tokens
from tracing.core.tokenizer import plain_sentences

# Results per search: enough that the right document is found next to a trap
# (same-name company, adjusted figure) without flooding the context.
SEARCH_K = 5
# Snippet length per result; the format contract with the simulated model.
SNIPPET_CHARS = 300
# A result must match at least this share of the query's terms: a stray common
# word must not turn a query about an unknown entity into a "hit".
MIN_QUERY_COVERAGE = 0.5
# Title terms count more than body terms: a document about X names X in its title.
TITLE_WEIGHT = 2.0
# Sentences returned by lookup; ReAct's lookup returns one at a time, a few
# save turns without pasting the whole page.
LOOKUP_MAX_SENTENCES = 3
# calculate: longer input is not an arithmetic question but an attack or a bug.
MAX_EXPRESSION_CHARS = 200
# calculate: 10**100 is plenty for fares and figures; 9**9**9 would hang.
MAX_EXPONENT = 100
# calculate: results beyond this many digits are refused (nested powers).
MAX_RESULT_DIGITS = 100
# A document whose slug starts with this, or whose ``fault`` is
# FAULT_TIMEOUT_ONCE, makes the first search that returns it time out.
FLAKY_SLUG_PREFIX = "flaky-"
FAULT_TIMEOUT_ONCE = "timeout_once"


@dataclass
class ToolResult:
    text: str
    status: str = "ok"  # ok | empty | error | timeout (tracing.core.steps.STATUSES)
    meta: dict[str, Any] = field(default_factory=dict)


class RunAborted(Exception):
    """Raised by whoever hosts the loop (a sink, a tool's backend) to end it at
    once without recording anything more: not a tool failure, not an outcome."""


@runtime_checkable
class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments (tools mode)
    text_arg: str  # the single argument a text-mode ``tool[...]`` fills
    side_effect: bool

    def __call__(self, args: dict[str, Any]) -> ToolResult: ...


@dataclass
class Document:
    slug: str
    title: str
    body: str
    lang: str = "en"
    fault: str = ""  # "" or FAULT_TIMEOUT_ONCE


def _schema(arg: str, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {arg: {"type": "string", "description": description}},
        "required": [arg],
    }


def _arg(args: Any, name: str) -> str | None:
    if isinstance(args, str):
        return args
    if isinstance(args, dict):
        value = args.get(name)
        if value is None and len(args) == 1:
            # Models often misname the single argument ({"q": ...}); accept it.
            value = next(iter(args.values()))
        if value is not None:
            return str(value)
    return None


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {t.name.lower(): t for t in tools}

    def get(self, name: str | None) -> Tool | None:
        return self._tools.get((name or "").strip().lower())

    @property
    def names(self) -> list[str]:
        return [t.name for t in self._tools.values()]

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in self._tools.values()
        ]

    def text_descriptions(self) -> str:
        return "\n".join(f"{t.name}[{t.text_arg}]: {t.description}" for t in self._tools.values())


# --- search ------------------------------------------------------------------

class CorpusSearch:
    """In-memory ranked keyword search (tests, the sim demo without Postgres)."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)
        self._title = [Counter(search_tokens(d.title)) for d in self.documents]
        self._body = [Counter(search_tokens(d.body)) for d in self.documents]
        df: Counter[str] = Counter()
        for title, body in zip(self._title, self._body, strict=True):
            df.update(set(title) | set(body))
        n = len(self.documents)
        self._idf = {term: math.log(1 + n / count) for term, count in df.items()}

    def search(self, query: str, k: int = SEARCH_K) -> list[Document]:
        terms = set(search_tokens(query))
        if not terms:
            return []
        scored = []
        for pos, (title, body) in enumerate(zip(self._title, self._body, strict=True)):
            matched = [t for t in terms if t in title or t in body]
            if len(matched) / len(terms) < MIN_QUERY_COVERAGE:
                continue
            score = sum(self._idf[t] * (TITLE_WEIGHT * min(title[t], 3) + math.log1p(body[t])) for t in matched)
            scored.append((pos, len(matched), score))
        # More query terms matched first, then weight; corpus order breaks ties.
        scored.sort(key=lambda row: (-row[1], -row[2], row[0]))
        return [self.documents[pos] for pos, _, _ in scored[:k]]


def snippet(body: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(body.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_results(docs: Sequence[Document]) -> str:
    """The observation text of ``search`` (CONTRACTS.md; the sim parses it)."""
    return "\n\n".join(f"[{i}] {d.title} (doc:{d.slug})\n{snippet(d.body)}" for i, d in enumerate(docs, start=1))


def _times_out_once(doc: Document) -> bool:
    return doc.fault == FAULT_TIMEOUT_ONCE or doc.slug.startswith(FLAKY_SLUG_PREFIX)


class SearchTool:
    name = "search"
    description = "Search the document collection; returns titles, doc ids and snippets of the best matches."
    text_arg = "query"
    side_effect = False

    def __init__(self, backend: Any, k: int = SEARCH_K) -> None:
        self.backend = backend  # anything with search(query: str, k: int) -> list[Document]
        self.k = k
        self.parameters = _schema("query", "keywords to search for")
        self.last_documents: list[Document] = []
        # State per tool instance, i.e. per run: the flaky source fails once,
        # then answers, as a real overloaded server would on retry.
        self._timed_out: set[str] = set()

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        query = (_arg(args, "query") or "").strip()
        if not query:
            return ToolResult("search needs a non-empty query.", "error", {"query": query})
        try:
            docs = list(self.backend.search(query, self.k))
        except RunAborted:
            raise
        except Exception as exc:  # a broken backend is an observation, not a crash
            return ToolResult(f"Search failed: {exc}", "error", {"query": query})
        for doc in docs:
            if _times_out_once(doc) and doc.slug not in self._timed_out:
                self._timed_out.add(doc.slug)
                return ToolResult(
                    "Search timed out after 10 s: the source did not answer.",
                    "timeout",
                    {"query": query, "fault": FAULT_TIMEOUT_ONCE},
                )
        if not docs:
            return ToolResult(f"No results for '{query}'.", "empty", {"query": query, "docs": []})
        self.last_documents = docs
        return ToolResult(format_results(docs), "ok", {"query": query, "docs": [d.slug for d in docs]})


# --- lookup ------------------------------------------------------------------

class LookupTool:
    """Sentences that mention a term, in the documents of the last search.

    ReAct's lookup reads one open page; here the documents of the last search
    are read in rank order and the first one that mentions the term answers,
    so the backend's ranking of near-ties does not decide the outcome.
    """

    name = "lookup"
    description = "Find a term in the documents returned by the last search; returns the sentences that contain it."
    text_arg = "term"
    side_effect = False

    def __init__(self, search_tool: SearchTool) -> None:
        self.search_tool = search_tool
        self.parameters = _schema("term", "the word or phrase to find")

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        term = (_arg(args, "term") or "").strip()
        if not term:
            return ToolResult("lookup needs a non-empty term.", "error")
        docs = self.search_tool.last_documents
        if not docs:
            return ToolResult("Nothing to look in: search first.", "error", {"term": term})
        needle = term.lower()
        for doc in docs:
            flat = " ".join(doc.body.split())
            hits = [s.strip() for s in plain_sentences(flat) if needle in s.lower()]
            if hits:
                text = f"(doc:{doc.slug}) " + " ".join(hits[:LOOKUP_MAX_SENTENCES])
                return ToolResult(text, "ok", {"term": term, "docs": [doc.slug]})
        return ToolResult(f"No sentence mentions '{term}' in the last results.", "empty", {"term": term, "docs": []})


# --- calculate ---------------------------------------------------------------

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# "09" is a syntax error in Python but a normal way to write an hour; not after
# a digit or a decimal point (10.05 keeps its zero).
_LEADING_ZEROS_RE = re.compile(r"(?<![\d.])0+(?=\d)")


class CalculationError(ValueError):
    pass


def _too_big(value: float | int) -> bool:
    # A comparison, not len(str(...)): str() of a huge int is slow and capped.
    return abs(value) >= 10**MAX_RESULT_DIGITS


def _evaluate(node: ast.AST) -> float | int:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise CalculationError(f"only numbers are allowed, not {node.value!r}")
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculationError(f"exponent {right} is larger than {MAX_EXPONENT}")
        try:
            value = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise CalculationError("division by zero") from None
        except OverflowError:
            raise CalculationError("result too large") from None
        if isinstance(value, complex):
            raise CalculationError("the result is not a real number")
        if _too_big(value):
            raise CalculationError(f"result has more than {MAX_RESULT_DIGITS} digits")
        return value
    raise CalculationError(f"'{type(node).__name__}' is not arithmetic: use numbers, + - * / // % ** and parentheses")


def calculate(expression: str) -> str:
    """Evaluate arithmetic on the AST (never ``eval``); raises CalculationError."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    text = unicodedata.normalize("NFKC", expression).replace("×", "*").replace("÷", "/").replace("^", "**")
    text = _LEADING_ZEROS_RE.sub("", _THOUSANDS_RE.sub("", text.strip()))
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise CalculationError(f"cannot parse {expression!r} as arithmetic") from None
    value = _evaluate(tree)
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.10g}"
    return str(value)


class CalculateTool:
    name = "calculate"
    description = "Evaluate an arithmetic expression: numbers, + - * / // % ** and parentheses."
    text_arg = "expression"
    side_effect = False

    def __init__(self) -> None:
        self.parameters = _schema("expression", "for example 2 * 12.40 + 6.20")

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        expression = _arg(args, "expression")
        if expression is None or not expression.strip():
            return ToolResult("calculate needs an expression.", "error")
        try:
            return ToolResult(calculate(expression), "ok", {"expression": expression})
        except CalculationError as exc:
            return ToolResult(f"Calculation error: {exc}", "error", {"expression": expression})


class FinishTool:
    """Ends the run; the loop turns a call into the final step."""

    name = "finish"
    description = "Give the final answer (short: a name, a number, a date) and end the task."
    text_arg = "answer"
    side_effect = False

    def __init__(self) -> None:
        self.parameters = _schema("answer", "the final answer")

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        return ToolResult(_arg(args, "answer") or "")


# --- writing tools (a reviewer approves each call in a worker) -----------------


class SendMessageTool:
    """Sends a message to the harbour office: a write, so in a worker a person
    approves each call first (runs/approvals). ``deliver(tool, args)`` stores
    it (a sandbox table) and returns its reference."""

    name = "send_message"
    description = ("Send a short message to the harbour office (a write: a reviewer must approve it before it is "
                   "sent).")
    text_arg = "text"
    side_effect = True
    MAX_CHARS = 2000

    def __init__(self, deliver: Callable[[str, dict[str, Any]], str]) -> None:
        self.parameters = _schema("text", "the message to send")
        self.deliver = deliver

    def __call__(self, args: dict[str, Any]) -> ToolResult:
        text = (_arg(args, "text") or "").strip()
        if not text:
            return ToolResult("send_message needs a non-empty text.", "error")
        if len(text) > self.MAX_CHARS:
            return ToolResult(f"send_message: the text is longer than {self.MAX_CHARS} characters.", "error")
        ref = self.deliver(self.name, {"text": text})
        return ToolResult(f"Message sent to the harbour office (reference {ref}).", "ok", {"ref": ref})


def default_tools(backend: Any) -> ToolRegistry:
    """search, lookup, calculate and finish over one search backend (one run)."""
    search = SearchTool(backend)
    return ToolRegistry([search, LookupTool(search), CalculateTool(), FinishTool()])
