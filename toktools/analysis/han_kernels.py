"""jieba's dictionary segmentation of runs of Chinese characters, as numba source (optional:
needs ``numba``, extra ``fast``). :mod:`toktools.runtime.machine_code` compiles
:func:`segment_runs_at` once and keeps its machine code; :mod:`toktools.analysis.han_segmenter`
calls it. Only that compilation imports this module.

The same steps as :meth:`toktools.pretraining.masking.ChineseWords.dictionary_words` (jieba's
``get_DAG`` and ``calc`` with ``HMM=False``), over flat arrays: from the last character of a run
to the first, every dictionary word starting there is found by walking the prefix trie, and the
best route from there is the one of the highest summed log frequency, the longer word on a tie
(``>=`` while the words are tried shortest first); a character where no word starts is a word
alone, scored ``log(1) - log(total)``. The additions are the same float64 additions in the same
order, so the routes are the same, ties included.

The trie (:class:`toktools.analysis.han_segmenter.DictionaryTable`): node 0 is the empty prefix;
the children of node ``k`` are nodes ``first[k]`` to ``first[k + 1] - 1``, sorted by the
character ``chars[child]`` that leads to them; ``scores[k]`` is the prefix's log frequency, NaN
where the prefix is not a word (jieba's frequency 0). The caller gives every array, the scratch
ones included, so the kernel allocates nothing and raises nothing.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit


@njit(inline="always")
def _child(first, chars, node, c):
    """The child of ``node`` reached by character ``c``, or -1: a binary search of its children."""
    lo = np.int64(first[node])
    hi = np.int64(first[node + 1])
    while lo < hi:
        mid = (lo + hi) >> 1
        if chars[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    if lo < first[node + 1] and chars[lo] == c:
        return lo
    return -1


@njit(inline="always")
def segment_into(points, run_starts, run_ends, first, chars, scores, unknown, best, following, word_start):
    """Sets ``word_start[i] = 1`` where a dictionary word of a run starts; returns how many
    words the runs hold. Run ``r`` is ``points[run_starts[r]:run_ends[r]]``; ``best`` and
    ``following`` hold the longest run plus one."""
    words = 0
    for r in range(len(run_starts)):
        a = run_starts[r]
        n = run_ends[r] - a
        best[n] = 0.0
        for start in range(n - 1, -1, -1):
            found = False
            top = 0.0
            to = start + 1
            node = np.int64(0)
            end = start
            while end < n:
                node = _child(first, chars, node, points[a + end])
                if node < 0:
                    break
                end += 1
                score = scores[node]
                if score == score:  # a word, not only a prefix (NaN)
                    score = score + best[end]
                    if not found or score >= top:
                        top = score
                        to = end
                        found = True
            if not found:
                top = unknown + best[start + 1]
                to = start + 1
            best[start] = top
            following[start] = to
        at = 0
        while at < n:
            word_start[a + at] = 1
            words += 1
            at = following[at]
    return words


def segment_runs_at(
    n_points,
    points,
    n_runs,
    run_starts,
    run_ends,
    n_nodes,
    first,
    chars,
    scores,
    unknown,
    longest,
    best,
    following,
    word_start,
):
    """:func:`segment_into` over raw pointers (the compiled entry point; its parameter types are
    listed in :data:`toktools.analysis.han_segmenter._KERNEL`); ``unknown`` is a one-element
    array, ``longest`` the longest run."""
    return segment_into(
        carray(points, (n_points,)),
        carray(run_starts, (n_runs,)),
        carray(run_ends, (n_runs,)),
        carray(first, (n_nodes + 1,)),
        carray(chars, (n_nodes,)),
        carray(scores, (n_nodes,)),
        carray(unknown, (1,))[0],
        carray(best, (longest + 1,)),
        carray(following, (longest + 1,)),
        carray(word_start, (n_points,)),
    )
