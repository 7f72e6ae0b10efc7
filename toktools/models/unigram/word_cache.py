"""sentencepiece 0.2.3's whole-line float32 Viterbi (:func:`~toktools.models.unigram.compiled_viterbi.viterbi_batch`
with ``float32=1``), with each ``▁word``'s path reused when float32 rounding cannot change it.

Why a plain per-word cache is wrong: sentencepiece adds float32 scores over the whole line, so
the rounding inside a word depends on the running score where the word starts, and a near-tie
inside a word can break either way depending on where the word stands in the line (on long
documents, a naive per-word cache changed ids on 2 of 12). The cache here stores, for each
word, its exactly best path and the margin to its second-best path, and reuses the path only
where the margin proves the float32 Viterbi picks it.

**The rule.** Let no piece hold ``▁`` after its first character and no score reach
:data:`MAX_SCORE` in magnitude (:attr:`CompiledIndex.by_word`, checked when the index is built). A *word* is a segment ``[b, e)`` of the normalised line that
starts at ``b = 0`` or at a ``▁`` and ends before the next ``▁`` (or at the end). No piece and
no unknown node (one character) crosses ``b``, so at ``b`` the kernel's frontier is ``b`` and
the state of the line is the single float32 ``S = V[b]`` (after the ±reset at ``b``, which the
kernel applies first). Inside the word, the kernel is the Viterbi of the word alone, started
at ``S`` instead of 0. For the word, with every piece score (float32 values) added *exactly*
(f64, see below), let ``Q*`` be the best path, ``k*`` its pieces, ``m`` the margin to the
second-best path (a 2-best Viterbi; equal scores give ``m = 0``), ``n`` the word's
characters and ``R = max_p |best(p)|`` over every position ``p`` of the word (the exact best
score of a path from ``b`` to ``p``). The kernel's path is ``Q*`` whenever

    ``|S| + R + 1 < min(C, 2^17, reset)``, where ``C = 2^(t+24)`` and ``2^t`` is the largest power
    of two below ``g = 2(m - 1e-6) / (n + k*)``.

**Proof.** Write ``fl`` for rounding to float32 (to nearest: monotone) and ``V[p]`` for the
kernel's score at ``p``, ``V[e] = max`` over candidates ``fl(V[p] + s)``. (1) For any path
``Q`` from ``b`` to ``p``, let ``F_Q`` be its float32 sum evaluated step by step from ``S``.
By induction over ``Q``'s steps and the monotonicity of ``fl(x + s)`` in ``x``,
``V[p] >= F_Q(p)``; and the path ``P`` the kernel backtracks from ``e`` has
``V[e] = F_P(e)``. (2) Each step's rounding error is at most ``ulp(M)/2`` when every value is
below ``M`` in magnitude, so ``|F_Q(p) - S - exact(Q)| <= k_Q ulp(M)/2``. Hence
``exact(Q*) - exact(P) <= (k_P + k*) ulp(M)/2 <= (n + k*) ulp(M)/2`` (a piece covers at
least one character). If ``P != Q*``, the left side is at least ``m``: so ``P = Q*`` once
``ulp(M) < 2m / (n + k*)``. (3) Every value met is below ``M = |S| + R + 1`` in magnitude:
by (1) and (2), ``|V[p]| <= |S| + |best(p)| + n ulp/2``, and ``n ulp/2 < 1`` for words of at
most :data:`MAX_WORD` characters, as ``M < 2^17`` keeps ``ulp(M) <= 2^-7``. ``M < 2^(t+24)`` gives
``ulp(M) <= 2^t < g``. (4) ``M <= reset`` means no ``V[p]`` inside the word passes ±reset,
so the kernel rescales nothing inside it and (1)-(3) describe what it does. Then the
kernel's ``V`` along ``Q*`` is ``Q*``'s scores added one by one in float32 from ``S``,
which is what the cache writes, so ``V[e]`` -- the next word's ``S`` -- is exact too.
The f64 sums of the 2-best are within 1e-8 of the exact ones (at most 64 terms, every score
below :data:`MAX_SCORE` in magnitude, so every partial sum below 2^20 and each f64 rounding
below 2^-33), which the ``1e-6`` in ``g`` covers. A word that fails the test (or
holds a position no path reaches, or is longer than :data:`MAX_WORD`) runs the kernel's own
loop, position by position.

``tests/test_unigram_word_cache.py`` checks the cached kernel against the plain one and
against sentencepiece, on near-ties built to sit within an ulp at large running scores.
"""

from __future__ import annotations

import numpy as np

from toktools.models.unigram.compiled_viterbi import (
    OK,
    UNK_WITHOUT_ID,
    UNREACHABLE,
    WORD_CACHE_MAX_SCORE,
    _child,
    _emit,
    _extend,
    _rescale,
)
from toktools.runtime.numba_cache import cached_njit

#: longest word whose path is cached (the bound of step (3) needs fewer than 256)
MAX_WORD = 64
#: the cache serves models whose scores (and unknown score) are all below this in magnitude
MAX_SCORE = WORD_CACHE_MAX_SCORE
#: ``▁``
WORD_MARK = 0x2581
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3

# columns of WordCache.entries
_HASH, _CODE_LO, _LENGTH, _PIECE_LO, _PIECES = range(5)
# WordCache.used: entries, pool use, and how many words took a cached path / the kernel's loop
_ENTRIES, _CODES, _PIECES_USED, _HITS, _REFUSED = range(5)


class WordCache:
    """Cached words of one index and one rule (unk id and score, reset), kept across calls; it
    stops growing when full (a word not in it then takes the kernel's loop)."""

    def __init__(self, entries: int = 1 << 18, codes: int = 1 << 21, pieces: int = 1 << 20) -> None:
        self.slots = np.zeros(4 * entries, dtype=np.int32)  # entry + 1; load <= 1/4
        self.entries = np.zeros((entries, 5), dtype=np.int64)
        self.cap = np.zeros(entries, dtype=np.float64)
        self.codes = np.zeros(codes, dtype=np.int32)
        self.piece_ids = np.zeros(pieces, dtype=np.int32)
        self.piece_ends = np.zeros(pieces, dtype=np.int32)
        self.piece_scores = np.zeros(pieces, dtype=np.float64)
        self.used = np.zeros(5, dtype=np.int64)
        # the 2-best Viterbi's rows (best, second best, last piece's score; its start and id)
        self.scratch_scores = np.zeros((3, MAX_WORD + 1), dtype=np.float64)
        self.scratch_links = np.zeros((2, MAX_WORD + 1), dtype=np.int64)

    @property
    def hits(self) -> int:
        """Words whose cached path was written."""
        return int(self.used[_HITS])

    @property
    def refused(self) -> int:
        """Cached words whose margin was too small where they stood (the kernel's loop ran)."""
        return int(self.used[_REFUSED])

    def arrays(self) -> tuple[np.ndarray, ...]:
        """What the kernel takes (one tuple argument)."""
        return (
            self.slots,
            self.entries,
            self.cap,
            self.codes,
            self.piece_ids,
            self.piece_ends,
            self.piece_scores,
            self.used,
            self.scratch_scores,
            self.scratch_links,
        )


@cached_njit(inline="always")
def _offer(end, first, second, origin, piece, score, best, runner, back_start, back_id, back_score):
    """Two candidates (``first >= second``, by a piece of ``score``) for the best two path
    scores ending at ``end``."""
    if first > best[end]:
        runner[end] = max(best[end], second)
        best[end] = first
        back_start[end] = origin
        back_id[end] = piece
        back_score[end] = score
    elif first > runner[end]:
        runner[end] = first


@cached_njit(inline="always")
def _word_entry(codes, lo, size, root, table, shift, term_id, term_score, unk_id, unk_score, reset, cache_arrays):
    """The 2-best Viterbi of the word ``codes[lo:lo + size]`` (f64, from 0) and its cache
    entry; returns its index, or -1 when the cache is full."""
    slots, entries, cap, pool_codes, piece_ids, piece_ends, piece_scores, used, scores, links = cache_arrays
    if used[_ENTRIES] >= entries.shape[0] or used[_CODES] + size > pool_codes.size:
        return -1
    if used[_PIECES_USED] + size > piece_ids.size:
        return -1
    best, runner, back_score = scores[0], scores[1], scores[2]
    back_start, back_id = links[0], links[1]
    for pos in range(size + 1):
        best[pos] = -np.inf
        runner[pos] = -np.inf
        back_start[pos] = -1
    best[0] = 0.0
    usable = True
    for pos in range(size):
        if pos > 0 and back_start[pos] < 0:
            usable = False  # a position no path reaches: the kernel's own loop decides
            break
        single = False
        node = 0
        end = pos
        while end < size:
            node = _child(node, codes[lo + end], root, table, shift)
            if node < 0:
                break
            end += 1
            piece = term_id[node]
            if piece < 0:
                continue
            if end == pos + 1:
                single = True
            s = term_score[node]
            _offer(end, best[pos] + s, runner[pos] + s, pos, piece, s, best, runner, back_start, back_id, back_score)
        if not single:
            if unk_id < 0:
                usable = False
                break
            first, second = best[pos] + unk_score, runner[pos] + unk_score
            _offer(pos + 1, first, second, pos, unk_id, unk_score, best, runner, back_start, back_id, back_score)
    if usable and back_start[size] < 0:
        usable = False
    # the path, last piece first
    count = 0
    if usable:
        end = size
        while end > 0:
            count += 1
            end = back_start[end]
    limit = -1.0
    if usable:
        margin = best[size] - runner[size]
        spread = 0.0
        for pos in range(1, size + 1):
            spread = max(spread, abs(best[pos]))
        bound = np.inf
        if margin < np.inf:
            g = 2.0 * (margin - 1e-6) / (size + count)
            if g > 0.0:
                t = int(np.floor(np.log2(g)))
                while 2.0**t >= g:
                    t -= 1
                while 2.0 ** (t + 1) < g:
                    t += 1
                bound = 2.0 ** (t + 24)
            else:
                bound = 0.0
        bound = min(bound, 131072.0)  # 2^17: every ulp met is at most 2^-7
        if reset > 0.0:
            bound = min(bound, reset)
        limit = bound - spread - 1.0
    index = used[_ENTRIES]
    code_lo = used[_CODES]
    piece_lo = used[_PIECES_USED]
    for k in range(size):
        pool_codes[code_lo + k] = codes[lo + k]
    k = count - 1
    end = size
    while k >= 0:
        piece_ids[piece_lo + k] = back_id[end]
        piece_ends[piece_lo + k] = end
        piece_scores[piece_lo + k] = back_score[end]
        end = back_start[end]
        k -= 1
    entries[index, _CODE_LO] = code_lo
    entries[index, _LENGTH] = size
    entries[index, _PIECE_LO] = piece_lo
    entries[index, _PIECES] = count
    cap[index] = limit
    used[_ENTRIES] += 1
    used[_CODES] += size
    used[_PIECES_USED] += count
    return index


@cached_njit()
def viterbi_batch_words(
    codes,
    offsets,
    root,
    table,
    shift,
    term_id,
    term_score,
    unk_id,
    unk_score,
    reset,
    fuse_id,
    cache_arrays,
    out_id,
    out_start,
    out_end,
    counts,
):
    """:func:`~toktools.models.unigram.compiled_viterbi.viterbi_batch` with ``float32=1``
    (sentencepiece 0.2.3), the same outputs and statuses, each word's path taken from the
    cache where the module's rule proves it is the kernel's."""
    slots, entries, cap, pool_codes, piece_ids, piece_ends, piece_scores, used, _, _ = cache_arrays
    mask = slots.size - 1
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
        pos = 0
        while pos < n:
            base = score[pos]
            if reset > 0.0 and (base < -reset or base > reset):
                _rescale(pos, frontier, score, start)
                base = 0.0
            if frontier == pos and (pos == 0 or codes[lo + pos] == WORD_MARK):
                # a word starts here: find its end and its hash
                h = np.uint64(_FNV_OFFSET)
                end = pos
                while end < n and end - pos <= MAX_WORD:
                    c = codes[lo + end]
                    if c == WORD_MARK and end > pos:
                        break
                    h = (h ^ np.uint64(c)) * np.uint64(_FNV_PRIME)
                    end += 1
                size = end - pos
                if size <= MAX_WORD:
                    key = np.int64(h >> np.uint64(1))
                    s = key & mask
                    found = -1
                    while slots[s] != 0:
                        entry = slots[s] - 1
                        if entries[entry, _HASH] == key and entries[entry, _LENGTH] == size:
                            same = True
                            code_lo = entries[entry, _CODE_LO]
                            for k in range(size):
                                if pool_codes[code_lo + k] != codes[lo + pos + k]:
                                    same = False
                                    break
                            if same:
                                found = entry
                                break
                        s = (s + 1) & mask
                    if found < 0:
                        found = _word_entry(
                            codes,
                            lo + pos,
                            size,
                            root,
                            table,
                            shift,
                            term_id,
                            term_score,
                            unk_id,
                            unk_score,
                            reset,
                            cache_arrays,
                        )
                        if found >= 0:
                            entries[found, _HASH] = key
                            slots[s] = found + 1
                    if found >= 0 and abs(base) >= cap[found]:
                        used[_REFUSED] += 1
                    if found >= 0 and abs(base) < cap[found]:
                        used[_HITS] += 1
                        previous = pos
                        running = base
                        piece_lo = entries[found, _PIECE_LO]
                        for k in range(entries[found, _PIECES]):
                            running = np.float64(np.float32(running + piece_scores[piece_lo + k]))
                            finish = pos + piece_ends[piece_lo + k]
                            score[finish] = running
                            start[finish] = previous
                            ids[finish] = piece_ids[piece_lo + k]
                            previous = finish
                        frontier = end
                        pos = end
                        continue
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
                1,
                frontier,
                score,
                start,
                ids,
            )
            if frontier < 0:
                return UNK_WITHOUT_ID, t
            pos += 1
        written = _emit(n, start, ids, path, fuse_id, out_id, out_start, out_end, written, counts, t)
        if written < 0:
            return UNREACHABLE, t
    return OK, -1
