"""The offsets of a WordPiece batch's tokens in its original texts, compiled (optional: needs
``numba``, extra ``fast``). :mod:`toktools.runtime.machine_code` compiles :func:`offsets_at` once
and keeps its machine code; :mod:`toktools.models.wordpiece.compiled` calls it. Only that
compilation imports this module.

The compiled WordPiece gives each token's span in the batch's normalised texts, joined by
spaces. The normaliser translates character by character: ``lengths[c]`` is how many characters
code point ``c`` becomes (0: removed). So normalised character ``j`` comes from the original
character whose translation covers it, and a token spans the original characters of its first
and last normalised ones, relative to its text (a character a token cuts belongs to it whole). ``UNKNOWN`` marks a code point whose length is
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
    (marked ``SEEN``) until it is full; returns their number (the caller asks again when full)."""
    count = 0
    for i in range(len(points)):
        c = points[i]
        if lengths[c] == UNKNOWN:
            if count == len(unknown):
                break
            lengths[c] = SEEN
            unknown[count] = c
            count += 1
    return count


@njit(inline="always")
def spans_into(points, lengths, unchanged, n_normalized, starts, ends, bounds, text_starts, out_starts, out_ends):
    """Every token's ``(start, end)`` in characters of its original text; returns the number of
    tokens, or -1 where the translation's lengths do not add up to the normalised text. The
    tokens come in the order of their spans: one walk over the original characters, keeping
    where the current one's translation starts (``at``) in the normalised text."""
    i = 0
    at = 0
    for t in range(len(text_starts)):
        base = text_starts[t]
        for k in range(bounds[t], bounds[t + 1]):
            if unchanged:
                out_starts[k] = starts[k] - base
                out_ends[k] = ends[k] - base
                continue
            for edge in range(2):
                target = starts[k] if edge == 0 else ends[k] - 1
                while i < len(points) and at + lengths[points[i]] <= target:
                    at += lengths[points[i]]
                    i += 1
                if i == len(points):
                    return -1
                if edge == 0:
                    out_starts[k] = i - base
                else:
                    out_ends[k] = i + 1 - base
    if not unchanged:
        while i < len(points):
            at += lengths[points[i]]
            i += 1
        if at != n_normalized:
            return -1
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
    out_starts,
    out_ends,
    n_unknown,
    unknown,
):
    """:func:`unknown_into` (``mode`` ``LIST_UNKNOWN``, room for ``n_unknown``) or
    :func:`spans_into` (``SPANS``, or ``SPANS_UNCHANGED`` without a normaliser) over raw
    pointers (parameter types in :data:`toktools.models.wordpiece.compiled._OFFSETS_KERNEL`)."""
    code = carray(points, (max(n_points, 1),))[:n_points]
    table = carray(lengths, (0x110000,))
    if mode == LIST_UNKNOWN:
        return unknown_into(code, table, carray(unknown, (max(n_unknown, 1),)))
    room = max(n_tokens, 1)
    return spans_into(
        code,
        table,
        mode == SPANS_UNCHANGED,
        n_normalized,
        carray(starts, (room,)),
        carray(ends, (room,)),
        carray(bounds, (n_texts + 1,)),
        carray(text_starts, (max(n_texts, 1),)),
        carray(out_starts, (room,)),
        carray(out_ends, (room,)),
    )
