"""WordPiece (BERT): a word is cut greedily, longest vocabulary match first.

::

    "unaffable"  ->  "un"  "##aff"  "##able"      (continuations carry the "##" prefix)
    a word with no match at some point, or longer than max_input_chars_per_word -> "[UNK]"

* :mod:`toktools.models.wordpiece.model` — the greedy match, ``vocab.txt`` and the decoder;
* training as ``tokenizers`` does it is BPE by pair count with a ``##`` prefix
  (:mod:`toktools.models.bpe.trainer`, through :func:`toktools.train_wordpiece`);
* :mod:`toktools.models.wordpiece.likelihood_trainer` — the original likelihood-scored idea;
* :func:`toktools.presets.bert_wordpiece` — the BERT tokenizer around it (normaliser,
  pre-tokeniser, ``[CLS] … [SEP]``).

This module is the front door: it re-exports the public names, and nothing inside toktools
imports it.
"""

from __future__ import annotations

from toktools.models.wordpiece.model import (
    BERT_SPECIAL_TOKENS,
    RUST_WHITESPACE,
    decode_wordpieces,
    dumps_vocab_txt,
    loads_vocab_txt,
    read_vocab_txt,
    wordpiece_decode_chain,
    wordpiece_split,
)

__all__ = [
    "BERT_SPECIAL_TOKENS",
    "RUST_WHITESPACE",
    "decode_wordpieces",
    "dumps_vocab_txt",
    "loads_vocab_txt",
    "read_vocab_txt",
    "wordpiece_decode_chain",
    "wordpiece_split",
]
