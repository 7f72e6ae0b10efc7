"""One chunk of a corpus comparison: the documents of some text, and every tokenizer's
statistics on them (the unit of work of a local worker process or of a Dask task).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from toktools.analysis.disagreement import PlaceCandidate, chunk_places, document_places
from toktools.analysis.segstats import Document, SegmentStats, Tally
from toktools.corpus.reading import json_field_text

#: Text per chunk of work (one task of a worker process).
CHUNK_CHARS = 256 * 1024
CHUNK_DOCUMENTS = 5_000

Located = tuple[str, int]  # (source path, line number in it)


#: A place where the tokenizers disagree (:data:`toktools.analysis.disagreement.PlaceCandidate`):
#: (differing boundaries, 0, -document index, (source, line), place); the largest wins.
Candidate = PlaceCandidate
Item = tuple[int, Located, str]  # (document index, where, text)


def documents_of(
    chunks: Iterable[str], path: str, json_field: str | None = None, first_line: int = 1
) -> Iterator[tuple[int, str]]:
    """``(line number, document)`` of text chunks of whole lines, the first line numbered
    ``first_line``: the rule of :func:`toktools.analysis.corpus_compare.iter_documents` for one source (or one block of it)."""
    number = first_line - 1
    for chunk in chunks:
        lines = chunk.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line in lines:
            number += 1
            if line.endswith("\r"):
                line = line[:-1]
            if not line.strip():
                continue
            if json_field is not None:
                line = json_field_text(line, json_field, path, number)
                if not line.strip():
                    continue
            yield number, line


def process_chunk(
    chunk: list[Item], tokenizers: Sequence[Any], show: int, facts_cache: dict[Any, Any]
) -> tuple[list[SegmentStats], list[Candidate]]:
    """The statistics per tokenizer and the chunk's
    ``show`` most disputed documents. ``facts_cache`` keeps each tokenizer's token facts
    (index → :class:`~toktools.analysis.segstats._TokenFacts`), its span source (``("spans",
    index)`` → :func:`span_source`: tiktoken for byte-level BPE, a per-word cache for BERT-like
    pipelines, or None) and its ids-and-offsets encoder (``-1 - index`` →
    :func:`~toktools.analysis.fast_offsets.offsets_encoder`: ``tokenizers`` where it loads the
    tokenizer, the same ids and offsets as the reference) from chunk to chunk."""
    from toktools.analysis.chunk_tally import numpy_available
    from toktools.analysis.fast_offsets import offsets_encoder
    from toktools.analysis.segstats import _TokenFacts
    from toktools.corpus.long_documents import is_long

    long_items = [item for item in chunk if is_long(item[2])]
    if long_items:  # counted piece by piece after the others (flat memory): _process_long_arrays
        chunk = [item for item in chunk if not is_long(item[2])]
    texts = [text for _, _, text in chunk]
    scoring = show > 0 and len(tokenizers) > 1
    arrays = USE_ARRAYS and numpy_available()
    encoders = []
    for index, tokenizer in enumerate(tokenizers):
        if index not in facts_cache:
            facts_cache[index] = _TokenFacts(tokenizer)
        if arrays and ("spans", index) not in facts_cache:
            facts_cache[("spans", index)] = span_source(tokenizer)
        spans = facts_cache.get(("spans", index)) if arrays else None
        if spans is None and -1 - index not in facts_cache:
            facts_cache[-1 - index] = offsets_encoder(tokenizer)
        encoders.append((facts_cache[index], facts_cache.get(-1 - index), spans))
    if arrays:
        stats, candidates = _process_arrays(chunk, texts, tokenizers, encoders, show if scoring else 0)
    else:
        stats, candidates = _process_loop(chunk, texts, tokenizers, encoders, show if scoring else 0)
    if long_items and arrays and USE_LONG_ARRAYS:
        _process_long_arrays(long_items, tokenizers, encoders, show if scoring else 0, facts_cache, stats, candidates)
    elif long_items:
        from toktools.analysis.disagreement import LongMarks, long_document_places

        shown_long = scoring and numpy_available()  # places of long documents need numpy
        marks = [LongMarks(len(text), len(tokenizers)) if shown_long else None for _, _, text in long_items]
        for k, tokenizer in enumerate(tokenizers):
            tally = Tally(tokenizer, encoders[k][0])
            for (_, where, text), mark in zip(long_items, marks):
                _count_long(tally, tokenizer, text, where, mark)
            stats[k] = SegmentStats.combined([stats[k], tally.stats()], tally.specials)
        for (index, where, text), mark in zip(long_items, marks):
            if mark is not None:
                for place in long_document_places(text, tokenizers, mark, show):
                    candidates.append((place.differing, 0, -index, where, place))
    return stats, heapq.nlargest(show, candidates) if scoring else []


def _process_long_arrays(
    long_items: list[Item],
    tokenizers: Sequence[Any],
    encoders: Sequence[Any],
    show: int,
    facts_cache: dict[Any, Any],
    stats: list[SegmentStats],
    candidates: list[Candidate],
) -> None:
    """The documents longer than a segment counted on the fast paths, piece by piece
    (:mod:`toktools.analysis.long_tally`): added to ``stats`` after the chunk's other documents,
    as the piece-by-piece tally added them; their places (``show``) to ``candidates``."""
    from toktools.analysis.disagreement import long_document_places
    from toktools.analysis.long_tally import count_long, stretch_encoder
    from toktools.analysis.token_view import specials_added
    from toktools.corpus.long_documents import tokenizer_cuttable

    for index, tokenizer in enumerate(tokenizers):
        if ("cut", index) not in facts_cache:
            facts_cache[("cut", index)] = tokenizer_cuttable(tokenizer)
    cuttable = [facts_cache[("cut", index)] for index in range(len(tokenizers))]
    parts: list[list[SegmentStats]] = [[each] for each in stats]
    for index, where, text in long_items:
        counted, marks = count_long(text, where, tokenizers, encoders, cuttable, CHUNK_CHARS, show)
        for k, part in enumerate(counted):
            parts[k].append(part)
        if marks is not None:
            stretches = [stretch_encoder(each) for each in encoders]
            for place in long_document_places(text, tokenizers, marks, show, stretches, cuttable):
                candidates.append((place.differing, 0, -index, where, place))
            del marks
    for k, tokenizer in enumerate(tokenizers):
        stats[k] = SegmentStats.combined(parts[k], specials_added(tokenizer))


#: Count with array operations when numpy is installed (the loop below is the definition they
#: are tested against; tests switch this off to compare).
USE_ARRAYS = True
#: Count a document longer than a segment with the same array operations, its pieces laid end to
#: end (:mod:`toktools.analysis.long_tally`), rather than token by token from the reference's
#: encodings of each piece (:func:`_count_long`, which tests compare it with).
USE_LONG_ARRAYS = True
#: Take the ids of a byte-level BPE from tiktoken where it is exact, spans worked out from them
#: (:class:`~toktools.analysis.fast_offsets.ByteLevelSpans`).
USE_TIKTOKEN = True
#: Take the ids and spans of BERT-like pipelines from a per-word cache
#: (:class:`~toktools.analysis.word_spans.WordSpans`).
USE_WORDS = True


def span_source(tokenizer: Any) -> Any:
    """Where a tokenizer's ``(ids, tokens per document, starts, ends)`` come from without
    whole-text offsets (an object with ``arrays(texts, chunk)``), or None: tiktoken for a
    byte-level BPE it encodes exactly, else a per-word cache for a pipeline that cuts each
    whitespace word on its own."""
    from toktools.analysis.fast_offsets import byte_level_spans
    from toktools.analysis.word_spans import word_spans

    found: Any = byte_level_spans(tokenizer) if USE_TIKTOKEN else None
    if found is None and USE_WORDS:
        found = word_spans(tokenizer)
    return found


def _process_arrays(
    chunk: list[Item], texts: list[str], tokenizers: Sequence[Any], encoders: Sequence[Any], show: int
) -> tuple[list[SegmentStats], list[Candidate]]:
    from toktools.analysis.chunk_tally import tally_texts

    text, results = tally_texts(texts, tokenizers, encoders, show > 0)
    stats = [part for _, part, _ in results]
    candidates: list[Candidate] = []
    if show > 0 and texts:
        every_spans, marks = [spans for spans, _, _ in results], [mark for _, _, mark in results]
        for k, place in chunk_places(text, texts, marks, every_spans, show):
            index, where, _ = chunk[k]
            candidates.append((place.differing, 0, -index, where, place))
    return stats, candidates


def _process_loop(
    chunk: list[Item], texts: list[str], tokenizers: Sequence[Any], encoders: Sequence[Any], show: int
) -> tuple[list[SegmentStats], list[Candidate]]:
    docs = [Document(text) for text in texts]
    per_tokenizer = []
    encodings = []
    stats = []
    for tokenizer, (facts, encode, _) in zip(tokenizers, encoders):
        tally = Tally(tokenizer, facts)
        encoded = encode(texts)
        per_tokenizer.append([tally.add(d, ids, offsets) for d, (ids, offsets) in zip(docs, encoded)])
        stats.append(tally.stats())
        if show > 0:
            encodings.append(encoded)
    candidates: list[Candidate] = []
    if show > 0:
        for k, (index, where, text) in enumerate(chunk):
            found = [each[k] for each in per_tokenizer]
            for place in document_places(text, found, [each[k] for each in encodings], show):
                candidates.append((place.differing, 0, -index, where, place))
    return stats, candidates


def _count_long(tally: Tally, tokenizer: Any, text: str, where: Located, marks: Any = None) -> None:
    """Count a document longer than a segment in the pieces its tokenizer may be cut into
    (:mod:`toktools.corpus.long_documents`): the same statistics as counted whole. ``marks``
    (a :class:`~toktools.analysis.disagreement.LongMarks`) collects its boundaries for ``--show``."""
    from toktools.corpus.long_documents import encoded_pieces, tokenizer_cuttable

    tokens = 0
    cut = tokenizer_cuttable(tokenizer)
    for start, piece, encoding in encoded_pieces(tokenizer, text, cut, f"{where[0]}, line {where[1]}"):
        found = tally.add_piece(Document(piece), encoding.ids, encoding.offsets)
        if marks is not None:
            marks.add(start, *found)
        tokens += len(encoding.ids)
    tally.close_document(tokens)


def chunked(documents: Iterator[tuple[Located, str]]) -> Iterator[list[Item]]:
    chunk: list[Item] = []
    size = 0
    for index, (where, text) in enumerate(documents):
        chunk.append((index, where, text))
        size += len(text)
        if size >= CHUNK_CHARS or len(chunk) >= CHUNK_DOCUMENTS:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk
