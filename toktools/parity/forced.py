"""WordPiece's forced mode: the reference re-trained with ``tokenizers``' alphabet and ``##c``
order replayed, which must then be byte-identical — the real check of the algorithm — and the
merge behind the first differing id when it is not."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toktools.models.bpe import trainer as bpe
from toktools.parity.agreement import compare_encodings
from toktools.parity.backends import replace_dir, train_reference
from toktools.parity.corpus_sample import PreparedCorpus
from toktools.parity.files import compare_dirs
from toktools.parity.merges import Pair, explain_step, replay_pair_counts
from toktools.parity.results import ForcedCheck, MergeStep
from toktools.parity.vocabularies import first_vocab_difference, vocab_layout
from toktools.training.trainers import Trainer

__all__ = ["explain_vocab_merge", "check_forced_mode"]


def check_forced_mode(
    trainer: Trainer,
    settings: dict[str, Any],
    word_counts: dict[str, int],
    fast_tokens: Sequence[str],
    theirs_dir: Path,
    directory: Path,
    fast_tokenizer: Any,
    prepared: PreparedCorpus,
    workers: int | None,
) -> ForcedCheck:
    """WordPiece: re-train the reference with ``tokenizers``' alphabet and ``##c`` order."""
    from toktools.training.pipeline import forced_order_from_vocab

    prefix = settings["options"]["wordpieces_prefix"]
    order = forced_order_from_vocab(list(fast_tokens), settings["special_tokens"], prefix)
    start = time.perf_counter()
    tokenizer = train_reference(trainer, settings, word_counts, forced_order=order)
    seconds = time.perf_counter() - start
    replace_dir(directory)
    tokenizer.save(directory)
    files = compare_dirs(trainer, directory, theirs_dir)
    identical = all(f.identical for f in files if f.name in trainer.model_files)
    check = ForcedCheck(True, identical, seconds, files)
    if not identical:
        ours = trainer.read_vocab(directory)
        layout_ref = vocab_layout(ours, settings["special_tokens"], prefix, None)
        layout_fast = vocab_layout(fast_tokens, settings["special_tokens"], prefix, None)
        check.first_difference = first_vocab_difference(layout_ref, layout_fast)
        diff = check.first_difference
        if diff is not None and (
            diff.stage == "merges" or (diff.stage == "size" and diff.index >= layout_ref.merged_start)
        ):
            result = _wordpiece_merges(word_counts, settings, order)
            check.merge = explain_vocab_merge(
                word_counts, result, fast_tokens, diff.index, prefix, settings["min_frequency"]
            )
    check.agreement = compare_encodings(tokenizer, fast_tokenizer, prepared.heldout, prepared.info.heldout, workers)
    return check


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


def explain_vocab_merge(
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
            step = explain_step(k, counts, vocab, [vocab], reference_pair, None, min_frequency, f"vocab id {index}")
            step.reason = "unexplained"
            step.message = (
                f"merge #{k + 1}: tokenizers' token {target!r} (id {index}) is not one merge of the "
                f"symbols left after the common merges"
            )
            return step
        fast_pair = best[1]
    return explain_step(k, counts, vocab, [vocab], reference_pair, fast_pair, min_frequency, f"vocab id {index}")
