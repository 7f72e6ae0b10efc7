"""The corpus statistics of ``compare`` on a Dask cluster: the local run's report, byte for byte.

Each block of the corpus (see :mod:`toktools.cluster.blocks`) is one task: its documents are
encoded by every tokenizer (sent once to each worker) and tallied, exactly as a chunk is in
the local pool. A block does not know how many documents and lines come before it, so it
numbers its own from 1 and says how many it holds; the client, taking the results in block
order, shifts the few kept documents' numbers. Statistics are histograms and sums, so they
do not depend on how documents were grouped.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Sequence
from typing import Any

from toktools.errors import ToktoolsError

#: The tokenizers a worker last received (the same objects, task after task: they were
#: scattered once), with their token facts, kept from task to task.
_cache: tuple[list[Any], dict[Any, Any]] | None = None
_cache_lock = threading.Lock()


def _facts_for(tokenizers: Sequence[Any]) -> dict[Any, Any]:
    global _cache
    with _cache_lock:
        if (
            _cache is None
            or len(_cache[0]) != len(tokenizers)
            or any(a is not b for a, b in zip(_cache[0], tokenizers))
        ):
            _cache = (list(tokenizers), {})
        return _cache[1]


def compare_block(block: Any, tokenizers: Sequence[Any], show: int, json_field: str | None, errors: str) -> bytes:
    """One block's statistics per tokenizer, its ``show`` most disputed documents (numbered
    within the block), and its counts of documents and lines; pickled (Dask walks other
    results item by item)."""
    import pickle

    from toktools.analysis import compare_chunks
    from toktools.analysis.segstats import SegmentStats
    from toktools.cluster import blocks as distributed
    from toktools.corpus import reading as corpus

    source = corpus.CorpusSource(block.path)
    pieces = list(distributed.read_block(block))
    try:
        texts = [corpus.decode_lines(piece, source, 1, errors) for piece in pieces]  # type: ignore[arg-type]
        documents = [
            ((block.path, number), text) for number, text in compare_chunks.documents_of(texts, block.path, json_field)
        ]
    except ToktoolsError:
        raise _relocated(block, pieces, errors, json_field) from None
    lines = sum(p.count(b"\n") + (0 if p.endswith(b"\n") or not p else 1) for p in pieces)
    del pieces
    facts = _facts_for(tokenizers)
    specials = [_specials(tok) for tok in tokenizers]
    totals = [SegmentStats.combined([], n) for n in specials]
    best: list[Any] = []
    for chunk in compare_chunks.chunked(iter(documents)):
        stats, candidates = compare_chunks.process_chunk(chunk, tokenizers, show, facts)
        totals = [SegmentStats.combined([t, part], n) for t, part, n in zip(totals, stats, specials)]
        best = heapq.nlargest(show, best + candidates) if show else []
    return pickle.dumps((totals, best, len(documents), lines), protocol=pickle.HIGHEST_PROTOCOL)


def _specials(tokenizer: Any) -> int:
    from toktools.analysis import token_view

    return token_view.specials_added(tokenizer)


def _relocated(block: Any, pieces: list[bytes], errors: str, json_field: str | None) -> ToktoolsError:
    """The block's error again, now naming the line in the whole file."""
    from toktools.analysis import compare_chunks
    from toktools.cluster import blocks as distributed
    from toktools.corpus import reading as corpus

    source = corpus.CorpusSource(block.path)
    first = distributed.lines_before(block) + 1
    try:
        line = first
        texts = []
        for piece in pieces:
            texts.append(corpus.decode_lines(piece, source, line, errors))  # type: ignore[arg-type]
            line += piece.count(b"\n")
        for _ in compare_chunks.documents_of(texts, block.path, json_field, first_line=first):
            pass
    except ToktoolsError as err:
        return err
    return ToktoolsError(f"{block.path}: cannot read")  # pragma: no cover - the error recurs


def compare_on_cluster(
    client: Any,
    tokenizers: Sequence[Any],
    inputs: Sequence[str],
    *,
    show: int,
    json_field: str | None,
    errors: str,
    block_bytes: int,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Any], list[Any], list[str]]:
    """(statistics per tokenizer, the ``show`` most disputed documents as
    ``compare_corpus`` keeps them, the files read) for ``inputs`` on the cluster."""
    import pickle

    from toktools.analysis.segstats import SegmentStats
    from toktools.cluster import blocks as distributed

    blocks = distributed.plan_blocks(_named_like_local(inputs), block_bytes)
    sent = client.scatter(list(tokenizers), broadcast=True, hash=False)
    futures = [client.submit(compare_block, block, sent, show, json_field, errors, pure=False) for block in blocks]
    file_sizes: dict[str, int] = {}
    sizes = [distributed.block_size(block, file_sizes) for block in blocks]
    total_bytes, done_bytes = sum(sizes), 0
    specials = [_specials(tok) for tok in tokenizers]
    totals = [SegmentStats.combined([], n) for n in specials]
    best: list[Any] = []
    documents_before = 0
    lines_before: dict[str, int] = {}
    try:
        for future, block, size in zip(futures, blocks, sizes):
            stats, candidates, documents, lines = pickle.loads(future.result())  # noqa: S301 - our tasks' results
            offset = lines_before.get(block.path, 0)
            for share, differing, minus_index, (path, line), text in candidates:
                best.append((share, differing, minus_index - documents_before, (path, line + offset), text))
            best = heapq.nlargest(show, best) if show else []
            totals = [SegmentStats.combined([t, part], n) for t, part, n in zip(totals, stats, specials)]
            documents_before += documents
            lines_before[block.path] = offset + lines
            done_bytes += size
            if progress is not None:
                progress(done_bytes, total_bytes)
    except ToktoolsError:
        raise
    except Exception as err:  # a task failed on a worker: its message is ours if it was a ToktoolsError
        raise ToktoolsError(f"the cluster failed: {type(err).__name__}: {err}") from None
    finally:
        for future in futures:
            future.cancel()
    return totals, best, list(dict.fromkeys(block.path for block in blocks))


def _named_like_local(inputs: Sequence[str]) -> list[str]:
    """Local directories and globs expanded as a local run names their files (the report
    shows the names); URLs as they are."""
    from toktools.corpus import reading as corpus

    named: list[str] = []
    for raw in inputs:
        if "://" in raw or raw == "-":
            named.append(raw)
        else:
            named.extend(source.path for source in corpus.expand_sources([raw]))
    return named
