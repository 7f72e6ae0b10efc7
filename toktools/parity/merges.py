"""Why two merge lists part: the pair counts at the first differing merge, replayed from the
word counts without touching the engine, and whether the step was a tie (which ``tokenizers``
breaks by the smaller ``(left id, right id)``) or a count that differs (a bug;
``shared/spec/bytelevel-bpe.md`` §5–§6)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import cast

from toktools.errors import ToktoolsError
from toktools.models.bpe import trainer as bpe
from toktools.parity.results import MergeStep

__all__ = ["Pair", "explain_merge_divergence", "explain_step", "replay_pair_counts"]

Pair = tuple[str, str]


def _initial_ids(word: str, vocab: Mapping[str, int], prefix: str | None, suffix: str | None) -> list[int]:
    """A word's initial symbol ids as the trainer builds them: chars outside the alphabet are
    skipped; ``prefix`` / ``suffix`` decorate by position in the original word."""
    ids = []
    for ch, symbol in bpe.decorated(word, prefix, suffix):
        token_id = vocab.get(symbol) if ch in vocab else None
        if token_id is not None:
            ids.append(token_id)
    return ids


def replay_pair_counts(
    word_counts: Mapping[str, int],
    vocab: Mapping[str, int],
    merges: Sequence[Pair],
    *,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
) -> Counter[tuple[int, int]]:
    """Adjacent-pair counts (by ``(left id, right id)``, weighted by word count) after the
    given merges: every word is segmented with ``merges`` by rank (``bpe.build_merge_map`` +
    ``bpe.merge_symbols``). For the first k merges of a training run this is the trainer's
    state after k merges, computed without the engine."""
    merge_map = bpe.build_merge_map(vocab, merges, continuing_subword_prefix)
    counts: Counter[tuple[int, int]] = Counter()
    for word, count in word_counts.items():
        ids = _initial_ids(word, vocab, continuing_subword_prefix, end_of_word_suffix)
        if len(ids) < 2:
            continue
        if merge_map:
            ids = [token_id for token_id, _ in bpe.merge_symbols(ids, merge_map)]
        for pair in zip(ids, ids[1:]):
            counts[pair] += count
    return counts


def _ids_of(pair: Pair | None, vocabs: Sequence[Mapping[str, int]]) -> list[int] | None:
    if pair is None:
        return None
    for vocab in vocabs:
        if pair[0] in vocab and pair[1] in vocab:
            return [vocab[pair[0]], vocab[pair[1]]]
    return None


def explain_merge_divergence(
    word_counts: Mapping[str, int],
    vocab: Mapping[str, int],
    reference_merges: Sequence[Pair],
    fast_merges: Sequence[Pair],
    *,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    min_frequency: int = 0,
    fast_vocab: Mapping[str, int] | None = None,
) -> MergeStep | None:
    """Explain the first merge where two merge lists differ, or ``None`` if they are equal.

    ``word_counts`` are the words as the trainer sees them (byte symbols for byte-level BPE,
    normalised words for WordPiece); ``vocab`` gives the ids (the reference's; the first
    ``index`` merges are common, so the ids that matter are the same on both sides).
    """
    reference_merges = [cast(Pair, tuple(m)) for m in reference_merges]  # lists (from JSON) compare as pairs
    fast_merges = [cast(Pair, tuple(m)) for m in fast_merges]
    k = next(
        (i for i, (a, b) in enumerate(zip(reference_merges, fast_merges)) if a != b),
        min(len(reference_merges), len(fast_merges)),
    )
    if k == len(reference_merges) == len(fast_merges):
        return None
    reference_pair = reference_merges[k] if k < len(reference_merges) else None
    fast_pair = fast_merges[k] if k < len(fast_merges) else None
    try:
        counts = replay_pair_counts(
            word_counts,
            vocab,
            reference_merges[:k],
            continuing_subword_prefix=continuing_subword_prefix,
            end_of_word_suffix=end_of_word_suffix,
        )
    except ToktoolsError as err:
        return MergeStep(
            k,
            "unexplained",
            _list(reference_pair),
            _list(fast_pair),
            None,
            None,
            None,
            None,
            0,
            0,
            None,
            "neither",
            f"merge #{k + 1} cannot be replayed: {err}",
        )
    vocabs = [vocab] + ([fast_vocab] if fast_vocab is not None else [])
    return explain_step(k, counts, vocab, vocabs, reference_pair, fast_pair, min_frequency)


def _list(pair: Pair | None) -> list[str] | None:
    return None if pair is None else list(pair)


def explain_step(
    k: int,
    counts: Mapping[tuple[int, int], int],
    vocab: Mapping[str, int],
    vocabs: Sequence[Mapping[str, int]],
    reference_pair: Pair | None,
    fast_pair: Pair | None,
    min_frequency: int,
    where: str | None = None,
) -> MergeStep:
    """Explain merge ``k``, where the reference took ``reference_pair`` and ``tokenizers``
    ``fast_pair`` (None: that side stopped): ``counts`` are the pair counts before it, ``vocab``
    names the ids, ``vocabs`` give the pairs' ids; ``where`` names the step for people (default:
    its line of merges.txt)."""
    id_to_token = {i: t for t, i in vocab.items()}
    reference_ids = _ids_of(reference_pair, vocabs)
    fast_ids = _ids_of(fast_pair, vocabs)
    reference_count = counts.get((reference_ids[0], reference_ids[1]), 0) if reference_ids else None
    fast_count = counts.get((fast_ids[0], fast_ids[1]), 0) if fast_ids else None
    best = max(counts.values(), default=0)
    at_best = [pair for pair, count in counts.items() if count == best] if best else []
    rule_ids = min(at_best) if at_best and best >= max(min_frequency, 1) else None
    rule_pair = [id_to_token.get(rule_ids[0], "?"), id_to_token.get(rule_ids[1], "?")] if rule_ids else None
    followed = [
        side
        for side, ids in (("reference", reference_ids), ("fast", fast_ids))
        if (ids is None and rule_ids is None) or (ids is not None and tuple(ids) == rule_ids)
    ]
    followed_by = "both" if len(followed) == 2 else followed[0] if followed else "neither"
    step = MergeStep(
        k,
        "",
        _list(reference_pair),
        _list(fast_pair),
        reference_ids,
        fast_ids,
        reference_count,
        fast_count,
        best,
        len(at_best),
        rule_pair,
        followed_by,
        "",
    )
    name = f"merge #{k + 1} ({where or f'line {k + 2} of merges.txt'})"
    if reference_pair is None or fast_pair is None:
        step.reason = "stopped"
        step.rule_followed_by, step.message = _stopped(step, name, min_frequency)
    elif reference_ids is None or fast_ids is None:
        step.reason = "unexplained"
        step.message = (
            f"{name}: toktools {_pair_text(reference_pair)} vs tokenizers {_pair_text(fast_pair)}, "
            "but a token of these pairs is not in the vocabulary"
        )
    else:
        step.reason, step.message = _pairs_differ(step, name)
    return step


_VERDICTS = {
    "reference": "the reference (toktools) followed it",
    "fast": "tokenizers followed it",
    "both": "both followed it",
    "neither": "neither side followed it",
}


def _stopped(step: MergeStep, name: str, min_frequency: int) -> tuple[str, str]:
    """One side has no merge at this step: who followed the rule, and why it was right (no pair
    left at ``min_frequency``) or wrong to stop."""
    stopped = "toktools" if step.reference_pair is None else "tokenizers"
    followed_by = step.rule_followed_by
    if step.rule_pair is None:
        best = step.best_count
        why = f"the best pair left had count {best} < min_frequency {min_frequency}" if best else "no pair was left"
        followed_by = "reference" if step.reference_pair is None else "fast"
        verdict = f"{stopped} was right to stop"
    else:
        why = f"the best pair {_pair_text(step.rule_pair)} still had count {step.best_count}"
        verdict = f"{stopped} stopped too early"
    other = _pair_text(step.fast_pair if step.reference_pair is None else step.reference_pair)
    return followed_by, f"stopped: {stopped} has no {name}, the other side merged {other}; {why}: {verdict}"


def _pairs_differ(step: MergeStep, name: str) -> tuple[str, str]:
    """Both sides merged, different pairs: a tie (same count) or a count that differs (a bug)."""
    assert step.reference_ids is not None and step.fast_ids is not None
    ref_text, fast_text = _pair_text(step.reference_pair), _pair_text(step.fast_pair)
    r, f = step.reference_ids, step.fast_ids
    ids_text = f"ids: toktools ({r[0]}, {r[1]}), tokenizers ({f[0]}, {f[1]})"
    verdict = _VERDICTS[step.rule_followed_by]
    best = step.best_count
    if step.reference_count == step.fast_count:
        extra = (
            ""
            if step.reference_count == best
            else f" (but the best pair at this step had count {best}: a bug on both sides)"
        )
        return "tie", (
            f"{name}: toktools {ref_text} vs tokenizers {fast_text} — tie: both pairs had count "
            f"{step.reference_count}; tokenizers breaks ties by the smaller (left id, right id) — {ids_text}; "
            f"the rule picks {_pair_text(step.rule_pair) if step.rule_pair else '-'}: {verdict}{extra}"
        )
    return "count-differs", (
        f"{name}: toktools {ref_text} vs tokenizers {fast_text} — count differs: toktools' pair had count "
        f"{step.reference_count}, tokenizers' {step.fast_count} (the best pair at this step had {best}; {ids_text}); "
        f"the trainer always takes the highest count, so this is a bug: in the merge engine, or the two "
        f"sides counted different words; {verdict}"
    )


def _pair_text(pair: Sequence[str] | None) -> str:
    return "-" if pair is None else f"'{pair[0]} {pair[1]}'"
