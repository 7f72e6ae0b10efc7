"""The compiled BPE merge (:mod:`toktools.models.bpe.kernels`) as the bulk merges call it, without
importing numba: the kernel comes from :func:`toktools.runtime.machine_code.kernel` (machine code kept in
the user cache, numba only to compile it the first time).

:class:`BulkMerger` lays many words out as the kernel reads them (one ``uint8`` array of their
UTF-8 bytes and their bounds), gives it every array it writes to, and reads the ids back.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

import numpy as np

from toktools.models.bpe.pair_table import PairTable

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


def kept() -> bool:
    """The compiled merge loads cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL)


class MergeTable:
    """``(left id, right id) -> (rank, new id)`` as arrays the kernel probes: the hash table of
    :class:`toktools.models.bpe.pair_table.PairTable` (built with numpy), its slots holding ranks and
    new ids."""

    def __init__(self, merge_map: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        n = len(merge_map)  # fromiter over the flat pairs: a third of the time of np.array over tuples
        pairs = np.fromiter(chain.from_iterable(merge_map.keys()), dtype=np.int64, count=2 * n).reshape(n, 2)
        values = np.fromiter(chain.from_iterable(merge_map.values()), dtype=np.int64, count=2 * n).reshape(n, 2)
        table = PairTable((pairs[:, 0] << 32) | pairs[:, 1])
        self.keys, self.shift = table.keys, table.shift
        self.ranks = values[table.index, 0]  # empty slots hold merge 0's: never read, their key is EMPTY_KEY
        self.new_ids = values[table.index, 1]


class BulkMerger:
    """Words → their merged ids, many per call (one kernel call for all of them). Raises
    ``ImportError`` when there is no compiled kernel (numba not installed, nothing cached)."""

    def __init__(self, byte_ids: list[int], merge_map: Mapping[tuple[int, int], tuple[int, int]]) -> None:
        from toktools.runtime.machine_code import kernel

        merge = kernel(*_KERNEL)
        if merge is None:
            raise ImportError("the compiled BPE merge needs numba (extra 'fast')")
        self._kernel = merge
        self.byte_ids = np.array(byte_ids, dtype=np.int64)
        self.table = MergeTable(merge_map)

    def merge(self, data: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The words ``data[starts[w]:starts[w + 1]]`` (UTF-8 bytes) merged: ``(ids, id_starts)``,
        word ``w``'s ids being ``ids[id_starts[w]:id_starts[w + 1]]``."""
        data = np.ascontiguousarray(data, dtype=np.uint8)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        n_words = len(starts) - 1
        longest = max(1, int(np.diff(starts).max())) if n_words > 0 else 1
        symbols, following, previous = (np.empty(longest, dtype=np.int64) for _ in range(3))
        alive = np.empty(longest, dtype=np.uint8)
        heap_keys, heap_new = np.empty(3 * longest, dtype=np.int64), np.empty(3 * longest, dtype=np.int64)
        ids = np.empty(max(1, len(data)), dtype=np.int64)  # never more tokens than bytes
        id_starts = np.empty(n_words + 1, dtype=np.int64)
        table = self.table
        written = self._kernel(
            n_words,
            len(data),
            data.ctypes.data,
            starts.ctypes.data,
            self.byte_ids.ctypes.data,
            len(table.keys),
            table.keys.ctypes.data,
            table.ranks.ctypes.data,
            table.new_ids.ctypes.data,
            int(table.shift),
            longest,
            symbols.ctypes.data,
            following.ctypes.data,
            previous.ctypes.data,
            alive.ctypes.data,
            heap_keys.ctypes.data,
            heap_new.ctypes.data,
            ids.ctypes.data,
            id_starts.ctypes.data,
        )
        return ids[:written], id_starts

    def __call__(self, words: list[str]) -> list[tuple[int, ...]]:
        encoded = [word.encode("utf-8") for word in words]
        starts = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=starts[1:])
        ids, id_starts = self.merge(np.frombuffer(b"".join(encoded), dtype=np.uint8), starts)
        flat, bounds = ids.tolist(), id_starts.tolist()
        return list(map(tuple, map(flat.__getitem__, map(slice, bounds, bounds[1:]))))

    def ids_of_texts(self, word_lists: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Every word of many texts merged, no cache: ``(ids, counts)``, text ``t``'s ids being
        the ``counts[t]`` ids after those of the texts before it. Where words rarely repeat
        (Chinese), a cache costs more than merging again; and nothing here is done per word in
        Python: the words' bounds come from their lengths in characters and the UTF-8 length
        of every character."""
        data, bounds, _, _ = utf8_words(list(chain.from_iterable(word_lists)))
        ids, id_starts = self.merge(data, bounds)
        word_ends = np.cumsum(np.fromiter(map(len, word_lists), dtype=np.int64, count=len(word_lists)))
        id_ends = id_starts[word_ends]
        return ids, np.diff(id_ends, prepend=0)


def utf8_words(words: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The words end to end as UTF-8, laid out for the bulk merge with nothing done per word in
    Python: ``(data, bounds, char_bytes, char_ends)``, where ``bounds`` are the byte offsets where
    each word starts and ends in ``data`` (``len(words) + 1`` of them), ``char_bytes`` the UTF-8
    length of every character, ``char_ends`` the character offsets of the same bounds."""
    text = "".join(words)
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    char_bytes = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
    byte_at = np.zeros(len(points) + 1, dtype=np.int64)
    np.cumsum(char_bytes, out=byte_at[1:])
    char_ends = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)), out=char_ends[1:])
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8), byte_at[char_ends], char_bytes, char_ends
