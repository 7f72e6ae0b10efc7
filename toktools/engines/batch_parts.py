"""How a lazy batch (:mod:`toktools.engines.lazy_encodings`, :mod:`~toktools.engines.lazy_wordpiece`)
is cut into parts: each part's compiled kernel runs in a thread, without the GIL, while this
thread prepares the next part or builds the previous part's encodings."""

from __future__ import annotations

from collections.abc import Sequence

#: At most this many parts, each of at least this many characters.
OVERLAP_PARTS = 4
OVERLAP_MIN_CHARS = 100_000


def part_chunks(texts: Sequence[str], plain: list[int]) -> list[list[int]]:
    """The indices ``plain`` of ``texts`` cut into consecutive parts (one part for a small batch)."""
    parts = max(1, min(OVERLAP_PARTS, sum(len(texts[i]) for i in plain) // OVERLAP_MIN_CHARS))
    per_part = -(-len(plain) // parts)
    return [plain[start : start + per_part] for start in range(0, len(plain), per_part)]
