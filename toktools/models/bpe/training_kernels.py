"""The BPE trainer's merge loop compiled, as numba source (optional: needs ``numba``, extra
``fast``). :mod:`toktools.runtime.machine_code` compiles :func:`train_merges_at` once and keeps
its machine code; :mod:`toktools.models.bpe.compiled_training` calls it. Only that compilation
imports this module.

The loop is ``tokenizers``' ``BpeTrainer`` under the lean engine's assumption (no merge
produces a token string already in the vocabulary; :class:`toktools.models.bpe.trainer._LeanEngine`
explains why it is exact then, and the caller checks it afterwards):

* words are runs of symbol ids in one array, rewritten in place, left to right and
  non-overlapping, with ``tokenizers``' count changes per occurrence (``Word::merge``);
* pair counts live in an open-addressing hash table keyed by ``left << 32 | right`` (the same
  layout as :mod:`toktools.models.bpe.pair_table`); each pair keeps a linked list of the
  words where it was counted up (``tokenizers``' positions, possibly naming a word twice);
* the queue is a binary heap ordered by count (highest first), then pair (smallest first),
  with lazy invalidation: a stale top is pushed back with its current count, or dropped when
  that is below the threshold. Pairs formed below the threshold are never queued.

Every array comes from the caller and is checked against its capacity: the kernel allocates
nothing and raises nothing, and returns a negative code when an array is too small (the caller
retries with larger ones).
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit

#: Fibonacci hashing, as the hash tables of :mod:`toktools.models.bpe.pair_table` (not
#: imported from there: the lowered IR shipped in ``toktools/tables/lowered_kernels.py`` is keyed
#: by the sources of this module and those it imports, and only this one decides the kernel)
HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)

TABLE_FULL = -1
NODES_FULL = -2
HEAP_FULL = -3


#: a slot of the pair table: four int64 in a row (one cache line holds two slots)
KEY, COUNT, HEAD, TAIL = 0, 1, 2, 3
EMPTY = -1  # no key: keys are ``left << 32 | right`` with ids below 2**31


@njit(inline="always")
def _find(table, shift, key):
    """The slot of ``key``, or the empty slot where it would go."""
    mask = (len(table) >> 2) - 1
    h = np.int64((np.uint64(key) * HASH_MULTIPLIER) >> shift)
    while table[4 * h] != key and table[4 * h] != EMPTY:
        h = (h + 1) & mask
    return 4 * h


@njit(inline="always")
def _better(count_a, pair_a, count_b, pair_b):
    """Entry a comes out of the queue before entry b."""
    return count_a > count_b or (count_a == count_b and pair_a < pair_b)


@njit(inline="always")
def _sift_down(heap, size, i):
    """Heap entries are (count, pair) in two int64 in a row."""
    count, pair = heap[2 * i], heap[2 * i + 1]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _better(heap[2 * child + 2], heap[2 * child + 3], heap[2 * child], heap[2 * child + 1]):
            child += 1
        if not _better(heap[2 * child], heap[2 * child + 1], count, pair):
            break
        heap[2 * i], heap[2 * i + 1] = heap[2 * child], heap[2 * child + 1]
        i = child
    heap[2 * i], heap[2 * i + 1] = count, pair


@njit(inline="always")
def _sift_up(heap, i):
    count, pair = heap[2 * i], heap[2 * i + 1]
    while i > 0:
        parent = (i - 1) >> 1
        if not _better(count, pair, heap[2 * parent], heap[2 * parent + 1]):
            break
        heap[2 * i], heap[2 * i + 1] = heap[2 * parent], heap[2 * parent + 1]
        i = parent
    heap[2 * i], heap[2 * i + 1] = count, pair


@njit(inline="always")
def _note_word(table, slot, word, nodes, state):
    """Append ``word`` to the pair's list of words (unless it is already the last one); a node
    is (word, next node) in two int64 in a row. ``state[1]`` counts the nodes used; returns
    False when they are all used."""
    last = table[slot + TAIL]
    if last >= 0 and nodes[2 * last] == word:
        return True
    node = state[1]
    if 2 * node + 1 >= len(nodes):
        return False
    state[1] = node + 1
    nodes[2 * node] = word
    nodes[2 * node + 1] = -1
    if last < 0:
        table[slot + HEAD] = node
    else:
        nodes[2 * last + 1] = node
    table[slot + TAIL] = node
    return True


@njit(inline="always")
def _slot_of(table, shift, key, state):
    """The slot of ``key``, inserted with count 0 if new; -1 when the table would pass half full.
    ``state[0]`` counts the slots used."""
    h = _find(table, shift, key)
    if table[h] == EMPTY:
        if 2 * 4 * (state[0] + 1) > len(table):
            return -1
        state[0] += 1
        table[h + KEY] = key
        table[h + COUNT] = 0
        table[h + HEAD] = -1
        table[h + TAIL] = -1
    return h


@njit(inline="always")
def _change(table, shift, key, amount, word, nodes, state):
    """Add ``amount`` to a pair's count; when it is counted up, note the word. Returns the slot,
    or a negative code when an array is full."""
    h = _slot_of(table, shift, key, state)
    if h < 0:
        return TABLE_FULL
    table[h + COUNT] += amount
    if amount > 0 and not _note_word(table, h, word, nodes, state):
        return NODES_FULL
    return h


@njit(inline="always")
def _replace_pair(old_key, new_key, allowed, count, word, table, shift, nodes, heap, staged_end, state):
    """One occurrence of a merge in ``word`` (seen ``count`` times) turns its neighbouring pair
    ``old_key`` into ``new_key`` (``Word::merge``'s two count changes): the old pair counted
    down, the new one up unless it would pass ``max_length`` (``allowed`` False). A new pair
    formed now is staged at heap entry ``staged_end``, past the queue. Returns how many entries
    were staged (0 or 1), or a negative code when an array is full."""
    if _change(table, shift, old_key, -count, word, nodes, state) < 0:
        return TABLE_FULL
    if not allowed:
        return 0
    h = _slot_of(table, shift, new_key, state)
    if h < 0:
        return TABLE_FULL
    staged = 0
    if table[h + TAIL] < 0:  # formed now (never counted up before): staged
        if staged_end >= len(heap) // 2:
            return HEAP_FULL
        heap[2 * staged_end + 1] = new_key
        staged = 1
    table[h + COUNT] += count
    if not _note_word(table, h, word, nodes, state):
        return NODES_FULL
    return staged


def train_merges_at(
    n_words,
    n_symbols,
    symbols,
    starts,
    ends,
    word_counts,
    n_lengths,
    lengths,
    first_new,
    vocab_size,
    threshold,
    max_length,
    table_size,
    table,
    shift,
    node_cap,
    nodes,
    heap_cap,
    heap,
    visited,
    merge_cap,
    merge_pairs,
    merge_counts,
    state,
):
    """Learn merges until the vocabulary has ``vocab_size`` ids (``first_new`` before the
    first merge) or no queued pair is left; returns how many (``merge_pairs[k]`` is merge
    ``k``'s ``left << 32 | right``, its new id ``first_new + k``), or a negative code when an
    array is too small. ``state``: slots used, nodes used, then the merges done.

    The arguments are raw pointers and their lengths (the parameter types are listed in
    :data:`toktools.models.bpe.compiled_training._KERNEL`): ``table_size`` slots of four int64,
    ``node_cap`` nodes and ``heap_cap`` heap entries of two. One function, not a wrapper around
    one taking arrays: numba's inlining of a function this size took most of the compile time."""
    symbols = carray(symbols, (n_symbols,))
    starts = carray(starts, (n_words + 1,))
    ends = carray(ends, (n_words,))
    word_counts = carray(word_counts, (n_words,))
    lengths = carray(lengths, (n_lengths,))
    table = carray(table, (4 * table_size,))
    nodes = carray(nodes, (2 * node_cap,))
    heap = carray(heap, (2 * heap_cap,))
    visited = carray(visited, (n_words,))
    merge_pairs = carray(merge_pairs, (merge_cap,))
    merge_counts = carray(merge_counts, (merge_cap,))
    state = carray(state, (3,))
    for h in range(0, len(table), 4):
        table[h] = EMPTY
    # 1. initial pair counts, and the words of each pair
    for w in range(n_words):
        visited[w] = -1
        ends[w] = starts[w + 1]
        count = word_counts[w]
        for i in range(starts[w], starts[w + 1] - 1):
            h = _change(table, shift, (np.int64(symbols[i]) << 32) | np.int64(symbols[i + 1]), count, w, nodes, state)
            if h < 0:
                return h
    # 2. the queue: every pair at or above the threshold
    size = 0
    for h in range(0, len(table), 4):
        if table[h] != EMPTY and table[h + COUNT] >= threshold:
            if size >= heap_cap:
                return HEAP_FULL
            heap[2 * size] = table[h + COUNT]
            heap[2 * size + 1] = table[h]
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap, size, i)
    # 3. the merge loop
    done = 0
    while first_new + done < vocab_size:
        found = False
        pair = 0
        current = 0
        top_slot = 0
        while size > 0:
            pair = heap[1]
            top_slot = _find(table, shift, pair)
            current = table[top_slot + COUNT]
            found = heap[0] == current
            if found or current < threshold:  # taken, or stale and no longer mergeable: out
                size -= 1
                heap[0], heap[1] = heap[2 * size], heap[2 * size + 1]
            else:  # stale: back with its current count
                heap[0] = current
            if size > 0:  # (one call: numba copies an inlined function at each)
                _sift_down(heap, size, 0)
            if found:
                break
        if not found:
            break
        left = pair >> 32
        right = pair & 0xFFFFFFFF
        new = first_new + done
        new_length = lengths[left] + lengths[right]
        lengths[new] = new_length
        merge_pairs[done] = pair
        merge_counts[done] = current
        done += 1
        state[2] = done
        staged = 0  # pairs formed by this merge, kept past the heap's end until their counts are final
        node = table[top_slot + HEAD]
        while node >= 0:
            w = nodes[2 * node]
            node = nodes[2 * node + 1]
            if visited[w] == new:
                continue
            visited[w] = new
            count = word_counts[w]
            begin = starts[w]
            end = ends[w]
            r = begin
            o = begin
            while r < end:
                if r + 1 < end and symbols[r] == left and symbols[r + 1] == right:
                    if o > begin:  # the symbol before, already rewritten
                        before = np.int64(symbols[o - 1])
                        formed = _replace_pair(
                            (before << 32) | left,
                            (before << 32) | new,
                            lengths[before] + new_length < max_length,
                            count,
                            w,
                            table,
                            shift,
                            nodes,
                            heap,
                            size + staged,
                            state,
                        )
                        if formed < 0:
                            return formed
                        staged += formed
                    if r + 2 < end:  # the symbol after, not yet rewritten
                        after = np.int64(symbols[r + 2])
                        formed = _replace_pair(
                            (right << 32) | after,
                            (new << 32) | after,
                            lengths[after] + new_length < max_length,
                            count,
                            w,
                            table,
                            shift,
                            nodes,
                            heap,
                            size + staged,
                            state,
                        )
                        if formed < 0:
                            return formed
                        staged += formed
                    symbols[o] = new
                    o += 1
                    r += 2
                else:
                    symbols[o] = symbols[r]
                    o += 1
                    r += 1
            ends[w] = o
        # the formed pairs join the queue with their final counts (those below the threshold never will)
        base = size
        for j in range(staged):
            key = heap[2 * (base + j) + 1]
            amount = table[_find(table, shift, key) + COUNT]
            if amount >= threshold:
                heap[2 * size] = amount
                heap[2 * size + 1] = key
                _sift_up(heap, size)
                size += 1
    return done
