"""What the agent could know at a step: the evidence its claims are checked against.

The task, the context, every observation **and the agent's own earlier
actions** (a value it typed into a call is no invention when repeated); not
its thoughts and replies, or a claim could back itself by being said twice.
Beyond exact matches a claim is grounded as arithmetic over evidence numbers,
the same number rounded or formatted, a date written another way, a name
spelt out from a code (``ATL``: Atlanta) or sharing a stem (Canadian: Canada).
"""

from __future__ import annotations

import re
from collections import deque
from datetime import date
from itertools import islice

from tracing.core.anchoring.common_knowledge import same_as
from tracing.core.anchoring.salience import ZH_COMMON, Salient

# Unit conversions an agent computes with but no page states (minutes in an
# hour, hours in a day, ...): using them is arithmetic, not an invented fact.
CONVERSION_NUMBERS = frozenset({"60", "24", "7", "12", "100", "1000", "365"})

# Number words that back the digits a thought writes for them.
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "twice": 2, "double": 2, "pair": 2, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4,
    "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10,
}

# An entity counts as observed when at least this share of its words occurs in
# the evidence: "Mussolini" for "Benito Amilcare Andrea Mussolini" passes, so
# does a 2-of-3 match ("President Richard Nixon"); "Alexander McNair" against
# a page that only says "Alexander" (1 of 2) does not.
ENTITY_SUPPORT_MIN = 0.6
NAME_TITLES = frozenset([
    "president", "king", "queen", "prince", "princess", "saint", "lord", "lady", "general", "captain", "doctor",
    "professor", "senator", "governor", "mayor", "judge", "bishop", "pope", "emperor", "empress", "duke", "duchess",
    "count", "countess", "baron", "sheikh", "chairman", "minister", "colonel", "major", "admiral", "sergeant",
    "lieutenant",
])

# Names sharing this many leading letters are one stem ("Canad-a/-ian",
# "Japan/-ese"); shorter stems start to merge unrelated names.
STEM_CHARS = 5

# Arithmetic is tried over this many of the most recent evidence numbers (plus
# the claim's own sentence): pairs of 40 are 1,600 tries, only for a number
# that matched nothing exactly, so a run's cost stays linear in practice.
ARITHMETIC_POOL = 40

# Amounts with decimals (prices, measures) are also checked for sums and
# differences over the numbers of the latest results, this many at most: with
# cents, a chance match among them is rare, which it is not for integers.
DECIMAL_POOL = 400

# Operands of a sum or difference must exceed this: "1807" is not grounded as
# "1800 + 7" because some 7 was seen somewhere.
SMALL_OPERAND = 12

# How far a quotient may be from the whole number written for it ("12 per
# box" for 60 / 5, or 59.9 / 5 read off rounded prices): rounding 12.586 up to
# 13 would ground any whole number as some price over some count.
WHOLE_RATIO_SLACK = 0.05

# A code is 2 to 5 capital letters ("ATL", "PHL", "NYSE"); longer caps are words.
_CODE_RE = re.compile(r"\b[A-Z]{2,5}\b")
# "2024-05-17", and the date inside a timestamp ("2024-05-17T10:00:00Z").
_ISO_DATE_RE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?!\d)")
# Days a stated computation moves a date by: the next day, a week, a fortnight,
# a month, a year ("a week after 2024-05-17").
DATE_OFFSETS_DAYS = frozenset([1, 2, 3, 7, 14, 28, 30, 31, 60, 90, 365, 366])
# Years between which an agent works out an age or a span ("born 1979 … 45").
YEAR_SPAN = (1800, 2100)
MAX_AGE = 130
# An identifier's digits alone name it ("W2890441" and "2890441", "Patient/8123"
# and "8123") once they are this long: shorter tails are counts and codes.
ID_TAIL_MIN_DIGITS = 4
_ID_TAIL_RE = re.compile(rf"^[a-z#/_-]*[a-z][a-z#/_-]*(\d{{{ID_TAIL_MIN_DIGITS},}})$")
_MONTHS = {
    m: i
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for m in names
}
_WORD_DATE_RE = re.compile(
    r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.? (\d{1,2})(?:st|nd|rd|th)?(?:,? (\d{4}))?\b",
    re.I,
)


def dates_in(text: str) -> set[str]:
    """Dates as "MM-DD" and "YYYY-MM-DD" keys, from ISO and "Month D, YYYY" forms."""
    out: set[str] = set()
    for y, m, d in _ISO_DATE_RE.findall(text):
        out.update((f"{int(m):02d}-{int(d):02d}", f"{y}-{int(m):02d}-{int(d):02d}"))
    for month, day, year in _WORD_DATE_RE.findall(text):
        key = f"{_MONTHS[month.lower()]:02d}-{int(day):02d}"
        out.add(key)
        if year:
            out.add(f"{year}-{key}")
    return out


# A name the agent defines in the text that uses it: "so arr_h is 11",
# "total_cost = 45", "let n be 3". Its own definition, not a claim about the world.
_DEFINED_RE = re.compile(
    r"\b(?:let\s+)?([A-Za-z_][\w]*(?:_\w+)+|[a-z]\w*\d\w*)\s*(?::?=|\bis\b|\bbe\b|\bequals\b)\s*[-+\d(\"'\[{]"
)


def defined_names(text: str) -> set[str]:
    """Identifiers ``text`` assigns a value to, lower-cased."""
    if "=" not in text and " is " not in text and " be " not in text and "equals" not in text:
        return set()
    return {m.group(1).lower() for m in _DEFINED_RE.finditer(text[:20_000])}


def _as_float(number: str) -> float | None:
    try:
        return float(number)
    except ValueError:
        return None


class Evidence:
    """Everything the agent was given or got so far: words, numbers, ids, dates, codes."""

    def __init__(self) -> None:
        self.words: set[str] = set()
        self.numbers: set[str] = set(CONVERSION_NUMBERS)
        self.ids: set[str] = set()
        # Words that head an identifier somewhere ("potato" in "potato 3"):
        # for those the exact identifier must have been observed.
        self.id_heads: set[str] = set()
        # Word stems, so "Canada" is backed by "Canadian" (names only).
        self.prefixes: set[str] = set()
        self.dates: set[str] = set()
        self.pairs: set[str] = set()
        # Upper-case codes ("ATL") that a spelt-out name may expand.
        self.codes: set[str] = set()
        self._recent: deque[float] = deque(maxlen=ARITHMETIC_POOL)
        self._decimal_pool: deque[float] = deque(maxlen=DECIMAL_POOL)

    def add(self, sal: Salient, text: str = "") -> None:
        self.words |= sal.words
        self.numbers |= sal.numbers
        # "two adults" backs a later "2 x 12.40"; 两名成人 likewise.
        self.numbers.update(str(NUMBER_WORDS[w]) for w in sal.words if w in NUMBER_WORDS)
        self.numbers.update(str(NUMBER_WORDS[ch]) for piece in sal.cjk for ch in piece if ch in NUMBER_WORDS)
        self.ids |= sal.ids
        self.pairs |= sal.pairs
        self.id_heads.update(i.split(" ")[0] for i in sal.ids if " " in i)
        self.prefixes.update(w[:STEM_CHARS] for w in sal.words if len(w) >= STEM_CHARS + 1 and w.isalpha())
        # Sorted, not in set order: the pools are bounded, so which of a long
        # result's numbers stay in them would change with the hash seed, and
        # with it whether a later number is arithmetic over them (the same run
        # judged differently in two processes).
        for number in sorted(sal.numbers):
            value = _as_float(number)
            if value is not None:
                self._recent.append(value)
                self._decimal_pool.append(value)
        # A reference in another form is the same reference: the digits of
        # "W2890441" back a later "2890441".
        self.numbers.update(m.group(1) for i in sal.ids if (m := _ID_TAIL_RE.match(i)))
        # Common knowledge: "USD" backs "US dollars", "Germany" backs "DE".
        known = same_as(sal.words, sal.pairs)
        if known:
            self.words.update(w for name in known for w in name.split())
            self.pairs.update(name for name in known if " " in name)
        if text:
            head = text[:20_000]
            if "-" in head or any(m in head.lower() for m in ("jan", "feb", "mar", "apr", "may", "jun", "jul",
                                                               "aug", "sep", "oct", "nov", "dec")):
                found = dates_in(head)
                self.dates |= found
                # The parts of a date are numbers read: "2024-05-17" backs "May 17" and "2024".
                for key in found:
                    if len(key) == 10:
                        self.numbers.update((key[:4], str(int(key[8:]))))
                        self._recent.append(float(key[:4]))
            self.codes.update(m.lower() for m in _CODE_RE.findall(head))

    def add_data(self, data: object) -> None:
        """Totals a structured result implies: the sum of each numeric field
        over a list of records (an order's item prices -> its total)."""
        for total in _list_sums(data):
            self.numbers.add(_fmt(total))
            self._decimal_pool.append(total)

    # -- numbers -------------------------------------------------------------
    def number_supported(self, number: str, sentence_numbers: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
        if number in self.numbers:
            return True
        value = _as_float(number)
        if value is None:
            return False
        # The same number rounded: 2895.6 for 2895.55, 150 for 149.99.
        for known in islice(reversed(self._recent), ARITHMETIC_POOL):
            if abs(known - value) <= max(0.05, abs(known) * 0.0005) and _rounds_to(known, number):
                return True
        return self._derived(value, sentence_numbers, number)

    def _derived(self, value: float, sentence_numbers: set[str], written: str) -> bool:
        # Sorted for the same reason: _subset_sum tries only the first MAX_SUM_PARTS.
        own = [v for n in sorted(sentence_numbers) if (v := _as_float(n)) is not None and v != value]
        pool = list(dict.fromkeys([*own, *self._recent]))
        if len(own) >= 2 and _subset_sum(own, written):
            return True  # "a total of 12" after listing the parts
        if "." in written and self._sum_or_difference(value, written):
            return True
        own_set = set(own)
        integer = "." not in written
        if integer and 0 < value <= MAX_AGE and self._span_of_years(value, pool):
            return True
        for i, a in enumerate(pool):
            for b in pool[i + 1 :]:
                # Sums and differences only of real quantities: with a small
                # operand any number is "1807 = 1800 + 7" of something. And a
                # whole number only when the statement shows one of the terms
                # ("375 - 128 = 247"): among forty numbers of a page, some two
                # add up to any year.
                if min(a, b) > SMALL_OPERAND and (not integer or a in own_set or b in own_set) and (
                    _matches(a + b, written) or _matches(abs(a - b), written)
                ):
                    return True
                if integer and a not in own_set and b not in own_set:
                    # The same for products and ratios: some two of a page's
                    # numbers multiply to almost any whole number (160 = 16 x 10).
                    continue
                if _matches(a * b, written) or _matches(a * b / 100, written):
                    return True
                if b and (_ratio_matches(a / b, written) or _matches(100 * a / b, written)):
                    return True
                if a and (_ratio_matches(b / a, written) or _matches(100 * b / a, written)):
                    return True
        return False

    @staticmethod
    def _span_of_years(value: float, pool: list[float]) -> bool:
        """An age or a span: the difference of two years read (born 1979, in
        2024: 45, or 44 before the birthday)."""
        years = {v for v in pool if v.is_integer() and YEAR_SPAN[0] <= v <= YEAR_SPAN[1]}
        return any(a - b in (value, value + 1) for a in years for b in years if a > b)

    def _sum_or_difference(self, value: float, written: str) -> bool:
        """value = a + b or |a - b| over the latest results' numbers, in O(n)."""
        pool = {round(v, 2) for v in self._decimal_pool}
        for a in pool:
            if a <= SMALL_OPERAND:
                continue
            for b in (round(value - a, 2), round(a - value, 2), round(a + value, 2)):
                if b > SMALL_OPERAND and b in pool and _matches(a + b if b == round(value - a, 2) else abs(a - b),
                                                                 written):
                    return True
        return False

    # -- ids, words, names ----------------------------------------------------
    def instance_supported(self, ident: str) -> bool:
        """"a watch (1)" needs that very object observed, not some 1 anywhere."""
        return ident in self.ids or (ident.endswith("s") and ident[:-1] in self.ids)

    def id_supported(self, ident: str) -> bool:
        if self.instance_supported(ident):
            return True
        head, _, number = ident.rpartition(" ")
        # "ended 66": "ended" never names a thing; judge the number alone.
        return bool(head) and head not in self.id_heads and number in self.numbers

    def word_supported(self, word: str) -> bool:
        if word in self.words or word.replace(".", "") in self.words:
            return True
        if len(word) >= STEM_CHARS + 1 and word.isalpha() and word[:STEM_CHARS] in self.prefixes:
            return True
        return self._expands_code(word)

    def _expands_code(self, word: str) -> bool:
        """"atlanta" from "atl": the code's letters in order in the word, same initial."""
        if not self.codes or not word.isalpha() or len(word) < 4:
            return False
        for code in self.codes:
            if code[0] != word[0] or len(code) >= len(word):
                continue
            it = iter(word)
            if all(ch in it for ch in code):
                return True
        return False

    def entity_supported(self, entity: tuple[str, ...]) -> bool:
        """Most of the name's words observed, every long one somewhere; for a
        name of several words, two of them side by side as well ("SIM HOSE" is
        not backed by "SIM" on one page and "hose" on another)."""
        content = [w for w in entity if w not in ("of", "the", "and", "&")]
        if not content:
            return True
        hits = sum(1 for w in content if self.word_supported(w))
        if hits / len(content) < ENTITY_SUPPORT_MIN:
            return False
        if len(content) == 1:
            return True
        # A name read with one of its words changed ("East Coast Main Parton"
        # for "East Coast Main Line"): a word of four letters or more seen
        # nowhere is not part of the name that was read. Titles and
        # honorifics are added freely ("President Barack Obama").
        if any(len(w) >= 4 and w not in NAME_TITLES and not self.word_supported(w) for w in content):
            return False
        joined = list(entity)
        return any(f"{a} {b}" in self.pairs for a, b in zip(joined, joined[1:], strict=False)) or hits == len(content)

    def cjk_supported(self, piece: str) -> bool:
        if len(piece) < 2:
            return True
        bigrams = [piece[i : i + 2] for i in range(len(piece) - 1)]
        return any(b in self.words or b in ZH_COMMON for b in bigrams)

    def date_supported(self, key: str) -> bool:
        if key in self.dates or (len(key) == 10 and key[5:] in self.dates):
            return True
        return len(key) == 10 and self._date_moved(key)

    def _date_moved(self, key: str) -> bool:
        """A date a stated step away from a date read: a week later, the next day."""
        try:
            day = date.fromisoformat(key)
        except ValueError:
            return False
        for known in self.dates:
            if len(known) != 10:
                continue
            try:
                if abs((day - date.fromisoformat(known)).days) in DATE_OFFSETS_DAYS:
                    return True
            except ValueError:
                continue
        return False


# At most this many of a statement's own numbers are tried as parts of a sum
# (2^12 subsets): a reply listing the items it totals.
MAX_SUM_PARTS = 12


def _subset_sum(parts: list[float], written: str) -> bool:
    parts = [p for p in parts if p > 0][:MAX_SUM_PARTS]
    sums = {0.0}
    for part in parts:
        sums |= {round(s + part, 6) for s in sums}
    return any(_matches(s, written) for s in sums if s)


def _fmt(value: float) -> str:
    text = f"{round(value, 2)}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _list_sums(data: object, depth: int = 0) -> list[float]:
    """Per numeric field, its sum over each list of objects in ``data``."""
    out: list[float] = []
    if depth > 6:
        return out
    if isinstance(data, dict):
        for value in list(data.values())[:200]:
            out.extend(_list_sums(value, depth + 1))
    elif isinstance(data, list) and data:
        rows = [r for r in data[:500] if isinstance(r, dict)]
        if len(rows) >= 2:
            totals: dict[str, float] = {}
            for row in rows:
                for key, value in row.items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        totals[key] = totals.get(key, 0.0) + value
            out.extend(totals.values())
        for item in data[:200]:
            if isinstance(item, (dict, list)):
                out.extend(_list_sums(item, depth + 1))
    return out


def _matches(derived: float, written: str) -> bool:
    """The derived value as the agent would write it: rounded to the decimals it wrote."""
    try:
        return round(derived, _decimals(written)) == float(written)
    except (ValueError, OverflowError):
        return False


def _ratio_matches(derived: float, written: str) -> bool:
    """A quotient written as a whole number divides (almost) evenly: "5 packs
    of 13" is not 62.93 / 5. Percentages and amounts with decimals are rounded
    as written (``_matches``)."""
    if "." in written:
        return _matches(derived, written)
    try:
        return abs(derived - float(written)) <= WHOLE_RATIO_SLACK
    except (ValueError, OverflowError):
        return False


def _decimals(written: str) -> int:
    return len(written.split(".", 1)[1]) if "." in written else 0


def _rounds_to(known: float, written: str) -> bool:
    return _matches(known, written)
