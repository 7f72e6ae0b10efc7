"""Corpus files in, training inputs out: reading and counting words, documents, encoding
(one call, :func:`toktools.corpus.encode.encode_corpus`), writers, shards and their manifest,
and the ``--verify`` checker.

``toktools.corpus`` was one module before 0.2.0; its names still resolve here (from
:mod:`toktools.corpus.reading`).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The names of the former module ``toktools.corpus``, imported on first use."""
    import importlib
    import importlib.util

    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule: not the old names
        return importlib.import_module(f"{__name__}.{name}")
    module = importlib.import_module("toktools.corpus.reading")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'toktools.corpus' has no attribute {name!r}") from None
