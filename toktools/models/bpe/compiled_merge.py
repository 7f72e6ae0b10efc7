"""The compiled BPE merge (:mod:`toktools.models.bpe.kernels`) as the bulk merges call it, without
importing numba: the kernel comes from :func:`toktools.runtime.machine_code.kernel` (machine code kept in
the user cache, numba only to compile it the first time).

:class:`BulkMerger` lays many words out as the kernel reads them (one ``uint8`` array of their
UTF-8 bytes and their bounds), gives it every array it writes to, and reads the ids back.
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Mapping
from itertools import chain
from typing import Any

#: The kernel: module, function, and the types of its parameters (its signature; see there).
_KERNEL = (
    "toktools.models.bpe.kernels",
    "merge_words_at",
    (
        "int64",
        "int64",
        "uint8*",
        "int64*",
        "int64*",
        "int64",
        "uint64*",
        "int64*",
        "int64*",
        "uint64",
        "int64",
        "int64*",
        "int64*",
        "int64*",
        "uint8*",
        "int64*",
        "int64*",
        "int64*",
        "int64*",
    ),
)
#: The kernel that fills the merge table (:class:`MergeTable`).
_TABLE_KERNEL = (
    "toktools.models.bpe.kernels",
    "build_table_at",
    ("int64", "int64*", "int64*", "int64", "uint64*", "int64*", "int64*", "uint64"),
)


def kept() -> bool:
    """The compiled merge loads cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL) and ready(*_TABLE_KERNEL)


def address(buffer: Any) -> int:
    """Where a buffer's first byte is: an ``array.array``'s, a ``bytes`` object's (read only: its
    own memory, no copy) or a NumPy array's. The caller keeps the buffer alive meanwhile."""
    if isinstance(buffer, array):
        return buffer.buffer_info()[0]
    if isinstance(buffer, bytes):
        return ctypes.cast(ctypes.c_char_p(buffer), ctypes.c_void_p).value or 0
    return int(buffer.ctypes.data)


def zeros(typecode: str, size: int) -> array:  # type: ignore[type-arg]
    """``size`` zeros as an ``array.array`` (at least one: a kernel's pointer must point somewhere)."""
    return array(typecode, [0]) * max(1, size)


class MergeTable:
    """``(left id, right id) -> (rank, new id)`` as the hash table the kernel probes (the layout of
    :class:`toktools.models.bpe.pair_table.PairTable`), its slots holding ranks and new ids:
    ``array.array`` buffers filled by a kernel, so no NumPy is needed to build it."""

    def __init__(self, merge_map: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        from toktools.runtime.machine_code import kernel

        build = kernel(*_TABLE_KERNEL)
        if build is None:
            raise ImportError("the compiled BPE merge needs numba (extra 'fast')")
        n = len(merge_map)
        pairs = array("q", chain.from_iterable(merge_map.keys())) or zeros("q", 1)
        values = array("q", chain.from_iterable(merge_map.values())) or zeros("q", 1)
        bits = max(4, (4 * n).bit_length())  # load factor at most 1/4
        self.size, self.shift = 1 << bits, 64 - bits
        self.keys, self.ranks, self.new_ids = zeros("Q", self.size), zeros("q", self.size), zeros("q", self.size)
        build(
            n,
            address(pairs),
            address(values),
            self.size,
            *map(address, (self.keys, self.ranks, self.new_ids)),
            self.shift,
        )


class BulkMerger:
    """Words → their merged ids, many per call (one kernel call for all of them). Raises
    ``ImportError`` when there is no compiled kernel (numba not installed, nothing cached)."""

    def __init__(self, byte_ids: list[int], merge_map: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        from toktools.runtime.machine_code import kernel

        merge = kernel(*_KERNEL)
        if merge is None:
            raise ImportError("the compiled BPE merge needs numba (extra 'fast')")
        self._kernel = merge
        self.byte_ids = array("q", byte_ids)
        self.table = MergeTable(merge_map)

    def merge_at(self, data: Any, n_data: int, bounds: Any, n_words: int, longest: int) -> tuple[array, array, int]:  # type: ignore[type-arg]
        """The words ``data[bounds[w]:bounds[w + 1]]`` (UTF-8 bytes; ``data`` and ``bounds`` any
        buffers :func:`address` reads, or addresses) merged, the longest being ``longest``
        bytes: ``(ids, id_starts, written)`` as ``array.array`` buffers, word ``w``'s ids being
        ``ids[id_starts[w]:id_starts[w + 1]]``. Needs no NumPy; releases the GIL."""
        longest = max(1, longest)
        symbols, following, previous = zeros("q", longest), zeros("q", longest), zeros("q", longest)
        alive = zeros("B", longest)
        heap_keys, heap_new = zeros("q", 3 * longest), zeros("q", 3 * longest)
        ids, id_starts = zeros("q", n_data), zeros("q", n_words + 1)  # never more tokens than bytes
        table = self.table
        written = self._kernel(
            n_words,
            n_data,
            data if isinstance(data, int) else address(data),
            bounds if isinstance(bounds, int) else address(bounds),
            address(self.byte_ids),
            table.size,
            *map(address, (table.keys, table.ranks, table.new_ids)),
            table.shift,
            longest,
            *map(address, (symbols, following, previous, alive, heap_keys, heap_new, ids, id_starts)),
        )
        return ids, id_starts, written

    def merge(self, data: Any, starts: Any) -> tuple[Any, Any]:
        """The words ``data[starts[w]:starts[w + 1]]`` (UTF-8 bytes, NumPy arrays) merged:
        ``(ids, id_starts)`` as NumPy arrays, word ``w``'s ids being ``ids[id_starts[w]:id_starts[w + 1]]``."""
        import numpy as np

        data = np.ascontiguousarray(data, dtype=np.uint8)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        n_words = len(starts) - 1
        longest = int(np.diff(starts).max()) if n_words > 0 else 1
        ids, id_starts, written = self.merge_at(data, len(data), starts, n_words, longest)
        return np.frombuffer(ids, dtype=np.int64)[:written], np.frombuffer(id_starts, dtype=np.int64)

    def __call__(self, words: list[str]) -> list[tuple[int, ...]]:
        import numpy as np

        encoded = [word.encode("utf-8") for word in words]
        starts = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=starts[1:])
        ids, id_starts = self.merge(np.frombuffer(b"".join(encoded), dtype=np.uint8), starts)
        flat, bounds = ids.tolist(), id_starts.tolist()
        return list(map(tuple, map(flat.__getitem__, map(slice, bounds, bounds[1:]))))

    def ids_of_texts(self, word_lists: list[list[str]]) -> tuple[Any, Any]:
        """Every word of many texts merged, no cache: ``(ids, counts)``, text ``t``'s ids being
        the ``counts[t]`` ids after those of the texts before it. Where words rarely repeat
        (Chinese), a cache costs more than merging again; and nothing here is done per word in
        Python: the words' bounds come from their lengths in characters and the UTF-8 length
        of every character."""
        import numpy as np

        data, bounds, _, _ = utf8_words(list(chain.from_iterable(word_lists)))
        ids, id_starts = self.merge(data, bounds)
        word_ends = np.cumsum(np.fromiter(map(len, word_lists), dtype=np.int64, count=len(word_lists)))
        id_ends = id_starts[word_ends]
        return ids, np.diff(id_ends, prepend=0)


def utf8_words(words: list[str]) -> tuple[Any, Any, Any, Any]:
    """The words end to end as UTF-8, laid out for the bulk merge with nothing done per word in
    Python: ``(data, bounds, char_bytes, char_ends)``, where ``bounds`` are the byte offsets where
    each word starts and ends in ``data`` (``len(words) + 1`` of them), ``char_bytes`` the UTF-8
    length of every character, ``char_ends`` the character offsets of the same bounds."""
    import numpy as np

    text = "".join(words)
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    char_bytes = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
    byte_at = np.zeros(len(points) + 1, dtype=np.int64)
    np.cumsum(char_bytes, out=byte_at[1:])
    char_ends = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)), out=char_ends[1:])
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8), byte_at[char_ends], char_bytes, char_ends
