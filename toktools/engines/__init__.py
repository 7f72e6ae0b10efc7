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

from typing import Any

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


def __getattr__(name: str) -> Any:
    """The names of the former module ``toktools.engines``, imported on first use."""
    import importlib
    import importlib.util

    module = _OLD_NAMES.get(name)
    if module is not None:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule not imported yet
    raise AttributeError(f"module 'toktools.engines' has no attribute {name!r}")
