"""A small on-disk cache for facts that are slow to compute and fixed per library version.

Examples: which code points the installed ``regex`` classifies differently from ``tokenizers``
(a scan of every code point, ~0.7 s), or whether tiktoken is exact for a tokenizer (one BPE
run per token). Entries are JSON files under ``TOKTOOLS_CACHE_DIR`` or ``~/.cache/toktools``
(``XDG_CACHE_HOME`` honoured); ``TOKTOOLS_CACHE_DIR=`` (empty) turns the cache off. A cache
only: an unreadable or unwritable place is ignored, and each key names the versions it holds for.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cache_root() -> Path | None:
    """The cache directory (it may not exist yet), or None when the cache is turned off."""
    root = os.environ.get("TOKTOOLS_CACHE_DIR")
    if root == "":
        return None
    if root:
        return Path(root)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toktools"


def cache_file(*parts: str) -> Path | None:
    """``root/part/.../part`` or None when the cache is off."""
    root = cache_root()
    return None if root is None else root.joinpath(*parts)


def read_json(path: Path | None) -> Any:
    """The cached value, or None (absent, unreadable or not JSON)."""
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path | None, value: Any) -> None:
    """Store ``value`` atomically (a temporary file renamed into place); failures are ignored."""
    if path is None:
        return
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(value, out)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    except OSError:
        pass  # a read-only home is fine
