"""Ids-only encoding for the two pipelines corpus encoding meets most: byte-level BPE (GPT-2,
RoBERTa, toktools' ``bytebpe``) and BERT WordPiece.

Corpus encoding wants ids alone, but :meth:`Tokenizer.encode` also builds tokens, offsets and an
:class:`~toktools.encoding.Encoding` per text. Here a text becomes its ids with C-speed calls
only: one ``findall`` for its words, one dictionary lookup per word (natural text repeats a few
thousand words over and over), ``chain`` to join the cached id tuples. Python code runs only
for a word not seen before. The result is the ids of ``Tokenizer.encode(text,
add_special_tokens=False)``, for every input: every step is the reference's own (its tables, its
merge engine, its added-token matcher), or is proved equal to it below; ``tests/test_fast_ids.py``
checks it against the reference and against ``tokenizers`` on real and adversarial text.

:func:`ids_encoder` recognises a tokenizer by its parts and returns ``None`` for anything else
(the caller then uses the reference pipeline); Unigram tokenizers after Metaspace have their
own ids-only path in :mod:`toktools.engines.ids_only_unigram`, which it hands them to.

Byte-level BPE
    * The GPT-2 split runs on stdlib ``re`` with ``tokenizers``' own classes
      (``_bytelevel_tables``: Oniguruma's ``\\p{L}``, ``\\p{N}``, ``\\s``) cut to the BMP, for
      text without astral characters: exact by construction and ~2-3x faster than ``regex``.
      Text with astral characters takes the same pattern with every range (slower, and rare).
      Neither needs ``regex``'s tables, so no scan for where they disagree with Oniguruma.
    * A word not seen before is cut where no merge can reach across (see :class:`_CutPoints`),
      and each part is merged alone (and cached): long runs of CJK text, which rarely repeat
      whole, cost a few lookups instead of a merge run over every byte.
    * The words (or parts) a batch meets for the first time are merged all at once
      (:mod:`toktools.models.bpe.bulk_merge`: numpy steps over all of them, or a numba kernel, planned for a
      large input or loaded once merging has cost about what loading it does): a cold cache, in
      every worker and in Chinese text, is most of the cost of a Python merge per word.

WordPiece
    * BertNormalizer is :func:`bert_text.normalize` (one ``str.translate``, exact with NFD
      reordering) and BertPreTokenizer one ``findall`` with its classes cut to the BMP, or, for
      non-ASCII text, the padded translate + ``str.split`` of :func:`bert_text.iter_words` when
      that split is proved exact (``split_is_exact``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, compress, filterfalse
from operator import add
from time import thread_time
from typing import Any, Protocol

#: Cached words per process before the caches start again (a bound on memory: ~150 bytes each).
CACHE_WORDS = 1 << 19
#: Fewest new words in a batch worth a bulk merge (:mod:`toktools.models.bpe.bulk_merge`; below: one by one).
BULK_MIN_WORDS = 64
#: A batch sets its new words aside for a bulk merge when the batch before had one for every this
#: many characters or fewer (the texts that missed a word are encoded twice: worth it only when
#: merges are many).
DEFER_BELOW_CHARS_PER_MISS = 150
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _bmp_class(ranges: Iterable[tuple[int, int]]) -> str:
    """The BMP part of code-point ranges as a ``re`` class body (``re`` runs BMP classes from a
    bitmap, but scans long lists of astral ranges one by one)."""
    return "".join(
        f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"
        for lo, hi in ((lo, min(hi, 0xFFFF)) for lo, hi in ranges if lo <= 0xFFFF)
    )


class _Cache(dict):  # type: ignore[type-arg]
    """word → tuple of ids; a miss computes it (``compute``) and keeps it, so that
    ``map(cache.__getitem__, words)`` runs in C for every word seen before."""

    def __init__(self, compute: Callable[[str], tuple[int, ...]], capacity: int = CACHE_WORDS) -> None:
        super().__init__()
        self.compute = compute
        self.capacity = capacity
        #: words computed on lookup so far
        self.misses = 0
        #: when a list: missed words are put there, not computed, and give no ids (see
        #: :meth:`IdsEncoder.encode_batch`, which then computes them all at once)
        self.deferred: list[str] | None = None

    def __missing__(self, word: str) -> tuple[int, ...]:
        if self.deferred is not None:
            self.deferred.append(word)
            return ()
        self.misses += 1
        value = self.compute(word)
        if len(self) >= self.capacity:
            self.clear()
        self[word] = value
        return value


# ---------------------------------------------------------------------------------------------
# The words of a text
# ---------------------------------------------------------------------------------------------


class _ByteLevelWords:
    """ByteLevel pre-tokeniser: prefix space, then the GPT-2 split (as text pieces)."""

    def __init__(self, add_prefix_space: bool, use_regex: bool) -> None:
        from toktools.models.bpe import bytelevel
        from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

        self.add_prefix_space = add_prefix_space
        self.use_regex = use_regex
        self._bytelevel = bytelevel
        letter, number, space = (_bmp_class(r) for r in (LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES))
        # the reference's exact pattern (bytelevel._gpt2_pattern), classes cut to the BMP
        self.bmp = re.compile(bytelevel._gpt2_pattern(letter, number, space))
        self._full: re.Pattern[str] | None = None

    def full(self) -> re.Pattern[str]:
        """The same pattern with every range (astral ones too), built on first need: ``re``
        scans astral ranges one by one, so it is only for text that holds such characters."""
        if self._full is None:
            from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

            char_class = self._bytelevel._char_class
            self._full = re.compile(
                self._bytelevel._gpt2_pattern(
                    char_class(LETTER_RANGES), char_class(NUMBER_RANGES), char_class(SPACE_RANGES)
                )
            )
        return self._full

    def __call__(self, text: str) -> list[str]:
        if self.add_prefix_space and text and not text.startswith(" "):
            text = " " + text
        if not self.use_regex:
            return [text] if text else []
        if text.isascii() or not _ASTRAL.search(text):
            return self.bmp.findall(text)
        return self.full().findall(text)


class _BertWords:
    """BertPreTokenizer (after BertNormalizer, if any): punctuation alone, other runs between
    whitespace."""

    def __init__(self, config: Any | None) -> None:
        from toktools.parts import bert_text
        from toktools.tables import bert as tables

        punctuation = _bmp_class(tables.PRETOKENIZER_PUNCTUATION)
        space = _bmp_class(tables.PRETOKENIZER_WHITESPACE)
        self.bmp = re.compile(f"[{punctuation}]|[^{punctuation}{space}]+")  # bert_text.PRE_TOKENIZER_RE in the BMP
        self.full = bert_text.PRE_TOKENIZER_RE
        self.config = config
        self._bert_text = bert_text
        self.split_is_exact = config is not None and bert_text.tables_for(config).split_is_exact

    def normalize(self, text: str) -> str:
        return text if self.config is None else self._bert_text.normalize(text, self.config)

    def pre_tokenize(self, normalized: str) -> list[str]:
        if normalized.isascii() or not _ASTRAL.search(normalized):
            return self.bmp.findall(normalized)
        return self.full.findall(normalized)

    def __call__(self, text: str) -> list[str]:
        """The words of a text, normalised."""
        if self.split_is_exact and self.config is not None and not text.isascii():  # CJK: one word per char
            return list(self._bert_text.iter_words(text, self.config))
        return self.pre_tokenize(self.normalize(text))


# ---------------------------------------------------------------------------------------------
# Byte-level BPE: where a word can be cut without changing its merges
# ---------------------------------------------------------------------------------------------


#: CPU seconds a process merges whole words before it builds the cut tables of
#: :class:`_CutPoints` (~0.1 s per vocabulary; then runs of CJK text are merged in parts that
#: repeat): the same ids either way, so a short job, such as a ``--verify`` checker's few
#: texts, never pays for them.
CUTS_AFTER_SECONDS = 0.1


def _utf8_length(lead: int) -> int:
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


class _CutPoints:
    """Which character boundaries of a word no merge can cross.

    BPE only ever joins two adjacent symbols into a merge result, so a symbol covering the
    boundary between characters ``c1`` and ``c2`` is a merge result ``m`` occurring in the
    word's bytes across that boundary. If none can, the two sides never touch: each merges
    alone, in the same order as within the whole word (merges on one side neither create nor
    remove pairs on the other), so the word's tokens are those of its parts, in order.

    ``m`` crosses the boundary at one of its own positions ``k`` where ``m[k]`` starts a
    character (it is ``c2``'s first byte). Its bytes before ``k`` end with ``c1``: all of
    ``c1`` from its lead byte if ``m`` holds it, else a suffix of continuation bytes; its bytes
    from ``k`` start with ``c2`` (all of it, or the prefix ``m`` holds). Those (left, right)
    "cores" are collected once per vocabulary: the boundary is crossable only if a suffix of
    ``c1`` and a prefix of ``c2`` form one.

    Speed: cores of two whole characters become a set of two-character strings, tested for
    every boundary of a word in C. The few cores with a partial character, and pairs of ASCII
    characters (always treated as crossable: cuts are for runs of CJK text), are looked at
    only after a character that can start one (found by one ``str.translate``), once per pair.
    """

    def __init__(self, merge_results: Iterable[bytes]) -> None:
        whole: set[str] = set()
        partial: dict[bytes, set[bytes]] = {}  # left core -> right cores, one side partial
        for m in merge_results:
            if m.isascii():
                continue
            for k in range(1, len(m)):
                if m[k] & 0xC0 == 0x80:  # a continuation byte: no character starts here
                    continue
                q = k - 1
                while q > 0 and m[q] & 0xC0 == 0x80:
                    q -= 1
                left, right = m[q:k], m[k : k + _utf8_length(m[k])]
                if left.isascii() and right.isascii():
                    continue
                if (
                    left[0] & 0xC0 != 0x80
                    and len(left) == _utf8_length(left[0])
                    and len(right) == _utf8_length(right[0])
                ):
                    whole.add(left.decode("utf-8", "replace") + right.decode("utf-8", "replace"))
                else:
                    partial.setdefault(left, set()).add(right)
        self.whole = frozenset(whole)
        self._partial = partial
        self._partial_rights: dict[str, frozenset[bytes]] = {}
        self.classes = _CharClasses(self._class_of)
        self.crossable = _Cache(self._crossable_pair)  # type: ignore[arg-type]

    def _rights_after(self, ch: str) -> frozenset[bytes]:
        """Right cores of partial cores whose left core ends ``ch``."""
        found = self._partial_rights.get(ch)
        if found is None:
            data = ch.encode("utf-8")
            found = frozenset().union(*(self._partial.get(data[-i:], ()) for i in range(1, len(data) + 1)))
            self._partial_rights[ch] = found
        return found

    def _class_of(self, ch: str) -> str:
        """``"P"`` if a partial core (or an ASCII pair) may start at ``ch``, else ``"."``."""
        return "P" if ch.isascii() or self._rights_after(ch) else "."

    def _crossable_pair(self, pair: str) -> bool:  # type: ignore[override]
        if pair.isascii():
            return True
        rights = self._rights_after(pair[0])
        data = pair[1].encode("utf-8")
        return any(data[:j] in rights for j in range(1, len(data) + 1))

    def parts(self, text: str) -> Iterable[str]:
        """``text`` cut at every boundary no merge can cross."""
        n = len(text)
        joined = set(compress(range(1, n), map(self.whole.__contains__, map(add, text, text[1:]))))
        classes = text.translate(self.classes)
        if "P" in classes:
            crossable = self.crossable
            joined.update(p for p in map(_match_start, _CANDIDATES(classes)) if crossable[text[p - 1 : p + 1]])
        if not joined:
            return text
        cuts = list(filterfalse(joined.__contains__, range(1, n)))
        return map(text.__getitem__, map(slice, [0, *cuts], [*cuts, n]))


#: The boundaries after a character that may start a partial core.
_CANDIDATES = re.compile("(?<=P)(?=.)", re.S).finditer
_match_start = re.Match.start


class _CharClasses(dict):  # type: ignore[type-arg]
    """``str.translate`` table: code point → class of the character, computed on first sight."""

    def __init__(self, class_of: Callable[[str], str]) -> None:
        super().__init__()
        self.class_of = class_of

    def __missing__(self, code_point: int) -> str:
        value = self[code_point] = self.class_of(chr(code_point))
        return value


class _ByteLevelBPE:
    """A byte-level word → its ids, as ``models.BPE.tokenize`` on its byte symbols."""

    def __init__(self, model: Any) -> None:
        from toktools.models.bpe.bytelevel import text_to_symbols
        from toktools.models.bpe.merges import merge_symbols

        self.vocab: dict[str, int] = model.vocab
        self.merge_map = model.merge_map
        self.ignore_merges = bool(model.ignore_merges)
        self._merge_symbols = merge_symbols
        self._symbols = text_to_symbols
        self._results = lambda: _merge_results(model.merges)
        self._cuts: _CutPoints | None = None
        self.parts = _Cache(self.merge)
        #: CPU seconds this thread has spent merging new words (see :mod:`toktools.models.bpe.bulk_merge`)
        self.merge_seconds = 0.0
        self._bulk: Any = None

    def bulk(self) -> Any:
        """The bulk merges of this vocabulary (:class:`toktools.models.bpe.bulk_merge.BulkMerge`)."""
        if self._bulk is None:
            from toktools.models.bpe.bulk_merge import BulkMerge
            from toktools.models.bpe.bytelevel import BYTE_TO_SYMBOL

            merge_map, merge_symbols = self.merge_map, self._merge_symbols
            self._bulk = BulkMerge(
                [self.vocab[BYTE_TO_SYMBOL[b]] for b in range(256)],
                merge_map,
                lambda ids: [token_id for token_id, _ in merge_symbols(ids, merge_map)],
                lambda: self.merge_seconds,
            )
        return self._bulk

    def many(self, words: list[str]) -> list[tuple[str, tuple[int, ...]]]:
        """``(word, ids)`` for those of ``words`` a bulk merge takes now (the others are merged
        one by one when looked up).

        With the compiled merge, every word as it is. Without it, numpy takes the short words
        with no cut point and the parts of the others not seen before (see :class:`_CutPoints`;
        a Chinese run is cut into parts that repeat far more often than it does)."""
        bulk = self.bulk()
        started, loading = thread_time(), bulk.load_seconds
        try:
            found: list[tuple[str, tuple[int, ...]]] = []
            if self.ignore_merges:
                vocab, symbols = self.vocab, self._symbols
                whole = [(word, vocab.get(symbols(word))) for word in words]
                found = [(word, (token_id,)) for word, token_id in whole if token_id is not None]
                words = [word for word, token_id in whole if token_id is None]
            compiled = bulk.compiled_now()
            if compiled is not None:
                found.extend(zip(words, compiled(words)))
                return found
            found.extend(bulk.short_words([word for word in words if len(word) < 3 or word.isascii()]))
            runs = [word for word in words if len(word) >= 3 and not word.isascii()]
            if runs:
                parts = self.parts
                cut = self.cut_points().parts
                part_lists = [list(cut(word)) for word in runs]
                new_parts = list(set(filterfalse(parts.__contains__, chain.from_iterable(part_lists))))
                merged = list(bulk.short_words(new_parts))
                if len(parts) + len(merged) > parts.capacity:
                    parts.clear()  # as __missing__ does when full
                parts.update(merged)
                get = parts.__getitem__  # the parts left are merged in Python on lookup
                found.extend(zip(runs, [tuple(chain.from_iterable(map(get, p))) for p in part_lists]))
            return found
        finally:
            self.merge_seconds += thread_time() - started - (bulk.load_seconds - loading)

    def merge(self, text: str) -> tuple[int, ...]:
        """The plain merges of a piece of text (no ``ignore_merges`` shortcut)."""
        vocab = self.vocab
        merged = self._merge_symbols([vocab[s] for s in self._symbols(text)], self.merge_map)
        return tuple([token_id for token_id, _ in merged])

    def cut_points(self) -> _CutPoints:
        if self._cuts is None:
            self._cuts = _CutPoints(self._results())
        return self._cuts

    def __call__(self, word: str) -> tuple[int, ...]:
        started = thread_time()
        try:
            return self._merge_word(word)
        finally:
            self.merge_seconds += thread_time() - started

    def _merge_word(self, word: str) -> tuple[int, ...]:
        if self.ignore_merges:
            whole = self.vocab.get(self._symbols(word))
            if whole is not None:
                return (whole,)
        if len(word) < 3 or word.isascii() or (self._cuts is None and self.merge_seconds < CUTS_AFTER_SECONDS):
            return self.merge(word)
        return tuple(chain.from_iterable(map(self.parts.__getitem__, self.cut_points().parts(word))))


def _merge_results(merges: Sequence[tuple[str, str]]) -> list[bytes]:
    """The bytes of every merge result, all translated in one ``str.translate`` (one symbol is
    one byte, so slices of the whole are the results): a fifth of the time of one call each."""
    from itertools import accumulate

    from toktools.models.bpe.byte_symbols import symbols_to_bytes

    results = list(map(add, *zip(*merges))) if merges else []
    data = symbols_to_bytes("".join(results))
    ends = list(accumulate(map(len, results)))
    return list(map(data.__getitem__, map(slice, [0, *ends[:-1]], ends)))


def _byte_level_ready(model: Any) -> bool:
    """Plain byte-level BPE: every byte symbol a token, no unk/prefix/suffix/fallback, one token
    per id (so a merged symbol's bytes are its token's), merges between byte-symbol tokens."""
    from toktools.models.bpe.bytelevel import SYMBOL_TO_BYTE

    vocab = model.vocab
    if not model._plain or model.dropout not in (None, 0, 0.0):
        return False
    if any(symbol not in vocab for symbol in SYMBOL_TO_BYTE):
        return False
    if len(set(vocab.values())) != len(vocab):
        return False
    return set("".join(chain.from_iterable(model.merges))) <= SYMBOL_TO_BYTE.keys()


# ---------------------------------------------------------------------------------------------
# The encoder
# ---------------------------------------------------------------------------------------------


class IdsPath(Protocol):
    """What the reference engine (:class:`toktools.engines.reference.ReferenceEngine`) asks of an ids-only
    path: :class:`IdsEncoder` here, :class:`toktools.engines.ids_only_unigram.UnigramIdsEncoder`."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each text (as the reference, without special tokens added)."""

    def encode_packed(self, texts: Sequence[str]) -> tuple[bytes, bytes]:
        """The same ids packed as a worker sends them back (:data:`toktools.engines.id_packing.Packed`)."""

    def prepare_for_volume(self, head_share: float, workers: int) -> None:
        """Before forking workers, after encoding the first ``head_share`` of a batch here: load
        what the rest will want, once, for the workers to inherit."""

    def plans_compiled(self, input_bytes: int) -> bool:
        """True when an input this large wants compiled code (decided from the size alone): the
        engine then has it loaded (:meth:`load_compiled`) in a process of its own, which forks
        the workers."""

    def load_compiled(self, own_process: bool = False) -> None:
        """Load that compiled code now (``own_process``: in a process of toktools' own, see
        :func:`toktools.models.bpe.bulk_merge.without_scipy_linalg`)."""


class IdsEncoder:
    """Texts → ids, equal to ``[e.ids for e in tokenizer.encode_batch(texts,
    add_special_tokens=False)]`` (see :func:`ids_encoder` for which tokenizers)."""

    def __init__(
        self,
        tokenizer: Any,
        words: Callable[[str], list[str]],
        ids_of_word: Callable[[str], tuple[int, ...]],
        normalize: Callable[[str], str] | None,
        pre_tokenize: Callable[[str], list[str]],
    ) -> None:
        self.tokenizer = tokenizer
        self.words = words
        self.cache = _Cache(ids_of_word)
        self._defer = True  # the first batch meets a cold cache
        self._normalize = normalize
        self._pre_tokenize = pre_tokenize
        added = tokenizer.added
        self._added = added if added else None
        raw = [t.content for t in added.tokens if not t.normalized]
        # a quick test for "no raw-matched added token here"; the reference's matcher splits
        self._raw_search = re.compile("|".join(map(re.escape, raw))).search if raw else None
        self._has_normalized = bool(added) and added.has_normalized
        # one bound method kept: the matcher of normalised tokens is rebuilt when it changes
        self._normalize_str = tokenizer.normalizer.normalize_str if tokenizer.normalizer is not None else None
        normalized = {
            self._normalize_str(t.content) if self._normalize_str else t.content for t in added.tokens if t.normalized
        }
        normalized.discard("")
        # the same quick test for "no normalised added token in this normalised text"
        self._normalized_search = re.compile("|".join(map(re.escape, normalized))).search if normalized else None

    def encode(self, text: str) -> list[int]:
        """The ids of one text."""
        from toktools.tokenizer import check_text

        check_text(text)
        if self._raw_search is None or self._raw_search(text) is None:
            return self._fragment(text)
        ids: list[int] = []
        for fragment, _start, token in self._added.split(text):  # type: ignore[union-attr]
            if token is None:
                ids.extend(self._fragment(fragment))
            else:
                ids.append(token.id)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of many texts. Where the words are new to this process (a cold cache, Chinese),
        the batch is encoded with its missed words set aside, these are merged all at once
        (:mod:`toktools.models.bpe.bulk_merge`), and the texts that missed one are encoded again; where few
        are new (judged from the previous batch), each miss is merged on lookup."""
        many = getattr(self.cache.compute, "many", None)
        if many is None or not self._defer:
            misses = self.cache.misses
            out: list[list[int]] = [self.encode(text) for text in texts]
            self._defer = (self.cache.misses - misses) * DEFER_BELOW_CHARS_PER_MISS >= sum(map(len, texts))
            return out
        cache = self.cache
        get = cache.__getitem__
        deferred: list[str] = []
        cache.deferred = deferred
        out = []
        again: list[tuple[int, list[str] | None]] = []  # (text, its words if plain) to look up again
        try:
            for text in texts:
                missed = len(deferred)
                words = self._plain_words(text)
                out.append(self.encode(text) if words is None else list(chain.from_iterable(map(get, words))))
                if len(deferred) != missed:
                    again.append((len(out) - 1, words))
        finally:
            cache.deferred = None
        if not again:
            self._defer = False
            return out
        missing = list(set(deferred))
        self._defer = len(missing) * DEFER_BELOW_CHARS_PER_MISS >= sum(map(len, texts))
        if len(missing) >= BULK_MIN_WORDS:
            found = list(many(missing))
            if len(cache) + len(found) > cache.capacity:
                cache.clear()  # as __missing__ does when full
            cache.update(found)
        for i, words in again:  # the words the bulk merge left are merged on lookup now
            out[i] = self.encode(texts[i]) if words is None else list(chain.from_iterable(map(get, words)))
        return out

    def encode_packed(self, texts: Sequence[str]) -> tuple[bytes, bytes]:
        """The ids of many texts packed as a worker sends them back
        (:data:`toktools.engines.id_packing.Packed`: all ids as uint32, each text's count). Once the
        compiled merge is loaded (a corpus whose words rarely repeat: see :mod:`toktools.models.bpe.bulk_merge`),
        every word is merged by it with no cache, no id list per word or text; a text that may
        hold an added token goes the usual way."""

        bpe = self.cache.compute
        compiled = bpe.bulk().compiled(load=False) if isinstance(bpe, _ByteLevelBPE) and not bpe.ignore_merges else None
        if compiled is None:
            from toktools.engines.id_packing import pack_id_lists

            return pack_id_lists(self.encode_batch(texts))
        import numpy as np

        words = [self._plain_words(text) for text in texts]
        ids, counts = compiled.ids_of_texts([w if w is not None else [] for w in words])
        if any(w is None for w in words):
            ends = np.cumsum(counts).tolist()
            parts = [
                ids[end - count : end] if w is not None else np.array(self.encode(text), dtype=np.int64)
                for text, w, count, end in zip(texts, words, counts.tolist(), ends)
            ]
            counts = np.array(list(map(len, parts)), dtype=np.int64)
            ids = np.concatenate(parts) if parts else ids
        return ids.astype(np.uint32).tobytes(), counts.astype(np.int64).tobytes()

    def _plain_words(self, text: str) -> list[str] | None:
        """The words of a text that holds no added token (``None`` if it may hold one)."""
        from toktools.tokenizer import check_text

        check_text(text)
        if self._raw_search is not None and self._raw_search(text) is not None:
            return None
        if not self._has_normalized:
            return self.words(text)
        normalized = self._normalize(text) if self._normalize is not None else text
        if self._normalized_search is not None and self._normalized_search(normalized) is not None:
            return None
        return self._pre_tokenize(normalized)

    def prepare_for_volume(self, head_share: float, workers: int) -> None:
        """Before forking workers, which then inherit them instead of each loading its own: load
        the bulk merges a corpus like the one just encoded will want, judged from its first
        ``head_share`` (e.g. 1/16 of a batch), the Python merge time it took and the ``workers``
        that will share the rest of the batch."""
        if not isinstance(self.cache.compute, _ByteLevelBPE):
            return
        from toktools.models.bpe import bulk_merge as bpe_bulk

        merges = self.cache.compute.bulk()
        merges.vector()
        if (
            self.cache.compute.merge_seconds / max(head_share, 1e-9) / max(workers, 1)
            >= bpe_bulk.COMPILED_FORESEEN_SECONDS
        ):
            merges.compiled()

    def plans_compiled(self, input_bytes: int) -> bool:
        """Byte-level BPE (without ``ignore_merges``: its workers would still merge through the
        cache) on at least :data:`toktools.models.bpe.bulk_merge.COMPILED_PLANNED_BYTES` of input, with numba
        installed. A rule on the size, not on timing, so that a loaded machine never changes it."""
        from toktools.models.bpe import bulk_merge as bpe_bulk
        from toktools.runtime.compiled_switch import numba_installed

        bpe = self.cache.compute
        return (
            isinstance(bpe, _ByteLevelBPE)
            and not bpe.ignore_merges
            and input_bytes >= bpe_bulk.COMPILED_PLANNED_BYTES
            and numba_installed()
        )

    def load_compiled(self, own_process: bool = False) -> None:
        bpe = self.cache.compute
        if isinstance(bpe, _ByteLevelBPE):
            bpe.bulk().compiled(own_process=own_process)

    def _fragment(self, text: str) -> list[int]:
        """Ids of text that holds no raw-matched added token."""
        get = self.cache.__getitem__
        if not self._has_normalized:
            return list(chain.from_iterable(map(get, self.words(text))))
        normalized = self._normalize(text) if self._normalize is not None else text
        if self._normalized_search is None or self._normalized_search(normalized) is None:
            return list(chain.from_iterable(map(get, self._pre_tokenize(normalized))))
        ids: list[int] = []
        for start, end, token in self._added.split_normalized(normalized, self._normalize_str):  # type: ignore[union-attr]
            if token is None:
                ids.extend(chain.from_iterable(map(get, self._pre_tokenize(normalized[start:end]))))
            else:
                ids.append(token.id)
        return ids


def _template_free(processor: Any) -> bool:
    """True if the post-processor adds and changes no id without special tokens."""
    from toktools.parts import post_processors as pp

    if processor is None or type(processor) in (pp.BertProcessing, pp.RobertaProcessing, pp.ByteLevel):
        return True
    if type(processor) is pp.TemplateProcessing:
        return [item[0] for item in processor.single if not item[2]] == ["A"]
    if type(processor) is pp.Sequence:
        return all(_template_free(p) for p in processor.processors)
    return False


#: The methods of :class:`~toktools.tokenizer.Tokenizer` whose behaviour this module repeats.
_PIPELINE = (
    "encode",
    "encode_batch",
    "_encode_unpadded_batch",
    "_encode_unpadded",
    "encode_sequence",
    "encode_into",
    "_encode_piece",
)


def ids_encoder(tokenizer: Any) -> Any:
    """An :class:`IdsEncoder` for ``tokenizer`` if its parts are ones this module knows, else
    ``None``: byte-level BPE (ByteLevel pre-tokeniser, no normaliser) or WordPiece after
    BertPreTokenizer (BertNormalizer or none), or a Unigram after Metaspace
    (:mod:`toktools.engines.ids_only_unigram`); no truncation or padding; a post-processor that adds
    nothing without special tokens."""
    from toktools.parts import models, normalizers, pre_tokenizers
    from toktools.tokenizer import Tokenizer

    if not isinstance(tokenizer, Tokenizer) or tokenizer.truncation is not None or tokenizer.padding is not None:
        return None
    if any(getattr(type(tokenizer), method) is not getattr(Tokenizer, method) for method in _PIPELINE):
        return None  # a subclass that encodes its own way (the presets only build)
    if not _template_free(tokenizer.post_processor):
        return None
    model, pre, normalizer = tokenizer.model, tokenizer.pre_tokenizer, tokenizer.normalizer
    if getattr(model, "dropout", None):
        return None  # BPE-dropout samples per text: the whole pipeline draws
    if type(model) is models.BPE and type(pre) is pre_tokenizers.ByteLevel and normalizer is None:
        if not _byte_level_ready(model):
            return None
        words = _ByteLevelWords(pre.add_prefix_space, pre.use_regex)
        return IdsEncoder(tokenizer, words, _ByteLevelBPE(model), None, words)
    if (
        type(model) is models.WordPiece
        and type(pre) is pre_tokenizers.BertPreTokenizer
        and (normalizer is None or type(normalizer) is normalizers.BertNormalizer)
    ):
        bert = _BertWords(normalizer.config if normalizer is not None else None)
        wordpiece = model

        def ids_of_word(word: str) -> tuple[int, ...]:
            return tuple([token_id for token_id, *_ in wordpiece.tokenize(word)])

        return IdsEncoder(tokenizer, bert, ids_of_word, bert.normalize, bert.pre_tokenize)
    from toktools.engines.ids_only_unigram import unigram_ids_encoder

    return unigram_ids_encoder(tokenizer)  # type: ignore[return-value]
