"""Both backends trained with the same settings: the settings, word counting, the reference
trainer, ``tokenizers``' trainer, and their files saved side by side."""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toktools.errors import ToktoolsError
from toktools.training.trainers import Trainer

if TYPE_CHECKING:  # pragma: no cover
    from toktools.tokenizer import Tokenizer

__all__ = ["count_words", "parity_settings", "replace_dir", "save_both", "train_fast", "train_reference"]


def parity_settings(
    trainer: Trainer,
    vocab_size: int,
    min_frequency: int | None,
    special_tokens: Sequence[str] | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """The settings both sides train with (the trainer's defaults filled in); an option the
    trainer does not take is refused."""
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


def count_words(
    trainer: Trainer, files: Sequence[str], options: Mapping[str, Any], workers: int | None
) -> dict[str, int]:
    """The reference's word counts of ``files`` (timed apart from its merge loop)."""
    return trainer.count_words(files, options, workers=workers)


def train_reference(
    trainer: Trainer,
    settings: Mapping[str, Any],
    word_counts: dict[str, int],
    forced_order: tuple[Sequence[str], Sequence[str]] | None = None,
) -> Tokenizer:
    """The reference trained on ``word_counts``; ``forced_order`` replays ``tokenizers``' alphabet
    and ``##c`` order (WordPiece's forced mode)."""
    return trainer.train(
        settings["vocab_size"],
        settings["min_frequency"],
        settings["special_tokens"],
        word_counts,
        settings["options"],
        forced_order,
    )


def train_fast(trainer: Trainer, settings: Mapping[str, Any], files: Sequence[str]) -> Any:
    """``tokenizers`` trained on ``files`` with the same settings."""
    return trainer.train_fast(
        files, settings["vocab_size"], settings["min_frequency"], settings["special_tokens"], settings["options"]
    )


def save_both(
    trainer: Trainer, settings: Mapping[str, Any], reference: Tokenizer, train_files: Sequence[str], work: Path
) -> tuple[Any, float]:
    """Save the reference's files, train ``tokenizers`` (timed) and save its files beside them."""
    replace_dir(work / "reference")
    reference.save(work / "reference")
    fast_start = time.perf_counter()
    fast_tokenizer = train_fast(trainer, settings, train_files)
    fast_seconds = time.perf_counter() - fast_start
    replace_dir(work / "fast")
    trainer.save_fast(fast_tokenizer, work / "fast")
    return fast_tokenizer, fast_seconds


def replace_dir(directory: Path) -> None:
    """Make room for a fresh output directory at ``directory``."""
    if directory.is_symlink() or directory.is_file():
        directory.unlink()  # rmtree refuses symbolic links; the link goes, not its target
    elif directory.exists():
        shutil.rmtree(directory)
