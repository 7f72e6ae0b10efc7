"""How many of a corpus's most frequent Chinese characters a tokenizer keeps whole: the share
of the 3,500 most frequent that it encodes as one token (the figure Chinese vocabulary
extensions are judged by: a character cut into byte pieces costs two or three tokens)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.segstats import COMMON_CHARACTERS, SegmentStats

__all__ = ["most_frequent", "is_single_token", "count_common"]


def most_frequent(counts: Mapping[int, int], n: int = COMMON_CHARACTERS) -> list[str]:
    """The ``n`` most frequent characters of a ``code point -> count`` table (ties: lower code
    point first)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [chr(cp) for cp, _ in ranked[:n]]


def is_single_token(tokenizer: Any, encoding: Any) -> bool:
    """Whether a character's encoding (alone, no special tokens) is one token that is neither
    unknown nor a byte piece, a lone word-start marker token (``▁``) before it not counted."""
    unk = token_view.unk_id(tokenizer)
    kept = []
    for token, token_id in zip(encoding.tokens, encoding.ids):
        text = token_view.token_text(tokenizer, token)
        if text is not None and text and not text.strip():
            continue  # "▁" alone: the word start, not the character
        kept.append((text, token_id, token))
    if len(kept) != 1:
        return False
    text, token_id, token = kept[0]
    return text is not None and token_id != unk and not token_view.is_byte_fallback(tokenizer, token)


def count_common(tokenizer: Any, stats: SegmentStats) -> None:
    """Sets ``stats.common_considered`` / ``common_single`` from its Chinese character counts."""
    characters = most_frequent(stats.han_counts)
    stats.common_considered = len(characters)
    if not characters:
        stats.common_single = 0
        return
    # one by one: 3,500 one-character texts cost less than starting encode_batch's workers;
    # the plain copy (no truncation or padding) made once, not per character
    plain = token_view.without_truncation(tokenizer)
    stats.common_single = sum(
        is_single_token(tokenizer, plain.encode(ch, add_special_tokens=False)) for ch in characters
    )
