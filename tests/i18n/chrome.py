"""The page chrome that is English: visible text a template writes itself
(not through {% translate %}), and the text of a rendered page.

A template's literal text is what its author typed, never user data; in the
Chinese interface none of it may be English words. Text inside <code>, <pre>,
<kbd>, <script>, <style> is code or keys, and a few names are the same in
both languages (TERMS_KEPT).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from django.template.base import Lexer, TokenType

SKIPPED = {"code", "pre", "kbd", "script", "style", "q", "mark", "textarea"}
VOID = {"br", "input", "meta", "link", "img", "hr", "rect", "line", "polyline", "source", "wbr", "col"}
ATTRIBUTES = {"title", "placeholder", "aria-label", "alt"}
# Names kept as they are in Chinese text too: file formats, protocols, product and model names, units.
TERMS_KEPT = {
    "agentlab", "CSV", "JSONL", "JSON", "OTLP", "API", "HTTP", "HTML", "URL", "OpenAPI", "OpenTelemetry", "ReAct",
    "Thought", "Action", "Observation", "LLM", "ms", "id", "ids", "pass", "Gemma", "llama", "cpp", "sim", "local",
    "openai", "OpenAI", "jsonl", "csv", "json", "vs", "P50", "P95", "Cohen", "Jaccard", "token", "tokens", "run",
    "Bearer", "SDK", "UTC", "max", "min", "sd", "CI", "kB", "MB", "GB", "KV", "key", "value", "OK", "NUL",
    "chat", "completions",  # the model API a call used (OpenAI's names)
}
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]")


def english_words(text: str) -> list[str]:
    """The English words of `text` that are not kept names."""
    return [w for w in WORD.findall(text) if w not in TERMS_KEPT and w.lower() not in TERMS_KEPT]


class _Scanner:
    """Walks a template's text tokens as HTML, across the template tags between them."""

    def __init__(self) -> None:
        self.in_tag = False
        self.quote = ""
        self.attr = ""
        self.value_has_tag = False
        self.value = []
        self.stack: list[str] = []
        self.comment = 0
        self.found: list[str] = []

    def skipped(self) -> bool:
        return bool(self.comment) or any(e in SKIPPED for e in self.stack)

    def tag_token(self) -> None:
        if self.quote:
            self.value_has_tag = True

    def text(self, s: str) -> None:
        i, buf = 0, []
        while i < len(s):
            ch = s[i]
            if not self.in_tag:
                if ch == "<" and i + 1 < len(s) and (s[i + 1].isalpha() or s[i + 1] in "/!"):
                    self._visible("".join(buf))
                    buf = []
                    m = re.match(r"</?([A-Za-z0-9]+)", s[i:])
                    name = m.group(1).lower() if m else ""
                    if name and s[i + 1] == "/":
                        if name in self.stack:
                            while self.stack and self.stack.pop() != name:
                                pass
                    elif name and name not in VOID:
                        self.stack.append(name)
                    self.in_tag, self.quote, self.attr = True, "", ""
                else:
                    buf.append(ch)
            elif self.quote:
                if ch == self.quote:
                    if self.attr in ATTRIBUTES and not self.skipped():
                        self._visible("".join(self.value))
                    self.quote, self.value, self.value_has_tag = "", [], False
                elif not self.comment:  # (a blocktranslate inside the value is the catalogue's)
                    self.value.append(ch)
            elif ch in "\"'":
                m = re.search(r"([A-Za-z-]+)\s*=\s*$", s[max(0, i - 40):i])
                self.attr = m.group(1).lower() if m else ""
                self.quote = ch
            elif ch == ">":
                self.in_tag = False
                if s[i - 1] == "/" and self.stack:
                    self.stack.pop()
            i += 1
        if not self.in_tag:
            self._visible("".join(buf))

    def _visible(self, text: str) -> None:
        if not self.skipped() and english_words(text):
            self.found.append(" ".join(text.split()))


def untranslated_template_text(source: str) -> list[str]:
    """The literal English text of a template's visible text and labelling attributes."""
    scanner = _Scanner()
    for token in Lexer(source).tokenize():
        if token.token_type == TokenType.TEXT:
            scanner.text(token.contents)
        elif token.token_type == TokenType.BLOCK:
            word = (token.contents.split() or [""])[0]
            # A comment is not shown; a blocktranslate's text is the catalogue's.
            scanner.comment += {"comment": 1, "endcomment": -1, "blocktranslate": 1, "endblocktranslate": -1}.get(word, 0)
            scanner.tag_token()
        else:
            scanner.tag_token()
    return scanner.found


class _PageText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.nodes: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)
        if not any(e in SKIPPED for e in self.stack):
            self.nodes += [v for k, v in attrs if k in ATTRIBUTES and v]

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if data.strip() and not any(e in SKIPPED for e in self.stack):
            self.nodes.append(" ".join(data.split()))


def page_text(html: str) -> list[str]:
    """A rendered page's visible text nodes and labelling attributes."""
    parser = _PageText()
    parser.feed(html)
    return parser.nodes
