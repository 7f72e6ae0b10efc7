"""How a lazy batch (:mod:`toktools.engines.lazy_encodings`, :mod:`~toktools.engines.lazy_wordpiece`)
is cut into parts: each part's compiled kernel runs in a thread, without the GIL, while this
thread prepares the next part or builds the previous part's encodings."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from toktools.encoding import Encoding, lazy_encoding_of_ids

#: At most this many parts, each of at least this many characters.
OVERLAP_PARTS = 4
OVERLAP_MIN_CHARS = 100_000


def part_chunks(texts: Sequence[str], plain: list[int]) -> list[list[int]]:
    """The indices ``plain`` of ``texts`` cut into consecutive parts (one part for a small batch)."""
    parts = max(1, min(OVERLAP_PARTS, sum(len(texts[i]) for i in plain) // OVERLAP_MIN_CHARS))
    per_part = -(-len(plain) // parts)
    return [plain[start : start + per_part] for start in range(0, len(plain), per_part)]


def part_encodings(
    chunks: list[list[int]], batches: list[Any], token_of: Callable[[int], str], type_ids: Sequence[int]
) -> Iterator[tuple[int, int, Any, Encoding]]:
    """Each text's lazy encoding, part after part as each part's thread finishes:
    ``(text index, index in its part, the part, the encoding)``. A part has ``finish()``, then
    ``ids`` and ``bounds`` (text ``n``'s ids are ``ids[bounds[n]:bounds[n + 1]]``) and
    ``offsets(n)``."""
    for chunk, batch in zip(chunks, batches):
        batch.finish()
        ids, bounds = batch.ids, batch.bounds
        for n, i in enumerate(chunk):
            offsets = partial(batch.offsets, n)
            yield i, n, batch, lazy_encoding_of_ids(ids[bounds[n] : bounds[n + 1]], token_of, offsets, type_ids[i])


def offsets_per_text(starts: Any, ends: Any, bounds: list[int]) -> dict[int, list[tuple[int, int]]]:
    """Every text's offsets of a part as lists of pairs (text ``n``'s are tokens ``bounds[n]`` to
    ``bounds[n + 1]`` of ``starts`` and ``ends``, any arrays with ``tolist``), the collector
    paused while they are made."""
    from toktools.runtime.gc_pause import gc_paused

    with gc_paused():
        pairs = list(zip(starts.tolist(), ends.tolist()))
        return {n: pairs[lo:hi] for n, (lo, hi) in enumerate(zip(bounds, bounds[1:]))}
