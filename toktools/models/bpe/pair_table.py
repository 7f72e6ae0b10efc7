"""An open-addressing hash table of 64-bit keys (a merge's ``left << 32 | right``, a WordPiece
piece's hash), built and probed for many keys at once with NumPy; the compiled kernels
(:mod:`toktools.models.bpe.kernels`, :mod:`toktools.models.wordpiece.kernel`) probe the same
layout one key at a time: linear probing from the key's Fibonacci hash.

A binary search over sorted keys costs ~16 dependent reads a key; this table, at most a quarter
full, ~1.3.
"""

from __future__ import annotations

import numpy as np

EMPTY_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)  # never a key: ids are below 2**31
HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


class PairTable:
    """``key`` → its index in the keys given (distinct keys), as ``keys`` and ``index`` arrays
    of ``2**bits`` slots (``shift = 64 - bits``)."""

    def __init__(self, keys: np.ndarray) -> None:
        bits = max(4, (4 * len(keys)).bit_length())  # load factor at most 1/4
        size = 1 << bits
        self.mask = size - 1
        self.shift = np.uint64(64 - bits)
        self.keys = np.full(size, EMPTY_KEY, dtype=np.uint64)
        self.index = np.zeros(size, dtype=np.int64)
        wanted = keys.astype(np.uint64)
        # Inserted in the order of their home slots, each key lands on the first free slot from
        # its home: ``max(home, the previous key's slot + 1)``, a running maximum. Every slot from
        # a key's home to its own is then taken, which is all linear probing needs.
        order = np.argsort(self._hash(wanted), kind="stable")
        home = self._hash(wanted[order])
        step = np.arange(len(order), dtype=np.int64)
        slot = np.maximum.accumulate(home - step) + step if len(order) else home
        inside = slot < size
        self.keys[slot[inside]] = wanted[order[inside]]
        self.index[slot[inside]] = order[inside]
        free = 0
        for placed in order[~inside].tolist():  # the few that ran past the end wrap to the start
            while self.keys[free] != EMPTY_KEY:
                free += 1
            self.keys[free], self.index[free] = wanted[placed], placed

    def _hash(self, keys: np.ndarray) -> np.ndarray:
        return ((keys * HASH_MULTIPLIER) >> self.shift).astype(np.int64)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """The index of each key, or -1."""
        wanted = keys.astype(np.uint64)
        slot = self._hash(wanted)
        found = np.full(len(keys), -1, dtype=np.int64)
        pending = np.arange(len(keys))
        while len(pending):
            at = slot[pending]
            seen = self.keys[at]
            hit = seen == wanted[pending]
            found[pending[hit]] = self.index[at[hit]]
            pending = pending[~hit & (seen != EMPTY_KEY)]
            slot[pending] = (slot[pending] + 1) & self.mask
        return found
