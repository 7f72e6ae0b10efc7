"""Parity between the two training backends: toktools (pure Python, the reference) and
HuggingFace ``tokenizers`` (the fast twin in :mod:`toktools.training.tokenizers_backend`).

This is the library behind ``toktools parity bytebpe|wordpiece|unigram CORPUS...`` and ``train --check``.
One call trains both sides with the same settings and says:

* whether the files are byte-identical (byte-level BPE: ``vocab.json``, ``merges.txt`` and the
  ``model`` of ``tokenizer.json``; WordPiece: ``vocab.txt``);
* if not, **why**, at the first difference:

  - BPE: the first differing merge, the two pairs and their counts at that step, replayed from
    the word counts without touching the engine (:func:`replay_pair_counts`). Two pairs with the
    same count are a *tie*, which ``tokenizers`` breaks by the smaller ``(left id, right id)``;
    a count that differs means a bug (``shared/spec/bytelevel-bpe.md`` §5–§6);
  - WordPiece: ``tokenizers`` is not deterministic (``shared/spec/wordpiece.md`` §6): the chars
    with equal frequency at the ``limit_alphabet`` cut and the order of the ``##c`` block change
    from run to run. The report lists those, then re-trains the reference in *forced mode*
    (``tokenizers``' alphabet and ``##c`` order replayed) and checks that THAT is byte-identical:
    the real check of the algorithm;

* the token-set overlap, and the share of held-out lines that both tokenizers encode to the
  same ids (100% whenever the vocabularies are identical).

Unigram is different: ``tokenizers``' ``UnigramTrainer`` sums floats in hash-map order and per
thread, so its own runs differ from each other (``shared/spec/unigram.md`` §5.6), and toktools
sums in one fixed order. Byte identity is not expected; the trainer's ``agreement_bounds`` state
what is (a :class:`Tolerance`): token-set Jaccard and the share of held-out lines cut into the
same tokens, scores equal up to summation order, and *exact* encoding — each side's trained
vocabulary gives the same ids in toktools and in ``tokenizers``.

Word counting and training go through the public functions of :mod:`toktools.training.pipeline` and
:mod:`toktools.training.tokenizers_backend`; nothing here re-implements training.

    >>> report = run_parity("bytebpe", ["corpus.txt"], 8000)      # doctest: +SKIP
    >>> print("\\n".join(report.summary_lines()))                 # doctest: +SKIP
    >>> json.dumps(report.to_dict())                              # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toktools.errors import ToktoolsError
from toktools.io import outputs
from toktools.models.bpe import trainer as bpe
from toktools.training.trainers import TRAINERS, Trainer, get_trainer

if TYPE_CHECKING:  # pragma: no cover
    from toktools.tokenizer import Tokenizer

#: The trainable model families (see :mod:`toktools.training.trainers`) and their trainer options.
KINDS = tuple(TRAINERS)
TRAINER_OPTIONS: dict[str, dict[str, Any]] = {name: dict(t.options) for name, t in TRAINERS.items()}
EXAMPLES = 5  # examples shown on each side of a difference

Pair = tuple[str, str]


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON-ready copy: dataclasses become dicts in field order, tuples lists, ±inf None."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class Timing:
    """Wall-clock seconds. The reference time is word counting plus the merge loop; the fast
    time is ``tokenizers``' whole ``train`` (it reads the files itself, on every core)."""

    reference_seconds: float | None
    reference_count_seconds: float | None
    reference_train_seconds: float | None
    fast_seconds: float
    #: reference / fast: how many times slower the pure-Python side was.
    ratio: float | None


@dataclass
class FileComparison:
    name: str
    identical: bool
    reference_bytes: int
    fast_bytes: int
    #: Where the files first differ, for humans (``None`` when identical).
    first_difference: str | None = None


@dataclass
class Divergence:
    """The first vocabulary position (id) where the two sides differ."""

    #: "specials", "alphabet", "symbols" (the ``##c`` / ``c</w>`` block), "merges", "pieces" (Unigram) or "size".
    stage: str
    index: int
    reference: str | None
    fast: str | None
    message: str


@dataclass
class MergeStep:
    """Why the merge lists part at merge ``index`` (0-based; line ``index + 2`` of merges.txt).

    Counts are those of every adjacent pair after replaying the common first ``index`` merges
    on the reference word counts, i.e. what the trainer saw when it chose merge ``index``.
    """

    index: int
    #: "tie" (same count: the tie-break decided), "count-differs" (a bug),
    #: "stopped" (one side has no merge here) or "unexplained".
    reason: str
    reference_pair: list[str] | None
    fast_pair: list[str] | None
    reference_ids: list[int] | None
    fast_ids: list[int] | None
    reference_count: int | None
    fast_count: int | None
    #: The highest pair count at this step, and how many pairs had it.
    best_count: int
    pairs_at_best: int
    #: The pair ``tokenizers``' rule (highest count, then smallest ids) picks at this step.
    rule_pair: list[str] | None
    #: "reference", "fast", "both" or "neither": who picked ``rule_pair``.
    rule_followed_by: str
    message: str


@dataclass
class AlphabetComparison:
    """The alphabets differ: with ``limit_alphabet``, ``tokenizers`` drops the chars of equal
    frequency at the cut in random order (spec §5 / wordpiece §6 step 3)."""

    limit_alphabet: int | None
    #: The frequency of the last char kept (the reference keeps the lower code points on ties);
    #: ``None`` when there is no cut, or it falls among the infinitely frequent initial chars.
    cut_frequency: int | None
    #: ``[char, frequency]`` kept by one side only (frequency ``None`` = initial, infinite).
    only_reference: list[list[Any]]
    only_fast: list[list[Any]]
    #: True when every char kept by one side only has exactly the cut frequency.
    all_at_cut: bool
    reason: str  # "tie" or "not-a-tie"
    message: str


@dataclass
class SymbolBlockComparison:
    """The ``##c`` block (ids right after the alphabet) differs: ``tokenizers`` gives those ids
    in hash-map order, random per process (wordpiece spec §6 step 4)."""

    reference_size: int
    fast_size: int
    same_set: bool
    #: Index inside the block of the first difference, and how many positions differ.
    first_difference: int | None
    positions_differing: int
    reason: str  # "order" or "set"
    message: str


@dataclass
class Overlap:
    """Token sets of the two model vocabularies (special tokens included)."""

    reference_size: int
    fast_size: int
    common: int
    only_reference: int
    only_fast: int
    jaccard: float
    #: Common tokens that also have the same id.
    same_id: int
    examples_only_reference: list[str] = field(default_factory=list)
    examples_only_fast: list[str] = field(default_factory=list)


@dataclass
class Agreement:
    """Held-out lines encoded by both trained tokenizers (no template: ``add_special_tokens``
    off on both sides), compared id for id."""

    source: str
    lines: int
    identical_lines: int
    #: Share of lines with identical ids.
    share: float | None
    #: Lines whose token *strings* are identical (ids aside): how alike the segmentations are
    #: when the vocabularies number their tokens differently.
    identical_token_lines: int
    reference_tokens: int
    fast_tokens: int
    #: ``{"line", "text", "position", "reference_tokens", "fast_tokens", "reference_ids",
    #: "fast_ids"}`` for the first line that differs, or ``None``.
    first_mismatch: dict[str, Any] | None = None


@dataclass
class ForcedCheck:
    """WordPiece: the reference re-trained with ``tokenizers``' alphabet and ``##c`` order
    (``forced_order_from_vocab``); byte-identical output is the real algorithm parity."""

    ran: bool
    identical: bool
    seconds: float | None
    files: list[FileComparison] = field(default_factory=list)
    first_difference: Divergence | None = None
    merge: MergeStep | None = None
    agreement: Agreement | None = None
    note: str | None = None


@dataclass
class ScoreAgreement:
    """Unigram: the scores of the pieces both vocabularies hold. ``tokenizers`` sums in hash order
    and per thread, toktools in a fixed order, so equal pieces get scores equal up to the last
    digits (``rel_tol``); characters added at the end get ``min_score + k·0.0001`` with ``k`` in
    hash order, so those may differ by multiples of 1e-4."""

    common: int
    #: common pieces whose scores agree within ``rel_tol``
    close: int
    rel_tol: float
    max_difference: float
    #: ``(piece, toktools score, tokenizers score)`` of the largest differences
    examples: list[tuple[str, float, float]] = field(default_factory=list)


@dataclass
class Tolerance:
    """Where ``tokenizers``' training is not deterministic (Unigram), parity is agreement: the
    token-set Jaccard and the share of held-out lines cut into the same tokens must reach these
    bounds, and encoding must be exact: each side's trained tokenizer gives the same ids in
    toktools and in ``tokenizers`` (``encoding``)."""

    min_jaccard: float
    min_token_agreement: float
    jaccard: float
    token_agreement: float | None
    #: toktools vs tokenizers encoding the same trained vocabulary: tokenizers' one, then ours
    encoding: list[Agreement] = field(default_factory=list)
    scores: ScoreAgreement | None = None

    @property
    def ok(self) -> bool:
        return (
            self.jaccard >= self.min_jaccard
            and (self.token_agreement is None or self.token_agreement >= self.min_token_agreement)
            and all(a.share in (None, 1.0) for a in self.encoding)
        )


@dataclass
class CorpusInfo:
    files: list[str]
    #: Bytes both sides trained on (without the held-out lines, if any were withheld).
    bytes: int
    distinct_words: int | None
    #: Whether both sides trained on the given files or on a plain copy (without held-out lines).
    trained_on: str
    heldout: str


@dataclass
class ParityReport:
    """Everything :func:`run_parity` found. ``to_dict()`` for JSON, ``summary_lines()`` for people."""

    kind: str
    tokenizers_version: str
    settings: dict[str, Any]
    corpus: CorpusInfo
    timing: Timing
    files: list[FileComparison]
    #: Every compared file byte-identical (WordPiece: vocab.txt of the normal, unforced run).
    identical: bool
    first_difference: Divergence | None
    merge: MergeStep | None
    alphabet: AlphabetComparison | None
    symbols: SymbolBlockComparison | None
    forced: ForcedCheck | None
    overlap: Overlap
    agreement: Agreement
    notes: list[str] = field(default_factory=list)
    tolerance: Tolerance | None = None

    @property
    def ok(self) -> bool:
        """The parity verdict. Byte-level BPE: identical files and 100% id agreement.
        WordPiece: identical, or else identical in forced mode with 100% agreement there, the
        unforced difference being explained by ``tokenizers``' own randomness only (alphabet
        ties at the cut, the ``##c`` order; not chars dropped out of turn)."""
        if self.tolerance is not None:
            return self.tolerance.ok and (not self.identical or self.agreement.share in (None, 1.0))
        if self.identical:
            return self.agreement.share in (None, 1.0)
        forced = self.forced
        if forced is None or not forced.ran or not forced.identical:
            return False
        if self.alphabet is not None and self.alphabet.reason != "tie":
            return False
        if self.alphabet is None and self.symbols is not None and self.symbols.reason != "order":
            return False
        return forced.agreement is None or forced.agreement.share in (None, 1.0)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict, keys in a stable order (``ok`` first, then the fields)."""
        document = {"ok": self.ok}
        document.update(_plain(self))
        return document

    def summary_lines(self) -> list[str]:
        """A plain-text report, one finding per line."""
        s = self.settings
        frequency = f", min frequency {s['min_frequency']}" if self.tolerance is None else ""  # Unigram has none
        out = [f"parity {self.kind}: vocab size {s['vocab_size']}{frequency}, tokenizers {self.tokenizers_version}"]
        c = self.corpus
        words = f", {c.distinct_words:,} distinct words" if c.distinct_words is not None else ""
        out.append(f"corpus: {len(c.files)} file(s), {_size(c.bytes)}{words}; trained on {c.trained_on}")
        t = self.timing
        if t.reference_seconds is not None:
            ratio = f"; toktools took {t.ratio:.1f}x as long" if t.ratio else ""
            split = (
                f" (count {t.reference_count_seconds:.2f} s + train {t.reference_train_seconds:.2f} s)"
                if t.reference_count_seconds is not None and t.reference_train_seconds is not None
                else ""
            )
            out.append(f"time: toktools {t.reference_seconds:.2f} s{split}, tokenizers {t.fast_seconds:.2f} s{ratio}")
        else:
            out.append(f"time: tokenizers {t.fast_seconds:.2f} s")
        out.append("files: " + ", ".join(_file_phrase(f) for f in self.files))
        if self.first_difference is not None:
            out.append(f"first difference: {self.first_difference.message}")
        if self.merge is not None:
            out.append(f"  {self.merge.message}")
        if self.alphabet is not None:
            out.append(f"  alphabet: {self.alphabet.message}")
        if self.symbols is not None:
            out.append(f"  symbols: {self.symbols.message}")
        o = self.overlap
        out.append(
            f"tokens: {o.reference_size:,} (toktools) vs {o.fast_size:,} (tokenizers), {o.common:,} in common "
            f"(Jaccard {o.jaccard:.4f}), {o.same_id:,} with the same id"
        )
        if o.only_reference or o.only_fast:
            out.append(
                f"  only toktools ({o.only_reference:,}): {_examples(o.examples_only_reference)}; "
                f"only tokenizers ({o.only_fast:,}): {_examples(o.examples_only_fast)}"
            )
        out.append("ids: " + _agreement_phrase(self.agreement))
        if self.tolerance is not None:
            out.extend(_tolerance_lines(self.tolerance, self.agreement))
        f = self.forced
        if f is not None:
            if not f.ran:
                out.append(f"forced mode: not run ({f.note})")
            else:
                out.append(f"forced mode ({f.seconds:.2f} s): " + ", ".join(_file_phrase(x) for x in f.files))
                if f.first_difference is not None:
                    out.append(f"  first difference: {f.first_difference.message}")
                if f.merge is not None:
                    out.append(f"  {f.merge.message}")
                if f.agreement is not None:
                    out.append("  ids: " + _agreement_phrase(f.agreement))
        out.extend(f"note: {note}" for note in self.notes)
        if self.tolerance is not None and not self.identical:
            why = " (within the bounds; tokenizers' Unigram training is not deterministic)" if self.ok else ""
        else:
            why = (
                ""
                if self.identical or not self.ok
                else " (in forced mode; the normal run differs by tokenizers' randomness)"
            )
        out.append("verdict: " + ("PARITY" if self.ok else "NO PARITY") + why)
        return out


def _tolerance_lines(t: Tolerance, agreement: Agreement) -> list[str]:
    share = agreement.identical_token_lines / agreement.lines if agreement.lines else None
    tokens = f"{share:.1%}" if share is not None else "n/a"
    out = [
        f"agreement: Jaccard {t.jaccard:.4f} (at least {t.min_jaccard}), same tokens on {tokens} of held-out "
        f"lines (at least {t.min_token_agreement:.0%}); ids also depend on the order of near-equal scores"
    ]
    if t.scores is not None:
        sc = t.scores
        out.append(
            f"  scores: {sc.close:,} of {sc.common:,} common pieces equal to summation order "
            f"(rel. {sc.rel_tol:g}); largest difference {sc.max_difference:.3g}"
        )
    for label, a in zip(("tokenizers' vocabulary", "toktools' vocabulary"), t.encoding):
        out.append(f"  encoding with {label}: " + _agreement_phrase(a))
    return out


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _examples(tokens: Sequence[str]) -> str:
    return " ".join(repr(t) for t in tokens) if tokens else "-"


def _file_phrase(comparison: FileComparison) -> str:
    return f"{comparison.name} " + (
        "identical" if comparison.identical else f"DIFFERENT ({comparison.first_difference})"
    )


def _agreement_phrase(agreement: Agreement) -> str:
    if not agreement.lines:
        return f"no held-out lines ({agreement.source})"
    text = (
        f"{agreement.identical_lines:,}/{agreement.lines:,} held-out lines identical "
        f"({100 * (agreement.share or 0):.2f}%; {agreement.source})"
    )
    if agreement.identical_token_lines != agreement.identical_lines:
        text += f"; {agreement.identical_token_lines:,} with the same token strings"
    m = agreement.first_mismatch
    if m is not None:
        if m["reference_tokens"] == m["fast_tokens"]:
            shown = f"ids {m['reference_ids']} vs {m['fast_ids']} for the same tokens {m['reference_tokens']}"
        else:
            shown = f"{m['reference_tokens']} vs {m['fast_tokens']}"
        text += f"; first mismatch: line {m['line']} at token {m['position']}: {shown}"
    return text


# ---------------------------------------------------------------------------------------------
# Explaining a merge divergence
# ---------------------------------------------------------------------------------------------


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
    reference_merges = [tuple(m) for m in reference_merges]
    fast_merges = [tuple(m) for m in fast_merges]
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
    return _explain_step(k, counts, vocab, vocabs, reference_pair, fast_pair, min_frequency)


def _list(pair: Pair | None) -> list[str] | None:
    return None if pair is None else list(pair)


def _explain_step(
    k: int,
    counts: Mapping[tuple[int, int], int],
    vocab: Mapping[str, int],
    vocabs: Sequence[Mapping[str, int]],
    reference_pair: Pair | None,
    fast_pair: Pair | None,
    min_frequency: int,
    where: str | None = None,
) -> MergeStep:
    id_to_token = {i: t for t, i in vocab.items()}
    reference_ids = _ids_of(reference_pair, vocabs)
    fast_ids = _ids_of(fast_pair, vocabs)
    reference_count = counts.get(tuple(reference_ids), 0) if reference_ids else None  # type: ignore[call-overload]
    fast_count = counts.get(tuple(fast_ids), 0) if fast_ids else None  # type: ignore[call-overload]
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
    step = f"merge #{k + 1} ({where or f'line {k + 2} of merges.txt'})"
    ref_text, fast_text = _pair_text(reference_pair), _pair_text(fast_pair)
    verdict = {
        "reference": "the reference (toktools) followed it",
        "fast": "tokenizers followed it",
        "both": "both followed it",
        "neither": "neither side followed it",
    }[followed_by]
    if reference_pair is None or fast_pair is None:
        stopped = "toktools" if reference_pair is None else "tokenizers"
        if rule_ids is None:
            why = f"the best pair left had count {best} < min_frequency {min_frequency}" if best else "no pair was left"
            followed_by = "reference" if reference_pair is None else "fast"
            verdict = f"{stopped} was right to stop"
        else:
            why = f"the best pair {_pair_text(tuple(rule_pair))} still had count {best}"  # type: ignore[arg-type]
            verdict = f"{stopped} stopped too early"
        other = fast_text if reference_pair is None else ref_text
        message = f"stopped: {stopped} has no {step}, the other side merged {other}; {why}: {verdict}"
        return MergeStep(
            k,
            "stopped",
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
            message,
        )
    if reference_ids is None or fast_ids is None:
        message = f"{step}: toktools {ref_text} vs tokenizers {fast_text}, but a token of these pairs is not in the vocabulary"
        return MergeStep(
            k,
            "unexplained",
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
            message,
        )
    ids_text = f"ids: toktools ({reference_ids[0]}, {reference_ids[1]}), tokenizers ({fast_ids[0]}, {fast_ids[1]})"
    if reference_count == fast_count:
        reason = "tie"
        extra = (
            ""
            if reference_count == best
            else f" (but the best pair at this step had count {best}: a bug on both sides)"
        )
        message = (
            f"{step}: toktools {ref_text} vs tokenizers {fast_text} — tie: both pairs had count "
            f"{reference_count}; tokenizers breaks ties by the smaller (left id, right id) — {ids_text}; "
            f"the rule picks {_pair_text(tuple(rule_pair)) if rule_pair else '-'}: {verdict}{extra}"
        )
    else:
        reason = "count-differs"
        message = (
            f"{step}: toktools {ref_text} vs tokenizers {fast_text} — count differs: toktools' pair had count "
            f"{reference_count}, tokenizers' {fast_count} (the best pair at this step had {best}; {ids_text}); "
            f"the trainer always takes the highest count, so this is a bug: in the merge engine, or the two "
            f"sides counted different words; {verdict}"
        )
    return MergeStep(
        k,
        reason,
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
        message,
    )


def _pair_text(pair: Sequence[str] | None) -> str:
    return "-" if pair is None else f"'{pair[0]} {pair[1]}'"


# ---------------------------------------------------------------------------------------------
# Vocabulary layout, alphabet cut, ##c block
# ---------------------------------------------------------------------------------------------


@dataclass
class _Layout:
    """A trained vocabulary cut into its blocks (by id)."""

    tokens: list[str]
    specials: int
    alphabet: list[str]
    symbols: list[str]

    @property
    def merged_start(self) -> int:
        return self.specials + len(self.alphabet) + len(self.symbols)


def _layout(tokens: Sequence[str], special_tokens: Sequence[str], prefix: str | None, suffix: str | None) -> _Layout:
    """Specials, alphabet (single chars) and the decorated-symbol block (``##c`` / ``c</w>``)."""
    specials = len(dict.fromkeys(special_tokens))
    if prefix:
        from toktools.training.pipeline import forced_order_from_vocab

        alphabet, symbols = forced_order_from_vocab(list(tokens), special_tokens, prefix)
        return _Layout(list(tokens), specials, alphabet, symbols)
    index = specials
    while index < len(tokens) and len(tokens[index]) == 1:
        index += 1
    alphabet = list(tokens[specials:index])
    symbols: list[str] = []
    if suffix:
        while index < len(tokens) and tokens[index].endswith(suffix) and len(tokens[index]) == len(suffix) + 1:
            symbols.append(tokens[index])
            index += 1
    return _Layout(list(tokens), specials, alphabet, symbols)


def _first_vocab_difference(ref: _Layout, hf: _Layout) -> Divergence | None:
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


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def compare_files(name: str, reference: bytes, fast: bytes) -> FileComparison:
    """Byte comparison, and where they first differ (line for text files, id for vocab.json,
    key for a tokenizer.json model)."""
    if reference == fast:
        return FileComparison(name, True, len(reference), len(fast))
    return FileComparison(name, False, len(reference), len(fast), _where(name, reference, fast))


def _where(name: str, reference: bytes, fast: bytes) -> str:
    try:
        a_text, b_text = reference.decode("utf-8"), fast.decode("utf-8")
    except UnicodeDecodeError:
        first = next((i for i, (x, y) in enumerate(zip(reference, fast)) if x != y), min(len(reference), len(fast)))
        return f"first differing byte at {first}"
    if name.endswith(".json"):
        try:
            a, b = json.loads(a_text), json.loads(b_text)
        except json.JSONDecodeError:
            a = b = None
        if isinstance(a, dict) and isinstance(b, dict):
            if name == "vocab.json" or all(isinstance(v, int) for v in a.values()):
                ta, tb = sorted(a, key=a.__getitem__), sorted(b, key=b.__getitem__)
                i = next((i for i, (x, y) in enumerate(zip(ta, tb)) if x != y), None)
                if i is None:
                    return f"sizes {len(ta):,} vs {len(tb):,}"
                return f"id {i}: {ta[i]!r} vs {tb[i]!r}"
            keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
            if a == b:
                return "same JSON, different formatting"
            return "differs in " + ", ".join(repr(k) for k in keys[:EXAMPLES])
    a_lines, b_lines = a_text.split("\n"), b_text.split("\n")
    i = next((i for i, (x, y) in enumerate(zip(a_lines, b_lines)) if x != y), min(len(a_lines), len(b_lines)))
    a_line = a_lines[i] if i < len(a_lines) else "<end>"
    b_line = b_lines[i] if i < len(b_lines) else "<end>"
    return f"line {i + 1}: {a_line!r} vs {b_line!r}; {len(a_lines):,} vs {len(b_lines):,} lines"


def _compare_model_json(reference: bytes, fast: bytes) -> FileComparison:
    """The ``model`` objects of two ``tokenizer.json`` files, compared as JSON."""
    a, b = json.loads(reference)["model"], json.loads(fast)["model"]
    name = "tokenizer.json model"
    a_bytes = json.dumps(a, ensure_ascii=False).encode("utf-8")
    b_bytes = json.dumps(b, ensure_ascii=False).encode("utf-8")
    if a == b:
        return FileComparison(name, True, len(a_bytes), len(b_bytes))
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    return FileComparison(name, False, len(a_bytes), len(b_bytes), "differs in " + ", ".join(repr(k) for k in keys))


# ---------------------------------------------------------------------------------------------
# Corpus preparation and held-out lines
# ---------------------------------------------------------------------------------------------


@dataclass
class _Corpus:
    train_files: list[str]
    heldout: list[str]
    info: CorpusInfo


_COMPRESSED = (".gz", ".xz", ".bz2")


def _iter_raw_lines(sources: Sequence[Any]) -> Iterator[bytes]:
    from toktools.corpus.reading import raw_lines

    for source in sources:
        yield from raw_lines(source)  # cut at b"\n" only, like tokenizers; corrupt files named


def _decode_line(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ToktoolsError(f"{where}: invalid UTF-8 (byte 0x{raw[err.start]:02X})") from None


def _strip_eol(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def _spread(items: Sequence[str], limit: int) -> list[str]:
    """At most ``limit`` items, evenly spread over ``items`` (deterministic)."""
    if len(items) <= limit:
        return list(items)
    return [items[(i * len(items)) // limit] for i in range(limit)]


def _sample_lines(sources: Sequence[Any], limit: int) -> tuple[list[str], int]:
    """At most ``limit`` non-blank lines evenly spread over the sources (two passes, so memory
    stays small on a big corpus), and how many non-blank lines there are."""
    total = sum(1 for raw in _iter_raw_lines(sources) if raw.strip())
    wanted = {(i * total) // limit for i in range(limit)} if total > limit else None
    picked = []
    index = 0
    for raw in _iter_raw_lines(sources):
        if not raw.strip():
            continue
        if wanted is None or index in wanted:
            picked.append(_strip_eol(_decode_line(raw, "corpus")))
        index += 1
    return picked, total


def _prepare_corpus(
    files: Sequence[str],
    scratch: Path,
    heldout_lines: Sequence[str] | None,
    heldout_file: str | None,
    heldout_fraction: float,
    heldout_max_lines: int,
) -> _Corpus:
    """Plain files that both backends can read, and the held-out lines.

    ``tokenizers`` reads only plain UTF-8 files, so compressed inputs, directories' contents
    and standard input are copied to plain files; with ``heldout_fraction`` every n-th line
    is withheld from both trainings (the copy leaves it out).
    """
    from toktools.corpus import reading as corpus

    sources = corpus.expand_sources([str(f) for f in files])
    names = [s.path for s in sources]
    if not 0 <= heldout_fraction < 1:
        raise ToktoolsError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    explicit = heldout_lines is not None or heldout_file is not None
    stride = max(2, round(1 / heldout_fraction)) if heldout_fraction and not explicit else 0
    plain = all(not s.is_stdin and not s.path.endswith(_COMPRESSED) for s in sources)
    heldout: list[str] = []
    if plain and not stride:
        train_files = names
        size = sum(s.size() for s in sources)
        trained_on = "the given files"
    else:
        scratch.mkdir(parents=True, exist_ok=True)
        train_files = []
        size = 0
        text_lines = 0  # lines with text (blank lines are never held out: they hold no test)
        for index, source in enumerate(sources):
            target = scratch / f"train-{index:03d}.txt"
            with open(target, "wb") as out:
                for number, raw in enumerate(_iter_raw_lines([source]), start=1):
                    # decoded here, so that an error names the given file, not the copy
                    line = _decode_line(raw, f"{source.path}, line {number}")
                    if stride and line.strip():
                        text_lines += 1
                        if text_lines % stride == 0:
                            heldout.append(_strip_eol(line))
                            continue
                    out.write(raw)
                    size += len(raw)
            train_files.append(str(target))
        trained_on = (
            f"a copy without every {stride}th non-blank line"
            if stride
            else "a plain copy (tokenizers reads only plain UTF-8 files)"
        )
    if heldout_lines is not None:
        heldout = [line for line in heldout_lines if line.strip()]
        source_text = f"{len(heldout):,} given lines"
    elif heldout_file is not None:
        heldout = [line for line in corpus.read_lines([str(heldout_file)]) if line.strip()]
        source_text = f"lines of {heldout_file}"
    elif stride:
        source_text = f"every {stride}th non-blank corpus line, withheld from training"
    total = len(heldout)
    if not explicit and not stride:
        heldout, total = _sample_lines(corpus.expand_sources(train_files), heldout_max_lines)
        source_text = "corpus lines (seen in training: not a true held-out set)"
    heldout = _spread(heldout, heldout_max_lines)
    if total > len(heldout):
        source_text += f", {len(heldout):,} of {total:,} evenly spread"
    info = CorpusInfo(names, size, None, trained_on, source_text)
    return _Corpus(train_files, heldout, info)


def compare_encodings(
    reference: Tokenizer, fast_tokenizer: Any, lines: Sequence[str], source: str = "", workers: int | None = None
) -> Agreement:
    """Encode ``lines`` with both tokenizers (no template) and compare the ids line by line."""
    lines = list(lines)
    if not lines:
        return Agreement(source, 0, 0, None, 0, 0, 0)
    ours = reference.encode_batch(lines, add_special_tokens=False, workers=workers)
    theirs = fast_tokenizer.encode_batch(lines, add_special_tokens=False)
    same = same_tokens = 0
    first = None
    for number, (a, b) in enumerate(zip(ours, theirs)):
        same_tokens += list(a.tokens) == list(b.tokens)
        if a.ids == b.ids:
            same += 1
        elif first is None:
            position = next((i for i, (x, y) in enumerate(zip(a.ids, b.ids)) if x != y), min(len(a.ids), len(b.ids)))
            window = slice(position, position + EXAMPLES)
            first = {
                "line": number,
                "text": lines[number][:120],
                "position": position,
                "reference_tokens": list(a.tokens[window]),
                "fast_tokens": list(b.tokens[window]),
                "reference_ids": list(a.ids[window]),
                "fast_ids": list(b.ids[window]),
            }
    return Agreement(
        source,
        len(lines),
        same,
        same / len(lines),
        same_tokens,
        sum(len(e.ids) for e in ours),
        sum(len(e.ids) for e in theirs),
        first,
    )


# ---------------------------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------------------------


def _settings(
    trainer: Trainer,
    vocab_size: int,
    min_frequency: int | None,
    special_tokens: Sequence[str] | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    unknown = sorted(set(options) - set(trainer.options))
    if unknown:
        raise ToktoolsError(
            f"{trainer.name} parity: unknown trainer option(s) {', '.join(unknown)} "
            f"(both backends take: {', '.join(trainer.options)})"
        )
    merged = trainer.with_defaults(options)
    return {
        "vocab_size": int(vocab_size),
        "min_frequency": 2 if min_frequency is None else int(min_frequency),
        "special_tokens": list(trainer.default_special_tokens if special_tokens is None else special_tokens),
        "options": {key: (list(value) if isinstance(value, tuple) else value) for key, value in merged.items()},
    }


def _count_words(
    trainer: Trainer, files: Sequence[str], options: Mapping[str, Any], workers: int | None
) -> dict[str, int]:
    return trainer.count_words(files, options, workers=workers)


def _train_reference(
    trainer: Trainer,
    settings: Mapping[str, Any],
    word_counts: dict[str, int],
    forced_order: tuple[Sequence[str], Sequence[str]] | None = None,
) -> Tokenizer:
    return trainer.train(
        settings["vocab_size"],
        settings["min_frequency"],
        settings["special_tokens"],
        word_counts,
        settings["options"],
        forced_order,
    )


def _train_fast(trainer: Trainer, settings: Mapping[str, Any], files: Sequence[str]) -> Any:
    return trainer.train_fast(
        files, settings["vocab_size"], settings["min_frequency"], settings["special_tokens"], settings["options"]
    )


def _compare_dirs(trainer: Trainer, ours: Path, theirs: Path) -> list[FileComparison]:
    out = [
        compare_files(name, (ours / name).read_bytes(), (theirs / name).read_bytes()) for name in trainer.model_files
    ]
    a, b = (ours / "tokenizer.json").read_bytes(), (theirs / "tokenizer.json").read_bytes()
    out.append(_compare_model_json(a, b))
    if trainer.pins_tokenizer_json:  # the whole file is pinned identical too (tests/test_bytelevel_train_parity.py)
        out.append(compare_files("tokenizer.json", a, b))
    return out


# ---------------------------------------------------------------------------------------------
# WordPiece: the merges behind a vocabulary (for the forced-mode explanation)
# ---------------------------------------------------------------------------------------------


def _wordpiece_merges(
    word_counts: Mapping[str, int], settings: Mapping[str, Any], forced_order: tuple[Sequence[str], Sequence[str]]
) -> bpe.BpeTrainingResult:
    """The reference's merges in forced mode (``train_wordpiece`` keeps only the vocabulary):
    the same engine call, through ``bpe.train_bpe``."""
    options = settings["options"]
    config = bpe.BpeTrainerConfig(
        vocab_size=settings["vocab_size"],
        min_frequency=settings["min_frequency"],
        special_tokens=list(settings["special_tokens"]),
        limit_alphabet=options["limit_alphabet"],
        initial_alphabet=list(options["initial_alphabet"]),
        continuing_subword_prefix=options["wordpieces_prefix"],
        forced_alphabet=list(forced_order[0]),
        forced_symbol_order=list(forced_order[1]),
    )
    return bpe.train_bpe(word_counts, config)


def _explain_vocab_merge(
    word_counts: Mapping[str, int],
    result: bpe.BpeTrainingResult,
    fast_tokens: Sequence[str],
    index: int,
    prefix: str,
    min_frequency: int,
) -> MergeStep:
    """The merge behind the first differing vocabulary id ``index`` (past the ``##c`` block):
    replay the reference merges that made ids ``< index``, then find the pair that makes
    ``tokenizers``' token there (the most frequent such pair) and explain the step."""
    vocab = result.vocab_dict()
    # which merge created each token id (a merge that re-creates an existing string adds none)
    creator: dict[int, int] = {}
    for rank, (a, b) in enumerate(result.merges):
        token_id = vocab[a + (b[len(prefix) :] if b.startswith(prefix) else b)]
        creator.setdefault(token_id, rank)
    k = creator.get(index, len(result.merges))
    common = result.merges[:k]
    counts = replay_pair_counts(word_counts, vocab, common, continuing_subword_prefix=prefix)
    reference_pair = result.merges[k] if k < len(result.merges) else None
    fast_pair: Pair | None = None
    if index < len(fast_tokens):
        target = fast_tokens[index]
        id_to_token = result.vocab
        best = None
        for (left, right), count in counts.items():
            a, b = id_to_token[left], id_to_token[right]
            if a + (b[len(prefix) :] if b.startswith(prefix) else b) == target:
                key = (-count, left, right)
                if best is None or key < best[0]:
                    best = (key, (a, b))
        if best is None:
            step = _explain_step(k, counts, vocab, [vocab], reference_pair, None, min_frequency, f"vocab id {index}")
            step.reason = "unexplained"
            step.message = (
                f"merge #{k + 1}: tokenizers' token {target!r} (id {index}) is not one merge of the "
                f"symbols left after the common merges"
            )
            return step
        fast_pair = best[1]
    return _explain_step(k, counts, vocab, [vocab], reference_pair, fast_pair, min_frequency, f"vocab id {index}")


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def run_parity(
    kind: str,
    files: Sequence[str],
    vocab_size: int,
    *,
    min_frequency: int | None = None,
    special_tokens: Sequence[str] | None = None,
    heldout_lines: Sequence[str] | None = None,
    heldout_file: str | None = None,
    heldout_fraction: float = 0.02,
    heldout_max_lines: int = 2000,
    workers: int | None = None,
    forced: bool = True,
    output_dir: str | Path | None = None,
    **trainer_options: Any,
) -> ParityReport:
    """Train ``kind`` ("bytebpe" or "wordpiece") with both backends on ``files`` and compare.

    Held-out lines: ``heldout_lines`` as given, else the non-empty lines of ``heldout_file``,
    else every ``1/heldout_fraction``-th non-blank corpus line, withheld from both trainings (the corpus
    is then copied without them), else (``heldout_fraction=0``) corpus lines that were trained
    on. At most ``heldout_max_lines`` are encoded, evenly spread. ``min_frequency`` defaults to
    2 and ``special_tokens`` to the kind's usual ones (none / BERT's), as the CLI's ``train``.
    ``trainer_options`` are those of :data:`TRAINER_OPTIONS` (given to both sides). With
    ``forced`` (WordPiece), a differing vocabulary is re-trained in forced mode. The trained
    files are written under ``output_dir`` (``reference/``, ``fast/``, ``forced/``, each replaced)
    if given, else into a temporary directory that is removed.
    """
    trainer = get_trainer(kind)
    settings = _settings(trainer, vocab_size, min_frequency, special_tokens, trainer_options)
    with outputs.temporary_directory(prefix="toktools-parity-") as scratch:  # removed on SIGTERM too
        work = Path(output_dir) if output_dir is not None else Path(scratch) / "out"
        prepared = _prepare_corpus(
            files, Path(scratch) / "corpus", heldout_lines, heldout_file, heldout_fraction, heldout_max_lines
        )
        start = time.perf_counter()
        word_counts = _count_words(trainer, prepared.train_files, settings["options"], workers)
        counted = time.perf_counter()
        reference = _train_reference(trainer, settings, word_counts)
        trained = time.perf_counter()
        fast_tokenizer, fast_seconds = _save_both(trainer, settings, reference, prepared.train_files, work)
        timing = Timing(
            trained - start,
            counted - start,
            trained - counted,
            fast_seconds,
            (trained - start) / fast_seconds if fast_seconds > 0 else None,
        )
        prepared.info.distinct_words = len(word_counts)
        return _report(
            trainer, settings, prepared, timing, reference, fast_tokenizer, work, lambda: word_counts, workers, forced
        )


def _save_both(
    trainer: Trainer, settings: Mapping[str, Any], reference: Tokenizer, train_files: Sequence[str], work: Path
) -> tuple[Any, float]:
    """Save the reference's files, train ``tokenizers`` (timed) and save its files beside them."""
    _replace_dir(work / "reference")
    reference.save(work / "reference")
    fast_start = time.perf_counter()
    fast_tokenizer = _train_fast(trainer, settings, train_files)
    fast_seconds = time.perf_counter() - fast_start
    _replace_dir(work / "fast")
    trainer.save_fast(fast_tokenizer, work / "fast")
    return fast_tokenizer, fast_seconds


def check_trained(
    kind: str,
    reference: Tokenizer,
    files: Sequence[str],
    vocab_size: int,
    *,
    min_frequency: int | None = None,
    special_tokens: Sequence[str] | None = None,
    word_counts: dict[str, int] | None = None,
    reference_seconds: float | None = None,
    heldout_lines: Sequence[str] | None = None,
    heldout_file: str | None = None,
    heldout_max_lines: int = 2000,
    workers: int | None = None,
    forced: bool = True,
    output_dir: str | Path | None = None,
    **trainer_options: Any,
) -> ParityReport:
    """``train --check``: compare a tokenizer the reference already trained on ``files`` (with
    these settings) against ``tokenizers`` trained on the same files. Nothing is held out:
    the sample is ``heldout_lines`` / ``heldout_file`` or corpus lines. ``word_counts`` (if
    kept from training) saves recounting when a difference has to be explained."""
    trainer = get_trainer(kind)
    settings = _settings(trainer, vocab_size, min_frequency, special_tokens, trainer_options)
    with outputs.temporary_directory(prefix="toktools-check-") as scratch:  # removed on SIGTERM too
        work = Path(output_dir) if output_dir is not None else Path(scratch) / "out"
        prepared = _prepare_corpus(files, Path(scratch) / "corpus", heldout_lines, heldout_file, 0.0, heldout_max_lines)
        fast_tokenizer, fast_seconds = _save_both(trainer, settings, reference, prepared.train_files, work)
        timing = Timing(
            reference_seconds,
            None,
            None,
            fast_seconds,
            reference_seconds / fast_seconds if reference_seconds and fast_seconds > 0 else None,
        )
        if word_counts is not None:
            prepared.info.distinct_words = len(word_counts)
        cache: dict[str, dict[str, int]] = {}

        def counts() -> dict[str, int]:
            if "words" not in cache:
                cache["words"] = (
                    word_counts
                    if word_counts is not None
                    else _count_words(trainer, prepared.train_files, settings["options"], workers)
                )
            return cache["words"]

        return _report(trainer, settings, prepared, timing, reference, fast_tokenizer, work, counts, workers, forced)


def _replace_dir(directory: Path) -> None:
    if directory.is_symlink() or directory.is_file():
        directory.unlink()  # rmtree refuses symbolic links; the link goes, not its target
    elif directory.exists():
        shutil.rmtree(directory)


def _report(
    trainer: Trainer,
    settings: dict[str, Any],
    prepared: _Corpus,
    timing: Timing,
    reference: Tokenizer,
    fast_tokenizer: Any,
    work: Path,
    word_counts: Callable[[], dict[str, int]],
    workers: int | None,
    forced: bool,
) -> ParityReport:
    from toktools.training import tokenizers_backend as fast

    ours_dir, theirs_dir = work / "reference", work / "fast"
    files = _compare_dirs(trainer, ours_dir, theirs_dir)
    primary = [f for f in files if f.name in trainer.model_files or trainer.pins_tokenizer_json]
    identical = all(f.identical for f in primary)
    prefix, suffix = trainer.decorations(settings["options"])
    specials = settings["special_tokens"]
    ref_tokens, fast_tokens = trainer.read_vocab(ours_dir), trainer.read_vocab(theirs_dir)
    ref_layout = _layout(ref_tokens, specials, prefix, suffix)
    fast_layout = _layout(fast_tokens, specials, prefix, suffix)
    overlap = compare_token_sets(ref_tokens, fast_tokens)
    agreement = compare_encodings(reference, fast_tokenizer, prepared.heldout, prepared.info.heldout, workers)
    notes: list[str] = []
    first = merge = alphabet = symbols = None
    forced_check = None
    tolerance = None
    if trainer.agreement_bounds is not None:
        tolerance = _tolerance(
            trainer.agreement_bounds,
            reference,
            fast_tokenizer,
            ours_dir,
            theirs_dir,
            overlap,
            agreement,
            prepared,
            workers,
        )
        if not identical:
            first = _first_vocab_difference(
                _Layout(ref_tokens, len(dict.fromkeys(specials)), [], []),
                _Layout(fast_tokens, len(dict.fromkeys(specials)), [], []),
            )
            if first is not None and first.stage == "merges":
                first.stage = "pieces"
                first.message = (
                    f"id {first.index}: toktools {first.reference!r} vs tokenizers {first.fast!r} "
                    "(pieces sorted by score: near-equal scores fall in another order)"
                )
    elif not identical:
        first = _first_vocab_difference(ref_layout, fast_layout)
        counts = word_counts()
        prepared.info.distinct_words = len(counts)
        alphabet = compare_alphabets(
            ref_layout.alphabet,
            fast_layout.alphabet,
            counts,
            settings["options"].get("limit_alphabet"),
            trainer.initial_alphabet(settings["options"]),
        )
        symbols = compare_symbol_blocks(ref_layout.symbols, fast_layout.symbols)
        if trainer.explains_merges and alphabet is None and symbols is None:
            ref_merges = bpe.loads_merges_txt((ours_dir / "merges.txt").read_text(encoding="utf-8"))
            fast_merges = bpe.loads_merges_txt((theirs_dir / "merges.txt").read_text(encoding="utf-8"))
            merge = explain_merge_divergence(
                counts,
                dict(reference.vocab),
                ref_merges,
                fast_merges,
                continuing_subword_prefix=prefix,
                end_of_word_suffix=suffix,
                min_frequency=settings["min_frequency"],
                fast_vocab=fast_tokenizer.get_vocab(with_added_tokens=False),
            )
        elif trainer.explains_merges:
            notes.append(
                "the merges were not replayed: the alphabet or the decorated-symbol block already differs "
                "(tokenizers decides ties there at random, spec §5) and the merges follow from those ids; "
                "forced mode is only implemented for WordPiece"
            )
        if trainer.has_forced_mode:
            if alphabet is None and symbols is None and first is not None and first.stage == "merges":
                notes.append("alphabet and ##c block are identical, yet the merged tokens differ: see forced mode")
            forced_check = (
                _forced_check(
                    trainer,
                    settings,
                    counts,
                    fast_tokens,
                    theirs_dir,
                    work / "forced",
                    fast_tokenizer,
                    prepared,
                    workers,
                )
                if forced
                else ForcedCheck(False, False, None, note="disabled")
            )
    elif trainer.has_forced_mode:
        forced_check = ForcedCheck(False, True, None, note="not needed: the normal run is already identical")
    if identical and agreement.lines and agreement.share != 1.0:
        notes.append("identical vocabularies but the ids differ on some lines: an encoding bug (see first_mismatch)")
    return ParityReport(
        kind=trainer.name,
        tokenizers_version=fast.TOKENIZERS_VERSION,
        settings=settings,
        corpus=prepared.info,
        timing=timing,
        files=files,
        identical=identical,
        first_difference=first,
        merge=merge,
        alphabet=alphabet,
        symbols=symbols,
        forced=forced_check,
        overlap=overlap,
        agreement=agreement,
        notes=notes,
        tolerance=tolerance,
    )


def compare_scores(
    reference: Sequence[tuple[str, float]], fast: Sequence[tuple[str, float]], rel_tol: float = 1e-9
) -> ScoreAgreement:
    """The scores of the pieces two Unigram vocabularies share (``(piece, score)`` lists)."""
    ours, theirs = dict(reference), dict(fast)
    common = [p for p in ours if p in theirs]
    differences = sorted(((abs(ours[p] - theirs[p]), p) for p in common), reverse=True)
    close = sum(1 for p in common if math.isclose(ours[p], theirs[p], rel_tol=rel_tol, abs_tol=1e-12))
    return ScoreAgreement(
        len(common),
        close,
        rel_tol,
        differences[0][0] if differences else 0.0,
        [(p, ours[p], theirs[p]) for d, p in differences[:EXAMPLES] if d > 0],
    )


def _tolerance(
    bounds: tuple[float, float],
    reference: Tokenizer,
    fast_tokenizer: Any,
    ours_dir: Path,
    theirs_dir: Path,
    overlap: Overlap,
    agreement: Agreement,
    prepared: _Corpus,
    workers: int | None,
) -> Tolerance:
    """Agreement of a non-deterministic training (Unigram), and exact encoding of each side's
    vocabulary by both libraries."""
    from tokenizers import Tokenizer as FastTokenizer

    from toktools.io.formats import from_tokenizer_json

    theirs_json = json.loads((theirs_dir / "tokenizer.json").read_text(encoding="utf-8"))
    ours_text = (ours_dir / "tokenizer.json").read_text(encoding="utf-8")
    source = prepared.info.heldout
    encoding = [
        compare_encodings(from_tokenizer_json(theirs_json), fast_tokenizer, prepared.heldout, source, workers),
        compare_encodings(reference, FastTokenizer.from_str(ours_text), prepared.heldout, source, workers),
    ]
    scores = compare_scores(
        [(p, s) for p, s in json.loads(ours_text)["model"]["vocab"]], [(p, s) for p, s in theirs_json["model"]["vocab"]]
    )
    share = agreement.identical_token_lines / agreement.lines if agreement.lines else None
    return Tolerance(bounds[0], bounds[1], overlap.jaccard, share, encoding, scores)


def _forced_check(
    trainer: Trainer,
    settings: dict[str, Any],
    word_counts: dict[str, int],
    fast_tokens: Sequence[str],
    theirs_dir: Path,
    directory: Path,
    fast_tokenizer: Any,
    prepared: _Corpus,
    workers: int | None,
) -> ForcedCheck:
    """WordPiece: re-train the reference with ``tokenizers``' alphabet and ``##c`` order."""
    from toktools.training.pipeline import forced_order_from_vocab

    prefix = settings["options"]["wordpieces_prefix"]
    order = forced_order_from_vocab(list(fast_tokens), settings["special_tokens"], prefix)
    start = time.perf_counter()
    tokenizer = _train_reference(trainer, settings, word_counts, forced_order=order)
    seconds = time.perf_counter() - start
    _replace_dir(directory)
    tokenizer.save(directory)
    files = _compare_dirs(trainer, directory, theirs_dir)
    identical = all(f.identical for f in files if f.name in trainer.model_files)
    check = ForcedCheck(True, identical, seconds, files)
    if not identical:
        ours = trainer.read_vocab(directory)
        layout_ref = _layout(ours, settings["special_tokens"], prefix, None)
        layout_fast = _layout(fast_tokens, settings["special_tokens"], prefix, None)
        check.first_difference = _first_vocab_difference(layout_ref, layout_fast)
        diff = check.first_difference
        if diff is not None and (
            diff.stage == "merges" or (diff.stage == "size" and diff.index >= layout_ref.merged_start)
        ):
            result = _wordpiece_merges(word_counts, settings, order)
            check.merge = _explain_vocab_merge(
                word_counts, result, fast_tokens, diff.index, prefix, settings["min_frequency"]
            )
    check.agreement = compare_encodings(tokenizer, fast_tokenizer, prepared.heldout, prepared.info.heldout, workers)
    return check


__all__ = [
    "KINDS",
    "TRAINER_OPTIONS",
    "Agreement",
    "AlphabetComparison",
    "CorpusInfo",
    "ScoreAgreement",
    "Tolerance",
    "compare_scores",
    "Divergence",
    "FileComparison",
    "ForcedCheck",
    "MergeStep",
    "Overlap",
    "ParityReport",
    "SymbolBlockComparison",
    "Timing",
    "char_frequencies",
    "check_trained",
    "compare_alphabets",
    "compare_encodings",
    "compare_files",
    "compare_symbol_blocks",
    "compare_token_sets",
    "explain_merge_divergence",
    "replay_pair_counts",
    "run_parity",
]
