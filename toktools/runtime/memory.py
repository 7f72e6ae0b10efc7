"""Freed memory handed back to the system between the pieces of a long document.

Encoding a long document piece by piece allocates and frees the same large buffers again and
again (the piece's text, the engine's arrays, the ids). glibc raises its ``mmap`` threshold
after freeing a large block, so the next ones come from the heap, where freed pages in the
middle stay resident: a 50 MB line then needs several times the memory of one piece.
``malloc_trim(0)`` returns those pages (Linux with glibc; elsewhere nothing happens). It costs
a walk over the heap, so it runs once per piece of a long document, never per ordinary line.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

_trim: Any = None
_looked = False


def release_freed_memory() -> None:
    """Return freed heap pages to the system (glibc's ``malloc_trim(0)``), if the C library has it."""
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
            except (OSError, AttributeError):
                _trim = None
    if _trim is not None:
        _trim(0)
