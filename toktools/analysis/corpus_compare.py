"""Several tokenizers on one corpus, in one streaming pass.

The corpus is read once, in chunks of documents; each chunk is encoded by every tokenizer and
counted into a :class:`~toktools.analysis.segstats.Tally` per tokenizer, in forked worker processes that
keep their caches from chunk to chunk (results are combined in chunk order, so they do not
depend on the number of workers). Memory stays flat: the tallies are histograms,
and only the ``show`` places where the tokenizers disagree most are kept (a bounded heap of
windows of at most 81 characters with their tokens, :mod:`toktools.analysis.disagreement`),
to be aligned at the end. Time is linear in the corpus.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.alignment import named_tokenizers
from toktools.analysis.compare_chunks import Candidate, Item, Located, chunked, documents_of, process_chunk
from toktools.analysis.disagreement import ShownPlace, render_places_plain, shown_places
from toktools.analysis.metrics import render_metrics_plain, segmentation_line, warnings_of
from toktools.analysis.segstats import RENYI_ALPHA, SegmentStats
from toktools.corpus import reading as corpus
from toktools.errors import ToktoolsError

__all__ = ["CorpusComparison", "ShownLine", "compare_corpus", "iter_documents"]

ProgressCallback = Callable[[int, int], None]


def iter_documents(
    sources: Sequence[corpus.CorpusSource],
    json_field: str | None = None,
    errors: corpus.ErrorPolicy = "strict",
    progress: ProgressCallback | None = None,
) -> Iterator[tuple[Located, str]]:
    """``((path, line number), text)`` of every document: non-blank lines without their line
    ending (``\n`` or ``\r\n``), or with ``json_field`` the field of each JSON Lines record
    (one record is one document, newlines inside it included). Progress is in bytes read over
    all sources."""
    plain = [corpus.CorpusSource(s.path) for s in sources]
    total = sum(s.size() for s in plain)
    done = 0
    for source in plain:
        callback = None if progress is None else (lambda d, _t, base=done: progress(base + d, total))
        chunks = corpus.iter_chunks([source], errors=errors, progress=callback)
        for number, line in documents_of(chunks, source.path, json_field):
            yield (source.path, number), line
        done += source.size()


def _sampled(documents: Iterator[tuple[Located, str]], total: int | None, n: int) -> Iterator[tuple[Located, str]]:
    """``n`` documents spread evenly over ``total`` (every k-th), or, when the total is unknown
    (standard input), a reservoir sample with a fixed seed, in corpus order."""
    if total is not None:
        if total <= n:
            yield from documents
            return
        wanted = {i * total // n for i in range(n)}
        for index, document in enumerate(documents):
            if index in wanted:
                yield document
        return
    rng = random.Random(0)
    reservoir: list[tuple[int, tuple[Located, str]]] = []
    for index, document in enumerate(documents):
        if index < n:
            reservoir.append((index, document))
        else:
            j = rng.randrange(index + 1)
            if j < n:
                reservoir[j] = (index, document)
    for _, document in sorted(reservoir, key=lambda item: item[0]):
        yield document


#: A place where the tokenizers disagree, aligned (the name of the shown lines before places).
ShownLine = ShownPlace


@dataclass
class CorpusComparison:
    """What ``toktools compare --corpus`` reports: statistics per tokenizer, the most disputed
    documents, and how the corpus was read."""

    sources: list[str]
    sampled: int | None
    metrics: dict[str, SegmentStats]
    shown: list[ShownPlace] = field(default_factory=list)
    #: per tokenizer, ``unused`` tokens of its vocabulary never seen in the corpus, longest first
    unused: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sources": self.sources,
            "sample": self.sampled,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "shown": [s.to_dict() for s in self.shown],
        }
        if self.unused:
            data["unused"] = self.unused
        data["warnings"] = warnings_of(self.metrics)
        return data

    def render_plain(
        self, width: int | None = None, byte_view: bool = False, places: bool = True, markdown: bool = False
    ) -> str:
        """The shown places as token boxes (``places``; see
        :func:`toktools.analysis.disagreement.render_places_plain`), then the tables;
        ``markdown``: the tables in Markdown, the places in a fenced block, for READMEs and papers."""
        parts = []
        if places and self.shown:
            boxes = render_places_plain(self.shown, len(self.sources) > 1)
            parts.append("```text\n" + boxes.rstrip("\n") + "\n```\n" if markdown else boxes)
        first = next(iter(self.metrics.values()), None)
        what = (
            f"{first.documents} documents, {first.words} words, {first.characters} characters"
            if first is not None
            else "no documents"
        )
        if self.sampled is not None:
            what += f" (a sample of {self.sampled} spread over the corpus)"
        what += "\n" + segmentation_line(self.metrics)
        if markdown:
            what = what.replace("\n", "  \n")
        tables = render_metrics_plain(self.metrics, lengths=True, vocabulary=True, markdown=markdown)
        parts.append(what + "\n\n" + tables)
        for name, tokens in self.unused.items():
            shown_tokens = " ".join(f"`{t}`" for t in tokens) if markdown else " ".join(tokens)
            parts.append(f"{name}: {len(tokens)} never-seen tokens, longest first: " + shown_tokens)
        for line in warnings_of(self.metrics):
            parts.append(f"> **{line}**" if markdown else line)
        if markdown:  # blank lines: each part its own Markdown block
            return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"
        return "\n".join(parts)


#: What forked workers inherit: the tokenizers (no truncation) and how many lines to keep.
_job: tuple[list[Any], int] | None = None
_worker_facts: dict[Any, Any] = {}


def _process(chunk: list[Item]) -> tuple[list[SegmentStats], list[Candidate]]:
    """Encode one chunk of documents with every tokenizer and count it: the statistics per
    tokenizer and the chunk's ``show`` most disputed documents. Runs in a worker (or inline)."""
    assert _job is not None
    tokenizers, show = _job
    return process_chunk(chunk, tokenizers, show, _worker_facts)


def _run(chunks: Iterator[list[Item]], workers: int) -> Iterator[tuple[list[SegmentStats], list[Candidate]]]:
    """Results of :func:`_process` in chunk order: inline, or in forked workers that keep their
    caches across chunks, with a bounded number of chunks in flight (flat memory)."""
    from toktools.runtime.workers import fork_available, process_pool

    if workers <= 1 or not fork_available():  # workers must inherit the tokenizers (_job)
        for chunk in chunks:
            yield _process(chunk)
        return
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    if second is None:  # one chunk: starting processes would cost more than it saves
        yield _process(first)
        return
    _load_segmenter_before_fork(first + second)
    with process_pool(workers) as pool:
        in_flight = [pool.submit(_process, first), pool.submit(_process, second)]
        for chunk in chunks:
            in_flight.append(pool.submit(_process, chunk))
            if len(in_flight) >= 2 * workers:
                yield in_flight.pop(0).result()
        for result in in_flight:
            yield result.result()


def _load_segmenter_before_fork(items: list[Item]) -> None:
    """The Chinese segmenter loaded once here, for the forked workers to inherit, when the first
    chunks hold Chinese: not once in every worker (the compiled one costs milliseconds from the
    user cache; jieba's own dictionary, without numba, ~0.8 s of CPU)."""
    from toktools.analysis.words import load_segmenter, needs_segmenter

    if any(needs_segmenter(text) for _, _, text in items):
        load_segmenter()


def compare_corpus(
    tokenizers: Mapping[str, Any] | Sequence[tuple[str, Any]],
    paths: Sequence[str],
    *,
    json_field: str | None = None,
    errors: corpus.ErrorPolicy = "strict",
    show: int = 0,
    sample: int | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    cluster: Any = None,
    renyi_alpha: float = RENYI_ALPHA,
    unused: int = 0,
) -> CorpusComparison:
    """Statistics of every tokenizer on the corpus ``paths`` (files, directories, globs, ``-``;
    plain or compressed), read once; ``show`` keeps the places where the most token boundaries
    differ (:mod:`toktools.analysis.disagreement`) and aligns them;
    ``sample`` reads only that many documents, spread evenly over the corpus (for files, a first
    pass counts the documents). Chunks of documents are encoded and counted in ``workers``
    processes (default: every core); the result is the same for any number of workers.
    ``cluster`` (an address such as ``"tcp://host:8786"`` or ``"local:4"``, a
    :class:`toktools.cluster.settings.Cluster` or a ``distributed.Client``) does the work on a Dask
    cluster instead, with the same result; ``paths`` may then be fsspec URLs. ``renyi_alpha``
    is the order of the Rényi efficiency (see :mod:`toktools.analysis.segstats`); ``unused``
    lists that many never-seen tokens per tokenizer (:func:`never_seen`)."""
    import os

    global _job
    if not renyi_alpha > 0:
        raise ToktoolsError(f"the Rényi order must be positive, not {renyi_alpha}")
    items = named_tokenizers(tokenizers)
    if not items:
        raise ToktoolsError("give at least one tokenizer to compare")
    plain = [(name, token_view.without_truncation(tok)) for name, tok in items]
    if cluster is not None:
        result = _compare_on_cluster(
            plain, paths, cluster, json_field=json_field, errors=errors, show=show, sample=sample, progress=progress
        )
        for each in result.metrics.values():
            each.renyi_alpha = renyi_alpha
        return _with_unused(result, plain, unused)
    sources = corpus.expand_sources(list(paths))
    documents = iter_documents(sources, json_field, errors, progress)
    if sample is not None:
        total = None
        from toktools.io.inputs import read_once

        if not any(read_once(s.path) for s in sources):  # else a one-pass sample: a FIFO cannot be counted first
            total = sum(1 for _ in iter_documents(sources, json_field, errors))
        documents = _sampled(documents, total, sample)
    specials = [token_view.specials_added(tok) for _, tok in plain]
    totals = [SegmentStats.combined([], n) for n in specials]  # running totals: memory stays flat
    best: list[Candidate] = []
    _job = ([tok for _, tok in plain], show)
    _worker_facts.clear()
    try:
        if workers is None and _all_threaded([tok for _, tok in plain]):
            workers = 1  # tokenizers' own threads use every core: no worker processes
        for stats, candidates in _run(chunked(documents), workers or os.cpu_count() or 1):
            totals = [SegmentStats.combined([total, part], n) for total, part, n in zip(totals, stats, specials)]
            best = heapq.nlargest(show, best + candidates) if show else []
    finally:
        _job = None
        _worker_facts.clear()
    for each in totals:
        each.renyi_alpha = renyi_alpha
    return _with_unused(_comparison(plain, totals, best, [s.path for s in sources], sample), plain, unused)


def never_seen(tokenizer: Any, stats: SegmentStats, n: int) -> list[str]:
    """``n`` tokens of the vocabulary (added tokens included) that never occur in the counted
    documents, as people read them (:func:`toktools.analysis.token_view.readable`), longest
    first (the text they stand for; then by id): candidates for under-trained tokens."""
    seen = stats.token_counts
    missing = [(token, i) for token, i in tokenizer.get_vocab().items() if i not in seen]
    shown = [(token_view.readable(tokenizer, token), i) for token, i in missing]
    shown.sort(key=lambda item: (-len(item[0]), item[1]))
    return [text for text, _ in shown[:n]]


def _with_unused(result: CorpusComparison, plain: Sequence[tuple[str, Any]], n: int) -> CorpusComparison:
    if n > 0:
        result.unused = {name: never_seen(tok, result.metrics[name], n) for name, tok in plain}
    return result


def _all_threaded(tokenizers: Sequence[Any]) -> bool:
    """Whether every tokenizer's statistics encoder is tiktoken or ``tokenizers`` (threads); the
    encoders and token facts are built here, once, for the chunks counted in this process."""
    from toktools.analysis import compare_chunks
    from toktools.analysis.chunk_tally import numpy_available
    from toktools.analysis.fast_offsets import is_threaded, offsets_encoder
    from toktools.analysis.segstats import _TokenFacts

    arrays = compare_chunks.USE_ARRAYS and numpy_available()
    for index, tok in enumerate(tokenizers):
        source = compare_chunks.span_source(tok) if arrays else None
        if arrays:
            _worker_facts[("spans", index)] = source
        encode: Any
        if source is None:
            encode = _worker_facts[-1 - index] = offsets_encoder(tok)
        else:
            encode = getattr(source, "encode", None)  # a word cache encodes its new words with it
        if encode is not None and not is_threaded(encode):
            _worker_facts.clear()
            return False
        _worker_facts[index] = _TokenFacts(tok)
    return True


def _comparison(
    plain: Sequence[tuple[str, Any]],
    totals: Sequence[SegmentStats],
    best: Sequence[Candidate],
    sources: list[str],
    sample: int | None,
) -> CorpusComparison:
    if all(total.documents == 0 for total in totals):  # as every other command on an empty corpus
        raise ToktoolsError("the corpus holds no text: no documents to compare")
    from toktools.analysis.common_chars import count_common

    metrics = {name: total for (name, _), total in zip(plain, totals)}
    for (_, tok), total in zip(plain, totals):
        count_common(tok, total)
    return CorpusComparison(sources, sample, metrics, shown_places(best, plain))


def _compare_on_cluster(
    plain: Sequence[tuple[str, Any]],
    paths: Sequence[str],
    cluster: Any,
    *,
    json_field: str | None,
    errors: str,
    show: int,
    sample: int | None,
    progress: ProgressCallback | None,
) -> CorpusComparison:
    """:func:`compare_corpus` on a Dask cluster (see :mod:`toktools.cluster.compare`)."""
    from contextlib import nullcontext

    from toktools.cluster import blocks as distributed
    from toktools.cluster.compare import compare_on_cluster
    from toktools.cluster.settings import DEFAULT_BLOCK_BYTES, as_cluster

    if sample is not None:
        raise ToktoolsError("a sample is read here, not on a cluster: drop the sample or the cluster")
    if distributed.is_client(cluster):
        distributed.check_workers(cluster, str(cluster.scheduler.address))
        connection: Any = nullcontext(cluster)
        largest = DEFAULT_BLOCK_BYTES
    else:
        chosen = as_cluster(cluster)
        assert chosen is not None
        connection = distributed.cluster_client(chosen.address, chosen.timeout)
        largest = chosen.block_bytes
    tokenizers = [tok for _, tok in plain]
    with connection as client:
        totals, best, sources = compare_on_cluster(
            client,
            tokenizers,
            list(paths),
            show=show,
            json_field=json_field,
            errors=errors,
            block_bytes=distributed.balanced_block_bytes(client, list(paths), largest),
            progress=progress,
        )
    return _comparison(plain, totals, best, sources, sample)
