"""decoders: see toktools.parts.base for the interface."""
from __future__ import annotations

from typing import Any

from toktools.bytelevel import is_byte_symbols, symbols_to_bytes
from toktools.errors import ToktoolsError
from toktools.parts.base import Decoder, Piece  # noqa: F401 (used by the other parts)
from toktools.parts.registry import register
from toktools.wordpiece import wordpiece_decode_chain

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------


@register
class ByteLevel(Decoder):
    """Byte symbols back to bytes (a token with any other character keeps its own UTF-8), then
    UTF-8 with replacement, as one string. The three options only round-trip the node."""

    type = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True) -> None:
        self.add_prefix_space = add_prefix_space
        self.trim_offsets = trim_offsets
        self.use_regex = use_regex

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> "ByteLevel":
        return cls(*(bool(node.get(name, True)) for name in ("add_prefix_space", "trim_offsets", "use_regex")))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        data = bytearray()
        for token in tokens:
            data += symbols_to_bytes(token) if is_byte_symbols(token) else token.encode("utf-8")
        return [data.decode("utf-8", errors="replace")]


@register
class WordPiece(Decoder):
    """Glue ``##`` pieces to the previous token, a space before the others, then BERT's cleanup."""

    type = "WordPiece"

    def __init__(self, prefix: str = "##", cleanup: bool = True) -> None:
        self.prefix = prefix
        self.cleanup = cleanup

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> "WordPiece":
        prefix = node.get("prefix", "##")
        if not isinstance(prefix, str):
            raise ToktoolsError(f"tokenizer.json: WordPiece decoder prefix must be a string, not {prefix!r}")
        return cls(prefix, bool(node.get("cleanup", True)))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "prefix": self.prefix, "cleanup": self.cleanup}

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return wordpiece_decode_chain(tokens, self.prefix, self.cleanup)


# ---------------------------------------------------------------------------------------------
# The other tokenizers parts
# ---------------------------------------------------------------------------------------------
