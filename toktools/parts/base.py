"""What the parts pass along, and the interface of each kind of part.

A :class:`Piece` is ``tokenizers``' ``NormalizedString`` with character (not byte) alignments:
normalised text plus, for each of its characters, the span of the original text it came from.
Offsets of the final tokens are read from those spans, so every part that changes text (a
normaliser, the byte-level mapping, Metaspace) says where each new character came from.

The common case — text nobody changed — costs nothing: ``spans`` is ``None`` and character
``i`` stands for ``(base + i, base + i + 1)``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Sequence

Span = tuple[int, int]


@dataclass(slots=True)
class Piece:
    """Normalised text and where each character came from in the original text."""

    text: str
    spans: list[Span] | None = None  # None: unchanged text starting at ``base``
    base: int = 0

    def span_of(self, index: int) -> Span:
        """Original span of character ``index``."""
        if self.spans is None:
            return (self.base + index, self.base + index + 1)
        return self.spans[index]

    def original(self, start: int, end: int) -> Span:
        """Original span of ``text[start:end]`` (an empty range maps to an empty span)."""
        if self.spans is None:
            return (self.base + start, self.base + end)
        if start >= end:
            at = self.spans[start][0] if start < len(self.spans) else (self.spans[-1][1] if self.spans else self.base)
            return (at, at)
        return (self.spans[start][0], self.spans[end - 1][1])

    def slice(self, start: int, end: int) -> "Piece":
        """The characters ``text[start:end]`` with their spans."""
        if self.spans is None:
            return Piece(self.text[start:end], None, self.base + start)
        return Piece(self.text[start:end], self.spans[start:end], self.base)

    def all_spans(self) -> list[Span]:
        """Explicit spans (materialised for parts that rewrite text)."""
        if self.spans is None:
            return [(self.base + i, self.base + i + 1) for i in range(len(self.text))]
        return self.spans


class Part(ABC):
    """Anything that lives at one place of ``tokenizer.json``. ``type`` is the node's ``type``."""

    #: "normalizer", "pre_tokenizer", "model", "post_processor" or "decoder"
    category: ClassVar[str] = ""
    #: the JSON node's "type", e.g. "NFC" or "ByteLevel"
    type: ClassVar[str] = ""

    @classmethod
    @abstractmethod
    def from_json(cls, node: dict[str, Any]) -> "Part":
        """Build from the ``tokenizer.json`` node (its fields are checked; bad ones raise
        :class:`~toktools.errors.ToktoolsError` naming the field)."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The node, equal to what ``tokenizers`` 0.23.3 writes for the same part."""


class Normalizer(Part):
    category = "normalizer"

    @abstractmethod
    def normalize(self, piece: Piece) -> Piece:
        """The normalised piece, with a span for every character."""

    def normalize_str(self, text: str) -> str:
        """``normalize_str``: the text alone, for callers that need no offsets."""
        return self.normalize(Piece(text)).text


@dataclass(slots=True)
class Words:
    """The fast lane between a pre-tokeniser and a model: the words of one piece as
    ``(word, start)``, ``start`` counting characters of the piece's text after ``shift``
    prepended characters (a prefix space, which gets the span of the first character). With
    ``byte_level`` the model sees each word as byte symbols, one per UTF-8 byte, and a token's
    span runs from the character of its first byte to that of its last.

    It exists for speed: no :class:`Piece` per word, and the model may cache whole words."""

    matches: Iterable[tuple[str, int]]
    piece: Piece
    shift: int = 0
    byte_level: bool = False

    def pieces(self) -> list[Piece]:
        """The same words as pieces (the general path)."""
        from toktools.bytelevel import byte_level_piece  # text handling only: no circle

        piece = self.piece
        if self.shift:  # a prefix space has the span of the first character
            piece = Piece(" " * self.shift + piece.text, [piece.span_of(0)] * self.shift + piece.all_spans())
        out = []
        for word, start in self.matches:
            part = piece.slice(start, start + len(word))
            out.append(byte_level_piece(part) if self.byte_level else part)
        return out


class PreTokenizer(Part):
    category = "pre_tokenizer"

    def split_words(self, piece: Piece) -> Words | None:
        """The fast lane (see :class:`Words`) when this pre-tokeniser can give it for ``piece``;
        ``None`` means: use :meth:`pre_tokenize`."""
        return None

    @abstractmethod
    def pre_tokenize(self, pieces: list[Piece]) -> list[Piece]:
        """Split (and possibly rewrite) every piece, in order; empty pieces are dropped."""

    def pre_tokenize_str(self, text: str) -> list[tuple[str, Span]]:
        """Like ``tokenizers``' ``pre_tokenize_str``: pieces with their offsets in ``text``."""
        return [(p.text, p.original(0, len(p.text))) for p in self.pre_tokenize([Piece(text)])]


class Decoder(Part):
    category = "decoder"

    @abstractmethod
    def decode_chain(self, tokens: list[str]) -> list[str]:
        """Tokens → tokens, as ``tokenizers``' ``Decoder::decode_chain`` (a Sequence chains them)."""

    def decode(self, tokens: Sequence[str]) -> str:
        return "".join(self.decode_chain(list(tokens)))


class Model(Part):
    """Cuts one pre-tokenised word into tokens. Offsets are character offsets inside the word
    (for byte-level BPE the word is already in byte symbols, one character per byte)."""

    category = "model"

    @abstractmethod
    def tokenize(self, word: str) -> list[tuple[int, str, int, int]]:
        """``(id, token, start, end)`` for each token of ``word``."""

    @abstractmethod
    def get_vocab(self) -> dict[str, int]:
        """Token → id, without the added tokens."""

    @abstractmethod
    def token_to_id(self, token: str) -> int | None: ...

    @abstractmethod
    def id_to_token(self, token_id: int) -> str | None: ...

    @property
    def vocab_size(self) -> int:
        return len(self.get_vocab())

    def encode_words(self, words: Words, ids: list[int], tokens: list[str], offsets: list[Span]) -> None:
        """Append the tokens of every word of the fast lane, with offsets in the original text.
        Models override this with a cached loop; this one says what it must do."""
        for piece in words.pieces():
            self.encode_piece(piece, ids, tokens, offsets)

    def encode_piece(self, piece: Piece, ids: list[int], tokens: list[str], offsets: list[Span]) -> None:
        """Append the tokens of one pre-tokenised piece (the general path)."""
        for token_id, token, start, end in self.tokenize(piece.text):
            ids.append(token_id)
            tokens.append(token)
            offsets.append(piece.original(start, end))

    def files(self) -> dict[str, str]:
        """The model's own files (``vocab.txt``, ``vocab.json`` + ``merges.txt`` …) by name."""
        return {}


class PostProcessor(Part):
    """Adds the template's special tokens (``[CLS] A [SEP]``) and merges a pair."""

    category = "post_processor"

    @abstractmethod
    def added_tokens(self, is_pair: bool) -> int:
        """How many tokens :meth:`process` adds (truncation leaves room for them)."""

    @abstractmethod
    def process_encodings(self, encodings: list[Any], add_special_tokens: bool) -> list[Any]:
        """``tokenizers``' ``process_encodings``: the sequences in, the parts of the result out
        (a :class:`Sequence` processor chains them)."""

    def process(self, first: Any, second: Any | None, add_special_tokens: bool = True) -> Any:
        """``Encoding`` (and optional pair) → the final ``Encoding``."""
        from toktools.encoding import Encoding

        parts = self.process_encodings([first] if second is None else [first, second], add_special_tokens)
        return Encoding.merge(parts)
