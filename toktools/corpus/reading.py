"""Reading corpora and counting words, in parallel and deterministically.

``tokenizers`` reads a training file as UTF-8 and cuts it only at ``\\n`` (each line keeps its
line ending). We read big blocks, cut them at the last ``\\n``, and hand whole-line chunks to
worker processes; a model-specific function turns a chunk into words, and the per-chunk counts
are merged in chunk order. So the counts — and their first-occurrence order, which the WordPiece
trainer uses — do not depend on the number of workers.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import itertools
import json
import lzma
import os
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

from toktools.errors import ToktoolsError
from toktools.runtime.workers import available_cores, process_pool
from toktools.text_check import escapes_a_surrogate, lone_surrogate

T = TypeVar("T")

CHUNK_BYTES = 1 << 20
#: A picklable function from a chunk of whole lines to its words (for worker processes).
WordSplitter = Callable[[str], Iterable[str]]
ProgressCallback = Callable[[int, int], None]  # (bytes read, total bytes or 0 if unknown)
ErrorPolicy = Literal["strict", "replace", "skip"]


@dataclass(frozen=True)
class CorpusSource:
    """One input: a path (plain or .gz/.xz/.bz2) or ``-`` for standard input.

    With ``json_field``, each line is a JSON object and only that field's text is used (as one
    sequence, with a ``\\n`` appended like a line of a text file)."""

    path: str
    json_field: str | None = None

    @property
    def is_stdin(self) -> bool:
        return self.path == "-"

    def size(self) -> int:
        """Bytes on disk (compressed size for compressed files; 0 for stdin)."""
        return 0 if self.is_stdin else os.path.getsize(self.path)

    def open(self) -> BinaryIO:
        if self.is_stdin:
            return sys.stdin.buffer
        path = Path(self.path)
        try:
            if path.suffix == ".gz":
                return gzip.open(path, "rb")  # type: ignore[return-value]
            if path.suffix == ".xz":
                return lzma.open(path, "rb")  # type: ignore[return-value]
            if path.suffix == ".bz2":
                return bz2.open(path, "rb")  # type: ignore[return-value]
            return open(path, "rb")
        except FileNotFoundError:
            raise ToktoolsError(f"corpus file not found: {path}") from None
        except IsADirectoryError:
            raise ToktoolsError(f"{path} is a directory") from None
        except PermissionError:
            raise ToktoolsError(f"cannot read {path}: permission denied") from None


def expand_sources(paths: Sequence[str], json_field: str | None = None) -> list[CorpusSource]:
    """Files as given; directories become their files (recursively, sorted by path); a glob
    pattern the shell did not expand becomes its matches (sorted)."""
    sources = []
    for raw in paths:
        path = Path(raw)
        if raw != "-" and not path.exists() and any(ch in raw for ch in "*?["):
            matches = sorted(glob.glob(raw, recursive=True))  # a quoted glob, e.g. "data/*.txt.gz"
            if not matches:
                raise ToktoolsError(f"no file matches {raw}")
            sources.extend(expand_sources(matches, json_field))
            continue
        if raw != "-" and path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            if not files:
                raise ToktoolsError(f"directory {path} holds no files")
            sources.extend(CorpusSource(str(p), json_field) for p in files)
        elif raw != "-" and not path.exists():
            raise ToktoolsError(f"corpus file not found: {path}")
        else:
            sources.append(CorpusSource(raw, json_field))
    if not sources:
        raise ToktoolsError("no corpus given")
    return sources


def decode_lines(block: bytes, source: CorpusSource, first_line: int, errors: ErrorPolicy, hint: bool = True) -> str:
    """Strict UTF-8 with an error that names the file and line, or replace / skip bad lines."""
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as err:
        if errors == "replace":
            return block.decode("utf-8", errors="replace")
        if errors == "skip":
            kept = []
            for raw_line in block.split(b"\n"):
                try:
                    kept.append(raw_line.decode("utf-8"))
                except UnicodeDecodeError:
                    continue
            return "\n".join(kept)
        line = first_line + block.count(b"\n", 0, err.start)
        raise ToktoolsError(
            f"{source.path}, line {line}: invalid UTF-8 (byte 0x{block[err.start]:02X})"
            + ("; use --errors replace or --errors skip to go on" if hint else "")
        ) from None


def refuse_lone_surrogate(path: str, line: int, field: str | None, value: str) -> None:
    """One line for a JSON Lines record whose text escapes half of a surrogate pair: it is not
    valid Unicode, so no engine can encode it (``tokenizers`` raises on it)."""
    where = lone_surrogate(value)
    if where is not None:
        raise ToktoolsError(
            f"{path}, line {line}: field {field!r} holds a lone surrogate ({where}, an unpaired \\u escape): "
            "not valid Unicode"
        )


def json_field_text(line: str, field: str, path: str, number: int) -> str:
    """The string ``field`` of the JSON Lines record ``line`` (line ``number`` of ``path``), or
    one line saying why there is none: not an object with that field, not a string, or not valid
    Unicode (a lone surrogate)."""
    try:
        value = json.loads(line)[field]
    except (json.JSONDecodeError, KeyError, TypeError, IndexError, RecursionError):
        raise ToktoolsError(f"{path}, line {number}: not a JSON object with a {field!r} field") from None
    if not isinstance(value, str):
        raise ToktoolsError(f"{path}, line {number}: field {field!r} is not a string")
    if escapes_a_surrogate(line):
        refuse_lone_surrogate(path, number, field, value)
    return value


def json_lines_text(text: str, source: CorpusSource, first_line: int) -> str:
    """The text field of each JSON Lines record in ``text`` (first line numbered ``first_line``), one per line."""
    field = source.json_field or "text"  # (called for sources with a field)
    return "".join(
        json_field_text(line, field, source.path, first_line + offset) + "\n"
        for offset, line in enumerate(text.split("\n"))
        if line.strip()
    )


def read_blocks(
    source: CorpusSource, block_bytes: int = CHUNK_BYTES, on_block: Callable[[BinaryIO, object], None] | None = None
) -> Iterator[bytes]:
    """The (decompressed) bytes of one source in blocks; a corrupt or truncated compressed
    file is one error that names it. ``on_block(handle, raw file)`` runs as each block is read
    (progress: the position in the file on disk)."""
    handle = source.open()
    raw = getattr(handle, "fileobj", None) or getattr(handle, "_fp", None)
    try:
        while True:
            try:
                block = handle.read(block_bytes)
            except (OSError, EOFError, lzma.LZMAError, zlib.error) as err:
                reason = "the file ends too early" if isinstance(err, EOFError) else str(err)
                raise ToktoolsError(f"{source.path}: cannot decompress ({reason})") from None
            if not block:
                return
            if on_block is not None:
                on_block(handle, raw)
            yield block
    finally:
        if not source.is_stdin:
            handle.close()


def raw_lines(source: CorpusSource, on_block: Callable[[BinaryIO, object], None] | None = None) -> Iterator[bytes]:
    """The lines of one source as bytes, cut at ``\\n`` only (kept), like ``tokenizers``
    (``on_block`` as :func:`read_blocks` takes it)."""
    pending: list[bytes] = []  # the pieces of an unfinished line (joined once: no quadratic copying)
    for block in read_blocks(source, 1 << 16, on_block):
        cut = block.rfind(b"\n") + 1
        if not cut:
            pending.append(block)
            continue
        whole = b"".join([*pending, block[:cut]])
        pending = [block[cut:]] if cut < len(block) else []
        start = 0
        while start < len(whole):  # slices, not split-and-append: a 50 MB line is not copied twice
            end = whole.index(b"\n", start) + 1
            yield whole[start:end]
            start = end
    if pending:
        yield b"".join(pending)


def read_lines(paths: Sequence[str], *, keep_ends: bool = False) -> Iterator[str]:
    """The one reader of text lines (encode, decode, inspect, held-out files): lines of plain,
    .gz, .xz or .bz2 files or ``-`` (stdin), cut at ``\\n`` only (``\\r`` is text), strict UTF-8
    with errors that name the file and line."""
    for _source, _number, line in numbered_lines(CorpusSource(str(path)) for path in paths):
        yield line if keep_ends or not line.endswith("\n") else line[:-1]


def numbered_lines(
    sources: Iterable[CorpusSource], bytes_read: Callable[[int], None] | None = None
) -> Iterator[tuple[int, int, str]]:
    """``(source index, line number, line)`` of every source, as :func:`read_lines` reads them
    (the line keeps its ``\n``); ``bytes_read`` is told how far into the inputs on disk the
    reading is (compressed bytes for compressed files)."""
    done_before = 0
    for index, source in enumerate(sources):
        if not source.is_stdin:
            _check_readable(Path(source.path))
        note = None
        if bytes_read is not None:

            def note(handle: BinaryIO, raw: object, before: int = done_before) -> None:
                position = stream_position(handle, raw)
                if position is not None:
                    bytes_read(before + position)  # type: ignore[misc]

        for number, raw in enumerate(raw_lines(source, note), start=1):
            yield index, number, decode_lines(raw, source, number, "strict", hint=False)
        if bytes_read is not None:
            done_before += source.size()
            bytes_read(done_before)


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise ToktoolsError(f"file not found: {path}")
    if path.is_dir():
        raise ToktoolsError(f"{path} is a directory, not a text file")


def iter_chunks(
    sources: Sequence[CorpusSource],
    chunk_bytes: int = CHUNK_BYTES,
    errors: ErrorPolicy = "strict",
    progress: ProgressCallback | None = None,
) -> Iterator[str]:
    """Whole-line text chunks of all sources, in order; progress in bytes read from disk."""
    total = sum(s.size() for s in sources)
    done_before = 0
    for source in sources:
        line_number = 1
        pending = b""
        position: list[int | None] = [None]

        def note_position(handle: BinaryIO, raw: object, position: list[int | None] = position) -> None:
            position[0] = stream_position(handle, raw)

        for block in read_blocks(source, chunk_bytes, note_position if progress is not None else None):
            block = pending + block
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                pending = block
                continue
            pending = block[cut:]
            whole = block[:cut]
            text = decode_lines(whole, source, line_number, errors)
            if source.json_field:
                text = json_lines_text(text, source, line_number)
            line_number += whole.count(b"\n")
            if progress is not None:
                progress(done_before + position[0] if position[0] is not None else 0, total)
            yield text
        if pending:
            text = decode_lines(pending, source, line_number, errors)
            yield json_lines_text(text, source, line_number) if source.json_field else text
        done_before += source.size()
        if progress is not None:
            progress(done_before, total)


def stream_position(handle: Any, raw: Any) -> int | None:
    """How far into the file on disk we are (compressed offset for compressed files)."""
    try:
        target = raw if raw is not None and hasattr(raw, "tell") else handle
        return int(target.tell())
    except (OSError, ValueError, AttributeError):
        return None


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (the last may be shorter): streaming work in batches
    keeps memory flat on inputs of any length."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _count_chunk(splitter: WordSplitter, chunk: str) -> Counter[str]:
    return Counter(splitter(chunk))


def count_words(
    sources: Sequence[CorpusSource],
    splitter: WordSplitter,
    *,
    workers: int | None = None,
    errors: ErrorPolicy = "strict",
    progress: ProgressCallback | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> dict[str, int]:
    """``word -> count`` over all sources, in first-occurrence order, identical for any ``workers``."""
    if workers is None:  # small corpora: starting processes would cost more than it saves
        workers = 1 if sum(s.size() for s in sources) < 4 * chunk_bytes else available_cores()
    workers = min(workers, available_cores())  # more processes than cores only thrash
    chunks = iter_chunks(sources, chunk_bytes, errors, progress)
    total: Counter[str] = Counter()
    first = next(chunks, None)
    second = next(chunks, None) if first is not None else None
    read = [c for c in (first, second) if c is not None]
    if workers <= 1 or second is None:  # one chunk: starting processes cannot pay off
        for chunk in itertools.chain(read, chunks):
            total.update(_count_chunk(splitter, chunk))
    else:
        with process_pool(workers) as pool:
            # a bounded window of chunks in flight keeps memory flat on huge corpora
            in_flight = []
            for chunk in itertools.chain(read, chunks):
                in_flight.append(pool.submit(_count_chunk, splitter, chunk))
                if len(in_flight) >= 2 * workers:
                    total.update(in_flight.pop(0).result())
            for future in in_flight:
                total.update(future.result())
    if not total:
        raise ToktoolsError("the corpus is empty: no words to learn from")
    return dict(total)


# ---------------------------------------------------------------------------------------------
# Counts files: word<TAB>count, with a header that pins the pre-processing settings
# ---------------------------------------------------------------------------------------------

COUNTS_MAGIC = "#toktools-counts v1"


def dumps_counts(counts: dict[str, int], kind: str, settings: dict[str, object]) -> str:
    """A counts file: a header naming the tokenizer kind and the normaliser / pre-tokeniser
    settings the words were made with, then ``word<TAB>count`` lines (first-occurrence order).

    Words never hold a tab or a newline: byte-level words are byte symbols, WordPiece words
    are pre-tokens (whitespace splits them)."""
    header = {"kind": kind, "settings": settings, "words": len(counts), "total": sum(counts.values())}
    lines = [COUNTS_MAGIC, "#" + json.dumps(header, sort_keys=True, ensure_ascii=False)]
    lines.extend(f"{word}\t{count}" for word, count in counts.items())
    return "\n".join(lines) + "\n"


def read_counts(path: str | Path) -> tuple[str, dict[str, object], dict[str, int]]:
    """``(kind, settings, counts)`` of a counts file, with a clear error on anything else."""
    path = Path(path)
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise ToktoolsError(f"counts file not found: {path}") from None
    except IsADirectoryError:
        raise ToktoolsError(f"{path} is a directory, not a counts file") from None
    counts: dict[str, int] = {}
    with handle:
        lines = (_counts_line(path, number, raw) for number, raw in enumerate(handle, start=1))
        magic = next(lines, "").rstrip("\n")
        if magic != COUNTS_MAGIC:
            raise ToktoolsError(f"{path}: not a toktools counts file (make one with `toktools count`)")
        try:
            header = json.loads(next(lines, "")[1:])
            kind, settings = header["kind"], header["settings"]
        except (json.JSONDecodeError, KeyError, TypeError, RecursionError):
            raise ToktoolsError(f"{path}, line 2: corrupt counts header") from None
        for number, line in enumerate(lines, start=3):
            word, tab, count = line.rstrip("\n").rpartition("\t")
            if not tab or not word or not count.isdigit():
                raise ToktoolsError(f"{path}, line {number}: expected word<TAB>count")
            counts[word] = counts.get(word, 0) + int(count)
    if not counts:
        raise ToktoolsError(f"{path}: no word counts in the file")
    return kind, settings, counts


def _counts_line(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ToktoolsError(f"{path}, line {number}: invalid UTF-8 (byte 0x{raw[err.start]:02X})") from None
