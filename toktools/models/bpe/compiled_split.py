"""The compiled GPT-2 split (:mod:`toktools.models.bpe.split_kernel`) as the lazy byte-level
batches call it, without importing numba: the kernel comes from
:func:`toktools.runtime.machine_code.kernel` (machine code kept in the user cache).

It gives the words of many texts as their ends in the texts' code points, in one call that
releases the GIL (ctypes): the split runs on another core while Python builds encodings, where
the ``re`` split (:class:`toktools.engines.ids_words.ByteLevelWords`) holds the GIL and makes a
string per word.
"""

from __future__ import annotations

from array import array

from toktools.models.bpe.compiled_merge import address, zeros

#: The kernel (the split, with the bounds the merge reads): module, function, and the types of
#: its parameters.
_KERNEL = (
    "toktools.models.bpe.split_kernel",
    "split_bounds_at",
    ("int64", "uint32*", "uint8*", "int64", "int64*", "int64*", "int64*", "int64*", "int64*"),
)

_classes: array | None = None  # type: ignore[type-arg]


def kept() -> bool:
    """The compiled split loads cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL)


def start_compiling() -> None:
    """Have the kernel compiled into the user cache in a detached process, for later runs."""
    from toktools.runtime.background_compile import start

    start(*_KERNEL)


def class_table() -> array:  # type: ignore[type-arg]
    """Every code point's classes as the pattern's tables give them (bit 1 letter, 2 number,
    4 whitespace), the same tables the ``re`` pattern is built from: built without NumPy, so a
    batch that reads only ids never imports NumPy."""
    global _classes
    if _classes is None:
        from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

        table = array("B", bytes(0x110000))
        for bit, ranges in ((1, LETTER_RANGES), (2, NUMBER_RANGES), (4, SPACE_RANGES)):
            for lo, hi in ranges:
                span = table[lo : hi + 1]
                table[lo : hi + 1] = (
                    array("B", [bit]) * len(span) if not any(span) else array("B", (b | bit for b in span))
                )
        _classes = table
    return _classes


class Words:
    """The words of a part's texts, as :meth:`CompiledSplit.bounds` gives them (``array.array``
    buffers): each word's end in code points (``ends``) and UTF-8 bounds (``byte_bounds``, one
    more), each text's words (``text_words[t]:text_words[t + 1]``), their number and the longest
    word's bytes."""

    def __init__(self, ends: array, byte_bounds: array, text_words: array, count: int, longest: int) -> None:  # type: ignore[type-arg]
        self.ends, self.byte_bounds, self.text_words = ends, byte_bounds, text_words
        self.count, self.longest = count, longest


class CompiledSplit:
    """Texts (as code points end to end) → their words, laid out for the merge. Raises ``ImportError`` when there
    is no compiled kernel."""

    def __init__(self) -> None:
        from toktools.runtime.machine_code import kernel

        run = kernel(*_KERNEL)
        if run is None:
            raise ImportError("the compiled split needs numba (extra 'fast')")
        self._kernel = run
        self.classes = class_table()
        self._classes_at = address(self.classes)

    def bounds(self, points: bytes, text_ends: array) -> Words:  # type: ignore[type-arg]
        """The words of texts given as UTF-32-LE code points end to end (``points``) with their
        ends (``text_ends``), laid out for :meth:`toktools.models.bpe.compiled_merge.BulkMerger.merge_at`:
        no NumPy, no string per word; runs without the GIL."""
        n_points, n_texts = len(points) // 4, len(text_ends)
        ends, byte_bounds = zeros("q", n_points), zeros("q", max(n_points, 1) + 1)
        text_words, longest = zeros("q", n_texts + 1), zeros("q", 1)
        count = self._kernel(
            n_points,
            address(points),
            self._classes_at,
            n_texts,
            address(text_ends),
            *map(address, (ends, byte_bounds, text_words, longest)),
        )
        return Words(ends, byte_bounds, text_words, count, longest[0])
