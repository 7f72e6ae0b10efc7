"""What reports need to know about a tokenizer's tokens, in one place.

Reports, ``inspect`` and ``compare`` ask questions such as "which bytes does this token stand
for?", "is it a continuation piece?", "which token is the unknown one?". The answers depend on
the model (byte-level BPE, WordPiece, Metaspace pieces…), and this module is the only place
that asks. It asks the parts themselves, through one method of the part interface
(:meth:`~toktools.parts.base.Part.spelling`: byte-level symbols, the ▁ character, continuing-
subword prefix, end-of-word suffix, unk token, merges), and the protocol methods
(``get_vocab``, ``encode``…) — never a part's type — so a new part only has to say how it spells
tokens.

The facts are gathered once per tokenizer and cached (weakly, and rebuilt when the model, its
size or the added tokens change, e.g. after ``add_special_tokens``).
"""

from __future__ import annotations

import copy
import re
import unicodedata
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toktools.models.bpe.bytelevel import SYMBOL_TO_BYTE, symbols_to_bytes

__all__ = [
    "TokenizerView",
    "view",
    "family",
    "is_byte_level",
    "token_bytes",
    "token_text",
    "token_texts",
    "readable",
    "escape_text",
    "is_continuation",
    "is_word_start",
    "is_partial",
    "unk_token",
    "unk_id",
    "special_tokens",
    "added_tokens",
    "model_vocab",
    "merges",
    "merge_of",
    "without_truncation",
    "encode_plain",
    "specials_added",
    "escape_char",
    "is_byte_fallback",
]

_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@dataclass(eq=False)
class TokenizerView:
    """The facts of one tokenizer that reports use, read from its ``tokenizer.json``."""

    model_type: str
    byte_level: bool
    continuing_subword_prefix: str | None
    end_of_word_suffix: str | None
    metaspace: str | None  # the replacement character of a Metaspace decoder ("▁"), if any
    byte_fallback: bool
    unk_token: str | None
    added: dict[str, int]
    special: dict[str, int]
    model_vocab: dict[str, int]
    raw_merges: list[Any] | None  # as tokenizer.json has them: [a, b] pairs or "a b" strings
    _bytes: dict[str, bytes] = field(default_factory=dict, repr=False)
    _merges: list[tuple[str, str]] | None = field(default=None, repr=False)

    @property
    def merges(self) -> list[tuple[str, str]] | None:
        """The merges as pairs, converted on first use (reports that never show a merge tree
        never pay for it)."""
        if self.raw_merges is None:
            return None
        if self._merges is None:
            self._merges = [
                tuple(m) if not isinstance(m, str) else tuple(m.split(" ", 1))  # type: ignore[misc]
                for m in self.raw_merges
            ]
        return self._merges

    @property
    def family(self) -> str:
        """``bytebpe`` (byte-level BPE), ``wordpiece``, or the model type in lower case."""
        if self.model_type == "BPE" and self.byte_level:
            return "bytebpe"
        return self.model_type.lower()


def _build(tokenizer: Any) -> TokenizerView:
    """The facts, as the parts tell them (:meth:`~toktools.parts.base.Part.spelling`): the
    model first, then the decoder, then the pre-tokeniser."""
    model = tokenizer.model
    facts = dict(model.spelling())
    for part in (tokenizer.decoder, tokenizer.pre_tokenizer):
        for name, value in (part.spelling() if part is not None else {}).items():
            if facts.get(name) is None:
                facts[name] = value
    vocab = model.get_vocab()
    unk = facts.get("unk_token")
    added_json = tokenizer.added_tokens_json()
    return TokenizerView(
        model_type=model.type,
        byte_level=bool(facts.get("byte_level")),
        continuing_subword_prefix=facts.get("continuing_subword_prefix") or None,
        end_of_word_suffix=facts.get("end_of_word_suffix") or None,
        metaspace=facts.get("metaspace"),
        byte_fallback=bool(facts.get("byte_fallback")),
        unk_token=unk if unk in vocab else None,
        added={t["content"]: t["id"] for t in added_json},
        special={t["content"]: t["id"] for t in added_json if t.get("special")},
        model_vocab=vocab,
        raw_merges=facts.get("merges"),
    )


_views: weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], TokenizerView]] = weakref.WeakKeyDictionary()


def _vocabulary_key(tokenizer: Any) -> tuple[Any, ...]:
    """What changes when the tokens do (the model, its size, the added tokens), in O(1): the
    view is looked up once per token in ``inspect``'s loops, so the key must not read the whole
    vocabulary (``Tokenizer.vocab_size`` does, and a Unigram's ``get_vocab`` copies it)."""
    model = tokenizer.model
    added = tokenizer.added.tokens
    return (model, model.vocab_size, len(added), added[-1] if added else None)


def view(tokenizer: Any) -> TokenizerView:
    """The cached :class:`TokenizerView` of ``tokenizer``."""
    key = _vocabulary_key(tokenizer)
    try:
        cached = _views.get(tokenizer)
    except TypeError:
        cached = None
    if cached is not None and cached[0] == key:
        return cached[1]
    built = _build(tokenizer)
    try:
        _views[tokenizer] = (key, built)
    except TypeError:
        pass
    return built


def family(tokenizer: Any) -> str:
    """``bytebpe``, ``wordpiece`` or the model type in lower case (``unigram``, ``wordlevel``…)."""
    return view(tokenizer).family


def is_byte_level(tokenizer: Any) -> bool:
    """True when tokens are spelled in GPT-2's byte symbols (``Ġ`` = a space byte)."""
    return view(tokenizer).byte_level


def _body(v: TokenizerView, token: str) -> tuple[str, bool]:
    """The token without its continuation prefix / end-of-word suffix, and whether it had the prefix."""
    body, continuation = token, False
    prefix, suffix = v.continuing_subword_prefix, v.end_of_word_suffix
    if prefix and body.startswith(prefix) and len(body) > len(prefix):
        body, continuation = body[len(prefix) :], True
    if suffix and body.endswith(suffix) and len(body) > len(suffix):
        body = body[: -len(suffix)]
    return body, continuation


def token_bytes(tokenizer: Any, token: str) -> bytes:
    """The UTF-8 bytes a token stands for in the text: byte symbols decoded (``ĠHello`` →
    ``b" Hello"``), continuation prefix and end-of-word suffix removed (``##ing`` → ``b"ing"``),
    ``▁`` as a space, ``<0xE6>`` byte-fallback pieces as their byte; added tokens are their content."""
    return _token_bytes(view(tokenizer), token)


def _token_bytes(v: TokenizerView, token: str) -> bytes:
    found = v._bytes.get(token)
    if found is not None:
        return found
    if token in v.added and token not in v.model_vocab:
        raw = token.encode("utf-8")
    else:
        body, _ = _body(v, token)
        if v.byte_level and token not in v.added and all(ch in SYMBOL_TO_BYTE for ch in body):
            raw = symbols_to_bytes(body)
        elif v.byte_fallback and _BYTE_FALLBACK.fullmatch(body):
            raw = bytes([int(body[3:5], 16)])
        else:
            if v.metaspace:
                body = body.replace(v.metaspace, " ")
            raw = body.encode("utf-8")
    v._bytes[token] = raw
    return raw


def token_text(tokenizer: Any, token: str) -> str | None:
    """The text a token stands for, or None when its bytes are not valid UTF-8 on their own
    (``æĪ`` = E6 88, two thirds of ``我``)."""
    try:
        return token_bytes(tokenizer, token).decode("utf-8")
    except UnicodeDecodeError:
        return None


def token_texts(tokenizer: Any, tokens: Iterable[str]) -> list[str | None]:
    """:func:`token_text` of many tokens, the view looked up once (``compare --corpus`` asks
    for every token it meets, ~100k)."""
    v = view(tokenizer)
    out: list[str | None] = []
    for token in tokens:
        try:
            out.append(_token_bytes(v, token).decode("utf-8"))
        except UnicodeDecodeError:
            out.append(None)
    return out


def is_partial(tokenizer: Any, token: str) -> bool:
    """True for a token holding part of a character's UTF-8 bytes (not valid UTF-8 alone)."""
    return token_text(tokenizer, token) is None


def is_byte_fallback(tokenizer: Any, token: str) -> bool:
    """True for a byte-fallback piece (``<0xE6>``) of a model with ``byte_fallback``."""
    v = view(tokenizer)
    return v.byte_fallback and token in v.model_vocab and _BYTE_FALLBACK.fullmatch(token) is not None


def is_continuation(tokenizer: Any, token: str) -> bool:
    """True for a piece that continues a word (WordPiece's ``##ing``, a BPE model's prefixed piece)."""
    v = view(tokenizer)
    if token in v.added and token not in v.model_vocab:
        return False
    return _body(v, token)[1]


def is_word_start(tokenizer: Any, token: str) -> bool:
    """True for a piece that can only begin a word: byte-level ``Ġword``, Metaspace ``▁word``, or
    a non-``##`` piece of a model with a continuation prefix."""
    v = view(tokenizer)
    if token in v.added and token not in v.model_vocab:
        return False
    if v.continuing_subword_prefix:
        return not is_continuation(tokenizer, token)
    return token_bytes(tokenizer, token)[:1] == b" "


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def escape_char(ch: str) -> str:
    """A visible stand-in for a character that does not show: ``\\n``, ``\\t``, controls and
    zero-width / format characters as ``\\u200d``; other characters as they are."""
    if ch in _ESCAPES and ch != "\\":
        return _ESCAPES[ch]
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or (ch.isspace() and ch != " "):
        cp = ord(ch)
        return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"
    return ch


def escape_text(text: str) -> str:
    """:func:`escape_char` over a text."""
    return "".join(escape_char(ch) for ch in text)


def readable(tokenizer: Any, token: str) -> str:
    """A token as a person reads it: the text it stands for (byte symbols decoded, ``ĠHello`` →
    `` Hello``), invisible characters escaped, bytes that are not whole characters in hex
    (``<E6 88>``). WordPiece keeps its ``##`` (it is how BERT spells a continuation); added
    tokens are shown as they are."""
    v = view(tokenizer)
    if token in v.added or not (v.byte_level or v.byte_fallback or v.metaspace):
        return escape_text(token)
    raw = token_bytes(tokenizer, token)
    out = []
    position = 0
    while position < len(raw):  # the valid UTF-8 runs as text, the rest as hex
        try:
            out.append(escape_text(raw[position:].decode("utf-8")))
            break
        except UnicodeDecodeError as err:
            out.append(escape_text(raw[position : position + err.start].decode("utf-8")))
            bad_end = position + err.end
            out.append("<" + " ".join(f"{b:02X}" for b in raw[position + err.start : bad_end]) + ">")
            position = bad_end
    prefix = v.continuing_subword_prefix if is_continuation(tokenizer, token) else ""
    return (prefix or "") + "".join(out)


def unk_token(tokenizer: Any) -> str | None:
    """The model's unknown token (``[UNK]``), or None when it has none (byte-level BPE)."""
    return view(tokenizer).unk_token


def unk_id(tokenizer: Any) -> int | None:
    unk = unk_token(tokenizer)
    return None if unk is None else tokenizer.token_to_id(unk)


def special_tokens(tokenizer: Any) -> dict[str, int]:
    """Added tokens flagged special (``[CLS]``, ``<|endoftext|>``…): content → id."""
    return dict(view(tokenizer).special)


def added_tokens(tokenizer: Any) -> dict[str, int]:
    """Every added token, special or not: content → id."""
    return dict(view(tokenizer).added)


def model_vocab(tokenizer: Any) -> Mapping[str, int]:
    """The model's own vocabulary (without added tokens that are not in it)."""
    return view(tokenizer).model_vocab


def merges(tokenizer: Any) -> list[tuple[str, str]] | None:
    """The BPE merges in rank order, or None for models without merges."""
    return view(tokenizer).merges


def without_truncation(tokenizer: Any) -> Any:
    """The tokenizer without truncation and padding (a shallow copy sharing the model and its
    caches; the caller's object is left as it is). A published ``tokenizer.json`` may carry
    ``truncation: 50`` or ``padding: Fixed(128)``; statistics must see the whole text."""
    v = view(tokenizer)
    plain = copy.copy(tokenizer)
    plain.no_truncation()
    plain.no_padding()
    try:  # the same model: share its view rather than reading tokenizer.json again
        _views[plain] = (_vocabulary_key(plain), v)
    except TypeError:
        pass
    return plain


def encode_plain(tokenizer: Any, text: str) -> Any:
    """``text`` encoded as the reports count it: without special tokens, truncation or padding."""
    return without_truncation(tokenizer).encode(text, add_special_tokens=False)


def specials_added(tokenizer: Any) -> int:
    """How many special tokens the tokenizer adds to one sequence (BERT: 2, ``[CLS]`` and
    ``[SEP]``; GPT-2: 0), measured by encoding an empty text both ways."""
    plain = without_truncation(tokenizer)
    return len(plain.encode("", add_special_tokens=True).ids) - len(plain.encode("", add_special_tokens=False).ids)


_merge_indexes: weakref.WeakKeyDictionary[TokenizerView, dict[str, tuple[int, str, str]]] = weakref.WeakKeyDictionary()


def merge_of(tokenizer: Any, token: str) -> tuple[int, str, str] | None:
    """The lowest-rank merge ``(rank, a, b)`` whose result is ``token`` (the one that created it
    while training), or None (a byte symbol, an added token, a model without merges)."""
    v = view(tokenizer)
    if v.merges is None:
        return None
    index = _merge_indexes.get(v)
    if index is None:
        index = {}
        prefix = v.continuing_subword_prefix
        for rank, (a, b) in enumerate(v.merges):
            right = b[len(prefix) :] if prefix and b.startswith(prefix) else b
            index.setdefault(a + right, (rank, a, b))
        _merge_indexes[v] = index
    return index.get(token)
