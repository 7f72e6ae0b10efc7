"""The offsets of a byte-level batch's tokens, compiled (optional: needs ``numba``, extra
``fast``). :mod:`toktools.runtime.machine_code` compiles :func:`offsets_at` once and keeps its
machine code; :mod:`toktools.models.bpe.compiled_offsets` calls it. Only that compilation imports
this module.

The tokens of a part's texts cover its UTF-8 bytes end to end (every text's own bytes, after
its prefix space where one was added). A token's span is the characters of its first and last
bytes (a token may start or end inside a character); spans are relative to its text, the prefix
space having the span of the text's first character, as ``tokenizers`` gives them. Trimmed
(``trim_offsets``), a token loses the spaces (byte ``0x20``, the symbol ``Ġ``) it starts and ends
with, but the one prefix space before a sequence's first token (with ``add_prefix_space``).
``tests/test_lazy_encodings.py`` checks the offsets against ``tokenizers``.
"""

from __future__ import annotations

from numba import carray, njit

SPACE = 32
PLAIN, TRIMMED, TRIMMED_AFTER_PREFIX_SPACE = 0, 1, 2


@njit(inline="always")
def offsets_into(ids, token_lengths, data, bounds, text_starts, prefixed, trim, starts, ends):
    """Every token's ``(start, end)`` in characters of its text, into ``starts`` and ``ends``;
    text ``t``'s tokens are ``bounds[t]:bounds[t + 1]``, it starts at character ``text_starts[t]``
    of the part (its prefix space first if ``prefixed[t]``). Returns the number of tokens."""
    position = 0  # the next token's first byte
    chars = 0  # characters begun before ``position``
    for t in range(len(text_starts)):
        shift = prefixed[t]
        origin = text_starts[t] + shift
        for i in range(bounds[t], bounds[t + 1]):
            length = token_lengths[ids[i]]
            first = chars if (data[position] & 0xC0) != 0x80 else chars - 1
            for b in range(position, position + length):
                if (data[b] & 0xC0) != 0x80:
                    chars += 1
            start = max(first - origin, 0)
            end = max(chars - origin, shift)
            if trim != PLAIN:
                lead = 0
                while lead < length and data[position + lead] == SPACE:
                    lead += 1
                trail = 0
                while trail < length and data[position + length - 1 - trail] == SPACE:
                    trail += 1
                if trim == TRIMMED_AFTER_PREFIX_SPACE and lead == 1 and (i == bounds[t] or start == 0):
                    lead = 0
                if lead > 0:
                    start = min(start + lead, end)
                if trail > 0 and end >= trail:
                    end = max(end - trail, start)
            starts[i] = start
            ends[i] = end
            position += length
    return bounds[len(text_starts)]


def offsets_at(
    n_tokens, ids, n_lengths, token_lengths, n_data, data, n_texts, bounds, text_starts, prefixed, trim, starts, ends
):
    """:func:`offsets_into` over raw pointers (parameter types in
    :data:`toktools.models.bpe.compiled_offsets._KERNEL`)."""
    room = max(n_tokens, 1)
    return offsets_into(
        carray(ids, (room,)),
        carray(token_lengths, (max(n_lengths, 1),)),
        carray(data, (max(n_data, 1),)),
        carray(bounds, (n_texts + 1,)),
        carray(text_starts, (max(n_texts, 1),)),
        carray(prefixed, (max(n_texts, 1),)),
        trim,
        carray(starts, (room,)),
        carray(ends, (room,)),
    )
