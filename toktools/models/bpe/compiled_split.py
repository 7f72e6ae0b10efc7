"""The compiled GPT-2 split (:mod:`toktools.models.bpe.split_kernel`) as the lazy byte-level
batches call it, without importing numba: the kernel comes from
:func:`toktools.runtime.machine_code.kernel` (machine code kept in the user cache).

It gives the words of many texts as their ends in the texts' code points, in one call that
releases the GIL (ctypes): the split runs on another core while Python builds encodings, where
the ``re`` split (:class:`toktools.engines.ids_words.ByteLevelWords`) holds the GIL and makes a
string per word.
"""

from __future__ import annotations

import numpy as np

#: The kernel: module, function, and the types of its parameters.
_KERNEL = (
    "toktools.models.bpe.split_kernel",
    "split_words_at",
    ("int64", "uint32*", "uint8*", "int64", "int64*", "int64*"),
)

_classes: np.ndarray | None = None


def kept() -> bool:
    """The compiled split loads cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL)


def start_compiling() -> None:
    """Have the kernel compiled into the user cache in a detached process, for later runs."""
    from toktools.runtime.background_compile import start

    start(*_KERNEL)


def class_table() -> np.ndarray:
    """Every code point's classes as the pattern's tables give them (bit 1 letter, 2 number,
    4 whitespace), the same tables the ``re`` pattern is built from."""
    global _classes
    if _classes is None:
        from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

        table = np.zeros(0x110000, dtype=np.uint8)
        for bit, ranges in ((1, LETTER_RANGES), (2, NUMBER_RANGES), (4, SPACE_RANGES)):
            for lo, hi in ranges:
                table[lo : hi + 1] |= bit
        _classes = table
    return _classes


class CompiledSplit:
    """Texts (as code points end to end) → their words' ends. Raises ``ImportError`` when there
    is no compiled kernel."""

    def __init__(self) -> None:
        from toktools.runtime.machine_code import kernel

        split = kernel(*_KERNEL)
        if split is None:
            raise ImportError("the compiled split needs numba (extra 'fast')")
        self._kernel = split
        self.classes = class_table()

    def word_ends(self, points: np.ndarray, text_ends: np.ndarray) -> np.ndarray:
        """The end of every word (indices into ``points``), text after text; text ``t`` is
        ``points[text_ends[t - 1]:text_ends[t]]``. Runs without the GIL."""
        points = np.ascontiguousarray(points, dtype=np.uint32)
        text_ends = np.ascontiguousarray(text_ends, dtype=np.int64)
        out = np.empty(max(1, len(points)), dtype=np.int64)
        count = self._kernel(
            len(points),
            points.ctypes.data,
            self.classes.ctypes.data,
            len(text_ends),
            text_ends.ctypes.data,
            out.ctypes.data,
        )
        return out[:count]
