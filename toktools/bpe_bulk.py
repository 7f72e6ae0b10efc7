"""Merging the new words of a batch all at once, for the ids-only path (:mod:`toktools.fast_ids`).

A word merged alone in Python costs ~13 µs plus ~1.5 µs a byte, and a corpus batch holds
thousands of words its process has not seen (more on a worker's cold cache, most of all in
Chinese, whose runs of text rarely repeat whole). Two ways to merge many at once, both giving
the Python merge's ids (``tests/test_fast_ids.py`` checks them against it and ``tokenizers``):

* :mod:`toktools.bpe_vectorized` (numpy): one array step per merge over all words; ~4 µs a
  short word, ~20-80 µs a Chinese run of 10-40 characters (2-5 times faster than Python), no
  start-up cost beyond numpy. Longer words need many steps over few symbols: they stay in
  Python (where :class:`toktools.fast_ids._CutPoints` cuts Chinese runs into parts merged alone).
* :mod:`toktools.bpe_kernels` (numba, optional extra ``fast``): any word, well under a
  microsecond a byte, 2-10 times faster than numpy, but loading it costs ~0.5-1 s. It is loaded
  as a ski is bought after renting: once a process has spent about that long merging in Python
  or numpy (``COMPILED_AFTER_SECONDS``, CPU time of the thread), so never for a short job such
  as a ``--verify`` sample.
"""
from __future__ import annotations

from time import thread_time
from typing import Any, Callable, Iterable, Mapping

Pair = tuple[int, int]

#: Python merge CPU seconds after which the compiled merge is loaded (about what loading costs).
COMPILED_AFTER_SECONDS = 0.6
#: Fewest words worth a numpy pass (each of its steps has a fixed cost of some tens of µs).
VECTOR_MIN_WORDS = 512
#: Longest word (in characters) given to numpy: one step per merge, over every word still merging.
VECTOR_MAX_CHARS = 48


class BulkMerge:
    """The ids of many words in one call, by whichever bulk merge is worth it now.

    ``python_seconds`` is read at each call: the CPU time the caller has spent merging in Python.
    ``seconds()`` is that and the time spent here, which decides when the compiled merge is loaded.
    """

    def __init__(self, byte_ids: list[int], merge_map: Mapping[Pair, tuple[int, int]],
                 finish: Callable[[list[int]], list[int]], python_seconds: Callable[[], float]) -> None:
        self.byte_ids = byte_ids
        self.merge_map = merge_map
        self.finish = finish
        self.python_seconds = python_seconds
        self._compiled: Any = None  # False: numba is not installed
        self._vector: Any = None  # False: numpy missing or the merges not fit (bpe_vectorized.plan)
        self.bulk_seconds = 0.0

    def seconds(self) -> float:
        """CPU seconds spent merging new words so far, in Python and in numpy."""
        return self.python_seconds() + self.bulk_seconds

    def compiled(self, load: bool = True) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The numba merge (loaded now with ``load``), or ``None``."""
        if self._compiled is None and load:
            try:
                from toktools.bpe_kernels import BulkMerger
            except ImportError:
                self._compiled = False
            else:
                self._compiled = BulkMerger(self.byte_ids, self.merge_map)
        return self._compiled or None

    def vector(self) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The numpy merge, or ``None`` where it is not exact or numpy is missing."""
        if self._vector is None:
            try:
                from toktools import bpe_vectorized
            except ImportError:
                self._vector = False
            else:
                plan = bpe_vectorized.plan(self.byte_ids, self.merge_map)
                self._vector = bpe_vectorized.VectorMerger(plan, self.finish) if plan is not None else False
        return self._vector or None

    def __call__(self, words: list[str]) -> Iterable[tuple[str, tuple[int, ...]]]:
        """``(word, ids)`` for the words merged here; the others are left to the caller."""
        compiled = self.compiled(load=self.seconds() >= COMPILED_AFTER_SECONDS)
        if compiled is not None:
            return zip(words, compiled(words))
        short = [word for word in words if len(word) <= VECTOR_MAX_CHARS]
        vector = self.vector() if len(short) >= VECTOR_MIN_WORDS else None
        if vector is None:
            return ()
        started = thread_time()
        merged = vector(short)
        self.bulk_seconds += thread_time() - started
        return zip(short, merged)
