"""The statistics of one chunk of documents from ids and character offsets, with array
operations (numpy) instead of a Python loop over tokens.

The same definitions as :class:`~toktools.analysis.segstats.Tally` (tested equal to it and to the
reference pipeline in ``tests/test_compare_fast.py``): the documents of a chunk are laid end to
end, every token's span is moved to that common axis, and words, owners of tokens, byte pieces
and the disagreement score of each document are counted with ``bincount`` and ``unique``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from toktools.analysis.segstats import SegmentStats, _TokenFacts
from toktools.analysis.words import BERT_CHINESE_RANGES, HAN_RANGES, in_ranges, segmented_starts

__all__ = ["ChunkText", "Marks", "flat_spans", "numpy_available", "spans_of", "tally_chunk", "tally_texts"]

#: One tokenizer's ``(ids, tokens per text, starts, ends)`` on a chunk's axis, its statistics of
#: the chunk, and its marks for the disagreement score (None unless asked for).
Counted = tuple[tuple[Any, Any, Any, Any], SegmentStats, "Marks | None"]

#: The code points ``str.isspace`` holds true for (what splits words).
SPACES = [c for c in range(0x3001) if chr(c).isspace()]


def numpy_available() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


class ChunkText:
    """The documents of a chunk end to end: where each starts, which characters are whitespace,
    the word each character belongs to (-1 for whitespace), where each word starts and in
    which document; the words themselves on demand (:meth:`interned_words`)."""

    def __init__(self, texts: Sequence[str]) -> None:
        import numpy as np

        self.texts = texts
        self.count = len(texts)
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        self.base = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.base[1:])
        joined = "".join(texts)
        self.characters = len(joined)
        self.bytes = len(joined.encode("utf-8", "surrogatepass"))
        self.points = points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        self.space = np.isin(points, np.array(SPACES, dtype=np.uint32))
        before = np.ones(len(points), dtype=bool)
        before[1:] = self.space[:-1]
        before[self.base[:-1][lengths > 0]] = True  # a document starts a word
        starts = ~self.space & before
        # whitespace words (what a per-word cache encodes, :mod:`toktools.analysis.word_spans`),
        # before the segmenters cut the runs without spaces into the words counted
        self.space_word_starts = np.flatnonzero(starts)
        self.space_doc_of_start = np.searchsorted(self.base, self.space_word_starts, side="right") - 1
        self.han = han = in_ranges(points, HAN_RANGES)
        extra, self.segmentation = segmented_starts(points, self.space, self.base[:-1], han)
        starts |= extra
        self.han_counts = _han_counts(points, han)
        self.word_of = np.cumsum(starts) - 1
        self.words = int(starts.sum())
        self.doc_of_start = np.searchsorted(self.base, np.flatnonzero(starts), side="right") - 1
        self.words_per_doc = np.bincount(self.doc_of_start, minlength=len(texts))
        self.segmentation["whitespace"] = self.words - sum(self.segmentation.values())
        self._interned: dict[bool, tuple[list[str], Any]] = {}
        self._units: dict[bool, tuple[Any, Any]] = {}

    def units(self, han_alone: bool = False) -> tuple[Any, Any]:
        """``(starts, documents)`` of the units a per-word cache encodes: the whitespace words,
        and with ``han_alone`` those cut before and after every Chinese character too (for
        pipelines that make each Chinese character a word of its own: BERT's, whose
        ``BertNormalizer`` pads those of :data:`~toktools.analysis.words.BERT_CHINESE_RANGES`)."""
        if not han_alone or not self.han_counts:  # no Chinese character: the same units
            return self.space_word_starts, self.space_doc_of_start
        if True not in self._units:
            import numpy as np

            alone = self.han & in_ranges(self.points, BERT_CHINESE_RANGES)
            starts = np.zeros(len(self.points), dtype=bool)
            starts[self.space_word_starts] = True
            starts |= alone
            starts[1:] |= alone[:-1] & ~self.space[1:]
            where = np.flatnonzero(starts)
            self._units[True] = (where, np.searchsorted(self.base, where, side="right") - 1)
        return self._units[True]

    def interned_words(self, han_alone: bool = False) -> tuple[list[str], Any]:
        """The chunk's distinct units (:meth:`units`; first seen first) and, for each unit in
        order, its index among them: computed once, shared by every tokenizer counted from a
        word cache."""
        han_alone = han_alone and bool(self.han_counts)  # no Chinese character: the same units
        if han_alone not in self._interned:
            import numpy as np

            joined = " ".join(self.texts)
            if han_alone:  # a space either side of each Chinese character
                padded = [c for c in self.han_counts if any(lo <= c <= hi for lo, hi in BERT_CHINESE_RANGES)]
                joined = joined.translate({c: f" {chr(c)} " for c in padded})
            words = joined.split()  # str.split's whitespace is SPACES: the same words
            assert len(words) == len(self.units(han_alone)[0])
            index = {word: k for k, word in enumerate(dict.fromkeys(words))}
            keys = np.fromiter(map(index.__getitem__, words), dtype=np.int64, count=len(words))
            self._interned[han_alone] = (list(index), keys)
        return self._interned[han_alone]


@dataclass
class Marks:
    """What the disagreement score needs of one tokenizer: the last characters of its tokens
    inside words and its byte pieces' ranges, as sorted unique keys on the chunk's axis."""

    ends: Any
    cuts: Any


def _han_counts(points: Any, han: Any) -> dict[int, int]:
    """Chinese character (code point) -> occurrences, from the chunk's code points and which
    of them are Chinese characters."""
    import numpy as np

    if not han.any():
        return {}
    values, counts = np.unique(points[han], return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def _covered(starts: Any, ends: Any) -> int:
    """Characters inside the union of the spans ``[starts, ends)``."""
    import numpy as np

    if not len(starts):
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    before = np.concatenate(([s[0]], reach[:-1]))
    return int(np.maximum(e - np.maximum(s, before), 0).sum())


def flat_spans(encoded: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]]) -> tuple[Any, Any, Any, Any]:
    """``(ids, tokens per text, starts, ends)`` as arrays of texts' ``(ids, offsets)``, spans
    relative to each text."""
    import numpy as np

    counts = np.fromiter((len(ids) for ids, _ in encoded), dtype=np.int64, count=len(encoded))
    total = int(counts.sum())
    ids = np.fromiter(chain.from_iterable(ids for ids, _ in encoded), dtype=np.int64, count=total)
    spans = np.fromiter(
        chain.from_iterable(chain.from_iterable(offsets for _, offsets in encoded)), dtype=np.int64, count=2 * total
    ).reshape(-1, 2)
    return ids, counts, spans[:, 0], spans[:, 1]


def spans_of(chunk: ChunkText, encoded: Sequence[tuple[list[int], list[tuple[int, int]]]]) -> tuple[Any, Any, Any, Any]:
    """``(ids, tokens per document, starts, ends)`` as arrays, spans on the chunk's axis, from
    each document's ``(ids, offsets)``."""
    import numpy as np

    ids, counts, starts, ends = flat_spans(encoded)
    shift = np.repeat(chunk.base[:-1], counts)
    return ids, counts, starts + shift, ends + shift


def tally_chunk(
    chunk: ChunkText,
    spans: tuple[Any, Any, Any, Any],
    facts: _TokenFacts,
    unk_id: int | None,
    specials: int,
    vocab_size: int,
    marks: bool,
) -> tuple[SegmentStats, Marks | None]:
    """One tokenizer's statistics on the chunk's documents, given :func:`spans_of` them."""
    import numpy as np

    ids, counts, starts, ends = spans
    total = len(ids)

    every = np.bincount(ids)
    unique = np.flatnonzero(every)
    per_id = every[unique]
    seen = unique.tolist()
    facts.fill(seen)
    lengths = np.fromiter(map(facts.__getitem__, seen), dtype=np.int64, count=len(unique))
    keep = unique != (unk_id if unk_id is not None else -1)  # "[UNK]"'s characters are no token length
    token_lengths = np.bincount(lengths[keep], weights=per_id[keep]).astype(np.int64) if keep.any() else np.zeros(0)
    partial = np.isin(ids, np.fromiter(facts.partial, dtype=np.int64)) if facts.partial else np.zeros(total, bool)

    inside = ends > starts
    inside[inside] = ~chunk.space[ends[inside] - 1]
    lasts = ends[inside] - 1
    per_word = np.bincount(chunk.word_of[lasts], minlength=chunk.words)
    per_word_histogram = np.bincount(per_word)

    piece_chars = 0
    cut_keys = np.zeros(0, dtype=np.int64)
    if partial.any():
        change = np.zeros(chunk.characters + 1, dtype=np.int64)
        np.add.at(change, starts[partial], 1)
        np.add.at(change, ends[partial], -1)
        piece_chars = int((np.cumsum(change)[:-1] > 0).sum())
        cut_keys = np.unique(starts[partial] * (chunk.characters + 1) + ends[partial])

    unk = ids == unk_id if unk_id is not None else np.zeros(total, bool)
    fallback = np.isin(ids, np.fromiter(facts.fallback, dtype=np.int64)) if facts.fallback else np.zeros(total, bool)
    sequence = np.bincount(counts + specials)
    stats = SegmentStats(
        documents=chunk.count,
        tokens=total,
        characters=chunk.characters,
        bytes=chunk.bytes,
        words=chunk.words,
        split_words=int((per_word > 1).sum()),
        unk_count=int(unk.sum()),
        byte_piece_chars=piece_chars,
        specials_per_sequence=specials,
        sequence_lengths=_histogram(sequence),
        tokens_per_word_histogram=_histogram(per_word_histogram),
        token_lengths=_histogram(token_lengths),
        token_counts=dict(zip(unique.tolist(), per_id.tolist())),
        vocab_size=vocab_size,
        unk_chars=_covered(starts[unk], ends[unk]) if unk.any() else 0,
        fallback_count=int(fallback.sum()),
        fallback_chars=_covered(starts[fallback], ends[fallback]) if fallback.any() else 0,
        segmentation=dict(chunk.segmentation),
        han_counts=chunk.han_counts,
    )
    if not marks:
        return stats, None
    if len(lasts) and not (lasts[1:] >= lasts[:-1]).all():
        lasts = np.sort(lasts)  # offsets out of order (some normalizers): sorted, then deduplicated
    distinct = np.ones(len(lasts), dtype=bool)
    distinct[1:] = lasts[1:] != lasts[:-1]
    return stats, Marks(lasts[distinct], cut_keys)


def _histogram(counts: Any) -> dict[int, int]:
    import numpy as np

    values = np.flatnonzero(counts)
    return dict(zip(values.tolist(), counts[values].astype(np.int64).tolist()))


def tally_texts(
    texts: Sequence[str], tokenizers: Sequence[Any], encoders: Sequence[Any], marks: bool
) -> tuple[ChunkText, list[Counted]]:
    """Every tokenizer's spans and statistics of ``texts`` laid end to end (one
    :class:`ChunkText`), and its :class:`Marks` when ``marks``. ``encoders`` holds, per
    tokenizer, ``(token facts, ids-and-offsets encoder or None, span source or None)``: the
    spans come from the span source where there is one, else from the encoder's offsets."""
    from toktools.analysis import token_view
    from toktools.analysis.segstats import vocabulary_size

    text = ChunkText(texts)

    def counted(k: int) -> Counted:
        """One tokenizer's spans of the chunk and its tally of them."""
        tokenizer, (facts, encode, source) = tokenizers[k], encoders[k]
        spans = source.arrays(texts, text) if source is not None else spans_of(text, encode(texts))
        unk, specials = token_view.unk_id(tokenizer), token_view.specials_added(tokenizer)
        part, mark = tally_chunk(text, spans, facts, unk, specials, vocabulary_size(tokenizer), marks)
        return spans, part, mark

    return text, _on_threads(counted, text, encoders)


def _on_threads(counted: Callable[[int], Counted], text: ChunkText, encoders: Sequence[Any]) -> list[Counted]:
    """``counted(k)`` for each tokenizer ``k`` of the chunk, on a thread per tokenizer: the
    encoders (tiktoken, ``tokenizers``) spend most of it in Rust and NumPy much of the tally,
    without the GIL, so one tokenizer's encoding overlaps another's array work. Each thread has
    a tokenizer's own word cache and token facts; the chunk's shared words are made first, here,
    so that no two threads make them at once."""
    if len(encoders) < 2 or not text.count:
        return [counted(k) for k in range(len(encoders))]
    for _, _, source in encoders:
        if hasattr(source, "han_alone"):
            text.interned_words(source.han_alone)
            text.units(source.han_alone)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(encoders), thread_name_prefix="toktools-compare") as pool:
        return list(pool.map(counted, range(len(encoders))))
