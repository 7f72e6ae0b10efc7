"""The BPE merge engine (trainer), the merge-applying encoder, and ``vocab.json``/``merges.txt`` I/O.

One engine serves both tokenizers of the project: byte-level BPE trains it on byte-symbol words,
WordPiece on normalised words with a ``##`` continuing-subword prefix. It reproduces
``tokenizers``' ``BpeTrainer`` (0.23.3) choice for choice; the numbered steps below follow
``shared/spec/bytelevel-bpe.md`` §5–§6.

Data structures (what makes it fast in pure Python):

* words are lists of int ids, edited in place; ``list.index`` finds the next candidate position
  at C speed, so a merge costs time per *occurrence*, not per symbol of a long word (a Chinese
  clause is one long word);
* pair counts live in a dict keyed by one int (``left << 32 | right``), whose natural order is
  the ``(left, right)`` tuple order that breaks ties;
* a pair → words index says which words a merge must visit;
* a max-heap with lazy invalidation: an entry whose count is stale is pushed back with the
  current count when it reaches the top, exactly as ``tokenizers`` does.
"""
from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from toktools.errors import ToktoolsError

Pair = tuple[int, int]
MergeMap = dict[Pair, tuple[int, int]]  # (left id, right id) -> (rank, new id)

_SHIFT = 32
_LOW = (1 << _SHIFT) - 1


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


def _words_to_ids(
    word_counts: Mapping[str, int], vocab: _Vocab, config: BpeTrainerConfig
) -> tuple[list[list[int]], list[int]]:
    """Each word as a list of symbol ids; characters outside the alphabet are silently skipped.

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
    words: list[list[int]] = []
    counts: list[int] = []
    if not prefix and not suffix:
        for word, count in word_counts.items():
            words.append([alphabet[ch] for ch in word if ch in alphabet])
            counts.append(count)
        return words, counts
    for word, count in word_counts.items():
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
            ids.append(vocab.add(symbol))
        words.append(ids)
        counts.append(count)
    return words, counts


def train_bpe(
    word_counts: Mapping[str, int],
    config: BpeTrainerConfig,
    progress: ProgressCallback | None = None,
) -> BpeTrainingResult:
    """Learn merges from ``word -> count`` exactly as ``tokenizers``' ``BpeTrainer`` does."""
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
    # 3. Words as symbol ids.
    words, counts = _words_to_ids(word_counts, vocab, config)
    # 4. Pair counts and the pair -> words index.
    pair_counts: dict[int, int] = {}
    where: dict[int, set[int]] = {}
    for index, (ids, count) in enumerate(zip(words, counts)):
        for left, right in zip(ids, ids[1:]):
            key = left << _SHIFT | right
            pair_counts[key] = pair_counts.get(key, 0) + count
            positions = where.get(key)
            if positions is None:
                where[key] = {index}
            else:
                positions.add(index)
    heap = [(-pair_counts[key], key, positions) for key, positions in where.items() if pair_counts[key] > 0]
    del where
    heapq.heapify(heap)

    max_length = config.max_token_length or math.inf
    lengths = [1] * len(vocab.tokens)  # length of each token in initial symbols
    prefix = config.continuing_subword_prefix
    merges: list[tuple[int, int]] = []
    merge_counts: list[int] = []
    planned = max(config.vocab_size - len(vocab.tokens), 0)

    # 5. The merge loop.
    while len(vocab.ids) < config.vocab_size and heap:
        neg_count, key, positions = heap[0]
        current = pair_counts[key]
        if -neg_count != current:  # stale: push back with the current count
            heapq.heapreplace(heap, (-current, key, positions))
            continue
        heapq.heappop(heap)
        if current < 1 or current < config.min_frequency:
            break
        left, right = key >> _SHIFT, key & _LOW
        right_part = vocab.tokens[right]
        if prefix and right_part.startswith(prefix):
            right_part = right_part[len(prefix):]
        new_id = vocab.add(vocab.tokens[left] + right_part)
        if new_id == len(lengths):
            lengths.append(lengths[left] + lengths[right])
        merges.append((left, right))
        merge_counts.append(current)
        formed = _apply_merge(words, counts, positions, left, right, new_id, pair_counts, lengths, max_length)
        for pair_key, formed_in in formed.items():
            count = pair_counts[pair_key]
            if count > 0:
                heapq.heappush(heap, (-count, pair_key, formed_in))
        if progress is not None:
            progress(len(merges), planned)

    # The model keeps the last rank of a pair merged twice; the file lists pairs by rank.
    last_rank = {pair: rank for rank, pair in enumerate(merges)}
    kept = [rank for rank, pair in enumerate(merges) if last_rank[pair] == rank]
    return BpeTrainingResult(
        vocab=vocab.tokens,
        merges=[(vocab.tokens[merges[r][0]], vocab.tokens[merges[r][1]]) for r in kept],
        alphabet_size=alphabet_size,
        merge_counts=[merge_counts[r] for r in kept],
    )


def _apply_merge(
    words: list[list[int]],
    counts: list[int],
    positions: Iterable[int],
    left: int,
    right: int,
    new_id: int,
    pair_counts: dict[int, int],
    lengths: list[int],
    max_length: float,
) -> dict[int, set[int]]:
    """Replace ``left right`` by ``new_id`` in the given words, left to right, non-overlapping.

    Updates ``pair_counts`` for the neighbours of every occurrence and returns, for each pair
    that gained count, the words where it was formed. A new pair is only counted if the token
    it would make is shorter than ``max_length`` (``tokenizers``' strict ``<``).
    """
    formed: dict[int, set[int]] = {}
    new_length = lengths[new_id]
    for index in positions:
        word = words[index]
        count = counts[index]
        i = 0
        while True:
            try:
                i = word.index(left, i)
            except ValueError:
                break
            if i + 1 < len(word) and word[i + 1] == right:
                if i > 0:
                    previous = word[i - 1]
                    key = previous << _SHIFT | left
                    pair_counts[key] -= count
                    if lengths[previous] + new_length < max_length:
                        key = previous << _SHIFT | new_id
                        pair_counts[key] = pair_counts.get(key, 0) + count
                        formed.setdefault(key, set()).add(index)
                word[i : i + 2] = (new_id,)
                if i + 1 < len(word):
                    following = word[i + 1]
                    key = right << _SHIFT | following
                    pair_counts[key] -= count
                    if new_length + lengths[following] < max_length:
                        key = new_id << _SHIFT | following
                        pair_counts[key] = pair_counts.get(key, 0) + count
                        formed.setdefault(key, set()).add(index)
            i += 1
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
