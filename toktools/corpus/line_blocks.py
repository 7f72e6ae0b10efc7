"""``--document line`` for an engine that splits and encodes whole blocks itself (gigatoken): the
input is read in blocks of :data:`BLOCK_BYTES` (fewer on a small input: :func:`block_bytes`) cut
after a newline, each block goes to the engine as bytes (it splits the lines and encodes them on
its pool, in a thread of this process, while the previous block is checked and written), and the
ids are written from its arrays with NumPy: no Python object per line, none per token.

The output is byte for byte that of :func:`toktools.corpus.shards.encode_documents` on a
:class:`~toktools.corpus.documents.DocumentReader` (same documents: lines split at ``\\n`` only,
empty ones dropped; same shard boundaries and resume positions; same ``--verify`` sample marks):

* a block is checked for UTF-8 (:mod:`toktools.corpus.utf8_check`: on its non-ASCII bytes with
  NumPy, or decoded where they are many; the same one-line error, with the line number);
* whether a block holds a code point the engine routes elsewhere is read on its bytes
  (``block_needs_routing``); such a block is encoded line by line through the engine's
  ``encode_packed`` (which routes those lines), on the same thread;
* a line longer than :data:`LONG_LINE_BYTES` is encoded in pieces cut where the cut provably keeps
  the ids (:func:`toktools.corpus.documents.safe_cut`), as the document reader does, so memory
  stays flat on a single line of any length; with no such place it is refused past
  ``max_document_bytes``, as there.
"""

from __future__ import annotations

import codecs
import io
import lzma
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.corpus.documents import Position, safe_cut
from toktools.corpus.reading import CorpusSource, stream_position
from toktools.corpus.writers import DocumentWriter, ShardInfo
from toktools.errors import ToktoolsError

#: the largest block: measured on 100 MB of English (gpt2, 5 runs each, 2 cores), 6.25 MB blocks
#: cost ~10-15 % less CPU than 12.5 MB ones (and 3 MB blocks as much as 6.25 MB ones); smaller
#: blocks also shorten the start (the first block's encoding, with nothing to write beside it)
#: and the end (the last one's writing, with nothing to encode), and lower the peak memory
BLOCK_BYTES = 8 << 20
#: a smaller input is read in about this many blocks (at least :data:`MIN_BLOCK_BYTES` each), so that
#: the engine encodes one while the previous is checked and written, and ``--verify``'s checker
#: gets its sample as the run goes rather than all at the end
BLOCKS_WANTED = 16
MIN_BLOCK_BYTES = 1 << 20
#: documents of a block the ``--verify`` sample is picked from
VERIFY_CANDIDATES = 256
#: a line longer than this is encoded in safe pieces (the rest of it is not held in memory)
LONG_LINE_BYTES = 8 << 20
#: a block of a plain file is read so that it ends after the last newline in its last this many bytes
LINE_END_PROBE = 1 << 16


def takes_blocks(engine: Any, document_mode: str) -> bool:
    """Whether this run can go through :func:`encode_line_blocks`."""
    return document_mode == "line" and callable(getattr(engine, "encode_block", None))


@dataclass
class _Doc:
    """One document of a block, as ``--verify`` reads it."""

    text: str
    source: int
    line: int


class _BlockDocs(Sequence[_Doc]):
    """The documents (non-empty lines) of a block, made only when asked for."""

    def __init__(self, block: bytes, bounds: tuple[Any, Any, Any], source: int, first_line: int) -> None:
        self.block, self.source, self.first_line = block, source, first_line
        self.starts, self.ends, self.lines = bounds

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> _Doc:  # type: ignore[override]
        start, end = int(self.starts[index]), int(self.ends[index])
        return _Doc(self.block[start:end].decode("utf-8"), self.source, self.first_line + int(self.lines[index]))


class _BlockIds(Sequence[list[int]]):
    """The ids of the documents ``shown`` (indices into the block's documents)."""

    def __init__(self, data: Any, offsets: Any, shown: Any) -> None:
        self.data, self.offsets, self.shown = data, offsets, shown

    def __len__(self) -> int:
        return len(self.shown)

    def __getitem__(self, index: int) -> list[int]:  # type: ignore[override]
        document = int(self.shown[index])
        return self.data[self.offsets[document] : self.offsets[document + 1]].tolist()  # type: ignore[no-any-return]


_POOL: list[Any] = []


def _pool() -> Any:
    """One thread that hands blocks to the engine (kept for the process: a thread, not a fork)."""
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(1, thread_name_prefix="toktools-blocks"))
    return _POOL[0]


def _line_bounds(block: bytes) -> tuple[tuple[Any, Any, Any], int]:
    """Start and end (exclusive, before the ``\\n``) of every non-empty line of ``block``, and
    its line number counted from the block's first line (0); and the number of newlines."""
    import numpy as np

    newlines = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(block)]))
    keep = np.flatnonzero(ends > starts)
    return (starts[keep], ends[keep], keep), len(newlines)


class _Writing:
    """The writer side of the loop: documents of packed ids in, outputs and shards out (the same
    documents, BOS/EOS and shard boundaries as :func:`toktools.corpus.shards.encode_documents`)."""

    def __init__(
        self,
        new_writer: Callable[[], DocumentWriter],
        on_shard: Callable[[ShardInfo, Position | None], None],
        verifier: Any,
        bos_id: int | None,
        eos_id: int | None,
        shard_tokens: int | None,
        tokens_before: int,
        tally: Any = None,
    ) -> None:
        self.new_writer, self.on_shard, self.verifier = new_writer, on_shard, verifier
        #: unknown and byte-fallback ids counted from the arrays (toktools.corpus.diagnostics)
        self.tally = tally if tally is not None and tally.active else None
        self.bos_id, self.eos_id, self.shard_tokens = bos_id, eos_id, shard_tokens
        self.writer: DocumentWriter | None = None
        self.tokens_total = tokens_before
        self.finished = 0
        self.open_length = 0  # ids of a long document written so far (its pieces)

    def finish(self, end: Position | None) -> None:
        assert self.writer is not None
        self.verifier.sync()
        info = self.writer.finish()
        self.tokens_total += info.tokens
        self.writer = None
        self.finished += 1
        self.on_shard(info, end)

    def documents(self, data: Any, offsets: Any, end_of: Callable[[int], Position]) -> None:
        """Write whole documents: ``data[offsets[i]:offsets[i + 1]]`` is document ``i``;
        ``end_of(i)`` is where the input resumes after it. A document with no id (a line of
        spaces, for sentencepiece) is dropped, as :func:`toktools.corpus.shards.encode_documents`
        drops it; as there, one read after a shard has ended still opens the next output."""
        import numpy as np

        counts = np.diff(offsets)
        if not len(counts):
            return
        kept = np.flatnonzero(counts)
        if len(kept) < len(counts):
            finished = self.finished
            last_end: list[int] = []

            def kept_end(i: int) -> Position:
                last_end.append(int(kept[i]))
                return end_of(int(kept[i]))

            if len(kept):
                self._documents(data, np.concatenate(([0], np.cumsum(counts[kept]))), kept_end)
            after = last_end[-1] if self.finished > finished else -1  # the last document that ended a shard
            if self.writer is None and after < len(counts) - 1:
                self.writer = self.new_writer()
            return
        self._documents(data, offsets, end_of)

    def _documents(self, data: Any, offsets: Any, end_of: Callable[[int], Position]) -> None:
        """:meth:`documents` of at least one id each."""
        import numpy as np

        counts = np.diff(offsets)
        extra = (self.bos_id is not None) + (self.eos_id is not None)
        lengths = counts + extra
        first = 0
        while first < len(counts):
            if self.writer is None:
                self.writer = self.new_writer()
            last = len(counts) - 1
            if self.shard_tokens is not None:
                need = self.shard_tokens - self.writer.tokens
                reach = np.cumsum(lengths[first:])
                at = int(np.searchsorted(reach, need))  # the document that reaches the count
                last = min(last, first + at)
            self._write(data[offsets[first] : offsets[last + 1]], counts[first : last + 1], lengths[first : last + 1])
            if self.shard_tokens is not None and self.writer.tokens >= self.shard_tokens:
                self.finish(end_of(last))
            first = last + 1

    def _write(self, data: Any, counts: Any, lengths: Any) -> None:
        import numpy as np

        assert self.writer is not None
        if self.tally is not None:
            self.tally.add_array(data)
        if self.bos_id is None and self.eos_id is None:
            out = data
        else:
            ends = np.cumsum(lengths)
            out = np.empty(int(ends[-1]), dtype=self.writer.dtype)  # every id fits (the dtype is chosen so)
            is_id = np.ones(len(out), dtype=bool)
            if self.bos_id is not None:
                starts = ends - lengths
                is_id[starts] = False
                out[starts] = self.bos_id
            if self.eos_id is not None:
                is_id[ends - 1] = False
                out[ends - 1] = self.eos_id
            out[is_id] = data
        self.writer.write_ids(out)
        self.writer.add_documents(np.ascontiguousarray(lengths, dtype=np.int64).tobytes())

    def piece(self, ids: Any) -> None:
        """A piece of a long document (not its end)."""
        import numpy as np

        if not len(ids):
            return
        if self.tally is not None:
            self.tally.add_array(ids)
        if self.writer is None:
            self.writer = self.new_writer()
        if not self.open_length and self.bos_id is not None:
            ids = np.concatenate((np.asarray([self.bos_id], dtype=np.uint32), ids))
        self.writer.write_uint32(np.ascontiguousarray(ids, dtype=np.uint32).tobytes())
        self.open_length += len(ids)

    def close_long(self, ids: Any, end: Position) -> None:
        """The last piece of a long document, and its end."""
        import numpy as np

        self.piece(ids)
        if not self.open_length:
            if self.writer is None:  # a document read, as encode_documents opens the next output for it
                self.writer = self.new_writer()
            return
        assert self.writer is not None
        if self.eos_id is not None:
            self.writer.write_uint32(np.asarray([self.eos_id], dtype=np.uint32).tobytes())
            self.open_length += 1
        self.writer.add_document(self.open_length)
        self.open_length = 0
        if self.shard_tokens is not None and self.writer.tokens >= self.shard_tokens:
            self.finish(end)


def encode_line_blocks(
    sources: Sequence[CorpusSource],
    engine: Any,
    verifier: Any,
    new_writer: Callable[[], DocumentWriter],
    on_shard: Callable[[ShardInfo, Position | None], None],
    *,
    bos_id: int | None,
    eos_id: int | None,
    shard_tokens: int | None,
    progress: Callable[[int, int, int], None] | None,
    total: int,
    cuttable: bool,
    max_document_bytes: int,
    start: Position | None = None,
    tokens_before: int = 0,
    kept: int = 0,
    tally: Any = None,
) -> None:
    """What :func:`toktools.corpus.shards.encode_documents` does for ``--document line``, a block
    at a time (see the module's docstring); ``tally`` counts unknown and byte-fallback ids."""
    start = start or Position(0, 0, 1)
    out = _Writing(new_writer, on_shard, verifier, bos_id, eos_id, shard_tokens, tokens_before, tally)
    done_before = sum(s.size() for s in sources[: start.source])
    try:
        for index in range(start.source, len(sources)):
            source = sources[index]
            at = start if index == start.source else Position(index, 0, 1)
            _encode_source(
                source, index, at, engine, verifier, out, progress, total, done_before, cuttable, max_document_bytes
            )
            done_before += source.size()
        if out.writer is not None or not (kept or out.finished):
            if out.writer is None:
                out.writer = new_writer()
            out.finish(None)
    except BaseException:
        if out.writer is not None:
            out.writer.discard()
        raise


def block_bytes(total: int) -> int:
    """The block size for an input of ``total`` bytes (0: unknown, such as standard input)."""
    if total <= 0:
        return BLOCK_BYTES
    return min(BLOCK_BYTES, max(MIN_BLOCK_BYTES, total // BLOCKS_WANTED))


def _read(handle: Any, source: CorpusSource, size: int, to_line_end: bool = False) -> bytes:
    """The next ``size`` bytes; with ``to_line_end`` (a plain file on disk), fewer: up to the
    last newline among them (see :func:`_read_to_line_end`)."""
    try:
        if to_line_end:
            return _read_to_line_end(handle, size)
        return handle.read(size)  # type: ignore[no-any-return]
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as err:  # as the document reader says it
        reason = "the file ends too early" if isinstance(err, EOFError) else str(err)
        raise ToktoolsError(f"{source.path}: cannot decompress ({reason})") from None


def _read_to_line_end(handle: Any, size: int) -> bytes:
    """At most ``size`` bytes from a seekable file, ending right after a newline where one lies
    in their last :data:`LINE_END_PROBE` bytes (else ``size`` bytes, or up to the end of the
    file). The loop cuts each block after its last newline and carries the rest over to the
    next: a block read so that it already ends there is handed on as it is, where cutting it
    would copy the block twice (``pending + block``, then ``data[:cut]``: ~0.1 s of a 100 MB run)."""
    start = handle.tell()
    if size > LINE_END_PROBE:
        handle.seek(start + size - LINE_END_PROBE)
        tail = handle.read(LINE_END_PROBE)
        newline = tail.rfind(b"\n")
        if len(tail) == LINE_END_PROBE and newline >= 0:
            size -= LINE_END_PROBE - newline - 1
        handle.seek(start)
    return handle.read(size)  # type: ignore[no-any-return]


def _check_utf8(block: bytes, source: CorpusSource, first_line: int, scan: Any) -> None:
    """Refuse a block that is not UTF-8 (one line: where, which byte); ``scan``: its non-ASCII bytes."""
    from toktools.corpus.utf8_check import is_utf8_scanned

    if is_utf8_scanned(block, scan):  # no str built on mostly-ASCII text
        return
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + block.count(b"\n", 0, err.start)
        raise ToktoolsError(f"{source.path}, line {line}: invalid UTF-8 (byte 0x{block[err.start]:02X})") from None


def _encode_source(
    source: CorpusSource,
    index: int,
    start: Position,
    engine: Any,
    verifier: Any,
    out: _Writing,
    progress: Callable[[int, int, int], None] | None,
    total: int,
    done_before: int,
    cuttable: bool,
    max_document_bytes: int,
) -> None:
    import numpy as np

    handle = source.open()
    raw = getattr(handle, "fileobj", None) or getattr(handle, "_fp", None)
    size = block_bytes(total)
    plain = isinstance(handle, io.BufferedReader) and not source.is_stdin and handle.seekable()
    offset, line = start.offset, start.line  # where ``pending`` starts in the stream
    pending = b""
    long_open = False  # a long line's head is already encoded (its pieces written)
    long_text = ""  # its decoded text not encoded yet
    long_bytes = 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    in_flight: _Block | None = None  # submitted to the engine, written once the next one is submitted
    try:
        if offset:
            from toktools.corpus.documents import DocumentReader

            DocumentReader._skip(None, handle, source, offset)  # type: ignore[arg-type]
        eof = False
        while not eof:
            block = _read(handle, source, size, to_line_end=plain and not pending)
            eof = not block
            position = stream_position(handle, raw)
            bytes_done = done_before + min(position, source.size() or position) if position is not None else 0
            data = pending + block if pending else block
            cut = len(data) if eof else data.rfind(b"\n") + 1
            if long_open or (cut == 0 and len(data) > LONG_LINE_BYTES):
                # a long line: encode its head in safe pieces, keep the rest (what came before first)
                if in_flight is not None:
                    done, in_flight = in_flight, None
                    _finish_block(done, verifier, out)
                newline = data.find(b"\n")
                head = data if newline < 0 and not eof else data[: newline if newline >= 0 else len(data)]
                try:
                    long_text += decoder.decode(head, final=newline >= 0 or eof)
                except UnicodeDecodeError as err:
                    raise ToktoolsError(
                        f"{source.path}, line {line}: invalid UTF-8 (byte 0x{head[err.start]:02X})"
                    ) from None
                long_bytes += len(head)
                long_open = True
                if newline < 0 and not eof:
                    long_text, piece = _long_pieces(
                        long_text, engine, out, cuttable, long_bytes, max_document_bytes, source, line
                    )
                    _verify_piece(verifier, piece, index, line, bytes_done)
                    offset += len(head)
                    pending = b""
                    continue
                decoder.reset()
                consumed = len(head) + (1 if newline >= 0 else 0)
                offset += consumed
                packed = engine.encode_packed([long_text]) if long_text else None
                ids = np.frombuffer(packed.data, dtype=np.uint32) if packed else np.zeros(0, np.uint32)
                _verify_piece(verifier, (long_text, ids), index, line, bytes_done)
                line += 1
                out.close_long(ids, Position(index, offset, line))
                long_open, long_text, long_bytes = False, "", 0
                data = data[consumed:]
                cut = len(data) if eof else data.rfind(b"\n") + 1
            if cut <= 0 and not eof:
                pending = data
                continue
            body, pending = data[:cut], data[cut:]
            if body:
                job = _start_block(body, index, offset, line, engine, bytes_done, source)
                if in_flight is not None:  # written while the engine encodes ``job``
                    _finish_block(in_flight, verifier, out)
                in_flight = job
                line += job.newlines
                offset += len(body)
            if progress is not None:
                progress(bytes_done, total, out.tokens_total + (out.writer.tokens if out.writer else 0))
        if in_flight is not None:
            done, in_flight = in_flight, None
            _finish_block(done, verifier, out)
    finally:
        if not source.is_stdin:
            handle.close()


def _long_pieces(
    text: str,
    engine: Any,
    out: _Writing,
    cuttable: bool,
    held_bytes: int,
    max_document_bytes: int,
    source: CorpusSource,
    line: int,
) -> tuple[str, tuple[str, Any] | None]:
    """Encode the safe head of a long line's text; return what is left, and the piece encoded
    (its text and ids; None when there was no safe cut yet)."""
    import numpy as np

    cut = safe_cut(text, len(text) - 1) if cuttable else 0
    if cut <= 0:
        if held_bytes > max_document_bytes:
            why = (
                "it holds no space where a cut is provably safe"
                if cuttable
                else "this tokenizer's pipeline cannot be cut safely"
            )
            raise ToktoolsError(
                f"{source.path}, line {line}: document longer than {max_document_bytes >> 20} MB and {why} "
                "(raise max_document_bytes / --max-document-mb, or split the input)"
            )
        return text, None
    piece = text[:cut]
    ids = np.frombuffer(engine.encode_packed([piece]).data, dtype=np.uint32)
    out.piece(ids)
    return text[cut:], (piece, ids)


def _verify_piece(verifier: Any, piece: tuple[str, Any] | None, index: int, line: int, bytes_done: int) -> None:
    """Offer a piece of a long line to ``--verify`` as a document of its own: it starts at the
    line's start or at a safe cut, so its ids are the engine's for that stretch of the line, and
    the sample checks a prefix of it that ends at a safe cut (the rule for long documents), as
    its marks and the time budget ask (:class:`toktools.corpus.verify_sample.Sample`)."""
    if piece is None or not piece[0]:
        return
    text, ids = piece
    verifier.check([_Doc(text, index, line)], [ids], bytes_done)


@dataclass
class _Block:
    """A block of whole lines handed to the engine, and where it stands in the input."""

    block: bytes
    index: int
    offset: int
    first_line: int
    bytes_done: int
    source: CorpusSource
    scan: Any  # its non-ASCII bytes (toktools.corpus.utf8_check.non_ascii), read once for both checks
    bounds: tuple[Any, Any, Any]  # its non-empty lines (_line_bounds)
    newlines: int
    encoding: Any  # the engine's future: (every id as uint32, offsets of each line's ids)


def _start_block(
    block: bytes, index: int, offset: int, first_line: int, engine: Any, bytes_done: int, source: CorpusSource
) -> _Block:
    """Hand ``block`` to the engine on its own thread (gigatoken encodes on its pool, without the
    GIL); a block holding a code point the engine routes elsewhere goes line by line through its
    ``encode_packed`` (on the same thread: the engine is never called from two at once). Its
    lines and its non-ASCII bytes are read here, once, for the routing and the checks."""
    from toktools.corpus.utf8_check import non_ascii

    scan = non_ascii(block)
    if engine.block_needs_routing(block, scan):
        encoding = _pool().submit(_routed_lines, engine, block)
    else:
        encoding = _pool().submit(engine.encode_block, block)
    bounds, newlines = _line_bounds(block)
    return _Block(block, index, offset, first_line, bytes_done, source, scan, bounds, newlines, encoding)


def _routed_lines(engine: Any, block: bytes) -> tuple[Any, Any]:
    import numpy as np

    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:  # refused by the writer's check, with the line
        return np.zeros(0, np.uint32), np.zeros(1, np.int64)
    packed = engine.encode_packed([line for line in text.split("\n") if line])
    data = np.frombuffer(packed.data, dtype=np.uint32)
    return data, np.concatenate(([0], np.cumsum(np.asarray(packed.counts, dtype=np.int64))))


def _finish_block(job: _Block, verifier: Any, out: _Writing) -> None:
    """One block of whole lines, once encoded: checked (UTF-8, the ``--verify`` sample) and
    written. This runs while the engine encodes the next block."""
    import numpy as np

    block, index, source, first_line = job.block, job.index, job.source, job.first_line
    try:
        _check_utf8(block, source, first_line, job.scan)
    finally:
        data, offsets = job.encoding.result()
    starts, ends, lines = job.bounds
    if len(offsets) - 1 != len(starts):
        raise ToktoolsError(f"{source.path}: the engine split {len(offsets) - 1} lines where there are {len(starts)}")
    # the --verify sample is taken from a few hundred documents spread over the block (the
    # verifier looks at the length of each document it may pick)
    shown = np.unique(np.linspace(0, len(starts) - 1, min(len(starts), VERIFY_CANDIDATES)).astype(np.int64))
    verifier.check(
        _BlockDocs(block, (starts[shown], ends[shown], lines[shown]), index, first_line),
        _BlockIds(data, offsets, shown),
        job.bytes_done,
    )

    def end_of(document: int) -> Position:
        end = int(ends[document])
        after = end + 1 if end < len(block) else end
        return Position(index, job.offset + after, first_line + int(lines[document]) + 1)

    out.documents(data, offsets, end_of)
