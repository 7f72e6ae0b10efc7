"""The BPE merge engine: the trainer (read :mod:`toktools.models.bpe.naive` first, the same algorithm
in its plainest form, which this engine is tested against).

One engine serves both tokenizers of the project: byte-level BPE trains it on byte-symbol words,
WordPiece on normalised words with a ``##`` continuing-subword prefix. It reproduces
``tokenizers``' ``BpeTrainer`` (0.23.3) choice for choice; the numbered steps below follow
``shared/spec/bytelevel-bpe.md`` §5–§6.

Data structures (what makes it fast in pure Python):

* words are strings with one character per symbol id (``chr(id)``), so ``replace``, ``split``
  and ``count`` rewrite words and find what surrounds a merged pair at C speed;
* pairs are two-character strings, whose natural order is the ``(left id, right id)`` order
  that breaks ties;
* a max-heap with lazy invalidation: an entry whose count is stale is pushed back with the
  current count when it reaches the top, exactly as ``tokenizers`` does;
* the merge loop (:class:`_LeanEngine`) runs no Python code per word or per occurrence of a
  pair (but for words seen more than once): ``map`` over C functions, ``str.join``/``split``
  and ``Counter`` do that work, and Python runs per *distinct* neighbouring symbol. A pair's
  positions (the words that contain it) are not stored but found again, when it is merged,
  from a record of the merge that formed it. :class:`_ExactEngine`, a literal port, covers
  the rare runs where a merge reuses a token string.

Applying trained merges to a word lives in :mod:`toktools.models.bpe.merges`; ``vocab.json`` /
``merges.txt`` in :mod:`toktools.models.bpe.files` (both re-exported here for older imports).
"""

from __future__ import annotations

import heapq
import itertools
import math
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, islice, pairwise, repeat
from operator import add, and_, ge, getitem, neg, sub
from typing import Generic, TypeVar

from toktools.errors import ToktoolsError
from toktools.models.bpe.files import (  # noqa: F401  re-exported
    MERGES_HEADER,
    dumps_merges_txt,
    dumps_vocab_json,
    loads_merges_txt,
    loads_vocab_json,
    read_text_file,
)
from toktools.models.bpe.merges import MergeMap, Pair, build_merge_map, merge_symbols  # noqa: F401  re-exported


@dataclass
class BpeTrainerConfig:
    """The options of ``tokenizers.trainers.BpeTrainer``, with its defaults."""

    vocab_size: int = 30000
    min_frequency: int = 0
    special_tokens: Sequence[str] = ()
    limit_alphabet: int | None = None
    initial_alphabet: Sequence[str] = ()
    continuing_subword_prefix: str | None = None
    end_of_word_suffix: str | None = None
    max_token_length: int | None = None
    #: Forced order (for parity tests): the exact alphabet to use, in id order, instead of
    #: computing it; and the order in which prefixed/suffixed symbols (``##c``) get their ids.
    forced_alphabet: Sequence[str] | None = None
    forced_symbol_order: Sequence[str] | None = None


@dataclass
class BpeTrainingResult:
    """What training produces: the id-ordered vocabulary and the merges in rank order."""

    vocab: list[str]
    merges: list[tuple[str, str]]
    alphabet_size: int
    #: The count of each recorded merge (same order as ``merges``), for reports.
    merge_counts: list[int] = field(default_factory=list)
    #: Why merging stopped: "size" (the vocabulary is full), "min_frequency" (the best pair is
    #: rarer than it), "no_pairs" (every word is a single token).
    stop_reason: str = "size"
    #: Characters of the corpus left out of the alphabet by ``limit_alphabet``, and the share of
    #: character occurrences they account for (they become unknown / are skipped).
    dropped_characters: int = 0
    dropped_share: float = 0.0
    #: The share of word occurrences that are one character (Chinese text to BERT's
    #: pre-tokeniser): merges cannot add tokens there, only the alphabet can (reported with
    #: the dropped characters, when those matter).
    single_character_share: float = 0.0

    def vocab_dict(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(self.vocab)}


ProgressCallback = Callable[[int, int], None]  # (merges done, merges planned)


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def compute_alphabet(
    word_counts: Mapping[str, int],
    initial_alphabet: Iterable[str] = (),
    limit_alphabet: int | None = None,
) -> list[str]:
    """The characters that become single-character tokens, sorted by code point.

    Every character of the corpus plus the first character of each ``initial_alphabet`` entry.
    With ``limit_alphabet``, the least frequent characters are dropped (initial ones count as
    infinitely frequent). ``tokenizers`` breaks ties at that cut in random hash order; we keep
    the more frequent character and, on equal frequency, the lower code point — deterministic.
    """
    initial = {s[0] for s in initial_alphabet if s}
    if limit_alphabet is None:
        seen = set("".join(word_counts)) | initial
        return sorted(seen)
    frequency: dict[str, int | float] = {}
    for word, count in word_counts.items():
        for ch in word:
            frequency[ch] = frequency.get(ch, 0) + count
    for ch in initial:
        frequency[ch] = math.inf
    if len(frequency) > limit_alphabet:
        ranked = sorted(frequency, key=lambda ch: (-frequency[ch], ord(ch)))
        frequency = {ch: frequency[ch] for ch in ranked[:limit_alphabet]}
    return sorted(frequency)


class _Vocab:
    """Token strings ↔ ids, growing by appending; a string is never added twice."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.ids: dict[str, int] = {}

    def add(self, token: str) -> int:
        found = self.ids.get(token)
        if found is not None:
            return found
        self.ids[token] = len(self.tokens)
        self.tokens.append(token)
        return len(self.tokens) - 1


def _encode_words(
    word_counts: Mapping[str, int], vocab: _Vocab, config: BpeTrainerConfig
) -> tuple[list[str], list[int]]:
    """Each word as a string of symbol ids (``chr(id)`` per symbol); characters outside the
    alphabet are silently skipped.

    Ids as characters let the merge loop find, replace and slice with ``str`` methods at C
    speed, and two-character strings compare exactly like ``(left id, right id)`` tuples.
    With a continuing-subword prefix (``##``) or end-of-word suffix, a character gets its
    decorated form by its position in the *original* word; decorated forms get ids on first
    sight, in the order of ``word_counts`` (first occurrence in the corpus).
    """
    if config.forced_symbol_order:
        for symbol in config.forced_symbol_order:
            vocab.add(symbol)
    prefix = config.continuing_subword_prefix
    suffix = config.end_of_word_suffix
    alphabet = vocab.ids
    counts = list(word_counts.values())
    if not prefix and not suffix:
        # one str.translate per word: alphabet characters -> id characters, others deleted
        table: dict[int, str | None] = {ord(ch): chr(i) for ch, i in alphabet.items() if len(ch) == 1}
        if config.limit_alphabet is not None or config.forced_alphabet is not None:
            # (otherwise the alphabet has every character of the corpus)
            for ch in set("".join(word_counts)):
                table.setdefault(ord(ch), None)
        return [word.translate(table) for word in word_counts], counts
    if prefix and not suffix:
        return _encode_prefixed(word_counts, vocab, prefix), counts
    words = [
        "".join(chr(vocab.add(symbol)) for ch, symbol in decorated(word, prefix, suffix) if ch in alphabet)
        for word in word_counts
    ]
    return words, counts


def _encode_prefixed(word_counts: Mapping[str, int], vocab: _Vocab, prefix: str) -> list[str]:
    """:func:`_encode_words` with a continuing-subword prefix only (WordPiece), by two
    ``str.translate`` tables: first characters to their ids, the others to the ids of their
    prefixed forms, which get ids in the order of their first occurrence after a word's first
    position (as the per-character loop gives them)."""
    single = {ch: i for ch, i in vocab.ids.items() if len(ch) == 1}
    later = dict.fromkeys("".join([word[1:] for word in word_counts]))
    first_table: dict[int, str | None] = {ord(ch): chr(i) for ch, i in single.items()}
    later_table: dict[int, str | None] = {ord(ch): chr(vocab.add(prefix + ch)) for ch in later if ch in single}
    for ch in set("".join([word[:1] for word in word_counts])):
        first_table.setdefault(ord(ch), None)
    for ch in later:
        later_table.setdefault(ord(ch), None)
    return [word[:1].translate(first_table) + word[1:].translate(later_table) for word in word_counts]


def decorated(word: str, prefix: str | None, suffix: str | None) -> Iterator[tuple[str, str]]:
    """Each character of ``word`` with the symbol the trainer and the model make of it:
    ``prefix + c`` after the first position, ``c + suffix`` at the last — by position in the
    original word, even when characters outside the alphabet are then dropped."""
    last = len(word) - 1
    for position, ch in enumerate(word):
        symbol = prefix + ch if prefix and position else ch
        yield ch, (symbol + suffix if suffix and position == last else symbol)


class _DuplicateToken(Exception):
    """A merge produced a token string that is already in the vocabulary (see :func:`train_bpe`)."""


def train_bpe(
    word_counts: Mapping[str, int],
    config: BpeTrainerConfig,
    progress: ProgressCallback | None = None,
) -> BpeTrainingResult:
    """Learn merges from ``word -> count`` exactly as ``tokenizers``' ``BpeTrainer`` does.

    Where numba is installed, the merge loop runs compiled
    (:mod:`toktools.models.bpe.compiled_training`), on the lean engine's assumption below,
    checked on its result (a duplicate token string sends training to :class:`_ExactEngine`).
    Otherwise two Python engines run it. :class:`_LeanEngine`, the fast one, relies on a fact that
    holds unless a merge produces a token string already in the vocabulary (``ab`` + ``c``
    after ``a`` + ``bc``): a pair is only ever counted up in one merge, the one that creates
    its newer symbol (or at the start). That never happened on our corpora (spec §6); when it
    does, the lean engine gives up and training starts over with :class:`_ExactEngine`, a
    literal port of ``tokenizers``' loop with its per-entry position sets (``progress`` then
    counts from 0 again).
    """
    from toktools.models.bpe.compiled_training import compiled_trainer_available

    try:  # None: the compiled loop, or the lean engine where there is no kernel (_train decides)
        return _train(word_counts, config, progress, None if compiled_trainer_available() else _LeanEngine)
    except _DuplicateToken:
        return _train(word_counts, config, progress, _ExactEngine)


class _NoKernel(Exception):
    """The compiled merge loop cannot run here (no numba, or turned off)."""


def _train(
    word_counts: Mapping[str, int],
    config: BpeTrainerConfig,
    progress: ProgressCallback | None,
    engine_class: type[_LeanEngine] | type[_ExactEngine] | None,
) -> BpeTrainingResult:
    """The trainer around a merge engine: vocabulary, merge choice, result. ``engine_class``
    None: the compiled merge loop (:mod:`toktools.models.bpe.compiled_training`), or the lean
    engine on the same words where it cannot run (:class:`_NoKernel`)."""
    vocab = _Vocab()
    # 1. Special tokens first, in the given order (a repeated one is skipped).
    for token in config.special_tokens:
        vocab.add(token)
    # 2. The alphabet, by code point.
    if config.forced_alphabet is not None:
        alphabet = list(config.forced_alphabet)
    else:
        alphabet = compute_alphabet(word_counts, config.initial_alphabet, config.limit_alphabet)
    for ch in alphabet:
        vocab.add(ch)
    alphabet_size = len(vocab.tokens) - len(set(config.special_tokens))
    # 3. Words as strings of symbol ids; 4. pair counts and the queue.
    words, counts = _encode_words(word_counts, vocab, config)
    threshold = max(config.min_frequency, 1)  # the lowest count that can be merged
    lengths = [1] * len(vocab.tokens)  # length of each token in initial symbols
    merges: list[str] = []
    merge_counts: list[int] = []
    if engine_class is None:
        try:
            merges, merge_counts, stop_reason = _compiled_loop(
                words, counts, vocab, lengths, config, threshold, progress
            )
        except _NoKernel:  # the same words, the vocabulary untouched: the lean engine takes over
            engine_class = _LeanEngine
    if engine_class is not None:
        stop_reason = _python_loop(
            engine_class(words, counts, threshold, max(len(vocab.tokens), config.vocab_size)),
            vocab,
            lengths,
            config,
            threshold,
            merges,
            merge_counts,
            progress,
        )
    del words, counts

    # The model keeps the last rank of a pair merged twice; the file lists pairs by rank.
    last_rank = {pair: rank for rank, pair in enumerate(merges)}
    kept = [rank for rank, pair in enumerate(merges) if last_rank[pair] == rank]
    tokens = vocab.tokens
    dropped, dropped_share, single_share = 0, 0.0, 0.0
    if stop_reason != "size" and config.limit_alphabet is not None:  # only explained when it matters
        dropped, dropped_share, single_share = _alphabet_shortfall(word_counts, alphabet)
    return BpeTrainingResult(
        vocab=tokens,
        merges=[(tokens[ord(merges[r][0])], tokens[ord(merges[r][1])]) for r in kept],
        alphabet_size=alphabet_size,
        merge_counts=[merge_counts[r] for r in kept],
        stop_reason=stop_reason,
        dropped_characters=dropped,
        dropped_share=dropped_share,
        single_character_share=single_share,
    )


def _compiled_loop(
    words: list[str],
    counts: list[int],
    vocab: _Vocab,
    lengths: list[int],
    config: BpeTrainerConfig,
    threshold: int,
    progress: ProgressCallback | None,
) -> tuple[list[str], list[int], str]:
    """5. The merge loop, compiled: ``(merges as id pairs, their counts, stop reason)``. The
    kernel assumes each merge makes a new token string; a merge that does not raises
    :class:`_DuplicateToken` (the caller then runs the exact engine)."""
    from toktools.models.bpe.compiled_training import train_merges

    max_length = config.max_token_length or math.inf
    learnt = train_merges(words, counts, lengths, config.vocab_size, threshold, max_length)
    if learnt is None:
        raise _NoKernel
    prefix = config.continuing_subword_prefix
    tokens = vocab.tokens
    first_new = len(tokens)
    planned = max(config.vocab_size - first_new, 0)
    strip = len(prefix) if prefix else 0
    lefts, rights = learnt.lefts, learnt.rights
    append = tokens.append
    if strip:
        for left, right in zip(lefts, rights):
            right_part = tokens[right]
            append(tokens[left] + (right_part[strip:] if right_part.startswith(prefix) else right_part))  # type: ignore[arg-type]
    else:
        _consume(map(append, map(add, map(tokens.__getitem__, lefts), map(tokens.__getitem__, rights))))
    vocab.ids.update(zip(islice(tokens, first_new, None), itertools.count(first_new)))
    if len(vocab.ids) != len(tokens):  # a merge made a token string that was already there
        raise _DuplicateToken
    merges = list(map(add, map(chr, lefts), map(chr, rights)))
    if progress is not None:
        _consume(map(progress, range(1, len(merges) + 1), repeat(planned)))
    stop_reason = "size" if len(vocab.ids) >= config.vocab_size else "no_pairs"
    return merges, learnt.counts, stop_reason


def _python_loop(
    engine: _LeanEngine | _ExactEngine,
    vocab: _Vocab,
    lengths: list[int],
    config: BpeTrainerConfig,
    threshold: int,
    merges: list[str],
    merge_counts: list[int],
    progress: ProgressCallback | None,
) -> str:
    """5. The merge loop in Python, filling ``merges`` and ``merge_counts``; returns the stop reason."""
    max_length = config.max_token_length or math.inf
    prefix = config.continuing_subword_prefix
    planned = max(config.vocab_size - len(vocab.tokens), 0)
    stop_reason = "size"
    while len(vocab.ids) < config.vocab_size:
        top = engine.pop()
        if top is None:
            stop_reason = "no_pairs"
            break
        pair, count = top
        if count < threshold:
            stop_reason = "min_frequency"
            break
        left, right = ord(pair[0]), ord(pair[1])
        right_part = vocab.tokens[right]
        if prefix and right_part.startswith(prefix):
            right_part = right_part[len(prefix) :]
        size_before = len(vocab.tokens)
        new_id = vocab.add(vocab.tokens[left] + right_part)
        if new_id == size_before:
            lengths.append(lengths[left] + lengths[right])
            engine.merge(pair, chr(new_id), lengths, max_length)
        else:  # the token string already existed: it may already occur in the words
            engine.merge_existing(pair, chr(new_id), lengths, max_length)
        merges.append(pair)
        merge_counts.append(count)
        if progress is not None:
            progress(len(merges), planned)
    return stop_reason


def _alphabet_shortfall(word_counts: Mapping[str, int], alphabet: Sequence[str]) -> tuple[int, float, float]:
    """How many distinct characters of the corpus are not in ``alphabet``, the share of
    character occurrences they make up, and the share of word occurrences that are a single
    character."""
    frequency: dict[str, int] = {}
    words = single = 0
    for word, count in word_counts.items():
        words += count
        if len(word) == 1:
            single += count
        for ch in word:
            frequency[ch] = frequency.get(ch, 0) + count
    kept = set(alphabet)
    total = sum(frequency.values())
    missing = {ch: n for ch, n in frequency.items() if ch not in kept}
    return len(missing), (sum(missing.values()) / total if total else 0.0), (single / words if words else 0.0)


def _consume(iterator: Iterable[object]) -> None:
    """Run an iterator for its side effects, at C speed."""
    deque(iterator, maxlen=0)


def _separator(bound: int) -> str:
    """A character that is no symbol id (every id is below ``bound``), to join words with.

    It stays in the Basic Multilingual Plane while the ids do, so that joined strings keep
    two bytes per character.
    """
    if bound < 0xFFFF:
        return "\uffff"
    if bound < 0x10FFFF:
        return "\U0010ffff"
    raise ToktoolsError(f"vocabulary too large for the merge engine: {bound} ids")


def _count_pairs(words: list[str], counts: list[int], separator: str) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Initial pair counts and, per pair, the words that contain it (``tokenizers``' ``pos``).

    Each list is sorted and names a word once per occurrence of the pair (so it may repeat
    an index). All words joined with ``separator`` give every adjacent pair, plus pairs that
    straddle two words (those contain the separator and are dropped); listing the word of
    each pair through ``map(list.append, …)`` runs at C speed. A pair's count is the length of
    its list, plus ``count - 1`` per occurrence in a word of count above 1: ``Counter`` tallies
    those, one group of equal counts at a time.
    """
    found: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    joined = separator.join(words) + separator
    # a word of n symbols owns n + 1 pairs: n - 1 inner ones, (last, separator) and
    # (separator, first symbol of the next word)
    owners = chain.from_iterable(map(repeat, range(len(words)), map(add, map(len, words), repeat(1))))
    # (tuples of one-character strings hash faster than new two-character strings)
    _consume(map(list.append, map(found.__getitem__, pairwise(joined)), owners))
    del joined
    where = {left + right: owners for (left, right), owners in found.items() if separator not in (left, right)}
    pair_counts = {pair: len(owners) for pair, owners in where.items()}
    heavy: defaultdict[int, list[str]] = defaultdict(list)
    for word, count in zip(words, counts):
        if count != 1:
            heavy[count].append(word)
    for count, group in heavy.items():
        joined = separator.join(group)
        for pair, occurrences in Counter(map(add, joined, islice(joined, 1, None))).items():
            if separator not in pair:
                pair_counts[pair] += (count - 1) * occurrences
    return pair_counts, where


#: what a queue entry carries about where its pair occurs (see the engines)
Positions = TypeVar("Positions")


class _Queue(Generic[Positions]):
    """``tokenizers``' priority queue of merge candidates, with its lazy invalidation.

    An entry is ``(-count, pair, serial, positions)``: the highest count first, then the
    smallest pair (two-character pairs compare like ``(left id, right id)``). The serial, a
    push counter (also on a push back), orders two entries of the same pair and count, which
    only a duplicate token string creates: the one pushed first comes out first. In
    ``tokenizers`` that order depends on the heap's layout, itself seeded by hash-map order,
    so its output then varies from run to run; first-pushed-first is what its binary heap
    does when the two meet (an entry sifting up stops under an equal one). The serial also
    keeps ``heapq`` from comparing positions, and with no two entries equal, any valid heap
    pops them in the same order.

    ``floor``: entries below it are not added. ``drop_stale``: a stale entry whose current
    count is below ``floor`` is dropped rather than pushed back (see :class:`_LeanEngine`).
    """

    def __init__(self, floor: int, drop_stale: bool) -> None:
        self.floor = floor
        self.drop_stale = drop_stale
        self.heap: list[tuple[int, str, int, Positions]] = []
        self.serials = itertools.count()

    def add(self, pairs: list[str], positions: Iterable[Positions], pair_counts: Mapping[str, int]) -> None:
        """New entries for those ``pairs`` whose current count is at least ``floor``."""
        counts = list(map(pair_counts.__getitem__, pairs))
        wanted = list(map(ge, counts, repeat(self.floor)))
        entries = zip(
            map(neg, compress(counts, wanted)), compress(pairs, wanted), self.serials, compress(positions, wanted)
        )
        heap = self.heap
        if len(heap) < len(pairs):  # cheaper to heapify everything again than to push one by one
            heap.extend(entries)
            heapq.heapify(heap)
        else:
            _consume(map(heapq.heappush, repeat(heap), entries))

    def pop(self, pair_counts: Mapping[str, int]) -> tuple[str, int, Positions] | None:
        """The next current entry as ``(pair, count, positions)``, or None when empty."""
        heap = self.heap
        while heap:
            neg_count, pair, serial, positions = heap[0]
            current = pair_counts.get(pair, 0)
            if -neg_count == current:
                heapq.heappop(heap)
                return pair, current, positions
            if current >= self.floor or not self.drop_stale:  # stale: push back, current count
                heapq.heapreplace(heap, (-current, pair, next(self.serials), positions))
            else:
                heapq.heappop(heap)
        return None


_LAST = slice(-1, None)
_FIRST = slice(0, 1)
_FEW = 32  # below this many words or occurrences, plain Python loops beat the bulk steps


class _LeanEngine:
    """The fast merge engine, exact as long as no merge reuses a token string.

    It rests on this: without duplicate token strings a pair is counted up only in the merge
    that creates its newer symbol (or at the start), and only goes down afterwards. Hence:

    * Pairs below ``min_frequency`` when formed can never be merged: they are not tracked at
      all (no count, no queue entry). ``tokenizers`` keeps them, but they could only come out
      of its heap once everything above is gone, and then it stops at the first current entry
      (below ``min_frequency``) after pushing back stale ones, i.e. with no further merge:
      stopping when our heap runs dry is the same.
    * Each pair has one queue entry, whose position set ``tokenizers`` fills with the words
      where the pair was counted up, in that one merge. We find the same words when the pair
      is merged, from the pair alone: the merge that created its newer symbol ``s`` recorded,
      per occurrence of ``s``, the symbols on each side (as ``tokenizers`` saw them: ``s`` for
      a touching occurrence before, the pair's left symbol after) and the word (``steps``).
      ``(x, s)`` was counted up where ``x`` preceded ``s``, ``(s, y)`` where ``y`` followed it;
      ``str.split`` finds those occurrences at C speed. So queue entries carry no positions
      (initial pairs carry their lists), and the sets are exactly ``tokenizers``' — listed
      once per occurrence and in increasing order, which :meth:`merge` relies on.
    * Like ``tokenizers``, a merge visits words that may have lost the pair since; rewriting
      such a word finds nothing and changes nothing.

    Words are reordered, count-1 words first (most Chinese clauses), so that the words of a
    merge, visited in index order, come split in two runs: one whose updates ``Counter``
    tallies at C speed, and the heavier words, which take a Python step per occurrence.

    A merge that reuses a token string raises :class:`_DuplicateToken`.
    """

    def __init__(self, words: list[str], counts: list[int], threshold: int, bound: int) -> None:
        light = [word for word, count in zip(words, counts) if count == 1]
        self.heavy_from = len(light)  # words from this index on have a count above 1
        self.words = light + [word for word, count in zip(words, counts) if count != 1]
        self.counts = [1] * len(light) + [count for count in counts if count != 1]
        self.keep = threshold
        self.separator = _separator(bound)
        self.pair_counts, where = _count_pairs(self.words, self.counts, self.separator)
        for pair in [pair for pair, count in self.pair_counts.items() if count < threshold]:
            del self.pair_counts[pair], where[pair]
        # initial pairs carry their word lists, formed pairs None (see the class doc)
        self.queue: _Queue[list[int] | None] = _Queue(threshold, drop_stale=True)
        self.queue.add(list(where), where.values(), self.pair_counts)
        #: symbol id -> (symbols before each occurrence, symbols after, word of each occurrence)
        self.steps: dict[int, tuple[str, str, array]] = {}
        self.positions: Iterable[int] = ()

    def pop(self) -> tuple[str, int] | None:
        top = self.queue.pop(self.pair_counts)
        if top is None:
            return None
        pair, count, positions = top
        self.positions = positions if positions is not None else self._formed_in(pair)
        return pair, count

    def _formed_in(self, pair: str) -> Iterable[int]:
        """The words where ``pair`` was formed, one entry per occurrence (see class doc)."""
        left, right = pair[0], pair[1]
        if right >= left:  # formed when ``right`` was created, after ``left``
            before, _after, owners = self.steps[ord(right)]
            side, symbol = before, left
        else:
            _before, after, owners = self.steps[ord(left)]
            side, symbol = after, right
        pieces = side.split(symbol)
        # occurrence k = len(piece 0) + 1 + ... + len(piece k): the number of symbols before it
        at = accumulate(map(add, map(len, pieces), repeat(1)), initial=-1)
        return map(owners.__getitem__, islice(at, 1, len(pieces)))

    def merge_existing(self, pair: str, new: str, lengths: list[int], max_length: float) -> None:
        raise _DuplicateToken

    def merge(self, pair: str, new: str, lengths: list[int], max_length: float) -> None:
        """Replace ``pair`` by the brand-new symbol ``new`` in the words that contain it.

        ``tokenizers`` rewrites each word left to right, non-overlapping — what ``str.replace``
        does — and for each occurrence, with ``c`` the word's count, applies: previous symbol
        ``p`` (already rewritten, so ``new`` if the previous occurrence touches this one):
        ``(p, left) -= c`` and ``(p, new) += c``; following symbol ``n`` (not yet rewritten,
        so ``left`` if the next occurrence touches this one): ``(right, n) -= c`` and
        ``(new, n) += c``. A pair is counted up only if its token would be shorter than
        ``max_length`` (strict ``<``). So each side of each occurrence comes down to a symbol
        and a count, and :meth:`_settle` applies the updates in bulk.
        """
        # Positions come sorted, a word once per occurrence of the pair. Visiting words in
        # index order keeps memory access local, and puts heavy words last.
        todo = list(dict.fromkeys(self.positions))
        if len(todo) < _FEW:
            occurrences = self._visit_few(todo, pair, new)
        else:
            occurrences = self._visit_many(todo, pair, new)
        before, after, owners, light, weights = occurrences
        if not owners:
            return
        new_length = lengths[ord(new)]
        fits = None if max_length == math.inf else (lambda symbol: lengths[ord(symbol)] + new_length < max_length)
        # The following side first: for touching occurrences it forms (new, left), which the
        # previous side then counts down again (the two cancel out, as in tokenizers).
        formed = self._settle(after, light, weights, pair[1], new, fits, following=True)
        formed += self._settle(before, light, weights, pair[0], new, fits, following=False)
        if formed:
            self.steps[ord(new)] = (before, after, owners)
            self.queue.add(formed, repeat(None), self.pair_counts)

    def _visit_many(self, todo: list[int], pair: str, new: str) -> tuple[str, str, array, int, list[int]]:
        """Rewrite the words of ``todo``; per occurrence of ``new``: the symbol before it and the
        symbol after it (as two strings), and its word; then how many occurrences are in words
        of count 1 (they come first), and the word counts of the other occurrences.

        In bulk, with no Python code per word or occurrence. Each word is rewritten and stored
        back in the same pass, so that the new string often reuses the memory of the old one.
        The rewritten words are joined by the separator and split at ``new`` (which occurs
        nowhere else, its id being brand new): piece ``k`` ends with the symbol before
        occurrence ``k`` and piece ``k + 1`` starts with the one after it; an empty piece
        means touching occurrences, the separator the edge of a word. A word that no longer
        contains the pair is rewritten to itself and counts no occurrence.
        """
        words, separator = self.words, self.separator
        _consume(
            map(words.__setitem__, todo, map(str.replace, map(words.__getitem__, todo), repeat(pair), repeat(new)))
        )
        rewritten = list(map(words.__getitem__, todo))
        joined = separator.join(chain(("",), rewritten, ("",)))
        pieces = joined.split(new)
        before: list[str] = list(map(getitem, pieces, repeat(_LAST, len(pieces) - 1)))
        after: list[str] = list(map(getitem, islice(pieces, 1, None), repeat(_FIRST)))
        if new + new in joined:  # touching occurrences: name the symbol next to each
            before = list(map({"": new}.get, before, before))
            after = list(map({"": pair[0]}.get, after, after))
        per_word = list(map(str.count, rewritten, repeat(new)))
        owners = array("I", chain.from_iterable(map(repeat, todo, per_word)))
        heavy = bisect_left(todo, self.heavy_from)
        light = sum(islice(per_word, heavy))
        weights = list(
            chain.from_iterable(
                map(repeat, map(self.counts.__getitem__, islice(todo, heavy, None)), islice(per_word, heavy, None))
            )
        )
        return "".join(before), "".join(after), owners, light, weights

    def _visit_few(self, todo: list[int], pair: str, new: str) -> tuple[str, str, array, int, list[int]]:
        """:meth:`_visit_many` one occurrence at a time, faster for a handful of words."""
        words, counts, separator, heavy_from = self.words, self.counts, self.separator, self.heavy_from
        left = pair[0]
        before: list[str] = []
        after: list[str] = []
        owners = array("I")
        weights: list[int] = []
        for index in todo:
            word = words[index].replace(pair, new)
            words[index] = word
            at = word.find(new)
            while at >= 0:
                before.append(word[at - 1] if at else separator)
                symbol = word[at + 1 : at + 2] or separator
                after.append(left if symbol == new else symbol)
                owners.append(index)
                if index >= heavy_from:
                    weights.append(counts[index])
                at = word.find(new, at + 1)
        return "".join(before), "".join(after), owners, len(owners) - len(weights), weights

    def _settle(
        self,
        neighbours: str,
        light: int,
        weights: list[int],
        old: str,
        new: str,
        fits: Callable[[str], bool] | None,
        following: bool,
    ) -> list[str]:
        """Apply the updates of one side of the occurrences of a merged pair.

        ``neighbours`` has the symbol ``s`` on that side of each occurrence, the first
        ``light`` of weight 1, the others weighing ``weights``; ``old`` is the pair's symbol on
        that side. Following side: ``(old, s)`` is counted down and ``(new, s)`` formed;
        previous side: ``(s, old)`` down and ``(s, new)`` formed. ``Counter`` adds the
        weights per distinct ``s``, then each costs a few C-level dictionary operations.

        Formed pairs are brand new (they contain ``new``). Those below ``keep`` are not
        tracked; a pair is counted down only if tracked. Returns the formed pairs kept.
        """
        pair_counts, keep = self.pair_counts, self.keep
        if len(neighbours) <= _FEW:  # a handful: plain Python is quicker than the bulk steps
            weight: dict[str, int] = {}
            for symbol, amount in zip(neighbours, chain(repeat(1, light), weights)):
                weight[symbol] = weight.get(symbol, 0) + amount
            weight.pop(self.separator, None)  # the edge of a word: no pair
            formed: list[str] = []
            for symbol, amount in weight.items():
                down = old + symbol if following else symbol + old
                if down in pair_counts:
                    pair_counts[down] -= amount
                if amount >= keep and (fits is None or fits(symbol)):
                    up = new + symbol if following else symbol + new
                    pair_counts[up] = amount
                    formed.append(up)
            return formed

        weight = Counter(neighbours[:light])
        for symbol, amount in zip(neighbours[light:], weights):
            weight[symbol] += amount
        weight.pop(self.separator, None)  # the edge of a word: no pair
        symbols = list(weight)
        amounts = list(weight.values())
        if following:
            lost = list(map(add, repeat(old), symbols))
        else:
            lost = list(map(add, symbols, repeat(old)))
        tracked = list(map(pair_counts.__contains__, lost))
        lost = list(compress(lost, tracked))
        pair_counts.update(zip(lost, map(sub, map(pair_counts.__getitem__, lost), compress(amounts, tracked))))

        kept = list(map(ge, amounts, repeat(keep)))
        if fits is not None:
            kept = list(map(and_, kept, map(fits, symbols)))
        kept_symbols = compress(symbols, kept)
        if following:
            gained = list(map(add, repeat(new), kept_symbols))
        else:
            gained = list(map(add, kept_symbols, repeat(new)))
        pair_counts.update(zip(gained, compress(amounts, kept)))
        return gained


class _ExactEngine:
    """A literal port of ``tokenizers``' merge loop, for the rare runs where a merge reuses a
    token string: every entry keeps its own position set, stale entries are always pushed
    back, nothing is left out (``threshold`` is not used). Much slower than
    :class:`_LeanEngine`, but it follows ``tokenizers`` step by step in every case.

    Known gaps, both only after a duplicate token string: ``tokenizers`` orders equal entries
    by heap layout (see :class:`_Queue`), and it measures ``max_token_length`` on each symbol
    in a word, where a reused id may have been built from other parts; here a token's length
    is fixed when it is first created.
    """

    def __init__(self, words: list[str], counts: list[int], threshold: int, bound: int) -> None:
        self.words = words
        self.counts = counts
        self.pair_counts, where = _count_pairs(words, counts, _separator(bound))
        self.queue: _Queue[set[int]] = _Queue(1, drop_stale=False)
        self.positions: set[int] = set()
        self.queue.add(list(where), map(set, where.values()), self.pair_counts)

    def pop(self) -> tuple[str, int] | None:
        top = self.queue.pop(self.pair_counts)
        if top is None:
            return None
        pair, count, self.positions = top
        return pair, count

    def merge(self, pair: str, new: str, lengths: list[int], max_length: float) -> None:
        """Rewrite with ``str.replace``; since ``new`` occurs nowhere else, ``find`` then
        visits exactly the occurrences (updates as in :meth:`_LeanEngine.merge`)."""
        words, counts, pair_counts = self.words, self.counts, self.pair_counts
        formed: defaultdict[str, set[int]] = defaultdict(set)
        left, right = pair[0], pair[1]
        new_length = lengths[ord(new)]
        for index in self.positions:
            word = words[index].replace(pair, new)
            at = word.find(new)
            if at < 0:  # merged away since
                continue
            words[index] = word
            count = counts[index]
            last = len(word) - 1
            while at >= 0:
                if at:
                    before = word[at - 1]
                    pair_counts[before + left] = pair_counts.get(before + left, 0) - count
                    if lengths[ord(before)] + new_length < max_length:
                        pair_counts[before + new] = pair_counts.get(before + new, 0) + count
                        formed[before + new].add(index)
                if at < last:
                    after = word[at + 1]
                    if after == new:  # the next occurrence, not yet rewritten at this point
                        after = left
                    pair_counts[right + after] = pair_counts.get(right + after, 0) - count
                    if new_length + lengths[ord(after)] < max_length:
                        pair_counts[new + after] = pair_counts.get(new + after, 0) + count
                        formed[new + after].add(index)
                at = word.find(new, at + 1)
        self.queue.add(list(formed), formed.values(), pair_counts)

    def merge_existing(self, pair: str, new: str, lengths: list[int], max_length: float) -> None:
        """The merge for a symbol that may already occur in the words: ``tokenizers``'
        symbol-by-symbol rewrite, kept literal."""
        words, counts, pair_counts = self.words, self.counts, self.pair_counts
        formed: defaultdict[str, set[int]] = defaultdict(set)
        left, right = pair[0], pair[1]
        new_length = lengths[ord(new)]
        for index in self.positions:
            word = list(words[index])
            count = counts[index]
            i = 0
            while i < len(word) - 1:
                if word[i] == left and word[i + 1] == right:
                    if i > 0:
                        before = word[i - 1]
                        pair_counts[before + left] = pair_counts.get(before + left, 0) - count
                        if lengths[ord(before)] + new_length < max_length:
                            pair_counts[before + new] = pair_counts.get(before + new, 0) + count
                            formed[before + new].add(index)
                    word[i : i + 2] = [new]
                    if i + 1 < len(word):
                        after = word[i + 1]
                        pair_counts[right + after] = pair_counts.get(right + after, 0) - count
                        if new_length + lengths[ord(after)] < max_length:
                            pair_counts[new + after] = pair_counts.get(new + after, 0) + count
                            formed[new + after].add(index)
                i += 1
            words[index] = "".join(word)
        self.queue.add(list(formed), formed.values(), pair_counts)
