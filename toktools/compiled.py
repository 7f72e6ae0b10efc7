"""Whether toktools' compiled kernels (numba, extra ``fast``) may be used, answered without
importing numba (its import alone is a large share of a short run's start-up)."""
from __future__ import annotations

import os


def pure_python_forced() -> bool:
    """``TOKTOOLS_PURE_PYTHON=1``: the pure-Python steps instead of the compiled Unigram ones
    (same results, slower)."""
    return os.environ.get("TOKTOOLS_PURE_PYTHON", "") not in ("", "0")


def numba_installed() -> bool:
    """numba is there to be imported (found, not imported: that is the expensive part)."""
    from importlib.util import find_spec

    try:
        return find_spec("numba") is not None
    except (ImportError, ValueError):
        return False
