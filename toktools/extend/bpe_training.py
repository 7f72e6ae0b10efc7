"""BPE training continued from a base's merges: words already cut by the base, new merges after.

The words come in as the base's token ids (what the base makes of each word), so every pair
counted is a pair the extended tokenizer could meet after applying all of the base's merges.
Those merges rank below every new one, so on any word the extended BPE first reaches the base's
segmentation and only then tries new merges: the base's cut of a word changes only where a new
merge's pair sits side by side in it.

The merge loop is the project's BPE engine (:class:`toktools.models.bpe.trainer._LeanEngine`, the
one ``tokenizers``' trainer is reproduced with), started from those id strings instead of
characters. Two kinds of pairs are passed over, not merged:

* a pair whose token string already exists (in the base or among new tokens): no new token, and
  a second merge making one string would break tiktoken's equivalence (E2 of
  ``spec/tiktoken-equivalence.md``);
* a *protected* pair, one that sits side by side in the base's cut of a line of
  ``--keep-segmentation-of``: merging it would change those ids. Since no new merge ever fires
  on a protected word, the set of protected pairs is fixed from the start.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from toktools.models.bpe.trainer import _LeanEngine


@dataclass
class Continuation:
    """The new merges (token strings, in rank order) and the token each one makes."""

    merges: list[tuple[str, str]]
    tokens: list[str]
    counts: list[int]
    skipped_protected: int = 0
    skipped_existing: int = 0
    protected_examples: list[str] = field(default_factory=list)


def join_tokens(prefix: str | None) -> Callable[[str, str], str]:
    """How two tokens make one: concatenated, the right one losing its ``##``-like prefix."""
    if not prefix:
        return str.__add__

    def join(left: str, right: str) -> str:
        return left + (right[len(prefix) :] if right.startswith(prefix) else right)

    return join


def segmented_words(word_ids: Mapping[str, Sequence[int]], counts: Mapping[str, int]) -> tuple[list[str], list[int]]:
    """Each word as the engine's string of symbol ids (``chr(id)`` per token), with its count;
    single-token words are left out (no pair)."""
    words, weights = [], []
    for word, ids in word_ids.items():
        if len(ids) > 1:
            words.append("".join(map(chr, ids)))
            weights.append(counts[word])
    return words, weights


def protected_pairs(segmentations: Collection[Sequence[int]]) -> set[str]:
    """Every pair of neighbouring ids in the base's cut of the protected words (engine spelling)."""
    pairs: set[str] = set()
    for ids in segmentations:
        pairs.update(chr(a) + chr(b) for a, b in zip(ids, ids[1:]))
    return pairs


def continue_training(
    words: list[str],
    counts: list[int],
    token_of: Callable[[int], str],
    existing: Collection[str],
    first_id: int,
    add: int,
    *,
    min_frequency: int = 2,
    protected: Collection[str] = (),
    prefix: str | None = None,
    unmergeable: Collection[int] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Continuation:
    """Learn up to ``add`` merges over ``words`` (see :func:`segmented_words`); new tokens get ids
    ``first_id``, ``first_id + 1``, ... in the order they are learned.

    ``token_of`` gives a base id's token string, ``existing`` every string the base already has
    (vocabulary and added tokens); a pair holding an ``unmergeable`` id (a byte-fallback token
    ``<0xE4>``, whose text is not its spelling) is passed over. Ties go to the smallest ``(left id, right id)``, as in
    ``tokenizers``' trainer."""
    result = Continuation([], [], [])
    if add <= 0:
        return result
    threshold = max(min_frequency, 1)
    bound = first_id + add + 1
    engine = _LeanEngine(words, counts, threshold, bound)
    lengths = [1] * bound  # the engine reads a new token's length; no length limit here
    join = join_tokens(prefix)
    taken = set(existing)
    strings: dict[int, str] = {}

    def string_of(symbol: str) -> str:
        number = ord(symbol)
        return strings[number] if number >= first_id else token_of(number)

    while len(result.tokens) < add:
        top = engine.pop()
        if top is None or top[1] < threshold:
            break
        pair, count = top
        left, right = string_of(pair[0]), string_of(pair[1])
        if unmergeable and (ord(pair[0]) in unmergeable or ord(pair[1]) in unmergeable):
            continue
        if pair in protected:
            result.skipped_protected += 1
            if len(result.protected_examples) < 5:
                result.protected_examples.append(left + right)
            continue
        token = join(left, right)
        if token in taken:
            result.skipped_existing += 1
            continue
        new_id = first_id + len(result.tokens)
        taken.add(token)
        strings[new_id] = token
        engine.merge(pair, chr(new_id), lengths, math.inf)
        result.merges.append((left, right))
        result.tokens.append(token)
        result.counts.append(count)
        if progress is not None:
            progress(len(result.tokens), add)
    return result
