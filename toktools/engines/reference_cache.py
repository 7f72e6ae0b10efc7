"""The reference tokenizer of a ``tokenizer.json``, built once and kept in the user cache.

Every process that needs toktools' own tokenizer for a corpus pays for it. That means the
``--verify`` checker beside every corpus run, and the reference engine itself. The cost is
reading the ``tokenizer.json`` (~0.04 s for 50,000 merges) and building it (the merge table and
the vocabulary maps, ~0.1 s). Unpickling the built tokenizer costs a third of that. On a
2-core machine the checker's CPU competes with the encoding for the whole of a short run.

An entry is keyed by the tokenizer's fingerprint (the sha256 of its file, from
:mod:`toktools.corpus.prepared_tokenizer`) and by toktools' own code. The code key is the size and
modification time of every module of the package, so a new version or an edited checkout never
unpickles objects whose classes have changed. Entries live in the user cache
(:mod:`toktools.io.user_cache`; ``TOKTOOLS_CACHE_DIR=`` turns it off), with a checksum. A damaged
entry is built again. Like the rest of the user cache, an entry is trusted as the user's own
files are: unpickling runs code.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Bump when what is pickled changes in a way the code key would not see.
FORMAT = 1


def reference_tokenizer(document: Callable[[], Mapping[str, Any]], fingerprint: str | None = None) -> Any:
    """The reference :class:`~toktools.tokenizer.Tokenizer` built as
    ``from_tokenizer_json(document())``. It comes from the user cache when an entry exists for
    ``fingerprint``, which must name that document, so ``document`` is called only on a miss."""
    from toktools.io.user_cache import read_blob, write_blob

    path = _entry_path(fingerprint) if fingerprint else None
    payload = read_blob(path)
    if payload is not None:
        try:
            return pickle.loads(payload)
        except Exception:  # noqa: BLE001 - an entry that does not load is built again
            pass
    tokenizer = _build(document)
    if path is not None:
        try:
            data = pickle.dumps(tokenizer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a part that does not pickle: no entry
            return tokenizer
        write_blob(path, data)
    return tokenizer


def _build(document: Callable[[], Mapping[str, Any]]) -> Any:
    # the collector is already paused by the callers that build at start-up (encode_shards'
    # CollectorPause, the --verify checker)
    from toktools.io.formats import from_tokenizer_json

    return from_tokenizer_json(document())


def _entry_path(fingerprint: str) -> Path | None:
    from toktools.io.user_cache import cache_file, cache_root

    if cache_root() is None:
        return None
    return cache_file(f"reference-v{FORMAT}", f"{fingerprint}-{code_key()}.pickle")


@lru_cache(maxsize=1)
def code_key() -> str:
    """A short hash of toktools' code as installed: every module's path, size and modification
    time (~1 ms to read, where hashing the sources would take several), and the versions of
    toktools and Python."""
    import toktools

    package = Path(toktools.__file__).resolve().parent
    digest = hashlib.sha256(f"{toktools.__version__}|{sys.version_info[:3]}".encode())
    for module in sorted(package.rglob("*.py")):
        stat = module.stat()
        digest.update(f"|{module.relative_to(package).as_posix()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]
