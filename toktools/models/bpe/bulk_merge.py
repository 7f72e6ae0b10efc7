"""Merging the new words of a batch all at once, for the ids-only path (:mod:`toktools.engines.ids_only`).

A word merged alone in Python costs ~13 µs plus ~1.5 µs a byte, and a corpus batch holds
thousands of words its process has not seen (more on a worker's cold cache, most of all in
Chinese, whose runs of text rarely repeat whole). Two ways to merge many at once, both giving
the Python merge's ids (``tests/test_fast_ids.py`` checks them against it and ``tokenizers``):

* :mod:`toktools.models.bpe.vectorized_merge` (numpy): one array step per merge over all words; ~4 µs a
  short word, ~20-80 µs a Chinese run of 10-40 characters (2-5 times faster than Python), no
  start-up cost beyond numpy. Longer words need many steps over few symbols: they stay in
  Python (where :class:`toktools.engines.ids_words.CutPoints` cuts Chinese runs into parts merged alone).
* :mod:`toktools.models.bpe.kernels` (numba, optional extra ``fast``): any word, well under a
  microsecond a byte, 2-10 times faster than numpy. numba compiles it once per machine (1-3 s)
  and :mod:`toktools.runtime.machine_code` keeps its machine code, which later processes load in ~0.05 s
  without numba (~0.4 s through numba's own cache when the user cache is off). When the
  reference engine knows its input holds at least ``COMPILED_PLANNED_BYTES``, it is planned from
  the size alone, and loaded once in a process of its own that then forks the workers
  (``IdsEncoder.plans_compiled``, ``ReferenceEngine``): no timing decides, so a loaded machine
  changes nothing. Otherwise it is loaded as a ski is bought after renting: once a process has
  spent about twice that long merging in Python or numpy (``COMPILED_AFTER_SECONDS``, CPU time
  of the thread), so never for a short job such as a ``--verify`` sample; or before workers are
  forked, when the first texts foretell as much merging per worker in the first batch alone
  (see ``IdsEncoder.prepare_for_volume``). Once loaded, workers merge every word of their texts
  with it, with no cache at all (``IdsEncoder.encode_packed``): cheaper than caching words that
  rarely repeat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from time import thread_time
from typing import Any

Pair = tuple[int, int]

#: What loading the compiled merge may cost (CPU seconds): ~0.05 s from the machine code kept in
#: the user cache, ~0.4 s through numba's own cache, 1-3 s the first time (numba compiles it).
#: The rules below assume the slow case, so that a machine without the user cache never loses.
COMPILED_LOAD_SECONDS = 0.7
#: CPU seconds of merging new words after which a process loads the compiled merge: it is 2-10
#: times faster, so this is where what it saves starts to pay for loading it.
COMPILED_AFTER_SECONDS = 2 * COMPILED_LOAD_SECONDS
#: Merging foreseen per worker in the first batch (from its first texts) for which the compiled
#: merge is loaded before the workers are forked. Measured on 1 MB batches: English 0.4-0.6 s
#: (GPT-2, bytebpe-50k), Chinese 1.2-2.0 s; between them, so that the load of a shared machine
#: does not flip the choice.
COMPILED_FORESEEN_SECONDS = 0.9
#: Input (bytes) from which the reference engine plans the compiled merge from the start, with no
#: timing: its workers merge every word with it. Measured with ``benchmarks/bench_encode.py``
#: (5 MB, English and Chinese, GPT-2 and bytebpe-50k): the Python and numpy merges of the
#: workers' cold caches then cost 2-7 times what loading the compiled merge does.
COMPILED_PLANNED_BYTES = 4_000_000
#: Fewest words worth a numpy pass (each of its steps has a fixed cost of some tens of µs).
VECTOR_MIN_WORDS = 512
#: Longest word (in characters) given to numpy: one step per merge, over every word still merging.
VECTOR_MAX_CHARS = 48


@contextmanager
def without_scipy_linalg() -> Iterator[None]:
    """``scipy.linalg`` unimportable while numba starts, in a process of toktools' own.

    Numba's CPU target, on the first call of any compiled function, imports
    ``numba.np.arraymath``, which asks at import whether a BLAS is there (``_HAVE_BLAS =
    _check_blas()`` → ``numba.np.linalg.ensure_blas`` → ``import scipy.linalg.cython_blas``): that
    import of ``scipy.linalg`` is about 0.3 s, 40% of loading the compiled merge, and numba has no
    switch for it. Without it ``_HAVE_BLAS`` is False, which only makes jitted ``np.convolve`` /
    ``np.correlate`` on floats use a loop instead of BLAS (``arraymath._get_inner_prod``; linear
    algebra checks again when it is used). Harmless in a process that runs the BPE kernel only
    (the reference engine's zygote and the workers it forks: the kernel uses no BLAS); never done
    in a caller's process, whose own numba code may use it."""
    import sys

    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        yield
        return
    sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        yield
    finally:
        if sys.modules.get("scipy.linalg", 0) is None:
            del sys.modules["scipy.linalg"]


class BulkMerge:
    """The bulk merges of one vocabulary, each loaded on first use.

    ``seconds`` is read at each call: the CPU time its caller has spent merging new words so far
    (in Python, in numpy), which decides when the compiled merge is loaded.
    """

    def __init__(
        self,
        byte_ids: list[int],
        merge_map: Mapping[Pair, tuple[int, int]],
        finish: Callable[[list[int]], list[int]],
        seconds: Callable[[], float],
    ) -> None:
        self.byte_ids = byte_ids
        self.merge_map = merge_map
        self.finish = finish
        self.seconds = seconds
        self._compiled: Any = None  # False: no compiled merge here (numba not installed)
        self._vector: Any = None  # False: numpy missing or the merges not fit (bpe_vectorized.plan)
        #: CPU seconds spent loading the merges (not merging: callers leave it out of their count)
        self.load_seconds = 0.0

    def compiled(
        self, load: bool = True, own_process: bool = False
    ) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The compiled merge (loaded now with ``load``: see :mod:`toktools.runtime.machine_code`), or
        ``None``. ``own_process``: this process runs toktools' kernels only, so numba, if it must
        compile them, starts without ``scipy.linalg`` (see :func:`without_scipy_linalg`)."""
        if self._compiled is None and load:
            started = thread_time()
            with without_scipy_linalg() if own_process else nullcontext():
                from toktools.models.bpe.compiled_merge import BulkMerger

                try:
                    self._compiled = BulkMerger(self.byte_ids, self.merge_map)
                except ImportError:  # numba not installed, or it cannot compile the kernel
                    self._compiled = False
            self.load_seconds += thread_time() - started
        return self._compiled or None

    def compiled_now(self) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The compiled merge if it is loaded or merging has now cost about what loading it does."""
        return self.compiled(load=self.seconds() >= COMPILED_AFTER_SECONDS)

    def vector(self) -> Callable[[list[str]], list[tuple[int, ...]]] | None:
        """The numpy merge, or ``None`` where it is not exact or numpy is missing."""
        if self._vector is None:
            started = thread_time()
            try:
                from toktools.models.bpe import vectorized_merge as bpe_vectorized
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
