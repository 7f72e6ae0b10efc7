"""What an alignment is made of: each tokenizer's row of token spans, the regions where rows
differ, and the character <-> byte offsets of the text. Both the aligning
(:mod:`toktools.analysis.alignment`) and the drawing (:mod:`toktools.analysis.alignment_layout`)
walk these; neither needs the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["AlignedText", "ByteMap", "DiffSpan", "SegmentationRow", "TokenSpan"]


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


class AlignedText(Protocol):
    """What the layout draws: a text, one row per tokenizer, and the regions that differ
    (:class:`toktools.analysis.alignment.Alignment` is one)."""

    text: str
    rows: list[SegmentationRow]
    diffs: list[DiffSpan]


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
