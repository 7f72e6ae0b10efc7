"""Full encodings of an ``encode_batch`` for BERT WordPiece, built a whole batch at a time:
ids at once, tokens and offsets when first read (:class:`~toktools.encoding.LazyEncoding`).

The reference pipeline aligns every text's normalised characters to its original ones in Python
(a ``CharSpans`` per text, a step per CJK character), then appends three objects per token. Here,
for WordPiece after ``BertPreTokenizer`` (after a ``BertNormalizer`` or none):

* each text is normalised by one ``str.translate`` (:mod:`toktools.parts.bert_text`'s table,
  exact: every step of ``BertNormalizer`` is per character once the texts where NFD reorders
  marks are set aside);
* the normalised texts, joined by spaces, are cut into words by array arithmetic over one
  character class per code point (``[P]|[^P W]+``: a punctuation character alone, a run of
  characters that are neither punctuation nor whitespace), which gives every word's place too;
* each distinct word is split by the model once (:meth:`toktools.parts.models.WordPiece.tokenize`,
  ``[UNK]`` and ``max_input_chars_per_word`` included) and kept: ids and where its pieces end;
* with the compiled WordPiece (:mod:`toktools.models.wordpiece.compiled`, where its machine code
  is kept) the two steps before are one kernel call per part of the batch, in a thread without
  the GIL while this one normalises the next part: every token's id and span, no word strings;
* offsets, when first read: a piece spans normalised characters from its word's start, and
  ``tokenizers`` aligns each normalised character to the one original character it came from
  (:func:`toktools.parts.bert_text.normalize_with_offsets`). Each original character gives
  ``len`` of its translation, so that alignment is a ``repeat`` over the batch.

A text holding an added token, or a character around which NFD may reorder, takes the reference
pipeline (``None`` below). ``tests/test_lazy_wordpiece.py`` checks every field against ``tokenizers``.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Sequence
from functools import partial
from itertools import chain
from typing import Any

from toktools.encoding import Encoding
from toktools.engines.batch_parts import offsets_per_text, part_chunks, part_encodings

#: distinct words kept per model before the cache starts again (a bound on memory)
CACHE_WORDS = 1 << 19
_CLASS_TABLE: Any = None  # code point -> 0 whitespace, 1 punctuation, 2 other (BertPreTokenizer)
_CLASS_BYTES: Any = None  # the same as an array.array of bytes (the table itself; the NumPy one views it)
_LENGTH_BYTES: dict[Any, Any] = {}  # normaliser tables -> code point -> length of its translation (255: not yet)


def _length_table(tables: Any) -> Any:
    """The normaliser's table of each code point's translation length (``compiled.UNKNOWN``: not
    met yet), shared by the compiled and the NumPy offsets."""
    lengths = _LENGTH_BYTES.get(tables)
    if lengths is None:
        from toktools.models.wordpiece.compiled import length_table

        lengths = _LENGTH_BYTES[tables] = length_table()
    return lengths


def _translation_length(char_map: Any, code: int) -> int:
    """How many characters the normaliser's table makes of code point ``code`` (0: removed)."""
    value = char_map[code]
    return 1 if isinstance(value, int) else 0 if value is None else len(value)


def _class_ranges() -> list[tuple[int, int, int]]:
    """``(first, last, class)``: whitespace 0, then punctuation 1 (the pattern tries it first)."""
    from toktools.tables import bert as tables

    return [(lo, hi, 0) for lo, hi in tables.PRETOKENIZER_WHITESPACE] + [
        (lo, hi, 1) for lo, hi in tables.PRETOKENIZER_PUNCTUATION
    ]


def _class_table() -> Any:
    """Every code point's class as a NumPy array (the Python path's): a view of :func:`_class_bytes`."""
    global _CLASS_TABLE
    if _CLASS_TABLE is None:
        import numpy as np

        _CLASS_TABLE = np.frombuffer(_class_bytes(), dtype=np.uint8)
    return _CLASS_TABLE


def _class_bytes() -> Any:
    """Every code point's class as an ``array.array`` of bytes (the compiled path's: no NumPy)."""
    global _CLASS_BYTES
    if _CLASS_BYTES is None:
        from array import array

        table = array("B", [2]) * 0x110000
        for lo, hi, value in _class_ranges():
            table[lo : hi + 1] = array("B", [value]) * (hi + 1 - lo)
        _CLASS_BYTES = table
    return _CLASS_BYTES


def wordpiece_builder(tokenizer: Any) -> WordPieceBatches | None:
    """The batch builder for ``tokenizer`` if it is WordPiece after BertPreTokenizer (and a
    BertNormalizer or none), with no normalised added token and one token per id; else None."""
    from toktools.parts import models, normalizers, pre_tokenizers

    model, normalizer = tokenizer.model, tokenizer.normalizer
    if type(model) is not models.WordPiece or type(tokenizer.pre_tokenizer) is not pre_tokenizers.BertPreTokenizer:
        return None
    if normalizer is not None and type(normalizer) is not normalizers.BertNormalizer:
        return None
    added = tokenizer.added.tokens
    if any(t.normalized for t in added):
        return None  # matched in the normalised text: the reference pipeline's job
    config = normalizer.config if normalizer is not None else None
    rules = (model.unk_token, model.continuing_subword_prefix, model.max_input_chars_per_word, len(model.vocab))
    key = ("wordpiece", config, tuple(sorted(t.content for t in added)), id(model.vocab), rules)
    held = model.__dict__.get("_lazy_batches")
    if held is not None and held[0] == key:
        return held[1]  # type: ignore[no-any-return]
    token_of = model.id_to_token_map
    dense = min(token_of, default=0) >= 0 and max(token_of, default=0) < 4 * len(token_of) + 65_536
    ready = dense and len(token_of) == len(model.vocab)
    made = WordPieceBatches(model, config, [t.content for t in added]) if ready else None
    model.__dict__["_lazy_batches"] = (key, made)
    return made


class WordPieceBatches:
    """Batches of texts → lazy encodings, for one WordPiece model and BERT normaliser."""

    def __init__(self, model: Any, config: Any, added: Sequence[str]) -> None:
        from toktools.engines.ids_words import BertWords
        from toktools.parts import bert_text

        self.model = model
        self.tables = bert_text.tables_for(config) if config is not None else None
        self.token_of: dict[int, str] = model.id_to_token_map
        self.has_added = re.compile("|".join(map(re.escape, added))).search if added else None
        reorder = self.tables.reorder_re if self.tables is not None else None
        self.reorders = reorder.search if reorder is not None else None
        self.words: dict[str, tuple[int, ...]] = {}
        self._token_lengths: Any = None
        #: BertPreTokenizer's pattern with its classes cut to the BMP: a C ``findall``, exact
        #: where no character outside the BMP is punctuation or whitespace
        self.bmp_words = BertWords(None).bmp.findall
        self.compiled: Any = None  # the compiled WordPiece, where its machine code is kept
        self.offsetter: Any = None  # its compiled offsets, where kept
        self._compiled_tried = False
        self.cold_chars = 0  # characters the reference path has encoded before this one loaded

    @property
    def loaded(self) -> bool:
        return (self._compiled_tried and (self.compiled is not None or _CLASS_TABLE is not None)) or (
            "numpy" in sys.modules and _CLASS_TABLE is not None
        )

    def load(self) -> bool:
        """The compiled WordPiece (no NumPy: only the offsets read it), or else
        numpy and the class table of the Python path."""
        if not self._compiled_tried:
            self._compiled_tried = True
            from toktools.runtime.compiled_switch import numba_installed

            if numba_installed():
                from toktools.models.wordpiece import compiled

                model = self.model
                self.compiled = compiled.load(
                    model.vocab, model.unk_token, model.prefix, model.max_input_chars_per_word
                )
                if self.compiled is not None:
                    self.offsetter = compiled.load_offsets()
        if self.compiled is None:
            _class_table()
        return True

    def ids_of_words(self, words: list[str]) -> list[tuple[int, ...]]:
        """Each word's ids, split by the model the first time a word is met."""
        known = self.words
        new = set(words).difference(known)
        if new:
            if len(known) + len(new) > CACHE_WORDS:
                known.clear()
            from toktools.models.wordpiece.model import wordpiece_split

            model = self.model  # what model.tokenize does, without its tuples of four
            vocab, limit = model.vocab, model.max_input_chars_per_word
            rules = (model.unk_token, model.prefix, limit, model.longest)
            fresh = list(new)
            # a word in the vocabulary (most words) is its own first and only piece, if not too long
            whole = [
                (word, (token_id,)) for word, token_id in zip(fresh, map(vocab.get, fresh)) if token_id is not None
            ]
            known.update((word, ids) for word, ids in whole if len(word) <= limit)
            for word in fresh:
                if word not in known:
                    known[word] = tuple([vocab[piece] for piece, _, _ in wordpiece_split(word, vocab, *rules)])
        return list(map(known.__getitem__, words))

    def token_lengths(self) -> tuple[Any, Any]:
        """Token id → its length in characters, and without the continuing prefix (a piece
        after a word's first covers that many characters of the word)."""
        if self._token_lengths is None:
            import numpy as np

            prefix, token_of = self.model.prefix, self.token_of
            size = max(token_of, default=0) + 1
            whole, continuing = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
            whole[list(token_of)] = list(map(len, token_of.values()))
            continuing[list(token_of)] = [
                len(token) - len(prefix) if token.startswith(prefix) else len(token) for token in token_of.values()
            ]
            self._token_lengths = (whole, continuing)
        return self._token_lengths  # type: ignore[no-any-return]

    def encode(self, texts: Sequence[str], type_ids: Sequence[int]) -> list[Encoding | None]:
        search, reorders = self.has_added, self.reorders
        plain = [
            i
            for i, text in enumerate(texts)
            if (search is None or search(text) is None) and (reorders is None or text.isascii() or not reorders(text))
        ]
        out: list[Encoding | None] = [None] * len(texts)
        if not plain:
            return out
        # compiled: in parts, each part's kernel in a thread while this one normalises the next
        # part and builds the previous part's encodings (the kernel runs without the GIL)
        chunks = part_chunks(texts, plain) if self.compiled is not None else [plain]
        threaded = len(chunks) > 1  # one part: nothing to overlap, no thread to start and join
        batches = [_WordPieceBatch(self, [texts[i] for i in chunk], threaded) for chunk in chunks]
        for i, _n, _batch, encoding in part_encodings(chunks, batches, self.token_of.__getitem__, type_ids):
            out[i] = encoding
        return out


class _WordPieceBatch:
    """One batch's ids and, when first asked, every text's offsets."""

    def __init__(self, batches: WordPieceBatches, texts: list[str], threaded: bool = True) -> None:
        tables = batches.tables
        normalized = [text.translate(tables.char_map) for text in texts] if tables is not None else texts
        joined = " ".join(normalized)  # a space: whitespace to the pre-tokeniser, ends every word
        self._batches, self._texts, self._normalized_chars = batches, texts, len(joined)
        self._lists: dict[int, list[tuple[int, int]]] | None = None
        self._thread: threading.Thread | None = None
        self._tokens: Any = None  # the compiled call's tokens (or the error it raised)
        if batches.compiled is not None:  # words, lookups and splits in one compiled call, in a thread
            from array import array
            from itertools import accumulate

            self.ids: list[int] = []
            self.bounds: list[int] = []
            raw = joined.encode("utf-32-le")
            starts = array("q", chain((0,), accumulate(len(text) + 1 for text in normalized)))  # in joined
            if threaded:
                self._thread = threading.Thread(target=self._run, args=(raw, starts), daemon=True)
                self._thread.start()
            else:
                self._run(raw, starts)
                self._collect()
            return
        import numpy as np

        points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        text_starts = np.zeros(len(texts) + 1, dtype=np.int64)  # in the joined normalised text
        np.cumsum(np.fromiter(map(len, normalized), dtype=np.int64, count=len(texts)) + 1, out=text_starts[1:])
        classes = _class_table()[points]
        other = classes == 2
        punctuation = classes == 1
        follows_other = np.zeros(len(other), dtype=bool)
        follows_other[1:] = other[:-1]
        precedes_other = np.zeros(len(other), dtype=bool)
        precedes_other[:-1] = other[1:]
        word_starts = np.flatnonzero(punctuation | (other & ~follows_other))
        word_ends = np.flatnonzero(punctuation | (other & ~precedes_other)) + 1
        if (classes[points > 0xFFFF] == 2).all():  # the pattern cut to the BMP is exact here
            words = batches.bmp_words(joined)
        else:
            words = list(map(joined.__getitem__, map(slice, word_starts.tolist(), word_ends.tolist())))
        id_lists = batches.ids_of_words(words)
        self.ids = list(chain.from_iterable(id_lists))
        token_counts = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
        first_token = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(token_counts, out=first_token[1:])
        text_words = np.searchsorted(word_starts, text_starts)
        self.bounds = first_token[text_words].tolist()
        self._words = (word_starts, word_ends, token_counts, first_token)

    def _run(self, points: bytes, text_starts: Any) -> None:
        try:
            self._tokens = self._batches.compiled.tokens(points, _class_bytes(), text_starts)  # type: ignore[union-attr]
        except BaseException as error:  # noqa: BLE001 - raised again by finish, in the caller's thread
            self._tokens = error

    def finish(self) -> None:
        """Wait for the compiled call, if any: the ids and each text's bounds."""
        if self._thread is None:
            return
        self._thread.join()
        self._thread = None
        self._collect()

    def _collect(self) -> None:
        """The compiled call's ids and each text's bounds (or the error it raised)."""
        if isinstance(self._tokens, BaseException):
            raise self._tokens
        tokens = self._tokens
        self.ids, self.bounds = tokens.ids[: tokens.count].tolist(), tokens.text_firsts

    def offsets(self, n: int) -> list[tuple[int, int]]:
        """Text ``n``'s offsets (every text's computed on the first call)."""
        if self._lists is None:
            self._lists = self._offsets()
        return self._lists.pop(n)

    def _compiled_offsets(self) -> dict[int, list[tuple[int, int]]] | None:
        """Every text's offsets from the compiled kernel (no NumPy), or None without it."""
        batches = self._batches
        if self._tokens is None or batches.offsetter is None:
            return None
        tables = batches.tables
        lengths, length_of = None, None
        if tables is not None:
            lengths, length_of = _length_table(tables), partial(_translation_length, tables.char_map)
        spans = batches.offsetter.offsets(
            self._texts, self._tokens, self.bounds, self._normalized_chars, lengths, length_of
        )
        return None if spans is None else offsets_per_text(spans[0], spans[1], self.bounds)

    def _offsets(self) -> dict[int, list[tuple[int, int]]]:
        compiled = self._compiled_offsets()
        if compiled is not None:
            return compiled
        import numpy as np

        texts = self._texts
        if self._tokens is not None:  # the compiled split gave every token's span
            tokens = self._tokens
            starts = np.frombuffer(tokens.starts, dtype=np.int64)[: tokens.count]
            ends = np.frombuffer(tokens.ends, dtype=np.int64)[: tokens.count]
        else:
            starts, ends = self._token_spans()
        original = " ".join(texts)
        text_starts = np.zeros(len(texts) + 1, dtype=np.int64)  # in the joined original text
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + 1, out=text_starts[1:])
        origin = self._origins(original)
        if origin is not None:  # each normalised character's original one
            starts, ends = origin[starts], origin[ends - 1] + 1
        counts: Any = np.diff(np.array(self.bounds, dtype=np.int64))
        shift = np.repeat(text_starts[:-1], counts)
        return offsets_per_text(starts - shift, ends - shift, self.bounds)

    def _token_spans(self) -> tuple[Any, Any]:
        """Every token's start and end in the joined normalised text."""
        import numpy as np

        word_starts, word_ends, token_counts, first_token = self._words
        # a word of one token is that token (an [UNK] too); the pieces of a longer word tile it,
        # each as long as its token without the continuing prefix, but for the first
        ids = np.array(self.ids, dtype=np.int64)
        word_of_token = np.repeat(np.arange(len(word_starts), dtype=np.int64), token_counts)
        whole, continuing = self._batches.token_lengths()
        lengths = continuing[ids]
        firsts = first_token[:-1][token_counts > 0]
        lengths[firsts] = whole[ids[firsts]]
        single = token_counts[word_of_token] == 1
        lengths[single] = (word_ends - word_starts)[word_of_token[single]]
        before = np.cumsum(lengths) - lengths  # characters of the tokens before, batch-wide
        starts = word_starts[word_of_token] + before - before[first_token[word_of_token]]
        return starts, starts + lengths

    def _origins(self, original: str) -> Any:
        """For each character of the joined normalised text, the index of the original
        character it came from (None without a normaliser: the same text)."""
        import numpy as np

        tables = self._batches.tables
        if tables is None:
            return None
        points = np.frombuffer(original.encode("utf-32-le"), dtype=np.uint32)
        from toktools.models.wordpiece.compiled import UNKNOWN

        lengths = np.frombuffer(_length_table(tables), dtype=np.uint8)  # the compiled offsets' table
        seen = np.zeros(0x110000, dtype=bool)
        seen[points] = True
        char_map = tables.char_map
        for point in np.flatnonzero(seen & (lengths == UNKNOWN)).tolist():
            lengths[point] = _translation_length(char_map, point)
        origin = np.repeat(np.arange(len(points), dtype=np.int64), lengths[points])
        if len(origin) != self._normalized_chars:  # the translation is per character: cannot happen
            raise AssertionError("normalised text and its alignment disagree")
        return origin
