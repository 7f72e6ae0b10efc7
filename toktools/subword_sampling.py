"""Subword regularisation switched on for a loaded tokenizer, and the seed of each epoch.

Two kinds: BPE-dropout with `tokenizers`' semantics (any BPE ``tokenizer.json``) and
sentencepiece's sampling for a Unigram ``.model`` (``alpha``, ``nbest_size``). Either way each
text draws from a generator seeded by the seed and the text alone, so batches, order and the
number of workers never change the ids. ``pretrain-data --epochs`` resamples per epoch with
:func:`epoch_seed`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from toktools.errors import ToktoolsError


@dataclass(frozen=True)
class Sampling:
    """What to sample: ``dropout`` (BPE) or ``alpha`` with ``nbest_size`` (Unigram ``.model``)."""

    dropout: float | None = None
    alpha: float | None = None
    nbest_size: int = -1

    @property
    def enabled(self) -> bool:
        return self.dropout is not None or self.alpha is not None

    @property
    def draws(self) -> bool:
        """Whether two seeds can give two segmentations (P = 0, alpha = 0 or nbest 0/1 cannot)."""
        if self.dropout:
            return True
        return bool(self.alpha) and self.nbest_size not in (0, 1)

    def as_json(self) -> dict[str, Any]:
        return {"dropout": self.dropout, "alpha": self.alpha, "nbest_size": self.nbest_size}


def apply_sampling(tokenizer: Any, sampling: Sampling, seed: int) -> None:
    """Set ``tokenizer`` (loaded) to sample as ``sampling`` says, drawing from ``seed``; one
    line naming what fits when the model cannot."""
    if sampling.dropout is not None and sampling.alpha is not None:
        raise ToktoolsError("--dropout is for BPE and --sample-alpha for a Unigram .model: give one")
    if sampling.dropout is not None:
        if getattr(tokenizer.model, "type", None) != "BPE":
            raise ToktoolsError("--dropout needs a BPE tokenizer (a Unigram .model takes --sample-alpha)")
        if hasattr(tokenizer, "spm_model"):
            # sentencepiece's own BPE-dropout (bpe_model.cc) is not tokenizers'; the sentencepiece
            # rule's encoder would silently ignore the model part's dropout
            raise ToktoolsError(
                "--dropout: a sentencepiece BPE .model encodes with sentencepiece's rule, which has no "
                "tokenizers-style BPE-dropout; load it with --model-rule tokenizers"
            )
        if not 0.0 <= sampling.dropout <= 1.0:
            raise ToktoolsError(f"--dropout {sampling.dropout} is not between 0 and 1")
        tokenizer.model.dropout = sampling.dropout
        tokenizer.model.seed = seed
        tokenizer.model._setup_cache(0 if sampling.dropout else 200_000)
    if sampling.alpha is not None:
        if not hasattr(tokenizer, "enable_sampling"):
            raise ToktoolsError("--sample-alpha needs a Unigram sentencepiece .model")
        tokenizer.enable_sampling(sampling.alpha, sampling.nbest_size, seed)


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of ``epoch`` (0-based): ``seed`` itself for epoch 0, so one epoch is what a run
    without epochs writes; for the others 63 bits of sha256 over both numbers (no Python
    ``hash``, so ``PYTHONHASHSEED`` changes nothing)."""
    if epoch < 0:
        raise ValueError(f"epoch {epoch} is negative")
    if epoch == 0:
        return seed
    digest = hashlib.sha256(f"toktools-epoch\x00{seed}\x00{epoch}".encode("ascii")).digest()
    return int.from_bytes(digest[:8], "little") >> 1
