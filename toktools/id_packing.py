"""Ids as worker processes send them back: two int64 arrays' bytes, every id of a batch and
each text's count. Pickling millions of small ints would cost a large share of the encoding."""
from __future__ import annotations

from array import array
from itertools import accumulate
from typing import Iterable, Sequence

#: All ids of a batch, and each text's count: the bytes of two int64 arrays.
Packed = tuple[bytes, bytes]


def pack_id_lists(batch: Iterable[Sequence[int]]) -> Packed:
    """Each text's ids packed into one :data:`Packed` pair."""
    flat, counts = array("q"), array("q")
    for ids in batch:
        flat.extend(ids)
        counts.append(len(ids))
    return flat.tobytes(), counts.tobytes()


def unpack_id_lists(results: Iterable[Packed]) -> list[list[int]]:
    """The id lists of :data:`Packed` results, in order."""
    out: list[list[int]] = []
    for flat_bytes, count_bytes in results:
        flat = array("q", flat_bytes).tolist()
        bounds = list(accumulate(array("q", count_bytes), initial=0))
        out.extend(map(flat.__getitem__, map(slice, bounds[:-1], bounds[1:])))  # in C, no loop per text
    return out
