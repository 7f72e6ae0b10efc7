"""Engines that encode corpora with the same ids: toktools' reference, ``tokenizers`` and
tiktoken, and the ``auto`` rule that picks the fastest exact one.

* :mod:`~toktools.engines.base` — the engine interface, packed ids, the document engines take;
* :mod:`~toktools.engines.analysis` — is tiktoken exact for a ``tokenizer.json`` (E1-E4, the probe);
* :mod:`~toktools.engines.tokenizers_engine`, :mod:`~toktools.engines.tiktoken_engine`,
  :mod:`~toktools.engines.reference` — the three engines;
* :mod:`~toktools.engines.choice` — :func:`make_engine` and the ``auto`` rule;
* :mod:`~toktools.engines.ids_only`, :mod:`~toktools.engines.ids_only_unigram` — the reference's
  ids-only paths; :mod:`~toktools.engines.reference_cache` — the built reference kept on disk.

``toktools.engines`` was one module before 0.2.0; its public names still resolve here.
"""

from __future__ import annotations

from toktools._moved import old_module_names

#: The public names of the former module ``toktools.engines`` -> the submodule that holds them.
_OLD_NAMES = {
    "ENGINES": "choice",
    "IdBatch": "base",
    "GPT2_PATTERN": "analysis",
    "ONE_PIECE_PATTERN": "analysis",
    "document_fingerprint": "base",
    "corpus_document": "base",
    "TiktokenPlan": "analysis",
    "Analysis": "analysis",
    "analyse": "analysis",
    "cuttable": "analysis",
    "Engine": "base",
    "TokenizersEngine": "tokenizers_engine",
    "TiktokenEngine": "tiktoken_engine",
    "PackedIds": "base",
    "PARALLEL_CHARS": "reference",
    "ReferenceEngine": "reference",
    "DocumentSource": "base",
    "loaded_document": "base",
    "reference_is_fastest": "choice",
    "likely_engine": "choice",
    "unigram_reference_likely": "choice",
    "tiktoken_available": "tiktoken_engine",
    "UNIGRAM_REFERENCE_MIN_BYTES": "choice",
    "compiled_unigram_reference": "choice",
    "fastest_reference": "choice",
    "make_engine": "choice",
    "probe_code_points": "analysis",
    "probe_text": "analysis",
    "probe_tiktoken": "analysis",
}


__getattr__ = old_module_names(__name__, _OLD_NAMES)
