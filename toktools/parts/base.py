"""What the parts pass along, and the interface of each kind of part.

A :class:`Piece` is ``tokenizers``' ``NormalizedString`` with character (not byte) alignments:
normalised text plus, for each of its characters, the span of the original text it came from.
Offsets of the final tokens are read from those spans, so every part that changes text (a
normaliser, the byte-level mapping, Metaspace) says where each new character came from.

The common case — text nobody changed — costs nothing: ``spans`` is ``None`` and character
``i`` stands for ``(base + i, base + i + 1)``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from re import Match
from typing import Any, ClassVar

from toktools.models.bpe.bytelevel import text_to_symbols

Span = tuple[int, int]
#: One match of the whole text (none for an empty one): the words of a piece that is not split.
WHOLE_TEXT = re.compile(r".+", re.DOTALL)


class CharSpans(Sequence[Span]):
    """Spans when every character comes from exactly one original character (what
    BertNormalizer gives): ``(base + origins[i], base + origins[i] + 1)``, built on access, so
    a normaliser pays nothing for text it does not change much. It behaves as a list of spans."""

    __slots__ = ("origins", "base")

    def __init__(self, origins: list[int], base: int = 0) -> None:
        self.origins = origins
        self.base = base

    def __len__(self) -> int:
        return len(self.origins)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return CharSpans(self.origins[index], self.base)
        at = self.base + self.origins[index]
        return (at, at + 1)

    def __iter__(self) -> Any:
        base = self.base
        return ((base + o, base + o + 1) for o in self.origins)

    def __add__(self, other: Any) -> list[Span]:
        return list(self) + list(other)

    def __radd__(self, other: Any) -> list[Span]:
        return list(other) + list(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(slots=True)
class Piece:
    """Normalised text and where each character came from in the original text."""

    text: str
    spans: Sequence[Span] | None = None  # None: unchanged text starting at ``base``
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

    def slice(self, start: int, end: int) -> Piece:
        """The characters ``text[start:end]`` with their spans."""
        if self.spans is None:
            return Piece(self.text[start:end], None, self.base + start)
        return Piece(self.text[start:end], self.spans[start:end], self.base)

    def all_spans(self) -> list[Span]:
        """Explicit spans, as a list (materialised for parts that rewrite text)."""
        if self.spans is None:
            return [(self.base + i, self.base + i + 1) for i in range(len(self.text))]
        return self.spans if isinstance(self.spans, list) else list(self.spans)


class Part(ABC):
    """Anything that lives at one place of ``tokenizer.json``. ``type`` is the node's ``type``."""

    #: "normalizer", "pre_tokenizer", "model", "post_processor" or "decoder"
    category: ClassVar[str] = ""
    #: the JSON node's "type", e.g. "NFC" or "ByteLevel"
    type: ClassVar[str] = ""

    @classmethod
    @abstractmethod
    def from_json(cls, node: dict[str, Any]) -> Part:
        """Build from the ``tokenizer.json`` node (its fields are checked; bad ones raise
        :class:`~toktools.errors.ToktoolsError` naming the field)."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The node, equal to what ``tokenizers`` 0.23.3 writes for the same part."""

    def spelling(self) -> dict[str, Any]:
        """What this part tells about how tokens are spelled, for reports
        (:mod:`toktools.analysis.token_view`): ``byte_level``, ``metaspace`` (the ▁ character),
        ``continuing_subword_prefix``, ``end_of_word_suffix``, ``byte_fallback``, ``unk_token``,
        ``merges``. Nothing by default."""
        return {}


class TypeOnly:
    """For a part whose node is just ``{"type": ...}`` (other keys are ignored, as serde does):
    put it before the part's base class. Two such parts are equal when their types are."""

    type: ClassVar[str]

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> Any:
        return cls()

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        return f"{self.type}()"


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
    """The fast lane between a pre-tokeniser and a model: the words of one piece as regex
    matches over the piece's text after ``shift`` prepended characters (a prefix space, which
    gets the span of the first character): ``m.group()`` is a word, ``m.start()`` and
    ``m.end()`` its place. With
    ``byte_level`` the model sees each word as byte symbols, one per UTF-8 byte, and a token's
    span runs from the character of its first byte to that of its last.

    It exists for speed: no :class:`Piece` per word, and the model may cache whole words."""

    matches: Iterable[Match[str]]
    piece: Piece
    shift: int = 0
    byte_level: bool = False

    def pieces(self) -> list[Piece]:
        """The same words as pieces (the general path)."""
        piece = self.piece
        if self.shift:  # a prefix space has the span of the first character
            piece = Piece(" " * self.shift + piece.text, [piece.span_of(0)] * self.shift + piece.all_spans())
        out = []
        for match in self.matches:
            part = piece.slice(match.start(), match.end())
            out.append(_byte_level_piece(part) if self.byte_level else part)
        return out


def _byte_level_piece(piece: Piece) -> Piece:
    """A piece's text as byte symbols, each symbol with the span of the character it comes
    from (``tokenizers`` aligns a character's extra bytes with its first)."""
    text = piece.text
    symbols = text_to_symbols(text)
    if len(symbols) == len(text) and piece.spans is None:
        return Piece(symbols, None, piece.base)
    spans = piece.all_spans()
    return Piece(symbols, [span for ch, span in zip(text, spans) for _ in range(len(ch.encode("utf-8")))], piece.base)


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


#: special-token roles for ``transformers`` when a model family has no convention of its own
GENERIC_ROLES = {
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "mask_token": "<mask>",
}


class Model(Part):
    """Cuts one pre-tokenised word into tokens. Offsets are character offsets inside the word
    (for byte-level BPE the word is already in byte symbols, one character per byte)."""

    category = "model"
    #: the name of the trainer that makes this model (:mod:`toktools.training.trainers`), "" if none
    kind: ClassVar[str] = ""

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

    def score(self, token_id: int) -> float | None:
        """The token's score (a Unigram log-probability), or None for models without scores."""
        return None

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

    def transformers_config(self, tokenizer: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """What ``transformers`` needs beside ``tokenizer.json`` for a tokenizer with this model:
        the ``tokenizer_config.json`` settings (``tokenizer_class`` first) and the special-token
        roles of the family (``{"unk_token": "<unk>", ...}``; roles whose token the tokenizer
        lacks are left out by the caller). By default the generic class, which runs
        ``tokenizer.json`` as it is."""
        return {"tokenizer_class": "PreTrainedTokenizerFast"}, dict(GENERIC_ROLES)


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
