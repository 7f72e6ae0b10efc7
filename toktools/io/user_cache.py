"""A small on-disk cache for facts that are slow to compute and fixed per input and code.

Examples: which code points the installed ``regex`` classifies differently from ``tokenizers``
(a scan of every code point, ~0.7 s), or whether tiktoken is exact for a tokenizer (one BPE
run per token). Entries are JSON files, or binary ones with a checksum (:func:`read_blob`),
under ``TOKTOOLS_CACHE_DIR`` or ``~/.cache/toktools`` (``XDG_CACHE_HOME`` honoured);
``TOKTOOLS_CACHE_DIR=`` (empty) turns the cache off. A cache only: an unreadable or unwritable
place is ignored.

**One policy for every entry** (:func:`entry_path`): its name is the hash of its input (the
sha256 of a ``tokenizer.json``'s bytes, say) and a key of the code that computed it: the
sha256 of the *source bytes* of the modules that decide the value (:func:`code_fingerprint`),
the versions of the libraries that decide it and Python's. Editing one of those modules, or
upgrading one of those libraries, gives every entry computed with them a new name, so an
entry is never read by code other than the code that wrote it. Modification times and
hand-bumped format numbers play no part: a checkout whose files are touched keeps its entries,
and a change nobody remembered to announce still misses.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from functools import cache
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
    if module is not None and getattr(module, "__version__", None):
        return str(module.__version__)  # (gigatoken has none: then its metadata, as below)
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


def module_source(name: str) -> bytes:
    """The source bytes of module ``name``, found as ``import`` would find it without running it
    (its parent packages are imported)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise OSError(f"no source file for module {name}")
    return Path(spec.origin).read_bytes()


@cache
def code_fingerprint(*modules: str) -> str:
    """sha256 of the source bytes of ``modules`` (dotted names; a package stands for every ``.py``
    file below it), by name and content only: never a modification time. Kept per process:
    reading ~20 modules costs about a millisecond, and the code does not change while it runs.
    Raises :class:`OSError` where a module has no source file (then there is no entry), or
    :class:`ImportError` where a parent package is missing."""
    import importlib.util

    digest = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise OSError(f"no module {name}")
        if spec.submodule_search_locations:  # a package: each of its files, in a fixed order
            files = sorted(
                (path.relative_to(root).as_posix(), path)
                for root in map(Path, spec.submodule_search_locations)
                for path in root.rglob("*.py")
            )
            for relative, path in files:
                digest.update(f"{name}/{relative}\0".encode() + hashlib.sha256(path.read_bytes()).digest())
        else:
            digest.update(f"{name}\0".encode() + hashlib.sha256(module_source(name)).digest())
    return digest.hexdigest()


def code_key(modules: Sequence[str], libraries: Sequence[str] = ()) -> str:
    """A short hash of what computes an entry: :func:`code_fingerprint` of ``modules``, the
    version of each of ``libraries`` (the third-party ones that decide the value) and Python's."""
    versions = "|".join(f"{name}={library_version(name)}" for name in libraries)
    python = f"python={sys.version_info[0]}.{sys.version_info[1]}"
    text = f"{code_fingerprint(*modules)}|{versions}|{python}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def entry_path(
    kind: str, name: str, suffix: str, *, modules: Sequence[str], libraries: Sequence[str] = ()
) -> Path | None:
    """Where the entry of ``kind`` for input ``name`` (the sha256 of the input, or a readable name
    that stands for it) computed by this code lives: ``root/kind/name-KEY.suffix``, ``KEY`` being
    :func:`code_key` of ``modules`` and ``libraries``. None when the cache is off or a module has
    no source to hash."""
    root = cache_root()
    if root is None:
        return None
    try:
        key = code_key(modules, libraries)
    except (OSError, ImportError):
        return None
    return root / kind / f"{name}-{key}{suffix}"


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
    _write(path, _BLOB_MAGIC + hashlib.sha256(payload).digest() + payload)
