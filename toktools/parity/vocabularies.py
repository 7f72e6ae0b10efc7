"""Two trained vocabularies compared block by block (special tokens, alphabet, the decorated
``##c`` / ``c</w>`` symbols, merged tokens) and as token sets. ``tokenizers`` decides ties at
the ``limit_alphabet`` cut and the order of the ``##c`` block at random (wordpiece spec §6);
these comparisons tell such randomness from a bug."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.parity.results import EXAMPLES, AlphabetComparison, Divergence, Overlap, SymbolBlockComparison

__all__ = [
    "VocabLayout",
    "char_frequencies",
    "compare_alphabets",
    "compare_symbol_blocks",
    "compare_token_sets",
    "first_vocab_difference",
    "vocab_layout",
]


@dataclass
class VocabLayout:
    """A trained vocabulary cut into its blocks (by id)."""

    tokens: list[str]
    specials: int
    alphabet: list[str]
    symbols: list[str]

    @property
    def merged_start(self) -> int:
        """The first id of a merged token."""
        return self.specials + len(self.alphabet) + len(self.symbols)


def vocab_layout(
    tokens: Sequence[str], special_tokens: Sequence[str], prefix: str | None, suffix: str | None
) -> VocabLayout:
    """Specials, alphabet (single chars) and the decorated-symbol block (``##c`` / ``c</w>``)."""
    specials = len(dict.fromkeys(special_tokens))
    if prefix:
        from toktools.training.pipeline import forced_order_from_vocab

        return VocabLayout(list(tokens), specials, *forced_order_from_vocab(list(tokens), special_tokens, prefix))
    index = specials
    while index < len(tokens) and len(tokens[index]) == 1:
        index += 1
    alphabet = list(tokens[specials:index])
    symbols: list[str] = []
    if suffix:
        while index < len(tokens) and tokens[index].endswith(suffix) and len(tokens[index]) == len(suffix) + 1:
            symbols.append(tokens[index])
            index += 1
    return VocabLayout(list(tokens), specials, alphabet, symbols)


def first_vocab_difference(ref: VocabLayout, hf: VocabLayout) -> Divergence | None:
    """The first id where the two vocabularies differ, named by the block it falls in (the
    reference's layout decides), or None when they are equal."""
    a, b = ref.tokens, hf.tokens
    index = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if index is None:
        if len(a) == len(b):
            return None
        index = min(len(a), len(b))
        return Divergence(
            "size",
            index,
            a[index] if index < len(a) else None,
            b[index] if index < len(b) else None,
            f"sizes differ: {len(a):,} (toktools) vs {len(b):,} (tokenizers) tokens; the first {index:,} are identical",
        )
    if index < ref.specials:
        stage = "specials"
    elif index < ref.specials + len(ref.alphabet):
        stage = "alphabet"
    elif index < ref.merged_start:
        stage = "symbols"
    else:
        stage = "merges"
    return Divergence(
        stage, index, a[index], b[index], f"id {index} ({stage}): toktools {a[index]!r} vs tokenizers {b[index]!r}"
    )


def char_frequencies(word_counts: Mapping[str, int], initial_alphabet: Sequence[str] | None = ()) -> dict[str, float]:
    """What the ``limit_alphabet`` cut ranks: each char's count weighted by word count, with
    the initial alphabet's chars at +inf (spec §5 / wordpiece §6 step 3)."""
    frequency: dict[str, float] = {}
    for word, count in word_counts.items():
        for ch in word:
            frequency[ch] = frequency.get(ch, 0) + count
    for entry in initial_alphabet or ():
        if entry:
            frequency[entry[0]] = math.inf
    return frequency


def compare_alphabets(
    reference_alphabet: Sequence[str],
    fast_alphabet: Sequence[str],
    word_counts: Mapping[str, int],
    limit_alphabet: int | None,
    initial_alphabet: Sequence[str] | None = (),
) -> AlphabetComparison | None:
    """Which chars one side kept and the other dropped, and whether they all sit at the cut."""
    if list(reference_alphabet) == list(fast_alphabet):
        return None
    frequency = char_frequencies(word_counts, initial_alphabet)
    cut = None
    if limit_alphabet is not None and len(frequency) > limit_alphabet and limit_alphabet > 0:
        ranked = sorted(frequency.values(), reverse=True)
        cut = ranked[limit_alphabet - 1]
    ref_set, fast_set = set(reference_alphabet), set(fast_alphabet)
    only_ref = sorted(ref_set - fast_set)
    only_fast = sorted(fast_set - ref_set)

    def rows(chars: list[str]) -> list[list[Any]]:
        return [[ch, _freq(frequency.get(ch, 0))] for ch in chars]

    differing = only_ref + only_fast
    all_at_cut = cut is not None and bool(differing) and all(frequency.get(ch, 0) == cut for ch in differing)
    if all_at_cut:
        reason = "tie"
        message = (
            f"tie at the limit_alphabet={limit_alphabet} cut: {len(only_ref)} char(s) kept only by toktools "
            f"({_chars(only_ref)}) and {len(only_fast)} only by tokenizers ({_chars(only_fast)}), all with "
            f"the cut frequency {_freq_text(cut)}; tokenizers drops tied chars in random order, toktools "
            f"keeps the lower code points"
        )
    elif not differing:
        reason = "not-a-tie"
        message = "same chars in a different order: the alphabet must be sorted by code point on both sides (a bug)"
    else:
        reason = "not-a-tie"
        message = (
            f"kept only by toktools: {_chars(only_ref, frequency)}; only by tokenizers: "
            f"{_chars(only_fast, frequency)}; cut frequency {_freq_text(cut)}: not a tie "
            f"at the cut, so a bug (the two sides counted different chars)"
        )
    return AlphabetComparison(
        limit_alphabet,
        _freq(cut) if cut is not None else None,
        rows(only_ref),
        rows(only_fast),
        all_at_cut,
        reason,
        message,
    )


def _freq(value: float | None) -> int | None:
    return None if value is None or math.isinf(value) else int(value)


def _freq_text(value: float | None) -> str:
    if value is None:
        return "-"
    return "infinite (initial alphabet)" if math.isinf(value) else str(int(value))


def _chars(chars: Sequence[str], frequency: Mapping[str, float] | None = None) -> str:
    shown = chars[: EXAMPLES * 2]
    if frequency is None:
        text = " ".join(repr(ch) for ch in shown)
    else:
        text = " ".join(f"{ch!r}={_freq_text(frequency.get(ch, 0))}" for ch in shown)
    return (text + (f" … ({len(chars)})" if len(chars) > len(shown) else "")) or "-"


def compare_symbol_blocks(reference: Sequence[str], fast: Sequence[str]) -> SymbolBlockComparison | None:
    """The decorated-symbol (``##c``) blocks: same set in another order is ``tokenizers``'
    hash-map order; a different set follows from a different alphabet (or is a bug)."""
    if list(reference) == list(fast):
        return None
    same_set = set(reference) == set(fast)
    differing = sum(1 for a, b in zip(reference, fast) if a != b) + abs(len(reference) - len(fast))
    first = next((i for i, (a, b) in enumerate(zip(reference, fast)) if a != b), min(len(reference), len(fast)))
    if same_set:
        message = (
            f"same {len(reference)} symbols in another order ({differing} positions differ, first at block "
            f"index {first}: toktools {reference[first]!r} vs tokenizers {fast[first]!r}); tokenizers gives "
            f"these ids in hash-map order, random per process (issue #1794); toktools uses first occurrence"
        )
        reason = "order"
    else:
        only_ref = sorted(set(reference) - set(fast))
        only_fast = sorted(set(fast) - set(reference))
        message = (
            f"different symbols: {len(reference)} vs {len(fast)}; only toktools {_chars(only_ref)}, only "
            f"tokenizers {_chars(only_fast)} (follows from a different alphabet, else a bug)"
        )
        reason = "set"
    return SymbolBlockComparison(len(reference), len(fast), same_set, first, differing, reason, message)


def compare_token_sets(reference_tokens: Sequence[str], fast_tokens: Sequence[str]) -> Overlap:
    """Overlap of two vocabularies given as token lists in id order."""
    ref_ids = {t: i for i, t in enumerate(reference_tokens)}
    fast_ids = {t: i for i, t in enumerate(fast_tokens)}
    common = ref_ids.keys() & fast_ids.keys()
    union = len(ref_ids.keys() | fast_ids.keys())
    only_ref = [t for t in reference_tokens if t not in fast_ids]
    only_fast = [t for t in fast_tokens if t not in ref_ids]
    return Overlap(
        reference_size=len(ref_ids),
        fast_size=len(fast_ids),
        common=len(common),
        only_reference=len(only_ref),
        only_fast=len(only_fast),
        jaccard=len(common) / union if union else 1.0,
        same_id=sum(1 for t in common if ref_ids[t] == fast_ids[t]),
        examples_only_reference=only_ref[:EXAMPLES],
        examples_only_fast=only_fast[:EXAMPLES],
    )
