"""Compiled BPE merges for the ids-only path of the reference engine (optional: needs
``numba``, extra ``fast``; importing this module fails without it and :mod:`toktools.fast_ids`
then merges in Python).

:func:`toktools.bpe_merges.merge_symbols` written over flat arrays, for many words in one call:
the same min-heap of ``(rank, position)`` (lowest rank first, ties to the leftmost), the same
linked list of live symbols, the same test that a popped entry still names the pair at its
position (same new id), so the ids are the same by construction; ``tests/test_fast_ids.py``
checks them against the Python merge and against ``tokenizers``. A word's Python merge costs
~20 µs plus ~2 µs a byte; here it is well under a microsecond a byte, which matters where words
rarely repeat (Chinese runs of text) and on the cold caches of every worker.

Layout: the words' UTF-8 bytes are one ``uint8`` array, word ``w`` being
``data[starts[w]:starts[w + 1]]``; ``byte_ids[b]`` is the id of byte ``b``'s symbol. The merges
are an open-addressing hash table (:class:`MergeTable`) keyed by ``left id << 32 | right id``.
Only :func:`merge_words` is compiled code to load (its helpers are inlined into it): loading
each compiled function from numba's cache has a cost of its own.
"""
from __future__ import annotations

from itertools import chain
from typing import Mapping

import numpy as np
from numba import njit

from toktools.bpe_vectorized import _EMPTY, _GOLDEN, PairTable  # the same hash table layout


@njit(cache=True, inline="always")
def _slot(table_keys, key, shift):
    """Where ``key`` is (or would go) in the table: linear probing from its Fibonacci hash."""
    mask = len(table_keys) - 1
    h = np.int64((key * _GOLDEN) >> shift)
    while table_keys[h] != key and table_keys[h] != _EMPTY:
        h = (h + 1) & mask
    return h


class MergeTable:
    """``(left id, right id) -> (rank, new id)`` as arrays the kernel probes: the hash table of
    :class:`toktools.bpe_vectorized.PairTable` (built with numpy: one compiled function less
    to load), its slots holding ranks and new ids."""

    def __init__(self, merge_map: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        n = len(merge_map)
        pairs = np.array(list(merge_map.keys()), dtype=np.int64).reshape(n, 2)
        values = np.array(list(merge_map.values()), dtype=np.int64).reshape(n, 2)
        table = PairTable((pairs[:, 0] << 32) | pairs[:, 1])
        self.keys, self.shift = table.keys, table.shift
        self.ranks = values[table.index, 0]  # empty slots hold merge 0's: never read, their key is _EMPTY
        self.new_ids = values[table.index, 1]


@njit(cache=True, inline="always")
def _lookup(table_keys, shift, left, right):
    """The slot of pair ``(left, right)``, or -1 if it is no merge."""
    key = (np.uint64(left) << np.uint64(32)) | np.uint64(right)
    h = _slot(table_keys, key, shift)
    return h if table_keys[h] == key else -1


@njit(cache=True, inline="always")
def _sift_down(heap_keys, heap_new, size, i):
    key, new = heap_keys[i], heap_new[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap_keys[child + 1] < heap_keys[child]:
            child += 1
        if heap_keys[child] >= key:
            break
        heap_keys[i], heap_new[i] = heap_keys[child], heap_new[child]
        i = child
    heap_keys[i], heap_new[i] = key, new


@njit(cache=True, inline="always")
def _push(heap_keys, heap_new, size, key, new):
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if heap_keys[parent] <= key:
            break
        heap_keys[i], heap_new[i] = heap_keys[parent], heap_new[parent]
        i = parent
    heap_keys[i], heap_new[i] = key, new


@njit(cache=True)
def merge_words(data, starts, byte_ids, table_keys, table_ranks, table_new, shift):
    """The merged ids of every word: ``(ids, id_starts)``, word ``w``'s ids being
    ``ids[id_starts[w]:id_starts[w + 1]]``. A heap key is ``rank << 32 | position``, so
    ordering keys orders by rank, then position, as ``tokenizers`` pops them."""
    n_words = len(starts) - 1
    longest = 1
    for w in range(n_words):
        longest = max(longest, starts[w + 1] - starts[w])
    symbols = np.empty(longest, dtype=np.int64)
    following = np.empty(longest, dtype=np.int64)
    previous = np.empty(longest, dtype=np.int64)
    alive = np.empty(longest, dtype=np.bool_)
    heap_keys = np.empty(3 * longest, dtype=np.int64)  # n - 1 pairs, then at most 2 per merge
    heap_new = np.empty(3 * longest, dtype=np.int64)
    ids = np.empty(len(data), dtype=np.int64)  # never more tokens than bytes
    id_starts = np.empty(n_words + 1, dtype=np.int64)
    low = np.int64(0xFFFFFFFF)
    out = 0
    for w in range(n_words):
        id_starts[w] = out
        begin = starts[w]
        n = starts[w + 1] - begin
        for i in range(n):
            symbols[i] = byte_ids[data[begin + i]]
            following[i] = i + 1
            previous[i] = i - 1
            alive[i] = True
        size = 0
        for pos in range(n - 1):
            h = _lookup(table_keys, shift, symbols[pos], symbols[pos + 1])
            if h >= 0:
                heap_keys[size] = (table_ranks[h] << 32) | pos
                heap_new[size] = table_new[h]
                size += 1
        for i in range(size // 2 - 1, -1, -1):
            _sift_down(heap_keys, heap_new, size, i)
        while size > 0:
            key, new = heap_keys[0], heap_new[0]
            size -= 1
            if size > 0:
                heap_keys[0], heap_new[0] = heap_keys[size], heap_new[size]
                _sift_down(heap_keys, heap_new, size, 0)
            pos = key & low
            if not alive[pos]:
                continue
            nxt = following[pos]
            if nxt >= n:
                continue
            h = _lookup(table_keys, shift, symbols[pos], symbols[nxt])
            if h < 0 or table_new[h] != new:
                continue
            symbols[pos] = new
            alive[nxt] = False
            after = following[nxt]
            following[pos] = after
            if after < n:
                previous[after] = pos
            before = previous[pos]
            if before >= 0:
                h = _lookup(table_keys, shift, symbols[before], new)
                if h >= 0:
                    _push(heap_keys, heap_new, size, (table_ranks[h] << 32) | before, table_new[h])
                    size += 1
            if after < n:
                h = _lookup(table_keys, shift, new, symbols[after])
                if h >= 0:
                    _push(heap_keys, heap_new, size, (table_ranks[h] << 32) | pos, table_new[h])
                    size += 1
        i = 0
        while i < n:
            ids[out] = symbols[i]
            out += 1
            i = following[i]
    id_starts[n_words] = out
    return ids[:out], id_starts


class BulkMerger:
    """Words → their merged id tuples, many per call (one kernel call for all of them)."""

    def __init__(self, byte_ids: list[int], merge_map: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        self.byte_ids = np.array(byte_ids, dtype=np.int64)
        self.table = MergeTable(merge_map)
        self(["a"])  # load the compiled code now (~0.5 s), in the process that forks the workers

    def __call__(self, words: list[str]) -> list[tuple[int, ...]]:
        encoded = [word.encode("utf-8") for word in words]
        starts = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=starts[1:])
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        table = self.table
        ids, id_starts = merge_words(data, starts, self.byte_ids, table.keys, table.ranks, table.new_ids, table.shift)
        flat, bounds = ids.tolist(), id_starts.tolist()
        return list(map(tuple, map(flat.__getitem__, map(slice, bounds, bounds[1:]))))

    def ids_of_texts(self, word_lists: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Every word of many texts merged, no cache: ``(ids, counts)``, text ``t``'s ids being
        the ``counts[t]`` ids after those of the texts before it. Where words rarely repeat
        (Chinese), a cache costs more than merging again; and nothing here is done per word in
        Python: the words' bounds come from their lengths in characters and the UTF-8 length
        of every character."""
        words = list(chain.from_iterable(word_lists))
        text = "".join(words)
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        char_bytes = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
        byte_at = np.zeros(len(points) + 1, dtype=np.int64)
        np.cumsum(char_bytes, out=byte_at[1:])
        char_ends = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)), out=char_ends[1:])
        data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        table = self.table
        ids, id_starts = merge_words(data, byte_at[char_ends], self.byte_ids, table.keys, table.ranks, table.new_ids,
                                     table.shift)
        word_ends = np.cumsum(np.fromiter(map(len, word_lists), dtype=np.int64, count=len(word_lists)))
        id_ends = id_starts[word_ends]
        return ids, np.diff(id_ends, prepend=0)
