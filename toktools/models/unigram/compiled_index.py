"""The pieces of a Unigram model as arrays for the compiled Viterbi
(:mod:`toktools.models.unigram.compiled_viterbi`), and the calls into it: the whole-line kernel,
or, under sentencepiece 0.2.3's rule, the kernel with each word's path reused where that is
exact (:mod:`toktools.models.unigram.word_cache`). Importing this module fails without numba,
as the kernels' does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from toktools.models.unigram.compiled_viterbi import (
    UNK_WITHOUT_ID,
    UNREACHABLE,
    WORD_CACHE_MAX_SCORE,
    _build,
    _fill,
    code_points,
    viterbi_batch,
)
from toktools.models.unigram.word_cache import WordCache, viterbi_batch_words


class CompiledIndex:
    """The pieces of a :class:`~toktools.parts.unigram.PieceIndex` as arrays for the kernel."""

    def __init__(self, lookup: Iterable[tuple[str, tuple[int, float]]]) -> None:
        items = list(lookup)
        pieces = [piece for piece, _ in items]
        #: the word caches made so far, by ``(unk_id, unk_score, reset)``
        self.word_caches: dict[tuple[int, float, float], WordCache] = {}
        codes, offsets = code_points(pieces)
        ids = np.array([value[0] for _, value in items], dtype=np.int64)
        scores = np.array([value[1] for _, value in items], dtype=np.float64)
        #: no piece holds a ``▁`` after its first character and no score is out of range:
        #: words can be cached (:mod:`toktools.models.unigram.word_cache`)
        self.by_word = not any("\u2581" in piece[1:] for piece in pieces) and bool(
            np.all(np.abs(scores) < WORD_CACHE_MAX_SCORE)
        )
        bits = max(4, (2 * codes.size + 1).bit_length())
        self.shift = 64 - bits
        self.table = np.full(2 << bits, -1, dtype=np.int64)
        self.root = np.full(int(codes.max()) + 1 if codes.size else 1, -1, dtype=np.int64)
        term_id = np.full(codes.size + 1, -1, dtype=np.int64)
        term_score = np.zeros(codes.size + 1, dtype=np.float64)
        nodes = _build(codes, offsets, ids, scores, self.root, self.table, self.shift, term_id, term_score)
        self.term_id = term_id[:nodes].copy()
        self.term_score = term_score[:nodes].copy()
        self._compact()

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the word caches (up to ~50 MB; a copy refills its own)."""
        state = dict(self.__dict__)
        state["word_caches"] = {}
        return state

    def _paths_by_word(
        self,
        codes: np.ndarray,
        offsets: np.ndarray,
        unk: int,
        unk_score: float,
        reset: float,
        fuse_id: int,
        out_id: np.ndarray,
        out_start: np.ndarray,
        out_end: np.ndarray,
        counts: np.ndarray,
    ) -> int:
        """:func:`~toktools.models.unigram.word_cache.viterbi_batch_words` with this index's
        cache for the rule (made on first use, kept across calls)."""
        key = (unk, unk_score, reset)
        cache = self.word_caches.get(key)
        if cache is None:
            cache = self.word_caches[key] = WordCache()
        status, _ = viterbi_batch_words(
            codes,
            offsets,
            self.root,
            self.table,
            self.shift,
            self.term_id,
            self.term_score,
            unk,
            unk_score,
            reset,
            fuse_id,
            cache.arrays(),
            out_id,
            out_start,
            out_end,
            counts,
        )
        return int(status)

    def _compact(self) -> None:
        """The edges again in a table sized for them (load <= 1/2) rather than for every
        character: a smaller table stays in the CPU caches (the walk is one probe per step)."""
        pairs = self.table.reshape(-1, 2)
        edges = pairs[pairs[:, 0] >= 0]
        bits = max(4, (2 * len(edges)).bit_length())
        if 2 << bits >= self.table.size:
            return
        self.shift = 64 - bits
        self.table = np.full(2 << bits, -1, dtype=np.int64)
        _fill(edges[:, 0].copy(), edges[:, 1].copy(), self.table, self.shift)

    def paths(
        self,
        texts: Sequence[str],
        unk_id: int | None,
        unk_score: float,
        *,
        float32: bool | int = False,
        fuse: bool = False,
        reset: float = 0.0,
        word_cache: bool = True,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Token ids, starts, ends (flat arrays, text after text) and the count per text; runs
        of ``unk_id`` nodes fused into one token with ``fuse``; ``float32`` and ``reset`` as
        :func:`viterbi_batch` takes them. With ``float32=1`` (sentencepiece 0.2.3) and
        ``word_cache``, words' paths are reused where that is exact
        (:mod:`~toktools.models.unigram.word_cache`). Raises :class:`ToktoolsError` as
        :func:`~toktools.parts.unigram.viterbi` does."""
        codes, offsets = code_points(texts)
        return self.paths_of_codes(
            codes, offsets, unk_id, unk_score, float32=float32, fuse=fuse, reset=reset, word_cache=word_cache
        )

    def paths_of_codes(
        self,
        codes: np.ndarray,
        offsets: np.ndarray,
        unk_id: int | None,
        unk_score: float,
        *,
        float32: bool | int = False,
        fuse: bool = False,
        reset: float = 0.0,
        word_cache: bool = True,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`paths` of the texts ``codes[offsets[t]:offsets[t + 1]]`` (code points)."""
        from toktools.errors import ToktoolsError

        size = codes.size
        out_id = np.empty(size, dtype=np.int64)
        out_start = np.empty(size, dtype=np.int64)
        out_end = np.empty(size, dtype=np.int64)
        counts = np.zeros(offsets.size - 1, dtype=np.int64)
        unk = -1 if unk_id is None else unk_id
        if int(float32) == 1 and word_cache and self.by_word and abs(unk_score) < WORD_CACHE_MAX_SCORE:
            status = self._paths_by_word(
                codes,
                offsets,
                unk,
                float(unk_score),
                float(reset),
                unk if fuse else -1,
                out_id,
                out_start,
                out_end,
                counts,
            )
        else:
            status, _ = viterbi_batch(
                codes,
                offsets,
                self.root,
                self.table,
                self.shift,
                self.term_id,
                self.term_score,
                unk,
                float(unk_score),
                int(float32),
                float(reset),
                unk if fuse else -1,
                out_id,
                out_start,
                out_end,
                counts,
            )
        if status == UNK_WITHOUT_ID:
            raise ToktoolsError("Unigram: an unknown character but the model has no unk_id")
        if status == UNREACHABLE:
            raise ToktoolsError("Unigram: no segmentation reaches the end of the word (no unk_id)")
        total = int(counts.sum())
        return out_id[:total], out_start[:total], out_end[:total], counts
