"""Reports about tokenizers: vocabulary statistics, one token's anatomy, corpus usage,
segmentation metrics, and side-by-side alignment of several tokenizers on one text.

This module gathers their public names (and keeps the old path ``toktools.report`` working);
each report lives in a module of its own:

* :mod:`toktools.analysis.scripts` — the Unicode script of a character or a text;
* :mod:`toktools.analysis.vocabulary` — vocabulary statistics (``inspect TOK``);
* :mod:`toktools.analysis.token_anatomy` — one token and its merge tree (``inspect --token``);
* :mod:`toktools.analysis.usage` — vocabulary use on a corpus (``inspect --corpus``);
* :mod:`toktools.analysis.metrics` — segmentation metrics and their table;
* :mod:`toktools.analysis.alignment` and :mod:`toktools.analysis.alignment_layout` — several
  segmentations lined up, and drawn as text;
* :mod:`toktools.analysis.comparison` — metrics and alignment together (``compare``).

Everything here works through the :class:`~toktools.tokenizer.Tokenizer` protocol and returns
dataclasses; each has ``.to_dict()`` giving plain JSON data (string keys, lists, numbers,
strings, ``None``) such that ``json.loads(json.dumps(d)) == d`` — the stable ``--json`` output
of ``toktools inspect`` and ``toktools compare``. The CLI renders the same objects with rich;
:meth:`Alignment.render_plain`, :func:`render_metrics_plain` and :meth:`MergeNode.render` are the
plain-text views for ``NO_COLOR`` / non-terminal output.

Definitions used throughout (they matter for the numbers):

* **surface** of a token: the text it stands for. Byte-level tokens are decoded from their byte
  symbols (``ĠHello`` → ``" Hello"``); a byte-level token whose bytes are not valid UTF-8 on their
  own (``æĪ`` = E6 88, two thirds of ``我``) has no surface, only bytes ("partial bytes").
  WordPiece continuation pieces lose their prefix (``##ing`` → ``ing``). What a token stands
  for, how it is shown and which tokens are unknown or special is asked of
  :mod:`toktools.analysis.token_view`, the one module that knows the models.
* **special tokens** (added tokens flagged special: ``[CLS]``, ``<|endoftext|>``…) are listed on
  their own and left out of the histograms, script coverage, longest tokens and unused counts.
* segmentation metrics (chars/token, bytes/token, tokens/word, split words, UNK rate, byte
  pieces, sequence lengths) have one definition each, in :mod:`toktools.analysis.segstats`.
* Encodings are computed **without special tokens, truncation or padding** (a published
  ``tokenizer.json`` may carry ``truncation: 50`` or ``padding: Fixed(128)``; metrics must see the
  whole text and nothing else). The tokenizer passed in is not modified.
"""

from __future__ import annotations

from toktools.analysis.alignment import Alignment, DiffSpan, SegmentationRow, TokenSpan, align_segmentations
from toktools.analysis.alignment_layout import legend_lines
from toktools.analysis.comparison import Comparison, compare
from toktools.analysis.metrics import Metrics, render_metrics_plain, segment_metrics
from toktools.analysis.scripts import ScriptName, script_of_char, script_of_text
from toktools.analysis.token_anatomy import MergeNode, TokenInfo, merge_tree, token_info
from toktools.analysis.usage import UsageStats, corpus_usage
from toktools.analysis.vocabulary import (
    BERT_BASE_PARAMETERS,
    EmbeddingCost,
    ScoreStats,
    TokenEntry,
    VocabStats,
    vocab_stats,
)

__all__ = [
    "ScriptName",
    "script_of_char",
    "script_of_text",
    "TokenEntry",
    "VocabStats",
    "vocab_stats",
    "MergeNode",
    "TokenInfo",
    "token_info",
    "merge_tree",
    "UsageStats",
    "corpus_usage",
    "Metrics",
    "segment_metrics",
    "TokenSpan",
    "SegmentationRow",
    "DiffSpan",
    "Alignment",
    "align_segmentations",
    "Comparison",
    "compare",
    "render_metrics_plain",
    "BERT_BASE_PARAMETERS",
    "EmbeddingCost",
    "ScoreStats",
    "legend_lines",
]
