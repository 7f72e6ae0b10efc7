"""Training a vocabulary: the entry points (:mod:`.pipeline`), one trainer per model found by
name (:mod:`.trainers`), and the same training with HuggingFace ``tokenizers``
(:mod:`.tokenizers_backend`), the yardstick of parity.

``toktools.training`` was one module before 0.2.0; its names still resolve here (from
:mod:`toktools.training.pipeline`).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """The names of the former module ``toktools.training``, imported on first use."""
    import importlib
    import importlib.util

    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule: not the old names
        return importlib.import_module(f"{__name__}.{name}")
    module = importlib.import_module("toktools.training.pipeline")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'toktools.training' has no attribute {name!r}") from None
