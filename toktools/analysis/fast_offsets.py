"""Ids and character offsets of a batch of documents from the fastest exact engine, for the
statistics of ``compare --corpus``.

The statistics need, per token, its id and the character span it stands for (to give it to the
word of its last character and to find byte pieces). The reference's aligned pipeline gives
both but is slow; HuggingFace ``tokenizers`` (the ``tokenizers`` engine, loaded from the same
document) gives the very same ids and offsets from Rust threads (``offsets`` below is checked
against the reference in ``tests/test_compare_fast.py``). Where ``tokenizers`` cannot load a
tokenizer, or the object is not a toktools :class:`~toktools.tokenizer.Tokenizer`, the
tokenizer's own ``encode_batch`` is used, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["OffsetsEncoder", "is_threaded", "offsets_encoder"]

#: texts → ``(ids, offsets)`` per text, no special tokens, no truncation, no padding.
OffsetsEncoder = Callable[[Sequence[str]], list[tuple[list[int], list[tuple[int, int]]]]]


def _library_encoder(tokenizer: Any) -> OffsetsEncoder | None:
    """``tokenizers``' ``encode_batch`` on the tokenizer's document, or None where it cannot."""
    to_json = getattr(tokenizer, "to_tokenizer_json", None)
    if to_json is None:
        return None
    try:
        import tokenizers

        from toktools.engines.base import corpus_document

        library = tokenizers.Tokenizer.from_str(json.dumps(corpus_document(to_json())))
    except Exception:  # not installed, or a tokenizer it cannot load: the reference does it
        return None

    def encode(texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        return [(e.ids, e.offsets) for e in library.encode_batch(list(texts), add_special_tokens=False)]

    encode.threaded = True  # type: ignore[attr-defined]
    return encode


def _reference_encoder(tokenizer: Any) -> OffsetsEncoder:
    def encode(texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        return [(e.ids, e.offsets) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False, workers=1)]

    return encode


def is_threaded(encoder: OffsetsEncoder) -> bool:
    """Whether the encoder uses every core by itself (``tokenizers``' Rust threads): worker
    processes would then only add start-up and copies."""
    return bool(getattr(encoder, "threaded", False))


def offsets_encoder(tokenizer: Any) -> OffsetsEncoder:
    """The fastest exact ids-and-offsets encoder for ``tokenizer`` (already without truncation
    and padding): ``tokenizers`` when it loads the tokenizer, else the tokenizer itself."""
    return _library_encoder(tokenizer) or _reference_encoder(tokenizer)
