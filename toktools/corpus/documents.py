"""Documents of corpus files, streamed in bounded pieces.

A document is a line (``line``), a run of lines between blank lines (``blank-line``), a whole
file (``file``) or one JSON Lines record's text field (``jsonl``). Files are read in blocks;
only the document being assembled is held in memory. A document longer than ``segment_chars``
is handed out in segments, cut where the cut provably cannot change the ids (see
:func:`toktools.engines.analysis.cuttable` and :func:`safe_cut`); when the tokenizer allows no such
cut, or none is found within ``max_document_bytes``, reading stops with one line.
"""

from __future__ import annotations

import codecs
import json
import lzma
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from toktools.corpus.reading import CorpusSource, refuse_lone_surrogate, stream_position
from toktools.errors import ToktoolsError
from toktools.text_check import escapes_a_surrogate

DOCUMENT_MODES = ("line", "blank-line", "file", "jsonl")
READ_BYTES = 1 << 20
SEGMENT_CHARS = 1 << 20
#: The longest document that is kept whole, for a tokenizer that may be cut, when the document
#: holds no place to cut it (Chinese without spaces): ids-only engines stay well under 1 GB.
MAX_DOCUMENT_BYTES = 64 << 20
#: The same for a tokenizer that may never be cut (SentencePiece ``.model`` files and other
#: pipelines :func:`toktools.engines.analysis.cuttable` refuses): the engines then encode the
#: whole document at once, at up to about 80 bytes of memory per byte of text.
MAX_UNCUT_DOCUMENT_BYTES = 8 << 20
#: The longest piece that is encoded with full encodings (ids, tokens, offsets) at once, about
#: 0.5 GB of Python objects: longer documents are cut (:func:`bounded_segments`) or refused.
MAX_UNCUT_CHARS = 4 << 20


def _hf_spaces() -> frozenset[str]:
    from toktools.tables.bytelevel import SPACE_RANGES

    return frozenset(chr(c) for lo, hi in SPACE_RANGES for c in range(lo, hi + 1))


_SPACES: frozenset[str] | None = None


def _is_space(ch: str) -> bool:
    global _SPACES
    if _SPACES is None:
        _SPACES = _hf_spaces()
    return ch.isspace() or ch in _SPACES


def safe_cut(text: str, limit: int, before: Callable[[str], bool] | None = None) -> int:
    """The largest ``i <= limit`` with ``text[i] == " "`` and ``text[i - 1]`` not whitespace
    (neither Python's nor ``tokenizers``' ``\\s``), or 0 if there is none. Cutting there keeps
    the ids for the tokenizers :func:`toktools.engines.analysis.cuttable` accepts. ``before``
    narrows the rule further: ``text[i - 1]`` must also pass it (see :func:`unigram_may_end`)."""
    return _last_cut(text, 0, limit, before)


def _cut_here(text: str, i: int, before: Callable[[str], bool] | None) -> bool:
    ch = text[i - 1]
    return not _is_space(ch) and (before is None or before(ch))


def _last_cut(text: str, low: int, limit: int, before: Callable[[str], bool] | None) -> int:
    """:func:`safe_cut`, looking only at ``low < i <= limit``."""
    i = min(limit, len(text) - 1)
    while i > low:
        i = text.rfind(" ", low + 1, i + 1)
        if i <= low:
            return 0
        if _cut_here(text, i, before):
            return i
        i -= 1
    return 0


def _first_cut(text: str, low: int, before: Callable[[str], bool] | None) -> int:
    """The smallest safe cut ``i > low`` (the rule of :func:`safe_cut`), or 0."""
    i = low + 1
    while True:
        i = text.find(" ", i)
        if i < 0:
            return 0
        if _cut_here(text, i, before):
            return i
        i += 1


def safe_segments(
    text: str, segment_chars: int = SEGMENT_CHARS, before: Callable[[str], bool] | None = None
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the pieces of a text already in memory, cut by the rule of
    :func:`safe_cut` (the rule :class:`DocumentReader` cuts long documents by): each piece ends at
    the last safe place within ``segment_chars`` of its start, or else at the first one after;
    a text without one is a single piece. The pieces, joined, are ``text``."""
    start, size = 0, len(text)
    while size - start > segment_chars:
        cut = _last_cut(text, start, start + segment_chars, before) or _first_cut(text, start, before)
        if not cut:
            break
        yield start, cut
        start = cut
    yield start, size


def unigram_may_end(ch: str) -> bool:
    """A character a piece may end with when the pipeline normalises with ``Nmt``, ``NFKC`` and
    a collapse of space runs before a ``Metaspace`` split (SentencePiece-style Unigram): a letter
    or digit, which these normalisers never delete and never turn into a trailing space, so a
    cut just before the following ``" "`` leaves the words on both sides as they were
    (``tests/test_long_documents.py`` checks every such code point)."""
    return ch.isalnum()


def bounded_segments(
    text: str,
    cut: bool,
    where: str,
    *,
    segment_chars: int = SEGMENT_CHARS,
    max_chars: int = MAX_UNCUT_CHARS,
    before: Callable[[str], bool] | None = None,
) -> Iterator[tuple[int, int]]:
    """:func:`safe_segments` of ``text`` (all of it at once when ``cut`` is false: the tokenizer
    allows no cut), for the paths that encode each piece with full encodings, whose memory grows
    with the piece: a piece longer than ``max_chars`` stops the run with one line naming
    ``where`` (a file and line)."""
    spans = safe_segments(text, segment_chars, before) if cut else iter([(0, len(text))])
    for start, end in spans:
        if end - start > max_chars:
            why = "it holds no space where a cut is provably safe" if cut else "this tokenizer cannot be cut safely"
            raise ToktoolsError(
                f"{where}: document longer than {max_chars >> 20} Mi characters in one piece and {why} "
                "(split the input)"
            )
        yield start, end


@dataclass
class Position:
    """Where reading resumes: input number, byte offset in its (decompressed) stream, line."""

    source: int
    offset: int
    line: int

    def as_json(self) -> dict[str, int]:
        return {"input": self.source, "offset": self.offset, "line": self.line}


@dataclass
class Segment:
    """A piece of a document's text; ``last`` closes the document (``end`` is then where the
    next document starts). ``line`` is the first line of the document, for messages."""

    text: str
    first: bool
    last: bool
    source: int
    line: int
    end: Position | None


class DocumentReader:
    """Yields :class:`Segment` s of every document of ``sources`` in order."""

    def __init__(
        self,
        sources: Sequence[CorpusSource],
        mode: str,
        field: str | None = None,
        *,
        cuttable: bool = False,
        segment_chars: int = SEGMENT_CHARS,
        max_document_bytes: int | None = None,
        start: Position | None = None,
    ) -> None:
        if mode not in DOCUMENT_MODES:
            raise ToktoolsError(f"unknown document mode {mode!r}; choose one of {', '.join(DOCUMENT_MODES)}")
        self.sources = sources
        self.mode = mode
        self.field = field or "text"
        self.cuttable = cuttable
        self.segment_chars = segment_chars
        if max_document_bytes is None:
            max_document_bytes = MAX_DOCUMENT_BYTES if cuttable else MAX_UNCUT_DOCUMENT_BYTES
        self.max_document_bytes = max_document_bytes
        self.start = start or Position(0, 0, 1)
        self.bytes_done = 0  # progress: bytes of the inputs on disk read so far
        self.total = sum(s.size() for s in sources)
        # the document being assembled
        self._parts: list[str] = []
        self._chars = 0
        self._emitted = False
        self._doc_line = 1

    # -- the document buffer ------------------------------------------------------------------

    def _add(self, text: str) -> Iterator[Segment]:
        """Append text to the open document; hand out safe segments when it grows too long."""
        self._parts.append(text)
        self._chars += len(text)
        if self._chars <= self.segment_chars:
            return
        whole = "".join(self._parts)
        while len(whole) > self.segment_chars:
            cut = safe_cut(whole, self.segment_chars) if self.cuttable else 0
            if cut == 0 and self.cuttable:
                cut = safe_cut(whole, len(whole))  # a later cut, if the text holds one
            if cut == 0:
                if len(whole.encode("utf-8")) > self.max_document_bytes:
                    self._too_long()
                break
            yield Segment(whole[:cut], not self._emitted, False, self._source_index, self._doc_line, None)
            self._emitted = True
            whole = whole[cut:]
        self._parts = [whole]
        self._chars = len(whole)

    def _too_long(self) -> None:
        source = self.sources[self._source_index]
        limit = self.max_document_bytes >> 20
        why = (
            "it holds no space where a cut is provably safe"
            if self.cuttable
            else "this tokenizer's pipeline cannot be cut safely"
        )
        raise ToktoolsError(
            f"{source.path}, line {self._doc_line}: document longer than {limit} MB and {why} "
            "(raise max_document_bytes / --max-document-mb, or split the input)"
        )

    def _close(self, end: Position, *, keep_empty: bool = False) -> Iterator[Segment]:
        text = "".join(self._parts)
        if text or self._emitted or keep_empty:
            yield Segment(text, not self._emitted, True, self._source_index, self._doc_line, end)
        self._parts = []
        self._chars = 0
        self._emitted = False

    # -- reading ------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Segment]:
        done_before = sum(s.size() for s in self.sources[: self.start.source])
        for index in range(self.start.source, len(self.sources)):
            source = self.sources[index]
            self._source_index = index
            start = self.start if index == self.start.source else Position(index, 0, 1)
            yield from self._read_source(source, index, start, done_before)
            done_before += source.size()
            self.bytes_done = done_before

    def _read_source(self, source: CorpusSource, index: int, start: Position, done_before: int) -> Iterator[Segment]:
        handle = source.open()
        raw = getattr(handle, "fileobj", None) or getattr(handle, "_fp", None)
        line = start.line
        offset = start.offset
        decoder = codecs.getincrementaldecoder("utf-8")()
        partial = False  # the current line's head was already decoded (a line longer than a block)
        pending = b""
        self._doc_line = line
        fast_lines = self.mode == "line"
        try:
            if offset:
                self._skip(handle, source, offset)
            while True:
                try:
                    block = handle.read(READ_BYTES)
                except (OSError, EOFError, lzma.LZMAError, zlib.error) as err:  # as corpus.read_blocks says it
                    reason = "the file ends too early" if isinstance(err, EOFError) else str(err)
                    raise ToktoolsError(f"{source.path}: cannot decompress ({reason})") from None
                position = stream_position(handle, raw)
                if position is not None:
                    self.bytes_done = done_before + min(position, source.size() or position)
                if not block:
                    break
                data = pending + block if pending else block
                start_at = 0
                while True:
                    newline = data.find(b"\n", start_at)
                    if newline < 0:
                        break
                    raw_line = data[start_at:newline]
                    if (
                        fast_lines
                        and not partial
                        and not self._parts
                        and not self._emitted
                        and newline - start_at <= self.segment_chars
                    ):
                        # the usual line: one document, one segment (what _line gives, without
                        # three generators per line; an empty line is no document)
                        offset += newline + 1 - start_at
                        line += 1
                        start_at = newline + 1
                        if raw_line:
                            text = self._decode(decoder, raw_line, False, True, source, line - 1)
                            self._doc_line = line - 1
                            yield Segment(text, True, True, index, line - 1, Position(index, offset, line))
                        continue
                    text = self._decode(decoder, raw_line, partial, True, source, line)
                    partial = False
                    offset += newline + 1 - start_at
                    line += 1
                    yield from self._line(text, source, Position(index, offset, line))
                    start_at = newline + 1
                pending = data[start_at:]
                if len(pending) > READ_BYTES and self.mode != "jsonl":
                    # a very long line: decode its head now, keep memory flat
                    text = self._decode(decoder, pending, partial, False, source, line)
                    partial = True
                    offset += len(pending)
                    pending = b""
                    if self.mode == "blank-line":
                        yield from self._paragraph_text(text, line, end_of_line=False)
                    else:
                        if not self._parts and not self._emitted and self.mode == "line":
                            self._doc_line = line
                        yield from self._add(text)
                elif len(pending) > self.max_document_bytes:
                    raise ToktoolsError(
                        f"{source.path}, line {line}: JSON Lines record longer than {self.max_document_bytes >> 20} MB"
                    )
            if pending or partial:
                text = self._decode(decoder, pending, partial, True, source, line)
                offset += len(pending)
                yield from self._line(text, source, Position(index, offset, line + 1), last_line=True)
            if self.mode in ("file", "blank-line"):
                yield from self._close(Position(index + 1, 0, 1), keep_empty=False)
                self._line_open = self._in_line = False
        finally:
            if not source.is_stdin:
                handle.close()

    def _skip(self, handle: object, source: CorpusSource, offset: int) -> None:
        try:
            handle.seek(offset)  # type: ignore[attr-defined]
        except (OSError, AttributeError, ValueError):
            left = offset
            while left:
                block = handle.read(min(left, READ_BYTES))  # type: ignore[attr-defined]
                if not block:
                    raise ToktoolsError(f"{source.path}: shorter than when the manifest was written") from None
                left -= len(block)

    @staticmethod
    def _decode(
        decoder: codecs.IncrementalDecoder, data: bytes, partial: bool, final: bool, source: CorpusSource, line: int
    ) -> str:
        try:
            if partial or not final:
                text = decoder.decode(data, final=final)
                if final:
                    decoder.reset()
                return text
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            decoder.reset()
            raise ToktoolsError(f"{source.path}, line {line}: invalid UTF-8 (byte 0x{data[err.start]:02X})") from None

    _in_line = False  # blank-line mode: the current line's head is already in the paragraph
    _line_open = False  # blank-line mode: the paragraph holds at least one line

    def _paragraph_text(self, text: str, line: int, end_of_line: bool) -> Iterator[Segment]:
        """blank-line mode: add (part of) a non-blank line to the paragraph, lines joined by \n."""
        if not self._in_line:
            if self._line_open:
                text = "\n" + text
            elif not self._parts and not self._emitted:
                self._doc_line = line
        self._in_line = not end_of_line
        if end_of_line:
            self._line_open = True
        yield from self._add(text)

    def _line(self, text: str, source: CorpusSource, end: Position, last_line: bool = False) -> Iterator[Segment]:
        """One complete line (``text`` without its ``\\n``); ``end`` is just past it."""
        if self.mode == "line":
            if not self._parts and not self._emitted:
                self._doc_line = end.line - 1
            yield from self._add(text)
            yield from self._close(end)
        elif self.mode == "file":
            yield from self._add(text if last_line else text + "\n")
        elif self.mode == "blank-line":
            if not text.strip() and not self._in_line:
                yield from self._close(end)
                self._line_open = False
                return
            yield from self._paragraph_text(text, end.line - 1, end_of_line=True)
        else:  # jsonl
            if not text.strip():
                return
            number = end.line - 1
            try:
                record = json.loads(text)
            except json.JSONDecodeError:
                raise ToktoolsError(f"{source.path}, line {number}: not valid JSON") from None
            if not isinstance(record, dict) or self.field not in record:
                raise ToktoolsError(
                    f"{source.path}, line {number}: no {self.field!r} field in this record (choose it with --field)"
                )
            value = record[self.field]
            if not isinstance(value, str):
                raise ToktoolsError(f"{source.path}, line {number}: field {self.field!r} is not a string")
            if escapes_a_surrogate(text):
                refuse_lone_surrogate(source.path, number, self.field, value)
            self._doc_line = number
            yield from self._add(value)
            yield from self._close(end, keep_empty=False)
