"""pre-tokenizers: see toktools.parts.base for the interface."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from re import Match
from typing import Any

from toktools.errors import ToktoolsError
from toktools.models.bpe import bytelevel
from toktools.parts import bert_text, normalized_string
from toktools.parts._fields import ByteLevelOptions, char_field, choice, field, spelling_of
from toktools.parts._onig import OnigPattern, pattern_from_json, pattern_to_json, unpack
from toktools.parts.base import WHOLE_TEXT, Piece, PreTokenizer, TypeOnly, Words
from toktools.parts.normalized_string import BEHAVIORS
from toktools.parts.registry import register
from toktools.tables import bert as bert_tables

# ---------------------------------------------------------------------------------------------
# BERT and byte-level parts (the presets' own)
# ---------------------------------------------------------------------------------------------


@register
class BertPreTokenizer(TypeOnly, PreTokenizer):
    """Splits on whitespace (dropped) and on BERT punctuation (each mark a piece of its own)."""

    type = "BertPreTokenizer"

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        finditer = bert_text.PRE_TOKENIZER_RE.finditer
        return [piece.slice(m.start(), m.end()) for piece in pieces for m in finditer(piece.text)]

    def split_words(self, piece: Piece) -> Words:
        return Words(bert_text.PRE_TOKENIZER_RE.finditer(piece.text), piece)


@register
class ByteLevel(ByteLevelOptions, PreTokenizer):
    """GPT-2's pre-tokeniser: an optional prefix space, the GPT-2 split (``use_regex``), then
    every UTF-8 byte as a printable symbol. ``trim_offsets`` only matters to the post-processor
    of the same name; it is kept so that the node round-trips."""

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
# Whitespace, WhitespaceSplit, Punctuation, Digits, Split, Metaspace and Sequence, equal to
# tokenizers 0.23.3 in pieces and offsets. Patterns run on the regex module with Oniguruma's
# classes and match iteration (toktools.parts._onig); splitting follows NormalizedString::split
# (toktools.parts.normalized_string.split_by).


def _split_pieces(pieces: list[Piece], split: Callable[[Piece], list[Piece]]) -> list[Piece]:
    """``PreTokenizedString::split``: each piece is split on its own; empty pieces drop."""
    out: list[Piece] = []
    for piece in pieces:
        if piece.text:
            out.extend(p for p in split(piece) if p.text)
    return out


def _behavior_field(node: dict[str, Any], part: str, default: Any = None) -> str:
    kwargs = {} if default is None else {"default": default}
    return choice(node, "behavior", BEHAVIORS, part, **kwargs)


def _check_behavior(behavior: str) -> str:
    if behavior not in BEHAVIORS:
        raise ToktoolsError(f"unknown split behavior {behavior!r} (one of {', '.join(BEHAVIORS)})")
    return behavior


_WHITE_SPACE_CHARS = frozenset(chr(c) for a, b in bert_tables.PRETOKENIZER_WHITESPACE for c in range(a, b + 1))
_PUNCTUATION_CHARS = frozenset(chr(c) for a, b in bert_tables.PRETOKENIZER_PUNCTUATION for c in range(a, b + 1))


@cache
def _numeric_chars() -> frozenset[str]:
    from toktools.tables.parts import NUMERIC

    return frozenset(chr(c) for a, b in unpack(NUMERIC) for c in range(a, b + 1))


_WHITESPACE_WORDS: OnigPattern | None = None


@register
class Whitespace(TypeOnly, PreTokenizer):
    """Keeps the matches of ``\\w+|[^\\w\\s]+``, with the classes of the Rust ``regex`` crate
    that ``tokenizers`` uses here (not Oniguruma's: ZWJ is a word char)."""

    type = "Whitespace"

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        global _WHITESPACE_WORDS
        if _WHITESPACE_WORDS is None:
            from toktools.parts._onig import class_body, onig_class

            word, space = class_body(onig_class("rust_w")), class_body(onig_class("rust_s"))
            _WHITESPACE_WORDS = OnigPattern.spelled(
                r"\w+|[^\w\s]+", f"[{word}]+|[^{word}{space}]+", frozenset({"rust_w", "rust_s"})
            )
        words = _WHITESPACE_WORDS
        return _split_pieces(
            pieces,
            lambda p: normalized_string.split_by(p, normalized_string.invert(words.find_matches(p.text)), "Removed"),
        )


@register
class WhitespaceSplit(TypeOnly, PreTokenizer):
    """Splits on whitespace (Rust ``char::is_whitespace``), dropping it."""

    type = "WhitespaceSplit"

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        return _split_pieces(
            pieces,
            lambda p: normalized_string.split_by(
                p, normalized_string.char_matches(p.text, _WHITE_SPACE_CHARS.__contains__), "Removed"
            ),
        )


@register
class Punctuation(PreTokenizer):
    """Splits on each punctuation char (ASCII punctuation and tokenizers' Unicode P*)."""

    type = "Punctuation"

    def __init__(self, behavior: str = "Isolated") -> None:
        self.behavior = _check_behavior(behavior)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Punctuation:
        return cls(_behavior_field(node, "pre-tokenizer Punctuation", default="Isolated"))

    def to_json(self) -> dict[str, Any]:
        return {"type": "Punctuation", "behavior": self.behavior}

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        return _split_pieces(
            pieces,
            lambda p: normalized_string.split_by(
                p, normalized_string.char_matches(p.text, _PUNCTUATION_CHARS.__contains__), self.behavior
            ),
        )


@register
class Digits(PreTokenizer):
    """Isolates numeric chars (Rust ``char::is_numeric``): each alone, or runs of them."""

    type = "Digits"

    def __init__(self, individual_digits: bool = False) -> None:
        self.individual_digits = individual_digits

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Digits:
        return cls(field(node, "individual_digits", bool, "pre-tokenizer Digits"))

    def to_json(self) -> dict[str, Any]:
        return {"type": "Digits", "individual_digits": self.individual_digits}

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        behavior = "Isolated" if self.individual_digits else "Contiguous"
        numeric = _numeric_chars()
        return _split_pieces(
            pieces,
            lambda p: normalized_string.split_by(
                p, normalized_string.char_matches(p.text, numeric.__contains__), behavior
            ),
        )


@register
class Split(PreTokenizer):
    """Splits on a string or an Oniguruma regex (GPT-4/Llama-3/Qwen patterns included), with
    any ``behavior``; ``invert`` makes the non-matches the delimiters."""

    type = "Split"

    def __init__(self, pattern: OnigPattern | str, behavior: str, invert: bool = False) -> None:
        self.pattern = pattern if isinstance(pattern, OnigPattern) else OnigPattern(pattern, literal=True)
        self.behavior = _check_behavior(behavior)
        self.invert = invert

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Split:
        where = "pre-tokenizer Split"
        if "pattern" not in node:
            raise ToktoolsError(f"{where}: missing field 'pattern'")
        pattern = pattern_from_json(node["pattern"], f"{where}: field 'pattern'")
        return cls(pattern, _behavior_field(node, where), field(node, "invert", bool, where))

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "Split",
            "pattern": pattern_to_json(self.pattern),
            "behavior": self.behavior,
            "invert": self.invert,
        }

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        def split(piece: Piece) -> list[Piece]:
            matches = self.pattern.find_matches(piece.text)
            return normalized_string.split_by(
                piece, normalized_string.invert(matches) if self.invert else matches, self.behavior
            )

        return _split_pieces(pieces, split)


_PREPEND_SCHEMES = ("always", "never", "first")


def metaspace_fields(node: dict[str, Any], part: str) -> tuple[str, str, bool]:
    """``replacement``, ``prepend_scheme`` and ``split`` of a Metaspace node (the pre-tokenizer
    and the decoder share them), with tokenizers' handling of the legacy ``add_prefix_space``."""
    replacement = char_field(node, "replacement", part)
    scheme = choice(node, "prepend_scheme", _PREPEND_SCHEMES, part, default="always")
    legacy = field(node, "add_prefix_space", bool, part, default=None)
    if legacy is not None and legacy != (scheme != "never"):
        raise ToktoolsError(f"{part}: add_prefix_space does not match declared prepend_scheme")
    return replacement, scheme, field(node, "split", bool, part, default=True)


@register
class Metaspace(PreTokenizer):
    """Spaces become ``replacement`` (▁), a ▁ is prepended (always, only to the piece at the
    start of the text, or never), then each piece splits before every ▁."""

    type = "Metaspace"

    def __init__(self, replacement: str = "\u2581", prepend_scheme: str = "always", split: bool = True) -> None:
        if len(replacement) != 1:
            raise ToktoolsError(f"Metaspace replacement must be one character, got {replacement!r}")
        if prepend_scheme not in _PREPEND_SCHEMES:
            raise ToktoolsError(f"Metaspace prepend_scheme must be one of {', '.join(_PREPEND_SCHEMES)}")
        self.replacement, self.prepend_scheme, self.split = replacement, prepend_scheme, split

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Metaspace:
        return cls(*metaspace_fields(node, "pre-tokenizer Metaspace"))

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "Metaspace",
            "replacement": self.replacement,
            "prepend_scheme": self.prepend_scheme,
            "split": self.split,
        }

    def spelling(self) -> dict[str, Any]:
        return {"metaspace": self.replacement}

    def _one(self, piece: Piece) -> list[Piece]:
        text = piece.text
        spaces = [(i, i + 1) for i, ch in enumerate(text) if ch == " "]
        if spaces:
            piece = normalized_string.replace_matches(piece, spaces, self.replacement)
        if not piece.text.startswith(self.replacement) and (
            self.prepend_scheme == "always" or (self.prepend_scheme == "first" and piece.base == 0)
        ):
            piece = normalized_string.prepend(piece, self.replacement)
        if not self.split:
            return [piece]
        rep = self.replacement
        return normalized_string.split_by(
            piece, normalized_string.char_matches(piece.text, rep.__eq__), "MergedWithNext"
        )

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        return _split_pieces(pieces, self._one)


@register
class Sequence(PreTokenizer):
    """Pre-tokenisers applied in order, each to every piece of the one before."""

    type = "Sequence"

    def __init__(self, pretokenizers: list[PreTokenizer]) -> None:
        self.pretokenizers = list(pretokenizers)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Sequence:
        from toktools.parts.registry import parts_from_json

        return cls(
            parts_from_json(
                "pre_tokenizer",
                field(node, "pretokenizers", list, "pre-tokenizer Sequence"),
                "pre-tokenizer Sequence",
                "pretokenizers",
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": "Sequence", "pretokenizers": [p.to_json() for p in self.pretokenizers]}

    def spelling(self) -> dict[str, Any]:
        return spelling_of(self.pretokenizers)

    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        for pre_tokenizer in self.pretokenizers:
            pieces = pre_tokenizer.pre_tokenize(pieces)
        return pieces
