"""Segmentation statistics of one tokenizer over documents, accumulated in one pass.

One definition for each number, used by ``toktools compare`` on one text and on a corpus:

* **document**: one line of a text file without its line ending (or one JSON Lines record's
  field); empty and blank lines are not documents.
* **characters**: the documents' code points, spaces included, line endings excluded;
  **bytes**: their UTF-8 bytes. **word**: see below.
* **tokens**: tokens of the documents encoded without special tokens, truncation or padding.
* **chars/token** = characters / tokens; **bytes/token** = bytes / tokens;
  **tokens/word** (fertility) = tokens / words.
* **word**: see :mod:`toktools.analysis.words`: whitespace-separated, Chinese runs cut by jieba's
  dictionary, characters of other scripts without spaces one by one; **segmentation**: how many
  words each of those rules made.
* **split words** (continued words): words that got more than one token. A token belongs to the
  word holding its last character (GPT-2's ``" world"`` belongs to ``world``; a token of
  whitespace only belongs to no word); the byte pieces of one character count as several tokens
  of its word. A word whose characters all end up in a token owned by a later word owns none.
* **UNK rate**: unknown tokens (``[UNK]``) / tokens; **UNK characters**: characters inside the
  spans of unknown tokens (the text they lost).
* **byte fallback**: tokens that are a byte-fallback piece ``<0xE6>`` (SentencePiece and BPE
  models with ``byte_fallback``) / tokens; **byte-fallback characters**: characters inside their
  spans.
* **chars/token of known text** = (characters − UNK characters − byte-fallback characters) /
  (tokens − unknown tokens − byte-fallback tokens): chars/token on the text the vocabulary
  covers, which unknown tokens swallowing whole words cannot flatter.
* **common characters** (Chinese text): of the ``COMMON_CHARACTERS`` (3,500) most frequent
  Chinese characters of the corpus (ties: lower code point first), the share that the tokenizer
  encodes, alone and without special tokens, as one token that is neither unknown nor a byte
  piece (a lone word-start marker ``▁`` before it is not counted).
* **byte pieces**: characters / all characters that end up in byte pieces, i.e. tokens holding
  only part of a character's UTF-8 bytes (GPT-2 cuts ``我`` into two tokens).
* **sequence length**: tokens of a document plus the special tokens the tokenizer adds to one
  sequence (BERT's ``[CLS]`` and ``[SEP]``), without truncation. Percentiles are nearest-rank
  (p90: the smallest length that at least 90% of the documents do not exceed); **over N** is
  the share of documents longer than N tokens, i.e. that a model of N positions truncates.
* **token length**: characters of the text a token stands for, without surrounding whitespace,
  counted once per occurrence (a token of whitespace only: its own length); byte pieces have
  length 0; unknown tokens are not counted.

* **Shannon efficiency**: the entropy of the token distribution (each id's share of the tokens)
  divided by log2 of the vocabulary size (Zouhar et al. 2023); **Rényi efficiency**: the Rényi
  entropy of order α (default 2.5), H_α = log2(Σ p^α) / (1 − α), divided by the same log2 of the
  vocabulary size. Both as the ``tokenization-scorer`` package computes them with ``vocab`` set to
  the vocabulary size; 1 is a perfectly even use of the vocabulary.
* **vocabulary size**: the tokenizer's ids, added tokens included; **seen**: distinct ids that
  occur in the documents; **seen ≥ 10**: ids that occur at least 10 times (each as a share of the
  vocabulary size).

Memory stays flat: lengths are kept as histograms, never as lists (and token counts per id).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.plain_data import ratio
from toktools.analysis.words import HAN, SOURCES, word_spans

__all__ = ["Document", "SegmentStats", "Tally", "percentile", "THRESHOLDS"]

#: Sequence lengths whose overflow is reported (BERT-family models stop at 512).
THRESHOLDS = (128, 256, 512)
#: The order of the Rényi efficiency unless asked otherwise (Zouhar et al. 2023).
RENYI_ALPHA = 2.5
#: Occurrences from which a token counts as well used (vocabulary utilisation).
WELL_USED = 10
#: How many of the corpus's most frequent Chinese characters "common characters" looks at.
COMMON_CHARACTERS = 3500
#: From this UNK rate on, a report warns that the tokenizer loses text.
HIGH_UNK_RATE = 0.01
_HAN_CHAR = re.compile(f"[{HAN}]")


class Document:
    """A document's text with what every tokenizer's tally needs: word spans, sizes."""

    __slots__ = ("text", "starts", "ends", "characters", "bytes", "sources")

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts, self.ends, self.sources = word_spans(text)
        self.characters = len(text)
        self.bytes = len(text.encode("utf-8"))


def percentile(histogram: Mapping[int, int], p: float) -> int | None:
    """Nearest-rank percentile of a ``value -> count`` histogram (None when empty)."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = max(1, math.ceil(p / 100 * total))
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen >= rank:
            return value
    return max(histogram)  # pragma: no cover - unreachable


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value


@dataclass
class SegmentStats:
    """How one tokenizer cuts a set of documents (see the module docstring for definitions)."""

    documents: int
    tokens: int
    characters: int
    bytes: int
    words: int
    split_words: int
    unk_count: int
    byte_piece_chars: int
    specials_per_sequence: int
    sequence_lengths: dict[int, int] = field(default_factory=dict)
    tokens_per_word_histogram: dict[int, int] = field(default_factory=dict)
    token_lengths: dict[int, int] = field(default_factory=dict)
    token_counts: dict[int, int] = field(default_factory=dict)
    vocab_size: int = 0
    renyi_alpha: float = RENYI_ALPHA
    unk_chars: int = 0
    fallback_count: int = 0
    fallback_chars: int = 0
    #: words per segmentation rule (:data:`toktools.analysis.words.SOURCES`)
    segmentation: dict[str, int] = field(default_factory=dict)
    #: Chinese character (code point) -> occurrences in the documents
    han_counts: dict[int, int] = field(default_factory=dict)
    #: common characters looked at, and those that are one token (set once the pass is done)
    common_considered: int = 0
    common_single: int = 0

    @property
    def shannon_efficiency(self) -> float | None:
        if not self.tokens or self.vocab_size < 2:
            return None
        total = self.tokens
        entropy = -sum(c / total * math.log2(c / total) for c in self.token_counts.values())
        return entropy / math.log2(self.vocab_size)

    @property
    def renyi_efficiency(self) -> float | None:
        if not self.tokens or self.vocab_size < 2:
            return None
        if self.renyi_alpha == 1.0:
            return self.shannon_efficiency
        total = self.tokens
        power_sum = sum((c / total) ** self.renyi_alpha for c in self.token_counts.values())
        return math.log2(power_sum) / (1 - self.renyi_alpha) / math.log2(self.vocab_size)

    @property
    def seen(self) -> int:
        return len(self.token_counts)

    @property
    def seen_well(self) -> int:
        return sum(1 for c in self.token_counts.values() if c >= WELL_USED)

    @property
    def chars_per_token(self) -> float | None:
        return ratio(self.characters, self.tokens)

    @property
    def bytes_per_token(self) -> float | None:
        return ratio(self.bytes, self.tokens)

    @property
    def tokens_per_word(self) -> float | None:
        return ratio(self.tokens, self.words)

    @property
    def split_share(self) -> float | None:
        return ratio(self.split_words, self.words)

    @property
    def unk_rate(self) -> float | None:
        return ratio(self.unk_count, self.tokens)

    @property
    def byte_piece_share(self) -> float | None:
        return ratio(self.byte_piece_chars, self.characters)

    @property
    def fallback_rate(self) -> float | None:
        return ratio(self.fallback_count, self.tokens)

    @property
    def chars_per_token_known(self) -> float | None:
        """chars/token of the text the vocabulary covers (unknown and byte-fallback tokens and
        their characters left out)."""
        return ratio(
            self.characters - self.unk_chars - self.fallback_chars, self.tokens - self.unk_count - self.fallback_count
        )

    @property
    def common_share(self) -> float | None:
        return ratio(self.common_single, self.common_considered)

    @property
    def segmentation_name(self) -> str:
        """The rules that made the words, e.g. ``whitespace + jieba``."""
        used = [name for name in SOURCES if self.segmentation.get(name)]
        return " + ".join(used) if used else "whitespace"

    def length_percentile(self, p: float) -> int | None:
        return percentile(self.sequence_lengths, p)

    def over(self, limit: int) -> float | None:
        """Share of documents longer than ``limit`` tokens (special tokens included)."""
        return ratio(sum(c for length, c in self.sequence_lengths.items() if length > limit), self.documents)

    @classmethod
    def combined(cls, parts: list[SegmentStats], specials: int) -> SegmentStats:
        """The statistics of several disjoint sets of documents together."""
        total = cls(0, 0, 0, 0, 0, 0, 0, 0, specials)
        counts: Counter[int] = Counter()
        han: Counter[int] = Counter()
        segmentation: Counter[str] = Counter()
        for part in parts:
            counts.update(part.token_counts)
            han.update(part.han_counts)
            segmentation.update(part.segmentation)
            total.vocab_size = max(total.vocab_size, part.vocab_size)
            total.renyi_alpha = part.renyi_alpha
        total.token_counts = dict(counts)
        total.han_counts = dict(han)
        total.segmentation = {name: segmentation[name] for name in SOURCES}
        lengths: Counter[int] = Counter()
        per_word: Counter[int] = Counter()
        token_lengths: Counter[int] = Counter()
        for part in parts:
            for name in (
                "documents",
                "tokens",
                "characters",
                "bytes",
                "words",
                "split_words",
                "unk_count",
                "byte_piece_chars",
                "unk_chars",
                "fallback_count",
                "fallback_chars",
                "common_considered",
                "common_single",
            ):
                setattr(total, name, getattr(total, name) + getattr(part, name))
            lengths.update(part.sequence_lengths)
            per_word.update(part.tokens_per_word_histogram)
            token_lengths.update(part.token_lengths)
        total.sequence_lengths = dict(sorted(lengths.items()))
        total.tokens_per_word_histogram = dict(sorted(per_word.items()))
        total.token_lengths = dict(sorted(token_lengths.items()))
        return total

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "documents": self.documents,
            "tokens": self.tokens,
            "characters": self.characters,
            "bytes": self.bytes,
            "words": self.words,
            "segmentation": self.segmentation_name,
            "words_by": {name.replace(" ", "_"): self.segmentation.get(name, 0) for name in SOURCES},
            "chars_per_token": self.chars_per_token,
            "chars_per_token_known": self.chars_per_token_known,
            "bytes_per_token": self.bytes_per_token,
            "tokens_per_word": self.tokens_per_word,
            "split_words": self.split_words,
            "split_share": self.split_share,
            "unk_count": self.unk_count,
            "unk_rate": self.unk_rate,
            "unk_chars": self.unk_chars,
            "byte_fallback_count": self.fallback_count,
            "byte_fallback_rate": self.fallback_rate,
            "byte_fallback_chars": self.fallback_chars,
            "byte_piece_chars": self.byte_piece_chars,
            "byte_piece_share": self.byte_piece_share,
            "common_chars": {
                "top": COMMON_CHARACTERS,
                "considered": self.common_considered,
                "single_token": self.common_single,
                "share": self.common_share,
            },
            "specials_per_sequence": self.specials_per_sequence,
            "renyi_alpha": self.renyi_alpha,
            "renyi_efficiency": self.renyi_efficiency,
            "shannon_efficiency": self.shannon_efficiency,
            "vocabulary": {
                "size": self.vocab_size,
                "seen": self.seen,
                "seen_share": ratio(self.seen, self.vocab_size),
                f"seen_{WELL_USED}": self.seen_well,
                f"seen_{WELL_USED}_share": ratio(self.seen_well, self.vocab_size),
            },
            "sequence_length": {
                "p50": self.length_percentile(50),
                "p90": self.length_percentile(90),
                "p99": self.length_percentile(99),
                "max": max(self.sequence_lengths, default=None),
            },
            "over": {str(n): self.over(n) for n in THRESHOLDS},
            "histograms": {
                "sequence_length": {str(k): v for k, v in sorted(self.sequence_lengths.items())},
                "tokens_per_word": {str(k): v for k, v in sorted(self.tokens_per_word_histogram.items())},
                "token_length": {str(k): v for k, v in sorted(self.token_lengths.items())},
            },
        }
        return {
            k: (
                {kk: _round(vv) for kk, vv in v.items()}
                if k in ("sequence_length", "over", "vocabulary", "common_chars")
                else _round(v)
            )
            for k, v in data.items()
        }


class _TokenFacts(dict):
    """token id -> length in characters, computed on first sight; ``partial`` collects the ids
    of byte pieces (tokens that are not whole characters) seen so far, ``fallback`` those of
    them that are byte-fallback pieces (``<0xE6>``)."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.partial: set[int] = set()
        self.fallback: set[int] = set()

    def __missing__(self, token_id: int) -> int:
        self.fill([token_id])
        return self[token_id]  # type: ignore[no-any-return]

    def fill(self, token_ids: list[int]) -> None:
        """Work out the facts of the ids not seen yet, all at once (faster than one by one)."""
        new = [i for i in token_ids if i not in self]
        if not new:
            return
        to_token = self.tokenizer.id_to_token
        tokens = [to_token(i) or "" for i in new]
        texts = token_view.token_texts(self.tokenizer, tokens)
        for token_id, token, text in zip(new, tokens, texts):
            if token.startswith("<0x") and token_view.is_byte_fallback(self.tokenizer, token):
                self.fallback.add(token_id)
            if text is None:
                self.partial.add(token_id)
                self[token_id] = 0
            else:
                self[token_id] = len(text.strip()) or len(text)


class Tally:
    """Accumulates :class:`SegmentStats` for one tokenizer, one document at a time."""

    def __init__(self, tokenizer: Any, facts: _TokenFacts | None = None) -> None:
        self.tokenizer = tokenizer
        self.unk_id = token_view.unk_id(tokenizer)
        self.specials = token_view.specials_added(tokenizer)
        self.facts = facts if facts is not None else _TokenFacts(tokenizer)
        self.documents = self.tokens = self.characters = self.bytes = self.words = 0
        self.split_words = self.unk_count = self.byte_piece_chars = 0
        self.unk_chars = self.fallback_count = self.fallback_chars = 0
        self.segmentation: Counter[str] = Counter()
        self.han_counts: Counter[int] = Counter()
        self.sequence_lengths: Counter[int] = Counter()
        self.per_word: Counter[int] = Counter()
        self.token_lengths: Counter[int] = Counter()
        self.token_counts: Counter[int] = Counter()
        self.vocab_size = vocabulary_size(tokenizer)

    def add(
        self, document: Document, ids: list[int], offsets: list[tuple[int, int]]
    ) -> tuple[list[int], set[tuple[int, int]]]:
        """Count one document's encoding (no special tokens). Returns what a disagreement
        score needs: the last character of each token inside a word, and the character
        ranges of its byte pieces."""
        self.documents += 1
        self.sequence_lengths[len(ids) + self.specials] += 1
        return self.add_piece(document, ids, offsets)

    def add_piece(
        self, document: Document, ids: list[int], offsets: list[tuple[int, int]]
    ) -> tuple[list[int], set[tuple[int, int]]]:
        """:meth:`add` for one piece of a long document cut where its tokenizer restarts (no word
        spans the cut): everything but the document count and its sequence length, which
        :meth:`close_document` adds once the pieces are counted."""
        n = len(ids)
        text = document.text
        self.tokens += n
        self.characters += document.characters
        self.bytes += document.bytes
        self.words += len(document.starts)
        self.segmentation.update(document.sources)
        if _HAN_CHAR.search(text):
            self.han_counts.update(map(ord, _HAN_CHAR.findall(text)))
        if self.unk_id is not None:
            self.unk_count += ids.count(self.unk_id)
            self.unk_chars += _covered(offsets, ids, {self.unk_id})
        facts = self.facts
        self.token_counts.update(ids)
        self.token_lengths.update(map(facts.__getitem__, ids))
        if facts.fallback and not facts.fallback.isdisjoint(ids):
            self.fallback_count += sum(1 for i in ids if i in facts.fallback)
            self.fallback_chars += _covered(offsets, ids, facts.fallback)
        if self.unk_id is not None and self.unk_id in facts and self.unk_id in ids:
            # "[UNK]" stands for text it lost: its 5 characters are not a token length
            self.token_lengths[facts[self.unk_id]] -= ids.count(self.unk_id)
        covered: set[tuple[int, int]] = set()
        if not facts.partial.isdisjoint(ids):
            partial = facts.partial
            covered = {offset for offset, token_id in zip(offsets, ids) if token_id in partial}
            self.byte_piece_chars += len({c for s, e in covered for c in range(s, e)})
        # each token to the word of its last character
        lasts = [e - 1 for s, e in offsets if e > s and not text[e - 1].isspace()]
        owners = Counter(map(bisect_right, repeat(document.starts, len(lasts)), lasts))
        counts = Counter(owners.values())
        counts[0] += len(document.starts) - len(owners)
        if not counts[0]:
            del counts[0]
        self.per_word.update(counts)
        self.split_words += sum(c for k, c in counts.items() if k > 1)
        return lasts, covered

    def close_document(self, tokens: int) -> None:
        """Count a document whose pieces :meth:`add_piece` counted, ``tokens`` tokens in all."""
        self.documents += 1
        self.sequence_lengths[tokens + self.specials] += 1

    def stats(self) -> SegmentStats:
        return SegmentStats(
            documents=self.documents,
            tokens=self.tokens,
            characters=self.characters,
            bytes=self.bytes,
            words=self.words,
            split_words=self.split_words,
            unk_count=self.unk_count,
            byte_piece_chars=self.byte_piece_chars,
            specials_per_sequence=self.specials,
            sequence_lengths=dict(sorted(self.sequence_lengths.items())),
            tokens_per_word_histogram=dict(sorted(self.per_word.items())),
            token_lengths=dict(sorted((k, v) for k, v in self.token_lengths.items() if v)),
            token_counts=dict(self.token_counts),
            vocab_size=self.vocab_size,
            unk_chars=self.unk_chars,
            fallback_count=self.fallback_count,
            fallback_chars=self.fallback_chars,
            segmentation={name: self.segmentation[name] for name in SOURCES},
            han_counts=dict(self.han_counts),
        )


def _covered(offsets: list[tuple[int, int]], ids: list[int], which: set[int]) -> int:
    """Characters inside the spans of the tokens whose id is in ``which`` (each counted once)."""
    return len({c for (s, e), i in zip(offsets, ids) if i in which for c in range(s, e)})


def vocabulary_size(tokenizer: Any) -> int:
    """The tokenizer's number of ids, added tokens included (toktools' and ``tokenizers``')."""
    size = getattr(tokenizer, "vocab_size", None)
    if isinstance(size, int):
        return size
    size = getattr(tokenizer, "get_vocab_size", None)
    if callable(size):
        return int(size(with_added_tokens=True))
    return len(tokenizer.get_vocab())
