"""Whether toktools' compiled kernels (numba, extra ``fast``) may be used, answered without
importing numba (its import alone is a large share of a short run's start-up)."""

from __future__ import annotations

import os
from typing import Any


def pure_python_forced() -> bool:
    """``TOKTOOLS_PURE_PYTHON=1``: the pure-Python steps instead of the compiled Unigram ones
    (same results, slower)."""
    return os.environ.get("TOKTOOLS_PURE_PYTHON", "") not in ("", "0")


def compiled_module(name: str) -> Any:
    """The module of compiled kernels ``name`` (it imports numba), or None when numba is not
    installed or :func:`pure_python_forced`."""
    if pure_python_forced():
        return None
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def numba_installed() -> bool:
    """numba is there to be imported (found, not imported: that is the expensive part)."""
    from importlib.util import find_spec

    try:
        return find_spec("numba") is not None
    except (ImportError, ValueError):
        return False
