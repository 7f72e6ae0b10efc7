"""Ids and character spans of a chunk for tokenizers that cut every whitespace word on its own
(BERT's WordPiece and the like), from a cache of each distinct word's tokens: no offsets from
the whole text, and each distinct word encoded once.

Why it is exact. For the pipelines this module accepts (:func:`word_spans`), the encoding of a
document is the encodings of its words (``str.split()``) laid end to end, each word's offsets
moved to where the word starts:

* the normalisers (``BertNormalizer``, ``Lowercase``, ``StripAccents``, the Unicode forms) work
  character by character (a whitespace character is a starter, so no reordering or composition
  crosses it), and the pre-tokenisers (``BertPreTokenizer``, ``Whitespace``,
  ``WhitespaceSplit``, ``Punctuation``, ``Digits``) split at whitespace and at character
  classes, so nothing they do depends on text across a whitespace character that they drop;
* the model encodes each pre-token on its own; the post-processor adds nothing without special
  tokens and leaves offsets alone (``ByteLevel``/``RobertaProcessing`` trimming is not accepted);
* added tokens are matched in the text first: none may hold whitespace or strip it (``lstrip``,
  ``rstrip``), so each match lies inside one word, where it is matched alone too.

What remains is which whitespace characters the pipeline really drops: Python's ``isspace``
also holds ``\\x1c``-``\\x1f``, which Rust's whitespace does not, and ``BertNormalizer``
removes ``\\x0b``, ``\\x0c`` and ``\\x85`` (control characters) instead of splitting there, so
the words around them become one. A probe finds them once per tokenizer (each of Python's
whitespace characters between words in a few contexts, against the words encoded alone); a
document holding one of them is encoded whole, as before. ``tests/test_compare_fast.py`` compares the statistics with the per-token
loop on the reference's own offsets.

The cache is bounded (:data:`MAX_WORDS`, :data:`MAX_CHARACTERS`): when full it starts again
empty, so memory stays flat on any corpus.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from toktools.analysis.chunk_tally import SPACES, ChunkText, flat_spans
from toktools.analysis.fast_offsets import OffsetsEncoder, is_threaded, offsets_encoder
from toktools.analysis.words import BERT_CHINESE_RANGES, HAN_RANGES

__all__ = ["WordSpans", "word_spans", "MAX_WORDS", "MAX_CHARACTERS"]

#: Distinct words, and their characters, kept at most per tokenizer before the cache restarts.
MAX_WORDS = 500_000
MAX_CHARACTERS = 16_000_000
#: Characters of words joined (by spaces) into one text for the encoder.
_BATCH_CHARS = 64 * 1024

_NORMALIZERS = {"BertNormalizer", "Lowercase", "StripAccents", "NFD", "NFKD", "NFC", "NFKC"}
_PRE_TOKENIZERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation", "Digits"}
_MODELS = {"WordPiece", "WordLevel", "BPE", "Unigram"}
_POST_PROCESSORS = {"BertProcessing", "TemplateProcessing"}
#: (before, after) around each whitespace character in the probe.
_CONTEXTS = [("ab", "cd"), ("Ab.", "1x"), ("中", "文"), ("é,", "##"), ("[UNK]", "[CLS]")]


def _parts(node: dict[str, Any] | None, allowed: set[str]) -> bool:
    """Whether a normaliser / pre-tokeniser node is None or built only from ``allowed`` types."""
    if node is None:
        return True
    kind = node.get("type")
    if kind == "Sequence":
        return all(_parts(n, allowed) for n in node.get("normalizers", node.get("pretokenizers", [])))
    return kind in allowed


def word_separable(document: dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` document is one of the pipelines that cut every whitespace
    word on its own (see the module docstring)."""
    model = document.get("model") or {}
    if model.get("type") not in _MODELS or model.get("dropout") not in (None, 0, 0.0):
        return False
    processor = document.get("post_processor")
    if processor is not None and processor.get("type") not in _POST_PROCESSORS:
        return False
    for token in document.get("added_tokens") or []:
        content = token.get("content", "")
        if token.get("lstrip") or token.get("rstrip") or not content or any(c.isspace() for c in content):
            return False
    return _parts(document.get("normalizer"), _NORMALIZERS) and _parts(document.get("pre_tokenizer"), _PRE_TOKENIZERS)


def han_separable(document: dict[str, Any]) -> bool:
    """Whether a word-separable pipeline (:func:`word_separable`) also cuts each Chinese
    character on its own: its normaliser pads them with spaces (``BertNormalizer`` with
    ``handle_chinese_chars``, BERT's), and no added token holds one (it would be matched across
    the cut)."""
    if not word_separable(document):
        return False
    nodes = [document.get("normalizer") or {}]
    if nodes[0].get("type") == "Sequence":
        nodes = nodes[0].get("normalizers") or []
    if not any(n.get("type") == "BertNormalizer" and n.get("handle_chinese_chars", True) for n in nodes):
        return False
    contents = "".join(token.get("content", "") for token in document.get("added_tokens") or [])
    return not any(lo <= ord(c) <= hi for c in contents for lo, hi in HAN_RANGES)


def _han_alone(encode: OffsetsEncoder) -> bool:
    """Whether, as probed, ``before + c + after`` encodes as ``before``, ``c`` and ``after``
    alone, offsets moved, for Chinese characters ``c`` (the first and last of each block of
    :data:`~toktools.analysis.words.BERT_CHINESE_RANGES`, compatibility ideographs) between
    letters, digits, punctuation, accents, combining marks, kana, other Chinese characters, a
    character BERT's Python calls Chinese and Rust does not (U+2B820), and special tokens'
    text."""
    contexts = ["", "ab", "Ab.", "é", "\u0301", "1", "##", "[UNK]", "中", "カ", "\uff76", "\x00", "\U0002b820"]
    hans = ["中", "\uf900", "\ufa6d"] + [chr(c) for block in BERT_CHINESE_RANGES for c in block]
    texts = [before + c + after for c in hans for before in contexts for after in contexts]
    pieces = sorted(set(contexts) | set(hans))
    alone = dict(zip(pieces, encode(pieces)))
    found = iter(encode(texts))
    for c in hans:
        for before in contexts:
            for after in contexts:
                ids, offsets = next(found)
                expected_ids: list[int] = []
                expected_offsets: list[tuple[int, int]] = []
                shift = 0
                for piece in (before, c, after):
                    piece_ids, piece_offsets = alone[piece]
                    expected_ids += list(piece_ids)
                    expected_offsets += [(s + shift, e + shift) for s, e in piece_offsets]
                    shift += len(piece)
                if (list(ids), [tuple(o) for o in offsets]) != (expected_ids, expected_offsets):
                    return False
    return True


def _separators(encode: OffsetsEncoder) -> tuple[set[str], set[str]]:
    """(whitespace characters the pipeline drops and splits at, those it does not), as probed:
    ``before + c + after`` must encode as ``before`` and ``after`` alone, offsets moved."""
    spaces = [chr(c) for c in SPACES]
    texts = [b + c + a for c in spaces for b, a in _CONTEXTS]
    pieces = sorted({piece for pair in _CONTEXTS for piece in pair})
    alone = dict(zip(pieces, encode(pieces)))
    found = encode(texts)
    good: set[str] = set()
    bad: set[str] = set()
    for k, c in enumerate(spaces):
        same = True
        for j, (before, after) in enumerate(_CONTEXTS):
            ids, offsets = found[k * len(_CONTEXTS) + j]
            (ids_b, off_b), (ids_a, off_a) = alone[before], alone[after]
            shift = len(before) + 1
            expected = (
                list(ids_b) + list(ids_a),
                [tuple(o) for o in off_b] + [(s + shift, e + shift) for s, e in off_a],
            )
            same = same and (list(ids), [tuple(o) for o in offsets]) == expected
        (good if same else bad).add(c)
    return good, bad


class WordSpans:
    """Per-word cache of one tokenizer's tokens (ids, and spans relative to the word's start),
    and the chunk's ``(ids, tokens per document, starts, ends)`` gathered from it, the same
    arrays :func:`~toktools.analysis.chunk_tally.spans_of` makes from whole-text offsets."""

    def __init__(self, encode: OffsetsEncoder, unsafe: Sequence[str], han_alone: bool = False) -> None:
        import numpy as np

        self.encode = encode
        #: whether the units are cut at each Chinese character too (:meth:`ChunkText.units`)
        self.han_alone = han_alone
        self.threaded = is_threaded(encode)
        #: whitespace characters that do not separate words for this tokenizer
        self.unsafe = np.array(sorted(map(ord, unsafe)), dtype=np.uint32)
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        import numpy as np

        self.index: dict[str, int] = {}
        self.characters = 0
        self.first = np.zeros(0, dtype=np.int64)  # per cached word: its first token in the tables
        self.length = np.zeros(0, dtype=np.int64)  # per cached word: its tokens
        self.ids = np.zeros(0, dtype=np.int64)
        self.starts = np.zeros(0, dtype=np.int64)  # relative to the word's first character
        self.ends = np.zeros(0, dtype=np.int64)

    def arrays(self, texts: Sequence[str], chunk: ChunkText) -> tuple[Any, Any, Any, Any]:
        """``(ids, tokens per text, starts, ends)``, spans on the chunk's axis."""
        import numpy as np

        unique, keys = chunk.interned_words(self.han_alone)
        unit_start, unit_doc = chunk.units(self.han_alone)
        whole = self._unsafe_documents(chunk)
        with self._lock:  # a cluster worker's threads share the cache; the tables are replaced, never changed
            if len(unique) > MAX_WORDS - len(self.index) or self.characters > MAX_CHARACTERS:
                self._clear()
            slots = self._slots(unique)
            first, length = self.first, self.length
            ids, starts, ends = self.ids, self.starts, self.ends
        unit_first, unit_length = first[slots][keys], length[slots][keys]
        if len(whole):  # documents encoded whole: their tokens appended to the tables, for this chunk
            keep = ~np.isin(unit_doc, whole)
            encoded = self.encode([texts[d] for d in whole.tolist()])
            more_ids, more_counts, more_starts, more_ends = flat_spans(encoded)
            more_first = len(ids) + np.cumsum(more_counts) - more_counts
            ids = np.concatenate([ids, more_ids])
            starts, ends = np.concatenate([starts, more_starts]), np.concatenate([ends, more_ends])
            unit_start = np.concatenate([unit_start[keep], chunk.base[whole]])
            order = np.argsort(unit_start, kind="stable")
            unit_start = unit_start[order]
            unit_doc = np.concatenate([unit_doc[keep], whole])[order]
            unit_first = np.concatenate([unit_first[keep], more_first])[order]
            unit_length = np.concatenate([unit_length[keep], more_counts])[order]
        total = int(unit_length.sum())
        into = np.cumsum(unit_length) - unit_length  # where each unit's tokens go
        take = np.arange(total, dtype=np.int64) + np.repeat(unit_first - into, unit_length)
        shift = np.repeat(unit_start, unit_length)
        counts = np.bincount(unit_doc, weights=unit_length, minlength=chunk.count).astype(np.int64)
        return ids[take], counts, starts[take] + shift, ends[take] + shift

    def _unsafe_documents(self, chunk: ChunkText) -> Any:
        """The chunk's documents holding a whitespace character that does not separate words
        for this tokenizer."""
        import numpy as np

        if not len(self.unsafe):
            return np.zeros(0, dtype=np.int64)
        where = np.flatnonzero(chunk.space)
        hit = where[np.isin(chunk.points[where], self.unsafe)]
        return np.unique(np.searchsorted(chunk.base, hit, side="right") - 1)

    def _slots(self, unique: list[str]) -> Any:
        """Each word's place in the cache, encoding the words not in it yet."""
        import numpy as np

        index = self.index
        slots = np.fromiter(map(index.get, unique, repeat(-1)), dtype=np.int64, count=len(unique))
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            words = [unique[i] for i in missing.tolist()]
            start = len(index)
            self._add(words)
            slots[missing] = np.arange(start, start + len(words))
        return slots

    def _add(self, words: list[str]) -> None:
        """Encode ``words`` (joined by spaces into texts of about :data:`_BATCH_CHARS`) and put
        them at the end of the cache; a batch whose tokens do not fall inside single words
        (never seen) is encoded word by word instead."""
        import numpy as np

        ends = np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)) + 1)
        # cut after the word that reaches each multiple of _BATCH_CHARS
        reach = np.searchsorted(ends, np.arange(_BATCH_CHARS, int(ends[-1]), _BATCH_CHARS)) + 1
        cuts = sorted({0, len(words), *reach.tolist()})
        batches = [words[a:b] for a, b in zip(cuts, cuts[1:])]
        encoded = self.encode([" ".join(batch) for batch in batches])
        parts: list[tuple[Any, Any, Any, Any]] = []
        for batch, (ids, offsets) in zip(batches, encoded):
            parts.append(_split_words(batch, ids, offsets) or flat_spans(self.encode(batch)))
        base = len(self.ids)
        lengths = np.concatenate([p[1] for p in parts])
        self.first = np.concatenate([self.first, base + np.cumsum(lengths) - lengths])
        self.length = np.concatenate([self.length, lengths])
        self.ids = np.concatenate([self.ids, *(p[0] for p in parts)])
        self.starts = np.concatenate([self.starts, *(p[2] for p in parts)])
        self.ends = np.concatenate([self.ends, *(p[3] for p in parts)])
        self.index.update(zip(words, range(len(self.index), len(self.index) + len(words))))
        self.characters += int(ends[-1]) - len(words)


def _split_words(
    words: list[str], ids: Sequence[int], offsets: Sequence[tuple[int, int]]
) -> tuple[Any, Any, Any, Any] | None:
    """The tokens of ``" ".join(words)`` given back to each word: ``(ids, tokens per word,
    starts, ends)``, spans relative to the word; None when a token is not inside one word or
    the words' tokens are not in order."""
    import numpy as np

    ids_a, _, starts, ends = flat_spans([(ids, offsets)])
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    word_start = np.cumsum(lengths + 1) - lengths - 1
    owner = np.searchsorted(word_start, starts, side="right") - 1
    if len(owner) and (
        owner[0] < 0
        or (np.diff(owner) < 0).any()
        or (starts < word_start[owner]).any()
        or (ends > word_start[owner] + lengths[owner]).any()
        or (ends < starts).any()
    ):
        return None
    counts = np.bincount(owner, minlength=len(words)).astype(np.int64)
    return ids_a, counts, starts - word_start[owner], ends - word_start[owner]


def word_spans(tokenizer: Any) -> WordSpans | None:
    """:class:`WordSpans` for a toktools tokenizer whose pipeline cuts every whitespace word on
    its own and for which the space character separates words (probed); None otherwise."""
    to_json = getattr(tokenizer, "to_tokenizer_json", None)
    if to_json is None:
        return None
    from toktools.engines.base import corpus_document

    try:
        document = corpus_document(to_json())
    except Exception:  # a tokenizer that cannot say what it is: the whole-text path does it
        return None
    if not word_separable(document):
        return None
    encode = offsets_encoder(tokenizer)
    good, bad = _separators(encode)
    if " " not in good:
        return None
    return WordSpans(encode, sorted(bad), han_alone=han_separable(document) and _han_alone(encode))
