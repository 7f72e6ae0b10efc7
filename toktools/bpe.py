"""Byte-pair encoding, the algorithm in four lines, and where each part of it lives.

Training (:func:`train_bpe`)::

    count the words of the corpus, split each into symbols (bytes, or characters)
    repeat until the vocabulary is full:
        count every adjacent pair of symbols, weighted by word counts
        merge the most frequent pair everywhere (ties: the smallest (left id, right id))

Encoding a word (:func:`merge_symbols`): apply the trained merges, lowest rank first.

* :mod:`toktools.models.bpe.naive` — training exactly as above, recounting everything at every
  merge: read it first (:func:`train_bpe_naive`).
* :mod:`toktools.models.bpe.trainer` — the same choices as ``tokenizers``' ``BpeTrainer``,
  merge for merge, with a lazily invalidated heap and words as strings of symbol ids.
* :mod:`toktools.models.bpe.merges` — the merge-applying half; the vectorised and compiled
  merges of corpus encoding are :mod:`~toktools.models.bpe.vectorized_merge` and
  :mod:`~toktools.models.bpe.compiled_merge`.
* :mod:`toktools.models.bpe.files` — ``vocab.json`` and ``merges.txt``.
* :mod:`toktools.bytelevel` — the byte-level symbols and GPT-2 split of GPT-2 / RoBERTa.

This module is the front door: it re-exports the public names, and nothing inside toktools
imports it.
"""

from __future__ import annotations

from toktools.models.bpe.files import (
    MERGES_HEADER,
    dumps_merges_txt,
    dumps_vocab_json,
    loads_merges_txt,
    loads_vocab_json,
    read_text_file,
)
from toktools.models.bpe.merges import MergeMap, Pair, build_merge_map, merge_symbols
from toktools.models.bpe.naive import ReusedToken, train_bpe_naive
from toktools.models.bpe.trainer import BpeTrainerConfig, BpeTrainingResult, compute_alphabet, decorated, train_bpe

__all__ = [
    "MERGES_HEADER",
    "BpeTrainerConfig",
    "BpeTrainingResult",
    "MergeMap",
    "Pair",
    "ReusedToken",
    "build_merge_map",
    "compute_alphabet",
    "decorated",
    "dumps_merges_txt",
    "dumps_vocab_json",
    "loads_merges_txt",
    "loads_vocab_json",
    "merge_symbols",
    "read_text_file",
    "train_bpe",
    "train_bpe_naive",
]
