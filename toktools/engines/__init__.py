"""Engines that encode corpora with the same ids: toktools' reference, ``tokenizers`` and
tiktoken, and the ``auto`` rule that picks the fastest exact one.

``toktools.engines`` was one module before 0.2.0; its names still resolve here (from
:mod:`toktools.engines.core`).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The names of the former module ``toktools.engines``, imported on first use."""
    import importlib
    import importlib.util

    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule: not the old names
        return importlib.import_module(f"{__name__}.{name}")
    module = importlib.import_module("toktools.engines.core")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'toktools.engines' has no attribute {name!r}") from None
