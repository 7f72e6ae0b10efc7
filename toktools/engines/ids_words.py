"""The word side of the ids-only paths (:mod:`toktools.engines.ids_only`): how byte-level BPE
and BERT text is cut into words, the per-process word caches, and the byte-level merge over
whole batches of new words (with the cut points that split long CJK runs).

Kept apart from the encoder so that the model-level batch warm-up
(:mod:`toktools.models.bpe.warm_cache`) can use the same merge without importing the
:class:`~toktools.tokenizer.Tokenizer` that calls it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from itertools import accumulate, chain, compress, filterfalse
from operator import add
from time import thread_time
from typing import Any

#: Cached words per process before the caches start again (a bound on memory: ~150 bytes each).
CACHE_WORDS = 1 << 19
#: a character outside the BMP (the split then needs its slower, full pattern)
ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _bmp_class(ranges: Iterable[tuple[int, int]]) -> str:
    """The BMP part of code-point ranges as a ``re`` class body (``re`` runs BMP classes from a
    bitmap, but scans long lists of astral ranges one by one)."""
    return "".join(
        f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"
        for lo, hi in ((lo, min(hi, 0xFFFF)) for lo, hi in ranges if lo <= 0xFFFF)
    )


class WordCache(dict):  # type: ignore[type-arg]
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


class ByteLevelWords:
    """ByteLevel pre-tokeniser: prefix space, then the GPT-2 split (as text pieces)."""

    def __init__(
        self, add_prefix_space: bool, use_regex: bool, bmp_pattern: str | re.Pattern[str] | None = None
    ) -> None:
        """``bmp_pattern``: :meth:`bmp_pattern`'s value (or it compiled), when it is kept (the
        ``--verify`` checker's state, :mod:`toktools.engines.reference_ids`): the tables are then
        not read."""
        self.add_prefix_space = add_prefix_space
        self.use_regex = use_regex
        self._bmp_pattern = bmp_pattern
        self._full: re.Pattern[str] | None = None

    @cached_property
    def bmp(self) -> re.Pattern[str]:
        """The pattern cut to the BMP, compiled on first use (~0.01 s): the lazy batches split
        with the compiled split where they can (:mod:`toktools.models.bpe.compiled_split`)."""
        return re.compile(self.bmp_pattern() if self._bmp_pattern is None else self._bmp_pattern)

    @staticmethod
    def bmp_pattern() -> str:
        """The reference's exact pattern (``bytelevel._gpt2_pattern``), classes cut to the BMP."""
        from toktools.models.bpe import bytelevel
        from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

        letter, number, space = (_bmp_class(r) for r in (LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES))
        return bytelevel._gpt2_pattern(letter, number, space)

    def full(self) -> re.Pattern[str]:
        """The same pattern with every range (astral ones too), built on first need: ``re``
        scans astral ranges one by one, so it is only for text that holds such characters."""
        if self._full is None:
            from toktools.models.bpe import bytelevel
            from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES

            char_class = bytelevel._char_class
            self._full = re.compile(
                bytelevel._gpt2_pattern(char_class(LETTER_RANGES), char_class(NUMBER_RANGES), char_class(SPACE_RANGES))
            )
        return self._full

    def __call__(self, text: str) -> list[str]:
        if self.add_prefix_space and text and not text.startswith(" "):
            text = " " + text
        if not self.use_regex:
            return [text] if text else []
        if text.isascii() or not ASTRAL.search(text):
            return self.bmp.findall(text)
        return self.full().findall(text)


class BertWords:
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
        if normalized.isascii() or not ASTRAL.search(normalized):
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
#: :class:`CutPoints` (~0.1 s per vocabulary; then runs of CJK text are merged in parts that
#: repeat): the same ids either way, so a short job, such as a ``--verify`` checker's few
#: texts, never pays for them.
CUTS_AFTER_SECONDS = 0.1


def _utf8_length(lead: int) -> int:
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


class CutPoints:
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
        self.crossable = WordCache(self._crossable_pair)  # type: ignore[arg-type]

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


class ByteLevelBPE:
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
        self._cuts: CutPoints | None = None
        self.parts = WordCache(self.merge)
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
        with no cut point and the parts of the others not seen before (see :class:`CutPoints`;
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

    def cut_points(self) -> CutPoints:
        if self._cuts is None:
            self._cuts = CutPoints(self._results())
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


def byte_level_ready(model: Any) -> bool:
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
    foreign = re.compile(f"[^{re.escape(''.join(SYMBOL_TO_BYTE))}]")  # one C scan, not a set of 300K characters
    holding = _tokens_matching(vocab, foreign)
    if len(holding) > _FEW_FOREIGN_TOKENS:
        return foreign.search("".join(chain.from_iterable(model.merges))) is None
    return not any(map(_made_by_a_merge(model), holding))


#: Above this many vocabulary tokens holding other characters, the merges are scanned instead.
_FEW_FOREIGN_TOKENS = 1_000


def _tokens_matching(vocab: Any, pattern: re.Pattern[str]) -> list[str]:
    """The tokens of ``vocab`` in which ``pattern`` matches (one scan of them joined)."""
    joined = "".join(vocab)
    starts = [match.start() for match in pattern.finditer(joined)]
    if not starts:
        return []
    ends = list(accumulate(map(len, vocab)))
    tokens = list(vocab)
    return list(dict.fromkeys(tokens[bisect_right(ends, start)] for start in starts))


def _made_by_a_merge(model: Any) -> Callable[[str], bool]:
    """Whether a merge makes ``token``. Every merge's pieces are byte symbols exactly when no
    token holding another character is made by a merge: a piece holding one makes a result
    holding it, and every result is a token (and the only token of its id, checked first)."""
    vocab, merge_map = model.vocab, model.merge_map

    def made(token: str) -> bool:
        wanted = vocab[token]
        for cut in range(1, len(token)):
            left, right = vocab.get(token[:cut]), vocab.get(token[cut:])
            if left is not None and right is not None and merge_map.get((left, right), (0, -1))[1] == wanted:
                return True
        return False

    return made
