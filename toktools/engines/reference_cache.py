"""The reference tokenizer of a ``tokenizer.json``, built once and kept in the user cache.

Every process that needs toktools' own tokenizer for a corpus pays for it. That means the
``--verify`` checker beside every corpus run, and the reference engine itself. The cost is
reading the ``tokenizer.json`` (~0.04 s for 50,000 merges) and building it (the merge table and
the vocabulary maps, ~0.1 s). Unpickling the built tokenizer costs a third of that. On a
2-core machine the checker's CPU competes with the encoding for the whole of a short run.

An entry is keyed by the tokenizer's fingerprint (the sha256 of its file, from
:mod:`toktools.corpus.prepared_tokenizer`) and by the code that builds and defines it: the
source bytes of the modules of :data:`BUILT_BY` (the tokenizer, its parts and their tables, the
BPE and WordPiece models, the loader) and the versions of ``regex`` and Python
(:func:`toktools.io.user_cache.entry_path`). So edited code never unpickles objects whose
classes have changed, and touching a file without changing it keeps the entry. Entries live in
the user cache (:mod:`toktools.io.user_cache`; ``TOKTOOLS_CACHE_DIR=`` turns it off), with a
checksum. A damaged entry is built again. Like the rest of the user cache, an entry is trusted
as the user's own files are: unpickling runs code.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: The modules (a package: all of its own) whose code builds the reference tokenizer or defines
#: the classes pickled with it; their sources are part of an entry's key.
BUILT_BY = (
    "toktools.tokenizer",
    "toktools.encoding",
    "toktools.presets",
    "toktools.parts",
    "toktools.tables",
    "toktools.models.bpe",
    "toktools.models.wordpiece.model",
    "toktools.formats",
    "toktools.io.validate",
    "toktools.io.serde_floats",
    "toktools.sentencepiece",
    "toktools.models.unigram",
    "toktools.engines.reference_cache",
)
#: The libraries whose objects the built tokenizer may hold (compiled patterns).
BUILT_WITH = ("regex",)


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
    from toktools.formats import from_tokenizer_json

    return from_tokenizer_json(document())


def _entry_path(fingerprint: str) -> Path | None:
    from toktools.io.user_cache import entry_path

    return entry_path("reference", fingerprint, ".pickle", modules=BUILT_BY, libraries=BUILT_WITH)
