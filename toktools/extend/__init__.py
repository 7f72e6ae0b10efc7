"""Extending a vocabulary for a new language while keeping every existing id (``toktools extend``).

``toktools.extend(base, corpus, output, add=N)`` writes the base with N more tokens learned from
the corpus, in the base's own formats, every existing id, merge and piece unchanged, plus
``new_tokens.json``; :func:`init_embeddings` grows a model's embedding matrix from it.
Modules: :mod:`~toktools.extend.base` (what the base is), :mod:`~toktools.extend.corpus_text`
(training and held-out lines), :mod:`~toktools.extend.bpe_training` and
:mod:`~toktools.extend.bpe` (BPE), :mod:`~toktools.extend.tiktoken_ranks`,
:mod:`~toktools.extend.wordpiece`, :mod:`~toktools.extend.sentencepiece`,
:mod:`~toktools.extend.mapping` (the embedding map) and :mod:`~toktools.extend.report`.

The package itself is callable: ``toktools.extend(...)`` is :func:`toktools.extend.run.extend`.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from toktools.extend.mapping import NewToken, init_embeddings
from toktools.extend.run import ExtendResult, extend

__all__ = ["extend", "init_embeddings", "NewToken", "ExtendResult"]


class _CallableModule(types.ModuleType):
    """``toktools.extend`` is this package and, called, :func:`extend`."""

    def __call__(self, *args: Any, **kwargs: Any) -> ExtendResult:
        return extend(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
