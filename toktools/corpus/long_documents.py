"""Documents longer than a segment, encoded piece by piece where full encodings are built.

``compare --corpus``, ``inspect --corpus``, ``pretrain-data`` and the text formats of ``encode``
build full encodings (ids, tokens, offsets), whose Python objects cost about 50 bytes per
character: a 50 MB line encoded at once needs gigabytes. A document longer than
:data:`toktools.corpus.documents.SEGMENT_CHARS` is therefore encoded in the pieces
:func:`toktools.corpus.documents.bounded_segments` cuts it into: where the tokenizer provably
restarts (:func:`toktools.engines.analysis.cuttable`), so the pieces' tokens, joined, are the
document's. Where it cannot be cut, a document longer than
:data:`toktools.corpus.documents.MAX_UNCUT_CHARS` is refused in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from toktools.corpus.documents import SEGMENT_CHARS, bounded_segments


def tokenizer_cuttable(tokenizer: Any) -> bool:
    """:func:`toktools.engines.analysis.cuttable` for a tokenizer object: toktools' own, or
    ``tokenizers``' (anything else: never cut)."""
    from toktools.engines.analysis import cuttable

    if hasattr(tokenizer, "to_tokenizer_json"):
        return cuttable(tokenizer.to_tokenizer_json())
    if hasattr(tokenizer, "to_str"):
        return cuttable(json.loads(tokenizer.to_str()))
    return False


def is_long(text: str) -> bool:
    """Whether ``text`` is encoded in pieces (:func:`encoded_pieces`) rather than at once."""
    return len(text) > SEGMENT_CHARS


def piece_spans(text: str, cut: bool, where: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the pieces :func:`encoded_pieces` encodes (the one rule of where a long
    document is cut, for every path that counts one piece by piece); a piece that would be too
    long stops the run with one line naming ``where``, when it is reached."""
    from toktools.corpus import documents  # its limit as it is now (tests lower it)

    return bounded_segments(text, cut, where, segment_chars=SEGMENT_CHARS, max_chars=documents.MAX_UNCUT_CHARS)


def encoded_pieces(tokenizer: Any, text: str, cut: bool, where: str) -> Iterator[tuple[int, str, Any]]:
    """``(start, piece, encoding)`` of each piece of ``text`` (no special tokens, one piece at a time):
    the encoding's offsets are relative to the piece, which starts at character ``start``.
    ``cut``: :func:`tokenizer_cuttable` of ``tokenizer``; ``where`` names the document in the
    refusal of one that cannot be cut."""
    from toktools.runtime.memory import release_freed_memory

    for start, end in piece_spans(text, cut, where):
        release_freed_memory()
        piece = text if (start, end) == (0, len(text)) else text[start:end]
        yield start, piece, tokenizer.encode(piece, add_special_tokens=False)
