"""The offsets of a WordPiece batch's tokens in its original texts, compiled (optional: needs
``numba``, extra ``fast``). :mod:`toktools.runtime.machine_code` compiles :func:`offsets_at` once
and keeps its machine code; :mod:`toktools.models.wordpiece.compiled` calls it. Only that
compilation imports this module.

The compiled WordPiece gives each token's span in the batch's normalised texts, joined by
spaces. The normaliser translates character by character: ``lengths[c]`` is how many characters
code point ``c`` becomes (0: removed). So normalised character ``j`` comes from the original
character whose translation covers it, and a token spans the original characters of its first
and last normalised ones, relative to its text. ``UNKNOWN`` marks a code point whose length is
not known yet: a first call lists those (``SEEN``), the caller fills them in, a second call gives
the offsets. ``tests/test_lazy_wordpiece.py`` checks them against ``tokenizers``.
"""

from __future__ import annotations

from numba import carray, njit

UNKNOWN, SEEN = 255, 254
LIST_UNKNOWN, SPANS, SPANS_UNCHANGED = 0, 1, 2


@njit(inline="always")
def unknown_into(points, lengths, unknown):
    """The code points of ``points`` whose length is not known, each once, into ``unknown``
    (marked ``SEEN``); returns their number."""
    count = 0
    for i in range(len(points)):
        c = points[i]
        if lengths[c] == UNKNOWN:
            lengths[c] = SEEN
            unknown[count] = c
            count += 1
    return count


@njit(inline="always")
def spans_into(points, lengths, unchanged, starts, ends, bounds, text_starts, origin, out_starts, out_ends):
    """Every token's ``(start, end)`` in characters of its original text; returns the number of
    tokens, or -1 where the translation's lengths do not add up to the normalised text."""
    if not unchanged:
        j = 0
        for i in range(len(points)):
            for _ in range(lengths[points[i]]):
                if j >= len(origin):
                    return -1
                origin[j] = i
                j += 1
        if j != len(origin):
            return -1
    for t in range(len(text_starts)):
        base = text_starts[t]
        for k in range(bounds[t], bounds[t + 1]):
            if unchanged:
                out_starts[k] = starts[k] - base
                out_ends[k] = ends[k] - base
            else:
                out_starts[k] = origin[starts[k]] - base
                out_ends[k] = origin[ends[k] - 1] + 1 - base
    return bounds[len(text_starts)]


def offsets_at(
    mode,
    n_points,
    points,
    lengths,
    n_tokens,
    starts,
    ends,
    n_texts,
    bounds,
    text_starts,
    n_normalized,
    origin,
    out_starts,
    out_ends,
    unknown,
):
    """:func:`unknown_into` (``mode`` ``LIST_UNKNOWN``) or :func:`spans_into` (``SPANS``, or
    ``SPANS_UNCHANGED`` without a normaliser) over raw pointers (parameter types in
    :data:`toktools.models.wordpiece.compiled._OFFSETS_KERNEL`)."""
    code = carray(points, (max(n_points, 1),))[:n_points]
    table = carray(lengths, (0x110000,))
    if mode == LIST_UNKNOWN:
        return unknown_into(code, table, carray(unknown, (max(n_points, 1),)))
    room = max(n_tokens, 1)
    return spans_into(
        code,
        table,
        mode == SPANS_UNCHANGED,
        carray(starts, (room,)),
        carray(ends, (room,)),
        carray(bounds, (n_texts + 1,)),
        carray(text_starts, (max(n_texts, 1),)),
        carray(origin, (max(n_normalized, 1),))[:n_normalized],
        carray(out_starts, (room,)),
        carray(out_ends, (room,)),
    )
