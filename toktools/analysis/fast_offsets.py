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
from itertools import chain
from operator import methodcaller
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


class ByteLevelSpans:
    """Ids from tiktoken (where it is exact for this byte-level BPE) and each token's character
    span worked out from the ids: the tokens' bytes are the text's bytes, in order, so their
    lengths give every token's byte range, and the text's UTF-8 lead bytes turn bytes into
    characters. The ``ByteLevel`` post-processor's ``trim_offsets`` is applied as
    :func:`toktools.parts.post_processors.trim_offsets` does. Tested equal to ``tokenizers``'
    offsets through the statistics (``tests/test_compare_fast.py``)."""

    def __init__(self, tokenizer: Any, engine: Any, trim: bool, add_prefix_space: bool) -> None:
        import numpy as np

        from toktools.analysis import token_view
        from toktools.parts.post_processors import TRIMMED

        self.engine, self.trim, self.add_prefix_space = engine, trim, add_prefix_space
        vocab = token_view.model_vocab(tokenizer)
        added = token_view.added_tokens(tokenizer)
        size = max(vocab.values(), default=0) + 1
        size = max([size, *(i + 1 for i in added.values())])
        self.byte_length = np.zeros(size, dtype=np.int64)
        self.leading = np.zeros(size, dtype=np.int64)
        self.trailing = np.zeros(size, dtype=np.int64)
        # one byte symbol is one byte, and the symbols trimmed at each end (whole strings at C
        # speed, not a loop over 50k tokens)
        tokens = [token for token in vocab if token not in added]
        ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        self.byte_length[ids] = lengths
        self.leading[ids] = lengths - np.fromiter(
            map(len, map(methodcaller("lstrip", TRIMMED), tokens)), dtype=np.int64
        )
        self.trailing[ids] = lengths - np.fromiter(
            map(len, map(methodcaller("rstrip", TRIMMED), tokens)), dtype=np.int64
        )
        for content, token_id in added.items():  # matched in the text as it is
            self.byte_length[token_id] = len(content.encode("utf-8"))
        for content, token_id in added.items():
            if content and (content[0] in TRIMMED or content[-1] in TRIMMED):
                self.leading[token_id] = len(content) - len(content.lstrip(TRIMMED))
                self.trailing[token_id] = len(content) - len(content.rstrip(TRIMMED))

    def arrays(self, texts: Sequence[str], chunk: Any) -> tuple[Any, Any, Any, Any]:
        """``(ids, tokens per text, starts, ends)`` with spans on the axis of the texts laid end
        to end (a :class:`~toktools.analysis.chunk_tally.ChunkText` of them)."""
        import numpy as np

        base = chunk.base
        packed = self.engine.encode_packed(texts)
        if packed is not None:
            ids = np.frombuffer(packed.data, dtype=np.uint32).astype(np.int64)
            counts = np.array(packed.counts, dtype=np.int64)
        else:
            batch = self.engine.encode_batch(texts)
            counts = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
            ids = np.fromiter(chain.from_iterable(batch), dtype=np.int64, count=int(counts.sum()))
        raw = np.frombuffer("".join(texts).encode("utf-8"), dtype=np.uint8)
        char_of = np.cumsum((raw & 0xC0) != 0x80) - 1
        byte_ends = np.cumsum(self.byte_length[ids])
        byte_starts = byte_ends - self.byte_length[ids]
        starts = char_of[byte_starts] if len(ids) else np.zeros(0, dtype=np.int64)
        ends = char_of[byte_ends - 1] + 1 if len(ids) else np.zeros(0, dtype=np.int64)
        if self.trim and len(ids):
            doc = np.repeat(np.arange(len(counts)), counts)
            local = starts - base[doc]
            first = np.zeros(len(ids), dtype=bool)
            first[(np.cumsum(counts) - counts)[counts > 0]] = True
            leading, trailing = self.leading[ids], self.trailing[ids]
            if self.add_prefix_space:
                leading = np.where((leading == 1) & (first | (local == 0)), 0, leading)
            starts = np.where(leading > 0, np.minimum(starts + leading, ends), starts)
            cut = (trailing > 0) & (ends - base[doc] >= trailing)
            ends = np.where(cut, np.maximum(ends - trailing, starts), ends)
        return ids, counts, starts, ends


def byte_level_spans(tokenizer: Any) -> ByteLevelSpans | None:
    """:class:`ByteLevelSpans` for a toktools byte-level BPE that tiktoken encodes exactly,
    with no post-processor or one that only trims offsets (``ByteLevel``, ``RobertaProcessing``:
    their templates are not used here); None otherwise."""
    to_json = getattr(tokenizer, "to_tokenizer_json", None)
    if to_json is None:
        return None
    from toktools.analysis import token_view
    from toktools.engines.base import corpus_document, document_fingerprint
    from toktools.errors import ToktoolsError

    try:
        if not token_view.is_byte_level(tokenizer):
            return None
        document = corpus_document(to_json())
        if document.get("normalizer") is not None:
            return None
        processor = document.get("post_processor")
        if processor is not None and processor.get("type") not in ("ByteLevel", "RobertaProcessing"):
            return None
        from toktools.engines.choice import make_engine

        # the fingerprint (canonical JSON of 50k tokens and merges) once, not per probe step
        engine = make_engine("tiktoken", document, fingerprint=document_fingerprint(document))
    except (ToktoolsError, ImportError):
        return None
    trim = processor is not None and bool(processor.get("trim_offsets", True))
    prefix = processor is not None and bool(processor.get("add_prefix_space", True))
    return ByteLevelSpans(tokenizer, engine, trim, prefix)
