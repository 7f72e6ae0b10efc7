"""What a parity run found, as plain dataclasses: ``to_dict()`` for ``--json``,
``summary_lines()`` for people."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

__all__ = [
    "EXAMPLES",
    "Agreement",
    "AlphabetComparison",
    "CorpusInfo",
    "Divergence",
    "FileComparison",
    "ForcedCheck",
    "MergeStep",
    "Overlap",
    "ParityReport",
    "ScoreAgreement",
    "SymbolBlockComparison",
    "Timing",
    "Tolerance",
]

EXAMPLES = 5  # examples shown on each side of a difference


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
    """One trained file of both sides, compared byte for byte."""

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
    """What both sides trained on, and where the held-out lines came from."""

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
