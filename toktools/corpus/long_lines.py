"""The text formats' output line for an input line longer than a segment, written piece by piece.

``encode --format ids|tokens|jsonl`` writes one full encoding per input line. For a line of
tens of megabytes, the ids, tokens and offsets as Python lists, and their rendering, take
gigabytes. When the tokenizer may be cut (:func:`toktools.engines.analysis.cuttable`), the line
is encoded in the pieces :func:`toktools.corpus.documents.safe_segments` cuts it into, whose
tokens, joined, are the line's, and the output line is written piece by piece:

* no truncation: the template's tokens (``[CLS]`` … ``[SEP]``, found by encoding a probe with
  and without them), then every piece's tokens, offsets moved to the line;
* truncation that keeps the head (``Right``): the shortest run of leading pieces whose
  encoding already fills ``max_length`` is encoded as the line would be (its kept tokens are
  the line's kept tokens).

Anything else (pairs, padding, truncation from the left, a tokenizer that cannot be cut)
encodes the line at once, and a line longer than
:data:`toktools.corpus.documents.MAX_UNCUT_CHARS` is refused in one line.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from toktools.corpus.documents import SEGMENT_CHARS, bounded_segments, safe_segments

#: A text the template is found on (its tokens sit between the template's).
_PROBE = "a"


@dataclass
class Row:
    """One encoded line as the text formats write it (what they need of an Encoding)."""

    ids: list[int]
    tokens: list[str] | None = None
    offsets: list[Any] | None = None
    type_ids: list[int] | None = None


@dataclass
class Template:
    """What a single sequence gets around its tokens: ``prefix`` and ``suffix`` rows (ids,
    tokens, offsets, type ids) and the type id of the sequence's own tokens."""

    prefix: Any
    suffix: Any
    type_id: int


@dataclass
class LongLines:
    """How lines longer than a segment are written: ``mode`` is ``stream`` (piece by piece),
    ``head`` (leading pieces, for truncation that keeps the head) or ``whole`` (at once,
    bounded by :data:`~toktools.corpus.documents.MAX_UNCUT_CHARS`)."""

    mode: str
    template: Template | None = None
    limit: int | None = None

    @staticmethod
    def is_long(text: str) -> bool:
        return len(text) > SEGMENT_CHARS


def plan(
    doc: Mapping[str, Any], engine: Any, *, pair: bool, add_special_tokens: bool, max_length: int | None
) -> LongLines:
    """The :class:`LongLines` for this tokenizer and these options."""
    from toktools.engines.analysis import cuttable

    truncation = doc.get("truncation")
    if pair or doc.get("padding") or not cuttable(doc):
        return LongLines("whole")
    if max_length is not None:
        return LongLines("head", limit=max_length)
    if truncation:
        if truncation.get("direction", "Right") != "Right":
            return LongLines("whole")
        return LongLines("head", limit=int(truncation["max_length"]))
    template = _template(engine, add_special_tokens)
    return LongLines("stream", template) if template is not None else LongLines("whole")


def _template(engine: Any, add_special_tokens: bool) -> Template | None:
    """The template's rows, found by encoding a probe with and without special tokens (None
    when the probe's tokens are not one run inside the full encoding)."""
    full = engine.encode([_PROBE], add_special_tokens)[0]
    core = engine.encode([_PROBE], False)[0]
    n = len(core.ids)
    for k in range(len(full.ids) - n + 1):
        if list(full.ids[k : k + n]) == list(core.ids):
            prefix, suffix = _slice(full, 0, k), _slice(full, k + n, len(full.ids))
            type_id = full.type_ids[k] if full.type_ids and n else 0
            return Template(prefix, suffix, type_id)
    return None


def _slice(row: Any, start: int, end: int) -> Any:

    def part(values: Sequence[Any] | None) -> Any:
        return None if values is None else list(values[start:end])

    return Row(list(row.ids[start:end]), part(row.tokens), part(row.offsets), part(row.type_ids))


def head_row(engine: Any, text: str, limit: int, add_special_tokens: bool) -> Any:
    """The line's truncated encoding, from its shortest run of leading pieces whose encoding
    fills ``limit`` tokens (the whole line when none does)."""
    from toktools.runtime.memory import release_freed_memory

    row = None
    for _, end in safe_segments(text, SEGMENT_CHARS):
        release_freed_memory()
        row = engine.encode([text[:end]], add_special_tokens)[0]
        if len(row.ids) >= limit:
            return row
    return row


def write_streamed(
    out: IO[str],
    engine: Any,
    text: str,
    fmt: str,
    template: Template,
    count_ids: Callable[[Iterable[list[int]]], None] | None = None,
) -> int:
    """Write the output line of ``text`` (newline included) piece by piece; its token count.
    ``count_ids`` is given the ids of the template and of each piece (the unknown-token tally)."""
    prefix, suffix = template.prefix, template.suffix
    if count_ids is not None:
        count_ids([list(prefix.ids), list(suffix.ids)])

    def rows(offsets: bool) -> Iterator[tuple[int, Any]]:
        for start, row in _piece_rows(engine, text, offsets=offsets):
            if count_ids is not None:
                count_ids([list(row.ids)])
            yield start, row

    if fmt in ("ids", "tokens"):
        first = True
        count = 0

        def put(values: Iterable[Any]) -> None:
            nonlocal first
            joined = " ".join(map(str, values))
            if joined:
                out.write(joined if first else " " + joined)
                first = False

        pick = (lambda row: row.ids) if fmt == "ids" else (lambda row: row.tokens or [])
        put(pick(prefix))
        for _, row in rows(False):
            put(pick(row))
            count += len(row.ids)
        put(pick(suffix))
        out.write("\n")
        return count + len(prefix.ids) + len(suffix.ids)
    return _write_jsonl(out, rows(True), template)


def _piece_rows(engine: Any, text: str, *, offsets: bool = False) -> Iterable[tuple[int, Any]]:
    """``(start, row)`` of each piece (no special tokens). With ``offsets``, a piece after the
    first is encoded with the character before it (cut off again: a safe cut lies between them),
    so that its first token's offsets are trimmed as inside the line, not as at its start (the
    ``ByteLevel`` post-processor keeps a token's single leading space at offset 0 when it adds
    a prefix space)."""
    from toktools.runtime.memory import release_freed_memory

    for start, end in safe_segments(text, SEGMENT_CHARS):
        release_freed_memory()
        if not offsets or start == 0:
            yield start, engine.encode([text[start:end]], False)[0]
            continue
        head = len(engine.encode([text[start - 1]], False)[0].ids)
        row = engine.encode([text[start - 1 : end]], False)[0]
        yield start - 1, _slice(row, head, len(row.ids))


def _write_jsonl(out: IO[str], rows: Iterator[tuple[int, Any]], template: Template) -> int:
    """jsonl: the ids go straight out; tokens, offsets and type ids wait in temporary files
    (the object's fields come one after the other)."""
    prefix, suffix = template.prefix, template.suffix
    dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    count = 0
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8") as tokens_file,
        tempfile.TemporaryFile("w+", encoding="utf-8") as offsets_file,
        tempfile.TemporaryFile("w+", encoding="utf-8") as types_file,
    ):
        files = (out, tokens_file, offsets_file, types_file)
        started = [False] * 4

        def put(index: int, values: list[Any]) -> None:
            if values:
                files[index].write(("," if started[index] else "") + dump(values)[1:-1])
                started[index] = True

        def put_row(row: Any, shift: int | None, type_id: int | None) -> None:
            put(0, list(row.ids))
            put(1, list(row.tokens or []))
            offsets = [list(o) for o in row.offsets or []]
            if shift:
                offsets = [[s + shift, e + shift] for s, e in offsets]
            put(2, offsets)
            put(3, list(row.type_ids or []) if type_id is None else [type_id] * len(row.ids))

        out.write('{"ids":[')
        put_row(prefix, None, None)
        for start, row in rows:
            put_row(row, start, template.type_id)
            count += len(row.ids)
        put_row(suffix, None, None)
        for name, handle in (("tokens", tokens_file), ("offsets", offsets_file), ("type_ids", types_file)):
            out.write(f'],"{name}":[')
            handle.seek(0)
            shutil.copyfileobj(handle, out)
        out.write("]}\n")
    return count + len(prefix.ids) + len(suffix.ids)


def check_whole(text: str, where: str) -> None:
    """A long line encoded at once: refused past :data:`~toktools.corpus.documents.MAX_UNCUT_CHARS`."""
    for _ in bounded_segments(text, False, where):
        pass
