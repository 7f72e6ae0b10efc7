"""Document-aware outputs written here: Megatron / npy / bin (one output or shards, resumable
through their manifest: :mod:`toktools.corpus.manifest`); the one encode loop every output goes
through, local or on a cluster (:func:`encode_documents`).

0. read the tokenizer: from the start-up cache when its ``tokenizer.json`` was seen before
   (:mod:`toktools.corpus.prepared_tokenizer`: then it is parsed only if an engine needs it);
1. read the inputs as documents (:mod:`toktools.corpus.documents`), in bounded segments;
2. encode batches of them with the chosen engine (:mod:`toktools.engines.choice`), while the next
   batch is being read; a sample of documents spread over the input is re-encoded with the
   reference (:mod:`toktools.corpus.verify`) and any difference stops the run;
3. write documents (with ``prepend_bos`` / ``append_eos`` ids) into outputs
   (:mod:`toktools.corpus.writers`); with ``shard_tokens`` a new shard starts after the
   document that reaches the count, so shard boundaries depend on token counts only. An
   engine that gives a batch's ids as one packed array (tiktoken: :class:`PackedIds`) has
   them written from it, with no Python int per id;
4. with shards, a manifest (``PREFIX-manifest.json``, :mod:`toktools.corpus.manifest`)
   rewritten after every finished shard: tokenizer fingerprint, engine, settings, inputs
   (size, sha256), shards (documents, tokens, files with sha256, where in the input the next
   shard starts).

The ids do not depend on the engine or on the number of workers, so neither is part of the
settings a resumed run must match. Documents with no token of their own are dropped.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from toktools.corpus.diagnostics import TokenTally
from toktools.corpus.documents import DocumentReader, Position, Segment
from toktools.corpus.manifest import (
    MANIFEST_FORMAT,  # noqa: F401 - re-exported (toktools.encode_shards)
    check_outputs,
    complete,
    input_entries,
    is_complete,
    manifest_path,
    new_manifest,
    output_base,
    remove_shards_from,
    resume_local,
    shard_base,
    shard_entry,
    shard_files,
    write_manifest,
)
from toktools.corpus.options import (
    BATCH_BYTES,  # noqa: F401 - re-exported (toktools.encode_shards)
    DEFAULT_VERIFY,  # noqa: F401 - re-exported (toktools.encode_shards)
    CorpusProgress,
    EncodeOptions,
    shard_settings,
)
from toktools.corpus.prepared_tokenizer import load_corpus_tokenizer
from toktools.corpus.verify import Verifier, start_checker
from toktools.corpus.writers import Committer, DocumentWriter, ShardInfo, output_files
from toktools.engines.base import PackedIds


@dataclass
class CorpusResult:
    """What a run did, for the CLI's summary and for scripts."""

    engine: str
    documents: int
    tokens: int
    outputs: list[Path]
    manifest: Path | None
    shards_written: int
    shards_kept: int
    input_bytes: int
    seconds: float
    verified: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    #: bytes of text the --verify checker re-encoded (``verified`` counts the texts)
    verified_bytes: int = 0
    #: why this engine encoded the run (``--verbose``), and what else ``auto`` passed over
    why: str = ""


def _batches(reader: Iterator[Segment], batch_bytes: int) -> Iterator[list[Segment]]:
    batch: list[Segment] = []
    size = 0
    for segment in reader:
        batch.append(segment)
        size += len(segment.text)
        if size >= batch_bytes:
            yield batch
            batch = []
            size = 0
    if batch:
        yield batch


def encode_shards(
    inputs: Sequence[str | Path], tokenizer: Any, output: str | Path, options: EncodeOptions
) -> CorpusResult:
    """Encode ``inputs`` here into one output or into ``options.shard_tokens`` shards with a
    resumable manifest (the options as :func:`toktools.corpus.encode.encode_corpus` takes them;
    those of other ways of running, such as ``cluster``, are not read here)."""
    from toktools.corpus.reading import expand_sources
    from toktools.engines.analysis import Analysis, analyse, cuttable
    from toktools.engines.choice import likely_engine, make_engine

    started = time.perf_counter()
    collector = CollectorPause()  # until the engine is built
    checker = None
    committer: Committer | None = None
    preloaded: Callable[[], None] = _nothing
    copies = ExitStack()  # of the inputs that can be read only once: hashed first, then encoded
    fmt, engine, force = options.format, options.engine, options.force
    try:
        # the document itself is parsed only when needed, when start-up is cached (corpus_tokenizer)
        tok = load_corpus_tokenizer(tokenizer)
        fingerprint = tok.fingerprint
        sources = expand_sources([str(p) for p in inputs])
        sources = _rereadable(sources, copies)
        sizes = [s.size() for s in sources if not s.is_stdin]
        input_bytes = sum(sizes) if len(sizes) == len(sources) else None
        # the --verify checker is forked now: it builds the reference on the other core while
        # this process checks the outputs, hashes the inputs and builds its engine (not when
        # auto will take the reference, which needs no checker)
        checker = start_checker(
            tok.document,
            options.verify,
            likely_engine(engine, tok.shape, options.workers, input_bytes),
            fingerprint=fingerprint,
            input_bytes=input_bytes,
        )
        # gigatoken's imports (awkward's above all) on a thread, while this one hashes the inputs
        preloaded = _preload(engine, tok, options.workers, input_bytes)
        written_as = shard_settings(tok, options)

        # outputs: never an input (nor a file of the tokenizer); existing ones need force (or are resumed)
        base, suffix = output_base(fmt, Path(output))
        manifest_file = manifest_path(base) if options.shard_tokens is not None else None
        if manifest_file is not None:
            planned = [manifest_file, *output_files(fmt, shard_base(base, 0), suffix).values()]
        else:
            planned = list(output_files(fmt, base, suffix).values())
        check_outputs(
            planned,
            shard_files(base, suffix) if manifest_file is not None else [],
            [s.path for s in sources if not s.is_stdin],
            tokenizer,
            force=force or (manifest_file is not None and manifest_file.exists()),
            named=Path(output),
        )

        settings = written_as.as_manifest(options)
        inputs_json = input_entries(sources)
        shards: list[dict[str, Any]] = []
        start = Position(0, 0, 1)
        if manifest_file is not None and not force and manifest_file.exists():
            shards, start = resume_local(manifest_file, fingerprint, settings, inputs_json, base, fmt, suffix)

        manifest = new_manifest(fingerprint, written_as.vocab_size, settings, inputs_json, shards)
        if manifest_file is not None:  # shards synced and put in place while the next is encoded
            committer = Committer()
        kept = len(shards)
        if shards and start.source >= len(sources) and is_complete(manifest_file):
            return _result(manifest, base, suffix, fmt, manifest_file, 0, kept, sources, started, 0, "none")

        if engine in ("auto", "tiktoken"):
            analysis = tok.analysis or analyse(tok.document(), fingerprint)
        else:  # the tiktoken checks are not needed
            analysis = Analysis("not analysed", cuttable=cuttable(tok.shape))
        preloaded()  # done before anything forks (the reference's workers)
        chosen = make_engine(
            engine,
            tok.document,
            workers=options.workers,
            analysis=analysis,
            fingerprint=fingerprint,
            input_bytes=input_bytes,
            shape=tok.shape,
            raw=tok.raw_json,
        )
        tok.remember(analysis)  # for the next run on this tokenizer.json (no parse, no analysis)
        collector.resume()
        manifest["engine"] = chosen.name
        reader = DocumentReader(
            sources,
            options.document,
            written_as.field,
            cuttable=analysis.cuttable,
            segment_chars=options.segment_chars,
            max_document_bytes=options.max_document_bytes,
            start=start,
        )
        verifier = Verifier(
            chosen.name,
            tok.document,
            options.verify,
            reader.total,
            sources,
            process=checker,
            cuttable=analysis.cuttable,
        )
        checker = None  # the verifier closes it
        verifier.start()  # before this process starts threads (unless the checker is already running)
        written = 0
        tally = TokenTally.for_model(tok.shape.get("model") or {}, tok.token_id)

        def new_writer() -> DocumentWriter:
            target = shard_base(base, len(shards)) if manifest_file is not None else base
            return DocumentWriter(fmt, target, written_as.dtype, suffix, committer=committer)

        def finish_shard(info: ShardInfo, end: Position | None) -> None:
            nonlocal written
            written += 1
            shards.append(shard_entry(len(shards), info, chosen.name, next=end.as_json() if end is not None else None))
            if manifest_file is not None and committer is not None:
                # recorded once the shard is on disk: queued after it, with the shards up to it
                committer.submit(partial(write_manifest, manifest_file, {**manifest, "shards": list(shards)}))
            elif manifest_file is not None:
                write_manifest(manifest_file, manifest)

        from toktools.corpus.line_blocks import encode_line_blocks, takes_blocks

        try:
            if takes_blocks(chosen, options.document):
                encode_line_blocks(
                    sources,
                    chosen,
                    verifier,
                    new_writer,
                    finish_shard,
                    bos_id=written_as.bos_id,
                    eos_id=written_as.eos_id,
                    shard_tokens=options.shard_tokens,
                    progress=options.progress,
                    total=reader.total,
                    cuttable=analysis.cuttable,
                    max_document_bytes=reader.max_document_bytes,  # the default follows cuttable
                    start=start,
                    tokens_before=sum(s["tokens"] for s in shards),
                    kept=len(shards),
                    tally=tally,
                )
            else:
                encode_documents(
                    reader,
                    chosen,
                    verifier,
                    new_writer,
                    finish_shard,
                    bos_id=written_as.bos_id,
                    eos_id=written_as.eos_id,
                    shard_tokens=options.shard_tokens,
                    batch_bytes=options.batch_bytes,
                    progress=options.progress,
                    tokens_before=sum(s["tokens"] for s in shards),
                    kept=len(shards),
                    tally=tally,
                )
        finally:
            chosen.close()
            verifier.close()
        if committer is not None:
            committer.close()  # every shard on disk and recorded before the run is complete
        tally.warn()
        complete(manifest)
        if manifest_file is not None:
            write_manifest(manifest_file, manifest)
            remove_shards_from(base, suffix, len(shards))  # shards of an older, longer run (with force)
        result = _result(
            manifest,
            base,
            suffix,
            fmt,
            manifest_file,
            written,
            kept,
            sources,
            started,
            verifier.done,
            chosen.name,
            verified_bytes=verifier.bytes_checked,
        )
        result.why = chosen.why
        routed = getattr(chosen, "fallback_documents", 0)
        if routed:
            result.why += f"; {routed} document(s) with code points gigatoken's tables do not share went to tokenizers"
        return result
    finally:
        preloaded()
        collector.resume()
        if committer is not None:  # the shards finished before a failure stay written and recorded
            committer.close(check=False)
        if checker is not None:
            checker.close()
        copies.close()


def _nothing() -> None:
    pass


def _preload(name: str, tok: Any, workers: int | None, input_bytes: int | None) -> Callable[[], None]:
    """Start importing gigatoken's modules and loading the tokenizer with it when it is the
    engine to be tried first (see :func:`toktools.engines.gigatoken_engine.preload`); returns what
    waits for it."""
    from toktools.engines.choice import first_tried
    from toktools.engines.gigatoken_engine import configuration_reason, gigatoken_available, preload

    if (
        first_tried(name, tok.shape, workers, input_bytes) != "gigatoken"
        or configuration_reason(tok.shape) is not None
        or not gigatoken_available()
    ):
        return _nothing
    from toktools.engines.gigatoken_probe import known_refused

    if known_refused(tok.fingerprint):
        return _nothing
    return preload(tok.raw_json)


def _rereadable(sources: list[Any], copies: ExitStack) -> list[Any]:
    """The sources, a FIFO or device among them read from a copy (:mod:`toktools.io.inputs`):
    the manifest hashes every named input before it is encoded. Standard input is streamed."""
    from dataclasses import replace

    from toktools.io.inputs import rereadable

    paths = copies.enter_context(rereadable([s.path for s in sources], stdin=False))
    return [s if s.path == path else replace(s, path=path) for s, path in zip(sources, paths)]


class CollectorPause:
    """The cyclic garbage collector off from now until :meth:`resume` (if it was on). Start-up
    builds ~10^5 containers (the parsed ``tokenizer.json``, the engine's tables, gigatoken's
    and awkward's modules) and makes no garbage cycles; with the collector on, its full passes
    over them cost a tenth of a short run. It is back on before the encoding loop, so a long
    run collects as usual; what start-up made goes to the oldest generation first
    (:func:`toktools.runtime.gc_pause.promote_young`: else the first young pass walked all of
    it, ~19 ms at the start of a gigatoken run)."""

    def __init__(self) -> None:
        import gc

        self._was_on = gc.isenabled()
        gc.disable()

    def resume(self) -> None:
        import gc

        if self._was_on:
            from toktools.runtime.gc_pause import promote_young

            promote_young()
            gc.enable()
            self._was_on = False


def encode_documents(
    reader: DocumentReader,
    engine: Any,
    verifier: Verifier,
    new_writer: Callable[[], DocumentWriter],
    on_shard: Callable[[ShardInfo, Position | None], None],
    *,
    bos_id: int | None,
    eos_id: int | None,
    shard_tokens: int | None,
    batch_bytes: int,
    progress: CorpusProgress | None,
    tokens_before: int = 0,
    kept: int = 0,
    tally: TokenTally | None = None,
) -> None:
    """The documents of ``reader``, encoded and written: the one loop behind every output, local
    or on a cluster (:func:`toktools.cluster.encode.encode_block`), so both give the same
    bytes by construction. With ``shard_tokens``, a shard ends after the document that reaches
    the count; ``on_shard`` gets each finished shard and where the next one starts. At least one
    output is written unless ``kept`` shards came from an earlier run. The next batch is read
    while the engine encodes the current one. ``tally`` counts unknown and byte-fallback ids."""
    writer: DocumentWriter | None = None
    doc_has_tokens = False
    doc_length = 0  # ids of the open document so far (packed batches: the writer does not count them)
    tokens_total = tokens_before
    finished = 0
    packed_encode = getattr(engine, "encode_packed", None)
    bos_word = b"" if bos_id is None else array("I", [bos_id]).tobytes()
    eos_word = b"" if eos_id is None else array("I", [eos_id]).tobytes()

    def finish(end: Position | None) -> None:
        nonlocal writer, finished
        assert writer is not None
        verifier.sync()  # every sampled document checked before an output is committed
        info = writer.finish()
        writer = None
        finished += 1
        on_shard(info, end)

    executor = ThreadPoolExecutor(1)
    try:
        pending: tuple[list[Segment], Future[list[list[int]]]] | None = None
        batches = _batches(iter(reader), min(batch_bytes, getattr(engine, "batch_chars", None) or batch_bytes))
        while True:
            batch = next(batches, None)
            submitted = (
                executor.submit(_encode, engine, packed_encode, [s.text for s in batch]) if batch is not None else None
            )
            if pending is not None:
                done_batch, future = pending
                ids = future.result()
                verifier.check(done_batch, ids, reader.bytes_done)
                if tally is not None:
                    tally.add(ids)
                if isinstance(ids, PackedIds):
                    # one document at a time as below, but the ids stay in one array: slices of it
                    # (and BOS/EOS words) are joined and handed to the writer once per batch or shard
                    view = memoryview(ids.data)
                    pieces: list[Any] = []
                    at = 0
                    for segment, count in zip(done_batch, ids.counts):
                        if writer is None:
                            writer = new_writer()
                        if count:
                            if not doc_has_tokens and bos_word:
                                pieces.append(bos_word)
                                doc_length += 1
                            doc_has_tokens = True
                            pieces.append(view[4 * at : 4 * (at + count)])
                            doc_length += count
                            at += count
                        if segment.last:
                            if doc_has_tokens and eos_word:
                                pieces.append(eos_word)
                                doc_length += 1
                            writer.add_document(doc_length)
                            doc_has_tokens = False
                            doc_length = 0
                            if shard_tokens is not None and writer.tokens >= shard_tokens:
                                writer.write_uint32(b"".join(pieces))
                                pieces = []
                                tokens_total += writer.tokens
                                finish(segment.end)
                    if pieces:
                        assert writer is not None
                        writer.write_uint32(b"".join(pieces))
                    if progress is not None:
                        progress(reader.bytes_done, reader.total, tokens_total + (writer.tokens if writer else 0))
                    if submitted is None:
                        break
                    pending = (batch, submitted)  # type: ignore[assignment]
                    continue
                for segment, segment_ids in zip(done_batch, ids):
                    if writer is None:
                        writer = new_writer()
                    if segment_ids:
                        if not doc_has_tokens and bos_id is not None:
                            writer.write([bos_id])
                        doc_has_tokens = True
                        writer.write(segment_ids)
                    if segment.last:
                        if doc_has_tokens and eos_id is not None:
                            writer.write([eos_id])
                        writer.end_document()
                        doc_has_tokens = False
                        if shard_tokens is not None and writer.tokens >= shard_tokens:
                            tokens_total += writer.tokens
                            finish(segment.end)
                if progress is not None:
                    progress(reader.bytes_done, reader.total, tokens_total + (writer.tokens if writer else 0))
            if submitted is None:
                break
            pending = (batch, submitted)  # type: ignore[assignment]
        if writer is not None and doc_length:  # a packed document left open (the reader closes them all)
            writer.add_document(doc_length)
        if writer is not None or not (kept or finished):
            if writer is None:
                writer = new_writer()
            tokens_total += writer.tokens
            finish(None)
    except BaseException:
        if writer is not None:
            writer.discard()
        # an interrupt or an error: drop the queued batch (else it would start once the engine is
        # closed), then kill the engine's workers now instead of waiting for the batch in flight
        executor.shutdown(wait=False, cancel_futures=True)
        engine.close()
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _encode(engine: Any, packed: Callable[[list[str]], Any] | None, texts: list[str]) -> Any:
    """A batch's ids: packed in one array where the engine can (:class:`PackedIds`), else lists."""
    if packed is not None:
        ids = packed(texts)
        if ids is not None:
            return ids
    return engine.encode_batch(texts)


def _result(
    manifest: dict[str, Any],
    base: Path,
    suffix: str | None,
    fmt: str,
    manifest_file: Path | None,
    written: int,
    kept: int,
    sources: Sequence[Any],
    started: float,
    verified: int,
    engine: str,
    verified_bytes: int = 0,
) -> CorpusResult:
    shards = manifest["shards"]
    if manifest_file is not None:
        outputs = [p for i in range(len(shards)) for p in output_files(fmt, shard_base(base, i), suffix).values()]
    else:
        outputs = list(output_files(fmt, base, suffix).values())
    return CorpusResult(
        engine,
        sum(s["documents"] for s in shards),
        sum(s["tokens"] for s in shards),
        outputs,
        manifest_file,
        written,
        kept,
        sum(s.size() for s in sources),
        time.perf_counter() - started,
        verified,
        manifest["settings"],
        verified_bytes,
    )
