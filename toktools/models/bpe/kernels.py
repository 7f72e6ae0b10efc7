"""The compiled BPE merge of the reference engine's ids-only path, as numba source (optional:
needs ``numba``, extra ``fast``). :mod:`toktools.runtime.machine_code` compiles :func:`merge_words_at` once
and keeps its machine code; :class:`toktools.models.bpe.compiled_merge.BulkMerger` calls it. Only that
compilation imports this module.

:func:`toktools.models.bpe.merges.merge_symbols` written over flat arrays, for many words in one call:
the same min-heap of ``(rank, position)`` (lowest rank first, ties to the leftmost), the same
linked list of live symbols, the same test that a popped entry still names the pair at its
position (same new id), so the ids are the same by construction; ``tests/test_fast_ids.py``
checks them against the Python merge and against ``tokenizers``. A word's Python merge costs
~20 µs plus ~2 µs a byte; here it is well under a microsecond a byte, which matters where words
rarely repeat (Chinese runs of text) and on the cold caches of every worker.

Layout: the words' UTF-8 bytes are one ``uint8`` array, word ``w`` being
``data[starts[w]:starts[w + 1]]``; ``byte_ids[b]`` is the id of byte ``b``'s symbol. The merges
are an open-addressing hash table (:class:`toktools.models.bpe.compiled_merge.MergeTable`) keyed by
``left id << 32 | right id``. The caller gives every array, the scratch ones included, so the
kernel allocates nothing and raises nothing: its machine code needs nothing from numba at run
time (see :mod:`toktools.runtime.machine_code`).
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit

from toktools.models.bpe.pair_table import EMPTY_KEY, HASH_MULTIPLIER  # the same hash table layout


@njit(inline="always")
def _slot(table_keys, key, shift):
    """Where ``key`` is (or would go) in the table: linear probing from its Fibonacci hash."""
    mask = len(table_keys) - 1
    h = np.int64((key * HASH_MULTIPLIER) >> shift)
    while table_keys[h] != key and table_keys[h] != EMPTY_KEY:
        h = (h + 1) & mask
    return h


@njit(inline="always")
def _lookup(table_keys, shift, left, right):
    """The slot of pair ``(left, right)``, or -1 if it is no merge."""
    key = (np.uint64(left) << np.uint64(32)) | np.uint64(right)
    h = _slot(table_keys, key, shift)
    return h if table_keys[h] == key else -1


@njit(inline="always")
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


@njit(inline="always")
def _push(heap_keys, heap_new, size, key, new):
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if heap_keys[parent] <= key:
            break
        heap_keys[i], heap_new[i] = heap_keys[parent], heap_new[parent]
        i = parent
    heap_keys[i], heap_new[i] = key, new


@njit(inline="always")
def merge_into(
    data,
    starts,
    byte_ids,
    table_keys,
    table_ranks,
    table_new,
    shift,
    symbols,
    following,
    previous,
    alive,
    heap_keys,
    heap_new,
    ids,
    id_starts,
):
    """Merge every word; returns how many ids it wrote. Word ``w``'s ids are
    ``ids[id_starts[w]:id_starts[w + 1]]``. A heap key is ``rank << 32 | position``, so ordering
    keys orders by rank, then position, as ``tokenizers`` pops them. The scratch arrays hold
    the longest word: ``symbols``, ``following``, ``previous``, ``alive`` one slot a byte, the heap
    three (n - 1 pairs, then at most 2 per merge); ``ids`` one a byte of ``data``."""
    n_words = len(starts) - 1
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
    return out


def merge_words_at(
    n_words,
    n_data,
    data,
    starts,
    byte_ids,
    table_size,
    table_keys,
    table_ranks,
    table_new,
    shift,
    longest,
    symbols,
    following,
    previous,
    alive,
    heap_keys,
    heap_new,
    ids,
    id_starts,
):
    """:func:`merge_into` over raw pointers (the compiled entry point; its parameter types are
    listed in :data:`toktools.models.bpe.compiled_merge._KERNEL`): the arrays' lengths come from the counts
    given, ``longest`` being the longest word in bytes."""
    return merge_into(
        carray(data, (n_data,)),
        carray(starts, (n_words + 1,)),
        carray(byte_ids, (256,)),
        carray(table_keys, (table_size,)),
        carray(table_ranks, (table_size,)),
        carray(table_new, (table_size,)),
        shift,
        carray(symbols, (longest,)),
        carray(following, (longest,)),
        carray(previous, (longest,)),
        carray(alive, (longest,)),
        carray(heap_keys, (3 * longest,)),
        carray(heap_new, (3 * longest,)),
        carray(ids, (n_data,)),
        carray(id_starts, (n_words + 1,)),
    )


@njit(inline="always")
def build_into(n, pairs, values, table_keys, table_ranks, table_new, shift):
    """The merge table filled: merge ``i`` (pair ``pairs[2i], pairs[2i + 1]``, rank and new id
    ``values[2i], values[2i + 1]``) at the first free slot from its home; the pairs are distinct."""
    for h in range(len(table_keys)):
        table_keys[h] = EMPTY_KEY
    for i in range(n):
        key = (np.uint64(pairs[2 * i]) << np.uint64(32)) | np.uint64(pairs[2 * i + 1])
        h = _slot(table_keys, key, shift)
        table_keys[h] = key
        table_ranks[h] = values[2 * i]
        table_new[h] = values[2 * i + 1]
    return n


def build_table_at(n, pairs, values, table_size, table_keys, table_ranks, table_new, shift):
    """:func:`build_into` over raw pointers (parameter types in
    :data:`toktools.models.bpe.compiled_merge._TABLE_KERNEL`): the merge table without NumPy, so
    a batch that reads only ids never imports NumPy."""
    room = max(2 * n, 1)
    return build_into(
        n,
        carray(pairs, (room,)),
        carray(values, (room,)),
        carray(table_keys, (table_size,)),
        carray(table_ranks, (table_size,)),
        carray(table_new, (table_size,)),
        shift,
    )
