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
  as a ski is bought after renting: once a process has spent about twice that long merging in
  Python or numpy (``COMPILED_AFTER_SECONDS``, CPU time of the thread), so never for a short job
  such as a ``--verify`` sample; or before workers are forked, when the first texts foretell as
  much merging per worker in the first batch alone (see ``IdsEncoder.prepare_for_volume``).
  Once loaded, workers merge every word of their texts with it, with no cache at all
  (``IdsEncoder.encode_packed``): cheaper than caching words that rarely repeat.
"""
from __future__ import annotations

from time import thread_time
from typing import Any, Callable, Iterable, Mapping

Pair = tuple[int, int]

#: About what loading the compiled merge costs (CPU seconds: importing numba, loading its code).
COMPILED_LOAD_SECONDS = 0.7
#: CPU seconds of merging new words after which a process loads the compiled merge: it is 2-10
#: times faster, so this is where what it saves starts to pay for loading it.
COMPILED_AFTER_SECONDS = 2 * COMPILED_LOAD_SECONDS
#: Merging foreseen per worker in the first batch (from its first texts) for which the compiled
#: merge is loaded before the workers are forked. Measured on 1 MB batches: English 0.4-0.6 s
#: (GPT-2, bytebpe-50k), Chinese 1.2-2.0 s; between them, so that the load of a shared machine
#: does not flip the choice.
COMPILED_FORESEEN_SECONDS = 0.9
#: Fewest words worth a numpy pass (each of its steps has a fixed cost of some tens of µs).
VECTOR_MIN_WORDS = 512
#: Longest word (in characters) given to numpy: one step per merge, over every word still merging.
VECTOR_MAX_CHARS = 48


class BulkMerge:
    """The bulk merges of one vocabulary, each loaded on first use.

    ``seconds`` is read at each call: the CPU time its caller has spent merging new words so far
    (in Python, in numpy), which decides when the compiled merge is loaded.
    """

    def __init__(self, byte_ids: list[int], merge_map: Mapping[Pair, tuple[int, int]],
                 finish: Callable[[list[int]], list[int]], seconds: Callable[[], float]) -> None:
        self.byte_ids = byte_ids
        self.merge_map = merge_map
        self.finish = finish
        self.seconds = seconds
        self._compiled: Any = None  # False: numba is not installed
        self._vector: Any = None  # False: numpy missing or the merges not fit (bpe_vectorized.plan)
        #: CPU seconds spent loading the merges (not merging: callers leave it out of their count)
        self.load_seconds = 0.0

    def compiled(self, load: bool = True) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The numba merge (loaded now with ``load``), or ``None``."""
        if self._compiled is None and load:
            started = thread_time()
            try:
                from toktools.bpe_kernels import BulkMerger
            except ImportError:
                self._compiled = False
            else:
                self._compiled = BulkMerger(self.byte_ids, self.merge_map)
            self.load_seconds += thread_time() - started
        return self._compiled or None

    def compiled_now(self) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The numba merge if it is loaded or merging has now cost about what loading it does."""
        return self.compiled(load=self.seconds() >= COMPILED_AFTER_SECONDS)

    def vector(self) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The numpy merge, or ``None`` where it is not exact or numpy is missing."""
        if self._vector is None:
            started = thread_time()
            try:
                from toktools import bpe_vectorized
            except ImportError:
                self._vector = False
            else:
                plan = bpe_vectorized.plan(self.byte_ids, self.merge_map)
                self._vector = bpe_vectorized.VectorMerger(plan, self.finish) if plan is not None else False
            self.load_seconds += thread_time() - started
        return self._vector or None

    def short_words(self, words: list[str]) -> Iterable[tuple[str, tuple[int, ...]]]:
        """``(word, ids)`` for the words numpy merges well (short ones, enough of them); the
        others are left to the caller."""
        short = [word for word in words if len(word) <= VECTOR_MAX_CHARS]
        vector = self.vector() if len(short) >= VECTOR_MIN_WORDS else None
        return zip(short, vector(short)) if vector is not None else ()
