"""BERT's WordPiece: greedy longest-match encoding with ``##`` pieces, ``vocab.txt`` I/O, the
decoder, and the tokenizer that ties them to the BERT normaliser and pre-tokeniser
(:mod:`toktools.bert_text`).

Everything follows ``tokenizers`` 0.23.3 (``shared/spec/wordpiece.md`` §4–§8). Training lives
in :mod:`toktools.training` (the BPE engine with a ``##`` prefix) and
:mod:`toktools.likelihood` (the original, likelihood-scored WordPiece idea).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from toktools import bert_text
from toktools.bert_text import BertNormalizerConfig
from toktools.encoding import AddedToken, TemplateProcessor
from toktools.errors import ToktoolsError
from toktools.tokenizer import Tokenizer

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

#: Rust's ``char::is_whitespace`` (what ``trim_end`` strips from ``vocab.txt`` lines).
_RUST_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"

# The decoder's cleanup, applied to each token on its own, in this order.
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


# ---------------------------------------------------------------------------------------------
# vocab.txt
# ---------------------------------------------------------------------------------------------


def loads_vocab_txt(text: str) -> dict[str, int]:
    """Parse ``vocab.txt`` as ``tokenizers`` does: the line index is the id, trailing whitespace
    (a CRLF's ``\\r`` included) is trimmed, an empty line is the token ``""``, and for a token
    listed twice the later line wins (the earlier id is left without a token)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not start another
    return {line.rstrip(_RUST_WHITESPACE): index for index, line in enumerate(lines)}


def dumps_vocab_txt(vocab: Mapping[str, int]) -> str:
    """``vocab.txt``: tokens in id order, each followed by ``\\n`` (ids without a token vanish)."""
    return "".join(token + "\n" for token, _ in sorted(vocab.items(), key=lambda item: item[1]))


def read_vocab_txt(path: str | Path) -> dict[str, int]:
    from toktools.bpe import read_text_file

    path = Path(path)
    vocab = loads_vocab_txt(read_text_file(path, "vocabulary"))
    if not vocab:
        raise ToktoolsError(f"{path}: the vocabulary is empty")
    return vocab


# ---------------------------------------------------------------------------------------------
# The model: greedy longest match
# ---------------------------------------------------------------------------------------------


def wordpiece_split(
    word: str,
    vocab: Mapping[str, int],
    unk_token: str = "[UNK]",
    prefix: str = "##",
    max_input_chars_per_word: int = 100,
    longest: int | None = None,
) -> list[tuple[str, int, int]]:
    """``word`` → ``(piece, start, end)``: the longest vocabulary entry from the left, then the
    longest ``##`` entry from there, and so on. A word longer than ``max_input_chars_per_word``
    or with a position where nothing matches becomes one ``unk_token`` (pieces found before it
    are dropped). ``longest`` (the longest entry without its prefix) only saves time."""
    n = len(word)
    if n > max_input_chars_per_word:
        return [(unk_token, 0, n)]
    limit = longest or n
    pieces = []
    start = 0
    while start < n:
        end = min(n, start + limit)
        while end > start:
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [(unk_token, 0, n)]
        pieces.append((piece, start, end))
        start = end
    return pieces


def decode_wordpieces(tokens: Sequence[str], prefix: str = "##", cleanup: bool = True) -> str:
    """``decoders.WordPiece``: glue ``##`` pieces to the previous token, put a space before the
    others (the first token keeps any ``##``), then clean up each token on its own."""
    out = []
    for index, token in enumerate(tokens):
        if index:
            token = token.replace(prefix, "", 1) if token.startswith(prefix) else " " + token
        if cleanup:
            for dirty, clean in _CLEANUP:
                token = token.replace(dirty, clean)
        out.append(token)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# The tokenizer
# ---------------------------------------------------------------------------------------------


class WordPieceTokenizer(Tokenizer):
    """BERT WordPiece: BERT normaliser and pre-tokeniser, greedy longest match, ``[CLS]``/``[SEP]``.

    Matches ``tokenizers``' ``BertWordPieceTokenizer(vocab.txt)`` and the Hub's BERT
    ``tokenizer.json`` files: same ids, tokens, offsets, type ids and decoding.
    """

    kind = "wordpiece"

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
        normalizer: BertNormalizerConfig | None = BertNormalizerConfig(),
        added_tokens: Sequence[AddedToken] = (),
        post_processor: TemplateProcessor | None = None,
        cache_capacity: int = 200_000,
    ) -> None:
        super().__init__(vocab, added_tokens, post_processor)
        if unk_token not in vocab:
            raise ToktoolsError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.unk_token = unk_token
        self.unk_id = vocab[unk_token]
        self.prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        self.normalizer = normalizer
        self.longest = max((len(t) - len(self.prefix) if t.startswith(self.prefix) else len(t) for t in vocab), default=1)
        self._cache: dict[str, tuple] = {}
        self._cache_capacity = cache_capacity

    @classmethod
    def bert(cls, vocab: dict[str, int], *, lowercase: bool = True, strip_accents: bool | None = None,
             clean_text: bool = True, handle_chinese_chars: bool = True,
             unk_token: str = "[UNK]", sep_token: str = "[SEP]", cls_token: str = "[CLS]",
             pad_token: str = "[PAD]", mask_token: str = "[MASK]") -> "WordPieceTokenizer":
        """What ``BertWordPieceTokenizer(vocab)`` builds: the special tokens that the vocabulary
        holds are registered, and ``[CLS] A [SEP]`` is added when both exist."""
        specials = [t for t in (unk_token, sep_token, cls_token, pad_token, mask_token) if t in vocab]
        added = [AddedToken(t, vocab[t]) for t in specials]
        post = None
        if sep_token in vocab and cls_token in vocab:
            post = TemplateProcessor.bert((cls_token, vocab[cls_token]), (sep_token, vocab[sep_token]))
        normalizer = BertNormalizerConfig(clean_text, handle_chinese_chars, strip_accents, lowercase)
        return cls(vocab, unk_token=unk_token, normalizer=normalizer, added_tokens=added, post_processor=post)

    @classmethod
    def from_vocab_file(cls, path: str | Path, **options: Any) -> "WordPieceTokenizer":
        """A BERT tokenizer from ``vocab.txt`` (lower-casing unless ``lowercase=False``)."""
        return cls.bert(read_vocab_txt(path), **options)

    @classmethod
    def from_tokenizer_json(cls, document: Mapping[str, Any], added: Sequence[AddedToken]) -> "WordPieceTokenizer":
        model = document["model"]
        normalizer_json = document.get("normalizer")
        if normalizer_json is None:
            normalizer = None
        elif normalizer_json.get("type") == "BertNormalizer":
            normalizer = BertNormalizerConfig(normalizer_json.get("clean_text", True),
                                              normalizer_json.get("handle_chinese_chars", True),
                                              normalizer_json.get("strip_accents"), normalizer_json.get("lowercase", True))
        else:
            raise ValueError(f"normalizer {normalizer_json.get('type')!r} is not supported (BertNormalizer is)")
        pre = document.get("pre_tokenizer") or {}
        if pre.get("type") not in ("BertPreTokenizer",):
            raise ValueError(f"pre-tokenizer {pre.get('type')!r} is not supported with WordPiece (BertPreTokenizer is)")
        return cls(
            dict(model["vocab"]),
            unk_token=model.get("unk_token", "[UNK]"),
            continuing_subword_prefix=model.get("continuing_subword_prefix", "##"),
            max_input_chars_per_word=model.get("max_input_chars_per_word", 100),
            normalizer=normalizer,
            added_tokens=added,
            post_processor=TemplateProcessor.from_json(document.get("post_processor") or {}),
        )

    # -- model ------------------------------------------------------------------------------

    def tokenize_word(self, word: str) -> list[tuple[int, str, int, int]]:
        """One pre-token → (id, token, start, end) with offsets in characters of ``word``."""
        pieces = wordpiece_split(word, self.vocab, self.unk_token, self.prefix, self.max_input_chars_per_word, self.longest)
        return [(self.vocab[piece], piece, start, end) for piece, start, end in pieces]

    def encode_into(self, text: str, base: int, ids: list[int], tokens: list[str], offsets: list[tuple[int, int]]) -> None:
        normalized, alignment = self._normalize(text)
        cache = self._cache
        add_id, add_token, add_offset = ids.append, tokens.append, offsets.append
        for match in bert_text.PRE_TOKENIZER_RE.finditer(normalized):
            word = match.group()
            entry = cache.get(word)
            if entry is None:
                entry = self._cache_entry(word)
                if len(cache) >= self._cache_capacity:
                    cache.clear()
                cache[word] = entry
            start = match.start()
            if len(entry) == 2:  # the common case: one token, the whole word
                add_id(entry[0])
                add_token(entry[1])
                if alignment is None:
                    add_offset((base + start, base + match.end()))
                else:
                    add_offset((base + alignment[start], base + alignment[match.end() - 1] + 1))
                continue
            word_ids, word_tokens, spans = entry
            ids.extend(word_ids)
            tokens.extend(word_tokens)
            if alignment is None:
                offsets.extend([(base + start + s, base + start + e) for s, e in spans])
            else:
                offsets.extend([(base + alignment[start + s], base + alignment[start + e - 1] + 1) for s, e in spans])

    def _normalize(self, text: str) -> tuple[str, list[int] | None]:
        """Normalised text and its alignment to ``text`` (None when it is one char per char)."""
        if self.normalizer is None:
            return text, None
        if text.isascii():
            # ASCII chars normalise to one char each, or vanish (control chars): equal length
            # means nothing vanished, so the alignment is the identity
            normalized = bert_text.normalize(text, self.normalizer)
            if len(normalized) == len(text):
                return normalized, None
        return bert_text.normalize_with_offsets(text, self.normalizer)

    def _cache_entry(self, word: str) -> tuple:
        """``(id, token)`` for the common whole-word token, else ``(ids, tokens, spans)``."""
        pieces = self.tokenize_word(word)
        if len(pieces) == 1 and pieces[0][2] == 0 and pieces[0][3] == len(word):
            return pieces[0][0], pieces[0][1]
        return [p[0] for p in pieces], [p[1] for p in pieces], [(p[2], p[3]) for p in pieces]

    def decode_tokens(self, tokens: list[str]) -> str:
        return decode_wordpieces(tokens, self.prefix)

    # -- files ------------------------------------------------------------------------------

    def save(self, directory: str | Path, *, overwrite: bool = True) -> list[Path]:
        """Write ``vocab.txt`` and ``tokenizer.json`` atomically."""
        from toktools.formats import dumps_tokenizer_json, write_files_atomically

        return write_files_atomically(
            Path(directory),
            {"vocab.txt": dumps_vocab_txt(self.vocab), "tokenizer.json": dumps_tokenizer_json(self.to_tokenizer_json())},
            overwrite=overwrite,
        )

    def to_tokenizer_json(self) -> dict[str, Any]:
        n = self.normalizer
        return {
            "version": "1.0",
            "truncation": self.truncation_json(),
            "padding": self.padding_json(),
            "added_tokens": self.added_tokens_json(),
            "normalizer": None if n is None else {"type": "BertNormalizer", "clean_text": n.clean_text,
                                                  "handle_chinese_chars": n.handle_chinese_chars,
                                                  "strip_accents": n.strip_accents, "lowercase": n.lowercase},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": None if self.post_processor is None else self.post_processor.to_json(),
            "decoder": {"type": "WordPiece", "prefix": self.prefix, "cleanup": True},
            "model": {
                "type": "WordPiece",
                "unk_token": self.unk_token,
                "continuing_subword_prefix": self.prefix,
                "max_input_chars_per_word": self.max_input_chars_per_word,
                "vocab": dict(sorted(self.vocab.items(), key=lambda item: item[1])),
            },
        }
