"""Encoding a word with trained merges: the merge-applying half of a BPE model.

Given ``vocab`` and the ranked ``merges`` (as :mod:`toktools.models.bpe.trainer` trains them or
``merges.txt`` lists them), a word's symbol ids are merged lowest rank first, exactly as
``tokenizers``' ``Word::merge_all`` does (``shared/spec/bytelevel-bpe.md`` §7).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from operator import add
from typing import Any

from toktools.errors import ToktoolsError

Pair = tuple[int, int]
MergeMap = dict[Pair, tuple[int, int]]  # (left id, right id) -> (rank, new id)


def build_merge_map(
    vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], continuing_subword_prefix: str | None = None
) -> MergeMap:
    """``(left id, right id) -> (rank, new id)``; a pair listed twice keeps its last rank."""
    prefix_length = len(continuing_subword_prefix or "")
    if merges and set(map(len, merges)) == {
        2
    }:  # in C calls (a third of the time of the loop below, which only explains a missing token)
        lefts, rights = zip(*merges)
        get = vocab.__getitem__
        try:
            pairs = zip(map(get, lefts), map(get, rights))
            results = map(get, map(add, lefts, [b[prefix_length:] for b in rights] if prefix_length else rights))
            return dict(zip(list(pairs), zip(range(len(merges)), results)))
        except KeyError:
            pass
    merge_map: MergeMap = {}
    for rank, (a, b) in enumerate(merges):
        try:
            merge_map[(vocab[a], vocab[b])] = (rank, vocab[a + b[prefix_length:]])
        except KeyError as missing:
            raise ToktoolsError(
                f"merge {rank + 1} ({a!r} {b!r}) uses a token missing from the vocabulary: {missing}"
            ) from None
    return merge_map


def merge_symbols(ids: list[int], merge_map: MergeMap) -> list[tuple[int, int]]:
    """Merge a word's symbol ids by rank, exactly as ``tokenizers``' ``Word::merge_all``.

    A min-heap of ``(rank, position)``: the lowest rank merges first, ties to the leftmost.
    Entries made stale by an earlier merge are skipped. Returns ``(token id, index of its first
    initial symbol)`` per token, so callers get offsets for free.
    """
    n = len(ids)
    get = merge_map.get
    heap = []
    for pos in range(n - 1):
        found = get((ids[pos], ids[pos + 1]))
        if found is not None:
            heap.append((found[0], pos, found[1]))
    if not heap:
        return list(zip(ids, range(n)))
    symbols = list(ids)
    alive = [True] * n
    previous = list(range(-1, n - 1))
    following = list(range(1, n + 1))
    heapq.heapify(heap)
    while heap:
        _rank, pos, new_id = heapq.heappop(heap)
        if not alive[pos]:
            continue
        nxt = following[pos]
        if nxt >= n:
            continue
        found = get((symbols[pos], symbols[nxt]))
        if found is None or found[1] != new_id:
            continue
        symbols[pos] = new_id
        alive[nxt] = False
        after = following[nxt]
        following[pos] = after
        if after < n:
            previous[after] = pos
        before = previous[pos]
        if before >= 0:
            found = get((symbols[before], new_id))
            if found is not None:
                heapq.heappush(heap, (found[0], before, found[1]))
        if after < n:
            found = get((new_id, symbols[after]))
            if found is not None:
                heapq.heappush(heap, (found[0], pos, found[1]))
    return [(symbols[i], i) for i in range(n) if alive[i]]


def pack_merges(merge_map: MergeMap) -> tuple[int, dict[int, int]] | None:
    """The merge map with ints for keys and values, for :func:`merge_packed`: ``left << shift |
    right`` → ``rank << shift | new id``, ``shift`` the bits of the largest id. It holds a third
    of the memory and loads (:mod:`marshal`) in half the time: 100,000 tuples fewer for a 50K
    vocabulary, which is what the ``--verify`` checker pays to merge its first new word. None
    when two pairs share a rank (the packed values would then order the heap otherwise)."""
    if not merge_map:
        return None
    ranks = [rank for rank, _ in merge_map.values()]
    if len(set(ranks)) != len(ranks) or min(ranks) < 0:
        return None
    top = max(max(a, b, new) for (a, b), (_, new) in merge_map.items())
    if top < 0:
        return None
    shift = max(1, top.bit_length())
    return shift, {(a << shift) | b: (rank << shift) | new for (a, b), (rank, new) in merge_map.items()}


def merge_packed(ids: list[int], packed: dict[int, int], shift: int) -> list[int]:
    """The ids of :func:`merge_symbols` (without the offsets), over :func:`pack_merges`' map:
    the same heap and the same steps. A heap entry is ``(rank << shift | new id, position)``:
    ranks are distinct, so it pops in the order of ``(rank, position)``, as there."""
    n = len(ids)
    get = packed.get
    mask = (1 << shift) - 1
    heap = []
    for pos in range(n - 1):
        found = get((ids[pos] << shift) | ids[pos + 1])
        if found is not None:
            heap.append((found, pos))
    if not heap:
        return list(ids)
    symbols = list(ids)
    alive = [True] * n
    previous = list(range(-1, n - 1))
    following = list(range(1, n + 1))
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        value, pos = pop(heap)
        if not alive[pos]:
            continue
        nxt = following[pos]
        if nxt >= n:
            continue
        new_id = value & mask
        found = get((symbols[pos] << shift) | symbols[nxt])
        if found is None or found & mask != new_id:
            continue
        symbols[pos] = new_id
        alive[nxt] = False
        after = following[nxt]
        following[pos] = after
        if after < n:
            previous[after] = pos
        before = previous[pos]
        if before >= 0:
            found = get((symbols[before] << shift) | new_id)
            if found is not None:
                push(heap, (found, before))
        if after < n:
            found = get((new_id << shift) | symbols[after])
            if found is not None:
                push(heap, (found, pos))
    return [symbols[i] for i in range(n) if alive[i]]


def merge_symbols_dropout(ids: list[int], merge_map: MergeMap, dropout: float, rng: Any) -> list[tuple[int, int]]:
    """:func:`merge_symbols` with BPE-dropout as ``tokenizers``' ``Word::merge_all`` applies it:
    each merge popped is skipped with probability ``dropout`` and kept aside; the merges kept
    aside go back into the queue after the next merge made (so a word may end with some never
    applied). ``rng.random()`` draws, so a seeded generator reproduces the segmentation."""
    n = len(ids)
    get = merge_map.get
    heap = []
    for pos in range(n - 1):
        found = get((ids[pos], ids[pos + 1]))
        if found is not None:
            heap.append((found[0], pos, found[1]))
    symbols = list(ids)
    alive = [True] * n
    previous = list(range(-1, n - 1))
    following = list(range(1, n + 1))
    heapq.heapify(heap)
    skipped: list[tuple[int, int, int]] = []
    draw = rng.random
    while heap:
        top = heapq.heappop(heap)
        if draw() < dropout:
            skipped.append(top)
            continue
        for entry in skipped:
            heapq.heappush(heap, entry)
        skipped.clear()
        _rank, pos, new_id = top
        if not alive[pos]:
            continue
        nxt = following[pos]
        if nxt >= n:
            continue
        found = get((symbols[pos], symbols[nxt]))
        if found is None or found[1] != new_id:
            continue
        symbols[pos] = new_id
        alive[nxt] = False
        after = following[nxt]
        following[pos] = after
        if after < n:
            previous[after] = pos
        before = previous[pos]
        if before >= 0:
            found = get((symbols[before], new_id))
            if found is not None:
                heapq.heappush(heap, (found[0], before, found[1]))
        if after < n:
            found = get((new_id, symbols[after]))
            if found is not None:
                heapq.heappush(heap, (found[0], pos, found[1]))
    return [(symbols[i], i) for i in range(n) if alive[i]]
