"""A small on-disk cache for facts that are slow to compute and fixed per library version.

Examples: which code points the installed ``regex`` classifies differently from ``tokenizers``
(a scan of every code point, ~0.7 s), or whether tiktoken is exact for a tokenizer (one BPE
run per token). Entries are JSON files, or binary ones with a checksum (:func:`read_blob`),
under ``TOKTOOLS_CACHE_DIR`` or ``~/.cache/toktools`` (``XDG_CACHE_HOME`` honoured);
``TOKTOOLS_CACHE_DIR=`` (empty) turns the cache off. A cache only: an unreadable or unwritable
place is ignored, and each key names the versions it holds for.
"""

from __future__ import annotations

import json
import os
import sys
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


def library_version(name: str) -> str:
    """A library's version (``"none"`` if it is not installed), read from its metadata without
    importing it where possible: entries are keyed by versions on every run, and importing
    ``tokenizers`` or numba only to ask costs more than the cache saves."""
    module = sys.modules.get(name)
    if module is not None:
        return str(getattr(module, "__version__", "?"))
    try:
        import importlib.util

        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return "none"
    if spec is None or spec.origin is None:
        return "none"
    site = Path(spec.origin).parent.parent
    found = sorted(site.glob(f"{name}-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len(name) + 1 : -len(".dist-info")]
    try:
        module = __import__(name)
    except ImportError:
        return "none"
    return str(getattr(module, "__version__", "?"))


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
    _write(path, json.dumps(value).encode("utf-8"))


def _write(path: Path | None, data: bytes) -> None:
    if path is None:
        return
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    except OSError:
        pass  # a read-only home is fine


#: The head of a binary entry: this name, then the sha256 of the payload that follows.
_BLOB_MAGIC = b"toktools-cache-blob-1\n"


def read_blob(path: Path | None) -> bytes | None:
    """The payload of a binary entry written by :func:`write_blob`, or None when it is absent,
    unreadable, truncated or altered (its checksum no longer matches)."""
    import hashlib

    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(_BLOB_MAGIC)
    if not data.startswith(_BLOB_MAGIC) or len(data) < head + 32:
        return None
    payload = data[head + 32 :]
    if hashlib.sha256(payload).digest() != data[head : head + 32]:
        return None
    return payload


def write_blob(path: Path | None, payload: bytes) -> None:
    """Store ``payload`` atomically, with its sha256 in front; failures are ignored."""
    import hashlib

    _write(path, _BLOB_MAGIC + hashlib.sha256(payload).digest() + payload)
