"""Ids as worker processes send them back: the bytes of two arrays, every id of a batch as a
native uint32 (the layout of :class:`toktools.engines.base.PackedIds` and of the shards, so they are
joined and written without a Python int per id) and each text's count as an int64. Pickling
millions of small ints would cost a large share of the encoding."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate

#: All ids of a batch (uint32), and each text's count (int64): the bytes of two arrays.
Packed = tuple[bytes, bytes]


def pack_id_lists(batch: Iterable[Sequence[int]]) -> Packed:
    """Each text's ids packed into one :data:`Packed` pair."""
    flat, counts = array("I"), array("q")
    for ids in batch:
        flat.extend(ids)
        counts.append(len(ids))
    return flat.tobytes(), counts.tobytes()


def unpack_id_lists(results: Iterable[Packed]) -> list[list[int]]:
    """The id lists of :data:`Packed` results, in order."""
    out: list[list[int]] = []
    for flat_bytes, count_bytes in results:
        flat = array("I", flat_bytes).tolist()
        bounds = list(accumulate(array("q", count_bytes), initial=0))
        out.extend(map(flat.__getitem__, map(slice, bounds[:-1], bounds[1:])))  # in C, no loop per text
    return out


def joined(results: Sequence[Packed]) -> tuple[bytes, list[int]]:
    """:data:`Packed` results joined: all their ids (uint32 bytes), and every text's count."""
    counts: list[int] = []
    for _, count_bytes in results:
        counts.extend(array("q", count_bytes))
    return b"".join([flat for flat, _ in results]), counts
