"""Corpus files in, training inputs out: reading and counting words, documents, encoding
(one call, :func:`toktools.corpus.encode.encode_corpus`), writers, shards and their manifest,
and the ``--verify`` checker.

``toktools.corpus`` was one module before 0.2.0; its names still resolve here (from
:mod:`toktools.corpus.reading`).
"""

from __future__ import annotations

from toktools._moved import old_module_names

__getattr__ = old_module_names(__name__, "reading")
