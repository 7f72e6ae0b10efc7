"""Encode a corpus in blocks: each block of the input becomes one shard, here or on a Dask cluster.

    >>> toktools.encode_corpus(["s3://bucket/web/*.jsonl"], "gpt2/", "/shared/out/web", format="megatron",
    ...                        document="jsonl", cluster="tcp://scheduler:8786")   # doctest: +SKIP

**Shards are blocks.** The inputs are cut into blocks of ``block_bytes`` (default 64 MB) by
:func:`toktools.cluster.blocks.plan_blocks`; a block is widened to document boundaries when it is
read — to whole lines for ``line`` and ``jsonl`` documents, to just after an empty line
(``\\n\\n``) for ``blank-line``, and ``file`` documents (like compressed files) are one block
per file. Block *i* becomes shard ``PREFIX-0000i``, whoever encodes it. So the shards depend
on the inputs, the settings and ``block_bytes`` only: ``encode_corpus(..., block_bytes=B)`` here
and ``encode_corpus(..., block_bytes=B, cluster=...)`` on any cluster write the same bytes,
manifest included — both call :func:`encode_block`, which runs the same document loop as every
local run (:func:`toktools.corpus.shards.encode_documents`). ``shard_tokens`` cannot be
combined with blocks: where a token-counted shard ends is only known after every document
before it is encoded, which is what a cluster must not wait for. Without blocks, the ids are
still those of a local run: the documents of the shards, in order, are the local output's.

**Manifest last.** Workers write their shard's files in place (each file atomically) and
return its manifest entry. The client records finished shards in ``PREFIX-manifest.partial.json``
as they come in (so it only ever names shards whose files exist) and, when every block is done,
writes ``PREFIX-manifest.json`` atomically and removes the partial record. Re-running the same
command resumes: shards listed in either file whose files still match their size and sha256
are kept, the other blocks are encoded. A worker that dies is the scheduler's business: it
runs the block again elsewhere, and the shard comes out the same.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toktools.cluster.blocks import is_client
from toktools.corpus.diagnostics import TokenTally
from toktools.corpus.manifest import partial_path
from toktools.corpus.options import EncodeOptions
from toktools.corpus.reading import CorpusSource
from toktools.corpus.shards import CorpusResult
from toktools.errors import ToktoolsError

#: The byte sequence a block may start after, per document mode (None: whole files only).
DELIMITERS: dict[str, bytes | None] = {"line": b"\n", "jsonl": b"\n", "blank-line": b"\n\n", "file": None}
_WHOLE_FILES = 1 << 62
_HASH_BYTES = 4 << 20
#: The partial record is rewritten at most this often (and always when the run ends).
PARTIAL_SECONDS = 1.0
#: Test hook: a file; while it exists, each block waits the seconds written in it after opening
#: its shard, so a test can kill a worker mid-task (a file, not a variable: it reaches every
#: worker process, including one the nanny starts again).
TEST_PAUSE_VARIABLE = "TOKTOOLS_TEST_BLOCK_PAUSE_FILE"


# ---------------------------------------------------------------------------------------------
# What a task needs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockJob:
    """Everything every block shares (sent to each worker once)."""

    document: dict[str, Any]
    fingerprint: str
    analysis: Any
    engine: str
    format: str
    dtype: str
    mode: str
    field: str | None
    eos_id: int | None
    bos_id: int | None
    base: str
    suffix: str | None
    batch_bytes: int
    segment_chars: int
    max_document_bytes: int | None
    threads: int | None = 1


@dataclass(frozen=True)
class BlockTask:
    """Block ``index`` of the plan (the shard's number), from input ``input``, and how many of
    its documents to check against the reference engine."""

    index: int
    input: int
    name: str
    path: str
    start: int
    length: int | None
    compression: str | None
    verify: int
    size: int
    #: the block's share of the smallest --verify sample (see toktools.corpus.verify_sample)
    verify_bytes: int = 0


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def plan_tasks(inputs: Sequence[str], block_bytes: int, mode: str, verify: int) -> tuple[list[str], list[BlockTask]]:
    """The inputs (as named, one entry per file) and one task per block, in order. ``verify``
    documents are spread over the input bytes as a local run spreads them, each block taking
    the ones that fall inside it."""
    import fsspec

    from toktools.cluster.blocks import plan_blocks
    from toktools.corpus.verify_sample import minimum_bytes

    if any(str(item) == "-" for item in inputs):
        raise ToktoolsError("standard input cannot be cut into blocks: name files")
    blocks = plan_blocks([str(item) for item in inputs], _WHOLE_FILES if DELIMITERS[mode] is None else block_bytes)
    paths: list[str] = []
    sizes: list[int] = []
    for block in blocks:
        if block.start == 0:
            fs, local = fsspec.core.url_to_fs(block.path)
            paths.append(block.path)
            sizes.append(fs.size(local))
    spans: list[tuple[int, int]] = []  # each block's share of the bytes on disk, in the whole input
    offset, number = 0, -1
    for block in blocks:
        if block.start == 0:
            number += 1
            offset = sum(sizes[:number])
        size = sizes[number]
        length = size if block.length is None else max(0, min(block.length, size - block.start))
        spans.append((offset + block.start, length))
    total = sum(sizes)
    marks = [total * (k + 0.5) / verify for k in range(verify)] if total and verify else []
    per_place = -(-minimum_bytes(verify) // verify) if verify else 0
    tasks: list[BlockTask] = []
    number = -1
    for index, (block, (at, length)) in enumerate(zip(blocks, spans)):
        number += block.start == 0
        checks = sum(1 for mark in marks if at <= mark < at + length)
        tasks.append(
            BlockTask(
                index,
                number,
                block.path,
                _absolute(block.path),
                block.start,
                block.length,
                block.compression,
                checks,
                length,
                checks * per_place,
            )
        )
    return paths, tasks


# ---------------------------------------------------------------------------------------------
# Reading one block
# ---------------------------------------------------------------------------------------------


def _span(task: BlockTask, delimiter: bytes | None) -> tuple[int, int | None]:
    """The bytes ``[begin, end)`` of the block: from just after the first delimiter at or after
    its start (or the file's start) to just after the first delimiter at or after its end (or
    the file's end). Neighbouring blocks meet exactly; ``end`` None: the whole (compressed) file."""
    import fsspec
    from fsspec.utils import seek_delimiter

    if task.length is None:
        return 0, None
    fs, local = fsspec.core.url_to_fs(task.path)
    size = fs.size(local)
    if delimiter is None:  # whole files
        return 0, size
    with fs.open(local, "rb") as handle:
        points = []
        for at in (task.start, task.start + task.length):
            if at >= size:
                points.append(size)
                continue
            handle.seek(at)
            seek_delimiter(handle, delimiter, 1 << 16)
            points.append(min(handle.tell(), size))
    begin, end = points
    return begin, max(begin, end)


class _RangeFile:
    """Reads ``[begin, end)`` of an open file; ``tell`` counts from ``begin``."""

    def __init__(self, handle: Any, begin: int, end: int) -> None:
        self.handle = handle
        handle.seek(begin)
        self.left = end - begin
        self.done = 0

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.handle.read(size) if size else b""
        self.left -= len(data)
        self.done += len(data)
        return data

    def tell(self) -> int:
        return self.done

    def close(self) -> None:
        self.handle.close()


@dataclass(frozen=True)
class _BlockSource(CorpusSource):
    """A :class:`~toktools.corpus.reading.CorpusSource` over one block, read through fsspec (named by the
    input's path in messages)."""

    url: str = ""
    begin: int = 0
    end: int | None = None
    compression: str | None = None

    def size(self) -> int:
        if self.end is not None:
            return self.end - self.begin
        import fsspec

        fs, local = fsspec.core.url_to_fs(self.url)
        return fs.size(local)

    def open(self) -> Any:
        import fsspec

        try:
            if self.end is None:
                return fsspec.open(self.url, "rb", compression=self.compression).open()
            fs, local = fsspec.core.url_to_fs(self.url)
            return _RangeFile(fs.open(local, "rb"), self.begin, self.end)
        except FileNotFoundError:
            raise ToktoolsError(f"corpus file not found: {self.path}") from None
        except OSError as err:
            raise ToktoolsError(f"{self.path}: cannot read ({err})") from None


def _lines_before(url: str, begin: int) -> int:
    """Newlines before byte ``begin`` (counted only to name a line in an error)."""
    import fsspec

    fs, local = fsspec.core.url_to_fs(url)
    lines = 0
    with fs.open(local, "rb") as handle:
        left = begin
        while left > 0:
            data = handle.read(min(left, _HASH_BYTES))
            if not data:
                break
            lines += data.count(b"\n")
            left -= len(data)
    return lines


def _relocated(err: ToktoolsError, path: str, url: str, begin: int) -> ToktoolsError:
    """The same message, with the line counted from the start of the file, not of the block."""
    pattern = re.compile(re.escape(path) + r", (document at )?line (\d+)")
    message = str(err)
    match = pattern.search(message)
    if not match or not begin:
        return err
    line = int(match.group(2)) + _lines_before(url, begin)
    return ToktoolsError(message[: match.start(2)] + str(line) + message[match.end(2) :])


# ---------------------------------------------------------------------------------------------
# Encoding one block (the task)
# ---------------------------------------------------------------------------------------------

#: Per process: engines and reference tokenizers, built once and reused by every block.
_ENGINES: dict[tuple[str, str, int | None], Any] = {}
_REFERENCES: dict[str, Any] = {}


def _engine(job: BlockJob) -> Any:
    key = (job.fingerprint, job.engine, job.threads)
    if key not in _ENGINES:
        from toktools.engines.choice import make_engine

        _ENGINES[key] = make_engine(
            job.engine, job.document, workers=job.threads, analysis=job.analysis, fingerprint=job.fingerprint
        )
    return _ENGINES[key]


def _test_pause() -> None:
    """Tests only: hold the new shard open until the number of seconds in the file named by
    ``TEST_PAUSE_VARIABLE`` has passed. The file is read again every 50 ms, so that a test can
    lengthen the pause of a waiting block (to catch its worker mid-task) and then end it."""
    flag = os.environ.get(TEST_PAUSE_VARIABLE)
    if not flag:
        return
    started = time.monotonic()
    while True:
        try:
            seconds = float(Path(flag).read_text())
        except (OSError, ValueError):
            return
        left = started + seconds - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def encode_block(
    job: BlockJob, task: BlockTask, engine: Any = None, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Block ``task`` of the input → shard ``PREFIX-{task.index:05d}`` written in place; returns
    ``{"shard": its manifest entry, "verified": documents checked}``. Runs on a worker (with this
    process's cached engine) or here (with ``engine``)."""
    from toktools.corpus.documents import DocumentReader
    from toktools.corpus.manifest import shard_base, shard_entry
    from toktools.corpus.shards import encode_documents
    from toktools.corpus.verify import InlineChecker, Verifier
    from toktools.corpus.writers import DocumentWriter

    engine = engine if engine is not None else _engine(job)
    begin, end = _span(task, DELIMITERS[job.mode])
    source = _BlockSource(task.name, None, url=task.path, begin=begin, end=end, compression=task.compression)
    reader = DocumentReader(
        [source],
        job.mode,
        job.field,
        cuttable=job.analysis.cuttable,
        segment_chars=job.segment_chars,
        max_document_bytes=job.max_document_bytes,
    )
    tally = TokenTally.for_document(job.document)  # unknown and byte-fallback ids, summed by the client
    checker = InlineChecker(job.document, _REFERENCES.get(job.fingerprint))  # one block: no process of its own
    verifier = Verifier(
        job.engine,
        job.document,
        task.verify,
        reader.total,
        [source],
        inline=checker,
        cuttable=job.analysis.cuttable,
        min_bytes=task.verify_bytes or None,
    )
    finished: list[Any] = []

    def new_writer() -> DocumentWriter:
        writer = DocumentWriter(job.format, shard_base(Path(job.base), task.index), job.dtype, job.suffix)
        _test_pause()
        return writer

    def report(done: int, total: int, tokens: int) -> None:
        if progress is not None:
            progress(done, tokens)

    try:
        encode_documents(
            reader,
            engine,
            verifier,
            new_writer,
            lambda info, _end: finished.append(info),
            bos_id=job.bos_id,
            eos_id=job.eos_id,
            shard_tokens=None,
            batch_bytes=job.batch_bytes,
            progress=report,
            tally=tally,
        )
    except ToktoolsError as err:
        raise _relocated(err, source.path, task.path, begin) from None
    finally:
        verifier.close()
        if checker.reference is not None:
            _REFERENCES[job.fingerprint] = checker.reference
    (info,) = finished
    block = {"input": task.input, "bytes": [begin, end] if end is not None else None}
    return {
        "shard": shard_entry(task.index, info, job.engine, block=block),
        "verified": verifier.done,
        "tally": tally.counts(),
        "verified_bytes": verifier.bytes_checked,
    }


# ---------------------------------------------------------------------------------------------
# The run: plan, resume, encode the missing blocks, manifest last
# ---------------------------------------------------------------------------------------------


def input_entry(name: str, url: str) -> dict[str, Any]:
    """An input as the manifest lists it: path as named, size and sha256 of its bytes on disk."""
    import fsspec

    fs, local = fsspec.core.url_to_fs(url)
    digest = hashlib.sha256()
    try:
        with fs.open(local, "rb") as handle:
            for data in iter(lambda: handle.read(_HASH_BYTES), b""):
                digest.update(data)
        size = fs.size(local)
    except OSError as err:
        raise ToktoolsError(f"{name}: cannot read ({err})") from None
    return {"path": name, "size": size, "sha256": digest.hexdigest()}


def _tidy(base: Path, suffix: str | None, shards: int) -> None:
    """Remove shards past the last block (of an older run, with force) and the temporaries a
    killed worker left behind."""
    from toktools.corpus.manifest import remove_shards_from

    remove_shards_from(base, suffix, shards)
    directory = base.parent if str(base.parent) else Path(".")
    leftover = re.compile(r"\." + re.escape(base.name) + r"-\d{5}(\.offsets)?\.\w+\..+\.tmp$")
    for name in os.listdir(directory):
        if leftover.match(name):
            try:
                os.unlink(directory / name)
            except OSError:
                pass


def encode_blocks(
    inputs: Sequence[str | Path], tokenizer: Any, output: str | Path, options: EncodeOptions
) -> CorpusResult:
    """:func:`toktools.encode_corpus` with shards made of blocks of the input (see the module
    docstring); on ``options.cluster`` when given, else in this process."""
    from toktools.cluster.settings import DEFAULT_BLOCK_BYTES, as_cluster
    from toktools.corpus.documents import DOCUMENT_MODES
    from toktools.corpus.manifest import (
        check_outputs,
        complete,
        intact_blocks,
        manifest_path,
        new_manifest,
        output_base,
        read_manifest,
        shard_base,
        shard_files,
        write_manifest,
    )
    from toktools.corpus.options import shard_settings
    from toktools.corpus.prepared_tokenizer import load_document
    from toktools.corpus.writers import output_files
    from toktools.engines.analysis import Analysis, analyse, cuttable

    started = time.perf_counter()
    fmt, engine, document, force, workers = (
        options.format,
        options.engine,
        options.document,
        options.force,
        options.workers,
    )
    if options.shard_tokens is not None:
        raise ToktoolsError(
            "--shard-tokens cannot be combined with --cluster or --block-size: there, each block of the "
            "input is one shard (size shards with --block-size)"
        )
    client = options.cluster if is_client(options.cluster) else None
    cluster = None if client is not None else as_cluster(options.cluster)
    remote = cluster is not None or client is not None
    if remote and workers is not None:
        raise ToktoolsError(
            "--workers is for local runs: on a cluster each worker process encodes one block at a time "
            "(choose local:N, or the workers' --nthreads)"
        )
    block_bytes = options.block_bytes
    if block_bytes is None:
        block_bytes = cluster.block_bytes if cluster is not None else DEFAULT_BLOCK_BYTES
    if block_bytes < 1:
        raise ToktoolsError("the block size must be at least one byte")
    if document not in DOCUMENT_MODES:
        raise ToktoolsError(f"unknown document mode {document!r}; choose one of {', '.join(DOCUMENT_MODES)}")
    if "://" in str(output):
        raise ToktoolsError(
            f"output {output}: shards are written to a filesystem path every worker can reach, not a URL"
        )
    doc, fingerprint = load_document(tokenizer)
    written_as = shard_settings(doc, options)
    names, tasks = plan_tasks([str(p) for p in inputs], block_bytes, document, options.verify)

    base, suffix = output_base(fmt, Path(output))
    manifest_file, partial_file = manifest_path(base), partial_path(base)
    planned = [
        manifest_file,
        partial_file,
        *(p for t in tasks for p in output_files(fmt, shard_base(base, t.index), suffix).values()),
    ]
    # outputs: never an input (nor a file of the tokenizer); existing ones need force, unless a
    # manifest or partial record says they are this run's own (then they are resumed)
    resuming = manifest_file.exists() or partial_file.exists()
    check_outputs(
        planned,
        shard_files(base, suffix),
        [name for name in names if "://" not in name],
        tokenizer,
        force=force or resuming,
        named=Path(output),
    )
    settings = written_as.as_manifest(options, block_bytes=block_bytes)
    if force:
        for earlier in (manifest_file, partial_file):  # never leave a record that claims shards being rewritten
            if earlier.exists():
                earlier.unlink()

    runner: Any = _ClusterRunner(cluster, client) if remote else _LocalRunner(workers)
    with runner:
        inputs_json = runner.input_entries(names, [_absolute(n) for n in names])
        kept: dict[int, dict[str, Any]] = {}
        for record_file in (manifest_file, partial_file):
            if not force and record_file.exists():
                found = intact_blocks(
                    record_file,
                    read_manifest(record_file),
                    fingerprint,
                    settings,
                    inputs_json,
                    len(tasks),
                    base,
                    fmt,
                    suffix,
                )
                kept.update({i: s for i, s in found.items() if i not in kept})
        manifest = new_manifest(fingerprint, written_as.vocab_size, settings, inputs_json, [])
        missing = [t for t in tasks if t.index not in kept]
        shards = dict(kept)
        verified = verified_bytes = 0
        if missing or not manifest_file.exists():
            if engine in ("auto", "tiktoken"):
                analysis = analyse(doc, fingerprint)
            else:
                analysis = Analysis("not analysed", cuttable=cuttable(doc))
            chosen = runner.engine(engine, doc, analysis, fingerprint)
            manifest["engine"] = chosen
            job = BlockJob(
                doc,
                fingerprint,
                analysis,
                chosen,
                fmt,
                written_as.dtype,
                document,
                written_as.field,
                written_as.eos_id,
                written_as.bos_id,
                str(base.absolute()),
                suffix,
                options.batch_bytes,
                options.segment_chars,
                options.max_document_bytes,
                1 if remote else workers,
            )

            def record() -> None:
                manifest["shards"] = [shards[i] for i in sorted(shards)]
                write_manifest(partial_file, manifest)

            record()
            if manifest_file.exists():  # a finished run with damaged shards: the partial record now speaks
                manifest_file.unlink()
            total = sum(e["size"] for e in inputs_json)
            done_bytes = sum(t.size for t in tasks if t.index in kept)
            tokens = sum(s["tokens"] for s in kept.values())
            last_write = time.monotonic()
            progress = options.progress
            tally = TokenTally.for_document(job.document)
            try:
                for task, result in runner.run(job, missing, progress, done_bytes, total, tokens):
                    shards[task.index] = result["shard"]
                    verified += result["verified"]
                    tally.add_counts(result.get("tally"))
                    verified_bytes += result.get("verified_bytes", 0)
                    done_bytes += task.size
                    tokens += result["shard"]["tokens"]
                    if progress is not None:
                        progress(min(done_bytes, total), total, tokens)
                    if time.monotonic() - last_write >= PARTIAL_SECONDS:
                        record()
                        last_write = time.monotonic()
            finally:
                record()
            tally.warn()
        else:
            manifest["engine"] = read_manifest(manifest_file).get("engine")
        manifest["shards"] = [shards[i] for i in sorted(shards)]
        complete(manifest)
        write_manifest(manifest_file, manifest)
        if partial_file.exists():
            partial_file.unlink()
        _tidy(base, suffix, len(tasks))
    outputs = [p for t in tasks for p in output_files(fmt, shard_base(base, t.index), suffix).values()]
    return CorpusResult(
        str(manifest["engine"]),
        manifest["documents"],
        manifest["tokens"],
        outputs,
        manifest_file,
        len(missing),
        len(kept),
        sum(e["size"] for e in inputs_json),
        time.perf_counter() - started,
        verified,
        settings,
        verified_bytes,
    )


class _LocalRunner:
    """Blocks one after another in this process, with one engine for all of them."""

    def __init__(self, workers: int | None) -> None:
        self.workers = workers
        self._engine: Any = None

    def __enter__(self) -> _LocalRunner:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._engine is not None:
            self._engine.close()
        _REFERENCES.clear()

    def input_entries(self, names: Sequence[str], urls: Sequence[str]) -> list[dict[str, Any]]:
        return [input_entry(n, u) for n, u in zip(names, urls)]

    def engine(self, name: str, doc: dict[str, Any], analysis: Any, fingerprint: str) -> str:
        from toktools.engines.choice import make_engine

        self._engine = make_engine(name, doc, workers=self.workers, analysis=analysis, fingerprint=fingerprint)
        return str(self._engine.name)

    def run(
        self, job: BlockJob, tasks: Sequence[BlockTask], progress: Any, done: int, total: int, tokens: int
    ) -> Iterator[tuple[BlockTask, dict[str, Any]]]:
        def within(at: int, had: int) -> Callable[[int, int], None] | None:
            if progress is None:
                return None
            return lambda block_done, block_tokens: progress(min(at + block_done, total), total, had + block_tokens)

        for task in tasks:
            result = encode_block(job, task, self._engine, within(done, tokens))
            done += task.size
            tokens += result["shard"]["tokens"]
            yield task, result


def _run_block(task: BlockTask, job: BlockJob) -> dict[str, Any]:
    """The task a worker runs (block first: ``Client.map`` maps over it)."""
    return encode_block(job, task)


class _ClusterRunner:
    """Blocks as tasks on a Dask cluster: one task per block, results as they finish."""

    def __init__(self, cluster: Any, client: Any = None) -> None:
        """``cluster``: a :class:`toktools.cluster.settings.Cluster` (connected to, then closed), or
        ``client``: a ``distributed.Client`` the caller holds (used, and left open)."""
        from toktools.cluster.blocks import check_workers, cluster_client

        self._context = cluster_client(cluster.address, cluster.timeout) if client is None else None
        self.client: Any = client
        if client is not None:
            check_workers(client, str(client.scheduler.address))

    def __enter__(self) -> _ClusterRunner:
        if self._context is not None:
            self.client = self._context.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._context is not None:
            self._context.__exit__(*exc)

    def _results(self, futures: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
        from distributed import as_completed

        try:
            for future in as_completed(list(futures)):
                yield future, future.result()
        except ToktoolsError:
            raise
        except Exception as err:  # a task failed on a worker, or the cluster gave up on it
            raise ToktoolsError(f"the cluster failed: {type(err).__name__}: {err}") from None
        finally:
            for future in futures:
                future.cancel()

    def input_entries(self, names: Sequence[str], urls: Sequence[str]) -> list[dict[str, Any]]:
        futures = self.client.map(input_entry, list(names), list(urls), pure=False)
        found = {future.key: entry for future, entry in self._results(futures)}
        return [found[future.key] for future in futures]

    def engine(self, name: str, doc: dict[str, Any], analysis: Any, fingerprint: str) -> str:
        """Which engine the workers run: chosen here by the rules of a local run (so the manifest
        names the same one), then built by each worker once."""
        from toktools.engines.choice import make_engine

        chosen = make_engine(name, doc, workers=1, analysis=analysis, fingerprint=fingerprint)
        chosen.close()
        return str(chosen.name)

    def run(
        self, job: BlockJob, tasks: Sequence[BlockTask], progress: Any, done: int, total: int, tokens: int
    ) -> Iterator[tuple[BlockTask, dict[str, Any]]]:
        if not tasks:
            return
        shared = self.client.scatter(job, broadcast=True, hash=False)
        futures = self.client.map(_run_block, list(tasks), job=shared, pure=False)
        by_key = {future.key: task for future, task in zip(futures, tasks)}
        for future, result in self._results(futures):
            yield by_key[future.key], result
