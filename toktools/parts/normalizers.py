"""normalizers: see toktools.parts.base for the interface."""
from __future__ import annotations

from typing import Any

from toktools import bert_text
from toktools.bert_text import BertNormalizerConfig
from toktools.errors import ToktoolsError
from toktools.parts.base import CharSpans, Normalizer, Piece
from toktools.parts.registry import register

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------


@register
class BertNormalizer(Normalizer):
    """BERT's normaliser (clean text, spaces around CJK, strip accents, lower-case), exact on
    every code point (:mod:`toktools.bert_text`)."""

    type = "BertNormalizer"

    def __init__(self, clean_text: bool = True, handle_chinese_chars: bool = True, strip_accents: bool | None = None,
                 lowercase: bool = True) -> None:
        self.config = BertNormalizerConfig(clean_text, handle_chinese_chars, strip_accents, lowercase)

    @classmethod
    def from_config(cls, config: BertNormalizerConfig) -> "BertNormalizer":
        return cls(config.clean_text, config.handle_chinese_chars, config.strip_accents, config.lowercase)

    # the options, read as tokenizers' Python attributes
    clean_text = property(lambda self: self.config.clean_text)
    handle_chinese_chars = property(lambda self: self.config.handle_chinese_chars)
    strip_accents = property(lambda self: self.config.strip_accents)
    lowercase = property(lambda self: self.config.lowercase)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> "BertNormalizer":
        values = []
        for name, default in (("clean_text", True), ("handle_chinese_chars", True), ("strip_accents", None),
                              ("lowercase", True)):
            value = node.get(name, default)
            if not isinstance(value, bool) and not (name == "strip_accents" and value is None):
                raise ToktoolsError(f"tokenizer.json: BertNormalizer field {name!r} must be true or false, not {value!r}")
            values.append(value)
        return cls(*values)

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {"type": self.type, "clean_text": c.clean_text, "handle_chinese_chars": c.handle_chinese_chars,
                "strip_accents": c.strip_accents, "lowercase": c.lowercase}

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        if text.isascii():
            # ASCII chars normalise to one char each or vanish (control chars): the same length
            # means nothing vanished, so every character keeps its span
            normalized = bert_text.normalize(text, self.config)
            if len(normalized) == len(text):
                return Piece(normalized, piece.spans, piece.base)
        normalized, alignment = bert_text.normalize_with_offsets(text, self.config)
        if piece.spans is None:  # each character comes from one original character
            return Piece(normalized, CharSpans(alignment, piece.base), piece.base)
        spans = piece.spans
        return Piece(normalized, [spans[a] for a in alignment], piece.base)

    def normalize_str(self, text: str) -> str:
        return bert_text.normalize(text, self.config)


# ---------------------------------------------------------------------------------------------
# The other tokenizers parts
# ---------------------------------------------------------------------------------------------
