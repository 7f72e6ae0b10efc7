"""The BPE merge engine (trainer), the merge-applying encoder, and ``vocab.json``/``merges.txt`` I/O.

One engine serves both tokenizers of the project: byte-level BPE trains it on byte-symbol words,
WordPiece on normalised words with a ``##`` continuing-subword prefix. It reproduces
``tokenizers``' ``BpeTrainer`` (0.23.3) choice for choice; the numbered steps below follow
``shared/spec/bytelevel-bpe.md`` §5–§6.

Data structures (what makes it fast in pure Python):

* words are strings with one character per symbol id (``chr(id)``), so ``in``, ``replace`` and
  ``find`` locate and rewrite a pair at C speed: a merge costs Python time per *occurrence*,
  not per symbol of a long word (a Chinese clause is one long word);
* pairs are two-character strings, whose natural order is the ``(left id, right id)`` order
  that breaks ties;
* a pair → words index says which words a merge must visit;
* a max-heap with lazy invalidation: an entry whose count is stale is pushed back with the
  current count when it reaches the top, exactly as ``tokenizers`` does.
"""
from __future__ import annotations

import heapq
import json
import math
from collections import defaultdict
from operator import add
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from toktools.errors import ToktoolsError

Pair = tuple[int, int]
MergeMap = dict[Pair, tuple[int, int]]  # (left id, right id) -> (rank, new id)


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
        for ch in set("".join(word_counts)):
            table.setdefault(ord(ch), None)
        return [word.translate(table) for word in word_counts], counts
    words: list[str] = []
    for word in word_counts:
        ids = []
        last = len(word) - 1
        for position, ch in enumerate(word):
            if ch not in alphabet:
                continue
            symbol = ch
            if prefix and position > 0:
                symbol = prefix + symbol
            if suffix and position == last:
                symbol = symbol + suffix
            ids.append(chr(vocab.add(symbol)))
        words.append("".join(ids))
    return words, counts


def train_bpe(
    word_counts: Mapping[str, int],
    config: BpeTrainerConfig,
    progress: ProgressCallback | None = None,
) -> BpeTrainingResult:
    """Learn merges from ``word -> count`` exactly as ``tokenizers``' ``BpeTrainer`` does.

    Pairs are two-character strings ``chr(left) + chr(right)`` (see :func:`_encode_words`).
    """
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
    # 3. Words as strings of symbol ids.
    words, counts = _encode_words(word_counts, vocab, config)
    # 4. Pair counts and the pair -> words index.
    pair_counts: defaultdict[str, int] = defaultdict(int)
    where: defaultdict[str, list[int]] = defaultdict(list)
    for index, (word, count) in enumerate(zip(words, counts)):
        for pair in map(add, word, word[1:]):
            pair_counts[pair] += count
            where[pair].append(index)
    heap = [(-pair_counts[pair], pair, set(positions)) for pair, positions in where.items() if pair_counts[pair] > 0]
    del where
    heapq.heapify(heap)

    max_length = config.max_token_length or math.inf
    lengths = [1] * len(vocab.tokens)  # length of each token in initial symbols
    prefix = config.continuing_subword_prefix
    merges: list[str] = []
    merge_counts: list[int] = []
    planned = max(config.vocab_size - len(vocab.tokens), 0)

    # 5. The merge loop.
    while len(vocab.ids) < config.vocab_size and heap:
        neg_count, pair, positions = heap[0]
        current = pair_counts[pair]
        if -neg_count != current:  # stale: push back with the current count
            heapq.heapreplace(heap, (-current, pair, positions))
            continue
        heapq.heappop(heap)
        if current < 1 or current < config.min_frequency:
            break
        left, right = ord(pair[0]), ord(pair[1])
        right_part = vocab.tokens[right]
        if prefix and right_part.startswith(prefix):
            right_part = right_part[len(prefix):]
        size_before = len(vocab.tokens)
        new_id = vocab.add(vocab.tokens[left] + right_part)
        if new_id == size_before:
            lengths.append(lengths[left] + lengths[right])
            formed = _apply_merge(words, counts, positions, pair, chr(new_id), pair_counts, lengths, max_length)
        else:  # the token string already existed: it may already occur in the words
            formed = _apply_merge_existing(words, counts, positions, pair, chr(new_id), pair_counts, lengths, max_length)
        merges.append(pair)
        merge_counts.append(current)
        for new_pair, formed_in in formed.items():
            count = pair_counts[new_pair]
            if count > 0:
                heapq.heappush(heap, (-count, new_pair, formed_in))
        if progress is not None:
            progress(len(merges), planned)

    # The model keeps the last rank of a pair merged twice; the file lists pairs by rank.
    last_rank = {pair: rank for rank, pair in enumerate(merges)}
    kept = [rank for rank, pair in enumerate(merges) if last_rank[pair] == rank]
    tokens = vocab.tokens
    return BpeTrainingResult(
        vocab=tokens,
        merges=[(tokens[ord(merges[r][0])], tokens[ord(merges[r][1])]) for r in kept],
        alphabet_size=alphabet_size,
        merge_counts=[merge_counts[r] for r in kept],
    )


def _apply_merge(
    words: list[str],
    counts: list[int],
    positions: Iterable[int],
    pair: str,
    new: str,
    pair_counts: defaultdict[str, int],
    lengths: list[int],
    max_length: float,
) -> defaultdict[str, set[int]]:
    """Replace ``pair`` by the brand-new symbol ``new`` in the given words.

    ``str.replace`` rewrites left to right, non-overlapping — as ``tokenizers`` does — and,
    since ``new`` occurs nowhere else, ``find`` then visits exactly the occurrences. For each,
    with ``c`` the word's count, ``tokenizers`` applies: previous symbol ``p`` (already
    rewritten): ``(p, left) -= c``, ``(p, new) += c``; following symbol ``n`` (not yet
    rewritten): ``(right, n) -= c``, ``(new, n) += c``. A pair is only counted up if its token
    would be shorter than ``max_length`` (see :func:`_apply_merge_limited`). Returns, for each
    pair counted up, the words where it was formed.
    """
    formed: defaultdict[str, set[int]] = defaultdict(set)
    left, right = pair
    if max_length != math.inf:
        return _apply_merge_limited(words, counts, positions, pair, new, pair_counts, lengths, max_length)
    for index in positions:
        word = words[index].replace(pair, new)
        at = word.find(new)
        if at < 0:  # merged away by an earlier merge
            continue
        words[index] = word
        count = counts[index]
        last = len(word) - 1
        while at >= 0:
            if at:
                before = word[at - 1]
                pair_counts[before + left] -= count
                formed_pair = before + new
                pair_counts[formed_pair] += count
                formed[formed_pair].add(index)
            if at < last:
                after = word[at + 1]
                if after == new:  # the next occurrence, not yet rewritten at this point
                    after = left
                pair_counts[right + after] -= count
                formed_pair = new + after
                pair_counts[formed_pair] += count
                formed[formed_pair].add(index)
            at = word.find(new, at + 1)
    return formed


def _apply_merge_limited(
    words: list[str],
    counts: list[int],
    positions: Iterable[int],
    pair: str,
    new: str,
    pair_counts: defaultdict[str, int],
    lengths: list[int],
    max_length: float,
) -> defaultdict[str, set[int]]:
    """:func:`_apply_merge` with ``max_token_length``: a pair is only counted up if its token
    would be shorter than ``max_length`` (the strict ``<`` of ``tokenizers``)."""
    formed: defaultdict[str, set[int]] = defaultdict(set)
    left, right = pair
    new_length = lengths[ord(new)]
    for index in positions:
        word = words[index].replace(pair, new)
        at = word.find(new)
        if at < 0:
            continue
        words[index] = word
        count = counts[index]
        last = len(word) - 1
        while at >= 0:
            if at:
                before = word[at - 1]
                pair_counts[before + left] -= count
                if lengths[ord(before)] + new_length < max_length:
                    formed_pair = before + new
                    pair_counts[formed_pair] += count
                    formed[formed_pair].add(index)
            if at < last:
                after = word[at + 1]
                if after == new:
                    after = left
                pair_counts[right + after] -= count
                if new_length + lengths[ord(after)] < max_length:
                    formed_pair = new + after
                    pair_counts[formed_pair] += count
                    formed[formed_pair].add(index)
            at = word.find(new, at + 1)
    return formed


def _apply_merge_existing(
    words: list[str],
    counts: list[int],
    positions: Iterable[int],
    pair: str,
    new: str,
    pair_counts: defaultdict[str, int],
    lengths: list[int],
    max_length: float,
) -> defaultdict[str, set[int]]:
    """:func:`_apply_merge` for a symbol that may already occur in the words (a token string
    reachable from two pairs): ``tokenizers``' symbol-by-symbol rewrite, kept literal."""
    formed: defaultdict[str, set[int]] = defaultdict(set)
    left, right = pair
    new_length = lengths[ord(new)]
    for index in positions:
        word = list(words[index])
        count = counts[index]
        i = 0
        while i < len(word) - 1:
            if word[i] == left and word[i + 1] == right:
                if i > 0:
                    before = word[i - 1]
                    pair_counts[before + left] -= count
                    if lengths[ord(before)] + new_length < max_length:
                        pair_counts[before + new] += count
                        formed[before + new].add(index)
                word[i : i + 2] = [new]
                if i + 1 < len(word):
                    after = word[i + 1]
                    pair_counts[right + after] -= count
                    if new_length + lengths[ord(after)] < max_length:
                        pair_counts[new + after] += count
                        formed[new + after].add(index)
            i += 1
        words[index] = "".join(word)
    return formed


# ---------------------------------------------------------------------------------------------
# Encoding a word with a trained model
# ---------------------------------------------------------------------------------------------


def build_merge_map(
    vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], continuing_subword_prefix: str | None = None
) -> MergeMap:
    """``(left id, right id) -> (rank, new id)``; a pair listed twice keeps its last rank."""
    prefix_length = len(continuing_subword_prefix or "")
    merge_map: MergeMap = {}
    for rank, (a, b) in enumerate(merges):
        try:
            merge_map[(vocab[a], vocab[b])] = (rank, vocab[a + b[prefix_length:]])
        except KeyError as missing:
            raise ToktoolsError(f"merge {rank + 1} ({a!r} {b!r}) uses a token missing from the vocabulary: {missing}") from None
    return merge_map


def merge_symbols(ids: list[int], merge_map: MergeMap) -> list[tuple[int, int]]:
    """Merge a word's symbol ids by rank, exactly as ``tokenizers``' ``Word::merge_all``.

    A min-heap of ``(rank, position)``: the lowest rank merges first, ties to the leftmost.
    Entries made stale by an earlier merge are skipped. Returns ``(token id, index of its first
    initial symbol)`` per token, so callers get offsets for free.
    """
    n = len(ids)
    get = merge_map.get
    heap = []
    for pos in range(n - 1):
        found = get((ids[pos], ids[pos + 1]))
        if found is not None:
            heap.append((found[0], pos, found[1]))
    if not heap:
        return list(zip(ids, range(n)))
    symbols = list(ids)
    alive = [True] * n
    previous = list(range(-1, n - 1))
    following = list(range(1, n + 1))
    heapq.heapify(heap)
    while heap:
        _rank, pos, new_id = heapq.heappop(heap)
        if not alive[pos]:
            continue
        nxt = following[pos]
        if nxt >= n:
            continue
        found = get((symbols[pos], symbols[nxt]))
        if found is None or found[1] != new_id:
            continue
        symbols[pos] = new_id
        alive[nxt] = False
        after = following[nxt]
        following[pos] = after
        if after < n:
            previous[after] = pos
        before = previous[pos]
        if before >= 0:
            found = get((symbols[before], new_id))
            if found is not None:
                heapq.heappush(heap, (found[0], before, found[1]))
        if after < n:
            found = get((new_id, symbols[after]))
            if found is not None:
                heapq.heappush(heap, (found[0], pos, found[1]))
    return [(symbols[i], i) for i in range(n) if alive[i]]


def apply_merges(ids: list[int], merge_map: MergeMap) -> list[int]:
    """The merged ids of one word (see :func:`merge_symbols`)."""
    return [token_id for token_id, _ in merge_symbols(ids, merge_map)]


# ---------------------------------------------------------------------------------------------
# vocab.json / merges.txt
# ---------------------------------------------------------------------------------------------

MERGES_HEADER = "#version: 0.2\n"


def dumps_vocab_json(vocab: Mapping[str, int]) -> str:
    """``vocab.json`` exactly as ``tokenizers``' ``save_model``: one line, keys in id order."""
    ordered = dict(sorted(vocab.items(), key=lambda item: item[1]))
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def dumps_merges_txt(merges: Iterable[tuple[str, str]]) -> str:
    """``merges.txt``: the version header, then ``left right`` per line, every line ending in ``\\n``."""
    return MERGES_HEADER + "".join(f"{a} {b}\n" for a, b in merges)


def loads_vocab_json(text: str, source: str = "vocab.json") -> dict[str, int]:
    """Parse a ``vocab.json`` (or OpenAI ``encoder.json``) with a readable error on garbage."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ToktoolsError(f"{source}: not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in data.items()):
        raise ToktoolsError(f"{source}: expected a JSON object mapping token strings to integer ids")
    return data


def loads_merges_txt(text: str, source: str = "merges.txt") -> list[tuple[str, str]]:
    """Parse ``merges.txt`` / ``vocab.bpe``: ``#version`` lines skipped, ``a b`` per line."""
    merges = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("#version") or not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise ToktoolsError(f"{source}, line {number}: expected two tokens separated by one space, got {line!r}")
        merges.append((parts[0], parts[1]))
    return merges


def read_text_file(path: Path, what: str) -> str:
    """A UTF-8 text file, or a :class:`ToktoolsError` that says which file and why."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ToktoolsError(f"{what} not found: {path}") from None
    except UnicodeDecodeError as err:
        raise ToktoolsError(f"{path}: not valid UTF-8 at byte {err.start}") from None
    except OSError as err:
        raise ToktoolsError(f"cannot read {path}: {err.strerror}") from None
