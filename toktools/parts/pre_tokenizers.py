"""pre-tokenizers: see toktools.parts.base for the interface."""
from __future__ import annotations

from typing import Any, Iterable, Match

from toktools import bert_text, bytelevel
from toktools.errors import ToktoolsError
from toktools.parts.base import WHOLE_TEXT, Piece, PreTokenizer, Words
from toktools.parts.registry import register

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------


def _bool_of(node: dict[str, Any], name: str, default: bool) -> bool:
    value = node.get(name, default)
    if not isinstance(value, bool):
        raise ToktoolsError(f"tokenizer.json: {node.get('type')} field {name!r} must be true or false, not {value!r}")
    return value


@register
class BertPreTokenizer(PreTokenizer):
    """Splits on whitespace (dropped) and on BERT punctuation (each mark a piece of its own)."""

    type = "BertPreTokenizer"

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> "BertPreTokenizer":
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type}

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        finditer = bert_text.PRE_TOKENIZER_RE.finditer
        return [piece.slice(m.start(), m.end()) for piece in pieces for m in finditer(piece.text)]

    def split_words(self, piece: Piece) -> Words:
        return Words(bert_text.PRE_TOKENIZER_RE.finditer(piece.text), piece)


@register
class ByteLevel(PreTokenizer):
    """GPT-2's pre-tokeniser: an optional prefix space, the GPT-2 split (``use_regex``), then
    every UTF-8 byte as a printable symbol. ``trim_offsets`` only matters to the post-processor
    of the same name; it is kept so that the node round-trips."""

    type = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True) -> None:
        self.add_prefix_space = add_prefix_space
        self.trim_offsets = trim_offsets
        self.use_regex = use_regex

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> "ByteLevel":
        return cls(_bool_of(node, "add_prefix_space", True), _bool_of(node, "trim_offsets", True), _bool_of(node, "use_regex", True))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}

    def _matches(self, text: str) -> Iterable[Match[str]]:
        if not self.use_regex:
            return WHOLE_TEXT.finditer(text)
        return bytelevel.splitters().pick(text).finditer(text)

    def _words(self, piece: Piece) -> Words:
        text = bytelevel.prefixed(piece.text, self.add_prefix_space)
        return Words(self._matches(text), piece, len(text) - len(piece.text), byte_level=True)

    def split_words(self, piece: Piece) -> Words:
        return self._words(piece)

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        return [word for piece in pieces for word in self._words(piece).pieces()]

    def pieces_of_lines(self, chunk: str) -> list[str]:
        """Text pieces (not yet byte-mapped) of a chunk of ``\\n``-terminated training lines."""
        return bytelevel.pieces_of_lines(chunk, self.add_prefix_space, self.use_regex)


# ---------------------------------------------------------------------------------------------
# The other tokenizers parts
# ---------------------------------------------------------------------------------------------
