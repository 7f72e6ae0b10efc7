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
  layout as :mod:`toktools.models.bpe.vectorized_merge`); each pair keeps a linked list of the
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

from toktools.models.bpe.vectorized_merge import EMPTY_KEY, HASH_MULTIPLIER  # the same hash table layout

TABLE_FULL = -1
NODES_FULL = -2
HEAP_FULL = -3


@njit(inline="always")
def _find(keys, shift, key):
    """The slot of ``key``, or the empty slot where it would go."""
    mask = len(keys) - 1
    h = np.int64((key * HASH_MULTIPLIER) >> shift)
    while keys[h] != key and keys[h] != EMPTY_KEY:
        h = (h + 1) & mask
    return h


@njit(inline="always")
def _better(count_a, pair_a, count_b, pair_b):
    """Entry a comes out of the queue before entry b."""
    return count_a > count_b or (count_a == count_b and pair_a < pair_b)


@njit(inline="always")
def _sift_down(heap_count, heap_pair, size, i):
    count, pair = heap_count[i], heap_pair[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _better(
            heap_count[child + 1], heap_pair[child + 1], heap_count[child], heap_pair[child]
        ):
            child += 1
        if not _better(heap_count[child], heap_pair[child], count, pair):
            break
        heap_count[i], heap_pair[i] = heap_count[child], heap_pair[child]
        i = child
    heap_count[i], heap_pair[i] = count, pair


@njit(inline="always")
def _sift_up(heap_count, heap_pair, i):
    count, pair = heap_count[i], heap_pair[i]
    while i > 0:
        parent = (i - 1) >> 1
        if not _better(count, pair, heap_count[parent], heap_pair[parent]):
            break
        heap_count[i], heap_pair[i] = heap_count[parent], heap_pair[parent]
        i = parent
    heap_count[i], heap_pair[i] = count, pair


@njit(inline="always")
def _note_word(slot, word, head, tail, node_word, node_next, state):
    """Append ``word`` to the pair's list of words (unless it is already the last one).
    ``state[1]`` counts the nodes used; returns False when they are all used."""
    last = tail[slot]
    if last >= 0 and node_word[last] == word:
        return True
    node = state[1]
    if node >= len(node_word):
        return False
    state[1] = node + 1
    node_word[node] = word
    node_next[node] = -1
    if last < 0:
        head[slot] = node
    else:
        node_next[last] = node
    tail[slot] = node
    return True


@njit(inline="always")
def _slot_of(keys, shift, key, counts, head, tail, state):
    """The slot of ``key``, inserted with count 0 if new; -1 when the table would pass half full.
    ``state[0]`` counts the slots used."""
    h = _find(keys, shift, key)
    if keys[h] == EMPTY_KEY:
        if 2 * (state[0] + 1) > len(keys):
            return -1
        state[0] += 1
        keys[h] = key
        counts[h] = 0
        head[h] = -1
        tail[h] = -1
    return h


@njit(inline="always")
def train_into(
    symbols,
    starts,
    ends,
    word_counts,
    lengths,
    first_new,
    vocab_size,
    threshold,
    max_length,
    keys,
    shift,
    pair_counts,
    head,
    tail,
    node_word,
    node_next,
    heap_count,
    heap_pair,
    visited,
    merge_pairs,
    merge_counts,
    state,
):
    """Learn merges until the vocabulary has ``vocab_size`` ids (``first_new`` before the
    first merge) or no queued pair is left; returns how many (``merge_pairs[k]`` is merge
    ``k``'s ``left << 32 | right``, its new id ``first_new + k``), or a negative code when an
    array is too small. ``state``: slots used, nodes used, then the merges done."""
    n_words = len(word_counts)
    low = np.uint64(0xFFFFFFFF)
    shift32 = np.uint64(32)
    # 1. initial pair counts, and the words of each pair
    for w in range(n_words):
        visited[w] = -1
        ends[w] = starts[w + 1]
        count = word_counts[w]
        for i in range(starts[w], starts[w + 1] - 1):
            key = (np.uint64(symbols[i]) << shift32) | np.uint64(symbols[i + 1])
            h = _slot_of(keys, shift, key, pair_counts, head, tail, state)
            if h < 0:
                return TABLE_FULL
            pair_counts[h] += count
            if not _note_word(h, w, head, tail, node_word, node_next, state):
                return NODES_FULL
    # 2. the queue: every pair at or above the threshold
    size = 0
    for h in range(len(keys)):
        if keys[h] != EMPTY_KEY and pair_counts[h] >= threshold:
            if size >= len(heap_count):
                return HEAP_FULL
            heap_count[size] = pair_counts[h]
            heap_pair[size] = keys[h]
            size += 1
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(heap_count, heap_pair, size, i)
    # 3. the merge loop
    done = 0
    while first_new + done < vocab_size:
        found = False
        pair = np.uint64(0)
        current = 0
        top_slot = 0
        while size > 0:
            pair = heap_pair[0]
            top_slot = _find(keys, shift, pair)
            current = pair_counts[top_slot]
            if heap_count[0] == current:
                found = True
                size -= 1
                if size > 0:
                    heap_count[0], heap_pair[0] = heap_count[size], heap_pair[size]
                    _sift_down(heap_count, heap_pair, size, 0)
                break
            if current >= threshold:  # stale: back with its current count
                heap_count[0] = current
                _sift_down(heap_count, heap_pair, size, 0)
            else:
                size -= 1
                if size > 0:
                    heap_count[0], heap_pair[0] = heap_count[size], heap_pair[size]
                    _sift_down(heap_count, heap_pair, size, 0)
        if not found:
            break
        left = np.int64(pair >> shift32)
        right = np.int64(pair & low)
        new = first_new + done
        new_length = lengths[left] + lengths[right]
        lengths[new] = new_length
        merge_pairs[done] = pair
        merge_counts[done] = current
        done += 1
        state[2] = done
        staged = 0  # pairs formed by this merge, kept past the heap's end until their counts are final
        node = head[top_slot]
        while node >= 0:
            w = node_word[node]
            node = node_next[node]
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
                        before = symbols[o - 1]
                        h = _slot_of(
                            keys,
                            shift,
                            (np.uint64(before) << shift32) | np.uint64(left),
                            pair_counts,
                            head,
                            tail,
                            state,
                        )
                        if h < 0:
                            return TABLE_FULL
                        pair_counts[h] -= count
                        if lengths[before] + new_length < max_length:
                            key = (np.uint64(before) << shift32) | np.uint64(new)
                            h = _slot_of(keys, shift, key, pair_counts, head, tail, state)
                            if h < 0:
                                return TABLE_FULL
                            if tail[h] < 0:  # formed now: staged
                                if size + staged >= len(heap_pair):
                                    return HEAP_FULL
                                heap_pair[size + staged] = key
                                staged += 1
                            pair_counts[h] += count
                            if not _note_word(h, w, head, tail, node_word, node_next, state):
                                return NODES_FULL
                    if r + 2 < end:  # the symbol after, not yet rewritten
                        after = symbols[r + 2]
                        h = _slot_of(
                            keys,
                            shift,
                            (np.uint64(right) << shift32) | np.uint64(after),
                            pair_counts,
                            head,
                            tail,
                            state,
                        )
                        if h < 0:
                            return TABLE_FULL
                        pair_counts[h] -= count
                        if lengths[after] + new_length < max_length:
                            key = (np.uint64(new) << shift32) | np.uint64(after)
                            h = _slot_of(keys, shift, key, pair_counts, head, tail, state)
                            if h < 0:
                                return TABLE_FULL
                            if tail[h] < 0:
                                if size + staged >= len(heap_pair):
                                    return HEAP_FULL
                                heap_pair[size + staged] = key
                                staged += 1
                            pair_counts[h] += count
                            if not _note_word(h, w, head, tail, node_word, node_next, state):
                                return NODES_FULL
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
            key = heap_pair[base + j]
            amount = pair_counts[_find(keys, shift, key)]
            if amount >= threshold:
                heap_pair[size] = key
                heap_count[size] = amount
                _sift_up(heap_count, heap_pair, size)
                size += 1
    return done


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
    keys,
    shift,
    pair_counts,
    head,
    tail,
    node_cap,
    node_word,
    node_next,
    heap_cap,
    heap_count,
    heap_pair,
    visited,
    merge_cap,
    merge_pairs,
    merge_counts,
    state,
):
    """:func:`train_into` over raw pointers (the compiled entry point; its parameter types are
    listed in :data:`toktools.models.bpe.compiled_training._KERNEL`)."""
    return train_into(
        carray(symbols, (n_symbols,)),
        carray(starts, (n_words + 1,)),
        carray(ends, (n_words,)),
        carray(word_counts, (n_words,)),
        carray(lengths, (n_lengths,)),
        first_new,
        vocab_size,
        threshold,
        max_length,
        carray(keys, (table_size,)),
        shift,
        carray(pair_counts, (table_size,)),
        carray(head, (table_size,)),
        carray(tail, (table_size,)),
        carray(node_word, (node_cap,)),
        carray(node_next, (node_cap,)),
        carray(heap_count, (heap_cap,)),
        carray(heap_pair, (heap_cap,)),
        carray(visited, (n_words,)),
        carray(merge_pairs, (merge_cap,)),
        carray(merge_counts, (merge_cap,)),
        carray(state, (3,)),
    )
