"""The Unigram Viterbi of :mod:`toktools.parts.unigram`, compiled (optional: needs ``numba``,
extra ``fast``).

:func:`toktools.parts.unigram.viterbi` stays the readable reference; this is the same loop over
flat arrays, with the same candidates in the same order, the same sums and the same strict ``>``
(so the same tie rule), in f64 as ``tokenizers`` adds or rounded to float32 after every sum as
sentencepiece does. ``tests/test_unigram_viterbi.py`` checks the two give the same paths.
Importing this module fails without numba; :func:`toktools.parts.unigram.compiled_viterbi`
then returns None and the pure-Python loop runs.

Layout: the pieces are a trie over code points. The root's children are one dense array indexed
by code point (every position starts there); deeper edges live in an open-addressing hash table
keyed by ``node * 0x110000 + code point``. ``term_id[node]``/``term_score[node]`` are the piece
ending at a node (-1 if it is only a prefix of longer pieces). Texts are one ``int32`` array of
code points with offsets, so a batch of texts is one call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toktools.runtime.numba_cache import cached_njit

_BASE = 0x110000
_GOLDEN = 0x9E3779B97F4A7C15

#: the word cache serves indexes whose scores (and unknown score) are all below this in
#: magnitude (see :mod:`toktools.models.unigram.word_cache`)
WORD_CACHE_MAX_SCORE = 1e4

#: status codes of :func:`viterbi_batch`
OK, UNK_WITHOUT_ID, UNREACHABLE = 0, 1, 2


@cached_njit(inline="always")
def _slot(key, shift):
    return np.int64((np.uint64(key) * np.uint64(_GOLDEN)) >> np.uint64(shift))


@cached_njit()
def _build(codes, offsets, piece_ids, piece_scores, root, table, shift, term_id, term_score):
    """Insert every piece ``codes[offsets[i]:offsets[i + 1]]`` into the trie; returns the node
    count. Hash slot ``s`` is ``table[2s]`` = key (-1: free), ``table[2s + 1]`` = child: one
    cache line per probe."""
    mask = table.size // 2 - 1
    nodes = 1
    for i in range(offsets.size - 1):
        node = 0
        for k in range(offsets[i], offsets[i + 1]):
            code = codes[k]
            if node == 0:
                child = root[code]
                if child < 0:
                    child = nodes
                    nodes += 1
                    root[code] = child
            else:
                key = node * _BASE + code
                s = _slot(key, shift)
                while True:
                    found = table[2 * s]
                    if found == key:
                        child = table[2 * s + 1]
                        break
                    if found < 0:
                        child = nodes
                        nodes += 1
                        table[2 * s] = key
                        table[2 * s + 1] = child
                        break
                    s = (s + 1) & mask
            node = child
        if offsets[i + 1] > offsets[i]:
            term_id[node] = piece_ids[i]
            term_score[node] = piece_scores[i]
    return nodes


@cached_njit()
def _fill(keys, children, table, shift):
    """Insert the edges ``keys[k] -> children[k]`` into an empty table (as :func:`_build` does)."""
    mask = table.size // 2 - 1
    for k in range(keys.size):
        s = _slot(keys[k], shift)
        while table[2 * s] >= 0:
            s = (s + 1) & mask
        table[2 * s] = keys[k]
        table[2 * s + 1] = children[k]


@cached_njit(inline="always")
def _child(node, code, root, table, shift):
    if node == 0:
        return root[code] if code < root.size else -1
    key = node * _BASE + code
    mask = table.size // 2 - 1
    s = _slot(key, shift)
    while True:
        found = table[2 * s]
        if found == key:
            return table[2 * s + 1]
        if found < 0:
            return -1
        s = (s + 1) & mask


@cached_njit(inline="always")
def _rescale(pos, frontier, score, start):
    """sentencepiece 0.2.3's rescaling at ``pos``: its score subtracted from every score set
    from ``pos`` to ``frontier`` (rounded to float32)."""
    base = score[pos]
    for i in range(pos, frontier + 1):
        if i == pos or start[i] >= 0:
            score[i] = np.float64(np.float32(score[i] - base))


@cached_njit(inline="always")
def _extend(
    codes,
    lo,
    n,
    pos,
    base,
    root,
    table,
    shift,
    term_id,
    term_score,
    unk_id,
    unk_score,
    float32,
    frontier,
    score,
    start,
    ids,
):
    """Every piece that starts at ``pos`` (and the unknown node when no piece of one character
    does) offered to the scores of the positions it ends at; returns the furthest end reached,
    or -1 when an unknown character met a model without ``unk_id``."""
    single = False
    node = 0
    end = pos
    while end < n:
        node = _child(node, codes[lo + end], root, table, shift)
        if node < 0:
            break
        end += 1
        piece = term_id[node]
        if piece < 0:
            continue
        if end == pos + 1:
            single = True
        if end > frontier:
            frontier = end
        cand = term_score[node] + base
        if float32 == 1:
            cand = np.float64(np.float32(cand))
        if start[end] < 0 or cand > score[end]:
            if float32 == 2:
                cand = np.float64(np.float32(cand))
            score[end] = cand
            start[end] = pos
            ids[end] = piece
    if not single:
        end = pos + 1
        if end > frontier:
            frontier = end
        cand = unk_score + base
        if float32 == 1:
            cand = np.float64(np.float32(cand))
        if start[end] < 0 or cand > score[end]:
            if unk_id < 0:
                return -1
            if float32 == 2:
                cand = np.float64(np.float32(cand))
            score[end] = cand
            start[end] = pos
            ids[end] = unk_id
    return frontier


@cached_njit(inline="always")
def _emit(n, start, ids, path, fuse_id, out_id, out_start, out_end, written, counts, t):
    """Backtrack the best path of text ``t`` (``n`` positions) into the outputs from
    ``written`` on; returns the new ``written``, or -1 when no path reaches the end."""
    steps = 0
    end = n
    while end > 0:
        if start[end] < 0:
            return -1
        path[steps] = end
        steps += 1
        end = start[end]
    count = 0
    k = steps - 1
    while k >= 0:
        end = path[k]
        begin = start[end]
        piece = ids[end]
        if piece == fuse_id and count > 0 and out_id[written - 1] == fuse_id and out_end[written - 1] == begin:
            out_end[written - 1] = end
        else:
            out_id[written] = piece
            out_start[written] = begin
            out_end[written] = end
            written += 1
            count += 1
        k -= 1
    counts[t] = count
    return written


@cached_njit()
def viterbi_batch(
    codes,
    offsets,
    root,
    table,
    shift,
    term_id,
    term_score,
    unk_id,
    unk_score,
    float32,
    reset,
    fuse_id,
    out_id,
    out_start,
    out_end,
    counts,
):
    """The best path of every text ``codes[offsets[t]:offsets[t + 1]]``.

    Tokens go to ``out_id``/``out_start``/``out_end`` (character offsets within the text), text
    after text; ``counts[t]`` is how many text ``t`` has. Consecutive nodes whose id is
    ``fuse_id`` become one token (-1: none are fused). Returns ``(status, text)``: ``OK``, or
    the first text where an unknown character met a model without ``unk_id`` (``unk_id < 0``)
    or no path reached the end.

    ``float32``: 0 adds in f64 (``tokenizers``); 1 rounds each sum to float32 before comparing
    (sentencepiece 0.2.3); 2 compares the exact sum with the stored float32 score and stores
    it rounded (sentencepiece 0.2.1, whose sums are ``double``). ``reset`` > 0: sentencepiece
    0.2.3's rescaling -- when the score where a piece starts is beyond ``±reset``, it is
    subtracted from every score set from there to the furthest end reached (rounded to float32),
    so long lines keep float32's precision."""
    longest = 0
    for t in range(offsets.size - 1):
        longest = max(longest, offsets[t + 1] - offsets[t])
    score = np.zeros(longest + 1, dtype=np.float64)
    start = np.empty(longest + 1, dtype=np.int64)
    ids = np.empty(longest + 1, dtype=np.int64)
    path = np.empty(longest + 1, dtype=np.int64)
    written = 0
    for t in range(offsets.size - 1):
        lo = offsets[t]
        n = offsets[t + 1] - lo
        for i in range(n + 1):
            score[i] = 0.0
            start[i] = -1
        frontier = 0
        for pos in range(n):
            base = score[pos]
            if reset > 0.0 and (base < -reset or base > reset):
                _rescale(pos, frontier, score, start)
                base = 0.0
            frontier = _extend(
                codes,
                lo,
                n,
                pos,
                base,
                root,
                table,
                shift,
                term_id,
                term_score,
                unk_id,
                unk_score,
                float32,
                frontier,
                score,
                start,
                ids,
            )
            if frontier < 0:
                return UNK_WITHOUT_ID, t
        written = _emit(n, start, ids, path, fuse_id, out_id, out_start, out_end, written, counts, t)
        if written < 0:
            return UNREACHABLE, t
    return OK, -1


def code_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All the texts' code points in one ``int32`` array, and where each text starts."""
    codes = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.int32)
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
    return codes, offsets
