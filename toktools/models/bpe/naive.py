"""BPE training in its plainest form: read this before :mod:`toktools.models.bpe.trainer`.

Count every adjacent pair of symbols in every word (weighted by the word's count), merge the
most frequent pair everywhere, repeat. Ties go to the smallest ``(left id, right id)``, as in
``tokenizers``' ``BpeTrainer``. The fast engine (:func:`toktools.models.bpe.trainer.train_bpe`) is tested to give
the same vocabulary and merges; this one recounts everything at every merge, so keep inputs small.

Where ``tokenizers`` itself is not deterministic, this follows the engine's documented choice:
ties at the ``limit_alphabet`` cut keep the more frequent, then the lower code point; ``##c`` /
``c</w>`` symbols are numbered in order of first appearance. A merge that makes a token string
already in the vocabulary raises :class:`ReusedToken`: ``tokenizers``' result then depends on
its bookkeeping, which :class:`toktools.models.bpe.trainer._ExactEngine` ports.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence


class ReusedToken(Exception):
    """A merge made a token string that is already in the vocabulary (``ab`` + ``c`` after ``a`` + ``bc``)."""


def train_bpe_naive(
    word_counts: Mapping[str, int],
    vocab_size: int,
    min_frequency: int = 0,
    special_tokens: Sequence[str] = (),
    limit_alphabet: int | None = None,
    initial_alphabet: Sequence[str] = (),
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    max_token_length: int | None = None,
) -> tuple[list[str], list[tuple[str, str]], list[int]]:
    """``(vocab in id order, merges in rank order, count of each merge)``."""
    vocab: list[str] = []  # id -> token string
    # 1. Special tokens first, once each.
    for token in special_tokens:
        if token not in vocab:
            vocab.append(token)
    # 2. The alphabet: characters by count (initial ones count as infinite), the most frequent
    #    ``limit_alphabet`` kept, then sorted by code point.
    frequency: Counter[str] = Counter()
    for word, count in word_counts.items():
        for ch in word:
            frequency[ch] += count
    frequency.update({s[0]: math.inf for s in initial_alphabet if s})
    kept = sorted(frequency, key=lambda ch: (-frequency[ch], ch))[:limit_alphabet]
    vocab += [ch for ch in sorted(kept) if ch not in vocab]
    # 3. Words as lists of symbol ids: a character outside the alphabet is skipped; "##c" inside
    #    a word and "c</w>" at its end are added to the vocabulary when first seen.
    prefix, suffix = continuing_subword_prefix or "", end_of_word_suffix or ""
    words = []
    for word, count in word_counts.items():
        symbols = []
        for position, ch in enumerate(word):
            if ch in vocab:
                symbol = (prefix if position else "") + ch + (suffix if position == len(word) - 1 else "")
                if symbol not in vocab:
                    vocab.append(symbol)
                symbols.append(vocab.index(symbol))
        words.append((symbols, count))
    # 4. The merge loop. max_token_length: a merged token must be shorter (in initial symbols),
    #    but two initial symbols may always merge.
    length = [1] * len(vocab)
    longest = max(max_token_length or math.inf, 3)
    merges: list[tuple[str, str]] = []
    counts: list[int] = []
    while len(vocab) < vocab_size:
        pairs: Counter[tuple[int, int]] = Counter()
        for symbols, count in words:
            for pair in zip(symbols, symbols[1:]):
                if length[pair[0]] + length[pair[1]] < longest:
                    pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))  # highest count, then smallest ids
        if pairs[best] < max(min_frequency, 1):
            break
        left, right = vocab[best[0]], vocab[best[1]]  # the new token drops the right part's "##"
        token = left + (right[len(prefix) :] if prefix and right.startswith(prefix) else right)
        if token in vocab:
            raise ReusedToken(f"merge {left!r} + {right!r} makes {token!r} again")
        vocab.append(token)
        length.append(length[best[0]] + length[best[1]])
        merges.append((left, right))
        counts.append(pairs[best])
        new = len(vocab) - 1
        for symbols, _ in words:  # merge everywhere, left to right
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [new]
                i += 1
    return vocab, merges, counts
