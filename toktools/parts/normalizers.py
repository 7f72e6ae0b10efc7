"""normalizers: see toktools.parts.base for the interface."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from toktools.errors import ToktoolsError
from toktools.parts import bert_text, normalized_string, unicode_forms
from toktools.parts._fields import field
from toktools.parts._onig import OnigPattern, pattern_from_json, pattern_to_json, unpack
from toktools.parts.base import CharSpans, Normalizer, Piece, TypeOnly
from toktools.parts.bert_text import BertNormalizerConfig
from toktools.parts.registry import register
from toktools.tables import bert as bert_tables

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------


@register
class BertNormalizer(Normalizer):
    """BERT's normaliser (clean text, spaces around CJK, strip accents, lower-case), exact on
    every code point (:mod:`toktools.parts.bert_text`)."""

    type = "BertNormalizer"

    def __init__(
        self,
        clean_text: bool = True,
        handle_chinese_chars: bool = True,
        strip_accents: bool | None = None,
        lowercase: bool = True,
    ) -> None:
        self.config = BertNormalizerConfig(clean_text, handle_chinese_chars, strip_accents, lowercase)

    # the options, read as tokenizers' Python attributes
    clean_text = property(lambda self: self.config.clean_text)
    handle_chinese_chars = property(lambda self: self.config.handle_chinese_chars)
    strip_accents = property(lambda self: self.config.strip_accents)
    lowercase = property(lambda self: self.config.lowercase)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> BertNormalizer:
        def flag(name: str, default: bool | None) -> bool | None:
            value = node.get(name, default)
            if not isinstance(value, bool) and not (name == "strip_accents" and value is None):
                raise ToktoolsError(
                    f"tokenizer.json: BertNormalizer field {name!r} must be true or false, not {value!r}"
                )
            return value

        # checked in this order; only strip_accents may be null
        clean_text = bool(flag("clean_text", True))
        handle_chinese_chars = bool(flag("handle_chinese_chars", True))
        strip_accents = flag("strip_accents", None)
        lowercase = bool(flag("lowercase", True))
        return cls(clean_text, handle_chinese_chars, strip_accents, lowercase)

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {
            "type": self.type,
            "clean_text": c.clean_text,
            "handle_chinese_chars": c.handle_chinese_chars,
            "strip_accents": c.strip_accents,
            "lowercase": c.lowercase,
        }

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
# NFC/NFD/NFKC/NFKD, Lowercase, StripAccents, Strip, Replace, Prepend and Sequence, each equal to
# tokenizers 0.23.3 in text *and* offsets: they rewrite a Piece through the same (char, change)
# streams as tokenizers' NormalizedString (toktools.parts.normalized_string), on tables measured from
# tokenizers (toktools.parts.unicode_forms), never on the running Python's unicodedata.


class _UnicodeForm(TypeOnly, Normalizer):
    compat: bool = False
    compose: bool = False

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        edits = [
            (s, e, unicode_forms.changes(text[s:e], self.compat, self.compose))
            for s, e in unicode_forms.active_runs(text, self.compat, self.compose)
        ]
        return normalized_string.transform_ranges(piece, edits) if edits else piece


@register
class NFD(_UnicodeForm):
    type = "NFD"


@register
class NFKD(_UnicodeForm):
    type = "NFKD"
    compat = True


@register
class NFC(_UnicodeForm):
    type = "NFC"
    compose = True


@register
class NFKC(_UnicodeForm):
    type = "NFKC"
    compat = True
    compose = True


_LOWERCASE_OF = {c: s for c, s in bert_tables.LOWERCASE.items()}


@cache
def _lower_differs() -> frozenset[str]:
    """Chars whose Python ``str.lower`` is not tokenizers' (another Unicode version; and Σ,
    which Python lowercases to ς at the end of a word). None of them is ASCII."""
    wrong = {
        chr(c)
        for c in range(0x80, 0x110000)
        if not 0xD800 <= c <= 0xDFFF and chr(c).lower() != _LOWERCASE_OF.get(c, chr(c))
    }
    return frozenset(wrong | {"\u03a3"})


@register
class Lowercase(TypeOnly, Normalizer):
    """Rust's ``char::to_lowercase`` one char at a time (no final sigma); a char that becomes
    several (``İ`` → ``i̇``) gives them all its span."""

    type = "Lowercase"

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        if text.isascii() or _lower_differs().isdisjoint(text):
            lowered = text.lower()  # C speed; per char equal to tokenizers' here
            if len(lowered) == len(text):
                return Piece(lowered, piece.spans, piece.base)
        parts = [_LOWERCASE_OF.get(ord(ch), ch) for ch in text]
        lowered = "".join(parts)
        if len(lowered) == len(text):
            return Piece(lowered, piece.spans, piece.base)
        # transform(): the first char of an expansion replaces the old one, the rest are added
        # after it, so all of them get its span
        spans = [span for span, part in zip(piece.all_spans(), parts) for _ in part]
        return Piece(lowered, spans, piece.base)


@cache
def _combining_marks() -> re.Pattern[str]:
    from toktools.tables.parts import COMBINING_MARKS

    body = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in unpack(COMBINING_MARKS))
    return re.compile(f"[{body}]")


@register
class StripAccents(TypeOnly, Normalizer):
    """Removes combining marks (``is_combining_mark`` of tokenizers' normalisation crate) without
    decomposing first: put NFD or NFKD before it, as ``tokenizers`` users do."""

    type = "StripAccents"

    def normalize(self, piece: Piece) -> Piece:
        removed = {m.start() for m in _combining_marks().finditer(piece.text)}
        if not removed:
            return piece
        return normalized_string.keep_where(piece, [i not in removed for i in range(len(piece.text))])


#: ``Nmt``: control characters it drops, and characters it turns into a space (measured from
#: tokenizers 0.23.3 over every code point; ``normalizers/unicode.rs``)
_NMT_DROPPED = frozenset(chr(c) for c in [*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F])
_NMT_SPACES = str.maketrans(
    {
        chr(c): " "
        for c in [0x09, 0x0A, 0x0C, 0x0D, 0x1680, *range(0x200B, 0x2010), 0x2028, 0x2029, 0x2581, 0xFEFF, 0xFFFD]
    }
)


@register
class Nmt(TypeOnly, Normalizer):
    """sentencepiece's NMT rules as ``tokenizers`` codes them (what ``SentencePieceUnigramTokenizer``
    puts before NFKC): ASCII/C1 control characters vanish; tabs, line breaks, zero-width
    spaces, ▁ and U+FFFD become a space (one char for one: spans unchanged)."""

    type = "Nmt"

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        if not _NMT_DROPPED.isdisjoint(text):
            piece = normalized_string.keep_where(piece, [ch not in _NMT_DROPPED for ch in text])
        mapped = piece.text.translate(_NMT_SPACES)
        return piece if mapped == piece.text else Piece(mapped, piece.spans, piece.base)


# Rust's char::is_whitespace (Unicode White_Space)
_WHITE_SPACE_CHARS = frozenset(chr(c) for a, b in bert_tables.PRETOKENIZER_WHITESPACE for c in range(a, b + 1))


@register
class Strip(Normalizer):
    """Removes leading and/or trailing whitespace (Rust ``char::is_whitespace``)."""

    type = "Strip"

    def __init__(self, left: bool = True, right: bool = True) -> None:
        self.left, self.right = left, right

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Strip:
        return cls(
            field(node, "strip_left", bool, "normalizer Strip"), field(node, "strip_right", bool, "normalizer Strip")
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": "Strip", "strip_left": self.left, "strip_right": self.right}

    def normalize(self, piece: Piece) -> Piece:
        text = piece.text
        start, end = 0, len(text)
        if self.left:
            while start < end and text[start] in _WHITE_SPACE_CHARS:
                start += 1
        if self.right:
            while end > start and text[end - 1] in _WHITE_SPACE_CHARS:
                end -= 1
        if start == 0 and end == len(text):
            return piece
        if piece.spans is None:
            return Piece(text[start:end], piece.all_spans()[start:end], piece.base)
        return Piece(text[start:end], piece.spans[start:end], piece.base)


@register
class Replace(Normalizer):
    """Replaces every match of a string or an Oniguruma regex; the replacement is aligned with
    the last char of the match."""

    type = "Replace"

    def __init__(self, pattern: OnigPattern | str, content: str) -> None:
        self.pattern = pattern if isinstance(pattern, OnigPattern) else OnigPattern(pattern, literal=True)
        self.content = content

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Replace:
        where = "normalizer Replace"
        if "pattern" not in node:
            raise ToktoolsError(f"{where}: missing field 'pattern'")
        pattern = pattern_from_json(node["pattern"], f"{where}: field 'pattern'")
        return cls(pattern, field(node, "content", str, where))

    def to_json(self) -> dict[str, Any]:
        return {"type": "Replace", "pattern": pattern_to_json(self.pattern), "content": self.content}

    def normalize(self, piece: Piece) -> Piece:
        matches = [span for span, is_match in self.pattern.find_matches(piece.text) if is_match]
        return normalized_string.replace_matches(piece, matches, self.content) if matches else piece


@register
class Prepend(Normalizer):
    """Puts a string before any non-empty text, aligned with its first char."""

    type = "Prepend"

    def __init__(self, prepend: str) -> None:
        self.prepend = prepend

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Prepend:
        return cls(field(node, "prepend", str, "normalizer Prepend"))

    def to_json(self) -> dict[str, Any]:
        return {"type": "Prepend", "prepend": self.prepend}

    def normalize(self, piece: Piece) -> Piece:
        return normalized_string.prepend(piece, self.prepend)


@register
class Sequence(Normalizer):
    """Normalisers applied in order."""

    type = "Sequence"

    def __init__(self, normalizers: list[Normalizer]) -> None:
        self.normalizers = list(normalizers)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Sequence:
        from toktools.parts.registry import parts_from_json

        return cls(
            parts_from_json(
                "normalizer",
                field(node, "normalizers", list, "normalizer Sequence"),
                "normalizer Sequence",
                "normalizers",
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": "Sequence", "normalizers": [n.to_json() for n in self.normalizers]}

    def normalize(self, piece: Piece) -> Piece:
        for normalizer in self.normalizers:
            piece = normalizer.normalize(piece)
        return piece
