"""Argument normalisation shared by the repetition detector and the UI.

Two tool calls are "the same" when they ask for the same thing, not when their
bytes match: ``Search[The Eiffel Tower]`` and ``{"query": "eiffel tower"}`` are
one request. Everything here is pure, never raises and is linear in the
(capped) input size, because the watchdog calls it on every action.
"""

from __future__ import annotations

import hashlib
import json
import sys
import unicodedata
from collections.abc import Iterable
from typing import Any

from tracing.core.tokenizer import CJK_CHAR_RE, WORD_RE

# Longer arguments are truncated before tokenising: a 100 KB blob pasted into a
# query is junk anyway, and the watchdog's per-step cost must stay bounded.
MAX_ARG_CHARS = 4000

# JSON nesting deeper than this is flattened no further; guards against
# pathological or adversarial arguments blowing the stack.
MAX_JSON_DEPTH = 8

# Small on purpose: only words that carry no query meaning. A long list would
# start deleting real content ("first", "name") and hide real differences.
_EN_STOP_TEXT = """
    a an the and or but if of at by for with about against between into through
    during before after above below to from up down in out on off over under
    again further then once here there when where why how all any both each few
    more most other some such no nor not only own same so than too very can
    will just should now is are was were be been being have has had having do
    does did doing i me my we our you your he him his she her it its they them
    their what which who whom this that these those am s t d ll m o re ve y
    please
"""
EN_STOP_WORDS = frozenset(_EN_STOP_TEXT.split())

# Function characters of Chinese: particles, copulas, conjunctions. A CJK run
# is split at them before bigramming, so "北京的人口" gives 北京 / 人口.
ZH_STOP_CHARS = frozenset("的了是在和与及或吗呢吧啊呀么之而也都就还又把被给对从向于着过个这那")
ZH_STOP_WORDS = frozenset(["什么", "怎么", "哪些", "哪个", "一个", "我们", "你们", "他们", "请问", "关于"])

# One token longer than this is cut: a base64 blob or a URL is one "word" that
# would otherwise dominate memory while meaning no more than its prefix.
MAX_TOKEN_CHARS = 64

# A CJK run, or a run of letters/digits (tracing.core.tokenizer.WORD_RE).
_TOKEN_RE = WORD_RE
_CJK_CHAR_RE = CJK_CHAR_RE
_CJK_ANY_RE = CJK_CHAR_RE


def _flatten(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > MAX_JSON_DEPTH:
        return
    if isinstance(value, dict):
        # Keys sorted so {"a":1,"b":2} and {"b":2,"a":1} normalise the same.
        # Keys themselves are dropped: two calls to one tool share their keys,
        # which would inflate the similarity of unrelated requests.
        for key in sorted(value, key=str):
            _flatten(value[key], out, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _flatten(item, out, depth + 1)
    elif value is None:
        return
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    else:
        out.append(str(value))


def _as_text(args: Any) -> str:
    if args is None:
        return ""
    if isinstance(args, (bytes, bytearray, memoryview)):
        args = bytes(args[: MAX_ARG_CHARS * 4]).decode("utf-8", errors="replace")
    if isinstance(args, str):
        stripped = args[: MAX_ARG_CHARS * 4].strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= MAX_ARG_CHARS:
            try:
                args = json.loads(stripped)
            except (ValueError, RecursionError):
                return stripped[:MAX_ARG_CHARS]
        else:
            return stripped[:MAX_ARG_CHARS]
    parts: list[str] = []
    try:
        _flatten(args, parts)
    except Exception:  # noqa: BLE001 -- odd objects with a failing __str__: no args
        return ""
    return " ".join(parts)[:MAX_ARG_CHARS]


def tokens(text: str) -> tuple[str, ...]:
    """Tokens of free text (used for observations too): same rules as arguments."""
    out: list[str] = []
    seen: set[str] = set()

    def add(tok: str) -> None:
        if tok not in seen:
            seen.add(tok)
            out.append(tok)

    for run in _TOKEN_RE.findall(text.lower()):
        if _CJK_CHAR_RE.match(run):
            for piece in split_cjk(run):
                if len(piece) == 1:
                    add(piece)
                else:
                    for i in range(len(piece) - 1):
                        bigram = piece[i : i + 2]
                        if bigram not in ZH_STOP_WORDS:
                            add(bigram)
        elif run not in EN_STOP_WORDS:
            add(run[:MAX_TOKEN_CHARS])
    return tuple(out)


def split_cjk(run: str) -> list[str]:
    """A CJK run cut at its function characters (的, 了, 是...)."""
    pieces: list[str] = []
    start = 0
    for i, ch in enumerate(run):
        if ch in ZH_STOP_CHARS:
            if i > start:
                pieces.append(run[start:i])
            start = i + 1
    if start < len(run):
        pieces.append(run[start:])
    return pieces


def normalize_args(args: str | dict | list | None) -> tuple[str, ...]:
    """Normalised tokens of a tool call's arguments, in first-seen order, unique.

    Lower-cased, punctuation stripped, English and Chinese stop words dropped,
    CJK runs as character bigrams; JSON (a dict/list, or a string that parses
    as a JSON object/array) is compared by value. Never raises.
    """
    try:
        return tokens(_as_text(args))
    except Exception:  # noqa: BLE001 -- odd input must never take the watchdog down
        return ()


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|a ∩ b| / |a ∪ b| on token sets.

    Two empty sets are identical calls (both argument-less) -> 1.0; one empty
    set against a non-empty one shares nothing -> 0.0.
    """
    sa = a if isinstance(a, (set, frozenset)) else set(a)
    sb = b if isinstance(b, (set, frozenset)) else set(b)
    if not sa and not sb:
        return 1.0
    if not sa or not sb:
        return 0.0
    inter = len(sa & sb)
    return inter / (len(sa) + len(sb) - inter)


def action_key(tool: str | None, args: Any) -> tuple[str, frozenset[str]]:
    """(lower-cased tool name, token set) — what the repetition detector compares."""
    name = (tool or "").strip().lower()
    return name, frozenset(normalize_args(args))


def stable_digest(text: str) -> int:
    """A 64-bit signed digest of ``text`` that is the same in every process
    (``hash()`` of a str is salted per process): what a watchdog state kept
    between requests (tracing.store.guard) compares calls and results by."""
    raw = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(raw, "big", signed=True)


def call_signature(tool: str | None, args: Any) -> tuple[str, str]:
    """A call as it was made, up to case and white space: stricter than
    ``action_key`` (which compares word sets), for "the very same call again".
    Two programs that differ only in an escape or an operator are two calls."""
    name = (tool or "").strip().lower()
    if isinstance(args, (dict, list)):
        try:
            text = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            text = str(args)
    else:
        text = "" if args is None else str(args)
    return name, " ".join(text[: MAX_ARG_CHARS * 4].lower().split())


# Observations are analysed on their head only: the cost per step must stay
# bounded however long a page is (the full text stays in the trace).
MAX_TEXT_CHARS = 3000


def content_tokens(text: str | None, max_chars: int = MAX_TEXT_CHARS) -> list[str]:
    """Content tokens of free text, in order, duplicates kept (for bigrams).

    Same rules as :func:`normalize_args`, but built for speed on long
    observations: the common no-CJK case is one regex pass and a filter.
    """
    if not text:
        return []
    if not isinstance(text, str):
        text = _as_text(text)
    runs = _TOKEN_RE.findall(text[:max_chars].lower())
    if not _CJK_ANY_RE.search(text, 0, max_chars):
        stop = EN_STOP_WORDS
        return [r[:MAX_TOKEN_CHARS] for r in runs if r not in stop]
    out: list[str] = []
    for run in runs:
        if _CJK_CHAR_RE.match(run):
            for piece in split_cjk(run):
                if len(piece) == 1:
                    out.append(piece)
                else:
                    out.extend(b for b in (piece[i : i + 2] for i in range(len(piece) - 1)) if b not in ZH_STOP_WORDS)
        elif run not in EN_STOP_WORDS:
            out.append(run[:MAX_TOKEN_CHARS])
    return out


def features(toks: list[str]) -> set[str]:
    """Unigrams plus adjacent bigrams: "shelf 6" is new even when "shelf" and
    "6" were each seen before, which matters for short structured observations."""
    feats = set(toks)
    feats.update(a + " " + b for a, b in zip(toks, toks[1:], strict=False))
    return feats


def search_token_set(text: str | None) -> list[str]:
    """:func:`search_tokens` without repeats, in first-seen order. Each
    distinct run of letters / CJK is segmented once, by the same rules, so a
    long observation that repeats its words costs its vocabulary, not its
    length (the run list's search index tokenises every step as it is written)."""
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text).lower()
    runs = dict.fromkeys(_TOKEN_RE.findall(text))
    stop = EN_STOP_WORDS
    if not _CJK_ANY_RE.search(text):
        # A run of the lower-cased text is its own only token: the rules of
        # content_tokens come down to the stop list and the length cap, with
        # no second regex pass per run (most of a bulk write's time).
        return list(dict.fromkeys(r[:MAX_TOKEN_CHARS] for r in runs if r not in stop))
    out: dict[str, None] = {}
    for run in runs:
        if _CJK_CHAR_RE.match(run):
            out.update(dict.fromkeys(content_tokens(run, max_chars=sys.maxsize)))
        elif run not in stop:
            out[run[:MAX_TOKEN_CHARS]] = None
    return list(out)


def search_tokens(text: str | None) -> list[str]:
    """Tokens of a search query or a document, in order, duplicates kept: the
    rules of :func:`content_tokens` over the whole text, after NFKC so
    full-width letters and digits search as their plain selves. Both search
    backends (Postgres and the in-memory corpus) and the simulated model's
    task matching tokenise with it."""
    if not text:
        return []
    return content_tokens(unicodedata.normalize("NFKC", text), max_chars=sys.maxsize)
