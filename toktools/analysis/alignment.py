"""Several tokenizers' segmentations of one text, lined up on common character and byte offsets,
and the regions where they cut differently (``toktools compare``). Rows and offsets are in
:mod:`toktools.analysis.alignment_rows`, the drawing in :mod:`toktools.analysis.alignment_layout`."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.alignment_layout import render_alignment
from toktools.analysis.alignment_rows import ByteMap, DiffSpan, SegmentationRow, TokenSpan
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
        return render_alignment(self, width, bool(byte_view), legend)


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
