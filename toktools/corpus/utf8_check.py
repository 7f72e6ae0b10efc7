"""Whether a block of bytes is UTF-8, without decoding it: the corpus block path checks every
input byte, and ``bytes.decode`` builds a ``str`` of the whole block only to throw it away.

On text that is mostly ASCII (English, code), the bytes from 0x80 up are few: they are picked
out with NumPy and checked as UTF-8's rules say (RFC 3629, as Python's strict decoder applies
them: no overlong form, no surrogate, nothing past U+10FFFF), in a handful of passes over those
bytes alone. Where they are many (Chinese, Russian), ``bytes.decode`` is as fast, and is used.
A block that fails is decoded by the caller anyway, for the position of the error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: above this share of non-ASCII bytes, ``bytes.decode`` checks faster than the passes here
DENSE_SHARE = 0.25


@dataclass
class NonAscii:
    """Where a block's bytes from 0x80 up are (``where``) and which they are (``high``), read
    once for the checks that look only at them (UTF-8 here; which lines an engine must route
    elsewhere, :meth:`toktools.engines.gigatoken_engine.GigatokenEngine.block_needs_routing`).
    Both are None where they are many (:data:`DENSE_SHARE`): then they would be as large as the
    block, and ``bytes.decode`` checks it as fast."""

    where: Any
    high: Any


def non_ascii(block: bytes) -> NonAscii | None:
    """The non-ASCII bytes of ``block`` (None: it has none)."""
    if block.isascii():
        return None
    import numpy as np

    raw = np.frombuffer(block, dtype=np.uint8)
    mask = raw >= 0x80
    if np.count_nonzero(mask) > DENSE_SHARE * len(block):
        return NonAscii(None, None)
    where = np.flatnonzero(mask)  # the non-ASCII bytes, in order
    return NonAscii(where, raw[where])


def is_utf8(block: bytes) -> bool:
    """True when ``block`` is well-formed UTF-8 (exactly when ``block.decode("utf-8")`` succeeds)."""
    return is_utf8_scanned(block, non_ascii(block))


def is_utf8_scanned(block: bytes, scan: NonAscii | None) -> bool:
    """:func:`is_utf8`, given the block's :func:`non_ascii` (read once for other checks too)."""
    if scan is None:
        return True
    if scan.where is None:
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True
    import numpy as np

    where, high = scan.where, scan.high
    # each lead byte's length (0: a byte that cannot start a character); continuation bytes: 1
    length = np.zeros(256, dtype=np.int64)
    length[0x80:0xC0] = 1
    length[0xC2:0xE0] = 2
    length[0xE0:0xF0] = 3
    length[0xF0:0xF5] = 4
    sizes = length[high]
    if not sizes.all():
        return False
    leads = np.flatnonzero(sizes >= 2)  # indices into ``high``
    if not leads.size or leads[0] != 0:
        return False  # a continuation byte before any lead
    spans = sizes[leads]
    ends = leads + spans
    # every lead is followed by exactly its continuation bytes: the next lead comes right after
    if ends[-1] != high.size or not np.array_equal(ends[:-1], leads[1:]):
        return False
    # ... and they are adjacent in the block (no ASCII byte in between)
    if not np.array_equal(where[ends - 1] - where[leads], spans - 1):
        return False
    # the second byte's range where the first byte narrows it (overlong forms, surrogates, > U+10FFFF)
    first, second = high[leads], high[leads + 1]
    return not (
        ((first == 0xE0) & (second < 0xA0)).any()
        or ((first == 0xED) & (second > 0x9F)).any()
        or ((first == 0xF0) & (second < 0x90)).any()
        or ((first == 0xF4) & (second > 0x8F)).any()
    )
