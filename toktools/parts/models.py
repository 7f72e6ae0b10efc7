"""The models that cut a pre-tokenised word into tokens: BPE (byte-level and classic) and
WordPiece, each reading and writing its ``tokenizer.json`` node and its own files.

Both cache whole words: natural text repeats a few thousand words over and over, so most words
cost one dictionary lookup. Cached tokens carry offsets in characters of the word, so the hot
loop (:meth:`_CachedWords.encode_words`) only adds the word's position.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from toktools.errors import ToktoolsError
from toktools.models.bpe import bytelevel
from toktools.models.bpe import trainer as bpe
from toktools.models.bpe.merges import merge_symbols_dropout
from toktools.models.wordpiece.model import dumps_vocab_txt, wordpiece_split
from toktools.parts.base import CharSpans, Model, Piece, Span, Words
from toktools.parts.registry import register

#: A word's tokens: (id, token, start, end), offsets in characters of the word.
WordTokens = list[tuple[int, str, int, int]]
#: What the word caches hold: ``(id, token)`` for a word that is one token, else its tokens.
CacheEntry = tuple[int, str] | WordTokens


def _vocab_of(node: Mapping[str, Any], model: str) -> dict[str, int]:
    vocab = node.get("vocab", {})
    # JSON gives exactly str keys and int values: checked by type sets in C (a tenth of the
    # time of one isinstance per entry, which counts in every short run); anything else, per entry
    if (
        not isinstance(vocab, dict)
        or not (set(map(type, vocab)) <= {str} and set(map(type, vocab.values())) <= {int})
        and not all(isinstance(t, str) and isinstance(i, int) and not isinstance(i, bool) for t, i in vocab.items())
    ):
        raise ToktoolsError(f"tokenizer.json: the {model} model's vocab must map token strings to integer ids")
    return dict(vocab)


def _merge_pairs(merges_json: list[Any]) -> list[tuple[str, str]]:
    """The ``[a, b]`` or ``"a b"`` merges of a BPE node as pairs; the first one that is not a
    pair of strings is refused in one line. A list of one kind is converted and checked by
    :func:`toktools.io.validate.merge_pairs`; a mixed list goes entry by entry."""
    from toktools.io.validate import merge_pairs

    checked = merge_pairs(merges_json)
    if checked is not None:
        return checked
    merges = []
    for number, merge in enumerate(merges_json, start=1):
        pair = tuple(merge) if isinstance(merge, list) else tuple(merge.split(" ")) if isinstance(merge, str) else ()
        if len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            raise ToktoolsError(f"tokenizer.json: BPE merge {number} is not a pair of tokens: {merge!r}")
        merges.append(pair)
    return merges


def _optional_str(node: Mapping[str, Any], name: str, model: str, default: str | None = None) -> str | None:
    value = node.get(name, default)
    if value is not None and not isinstance(value, str):
        raise ToktoolsError(f"tokenizer.json: the {model} model's {name!r} must be a string or null, not {value!r}")
    return value


def _bool(node: Mapping[str, Any], name: str, model: str) -> bool:
    value = node.get(name, False)
    if not isinstance(value, bool):
        raise ToktoolsError(f"tokenizer.json: the {model} model's {name!r} must be true or false, not {value!r}")
    return value


def _in_vocab_order(vocab: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(vocab.items(), key=lambda item: item[1]))


class _CachedWords(Model):
    """The fast lane shared by the models: whole words from a cache, offsets by addition.

    A cache entry (:data:`CacheEntry`) has two shapes, told apart by ``entry.__class__ is tuple``
    (quicker than ``isinstance`` in the hot loops); mypy cannot narrow on that, so the loops hold
    their entry as ``Any``."""

    vocab: dict[str, int]

    def _setup_cache(self, capacity: int) -> None:
        self._cache: dict[str, CacheEntry] = {}
        self._byte_cache: dict[str, CacheEntry] = {}  # keyed by the word before the byte mapping
        self._cache_capacity = capacity
        self.id_to_token_map: dict[int, str] = {i: t for t, i in self.vocab.items()}

    def get_vocab(self) -> dict[str, int]:
        return self.vocab

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self.id_to_token_map.get(token_id)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def _word_tokens(self, word: str, byte_level: bool) -> WordTokens:
        """Tokens of a word with character offsets (byte-level: offsets of the bytes' characters)."""
        if not byte_level:
            return self.tokenize(word)
        found = self.tokenize(bytelevel.text_to_symbols(word))
        if word.isascii():
            return found
        char_of_byte = [i for i, ch in enumerate(word) for _ in range(len(ch.encode("utf-8")))]
        last = len(char_of_byte) - 1
        return [
            (token_id, token, char_of_byte[min(b0, last)], char_of_byte[min(b1 - 1, last)] + 1)
            for token_id, token, b0, b1 in found
        ]

    def encode_piece(self, piece: Piece, ids: list[int], tokens: list[str], offsets: list[Span]) -> None:
        """The general path (after a pre-tokeniser without a fast lane), cached all the same."""
        word = piece.text
        entry: Any = self._cache.get(word)  # a CacheEntry (see the class doc)
        if entry is None:
            entry = self._store(self._cache, word, False)
        if entry.__class__ is tuple:
            entry = [(*entry, 0, len(word))]
        spans = piece.spans
        for token_id, token, a, b in entry:
            ids.append(token_id)
            tokens.append(token)
            offsets.append((piece.base + a, piece.base + b) if spans is None else (spans[a][0], spans[b - 1][1]))

    def _cache_entry(self, word: str, byte_level: bool) -> CacheEntry:
        """A word's tokens for the cache: ``(id, token)`` when the word is one token, else the list."""
        found = self._word_tokens(word, byte_level)
        if len(found) == 1 and found[0][2] == 0 and found[0][3] == len(word):
            return found[0][:2]
        return found

    def encode_words(self, words: Words, ids: list[int], tokens: list[str], offsets: list[Span]) -> None:
        """The hot loop: one cache lookup per word; a one-token word (most words) costs three
        appends. The word's place comes from its regex match."""
        byte_level = words.byte_level
        cache = self._byte_cache if byte_level else self._cache
        add_id, add_token, add_offset = ids.append, tokens.append, offsets.append
        piece, shift = words.piece, words.shift
        spans = piece.spans
        delta = piece.base - shift
        floor = piece.base
        get = cache.get
        entry: Any  # a CacheEntry (see the class doc)
        if spans.__class__ is CharSpans:  # one original character per character: index arithmetic
            origins, at = spans.origins, spans.base
            if shift:  # prefix characters have the span of the piece's first character
                origins = [origins[0]] * shift + origins
            for match in words.matches:
                word = match.group()
                entry = get(word)
                if entry is None:
                    entry = self._store(cache, word, byte_level)
                start = match.start()
                if entry.__class__ is tuple:
                    add_id(entry[0])
                    add_token(entry[1])
                    add_offset((at + origins[start], at + origins[match.end() - 1] + 1))
                    continue
                for token_id, token, a, b in entry:
                    add_id(token_id)
                    add_token(token)
                    add_offset((at + origins[start + a], at + origins[start + b - 1] + 1))
            return
        if spans is not None and shift:  # prefix characters have the span of the piece's first character
            spans = [spans[0]] * shift + list(spans)
        if spans is None and not shift:  # the common case, kept tight: text nobody changed
            for match in words.matches:
                word = match.group()
                entry = get(word)
                if entry is None:
                    entry = self._store(cache, word, byte_level)
                if entry.__class__ is tuple:  # the whole word is one token
                    add_id(entry[0])
                    add_token(entry[1])
                    add_offset((delta + match.start(), delta + match.end()))
                else:
                    d = delta + match.start()
                    for token_id, token, a, b in entry:
                        add_id(token_id)
                        add_token(token)
                        add_offset((d + a, d + b))
            return
        for match in words.matches:
            word = match.group()
            entry = get(word)
            if entry is None:
                entry = self._store(cache, word, byte_level)
            start = match.start()
            if entry.__class__ is tuple:
                entry = [(*entry, 0, len(word))]
            for token_id, token, a, b in entry:
                add_id(token_id)
                add_token(token)
                if spans is not None:
                    add_offset((spans[start + a][0], spans[start + b - 1][1]))
                elif start >= shift:
                    add_offset((delta + start + a, delta + start + b))
                else:  # the word holding the prefix space, whose span is the first character's
                    add_offset((max(delta + start + a, floor), max(delta + start + b, floor + 1)))

    def _store(self, cache: dict[str, CacheEntry], word: str, byte_level: bool) -> CacheEntry:
        entry = self._cache_entry(word, byte_level)
        if self._cache_capacity <= 0:  # nothing cached (BPE-dropout)
            return entry
        if len(cache) >= self._cache_capacity:
            cache.clear()
        cache[word] = entry
        return entry


# ---------------------------------------------------------------------------------------------
# BPE
# ---------------------------------------------------------------------------------------------


@register
class BPE(_CachedWords):
    """``models.BPE``: initial symbols (with ``continuing_subword_prefix`` after the first
    character and ``end_of_word_suffix`` on the last), then merges by rank.

    A character missing from the vocabulary becomes ``<0xNN>`` byte tokens with
    ``byte_fallback`` (when all exist), else ``unk_token`` (runs fused with ``fuse_unk``), else
    it is dropped. ``ignore_merges`` takes a word that is itself in the vocabulary whole.
    """

    type = "BPE"
    #: the trainer that makes this model (see :mod:`toktools.training.trainers`)
    kind = "bytebpe"

    def __init__(
        self,
        vocab: dict[str, int],
        merges: Sequence[tuple[str, str]],
        *,
        dropout: float | None = None,
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
        cache_capacity: int = 200_000,
    ) -> None:
        if dropout is not None and not 0.0 <= dropout <= 1.0:
            raise ToktoolsError(f"BPE dropout must be between 0 and 1, got {dropout}")
        self.vocab = vocab
        # (lists too become pairs; mypy types map(tuple, ...) as tuples of any length)
        self.merges: list[tuple[str, str]] = list(map(tuple, merges))  # type: ignore[arg-type]
        self.dropout = dropout
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.end_of_word_suffix = end_of_word_suffix
        self.fuse_unk = fuse_unk
        self.byte_fallback = byte_fallback
        self.ignore_merges = ignore_merges
        self.merge_map = bpe.build_merge_map(vocab, self.merges, continuing_subword_prefix)
        self._plain = not unk_token and not continuing_subword_prefix and not end_of_word_suffix and not byte_fallback
        # BPE-dropout (tokenizers' semantics): merges skipped at random, so no word is cached;
        # the generator is reseeded per text (see reseed), which makes the ids reproducible
        self.seed = 0
        self._rng = random.Random(0)
        self._setup_cache(0 if dropout else cache_capacity)

    def reseed(self, text: str) -> None:
        """With dropout: draw for ``text`` from a generator seeded by :attr:`seed` and the text,
        so its ids do not depend on what was encoded before (batches, workers)."""
        if self.dropout:
            digest = hashlib.sha256(f"{self.seed}\x00{text}".encode("utf-8", "surrogatepass")).digest()
            self._rng.seed(int.from_bytes(digest[:8], "little"))

    def _merge(self, ids: list[int]) -> list[tuple[int, int]]:
        if self.dropout:
            return merge_symbols_dropout(ids, self.merge_map, self.dropout, self._rng)
        return bpe.merge_symbols(ids, self.merge_map)

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> BPE:
        merges_json = node.get("merges", [])
        if not isinstance(merges_json, list):
            raise ToktoolsError("tokenizer.json: the BPE model's merges must be a list")
        merges = _merge_pairs(merges_json)
        dropout = node.get("dropout")
        if dropout is not None and (isinstance(dropout, bool) or not isinstance(dropout, (int, float))):
            raise ToktoolsError(f"tokenizer.json: the BPE model's dropout must be a number or null, not {dropout!r}")
        return cls(
            _vocab_of(node, "BPE"),
            merges,
            dropout=dropout,
            unk_token=_optional_str(node, "unk_token", "BPE"),
            continuing_subword_prefix=_optional_str(node, "continuing_subword_prefix", "BPE"),
            end_of_word_suffix=_optional_str(node, "end_of_word_suffix", "BPE"),
            fuse_unk=_bool(node, "fuse_unk", "BPE"),
            byte_fallback=_bool(node, "byte_fallback", "BPE"),
            ignore_merges=_bool(node, "ignore_merges", "BPE"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "dropout": self.dropout,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "end_of_word_suffix": self.end_of_word_suffix,
            "fuse_unk": self.fuse_unk,
            "byte_fallback": self.byte_fallback,
            "ignore_merges": self.ignore_merges,
            "vocab": _in_vocab_order(self.vocab),
            "merges": [[a, b] for a, b in self.merges],
        }

    def files(self) -> dict[str, str]:
        return {"vocab.json": bpe.dumps_vocab_json(self.vocab), "merges.txt": bpe.dumps_merges_txt(self.merges)}

    def spelling(self) -> dict[str, Any]:
        return {
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "end_of_word_suffix": self.end_of_word_suffix,
            "byte_fallback": self.byte_fallback,
            "unk_token": self.unk_token,
            "merges": self.merges,
        }

    def transformers_config(self, tokenizer: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """GPT-2's class, or RoBERTa's when the post-processor adds ``<s> A </s>``; RoBERTa's roles."""
        roberta = getattr(tokenizer.post_processor, "type", None) == "RobertaProcessing"
        config = {
            "tokenizer_class": "RobertaTokenizer" if roberta else "GPT2Tokenizer",
            "add_prefix_space": bool(getattr(tokenizer.pre_tokenizer, "add_prefix_space", False)),
        }
        return config, {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "sep_token": "</s>",
            "pad_token": "<pad>",
            "cls_token": "<s>",
            "mask_token": "<mask>",
        }

    def tokenize(self, word: str) -> WordTokens:
        vocab = self.vocab
        if not word:
            return []
        if self.ignore_merges and word in vocab:
            return [(vocab[word], word, 0, len(word))]
        if self._plain:
            initial = [vocab.get(ch) for ch in word]
            if None not in initial:
                merged = self._merge(initial)  # type: ignore[arg-type]
                bounds = [first for _, first in merged[1:]] + [len(word)]
                token_of = self.id_to_token_map
                return [(token_id, token_of[token_id], first, end) for (token_id, first), end in zip(merged, bounds)]
        return self._tokenize_general(word)

    def _tokenize_general(self, word: str) -> WordTokens:
        """``BPE::merge_word`` step by step: symbols with byte lengths, offsets counted as
        ``tokenizers`` counts them (a dropped character shifts the following offsets)."""
        vocab = self.vocab
        ids: list[int] = []
        lengths: list[int] = []
        unk: list[int] | None = None  # pending [id, byte length]
        unk_id = vocab.get(self.unk_token) if self.unk_token is not None else None
        if self.unk_token is not None and unk_id is None:
            raise ToktoolsError(f"the BPE unk token {self.unk_token!r} is not in the vocabulary")
        for ch, symbol in bpe.decorated(word, self.continuing_subword_prefix, self.end_of_word_suffix):
            size = len(ch.encode("utf-8"))
            token_id = vocab.get(symbol)
            if token_id is not None:
                if unk is not None:
                    ids.append(unk[0])
                    lengths.append(unk[1])
                    unk = None
                ids.append(token_id)
                lengths.append(size)
                continue
            if self.byte_fallback:
                fallback = [vocab.get(f"<0x{b:02X}>") for b in symbol.encode("utf-8")]
                if None not in fallback:
                    ids.extend(fallback)  # type: ignore[arg-type]
                    lengths.extend([1] * len(fallback))
                    continue
            if unk_id is not None:
                if unk is not None and self.fuse_unk:
                    unk[1] += size
                    continue
                if unk is not None:
                    ids.append(unk[0])
                    lengths.append(unk[1])
                unk = [unk_id, size]
        if unk is not None:
            ids.append(unk[0])
            lengths.append(unk[1])
        merged = self._merge(ids)
        starts = [0]
        for size in lengths:
            starts.append(starts[-1] + size)
        char_of_byte = [i for i, ch in enumerate(word) for _ in range(len(ch.encode("utf-8")))]
        last = len(char_of_byte) - 1
        bounds = [first for _, first in merged[1:]] + [len(ids)]
        token_of = self.id_to_token_map
        out = []
        for (token_id, first), end in zip(merged, bounds):
            b0, b1 = starts[first], starts[end]
            out.append((token_id, token_of[token_id], char_of_byte[min(b0, last)], char_of_byte[min(b1 - 1, last)] + 1))
        return out


# ---------------------------------------------------------------------------------------------
# WordPiece
# ---------------------------------------------------------------------------------------------


@register
class WordPiece(_CachedWords):
    """``models.WordPiece``: greedy longest match from the left, ``##`` on non-initial pieces; a
    word with an unmatchable position, or longer than ``max_input_chars_per_word``, is
    ``unk_token``."""

    type = "WordPiece"
    kind = "wordpiece"

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        cache_capacity: int = 200_000,
    ) -> None:
        if unk_token not in vocab:
            raise ToktoolsError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.vocab = vocab
        self.unk_token = unk_token
        self.unk_id = vocab[unk_token]
        self.continuing_subword_prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        prefix = continuing_subword_prefix
        self.longest = max((len(t) - len(prefix) if t.startswith(prefix) else len(t) for t in vocab), default=1)
        self._setup_cache(cache_capacity)

    @property
    def prefix(self) -> str:
        return self.continuing_subword_prefix

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> WordPiece:
        limit = node.get("max_input_chars_per_word", 100)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ToktoolsError(f"tokenizer.json: WordPiece max_input_chars_per_word must be a count, not {limit!r}")
        return cls(
            _vocab_of(node, "WordPiece"),
            unk_token=_optional_str(node, "unk_token", "WordPiece", "[UNK]") or "",
            continuing_subword_prefix=_optional_str(node, "continuing_subword_prefix", "WordPiece", "##") or "",
            max_input_chars_per_word=limit,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "vocab": _in_vocab_order(self.vocab),
        }

    def files(self) -> dict[str, str]:
        return {"vocab.txt": dumps_vocab_txt(self.vocab)}

    def spelling(self) -> dict[str, Any]:
        return {"continuing_subword_prefix": self.continuing_subword_prefix, "unk_token": self.unk_token}

    def transformers_config(self, tokenizer: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """BERT's class, with the BERT normaliser's settings it rebuilds the pipeline from."""
        normalizer = tokenizer.normalizer
        config = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": bool(getattr(normalizer, "lowercase", False)),
            "strip_accents": getattr(normalizer, "strip_accents", None),
            "tokenize_chinese_chars": bool(getattr(normalizer, "handle_chinese_chars", False)),
        }
        return config, {
            "unk_token": "[UNK]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
        }

    def tokenize(self, word: str) -> WordTokens:
        if not word:
            return []
        pieces = wordpiece_split(
            word,
            self.vocab,
            self.unk_token,
            self.continuing_subword_prefix,
            self.max_input_chars_per_word,
            self.longest,
        )
        return [(self.vocab[piece], piece, start, end) for piece, start, end in pieces]
