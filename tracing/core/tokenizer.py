"""Where text splits, in one place: the CJK range, words, sentences.

Each splitter keeps the rules its readers were measured with (the detectors'
similarity, anchoring's salient values, the agent's lookup): they are named for
how they differ, not merged, so no detector's output moves.
"""

from __future__ import annotations

import re

# Kana, CJK ideographs (extension A, the unified block, compatibility ideographs).
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_CHAR_RE = re.compile(f"[{CJK}]")

# normalize's tokens: a CJK run, or a run of letters/digits (``[^\W_]`` = word
# chars minus underscore, so snake_case splits and punctuation of every script is dropped).
WORD_RE = re.compile(rf"[{CJK}]+|[^\W_{CJK}]+")
# anchoring's salient units, in one pass: a CJK run, or an alphanumeric word possibly with
# inner , . ' - that keep numbers ("1,800", "2.5") and names ("O'Brien", "Jean-Luc") whole.
VALUE_WORD_RE = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>[^\W_{CJK}]+(?:[.,'’\-][^\W_{CJK}]+)*)")

# What ends a sentence or a clause between two salient units.
SENTENCE_END_RE = re.compile(r"[.!?。！？;；:\n]")
# A sentence with the punctuation that ends it (the agent's lookup: any . ! ? splits).
PLAIN_SENTENCE_RE = re.compile(r"[^.!?。！？]+(?:[.!?。！？]+|$)")

# Text beyond this is not scanned: a 1 MB observation is page dump, and what an
# agent can take up from it sits in the part its context window saw anyway.
MAX_SCAN_CHARS = 20_000


def is_cjk(text: str) -> bool:
    return bool(CJK_CHAR_RE.search(text))


def split_sentences(text: str) -> list[str]:
    """Sentences/clauses of a thought. Decimal points and initials do not split."""
    text = text[:MAX_SCAN_CHARS]
    # After a number, a period ends the sentence only before a capital ("at
    # $219.88. Your …"), not in "in 1. the first …" or a list of "1. 2. 3.".
    parts = re.split(
        r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?<!\bMr\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bNo\.)"
        r"(?:(?<!\d\.)\s+|\s+(?=[A-Z“\"(]))"
        r"|(?<=[.!?][”\"’)])\s+(?=[A-Z“\"(])"
        r"|[。！？；;\n]+",
        text,
    )
    return [p.strip() for p in parts if p and p.strip()]


def plain_sentences(text: str) -> list[str]:
    """Sentences split at every . ! ? (and their CJK forms), each with its end."""
    return PLAIN_SENTENCE_RE.findall(text)
