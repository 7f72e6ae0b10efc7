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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toktools.io import outputs
from toktools.models.bpe import trainer as bpe
from toktools.parity.agreement import check_tolerance, compare_encodings
from toktools.parity.backends import count_words, parity_settings, save_both, train_reference
from toktools.parity.corpus_sample import PreparedCorpus, prepare_corpus
from toktools.parity.files import compare_dirs
from toktools.parity.forced import check_forced_mode
from toktools.parity.merges import explain_merge_divergence
from toktools.parity.results import (
    AlphabetComparison,
    Divergence,
    ForcedCheck,
    MergeStep,
    ParityReport,
    SymbolBlockComparison,
    Timing,
    Tolerance,
)
from toktools.parity.vocabularies import (
    VocabLayout,
    compare_alphabets,
    compare_symbol_blocks,
    compare_token_sets,
    first_vocab_difference,
    vocab_layout,
)
from toktools.training.trainers import TRAINERS, Trainer, get_trainer

if TYPE_CHECKING:  # pragma: no cover
    from toktools.tokenizer import Tokenizer

__all__ = ["KINDS", "TRAINER_OPTIONS", "check_trained", "run_parity"]

#: The trainable model families (see :mod:`toktools.training.trainers`) and their trainer options.
KINDS = tuple(TRAINERS)
TRAINER_OPTIONS: dict[str, dict[str, Any]] = {name: dict(t.options) for name, t in TRAINERS.items()}


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
    settings = parity_settings(trainer, vocab_size, min_frequency, special_tokens, trainer_options)
    with outputs.temporary_directory(prefix="toktools-parity-") as scratch:  # removed on SIGTERM too
        work = Path(output_dir) if output_dir is not None else Path(scratch) / "out"
        prepared = prepare_corpus(
            files, Path(scratch) / "corpus", heldout_lines, heldout_file, heldout_fraction, heldout_max_lines
        )
        start = time.perf_counter()
        word_counts = count_words(trainer, prepared.train_files, settings["options"], workers)
        counted = time.perf_counter()
        reference = train_reference(trainer, settings, word_counts)
        trained = time.perf_counter()
        fast_tokenizer, fast_seconds = save_both(trainer, settings, reference, prepared.train_files, work)
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
    settings = parity_settings(trainer, vocab_size, min_frequency, special_tokens, trainer_options)
    with outputs.temporary_directory(prefix="toktools-check-") as scratch:  # removed on SIGTERM too
        work = Path(output_dir) if output_dir is not None else Path(scratch) / "out"
        prepared = prepare_corpus(files, Path(scratch) / "corpus", heldout_lines, heldout_file, 0.0, heldout_max_lines)
        fast_tokenizer, fast_seconds = save_both(trainer, settings, reference, prepared.train_files, work)
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
                    else count_words(trainer, prepared.train_files, settings["options"], workers)
                )
            return cache["words"]

        return _report(trainer, settings, prepared, timing, reference, fast_tokenizer, work, counts, workers, forced)


def _report(
    trainer: Trainer,
    settings: dict[str, Any],
    prepared: PreparedCorpus,
    timing: Timing,
    reference: Tokenizer,
    fast_tokenizer: Any,
    work: Path,
    word_counts: Callable[[], dict[str, int]],
    workers: int | None,
    forced: bool,
) -> ParityReport:
    """Compare the two trained directories under ``work`` and explain what differs."""
    from toktools.training import tokenizers_backend as fast

    ours_dir, theirs_dir = work / "reference", work / "fast"
    files = compare_dirs(trainer, ours_dir, theirs_dir)
    primary = [f for f in files if f.name in trainer.model_files or trainer.pins_tokenizer_json]
    identical = all(f.identical for f in primary)
    ref_tokens, fast_tokens = trainer.read_vocab(ours_dir), trainer.read_vocab(theirs_dir)
    overlap = compare_token_sets(ref_tokens, fast_tokens)
    agreement = compare_encodings(reference, fast_tokenizer, prepared.heldout, prepared.info.heldout, workers)
    found = _Findings()
    if trainer.agreement_bounds is not None:
        found.tolerance = check_tolerance(
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
            found.first = _first_piece_difference(ref_tokens, fast_tokens, settings["special_tokens"])
    elif not identical:
        counts = word_counts()
        prepared.info.distinct_words = len(counts)
        _explain_difference(found, trainer, settings, counts, reference, fast_tokenizer, work, ref_tokens, fast_tokens)
        if trainer.has_forced_mode:
            found.forced = (
                check_forced_mode(
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
        found.forced = ForcedCheck(False, True, None, note="not needed: the normal run is already identical")
    if identical and agreement.lines and agreement.share != 1.0:
        found.notes.append(
            "identical vocabularies but the ids differ on some lines: an encoding bug (see first_mismatch)"
        )
    return ParityReport(
        kind=trainer.name,
        tokenizers_version=fast.TOKENIZERS_VERSION,
        settings=settings,
        corpus=prepared.info,
        timing=timing,
        files=files,
        identical=identical,
        first_difference=found.first,
        merge=found.merge,
        alphabet=found.alphabet,
        symbols=found.symbols,
        forced=found.forced,
        overlap=overlap,
        agreement=agreement,
        notes=found.notes,
        tolerance=found.tolerance,
    )


@dataclass
class _Findings:
    """What explains a difference between the two trained vocabularies."""

    first: Divergence | None = None
    merge: MergeStep | None = None
    alphabet: AlphabetComparison | None = None
    symbols: SymbolBlockComparison | None = None
    forced: ForcedCheck | None = None
    tolerance: Tolerance | None = None
    notes: list[str] = field(default_factory=list)


def _first_piece_difference(
    ref_tokens: Sequence[str], fast_tokens: Sequence[str], specials: Sequence[str]
) -> Divergence | None:
    """Unigram: the first id where the pieces differ (they are sorted by score, so near-equal
    scores fall in another order)."""
    first = first_vocab_difference(
        VocabLayout(list(ref_tokens), len(dict.fromkeys(specials)), [], []),
        VocabLayout(list(fast_tokens), len(dict.fromkeys(specials)), [], []),
    )
    if first is not None and first.stage == "merges":
        first.stage = "pieces"
        first.message = (
            f"id {first.index}: toktools {first.reference!r} vs tokenizers {first.fast!r} "
            "(pieces sorted by score: near-equal scores fall in another order)"
        )
    return first


def _explain_difference(
    found: _Findings,
    trainer: Trainer,
    settings: dict[str, Any],
    counts: dict[str, int],
    reference: Tokenizer,
    fast_tokenizer: Any,
    work: Path,
    ref_tokens: Sequence[str],
    fast_tokens: Sequence[str],
) -> None:
    """BPE and WordPiece: the first differing id, then why — the alphabet cut, the ``##c``
    block, or the first differing merge replayed."""
    prefix, suffix = trainer.decorations(settings["options"])
    ref_layout = vocab_layout(ref_tokens, settings["special_tokens"], prefix, suffix)
    fast_layout = vocab_layout(fast_tokens, settings["special_tokens"], prefix, suffix)
    found.first = first_vocab_difference(ref_layout, fast_layout)
    found.alphabet = compare_alphabets(
        ref_layout.alphabet,
        fast_layout.alphabet,
        counts,
        settings["options"].get("limit_alphabet"),
        trainer.initial_alphabet(settings["options"]),
    )
    found.symbols = compare_symbol_blocks(ref_layout.symbols, fast_layout.symbols)
    blocks_identical = found.alphabet is None and found.symbols is None
    if trainer.explains_merges and blocks_identical:
        ours_dir, theirs_dir = work / "reference", work / "fast"
        ref_merges = bpe.loads_merges_txt((ours_dir / "merges.txt").read_text(encoding="utf-8"))
        fast_merges = bpe.loads_merges_txt((theirs_dir / "merges.txt").read_text(encoding="utf-8"))
        found.merge = explain_merge_divergence(
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
        found.notes.append(
            "the merges were not replayed: the alphabet or the decorated-symbol block already differs "
            "(tokenizers decides ties there at random, spec §5) and the merges follow from those ids; "
            "forced mode is only implemented for WordPiece"
        )
    if trainer.has_forced_mode and blocks_identical and found.first is not None and found.first.stage == "merges":
        found.notes.append("alphabet and ##c block are identical, yet the merged tokens differ: see forced mode")
