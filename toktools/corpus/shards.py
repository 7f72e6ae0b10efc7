"""Document-aware outputs written here: Megatron / npy / bin (one output or shards) and the
manifest that makes a sharded run resumable; the one encode loop every output goes through,
local or on a cluster (:func:`encode_documents`).

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
4. with shards, a manifest (``PREFIX-manifest.json``) rewritten after every finished shard:
   tokenizer fingerprint, engine, settings, inputs (size, sha256), shards (documents, tokens,
   files with sha256, where in the input the next shard starts).

The ids do not depend on the engine or on the number of workers, so neither is part of the
settings a resumed run must match. Documents with no token of their own are dropped.
"""

from __future__ import annotations

import glob
import json
import os
import re
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toktools.corpus.documents import MAX_DOCUMENT_BYTES, SEGMENT_CHARS, DocumentReader, Position, Segment
from toktools.corpus.prepared_tokenizer import CorpusTokenizer, load_corpus_tokenizer, token_ids, vocab_size_of
from toktools.corpus.verify import Verifier, start_checker
from toktools.corpus.writers import DocumentWriter, ShardInfo, file_sha256, flat_dtype, megatron_dtype, output_files
from toktools.engines.base import PackedIds
from toktools.errors import ToktoolsError

DEFAULT_VERIFY = 16
#: characters per batch at most (engines may take less: ``Engine.batch_chars``): two batches
#: are in flight; 1M Chinese characters already make ~1M tokens
BATCH_BYTES = 1 << 20
MANIFEST_FORMAT = "toktools-corpus-manifest"
#: (bytes of input read, total bytes or 0 if unknown, tokens written)
CorpusProgress = Callable[[int, int, int], None]

_EOS_NAMES = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|eos|>", "[EOS]", "<|im_end|>", "[SEP]")
_BOS_NAMES = ("<s>", "<|begin_of_text|>", "<bos>", "<|bos|>", "[BOS]", "<|startoftext|>", "[CLS]", "<|endoftext|>")


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


def _special_id(
    doc: dict[str, Any],
    value: bool | str | None,
    names: Sequence[str],
    what: str,
    token_id_of: Callable[[str], int | None] | None = None,
) -> int | None:
    """The id of the token the user named, or of the tokenizer's usual one (``True``).
    ``token_id_of``: how to look a named token up (default: in ``doc``)."""
    if value is None or value is False:
        return None
    if isinstance(value, str) and value:
        token_id = token_id_of(value) if token_id_of is not None else token_ids(doc).get(value)
        if token_id is None:
            raise ToktoolsError(f"{what} token {value!r} is not in the vocabulary")
        return token_id
    specials = {t["content"]: t["id"] for t in doc.get("added_tokens") or [] if t.get("special")}
    for name in names:
        if name in specials:
            return specials[name]
    hint = "--append-eos=TOKEN, or --no-append-eos" if what == "EOS" else "--prepend-bos=TOKEN"
    raise ToktoolsError(f"this tokenizer has no {what} token ({' or '.join(names[:3])}…): name one, e.g. {hint}")


def _bases(fmt: str, output: Path) -> tuple[Path, str | None]:
    """The output path without its extension, and the extension for npy/bin: ``out/train``
    for a Megatron prefix (``.bin``/``.idx`` given by mistake are dropped); ``out/ids.npy`` →
    (``out/ids``, ``.npy``): the data file is exactly the path given."""
    name = str(output)
    if fmt == "megatron":
        for suffix in (".bin", ".idx"):
            if name.endswith(suffix):
                return Path(name[: -len(suffix)]), None
        return output, None
    return Path(name[: len(name) - len(output.suffix)]), output.suffix


def shard_base(base: Path, index: int) -> Path:
    return Path(f"{base}-{index:05d}")


def manifest_path(base: Path) -> Path:
    return Path(f"{base}-manifest.json")


def _shard_files(base: Path, suffix: str | None = None) -> list[Path]:
    """Files that look like shards of ``base`` (of this or an earlier run)."""
    ends = r"\.(bin|idx)" if suffix is None else re.escape(suffix)
    pattern = re.compile(re.escape(base.name) + r"-\d{5}(\.offsets)?" + ends + "$")
    directory = base.parent if str(base.parent) else Path(".")
    return sorted(
        Path(p) for p in glob.glob(os.path.join(glob.escape(str(directory)), "*")) if pattern.match(Path(p).name)
    )


def _check_outputs(
    planned: Sequence[Path], earlier_shards: Sequence[Path], inputs: Sequence[str | Path], tokenizer: Any, force: bool
) -> None:
    """Before any work (:func:`toktools.io.outputs.check_output_file`): no output over an input
    or a file of the tokenizer, in a directory that exists and is writable; existing outputs
    (and shards of an earlier run) only with ``force`` (a resumed run passes it and checks its
    shards against the manifest instead)."""
    from toktools.io.outputs import check_output_file, input_files

    inputs = list(inputs)
    if isinstance(tokenizer, (str, Path)):
        inputs += input_files(tokenizer)
    for target in planned:
        check_output_file(target, force=force, inputs=inputs)
    for target in earlier_shards:
        check_output_file(target, force=True, inputs=inputs)
    if not force and earlier_shards:
        raise ToktoolsError(f"{earlier_shards[0]} already exists; use --force to overwrite")


def _input_entries(sources: Sequence[Any]) -> list[dict[str, Any]]:
    out = []
    for source in sources:
        if source.is_stdin:
            out.append({"path": "-", "size": None, "sha256": None})
        else:
            out.append({"path": source.path, "size": source.size(), "sha256": file_sha256(Path(source.path))})
    return out


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


def _output_settings(
    doc: Any,
    format: str,
    document: str,
    field: str | None,
    append_eos: bool | str | None,
    prepend_bos: bool | str,
    dtype: str,
) -> tuple[str | None, int | None, int | None, int, str]:
    """The settings every shard is written with: the JSON field, EOS and BOS ids, the vocabulary
    size and the dtype (``auto`` resolved); bad combinations are refused in one line. ``doc``:
    the document, or a :class:`toktools.corpus.prepared_tokenizer.CorpusTokenizer` (whose vocabulary is
    then read only for a token named that is not an added one)."""
    lookup = doc.token_id if isinstance(doc, CorpusTokenizer) else None
    vocab_size = doc.vocab_size if isinstance(doc, CorpusTokenizer) else vocab_size_of(doc)
    if isinstance(doc, CorpusTokenizer):
        doc = doc.shape
    if document == "jsonl":
        field = field or "text"
    elif field is not None:
        raise ToktoolsError("--field is for --document jsonl")
    if append_eos is None:
        append_eos = format == "megatron"
    eos_id = _special_id(doc, append_eos, _EOS_NAMES, "EOS", lookup)
    bos_id = _special_id(doc, prepend_bos, _BOS_NAMES, "BOS", lookup)
    if dtype == "auto":
        dtype = megatron_dtype(vocab_size) if format == "megatron" else flat_dtype(vocab_size)
    limits = {"uint16": 1 << 16, "uint32": 1 << 32, "int32": 1 << 31}
    if dtype not in limits or (format == "megatron" and dtype == "uint32"):
        raise ToktoolsError(f"dtype {dtype} is not available for {format}")
    if vocab_size > limits[dtype]:
        raise ToktoolsError(f"{vocab_size} ids do not fit in {dtype}")
    return field, eos_id, bos_id, vocab_size, dtype


def encode_shards(
    inputs: Sequence[str | Path],
    tokenizer: Any,
    output: str | Path,
    *,
    format: str = "megatron",
    engine: str = "auto",
    document: str = "line",
    field: str | None = None,
    append_eos: bool | str | None = None,
    prepend_bos: bool | str = False,
    shard_tokens: int | None = None,
    workers: int | None = None,
    verify: int = DEFAULT_VERIFY,
    progress: CorpusProgress | None = None,
    force: bool = False,
    dtype: str = "auto",
    batch_bytes: int = BATCH_BYTES,
    max_document_bytes: int = MAX_DOCUMENT_BYTES,
    segment_chars: int = SEGMENT_CHARS,
) -> CorpusResult:
    """Encode ``inputs`` here into one output or into ``shard_tokens`` shards with a resumable
    manifest (the options as :func:`toktools.corpus.encode.encode_corpus` takes them)."""
    from toktools.corpus.reading import expand_sources
    from toktools.engines.analysis import Analysis, analyse, cuttable
    from toktools.engines.choice import likely_engine, make_engine

    started = time.perf_counter()
    collector = CollectorPause()  # until the engine is built
    checker = None
    try:
        # the document itself is parsed only when needed, when start-up is cached (corpus_tokenizer)
        tok = load_corpus_tokenizer(tokenizer)
        fingerprint = tok.fingerprint
        sources = expand_sources([str(p) for p in inputs])
        sizes = [None if s.is_stdin else s.size() for s in sources]
        input_bytes = None if None in sizes else sum(sizes)  # type: ignore[arg-type]
        # the --verify checker is forked now: it builds the reference on the other core while
        # this process checks the outputs, hashes the inputs and builds its engine (not when
        # auto will take the reference, which needs no checker)
        checker = start_checker(
            tok.document,
            verify,
            likely_engine(engine, tok.shape, workers, input_bytes),
            fingerprint=fingerprint,
        )
        field, eos_id, bos_id, vocab_size, dtype = _output_settings(
            tok, format, document, field, append_eos, prepend_bos, dtype
        )

        # outputs: never an input (nor a file of the tokenizer); existing ones need force (or are resumed)
        base, suffix = _bases(format, Path(output))
        sharded = shard_tokens is not None
        manifest_file = manifest_path(base) if sharded else None
        planned = [manifest_file] if sharded else list(output_files(format, base, suffix).values())
        if sharded:
            planned += list(output_files(format, shard_base(base, 0), suffix).values())
        _check_outputs(
            planned,
            _shard_files(base, suffix) if sharded else [],
            [s.path for s in sources if not s.is_stdin],
            tokenizer,
            force=force or (sharded and manifest_file.exists()),
        )  # type: ignore[union-attr]

        settings = {
            "format": format,
            "document": document,
            "field": field,
            "append_eos": eos_id,
            "prepend_bos": bos_id,
            "shard_tokens": shard_tokens,
            "dtype": dtype,
        }
        inputs_json = _input_entries(sources)
        shards: list[dict[str, Any]] = []
        start = Position(0, 0, 1)
        if sharded and not force:
            assert manifest_file is not None
            if manifest_file.exists():
                shards, start = _resume(manifest_file, fingerprint, settings, inputs_json, base, format, suffix)

        manifest: dict[str, Any] = {
            "format": MANIFEST_FORMAT,
            "version": 1,
            "complete": False,
            "tokenizer": {"sha256": fingerprint, "vocab_size": vocab_size},
            "engine": None,
            "settings": settings,
            "inputs": inputs_json,
            "shards": shards,
        }
        kept = len(shards)
        if sharded and shards and start.source >= len(sources) and _complete(manifest_file):
            return _result(manifest, base, suffix, format, manifest_file, 0, kept, sources, started, 0, "none")

        if engine in ("auto", "tiktoken"):
            analysis = tok.analysis or analyse(tok.document(), fingerprint)
        else:  # the tiktoken checks are not needed
            analysis = Analysis("not analysed", cuttable=cuttable(tok.shape))
        chosen = make_engine(
            engine,
            tok.document,
            workers=workers,
            analysis=analysis,
            fingerprint=fingerprint,
            input_bytes=input_bytes,
            shape=tok.shape,
        )
        tok.remember(analysis)  # for the next run on this tokenizer.json (no parse, no analysis)
        collector.resume()
        manifest["engine"] = chosen.name
        reader = DocumentReader(
            sources,
            document,
            field,
            cuttable=analysis.cuttable,
            segment_chars=segment_chars,
            max_document_bytes=max_document_bytes,
            start=start,
        )
        verifier = Verifier(chosen.name, tok.document, verify, reader.total, sources, process=checker)
        checker = None  # the verifier closes it
        verifier.start()  # before this process starts threads (unless the checker is already running)
        written = 0

        def new_writer() -> DocumentWriter:
            target = shard_base(base, len(shards)) if sharded else base
            return DocumentWriter(format, target, dtype, suffix)

        def finish_shard(info: ShardInfo, end: Position | None) -> None:
            nonlocal written
            written += 1
            shards.append(
                {
                    "index": len(shards),
                    "documents": info.documents,
                    "tokens": info.tokens,
                    "engine": chosen.name,
                    "files": info.files,
                    "next": end.as_json() if end is not None else None,
                }
            )
            if sharded:
                _write_manifest(manifest_file, manifest)  # type: ignore[arg-type]

        try:
            encode_documents(
                reader,
                chosen,
                verifier,
                new_writer,
                finish_shard,
                bos_id=bos_id,
                eos_id=eos_id,
                shard_tokens=shard_tokens,
                batch_bytes=batch_bytes,
                progress=progress,
                tokens_before=sum(s["tokens"] for s in shards),
                kept=len(shards),
            )
        finally:
            chosen.close()
            verifier.close()
        manifest["complete"] = True
        manifest["documents"] = sum(s["documents"] for s in shards)
        manifest["tokens"] = sum(s["tokens"] for s in shards)
        if sharded:
            assert manifest_file is not None
            _write_manifest(manifest_file, manifest)
            for stale in _shard_files(base, suffix):  # shards of an older, longer run (with force)
                number = int(re.search(r"-(\d{5})(?:\.offsets)?\.?\w*$", stale.name).group(1))  # type: ignore[union-attr]
                if number >= len(shards):
                    stale.unlink()
        return _result(
            manifest, base, suffix, format, manifest_file, written, kept, sources, started, verifier.done, chosen.name
        )
    finally:
        collector.resume()
        if checker is not None:
            checker.close()


class CollectorPause:
    """The cyclic garbage collector off from now until :meth:`resume` (if it was on). Start-up
    builds ~10^5 containers (the parsed ``tokenizer.json``, the engine's tables) and makes no
    garbage cycles; with the collector on, its full passes over them cost a tenth of a short
    run. It is back on before the encoding loop, so a long run collects as usual."""

    def __init__(self) -> None:
        import gc

        self._was_on = gc.isenabled()
        gc.disable()

    def resume(self) -> None:
        import gc

        if self._was_on:
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
) -> None:
    """The documents of ``reader``, encoded and written: the one loop behind every output, local
    or on a cluster (:func:`toktools.cluster.encode.encode_block`), so both give the same
    bytes by construction. With ``shard_tokens``, a shard ends after the document that reaches
    the count; ``on_shard`` gets each finished shard and where the next one starts. At least one
    output is written unless ``kept`` shards came from an earlier run. The next batch is read
    while the engine encodes the current one."""
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
    )


def _complete(path: Path | None) -> bool:
    if path is None or not path.exists():
        return False
    return bool(json.loads(path.read_text(encoding="utf-8")).get("complete"))


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    from toktools.io.outputs import write_files_atomically

    try:
        write_files_atomically(
            path.parent if str(path.parent) else Path("."),
            {path.name: json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"},
        )
    except OSError as err:
        raise ToktoolsError(f"cannot write {path}: {err.strerror or err}") from None


def _resume(
    path: Path,
    fingerprint: str,
    settings: dict[str, Any],
    inputs: list[dict[str, Any]],
    base: Path,
    fmt: str,
    suffix: str | None,
) -> tuple[list[dict[str, Any]], Position]:
    """The finished shards of an earlier run that still verify, and where to go on from; a
    manifest from other settings, another tokenizer or changed inputs is refused in one line."""
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("format") != MANIFEST_FORMAT:
            raise ValueError
    except (ValueError, OSError):
        raise ToktoolsError(f"{path} is not a toktools corpus manifest (use --force to overwrite)") from None
    if old.get("tokenizer", {}).get("sha256") != fingerprint:
        raise ToktoolsError(
            f"{path} was written with another tokenizer; use --force to start over or choose another output"
        )
    for key, value in settings.items():
        if old.get("settings", {}).get(key) != value:
            raise ToktoolsError(
                f"{path} was written with other settings ({key}: {old.get('settings', {}).get(key)!r}, "
                f"now {value!r}); use --force to start over or choose another output"
            )
    if any(entry["path"] == "-" for entry in inputs):
        raise ToktoolsError(f"{path}: cannot resume reading standard input; use --force to start over")
    if [(e["path"], e["size"], e["sha256"]) for e in old.get("inputs", [])] != [
        (e["path"], e["size"], e["sha256"]) for e in inputs
    ]:
        raise ToktoolsError(
            f"{path} was written from other inputs (names, sizes or checksums differ); "
            "use --force to start over or choose another output"
        )
    kept: list[dict[str, Any]] = []
    for shard in old.get("shards", []):
        files = output_files(fmt, shard_base(base, shard["index"]), suffix)
        good = shard.get("index") == len(kept) and all(
            files[role].exists()
            and files[role].stat().st_size == entry["bytes"]
            and file_sha256(files[role]) == entry["sha256"]
            for role, entry in shard["files"].items()
        )
        if not good:
            break
        kept.append(shard)
    if not kept:
        return [], Position(0, 0, 1)
    last = kept[-1].get("next")
    if last is None:  # the last shard of a finished run
        return kept, Position(len(inputs), 0, 1)
    return kept, Position(last["input"], last["offset"], last["line"])
