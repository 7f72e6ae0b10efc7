"""Several tokenizers' segmentations of one text, lined up on common character and byte offsets,
and the regions where they cut differently (``toktools compare``). The drawing is in
:mod:`toktools.analysis.alignment_layout`."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.errors import ToktoolsError
from toktools.tokenizer import Tokenizer

__all__ = [
    "Alignment",
    "ByteMap",
    "DiffSpan",
    "SegmentationRow",
    "TokenSpan",
    "align_encoded",
    "align_segmentations",
    "named_tokenizers",
]


@dataclass(frozen=True)
class TokenSpan:
    """One token located in the text: character offsets (from the encoding) and the UTF-8 byte
    range it stands for, spaces it owns included (GPT-2's ``Ġcut`` covers `` cut``). Byte-level
    tokens cut inside a character share its character offsets but have their own byte
    sub-range; such a token is ``partial``. ``unknown``: the model's UNK token."""

    id: int
    token: str
    readable: str
    char_start: int
    char_end: int
    byte_start: int
    byte_end: int
    partial: bool
    unknown: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "token": self.token,
            "readable": self.readable,
            "char_start": self.char_start,
            "char_end": self.char_end,
            "byte_start": self.byte_start,
            "byte_end": self.byte_end,
            "partial": self.partial,
            "unknown": self.unknown,
        }


@dataclass
class SegmentationRow:
    """One tokenizer's segmentation of the text.

    ``boundaries`` (characters) and ``byte_boundaries`` (bytes) are the positions where a token
    starts or ends, after trimming whitespace from each token's ends: whitespace is neutral, so
    BERT's ``world`` and GPT-2's ``Ġworld`` (which owns the space before it) have the same
    boundaries, and only real differences count. ``byte_boundaries`` also holds cuts inside a
    character; ``boundaries`` does not. ``drawn`` are the character positions where a token
    really starts or ends, spaces it owns included: what the aligned view draws.
    """

    name: str
    kind: str
    spans: list[TokenSpan]
    boundaries: list[int]
    byte_boundaries: list[int]
    drawn: list[int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "spans": [s.to_dict() for s in self.spans],
            "boundaries": self.boundaries,
            "byte_boundaries": self.byte_boundaries,
            "drawn": self.drawn,
        }


@dataclass(frozen=True)
class DiffSpan:
    """A minimal region where the tokenizers cut differently: between two consecutive boundaries
    that all tokenizers share, with at least one boundary inside that not all of them have.
    ``tokens`` lists, per tokenizer, the tokens that overlap the region."""

    char_start: int
    char_end: int
    byte_start: int
    byte_end: int
    text: str
    tokens: dict[str, list[str]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "char_start": self.char_start,
            "char_end": self.char_end,
            "byte_start": self.byte_start,
            "byte_end": self.byte_end,
            "text": self.text,
            "tokens": {k: list(v) for k, v in self.tokens.items()},
        }


@dataclass
class Alignment:
    """Several segmentations of one text, on common character and byte offsets."""

    text: str
    rows: list[SegmentationRow]
    diffs: list[DiffSpan]

    @property
    def names(self) -> list[str]:
        return [row.name for row in self.rows]

    def row(self, name: str) -> SegmentationRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "rows": [r.to_dict() for r in self.rows], "diffs": [d.to_dict() for d in self.diffs]}

    def render_plain(self, width: int | None = None, byte_view: bool | None = None, legend: bool = True) -> str:
        """Plain text, one row per tokenizer, aligned on characters: ``|`` where a token starts
        or ends (spaces a token owns are drawn inside it: ``| cut|``), ``·`` where only another
        row cuts, ``?`` instead of ``|`` around an unknown token, a character cut between
        byte-level tokens drawn as its UTF-8 bytes with ``¦`` at the cut (``E6 88¦91``), invisible characters escaped (``\\u200d``), and a
        ``^`` row under the regions that differ. ``byte_view`` adds a block with every
        multi-byte character's bytes; ``width`` wraps long lines (None: no wrapping);
        ``legend`` explains the marks that occur."""
        from toktools.analysis.alignment_layout import render_alignment  # the layout imports this module

        return render_alignment(self, width, bool(byte_view), legend)


class ByteMap:
    """Character ↔ byte offsets of one text (what the alignment and its layout both walk)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        self.char_start = [0]  # byte offset of each character start, plus the end
        for ch in text:
            self.char_start.append(self.char_start[-1] + len(ch.encode("utf-8")))
        self.char_of_byte = [i for i, ch in enumerate(text) for _ in range(len(ch.encode("utf-8")))]
        self.starts = set(self.char_start)

    def byte(self, char_offset: int) -> int:
        return self.char_start[min(max(char_offset, 0), len(self.text))]

    def char_floor(self, byte_offset: int) -> int:
        if byte_offset >= len(self.data):
            return len(self.text)
        return self.char_of_byte[byte_offset]

    def char_ceil(self, byte_offset: int) -> int:
        if byte_offset >= len(self.data):
            return len(self.text)
        c = self.char_of_byte[byte_offset]
        return c if self.char_start[c] == byte_offset else c + 1

    def core(self, b0: int, b1: int) -> tuple[int, int]:
        """The byte range without whitespace characters at its ends."""
        while b0 < b1 and b0 in self.starts and self.text[self.char_of_byte[b0]].isspace():
            b0 = self.char_start[self.char_of_byte[b0] + 1]
        while b1 > b0 and b1 in self.starts and self.text[self.char_of_byte[b1 - 1]].isspace():
            b1 = self.char_start[self.char_of_byte[b1 - 1]]
        return b0, b1


def _spans(tokenizer: Tokenizer, encoding: Any, bmap: ByteMap) -> list[TokenSpan]:
    """Each token's byte range: byte-level tokens by walking their bytes through the text (so
    cuts inside a character and the spaces a token owns are kept, whatever the offsets say);
    other models from their character offsets."""
    bytelevel = token_view.is_byte_level(tokenizer)
    unk = token_view.unk_id(tokenizer)
    spans = []
    cursor = 0
    for token_id, token, (s, e) in zip(encoding.ids, encoding.tokens, encoding.offsets):
        lo, hi = bmap.byte(s), bmap.byte(e)
        b0, b1 = lo, hi
        if bytelevel:
            raw = token_view.token_bytes(tokenizer, token)
            start = cursor if cursor <= hi and bmap.data[cursor:lo].isspace() or lo <= cursor <= hi else lo
            if raw and bmap.data[start : start + len(raw)] == raw:
                b0, b1 = start, start + len(raw)
            elif raw[:1] == b" " and bmap.data[start : start + len(raw) - 1] == raw[1:]:
                b0, b1 = start, start + len(raw) - 1  # the prefix space added by add_prefix_space
            cursor = b1
        spans.append(
            TokenSpan(
                token_id,
                token,
                token_view.readable(tokenizer, token),
                s,
                e,
                b0,
                b1,
                b0 not in bmap.starts or b1 not in bmap.starts,
                token_id == unk,
            )
        )
    return spans


def _row(name: str, tokenizer: Tokenizer, encoding: Any, bmap: ByteMap) -> SegmentationRow:
    text = bmap.text
    spans = _spans(tokenizer, encoding, bmap)
    byte_bounds: set[int] = set()
    drawn: set[int] = set()
    for span in spans:
        if span.byte_start < span.byte_end:
            drawn.update(b for b in (span.byte_start, span.byte_end) if b in bmap.starts)
        b0, b1 = bmap.core(span.byte_start, span.byte_end)
        if b0 < b1:
            byte_bounds.update((b0, b1))

    def chars(bounds: set[int]) -> list[int]:
        return sorted(bmap.char_of_byte[b] if b < len(bmap.data) else len(text) for b in bounds if b in bmap.starts)

    return SegmentationRow(
        name, token_view.family(tokenizer), spans, chars(byte_bounds), sorted(byte_bounds), chars(drawn)
    )


def _diffs(text: str, rows: list[SegmentationRow], bmap: ByteMap) -> list[DiffSpan]:
    """The differing regions, in one sweep over each row's tokens (linear in the text)."""
    if len(rows) < 2:
        return []
    sets = [set(r.byte_boundaries) for r in rows]
    common = set.intersection(*sets) | {0, len(bmap.data)}
    differing = set.union(*sets) - common
    if not differing:
        return []
    anchors = sorted(common)
    regions = sorted(
        {(anchors[bisect.bisect_left(anchors, d) - 1], anchors[bisect.bisect_left(anchors, d)]) for d in differing}
    )
    cores = [[bmap.core(s.byte_start, s.byte_end) for s in row.spans] for row in rows]
    cursors = [0] * len(rows)
    out = []
    for b0, b1 in regions:
        c0, c1 = bmap.char_floor(b0), bmap.char_ceil(b1)
        tokens = {}
        for r, row in enumerate(rows):
            spans, core = row.spans, cores[r]
            i = cursors[r]
            while i < len(spans) and core[i][1] <= b0:  # tokens wholly before the region
                i += 1
            cursors[r] = i
            found = []
            while i < len(spans) and core[i][0] < b1:
                if max(b0, core[i][0]) < min(b1, core[i][1]):
                    found.append(spans[i].token)
                i += 1
            tokens[row.name] = found
        out.append(DiffSpan(c0, c1, b0, b1, text[c0:c1], tokens))
    return out


def align_segmentations(text: str, tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]]) -> Alignment:
    """Segment ``text`` with each tokenizer (no special tokens) and line the results up.

    Each token gets character offsets (from the encoding) and byte offsets (byte-level BPE: by
    walking the token strings, so cuts inside a character are kept; other models: from the
    character offsets). Boundaries are compared in bytes; a :class:`DiffSpan` is a minimal
    region between boundaries shared by all tokenizers where their cuts differ.
    """
    items = named_tokenizers(tokenizers)
    return align_encoded(text, [(name, tok, token_view.encode_plain(tok, text)) for name, tok in items])


def named_tokenizers(
    tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]],
) -> list[tuple[str, Tokenizer]]:
    """``(name, tokenizer)`` pairs from a mapping or a sequence; the names must be distinct."""
    items = list(tokenizers.items()) if isinstance(tokenizers, Mapping) else list(tokenizers)
    names = [name for name, _ in items]
    if len(set(names)) != len(names):
        raise ToktoolsError(f"tokenizer names must be distinct: {names}")
    return items


def align_encoded(text: str, encoded: Sequence[tuple[str, Tokenizer, Any]]) -> Alignment:
    """:func:`align_segmentations` for texts already encoded: ``(name, tokenizer, encoding)``,
    each encoding without special tokens (so one encoding serves the metrics too)."""
    bmap = ByteMap(text)
    rows = [_row(name, tok, encoding, bmap) for name, tok, encoding in encoded]
    return Alignment(text, rows, _diffs(text, rows, bmap))
