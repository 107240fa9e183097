"""Records in structured results, for two slips that keep every word "observed":
a value of one record attributed to another (``wrong_record``), and a value
from before a later result showed it changed (``stale_value``).

A record is a JSON object with an id-like key (``id``, ``*_id``) holding a
scalar, or a row tuple whose first cell names it; its fields are its scalar
leaves by path (a nested record is a record of its own), compared as
normalised strings. Bounded by MAX_RECORDS_PER_RESULT and MAX_FIELDS.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tracing.core.anchoring.common_knowledge import SIZE_LETTERS

MAX_RECORDS_PER_RESULT = 200
# Ids taken from one argument list of a write ("item_ids"): a bulk call names
# no one record its report describes.
MAX_ACTED_IDS = 10
MAX_FIELDS = 80
# Values shorter than this are too common to pin a record ("1", "ok", "no");
# numbers from two digits on ("60 countries").
MIN_VALUE_CHARS = 3
MIN_NUMBER_CHARS = 2
# A description names a record by this many of its own values ("blue, 8
# hours battery, $226.49") before a stray value in it counts as misread.
MIN_MIXED_VALUES = 3
# Field values that say nothing about which record they belong to.
_GENERIC_VALUES = frozenset({"true", "false", "none", "null", "yes", "no", "0", "n/a", ""})

_NUM_RE = re.compile(r"^-?\d+(?:\.\d+)?$")
_PRICE_RE = re.compile(r"^\d+\.\d{1,2}$")
# A yes/no option is worded by its name in a description: "4K, waterproof,
# black" is waterproof=yes, "not waterproof" is waterproof=no.
_FLAGS = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_FLAG_WORD_RE = re.compile(r"[a-z]{4,}")
_NEGATED_FLAG_RE = r"\b(?:not|non|no|without|isn't|aren't|is not)[\s-]+{word}\b|\b{word}\s*[:=]\s*(?:no|false)\b"
# Option values too short to name a record alone ("4K", "S", "XL") still
# describe one among the records a longer value named: written as a token of
# their own, in capitals when they are letters only ("it's" holds no size S).
_SHORT_VALUE_RE = re.compile(r"(?<![\w'’])(\w{1,2})(?![\w'’])")
# Field names that hold a card's last digits ("last_four", "account_number_last_4").
_LAST_FOUR_RE = re.compile(r"last_?(?:four|4)", re.I)
# A letter and a digit: a model or grade code ("i9", "3x" zoom, "4k"), not a
# quantity in a unit written other ways too ("1l" is 1000ml, "5g", "2m").
_SHORT_CODE_RE = re.compile(r"^(?:[a-z]\d|\d[a-fh-km-z])$")


def norm_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        text = f"{value}"
        if "." in text and "e" not in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return " ".join(str(value).lower().split())


@dataclass
class Record:
    kind: str  # the id key ("order_id") or "row"
    ident: str  # normalised id value
    step: int
    fields: dict[str, set[str]] = field(default_factory=dict)
    # The enclosing record's fields (a variant's product name): they say what
    # the record is, but its own updates are tracked on ``fields`` only.
    inherited: dict[str, set[str]] = field(default_factory=dict)
    # The record it sits in (an order's line -> the order), if any.
    parent: tuple[str, str] | None = None
    # described_by(), once the record is indexed (its fields no longer change).
    _described: set[str] | None = field(default=None, repr=False, compare=False)

    def values(self) -> set[str]:
        out: set[str] = set()
        for vals in (*self.fields.values(), *self.inherited.values()):
            out |= vals
        return out

    def field_values(self, name: str) -> set[str] | None:
        return self.fields.get(name, self.inherited.get(name))

    def described_by(self) -> set[str]:
        """Its values, id and yes/no options as a description words them ("waterproof=yes")."""
        if self._described is None:
            out = self.values() | {self.ident}
            for name, vals in (*self.fields.items(), *self.inherited.items()):
                word = name.rpartition(".")[2].lower()
                if word == "size":
                    out.update(w for w, letter in SIZE_LETTERS.items() if letter in vals)
                if len(vals) == 1 and _FLAG_WORD_RE.fullmatch(word) and (flag := _FLAGS.get(next(iter(vals)))):
                    out.add(f"{word}={flag}")
            self._described = out
        return self._described


def _id_key(obj: dict[str, Any], container: str | None = None) -> str | None:
    """The key that names the object: "id", else the *_id named after its list ("items" -> "item_id")."""
    keys = [
        key for key, value in obj.items()
        if isinstance(key, str)
        and (key.lower() in ("id", "uuid") or key.lower().endswith("_id") or key.endswith(("Id", "ID")))
        and isinstance(value, (str, int)) and not isinstance(value, bool)
    ]
    if not keys:
        return None
    if "id" in keys:
        return "id"
    if container:
        singular = container.lower().rstrip("s")
        for key in keys:
            if key.lower() in (f"{singular}_id", f"{singular}id"):
                return key
    return keys[0]


def _own_key(obj: dict[str, Any], container: str | None, top: bool) -> str | None:
    """The id key when ``obj`` is a record of its own: top-level, id named after
    its list, or filed under its own id; one that only refers to another by id
    (a payment entry's "payment_method_id") is part of its parent."""
    key = _id_key(obj, container)
    if key is None or top:
        return key
    singular = (container or "").lower().rstrip("s")
    if key.lower() in ("id", "uuid", f"{singular}_id", f"{singular}id") or norm_value(obj[key]) == norm_value(container):
        return key
    return None


def _leaves(obj: Any, path: str, out: dict[str, set[str]], depth: int = 0, container: str | None = None) -> None:
    if depth > 6 or len(out) >= MAX_FIELDS:
        return
    if isinstance(obj, dict):
        if depth and _own_key(obj, container, top=False) is not None:
            return  # a nested record is a record of its own (see records_in)
        for key, value in obj.items():
            _leaves(value, f"{path}.{key}" if path else str(key), out, depth + 1, str(key))
    elif isinstance(obj, (list, tuple)):
        for item in obj[:50]:
            _leaves(item, path, out, depth + 1, container)
    else:
        out.setdefault(path, set()).add(norm_value(obj))


def records_in(data: Any, step: int) -> Iterator[Record]:
    """Records of one parsed result, outermost first."""
    count = 0
    # (object, the key of the list or map it sits in, the record around it)
    stack: list[tuple[Any, str | None, Record | None]] = [(data, None, None)]
    while stack and count < MAX_RECORDS_PER_RESULT:
        obj, container, parent = stack.pop(0)
        if isinstance(obj, dict):
            key = _own_key(obj, container, top=parent is None)
            if key is not None:
                rec = Record(kind=key.lower(), ident=norm_value(obj[key]), step=step)
                _leaves(obj, "", rec.fields)
                rec.fields.pop(key, None)
                if rec.kind in ("id", "uuid"):
                    # A bare "id" names many kinds of thing: records are of one
                    # kind when they have the same fields (two credit cards).
                    rec.kind = "id:" + ",".join(sorted(rec.fields)[:8])
                if parent is not None:
                    # A variant is also its product: "the SD card camera
                    # (item 9228757377)" names the product's name too.
                    rec.inherited = {n: v for n, v in parent.fields.items() if n not in rec.fields}
                    rec.parent = (parent.kind, parent.ident)
                count += 1
                yield rec
                parent = rec
            stack.extend((v, str(k), parent) for k, v in obj.items() if isinstance(v, (dict, list)))
        elif isinstance(obj, list):
            if obj and all(isinstance(r, (tuple, list)) and r for r in obj[:5]) and any(len(r) > 1 for r in obj[:5]):
                for row in obj[:MAX_RECORDS_PER_RESULT]:
                    if not isinstance(row, (tuple, list)) or len(row) < 2 or isinstance(row[0], (dict, list)):
                        continue
                    rec = Record(kind=f"row{len(row)}", ident=norm_value(row[0]), step=step)
                    for pos, cell in enumerate(row[1:MAX_FIELDS], start=1):
                        rec.fields[str(pos)] = {norm_value(cell)}
                    count += 1
                    yield rec
            else:
                stack.extend((v, container, parent) for v in obj[:MAX_RECORDS_PER_RESULT] if isinstance(v, (dict, list)))


def _sentence_terms(sentence: str) -> set[str]:
    """Normalised words, numbers and 2-3 word phrases of a sentence."""
    low = sentence.lower()
    words = re.findall(r"#?[\w][\w.@/-]*[\w]|\w", low)
    words = [w.rstrip(".") for w in words]
    out = set(words)
    for w in words:
        if _NUM_RE.match(w.replace(",", "")):
            out.add(norm_value(float(w.replace(",", ""))) if "." in w else w.replace(",", "").lstrip("0") or "0")
        if w.startswith("#"):
            out.add(w[1:])
        head, dash, _ = w.partition("-")
        if dash and head.isdigit():
            out.add(head.lstrip("0") or "0")  # "500-piece" is the 500 a record holds
    for n in (2, 3):
        out.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return out


# The word that introduces a change's target: "changed to", "swapped for".
_TARGET_RE = re.compile(r"\b(?:to|for|with|into)\b(?!\s+(?:your|you|me|us|them|him|her|my|our)\b)", re.IGNORECASE)
# The word that introduces the new value after each verb: one exchanges A
# *for* B ("the earbud with IPX7 for the one with IPX4": not the first
# "with"), replaces A *with* B, changes A *to* B.
_TARGET_BY_VERB = {
    verb: re.compile(rf"\b{word}\b(?!\s+(?:your|you|me|us|them|him|her|my|our)\b)", re.IGNORECASE)
    for verbs, word in ((("exchang", "swap", "switch", "trad"), "for"), (("replac",), "with"),
                        (("updat", "chang", "modif", "convert", "mov", "set", "transfer"), "(?:to|into)"))
    for verb in verbs
}

# A sentence about changing a record ("update the address to …", "swapped for").
_CHANGE_RE = re.compile(
    r"\b(?:updat|chang|modif|switch|swap|replac|exchang|convert|mov|set|transfer)\w*\b", re.IGNORECASE
)


def _negated_value(value: str, sentence: str) -> bool:
    """"… but not a laptop": a value named as absent is not attributed."""
    return re.search(rf"\b(?:not|no|nor|without)\s+(?:\w+\s+){{0,2}}{re.escape(value)}\b", sentence, re.I) is not None


# Items of a list written on one line ("• Current item: … • New item: …").
_BULLET_RE = re.compile(r"\s[•·▪]\s|\s-\s(?=[A-Z])")
# Two clauses joined by ", and" describe two things ("the robotic vacuum was
# $652.61, and the canister one is $642.72").
_CLAUSE_AND_RE = re.compile(r",\s+and\s+(?=the\b|a\b|an\b|its\b|your\b)", re.IGNORECASE)


# A parenthesis of one line, and the characters before it that may name its record ("item 9779102705 (").
_PAREN_RE = re.compile(r"\(([^()\n]{3,200})\)")
_ARROW_RE = re.compile(r"→|->|=>")
ID_BEFORE_PAREN = 24


# A parenthesis that tags what comes before it with an id ("(item ID
# 6117189161)", "(#W2378156)"): no more words than "item id" and the id.
MAX_ID_TAG_WORDS = 3
_ID_TAG_WORDS_RE = re.compile(r"[^\s:#]+")
# The label an id tag belongs to: the words back to the clause or to the
# preposition that introduced it ("swapping the bookshelf (…) for the 20MP
# camera (…)": the camera), within this many characters.
MAX_LABEL_CHARS = 80
# A card named by its last digits: "… ending in 8902", "… ending 8902".
_CARD_TAG_RE = re.compile(r"\s(?:card\s+)?ending\s+(?:in\s+)?(?P<digits>\d{4})\b", re.IGNORECASE)
_LABEL_START_RE = re.compile(r"[,;:()\n]|\b(?:for|to|with|into|from|and|or|than|instead of)\b", re.IGNORECASE)

# The user's own thing: "your (current) X …", "the X you ordered …"; not its
# replacement ("your new helmet"). The clause ends where another thing comes
# in ("… for the silver one", "… to this model").
_OWNED_RE = re.compile(
    r"\byour\s+(?!new\b|replacement\b|requested\b|exchange\b|selected\b|chosen\b)(?:current\s+|original\s+|"
    r"existing\s+)?(?P<clause>(?:[^.;!?\n]|(?<=\d)\.(?=\d)){3,200})"
    r"|\b(?P<clause2>[\w -]{3,40}\s+you\s+(?:ordered|purchased|bought|received|currently have|have)\b"
    r"(?:[^.;!?\n]|(?<=\d)\.(?=\d)){0,160})")
_OWNED_END_RE = re.compile(r"\s(?:for|to|into|with the|instead|than|versus|vs\.?|and the|and your|but)\s|→|->|=>")
MAX_OWNED_NAME_CHARS = 60  # the thing is named within these first characters of the clause

# "… from order #W5490111", "… in your pending order #W2466703": things said to
# be in a record named by its id.
_MEMBER_OF_RE = re.compile(r"\b(?:in|from|of|on)\s+(?:your\s+|the\s+)?(?:\w+\s+){0,2}?(?P<id>#?[a-z]*\d[\w-]{3,})\b")
# "… order #W9810810 contains a watch (…)", "Order #W2890441 (delivered):
# Includes an Office Chair": the things said to be in it follow.
_HOLDS_RE = re.compile(r"(?P<id>#?[a-z]*\d[\w-]{3,})\)?(?:\s*\([^()]{0,40}\))?\s*:?\s*(?:which\s+|that\s+)?"
                       r"(?:contains|includes|holds|has)\b")


def _change_parts(sentence: str) -> tuple[str, str | None]:
    """A change names the old and the new in one breath ("the 500ml red bottle
    was swapped for the 1000ml black one"): (what it says of the old, what it
    says of the new). A sentence that describes no change is all new; a change
    with no target in it has no new part (None)."""
    change = _CHANGE_RE.search(sentence)
    if not change:
        return "", sentence
    verb = change.group(0).lower()
    by_verb = next((rx for stem, rx in _TARGET_BY_VERB.items() if verb.startswith(stem)), None)
    target = (by_verb and by_verb.search(sentence, change.end())) or _TARGET_RE.search(sentence, change.end())
    return (sentence, None) if target is None else (sentence[:target.start()], sentence[target.end():])


def _asserted(value: str, sentence: str) -> bool:
    """The value stated as the record's state ("is pending", "status: pending",
    "still pending"), not used to name it ("your pending order")."""
    pattern = (
        r"\b(?:is|are|was|were|been|be|remains?|still|currently|now|status(?: is)?|shows?|set to|to|:)\s+(?:[\w,#.-]+\s+){0,8}?[\"“‘']?"
        + re.escape(value)
        + r"\b"
    )
    return re.search(pattern, sentence, re.IGNORECASE) is not None


# A value that identifies what holds it: an email, a phone number, or a code
# mixing letters and digits ("l1002", "#w8855135"); not a price or a word.
_IDENTIFIER_RE = re.compile(
    r"^(?:[\w.+-]+@[\w-]+\.[\w.]+|\+?\d{3}[-. ]\d{3}[-. ]\d{4}|#?(?=\w*\d)(?=\w*[a-z])[a-z0-9_-]{4,})$"
)


# A sentence that opens with a pronoun goes on about what the one before it
# named ("You've used 3.2 GB", "It costs …"); "Your original helmet was …"
# brings in a subject of its own.
_GOES_ON_RE = re.compile(r"^\W*(?:it|its|it's|this|that|they|their|you|you've|you're|you have|he|she|his|her)\b",
                         re.IGNORECASE)


def _kind_word(kind: str) -> str:
    """The noun a record kind is named by in prose: "line_id" -> "line", "orderId" -> "order"."""
    low = kind.lower()
    for suffix in ("_id", "id"):
        if low.endswith(suffix) and len(low) > len(suffix):
            return low[: -len(suffix)]
    return ""


def _described_terms(text: str, records: list[Record]) -> set[str]:
    """Short option values and yes/no options the text words, among those
    ``records`` hold."""
    out = set()
    for token in _SHORT_VALUE_RE.findall(text):
        if (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)) or (
                token.isalpha() and token.isupper() and token not in ("I", "A")):
            out.add(token.lower())
    low = text.lower()
    out.update(letter for word, letter in SIZE_LETTERS.items() if re.search(rf"\b{word}\b", low))
    words = {t.partition("=")[0] for rec in records for t in rec.described_by() if "=" in t}
    for word in words:
        if re.search(rf"\b{word}\b", low):
            out.add(f"{word}=no" if re.search(_NEGATED_FLAG_RE.format(word=word), low) else f"{word}=yes")
    return out


def _best_fit(recs: list[Record], terms: set[str]) -> Record | None:
    """The one record the words fit best: more of its values than any other
    (None on a tie or when none fits at all)."""
    scored = sorted(((len(rec.described_by() & terms), rec) for rec in recs), key=lambda item: -item[0])
    if not scored or not scored[0][0] or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return scored[0][1]


def _distinctive(value: str) -> bool:
    """A value that can name its record in a sentence: a word or name of some
    length, not a bare number (a price is shared by chance)."""
    return len(value) >= 4 and not _NUM_RE.match(value) and value not in _GENERIC_VALUES and " " not in value[:1]


def _pins(value: str) -> bool:
    if value in _GENERIC_VALUES:
        return False
    if _SHORT_CODE_RE.match(value):
        return True
    return len(value) >= (MIN_NUMBER_CHARS if _NUM_RE.match(value) else MIN_VALUE_CHARS)


@dataclass
class RecordIndex:
    """Every record seen so far: the latest state per record and its past values."""

    latest: dict[tuple[str, str], Record] = field(default_factory=dict)
    # (kind, ident, field) -> values that field held before its latest state.
    past: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    # value -> {(kind, ident, field)} where it is the latest value.
    owners: dict[str, set[tuple[str, str, str]]] = field(default_factory=dict)
    # Records the latest result changed: what the agent talks about next,
    # whether or not it names them ("your line is now suspended").
    updated: list[tuple[str, str]] = field(default_factory=list)
    # The records inside each record (an order's items): name -> that line's
    # key (the same item may be indexed again later as a variant of its
    # product).
    members: dict[tuple[str, str], dict[str, tuple[str, str]]] = field(default_factory=dict)
    # Names of things (a "name" field of any record: an order's line, a
    # product): what a sentence can place in a record.
    thing_names: set[str] = field(default_factory=set)
    # A card's last four digits ("your Visa ending in 8484") name the card
    # as an id does, though a bare number elsewhere is shared by chance.
    card_digits: set[str] = field(default_factory=set)
    # Ids the latest write since the user spoke was made with: its report
    # ("has been changed to the i9, 256GB SSD, red version") describes them.
    acted: dict[str, bool] = field(default_factory=dict)  # id -> named as the new one

    def add(self, data: Any, step: int) -> None:
        changed: list[tuple[str, str]] = []
        for rec in records_in(data, step):
            key = (rec.kind, rec.ident)
            old = self.latest.get(key)
            if old is not None:
                for name, vals in old.fields.items():
                    new_vals = rec.fields.get(name)
                    if new_vals is not None and new_vals != vals:
                        self.past.setdefault((rec.kind, rec.ident, name), set()).update(vals - new_vals)
                        if key not in changed:
                            changed.append(key)
                    for v in vals:
                        self.owners.get(v, set()).discard((rec.kind, rec.ident, name))
                merged = dict(old.fields)
                merged.update(rec.fields)
                rec.fields = merged
            self.latest[key] = rec
            if old is None or old.step != step:
                self.members.pop(key, None)  # a new state of the record lists its lines anew
            if rec.parent is not None:
                for name in rec.fields.get("name", ()):
                    self.members.setdefault(rec.parent, {})[name] = key
            self.thing_names.update(v for v in rec.fields.get("name", ()) if len(v) >= MIN_VALUE_CHARS)
            for name, vals in rec.fields.items():
                if _LAST_FOUR_RE.search(name):
                    self.card_digits.update(v for v in vals if len(v) == 4 and v.isdigit())
                for v in vals:
                    if _pins(v):
                        self.owners.setdefault(v, set()).add((rec.kind, rec.ident, name))
        if changed:
            self.updated = changed

    def note_write(self, args: Any) -> None:
        """A write call worked: the records its arguments name are what the
        report of the writes since the user spoke describes (``acted``); of
        an exchange, the new ones ("new_item_ids") are what it was changed to."""
        for key, value in args.items() if isinstance(args, dict) else ():
            for v in (value if isinstance(value, list) else [value])[:MAX_ACTED_IDS]:
                if isinstance(v, (str, int)) and not isinstance(v, bool):
                    self.acted[norm_value(v)] = str(key).lower().startswith("new")

    def forget_writes(self) -> None:
        """The user spoke: the next report is about the writes made after."""
        self.acted = {}

    def _acted_on(self, sentence: str) -> dict[str, Any] | None:
        """A report of the writes describes the records the calls acted on:
        what it says was changed, the old ones; what it was changed to, the
        new ones ("new_item_ids"). Of each kind the sentence names no record
        of by id, the one record acted on, or the one the words fit best:
        a value of that field another record holds came from that one."""
        if not self.acted:
            return None
        old, target = _change_parts(sentence)
        named = {rec.kind for rec in self._mentioned(_sentence_terms(sentence))}
        for part, new in ((target, True), (old, False)):
            if not part:
                continue
            terms = _sentence_terms(part) | _described_terms(part, [])
            by_kind: dict[str, list[Record]] = {}
            for (kind, ident), rec in self.latest.items():  # insertion order: the same in every process
                if ident in self.acted and kind not in named:
                    by_kind.setdefault(kind, []).append(rec)
            chosen = []
            for recs in by_kind.values():
                # An exchange tells old and new apart: the one item it gave
                # up is what its old side is about, whatever words name it.
                exchange = any(self.acted[rec.ident] for rec in recs)
                if exchange:
                    recs = [rec for rec in recs if self.acted[rec.ident] == new]
                if exchange and not new and len(recs) == 1:
                    chosen.append(recs[0])
                elif (rec := _best_fit(recs, terms)) is not None:
                    chosen.append(rec)
            slip = self._foreign_value(part, chosen) if chosen else None
            if slip:
                return slip
        return None

    def _mentioned(self, terms: set[str], *, by_value: bool = False) -> list[Record]:
        """Records the sentence names: by id, or by a value only that record
        holds that looks like an identifier (a phone number, an email) — or,
        with ``by_value``, any value only that record holds ("Mastercard" when
        one card is a Mastercard)."""
        out = [rec for (kind, ident), rec in self.latest.items() if ident in terms and len(ident) >= MIN_VALUE_CHARS]
        own_ids = {rec.ident for rec in out}
        for term in sorted(terms):
            if not _IDENTIFIER_RE.match(term) and term not in self.card_digits and not (by_value and _distinctive(term)):
                continue
            if term in own_ids:
                continue  # "bill B1234321" names the bill, not the customer whose list holds its id
            owners = self.owners.get(term)
            holders = {(k, i) for k, i, _ in owners or ()}
            if len(holders) > 1:
                # A phone number is the customer's and the line's: "your line
                # (555-123-2002)" names the one whose kind the sentence says.
                holders = {(k, i) for k, i in holders if _kind_word(k) in terms}
            if len(holders) == 1:
                rec = self.latest.get(next(iter(holders)))
                if rec is not None and rec not in out:
                    out.append(rec)
        return out

    def check(self, sentence: str, *, proposal: bool = False, before: str = "") -> dict[str, Any] | None:
        """A wrong-record or stale-value slip in one sentence, or None.
        ``proposal``: the sentence proposes or asks for a change, whose new
        value the record does not hold yet: not judged for staleness.
        ``before``: the sentence before it in the same statement, whose
        records a sentence that names none goes on about ("Your line (555-…)
        is roaming-enabled. You've used 3.2 GB so far.")."""
        if not self.latest:
            return None
        terms = _sentence_terms(sentence)
        mentioned = self._mentioned(terms)
        focus = list(mentioned)
        if not mentioned:
            # No record named: the one the latest change touched is in focus.
            focus = [rec for key in self.updated if (rec := self.latest.get(key)) is not None]
        # Carried over, only figures are judged: a word ("refund") of the
        # next sentence is as often about something else.
        carried = (self._mentioned(_sentence_terms(before))
                   if before and not mentioned and _GOES_ON_RE.match(sentence) else [])
        if not focus and not carried:
            return self._mixed_record(sentence) or (None if proposal else self._acted_on(sentence))
        for rec in [] if proposal else focus:
            own = rec.values()
            for name, vals in rec.fields.items():
                past = self.past.get((rec.kind, rec.ident, name))
                if not past:
                    continue
                for old in past:
                    if (
                        _pins(old)
                        and old in terms
                        and not any(old in v or v in old for v in own)
                        and not (vals & terms)
                        and _asserted(old, sentence)
                    ):
                        return {"slip": "stale", "record": rec.ident, "field": name, "said": old,
                                "current": sorted(vals)[0], "step": rec.step}
        # Records named by a value only they hold ("your Mastercard") count for
        # kinds the sentence names no record of by id.
        kinds = {rec.kind for rec in mentioned}
        by_value = [rec for rec in self._mentioned(terms, by_value=True) if rec.kind not in kinds]
        return (self._wrong_record(sentence, mentioned + by_value)
                or (carried and not by_value and self._wrong_record(sentence, carried, figures_only=True))
                or self._mixed_record(sentence) or self._parenthesised(sentence)
                or (None if proposal else self._acted_on(sentence)))

    def foreign_member(self, sentence: str) -> dict[str, Any] | None:
        """"the Water Bottle, Action Camera, and Gaming Mouse from order
        #W5490111" when the Gaming Mouse is a line of another order: a thing
        placed in (or taken from) a record it is not part of. Judged when it
        is the one thing named there, or the others named with it are that
        record's (two strays would be a list about several records). Plans and
        questions too: "to return X from order #W1" takes X to be in #W1 all
        the same."""
        if not self.members:
            return None
        low = sentence.lower()
        start = 0
        windows = []  # (the record's id, the text that names what is in it)
        for m in _MEMBER_OF_RE.finditer(low):
            windows.append((m.group("id"), low[start:m.start()]))
            start = m.end()
        for m in _HOLDS_RE.finditer(low):
            windows.append((m.group("id"), low[m.end():]))
        # "your pending electric toothbrush order #W5166363": named before its kind word.
        for word in sorted({_kind_word(kind) for kind, _ in self.members} - {""}):
            for m in re.finditer(rf"((?:[\w-]+\s+){{1,3}}){re.escape(word)}\s+\(?(#?[a-z]*\d[\w-]{{3,}})\b", low):
                windows.append((m.group(2), m.group(1)))
        for ident, window in windows:
            key = next(((k, i) for (k, i) in self.members if i.lstrip("#") == ident.lstrip("#")), None)
            if key is None:
                continue
            named = {n for n in self._things_in(window) if not _negated_value(n, window)}
            own = self.members[key]
            foreign = {n for n in named if n not in own and not any(n in o or o in n for o in own)}
            if len(foreign) == 1 and (named - foreign or len(named) == 1):
                said = next(iter(foreign))
                other = next((i for k, i in self.members if said in self.members[(k, i)]), "another record")
                return {"slip": "wrong_record", "record": key[1], "field": "items", "said": said,
                        "belongs_to": other, "own": ", ".join(sorted(own)[:3]), "step": self.latest[key].step}
        return None

    def listed_member(self, header: str, item: str) -> dict[str, Any] | None:
        """"… the following items from order #W1679211:" then "- T-Shirt (price:
        $100.83)": a line of a list headed by a record describes the one line of
        that record it names, so a value another record holds is misread."""
        low = header.lower()
        key = next((k for k in self.members if re.search(rf"(?<!\w)#?{re.escape(k[1].lstrip('#'))}\b", low)), None)
        if key is None:
            # "The easiest one is item 1096508426:" then "• Theme: animals":
            # a list headed by one record, none of whose lines it names, gives
            # that record's fields.
            headed = self._mentioned(_sentence_terms(header))
            if len(headed) != 1 or self._mentioned(_sentence_terms(item)):
                return None
            return self._wrong_record(item, headed)
        line = item.lower()
        named = [n for n in self.members[key] if len(n) >= MIN_VALUE_CHARS and re.search(rf"\b{re.escape(n)}\b", line)]
        if not named:
            # "- Yoga Mat changed to 34-inch" under "Your order #W3 has been
            # updated:": a thing listed under a record it is not part of.
            return self.foreign_member(f"{item} in {key[1]}")
        if len(named) != 1:
            return None
        rec = self.latest.get(self.members[key][named[0]])
        if rec is None or any(other is not rec for other in self._mentioned(_sentence_terms(item))):
            return None  # "New item: Air Purifier (item 9534205511) – $473.43" names its own record
        return self._wrong_record(item, [rec])

    def owned_line(self, sentence: str) -> dict[str, Any] | None:
        """"your current air purifier (priced at $502.70)", "the camera you
        ordered has a 24MP resolution": the user's own thing is the one line
        of their orders with that name (or head noun: "helmet" for "Cycling
        Helmet"); what the clause says of it is judged on that line. Its
        replacement ("your new helmet") is another thing."""
        low = sentence.lower()
        if not self.members or "you" not in low:
            return None
        lines: dict[str, set[tuple[str, str]]] = {}
        for own in self.members.values():
            for name, key in own.items():
                for word in {name, name.rsplit(" ", 1)[-1]}:
                    lines.setdefault(word, set()).add(key)
        for m in _OWNED_RE.finditer(low):
            clause = _OWNED_END_RE.split(m.group("clause") or m.group("clause2"), maxsplit=1)[0]
            head = clause[:MAX_OWNED_NAME_CHARS]
            found = [w for w in lines if len(w) >= 4 and re.search(rf"\b{re.escape(w)}\b", head)]
            recs = [rec for key in sorted({key for w in found for key in lines[w]}) if (rec := self.latest.get(key))]
            if len(recs) > 1:
                # Two orders hold a water bottle: the one the words fit best ("your 500ml … bottle").
                recs = [rec] if (rec := _best_fit(recs, _sentence_terms(clause))) is not None else []
            if len(recs) != 1:
                continue
            slip = self._foreign_value(clause, recs)
            if slip:
                return slip
        return None

    def labelled_id(self, sentence: str) -> dict[str, Any] | None:
        """"cancel the T-Shirt (item ID 6117189161)" when 6117189161 is the
        Action Camera: the words just before a parenthesis that holds only a
        record's id label that record, in a plan or question too ("to
        confirm, you want to cancel …" still says which item it is). So do
        the words before a card's last digits ("your Mastercard ending in
        8902" when 8902 is the Visa)."""
        tags = [(m.start(), m.end(), m.group(1)) for m in _PAREN_RE.finditer(sentence)
                if len(_ID_TAG_WORDS_RE.findall(m.group(1))) <= MAX_ID_TAG_WORDS]  # else a description of its own
        if self.card_digits:
            tags.extend((m.start(), m.end(), m.group("digits")) for m in _CARD_TAG_RE.finditer(sentence))
        start = 0
        for begin, end, tag in sorted(tags):
            before = sentence[start:begin]
            start = end
            named = self._mentioned(_sentence_terms(tag))
            if len(named) != 1:
                continue
            label = _LABEL_START_RE.split(before[-MAX_LABEL_CHARS:])[-1]
            slip = self._wrong_record(label, named) if label.strip() else None
            if slip:
                return slip
        return None

    def _parenthesised(self, sentence: str) -> dict[str, Any] | None:
        """"item 9779102705 (1000-piece, intermediate, $328.25)", "(item
        8118291112, size 12, synthetic)": a parenthesis next to one record's id
        describes that record, whatever the sentence around it does (it may
        name the other side of an exchange)."""
        if "(" not in sentence:
            return None
        for m in _PAREN_RE.finditer(sentence):
            inside = m.group(1)
            if _CHANGE_RE.search(inside) or _ARROW_RE.search(inside):
                continue  # the parenthesis itself tells of a change: old and new in one breath
            named = self._mentioned(_sentence_terms(sentence[max(0, m.start() - ID_BEFORE_PAREN):m.start()] + " "
                                                    + inside))
            kinds = {rec.kind for rec in named}
            if len(named) != 1 or len(kinds) != 1:
                continue
            slip = self._wrong_record(inside, named)
            if slip:
                return slip
        return None

    def _mixed_record(self, sentence: str) -> dict[str, Any] | None:
        """A description that mixes two records: "Blue, 8 hours battery, IPX7:
        $226.49" when the blue 8-hour one at $226.49 is IPX4 and IPX7 is
        another variant's. The record the description fits best (two or more
        of its own values, no tie) is the one meant; a value of the same field
        that only another record holds came from that one."""
        old, target = _change_parts(sentence)
        # Each side of a change describes one record: the old one its own.
        parts = [target] if target is not None else []
        if old:
            parts.append(old)
        # "Change the luggage set to the 2-piece, red option": a target that
        # names no thing is a variant of the thing the change names.
        changed = sorted(self._things_in(old)) if target and old and not self._things_in(target) else []
        for text in parts:
            for item in (part for bullet in _BULLET_RE.split(text) for part in _CLAUSE_AND_RE.split(bullet)):
                slip = self._mixed_item(" ".join([item, *changed]) if text is target else item)
                if slip:
                    return slip
        return None

    def _things_in(self, text: str) -> set[str]:
        low = text.lower()
        return {n for n in self.thing_names if n in low and re.search(rf"\b{re.escape(n)}\b", low)}

    def _mixed_item(self, text: str) -> dict[str, Any] | None:
        pinned = {t for t in _sentence_terms(text) if _pins(t)}
        hits: dict[tuple[str, str], set[str]] = {}
        for term in pinned:
            for kind, ident, _name in self.owners.get(term, ()):
                hits.setdefault((kind, ident), set()).add(term)
        if not hits:
            return self._priced_thing(pinned)
        terms = pinned | _described_terms(text, [self.latest[key] for key in hits])
        for key in hits:
            # What it inherits counts too (a variant is its product's name),
            # its id, and short or yes/no options beside a value that pins it.
            hits[key] = self.latest[key].described_by() & terms
        by_kind: dict[str, list[tuple[str, set[str]]]] = {}
        for (kind, ident), vals in hits.items():
            by_kind.setdefault(kind, []).append((ident, vals))
        for kind, found in sorted(by_kind.items()):
            # Ties by id: in set order, which of two equal fits is "the one
            # meant" (and named in the reason) changed with the hash seed.
            found.sort(key=lambda item: (-len(item[1]), item[0]))
            ident, vals = found[0]
            if len(vals) < MIN_MIXED_VALUES:
                continue
            if len(found) > 1 and len(found[1][1]) == len(vals):
                tied = [self.latest[(kind, i)] for i, v in found if len(v) == len(vals)]
                slip = self._crossed_pair(kind, found[0], found[1], terms) or self._foreign_to_all(tied, pinned)
                if slip:
                    return slip
                continue
            rec = self.latest[(kind, ident)]
            own = rec.described_by()
            # Values of other records the text describes too (two of their own).
            described = set().union(*(v - own for _, v in found[1:] if len(v - own) >= 2))
            for other_ident, other_vals in found[1:]:
                foreign = other_vals - own
                if len(foreign) != 1 or foreign & described:
                    continue
                value = next(iter(foreign))
                if not _pins(value):
                    continue  # a short or yes/no option only supports: "1L" is also "1000ml"
                other = self.latest[(kind, other_ident)]
                for name, other_field in other.fields.items():
                    mine = rec.field_values(name)
                    if value in other_field and mine and not (mine & terms) and len(vals - other.described_by()) >= 2:
                        return {"slip": "wrong_record", "record": rec.ident, "field": name, "said": value,
                                "belongs_to": other.ident, "own": sorted(mine)[0], "step": rec.step}
        return self._priced_thing(pinned)

    def _priced_thing(self, pinned: set[str]) -> dict[str, Any] | None:
        """"- Backpack: $164.97" when no backpack costs that and $164.97 is a
        desk lamp's price: one thing named with one figure (with cents, so
        not a round count shared by chance) that only things of other names
        hold."""
        names = [t for t in pinned if t in self.thing_names]
        figures = [t for t in pinned if _PRICE_RE.match(t)]
        if len(names) != 1 or len(figures) != 1:
            return None
        name, figure = names[0], figures[0]
        owners = sorted(self.owners.get(figure, ()))
        if not owners:
            return None  # worked out, not read: a total or a difference
        holders = [rec for rec in self.latest.values() if name in rec.values()]
        if not holders or any(figure in rec.values() for rec in holders):
            return None
        for kind, ident, field_name in owners:
            other = self.latest.get((kind, ident))
            mine = next((rec for rec in holders if rec.kind == kind and rec.field_values(field_name)), None)
            if other is None or mine is None or name in other.values():
                continue
            return {"slip": "wrong_record", "record": mine.ident, "field": field_name, "said": figure,
                    "belongs_to": ident, "own": sorted(mine.field_values(field_name) or {""})[0], "step": mine.step}
        return None

    def _foreign_to_all(self, tied: list[Record], pinned: set[str]) -> dict[str, Any] | None:
        """Records that fit a description equally ("your current desk lamp
        (gold, medium brightness, USB)": three medium USB lamps) all give
        another value where it names one of another record's ("gold", a
        watch's): whichever was meant, that value is misread."""
        held = set().union(*(rec.described_by() for rec in tied))
        for value in sorted(v for v in pinned - held if _distinctive(v)):  # a price is shared by chance
            for kind, ident, name in sorted(self.owners.get(value, ())):
                if kind != tied[0].kind:
                    continue
                mine = [rec.field_values(name) for rec in tied]
                if all(vals and not (vals & pinned) for vals in mine):
                    rec = tied[0]
                    return {"slip": "wrong_record", "record": rec.ident, "field": name, "said": value,
                            "belongs_to": ident, "own": sorted(mine[0] or {""})[0], "step": rec.step}
        return None

    def _foreign_field(self, rec: Record, other: Record, vals: set[str], terms: set[str]) -> str | None:
        """The one field where the text gives ``rec``'s value and ``other`` has
        another value, not in the text; None unless exactly one value of
        ``vals`` is foreign to ``other`` and sits in such a field."""
        foreign = vals - other.described_by() - {rec.ident}
        if len(foreign) != 1:
            return None
        value = next(iter(foreign))
        for name, mine in rec.fields.items():
            theirs = other.field_values(name)
            if value in mine and theirs and not (theirs & terms):
                return name
        return None

    def _crossed_pair(self, kind: str, first: tuple[str, set[str]], second: tuple[str, set[str]],
                      terms: set[str]) -> dict[str, Any] | None:
        """Two records fit a description equally, each but for one field where
        the text gives the other's value ("Black, medium brightness, AC
        adapter, $154.17": the $154.17 lamp is high brightness, the medium one
        costs another price): no record is described, two are mixed."""
        a, b = self.latest[(kind, first[0])], self.latest[(kind, second[0])]
        a_field = self._foreign_field(a, b, first[1], terms)
        b_field = self._foreign_field(b, a, second[1], terms)
        if a_field is None or b_field is None or a_field == b_field:
            return None
        said = next(iter(second[1] - a.described_by() - {b.ident}))
        if not _pins(said):
            # Told the other way round: a short option ("4K") only supports.
            a, b, b_field = b, a, a_field
            said = next(iter(first[1] - a.described_by() - {b.ident}))
            if not _pins(said):
                return None
        return {"slip": "wrong_record", "record": a.ident, "field": b_field, "said": said, "belongs_to": b.ident,
                "own": sorted(a.field_values(b_field) or {""})[0], "step": a.step}

    def _wrong_record(self, sentence: str, mentioned: list[Record], *,
                      figures_only: bool = False) -> dict[str, Any] | None:
        old, target = _change_parts(sentence)
        if not old:
            return self._foreign_value(sentence, mentioned, figures_only=figures_only)
        # A change: each side is judged on the records it names itself
        # ("Your current backpack (item 2492465580) is $202.39, so switching to
        # the new one …").
        for part in (target, old):
            if part:
                slip = self._foreign_value(part, self._mentioned(_sentence_terms(part)), figures_only=figures_only)
                if slip:
                    return slip
        return None

    def _foreign_value(self, sentence: str, mentioned: list[Record], *,
                       figures_only: bool = False) -> dict[str, Any] | None:
        """A value of a field that every record the sentence names of its kind
        has, held by none of them but by another record of that kind."""
        if not mentioned:
            return None
        terms = _sentence_terms(sentence)
        if figures_only:
            terms = {t for t in terms if _NUM_RE.match(t)}
        by_kind: dict[str, list[Record]] = {}
        for rec in mentioned:
            by_kind.setdefault(rec.kind, []).append(rec)
        named = set().union(*(rec.values() for rec in mentioned))
        for rec in mentioned:  # what a record held before an update is its own too
            for name in rec.fields:
                named |= self.past.get((rec.kind, rec.ident, name), set())
        for value in sorted(terms):
            owners = self.owners.get(value)
            if not owners or value in named or SIZE_LETTERS.get(value) in named or _negated_value(value, sentence) or any(
                kind == rec.kind and ident == rec.ident for rec in mentioned for kind, ident, _ in owners
            ):
                continue
            for kind, ident, name in sorted(owners):
                same_kind = by_kind.get(kind)
                if not same_kind:
                    continue
                # Every record of this kind the sentence names has the field,
                # none of them holds the value (and the sentence does not also
                # give the field's own value): it came from another one.
                if all((own := rec.field_values(name)) is not None and value not in own and not (own & terms)
                       for rec in same_kind):
                    rec = same_kind[0]
                    return {"slip": "wrong_record", "record": rec.ident, "field": name, "said": value,
                            "belongs_to": ident, "own": sorted(rec.field_values(name) or {""})[0], "step": rec.step}
        return None
