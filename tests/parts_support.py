"""Helpers for the parity tests of the generic parts: the same part run by ``tokenizers`` and by
toktools, compared as text, pieces and offsets in the original text.

``tokenizers`` does not expose a ``NormalizedString``'s alignments, so they are read through a
``Tokenizer`` whose pre-tokeniser isolates every normalised char and whose model (WordLevel with
only ``[UNK]``) keeps each one as a token: the offsets of token *i* are then the original span of
normalised char *i* — what toktools keeps in ``Piece.spans``.
"""

from __future__ import annotations

import json

from tokenizers import Regex, Tokenizer, models, pre_tokenizers

from toktools.parts.base import Piece

EDGE_CASES = [
    "",
    " ",
    "   ",
    "\t\n \r\n",
    "Hello, world! It's 12:30 — isn't it?",
    "e\u0301 a\u0308\u0301 \u1e69 \u0f73\u0f74 \u0344 x\u0345\u0334",  # combining marks, reordering
    "\ufb01le \ufb03 \u2460 \u00bd \u32ff \u3392 \uff21\uff42\uff43 \u2126",  # ligatures, compat
    "\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f44d\U0001f3fd \u2764\ufe0f",  # ZWJ, skin tone
    "\ud55c\uad6d\uc5b4 \u1100\u1161\u11a8 \u1100\u1161 \uac00\u11a8",  # Hangul, jamo
    "\u0661\u0662\u0663 \u0967\u0968 \uff11\uff12 \u2167 12345 3.14",  # digits in scripts
    "line one\r\nline two\r\n\r\n  indented\n",
    "\u0130stanbul \u03a3\u039f\u03a6\u039f\u03a3 STRASSE \u1e9e \u00df",  # casing
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u3002 \u300c\u5f15\u7528\u300d",
    "\u0646\u0635 \u0639\u0631\u0628\u064a\u064f  \u05e9\u05dc\u05d5\u05dd",
    "\x00\x01 \u00a0\u2003\u3000\u2028\u0085 tab\tend",
    "\U00011935\U00011930 \U00011938 \U000323b0 \U0001e6c0",  # newer than tokenizers' tables
]


def hf_char_spans(normalizer, text: str) -> tuple[str, list[tuple[int, int]]]:
    """``tokenizers``' normalised text and the original span of each of its chars."""
    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    normalized = normalizer.normalize_str(text) if normalizer is not None else text
    return normalized, [tuple(o) for o in tok.encode(text).offsets]


def ours_char_spans(normalizer, text: str) -> tuple[str, list[tuple[int, int]]]:
    piece = normalizer.normalize(Piece(text))
    return piece.text, piece.all_spans()


def hf_pieces(normalizer, pre_tokenizer, text: str) -> list[tuple[str, tuple[int, int]]]:
    """Pieces through ``tokenizers``' normaliser and pre-tokeniser, with offsets in ``text``
    (each piece is one token of a WordLevel model that knows every piece)."""
    normalized = normalizer.normalize_str(text) if normalizer is not None else text
    words = [w for w, _ in pre_tokenizer.pre_tokenize_str(normalized)] if pre_tokenizer else [normalized]
    vocab = {"[UNK]": 0}
    for word in words:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    if normalizer is not None:
        tok.normalizer = normalizer
    if pre_tokenizer is not None:
        tok.pre_tokenizer = pre_tokenizer
    enc = tok.encode(text)
    return [(t, tuple(o)) for t, o in zip(enc.tokens, enc.offsets)]


def ours_pieces(normalizer, pre_tokenizer, text: str) -> list[tuple[str, tuple[int, int]]]:
    """The pipeline-free equivalent: normalise a Piece, pre-tokenise, read each piece's span."""
    piece = Piece(text)
    if normalizer is not None:
        piece = normalizer.normalize(piece)
    pieces = pre_tokenizer.pre_tokenize([piece]) if pre_tokenizer is not None else [piece]
    return [(p.text, p.original(0, len(p.text))) for p in pieces if p.text]


def hf_node(part) -> dict:
    """The JSON node ``tokenizers`` writes for one of its parts."""
    state = part.__getstate__()
    return json.loads(state.decode() if isinstance(state, bytes) else state)


def first_difference(a: list, b: list) -> str:
    """A readable pointer to where two lists part (for assertion messages)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"at {i}: tokenizers {a[max(0, i - 2) : i + 3]!r} vs toktools {b[max(0, i - 2) : i + 3]!r}"
    return f"lengths {len(a)} vs {len(b)}"
