"""A document longer than a segment counted on the fast paths of ``compare --corpus``: its
pieces laid end to end as chunks, each tokenizer's ids and spans from tiktoken, its word cache
or ``tokenizers`` (:func:`toktools.analysis.chunk_tally.tally_texts`), never the aligned
pipeline one piece at a time.

Why the statistics are the ones counted piece by piece before. The pieces are those
:func:`toktools.corpus.long_documents.piece_spans` cuts (the same cuts, so the same tokens and
offsets, the first token of each piece included); each piece is one text of a chunk, and every
statistic of a piece is counted inside it (no word and no token crosses a cut: each piece after
the first starts with the space of a safe cut). What a document adds once, its count and its
sequence length, is added when its pieces are done. Token counts keep the order in which the
ids first occur, as a tally fed piece by piece keeps them (the efficiencies sum in that order).

Memory is the document's text and one chunk of pieces at a time: for ``--show``, each chunk's
boundaries are scored as soon as it is counted (:class:`~toktools.analysis.disagreement.StreamedMarks`),
unless the tokenizers are cut differently (one that may not be cut at all, then the document is
at most :data:`~toktools.corpus.documents.MAX_UNCUT_CHARS` long).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from toktools.analysis.chunk_tally import ChunkText, tally_texts
from toktools.analysis.disagreement import LongMarks, StreamedMarks
from toktools.analysis.segstats import SegmentStats

__all__ = ["count_long", "stretch_encoder"]

Located = tuple[str, int]  # (source path, line number in it)


def count_long(
    text: str,
    where: Located,
    tokenizers: Sequence[Any],
    encoders: Sequence[Any],
    cuttable: Sequence[bool],
    chunk_chars: int,
    show: int = 0,
) -> tuple[list[SegmentStats], StreamedMarks | LongMarks | None]:
    """Every tokenizer's statistics of the long document ``text`` (at ``where``), as one
    document, and with ``show`` its boundaries for
    :func:`~toktools.analysis.disagreement.long_document_places`. ``encoders``: per tokenizer,
    what :func:`~toktools.analysis.chunk_tally.tally_texts` takes; ``cuttable``: whether each
    may be cut (:func:`~toktools.corpus.long_documents.tokenizer_cuttable`; one that may not is
    counted as one piece, or refused as before); pieces go ``chunk_chars`` at a time (at least
    one). When every tokenizer has the same cut, each chunk's boundaries are scored at once
    (:class:`~toktools.analysis.disagreement.StreamedMarks`); else they are kept per character
    until all are in (:class:`~toktools.analysis.disagreement.LongMarks`, two bytes each)."""
    from toktools.corpus.long_documents import piece_spans

    label = f"{where[0]}, line {where[1]}"
    cuts: dict[bool, list[tuple[int, int]]] = {}
    for cut in cuttable:  # refused before any counting, in the order the tokenizers were counted
        if cut not in cuts:
            cuts[cut] = list(piece_spans(text, cut, label))
    marks: StreamedMarks | LongMarks | None = None
    if show > 0:
        one_cut = len(cuts) == 1
        marks = StreamedMarks(len(text), len(tokenizers), show) if one_cut else LongMarks(len(text), len(tokenizers))
    stats: list[SegmentStats] = [SegmentStats.combined([], 0)] * len(tokenizers)
    for cut, spans in cuts.items():
        group = [k for k, c in enumerate(cuttable) if c == cut]
        counted = _count_pieces(
            text, spans, [tokenizers[k] for k in group], [encoders[k] for k in group], chunk_chars, marks
        )
        for k, part in zip(group, counted):
            stats[k] = part
    return stats, marks


def _batches(spans: Sequence[tuple[int, int]], chunk_chars: int) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """``(start, pieces)``: consecutive pieces of about ``chunk_chars`` characters in all."""
    batch: list[tuple[int, int]] = []
    size = 0
    for span in spans:
        batch.append(span)
        size += span[1] - span[0]
        if size >= chunk_chars:
            yield batch[0][0], batch
            batch, size = [], 0
    if batch:
        yield batch[0][0], batch


def _count_pieces(
    text: str,
    spans: Sequence[tuple[int, int]],
    tokenizers: Sequence[Any],
    encoders: Sequence[Any],
    chunk_chars: int,
    marks: StreamedMarks | LongMarks | None,
) -> list[SegmentStats]:
    """The statistics of ``text`` cut at ``spans`` for tokenizers that share that cut."""
    from toktools.analysis import token_view
    from toktools.runtime.memory import release_freed_memory

    specials = [token_view.specials_added(tok) for tok in tokenizers]
    totals = [SegmentStats.combined([], n) for n in specials]
    tokens = [0] * len(tokenizers)
    for start, batch in _batches(spans, chunk_chars):
        release_freed_memory()  # the last chunk's arrays, as the piece-by-piece path does
        texts = [text if (s, e) == (0, len(text)) else text[s:e] for s, e in batch]
        chunk, results = tally_texts(texts, tokenizers, encoders, marks is not None)
        for k, ((ids, _, _, _), part, _) in enumerate(results):
            tokens[k] += part.tokens
            part.documents, part.sequence_lengths = 0, {}  # the pieces are one document
            part.token_counts = _first_seen_first(ids, part.token_counts)
            totals[k] = SegmentStats.combined([totals[k], part], specials[k])
        if marks is not None:
            marks.add_group(start, [mark for _, _, mark in results], chunk.characters)
        del chunk, results, texts
    for k, n in enumerate(specials):
        closing = SegmentStats.combined([], n)
        closing.documents, closing.sequence_lengths = 1, {tokens[k] + n: 1}
        totals[k] = SegmentStats.combined([totals[k], closing], n)
    return totals


def _first_seen_first(ids: Any, counts: dict[int, int]) -> dict[int, int]:
    """``counts`` (id -> occurrences) in the order the ids first occur in ``ids``."""
    import numpy as np

    unique, first = np.unique(ids, return_index=True)
    return {i: counts[i] for i in unique[np.argsort(first, kind="stable")].tolist()}


def stretch_encoder(encoders: Any) -> Any:
    """``text -> (ids, starts, ends)`` of one stretch of a long document from a tokenizer's
    fast path (``encoders`` as :func:`count_long` takes them): the tokens
    :func:`~toktools.analysis.disagreement.long_document_places` shows, exact where the stretch
    is cut where the tokenizer restarts."""
    _, encode, source = encoders

    def encoded(stretch: str) -> tuple[list[int], list[int], list[int]]:
        if source is not None:
            ids, _, starts, ends = source.arrays([stretch], ChunkText([stretch]))
            return ids.tolist(), starts.tolist(), ends.tolist()
        found, offsets = encode([stretch])[0]
        return list(found), [s for s, _ in offsets], [e for _, e in offsets]

    return encoded
