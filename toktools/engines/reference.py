"""The reference engine: toktools' own tokenizer in a pool of forked worker processes, or behind a
zygote (one process that loads compiled code once, then forks the workers that inherit it)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from toktools.engines.base import DocumentSource, Engine, IdBatch, PackedIds, corpus_document, loaded_document
from toktools.engines.id_packing import Packed, joined, pack_id_lists, unpack_id_lists
from toktools.errors import ToktoolsError

#: What a forked worker encodes with: the engine's ids function, inherited with its caches.
_worker_ids: Callable[[list[str]], IdBatch] | None = None
#: Or, where the engine has an ids-only path, its function giving the packed arrays directly.
_worker_packed: Callable[[list[str]], tuple[bytes, bytes]] | None = None
#: Characters in a batch below which the reference stays in this process (forking costs more).
PARALLEL_CHARS = 1 << 17


def _set_worker_ids(
    ids: Callable[[list[str]], IdBatch], packed: Callable[[list[str]], tuple[bytes, bytes]] | None = None
) -> None:
    global _worker_ids, _worker_packed
    _worker_ids, _worker_packed = ids, packed


def _ready() -> None:
    """A task that only makes the pool fork its workers (which then run their set-up)."""


#: In a zygote (see :class:`ReferenceEngine`): its pool of workers, forked once compiled code is loaded.
_zygote_pool: Any = None


def _start_zygote(
    ids: Callable[[list[str]], IdBatch],
    packed: Callable[[list[str]], tuple[bytes, bytes]] | None,
    prepare: Callable[[], None],
    workers: int,
) -> None:
    """A zygote's set-up: load the compiled code, then fork the workers, which inherit it."""
    global _zygote_pool
    from multiprocessing import util

    from toktools.runtime.workers import start_pool, stop_pool

    prepare()
    _zygote_pool = start_pool(workers, initializer=_set_worker_ids, initargs=(ids, packed))
    # when the zygote leaves (its pool shut down without _stop_zygote: an engine never closed),
    # its workers are stopped first: multiprocessing would otherwise wait for them to exit
    util.Finalize(_zygote_pool, stop_pool, args=(_zygote_pool,), exitpriority=10)
    for _ in range(workers):
        _zygote_pool.submit(_ready)


def _encode_in_zygote(chunks: list[list[str]]) -> list[tuple[bytes, bytes]]:
    """The chunks spread over the zygote's workers: their packed results, in order."""
    return list(_zygote_pool.map(_encode_in_worker, chunks))


def _stop_zygote() -> None:
    """The zygote's workers stopped and waited for (so that their CPU time is counted as its
    children's, and so as this engine's)."""
    _zygote_pool.shutdown(wait=True)


def _encode_in_worker(texts: list[str]) -> tuple[bytes, bytes]:
    """Ids of a chunk, packed (:mod:`toktools.engines.id_packing`) to be sent back cheaply."""
    if _worker_packed is not None:
        return _worker_packed(texts)
    assert _worker_ids is not None
    return pack_id_lists(_worker_ids(texts))


class ReferenceEngine(Engine):
    """toktools' own tokenizer, in a pool of forked processes kept for the whole corpus
    (forking per batch would cost more than small batches take).

    Tokenizers whose parts :mod:`toktools.engines.ids_only` knows (byte-level BPE, BERT WordPiece,
    Unigram) take its ids-only path (:class:`toktools.engines.ids_only.IdsPath`), which gives the same
    ids without building encodings; others encode whole encodings and keep the ids. Large
    batches go to one pool of worker processes from :func:`toktools.runtime.workers.start_pool`,
    whichever way the ids are made.

    ``input_bytes``, when known, is the size of what will be encoded. An input large enough for
    compiled code (:meth:`~toktools.engines.ids_only.IdsPath.plans_compiled`: the BPE merge, for
    byte-level BPE) goes through a zygote: one process forked at once, which loads the compiled
    code while this process reads the first batch, then forks the workers, which inherit it.
    Loading is ~0.05 s from the machine code kept in the user cache
    (:mod:`toktools.runtime.machine_code`); the first time on a machine, numba compiles it there (as a
    process of toktools' own, without ``scipy.linalg``: see
    :func:`toktools.models.bpe.bulk_merge.without_scipy_linalg`), so numba never enters the caller's process.
    The batches go to the zygote, which spreads them over its workers; their ids come back as
    packed uint32 arrays (:meth:`encode_packed`)."""

    name = "reference"

    def __init__(
        self,
        document: DocumentSource,
        workers: int | None = None,
        input_bytes: int | None = None,
        fingerprint: str | None = None,
    ) -> None:
        """``fingerprint``, when given, names ``document`` (the sha256 of its file): the built
        tokenizer is then kept in, or taken from, the user cache (:mod:`toktools.engines.reference_cache`)."""
        from toktools.engines.ids_only import IdsPath, ids_encoder
        from toktools.engines.reference_cache import reference_tokenizer

        try:
            self.tokenizer = reference_tokenizer(lambda: corpus_document(loaded_document(document)), fingerprint)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ToktoolsError(f"the reference engine cannot load this tokenizer ({err})") from None
        self.workers = workers or os.cpu_count() or 1
        self._pool: Any = None
        #: the pool is a zygote (one process that spreads chunks over the workers it forked)
        self._zygote = False
        self._busy = False
        self._closed = False
        self.fast: IdsPath | None = ids_encoder(self.tokenizer)
        from toktools.runtime.workers import start_pool, worth_starting

        if (
            self.fast is not None
            and input_bytes is not None
            and worth_starting(self.workers, input_bytes, PARALLEL_CHARS) > 1
            and self.fast.plans_compiled(input_bytes)
        ):
            prepare = partial(self.fast.load_compiled, own_process=True)
            self._pool = start_pool(
                1, initializer=_start_zygote, initargs=(self._ids, self.fast.encode_packed, prepare, self.workers)
            )
            self._zygote = True
            self._pool.submit(_ready)  # forks it now

    def _ids(self, texts: list[str]) -> IdBatch:
        """The ids of ``texts`` in this process: the ids-only path where there is one."""
        if self.fast is not None:
            return self.fast.encode_batch(texts)
        ids_batch = getattr(self.tokenizer, "ids_batch", None)  # a .model under the sentencepiece rule
        if ids_batch is not None:
            return ids_batch(texts)  # type: ignore[no-any-return]
        return [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False, workers=1)]

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        here, packed = self._encode(texts)
        return here + unpack_id_lists(packed)

    def encode_packed(self, texts: Sequence[str]) -> PackedIds:
        """The same ids as :meth:`encode_batch` in one array (:class:`PackedIds`): the workers'
        packed uint32 ids joined as they come, with no Python int made per id."""
        here, packed = self._encode(texts)
        data, counts = joined([pack_id_lists(here), *packed] if here else packed)
        return PackedIds(data, counts)

    def _encode(self, texts: Sequence[str]) -> tuple[IdBatch, list[Packed]]:
        """The ids of ``texts``: those of the first ones encoded here, then the packed results
        of the workers for the rest, in order."""
        from toktools.runtime.workers import worth_starting

        texts = list(texts)
        chars = sum(map(len, texts))
        if not texts or (
            not self._zygote and (len(texts) < 2 or worth_starting(self.workers, chars, PARALLEL_CHARS // 2) <= 1)
        ):
            return self._ids(
                texts
            ), []  # small batches stay here, except with a zygote (its workers are ready; no cache here)
        warm: IdBatch = []
        if self._pool is None:
            if self._closed:  # a batch that started after close (an interrupt) must not fork a new pool
                raise RuntimeError("the reference engine is closed")
            # the first texts here: the workers are forked with the words they hold cached, so
            # frequent words are not missed (and merged) once per worker
            head = max(1, len(texts) // 32)
            warm, texts = self._ids(texts[:head]), texts[head:]
            if self.fast is not None:  # bulk merges loaded once here, not once per worker
                self.fast.prepare_for_volume((chars - sum(map(len, texts))) / max(chars, 1), self.workers)
            chars = sum(map(len, texts))
            from toktools.runtime.workers import start_pool

            # workers that die with this process and leave signals to it (forked on first use)
            packed = self.fast.encode_packed if self.fast is not None else None
            self._pool = start_pool(self.workers, initializer=_set_worker_ids, initargs=(self._ids, packed))
        # contiguous chunks of about equal characters, a few per worker
        target = max(1, -(-chars // (self.workers * 2)))
        chunks, chunk, size = [], [], 0
        for text in texts:
            chunk.append(text)
            size += len(text)
            if size >= target:
                chunks.append(chunk)
                chunk, size = [], 0
        if chunk:
            chunks.append(chunk)
        if self._zygote:
            self._busy = True
            try:
                return [], self._pool.submit(_encode_in_zygote, chunks).result()
            finally:
                self._busy = False
        return warm, list(self._pool.map(_encode_in_worker, chunks))

    def close(self) -> None:
        """Kill the workers (also from another thread while a batch is in flight: it then
        fails with ``BrokenProcessPool`` instead of finishing)."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None and self._zygote and not self._busy:
            try:  # idle: a clean stop, every process waited for
                pool.submit(_stop_zygote).result(timeout=10)
                pool.shutdown(wait=True)
                return
            except Exception:  # noqa: BLE001 - it is stopped the hard way below
                pass
        if pool is not None:
            from toktools.runtime.workers import stop_pool

            stop_pool(pool)
