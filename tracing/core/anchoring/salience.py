"""Salient units of a text, what a step could take from an observation:
numbers (``1,800`` = ``1800``), identifiers (``drawer 3``, ``B08H5DCD65``),
named entities (capitalised spans), content terms, and CJK bigrams (Chinese
has no capitals). One regex pass over capped text: linear in its length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from tracing.core.normalize import EN_STOP_WORDS, ZH_STOP_WORDS, split_cjk
from tracing.core.tokenizer import MAX_SCAN_CHARS, SENTENCE_END_RE, VALUE_WORD_RE

# A number with more digits than this next to a word is a value ("born 1977"),
# not part of a name ("drawer 3", "Apollo 11").
MAX_ID_NUMBER_DIGITS = 3

# Content terms shorter than this are mostly fillers and abbreviations that
# match by accident ("use", "get"); entities and numbers have no such floor.
MIN_TERM_CHARS = 4

# Words that start sentences or carry ReAct protocol, not content. Kept short
# and generic on purpose (no source-specific words).
FILLER_WORDS = frozenset([
    "maybe", "perhaps", "now", "next", "first", "then", "thus", "therefore", "however", "also", "since", "because",
    "according", "based", "yes", "ok", "okay", "let", "lets", "need", "needs", "want", "try", "tried", "check",
    "thought", "action", "observation", "answer", "question", "claim", "step", "result", "results", "search",
    "lookup", "finish", "think", "found", "find", "could", "would", "might", "must", "shall", "may", "still",
    "already", "instead", "either", "neither", "whether", "while", "though", "although", "like", "well", "much",
    "many", "more", "most", "less", "least", "one", "two", "three", "four", "five", "six", "seven", "eight",
    "nine", "ten", "second", "third", "last", "information", "mention", "mentions", "mentioned", "says", "said",
    "know", "known", "unknown", "sure", "does", "don", "doesn", "didn", "isn", "wasn", "aren", "weren", "cannot",
    "can't", "nothing", "something", "anything", "everything",
])

# "February 16" is a date, not an identifier like "drawer 16".
MONTHS = frozenset([
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
])

WEEKDAYS = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])

# Connectors that may sit inside a capitalised name ("Bank of England",
# "Leonardo da Vinci").
NAME_CONNECTORS = frozenset(["of", "the", "de", "da", "di", "del", "van", "von", "der", "la", "le", "and", "&", "y"])

# Common CJK words that are not names; without capitals, a CJK "name" is a run
# of characters none of whose bigrams is supported, minus these.
ZH_COMMON = frozenset([
    "所以", "因此", "答案", "需要", "现在", "然后", "接下", "下来", "下一", "一步", "搜索", "查找", "查询", "找到",
    "完成", "已经", "可以", "应该", "觉得", "看到", "看看", "观察", "结果", "信息", "没有", "提到", "知道", "问题",
    "任务", "首先", "其次", "最后", "我们", "他们", "你们", "成功", "失败", "出生",
])

# One pass: a CJK run, or a word keeping numbers and names whole (tracing.core.tokenizer).
_TOKEN_RE = VALUE_WORD_RE
_NUMBER_RE = re.compile(r"^\d[\d,]*(?:\.\d+)?(?:st|nd|rd|th|s)?$")
_DIGIT_RE = re.compile(r"\d")
_INNER_PUNCT_RE = re.compile(r"[.,'’\-]")
_RANGE_RE = re.compile(r"^\d+(?:-\d+)+$")
_SENTENCE_END = SENTENCE_END_RE


_SNAKE_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")

_THOUSANDS_RE = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:st|nd|rd|th|s)?$")

# A number glued to its unit ("750ml", "16gb", "15-inch", "500-piece").
_MEASURE_RE = re.compile(r"^(\d[\d,]*(?:\.\d+)?)-?([a-z]{1,12})$")
# List markers at the start of a line ("1.", "2)", "-", "•"): what follows
# opens a sentence.
_LIST_MARK_RE = re.compile(r"(?m)^[ \t]*(?:\d{1,2}[.)]|[-•*–·])[ \t]+")

# An identifier with an inner capital: "AssertionError", "HashMap", "iPhone" is
# let through only when its first letter is lower-case (a brand).
_CAMEL_RE = re.compile(r"^[A-Z][a-z0-9]+[A-Z]\w*$")


def _is_code(word: str) -> bool:
    """An abbreviation ("SMS", "GB", "IDs", "FOV"), not a word in capitals
    ("TODD", "ITALY"): three letters at most, or four or five with no vowel."""
    core = word[:-1] if len(word) > 2 and word[-1] == "s" and word[:-1].isupper() else word
    if not core.isupper() or not core.isalpha():
        return False
    return len(core) <= 3 or (len(core) <= 5 and not any(c in "AEIOU" for c in core))


def normalize_number(raw: str) -> str:
    """'1,800' -> '1800', '21st' -> '21', '2.50' -> '2.5', '1990s' -> '1990'."""
    core = re.sub(r"(st|nd|rd|th|s)$", "", raw.lower())
    core = core.replace(",", "")
    if "." in core:
        core = core.rstrip("0").rstrip(".")
    return core.lstrip("0") or "0"


def _is_number(word: str) -> bool:
    return word[:1].isdigit() and bool(_NUMBER_RE.match(word.lower()))


def _has_digit(word: str) -> bool:
    return _DIGIT_RE.search(word) is not None


def _is_cap(word: str) -> bool:
    return word[:1].isupper()


@dataclass
class Salient:
    """Salient units of one text. ``units`` is the flat set used for overlap."""

    numbers: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    # Each entity as its tuple of lower-case words, in order of appearance.
    entities: list[tuple[str, ...]] = field(default_factory=list)
    terms: set[str] = field(default_factory=set)
    cjk: set[str] = field(default_factory=set)
    # CJK pieces (runs split at function characters): candidate names.
    cjk_pieces: list[str] = field(default_factory=list)
    # Every lower-case word token (stop words included) and CJK bigram: the
    # vocabulary used for "is this entity word anywhere in the evidence?".
    words: set[str] = field(default_factory=set)
    # Adjacent word pairs ("sim pin", "wi-fi calling"): a name of several words
    # is the phrase, not its words scattered over a page.
    pairs: set[str] = field(default_factory=set)
    # Ids written as an instance number alone in brackets ("a watch (1)", not
    # "Skateboard (2 types)"): always one object, never a word and a count.
    instances: set[str] = field(default_factory=set)

    @cached_property
    def units(self) -> set[str]:
        # Computed once, after extract() has filled the fields.
        out = {"n:" + n for n in self.numbers}
        out.update("i:" + i for i in self.ids)
        out.update("e:" + " ".join(e) for e in self.entities)
        out.update("t:" + t for t in self.terms)
        out.update("c:" + c for c in self.cjk)
        return out

    @cached_property
    def strong_units(self) -> set[str]:
        """Units that pin a fact down (a term alone rarely does)."""
        return {u for u in self.units if not u.startswith("t:")}





@lru_cache(maxsize=4096)
def extract(text: str) -> Salient:
    """Salient units of ``text`` (capped at MAX_SCAN_CHARS). Never raises on str input.

    Cached: a run's context, its thoughts' sentences and repeated results are
    read several times. Callers must treat the result as read-only."""
    out = Salient()
    if not text:
        return out
    text = text[:MAX_SCAN_CHARS].replace("’", "'")
    if "\n" in text:
        text = _LIST_MARK_RE.sub("\n", text)
    if "_" in text:
        # snake_case names a table, a column, a record ("poker_player",
        # "sofia_li_9219"): one identifier, besides its words.
        out.ids.update(m.lower() for m in _SNAKE_RE.findall(text))
    scan = _Scan(text, out)
    for m in _TOKEN_RE.finditer(text):
        scan.token(m)
    if scan.span:
        scan.close_span()
    return out


class _Scan:
    """The one pass of ``extract``: the previous word, and the capitalised span being built."""

    def __init__(self, text: str, out: Salient) -> None:
        self.text, self.out = text, out
        self.span: list[str] = []
        # Whether the span started a sentence (a lone sentence-initial capital is not a name).
        self.span_sentence_start = False
        self.pending_connectors: list[str] = []
        self.prev_word: str | None = None
        self.prev_lower: str | None = None
        self.prev_end = 0

    def token(self, m: re.Match[str]) -> None:
        gap = self.text[self.prev_end : m.start()]
        # Fast path: most gaps are one space. Otherwise a sentence starts after
        # end punctuation (tokens never include a trailing ".").
        blank = gap == " " or (not gap.strip() and "\n" not in gap)
        sentence_start = self.prev_end == 0 or (not blank and _SENTENCE_END.search(gap) is not None)
        self.prev_end = m.end()
        run = m.group("cjk")
        if run is not None:
            self._cjk(run)
            return
        word = m.group("word")
        lower = word.lower()
        out = self.out
        out.words.add(lower)
        if self.prev_lower is not None and blank:
            out.pairs.add(f"{self.prev_lower} {lower}")
        self.prev_lower = lower
        # Plain words (most tokens) carry no digits and no inner punctuation:
        # only the name span and the terms below apply.
        if not word.isalpha() and self._digits(word, lower, gap, m.end()):
            if self.span:
                self.close_span()
            self.prev_word = word
            return
        # A span continues across plain spaces only; punctuation such as
        # commas or brackets ends a name.
        self._name(word, lower, blank and not sentence_start, sentence_start)
        if lower not in EN_STOP_WORDS and lower not in FILLER_WORDS and len(lower) >= MIN_TERM_CHARS:
            out.terms.add(lower)
        self.prev_word = word

    def _cjk(self, run: str) -> None:
        if self.span:
            self.close_span()
        self.prev_word = self.prev_lower = None
        out = self.out
        for piece in split_cjk(run):
            out.cjk_pieces.append(piece)
            if len(piece) == 1:
                out.words.add(piece)
                continue
            for i in range(len(piece) - 1):
                bigram = piece[i : i + 2]
                out.words.add(bigram)
                if bigram not in ZH_STOP_WORDS:
                    out.cjk.add(bigram)

    def _digits(self, word: str, lower: str, gap: str, end: int) -> bool:
        """A token with digits: a number, a range, a measure or an id (True), else a word with inner punctuation."""
        out = self.out
        if _INNER_PUNCT_RE.search(lower):
            out.words.update(_INNER_PUNCT_RE.split(lower))
        if "," in word and _is_number(word) and not _THOUSANDS_RE.match(word):
            # "(4,8)" and "3,4,6" are lists of numbers, not 48 and 346.
            out.numbers.update(normalize_number(p) for p in word.split(",") if p)
        elif _is_number(word):
            self._number(normalize_number(word), gap, end)
        elif _RANGE_RE.match(word):
            # "drawer (1-10)", "1990-1995": a range is its end points.
            out.numbers.update(normalize_number(part) for part in word.split("-"))
        elif _has_digit(word) and len(word) <= 2:
            out.words.add(lower)  # "0b", "3d", "x2": too short to name a thing
        elif _has_digit(word):
            self._measure_or_id(lower)
        else:
            return False
        return True

    def _number(self, number: str, gap: str, end: int) -> None:
        """A number, and with the word before it an id ("drawer 3", "potato (1)")."""
        self.out.numbers.add(number)
        prev = self.prev_word
        if (
            prev is not None
            and len(number.replace(".", "")) <= MAX_ID_NUMBER_DIGITS
            and gap.strip() in ("", "(", "#")
            and prev.lower() not in EN_STOP_WORDS
            and prev.lower() not in MONTHS
            and not _is_number(prev)
        ):
            ident = f"{prev.lower()} {number}"
            self.out.ids.add(ident)
            if gap.strip() == "(" and self.text[end : end + 1] == ")":
                self.out.instances.add(ident)

    def _measure_or_id(self, lower: str) -> None:
        out = self.out
        measure = _MEASURE_RE.match(lower)
        if measure:
            # "750ml", "16gb", "20h", "500-piece": a quantity with its unit,
            # checked as the number (the unit may come from a key name).
            out.numbers.add(normalize_number(measure.group(1)))
            out.words.add(measure.group(2))
        elif "-" in lower and all(_MEASURE_RE.match(p) or p.isalpha() for p in lower.split("-") if p):
            # "3g-only", "2-piece-set": measures and words joined.
            for part in filter(None, lower.split("-")):
                m2 = _MEASURE_RE.match(part)
                if m2:
                    out.numbers.add(normalize_number(m2.group(1)))
                out.words.add(part)
        else:
            out.ids.add(lower)

    def _name(self, word: str, lower: str, joined: bool, sentence_start: bool) -> None:
        if _is_cap(word):
            if self.span and joined:
                self.span.extend(self.pending_connectors)
                self.pending_connectors = []
                self.span.append(word)
            else:
                if self.span:
                    self.close_span()
                self.span = [word]
                self.span_sentence_start = sentence_start
        elif self.span and joined and lower in NAME_CONNECTORS and len(self.pending_connectors) < 2:
            self.pending_connectors.append(word)
        elif self.span:
            self.close_span()

    def close_span(self) -> None:
        span = self.span
        words = list(span)
        if self.span_sentence_start and len(words) > 1:
            # The first word of a sentence is capitalised anyway: in
            # "Professions of Nicholas Ray" only "Nicholas Ray" is a name.
            words.pop(0)
        # Drop leading articles/stop words ("The High Plains" -> "High Plains").
        while words and (
            words[0].lower() in EN_STOP_WORDS or words[0].lower() in FILLER_WORDS or words[0].lower() in NAME_CONNECTORS
        ):
            words.pop(0)
        if words:
            # Possessives name the same thing: "Flydubai's" is "Flydubai".
            lowered = tuple(re.sub(r"['’]s$", "", w.lower()) for w in words)
            if not _opener(words, lowered, self.span_sentence_start and len(span) == 1):
                self.out.entities.append(lowered)
        self.span = []
        self.pending_connectors = []


def _opener(words: list[str], lowered: tuple[str, ...], lone_start: bool) -> bool:
    """A span that names nothing. Upper-case codes ("SMS", "GB SSD", "AZ")
    abbreviate a vocabulary (ids carry digits), and so do months and days. A
    lone capital opening a sentence is an opener more often than a name
    ("Thank you", "Great", "Retrying."), and so is a contraction ("I'd",
    "You're"); code identifiers (CamelCase, AssertionError) name program
    parts, not things in the world."""
    if all(_is_code(w) for w in words) or all(w.lower() in MONTHS or w.lower() in WEEKDAYS for w in words):
        return True
    return len(lowered) == 1 and (
        lone_start
        or lowered[0] in EN_STOP_WORDS
        or lowered[0] in FILLER_WORDS
        or "'" in lowered[0]
        or _CAMEL_RE.match(words[0]) is not None
    )
