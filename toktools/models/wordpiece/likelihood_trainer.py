"""The likelihood-scored WordPiece trainer: the original WordPiece idea, not what ``tokenizers``
trains (that is BPE by pair count, see :mod:`toktools.models.bpe.trainer`).

Each step merges the pair with the highest score ``f(ab) / (f(a) · f(b))``, where ``f`` counts
occurrences weighted by word counts: a pair wins when its parts occur together more often
than their frequencies predict. Left unguarded, rare pairs of rare symbols win every step (two
symbols seen once each, always together, score 1) and common words never form; so pairs rarer
than ``min_pair_frequency`` are not candidates.

The result equals the naive algorithm of the HuggingFace course (recompute every score after
every merge; ties go to the pair met first when scanning the words in corpus order), but runs
incrementally: only the words holding the merged pair are re-split, and a lazy max-heap keeps
the scores — pushed again whenever a symbol's frequency drops, since that raises the scores of
the pairs around it. Deviations from the course, on purpose: ``min_pair_frequency``; the
``limit_alphabet`` cut of :func:`toktools.models.bpe.trainer.compute_alphabet`; a token string that already
exists is not appended a second time.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from toktools.models.bpe.trainer import compute_alphabet
from toktools.models.wordpiece.model import BERT_SPECIAL_TOKENS

Pair = tuple[str, str]


def initial_splits(
    word_counts: Mapping[str, int], prefix: str, alphabet: set[str]
) -> tuple[list[list[str]], list[int]]:
    """Words as symbols: first character bare, the others with the prefix (by position in the
    original word); characters outside the alphabet are dropped."""
    splits, counts = [], []
    for word, count in word_counts.items():
        split = [ch if position == 0 else prefix + ch for position, ch in enumerate(word) if ch in alphabet]
        if split:
            splits.append(split)
            counts.append(count)
    return splits, counts


def merge_split(split: list[str], a: str, b: str, merged: str) -> list[str]:
    """Replace every ``a b`` by ``merged``, left to right."""
    out: list[str] = []
    i = 0
    while i < len(split):
        if i + 1 < len(split) and split[i] == a and split[i + 1] == b:
            out.append(merged)
            i += 2
        else:
            out.append(split[i])
            i += 1
    return out


def train_likelihood_wordpiece(
    word_counts: Mapping[str, int],
    vocab_size: int = 30000,
    special_tokens: Sequence[str] = BERT_SPECIAL_TOKENS,
    prefix: str = "##",
    limit_alphabet: int | None = 1000,
    initial_alphabet: Sequence[str] = (),
    min_pair_frequency: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """The vocabulary (tokens in id order): specials, the symbol alphabet sorted as strings,
    then merged tokens in merge order."""
    kept_chars = set(compute_alphabet(word_counts, initial_alphabet, limit_alphabet))
    splits, counts = initial_splits(word_counts, prefix, kept_chars)
    vocab = list(dict.fromkeys(special_tokens))
    known = set(vocab)
    for symbol in sorted({s for split in splits for s in split} | {c[0] for c in initial_alphabet if c}):
        if symbol not in known:
            vocab.append(symbol)
            known.add(symbol)

    frequency: defaultdict[str, int] = defaultdict(int)
    pair_frequency: defaultdict[Pair, int] = defaultdict(int)
    where: defaultdict[Pair, set[int]] = defaultdict(set)
    pairs_of: defaultdict[str, set[Pair]] = defaultdict(set)

    def account(index: int, sign: int) -> None:
        split, count = splits[index], counts[index] * sign
        for symbol in split:
            frequency[symbol] += count
        for pair in zip(split, split[1:]):
            pair_frequency[pair] += count
            if sign > 0:
                where[pair].add(index)
                pairs_of[pair[0]].add(pair)
                pairs_of[pair[1]].add(pair)

    for index in range(len(splits)):
        account(index, +1)

    def score(pair: Pair) -> float:
        return pair_frequency[pair] / (frequency[pair[0]] * frequency[pair[1]])

    serial = 0
    heap: list[tuple[float, int, Pair]] = []

    def push(pair: Pair) -> None:
        nonlocal serial
        if pair_frequency[pair] >= min_pair_frequency and pair_frequency[pair] > 0:
            serial += 1
            heapq.heappush(heap, (-score(pair), serial, pair))

    for pair in list(pair_frequency):
        push(pair)

    def valid(entry: tuple[float, int, Pair]) -> bool:
        pair = entry[2]
        return pair_frequency[pair] >= max(min_pair_frequency, 1) and -entry[0] == score(pair)

    def first_occurrence(pair: Pair) -> tuple[int, int]:
        for index in sorted(where[pair]):
            split = splits[index]
            for position in range(len(split) - 1):
                if split[position] == pair[0] and split[position + 1] == pair[1]:
                    return index, position
        return len(splits), 0

    planned = max(vocab_size - len(vocab), 0)
    done = 0
    while len(vocab) < vocab_size and heap:
        entry = heapq.heappop(heap)
        if not valid(entry):
            if pair_frequency[entry[2]] >= max(min_pair_frequency, 1):
                push(entry[2])
            continue
        # every pair with the same best score is a candidate: the first met in corpus order wins
        best_score, candidates = entry[0], {entry[2]}
        while heap and heap[0][0] == best_score:
            other = heapq.heappop(heap)
            if valid(other):
                candidates.add(other[2])
            elif pair_frequency[other[2]] >= max(min_pair_frequency, 1):
                push(other[2])
        a, b = min(candidates, key=first_occurrence)
        for pair in candidates - {(a, b)}:
            push(pair)
        merged = a + (b[len(prefix) :] if b.startswith(prefix) else b)
        if merged not in known:
            vocab.append(merged)
            known.add(merged)
        for index in list(where.pop((a, b), ())):
            split = splits[index]
            if not any(x == a and y == b for x, y in zip(split, split[1:])):
                continue
            account(index, -1)
            splits[index] = merge_split(split, a, b, merged)
            account(index, +1)
        pair_frequency.pop((a, b), None)
        # scores rise where a symbol got rarer, and new pairs appeared around the merged token
        for symbol in {a, b, merged}:
            for pair in pairs_of.get(symbol, ()):
                if pair != (a, b):
                    push(pair)
        done += 1
        if progress is not None:
            progress(done, planned)
    return vocab
