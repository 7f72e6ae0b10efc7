"""BertPreTokenizer's words and WordPiece's greedy longest match over a whole batch, compiled
(optional: needs ``numba``, extra ``fast``). :mod:`toktools.runtime.machine_code` compiles
:func:`wordpiece_at` once and keeps its machine code; :mod:`toktools.models.wordpiece.compiled`
calls it. Only that compilation imports this module.

Input: the batch's normalised texts end to end as code points (joined by spaces), each code
point's class (``classes``: 0 whitespace, 1 punctuation, 2 other; a word is one punctuation
character or a run of others, ``[P]|[^P W]+``), and the vocabulary as a hash table: entry ``e``
is the code points ``entry_points[entry_starts[e]:entry_starts[e + 1]]``, found at a word's
start (``flag`` 0: a whole token) or after it (``flag`` 1: a token with the continuing prefix,
the prefix cut off). Its key is a polynomial hash of the code points, times 2, plus the flag
(arithmetic modulo 2**64); a key found is checked against the entry's code points, so a
collision never gives a wrong piece. The match is :func:`toktools.models.wordpiece.model.wordpiece_split`'s:
from each position the longest entry, a word longer than ``max_chars`` or with a position where
nothing matches is one ``unk_id`` over the whole word. Output per token: its id and its span in
the joined text. ``tests/test_lazy_wordpiece.py`` checks the encodings against ``tokenizers``.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit

from toktools.models.bpe.pair_table import EMPTY_KEY, HASH_MULTIPLIER  # the same hash table layout


@njit(inline="always")
def _find(table_keys, table_index, shift, key, flag, entry_starts, entry_points, entry_flags, points, start, end):
    """The entry equal to ``points[start:end]`` with ``flag``, or -1."""
    mask = len(table_keys) - 1
    h = np.int64((key * HASH_MULTIPLIER) >> shift)
    while table_keys[h] != EMPTY_KEY:
        if table_keys[h] == key:
            e = table_index[h]
            lo = entry_starts[e]
            if entry_flags[e] != flag or entry_starts[e + 1] - lo != end - start:
                return -1
            for k in range(end - start):
                if entry_points[lo + k] != points[start + k]:
                    return -1
            return e
        h = (h + 1) & mask
    return -1


@njit(inline="always")
def wordpiece_into(
    points,
    classes,
    table_keys,
    table_index,
    shift,
    entry_starts,
    entry_points,
    entry_flags,
    entry_ids,
    base,
    unk_id,
    max_chars,
    longest,
    hashes,
    powers,
    ids,
    token_starts,
    token_ends,
):
    """Every word's pieces: ``ids``, ``token_starts``, ``token_ends`` (positions in ``points``);
    returns the number of tokens. ``hashes`` and ``powers`` are scratch of ``max_chars + 1``."""
    powers[0] = np.uint64(1)
    for k in range(1, len(powers)):
        powers[k] = powers[k - 1] * base
    n_points = len(points)
    count = 0
    i = 0
    while i < n_points:
        kind = classes[points[i]]
        if kind == 0:
            i += 1
            continue
        word_end = i + 1
        if kind == 2:
            while word_end < n_points and classes[points[word_end]] == 2:
                word_end += 1
        n = word_end - i
        first = count
        unknown = n > max_chars
        if not unknown:
            hashes[0] = np.uint64(0)
            for k in range(n):
                hashes[k + 1] = hashes[k] * base + np.uint64(points[i + k])
            start = 0
            while start < n:
                flag = 1 if start > 0 else 0
                end = min(n, start + longest)
                found = -1
                while end > start:
                    key = (hashes[end] - hashes[start] * powers[end - start]) * np.uint64(2) + np.uint64(flag)
                    found = _find(
                        table_keys,
                        table_index,
                        shift,
                        key,
                        flag,
                        entry_starts,
                        entry_points,
                        entry_flags,
                        points,
                        i + start,
                        i + end,
                    )
                    if found >= 0:
                        break
                    end -= 1
                if found < 0:
                    unknown = True
                    break
                ids[count] = entry_ids[found]
                token_starts[count] = i + start
                token_ends[count] = i + end
                count += 1
                start = end
        if unknown:  # the pieces found before are dropped
            count = first
            ids[count] = unk_id
            token_starts[count] = i
            token_ends[count] = word_end
            count += 1
        i = word_end
    return count


def wordpiece_at(
    n_points,
    points,
    classes,
    table_size,
    table_keys,
    table_index,
    shift,
    n_entries,
    n_entry_points,
    entry_starts,
    entry_points,
    entry_flags,
    entry_ids,
    base,
    unk_id,
    max_chars,
    longest,
    hashes,
    powers,
    ids,
    token_starts,
    token_ends,
):
    """:func:`wordpiece_into` over raw pointers (the compiled entry point; its parameter types
    are listed in :data:`toktools.models.wordpiece.compiled._KERNEL`): the output arrays have
    room for ``n_points`` tokens, the scratch ones for ``max_chars + 1`` values."""
    room = max(n_points, 1)
    return wordpiece_into(
        carray(points, (room,))[:n_points],
        carray(classes, (0x110000,)),
        carray(table_keys, (table_size,)),
        carray(table_index, (table_size,)),
        shift,
        carray(entry_starts, (n_entries + 1,)),
        carray(entry_points, (max(n_entry_points, 1),)),
        carray(entry_flags, (max(n_entries, 1),)),
        carray(entry_ids, (max(n_entries, 1),)),
        base,
        unk_id,
        max_chars,
        longest,
        carray(hashes, (max_chars + 1,)),
        carray(powers, (max_chars + 1,)),
        carray(ids, (room,)),
        carray(token_starts, (room,)),
        carray(token_ends, (room,)),
    )


@njit(inline="always")
def table_into(entry_starts, entry_points, entry_flags, base, table_keys, table_index, shift):
    """The vocabulary's hash table filled: entry ``e`` under its key (the polynomial hash of its
    code points, as :func:`wordpiece_into` computes a piece's, times 2, plus its flag) at the
    first free slot from its home. Returns 0, or -1 where two entries share a key (or a key is
    the empty slot's): the model then goes the Python way."""
    mask = len(table_keys) - 1
    for h in range(len(table_keys)):
        table_keys[h] = EMPTY_KEY
    for e in range(len(entry_starts) - 1):
        key = np.uint64(0)
        for k in range(entry_starts[e], entry_starts[e + 1]):
            key = key * base + np.uint64(entry_points[k])
        key = key * np.uint64(2) + np.uint64(entry_flags[e])
        if key == EMPTY_KEY:
            return -1
        h = np.int64((key * HASH_MULTIPLIER) >> shift)
        while table_keys[h] != EMPTY_KEY:
            if table_keys[h] == key:
                return -1
            h = (h + 1) & mask
        table_keys[h] = key
        table_index[h] = e
    return 0


def wordpiece_table_at(
    n_entries, n_entry_points, entry_starts, entry_points, entry_flags, base, table_size, table_keys, table_index, shift
):
    """:func:`table_into` over raw pointers (parameter types in
    :data:`toktools.models.wordpiece.compiled._TABLE_KERNEL`): the table without NumPy, which
    a batch that reads only ids never imports."""
    return table_into(
        carray(entry_starts, (n_entries + 1,)),
        carray(entry_points, (max(n_entry_points, 1),)),
        carray(entry_flags, (max(n_entries, 1),)),
        base,
        carray(table_keys, (table_size,)),
        carray(table_index, (table_size,)),
        shift,
    )
