"""GPT-2's pre-tokeniser split (ByteLevel with ``use_regex``), compiled: the words of many texts
in one call over their code points, without the GIL (optional: needs ``numba``, extra ``fast``).
:mod:`toktools.runtime.machine_code` compiles :func:`split_bounds_at` once and keeps its machine
code; :mod:`toktools.models.bpe.compiled_split` calls it. Only that compilation imports this module.

The pattern ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
(:func:`toktools.models.bpe.bytelevel._gpt2_pattern`) matched left to right, as the regex
engine does: at each word start the alternatives are tried in order, each run is greedy, and
``\\s+(?!\\S)`` gives back the last whitespace character of a run that a non-space follows.
The classes come as one bit mask per code point (``classes[c]``: 1 letter, 2 number, 4
whitespace; none is "other"), so a code point in two classes runs as the regex's classes would.
Every word ends inside its text. ``tests/test_compiled_split.py`` checks the words against the
``re`` split and against ``tokenizers``.

Kept in a module of its own: the kernel cache key covers its module's source, and the merge's
machine code (:mod:`toktools.models.bpe.kernels`) need not be compiled again for it.
"""

from __future__ import annotations

from numba import carray, njit

LETTER, NUMBER, SPACE = 1, 2, 4
APOSTROPHE, BLANK = 39, 32


@njit(inline="always")
def _run(points, classes, i, end, bit):
    """Where the run from ``i`` of code points in class ``bit`` (0: in none, "other") ends."""
    if bit:
        while i < end and classes[points[i]] & bit:
            i += 1
    else:
        while i < end and classes[points[i]] == 0:
            i += 1
    return i


@njit(inline="always")
def _word_run(points, classes, i, end, mask):
    """Where the run from ``i`` ends of the class ``mask`` names (letters, then numbers, then
    "other", as the pattern tries them); ``-1`` for whitespace, which none of them takes."""
    if mask & LETTER:
        return _run(points, classes, i, end, LETTER)
    if mask & NUMBER:
        return _run(points, classes, i, end, NUMBER)
    if mask == 0:
        return _run(points, classes, i, end, 0)
    return -1


@njit(inline="always")
def split_into(points, classes, text_ends, word_ends):
    """Every text's words: ``word_ends`` gets the end (index in ``points``) of each word, text
    after text (text ``t`` is ``points[text_ends[t - 1]:text_ends[t]]``); returns their number."""
    count = 0
    start = 0
    for t in range(len(text_ends)):
        end = text_ends[t]
        i = start
        while i < end:
            c = points[i]
            j = i
            if c == APOSTROPHE and i + 1 < end:
                d = points[i + 1]
                if d == 115 or d == 116 or d == 109 or d == 100:  # 's 't 'm 'd
                    j = i + 2
                elif i + 2 < end and (
                    (d == 114 and points[i + 2] == 101)  # 're
                    or (d == 118 and points[i + 2] == 101)  # 've
                    or (d == 108 and points[i + 2] == 108)  # 'll
                ):
                    j = i + 3
            if j == i and c == BLANK and i + 1 < end:  # ' ?' then a run: letters, numbers, other
                run = _word_run(points, classes, i + 2, end, classes[points[i + 1]])
                if run >= 0:
                    j = run
            if j == i:
                j = _word_run(points, classes, i + 1, end, classes[c])
                if j < 0:  # whitespace: \s+(?!\S) gives back the last one before a non-space, else \s+
                    j = _run(points, classes, i + 1, end, SPACE)
                    if j < end and j - 1 > i:
                        j -= 1
            word_ends[count] = j
            count += 1
            i = j
        start = end
    return count


@njit(inline="always")
def bounds_into(points, text_ends, word_ends, count, byte_bounds, text_words):
    """What the merge reads, from :func:`split_into`'s word ends: each word's UTF-8 bounds
    (``byte_bounds[w]:byte_bounds[w + 1]``) and each text's words (``text_words[t]:text_words[t
    + 1]``); returns the longest word's length in bytes."""
    position = 0
    at = 0
    longest = 0
    byte_bounds[0] = 0
    for w in range(count):
        end = word_ends[w]
        start = position
        while at < end:
            c = points[at]
            position += 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
            at += 1
        byte_bounds[w + 1] = position
        if position - start > longest:
            longest = position - start
    text_words[0] = 0
    w = 0
    for t in range(len(text_ends)):
        while w < count and word_ends[w] <= text_ends[t]:
            w += 1
        text_words[t + 1] = w
    return longest


def split_bounds_at(n_points, points, classes, n_texts, text_ends, word_ends, byte_bounds, text_words, longest):
    """:func:`split_into`, then :func:`bounds_into`: the words of every text laid out for the
    compiled merge in one call (parameter types in
    :data:`toktools.models.bpe.compiled_split._KERNEL`). ``word_ends`` and ``byte_bounds``
    have room for ``n_points`` words (plus one), ``text_words`` for ``n_texts + 1``; the longest
    word's bytes go to ``longest[0]``; returns the number of words."""
    room = max(n_points, 1)
    ends = carray(word_ends, (room,))
    texts = carray(text_ends, (n_texts,))
    code = carray(points, (n_points,))
    count = split_into(code, carray(classes, (0x110000,)), texts, ends)
    carray(longest, (1,))[0] = bounds_into(
        code, texts, ends, count, carray(byte_bounds, (room + 1,)), carray(text_words, (n_texts + 1,))
    )
    return count
