"""What every engine shares: the interface, a batch of ids packed in one array, and the
tokenizer's document as engines take it (no truncation, no padding, maybe parsed on demand).

An engine turns a batch of texts into lists of ids, with no template (no ``[CLS]``/``<s>``), no
truncation and no padding; special tokens written in the text are matched as tokens, as
``tokenizers`` does.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any

IdBatch = list[list[int]]

#: The tokenizer's document, or a function that gives it when first needed (a cached start-up
#: parses ``tokenizer.json`` only when an engine needs more than its shape: see
#: :mod:`toktools.corpus.prepared_tokenizer`).
DocumentSource = Mapping[str, Any] | Callable[[], Mapping[str, Any]]


def loaded_document(document: DocumentSource) -> Mapping[str, Any]:
    """The document a :data:`DocumentSource` stands for (calling it parses it, the first time)."""
    return document() if callable(document) else document  # type: ignore[no-any-return]


def document_fingerprint(document: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a ``tokenizer.json`` document: same pipeline, same hash."""
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def corpus_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document as corpus encoding uses it: no truncation, no padding (whole documents)."""
    doc = dict(document)
    doc["truncation"] = None
    doc["padding"] = None
    return doc


class Engine:
    """Texts → lists of ids (no template, no truncation, special tokens in the text matched)."""

    name = ""
    #: The characters of a batch this engine prefers at most (None: as large as the caller
    #: allows). The libraries' threads need no large batch, and smaller ones overlap reading,
    #: encoding and writing better (a 5 MB Chinese file is under 2 M characters).
    batch_chars: int | None = None
    #: why this engine encodes the run (set by :func:`toktools.engines.choice.make_engine`)
    why: str = ""

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        """Release worker processes or threads."""


class PackedIds:
    """The ids of a batch of texts as one array: ``data`` holds every id as a native uint32,
    text after text, and ``counts`` how many each text has. Writers take ``data`` in one piece
    (:meth:`toktools.corpus.writers.DocumentWriter.write_uint32`); indexing gives one text's
    ids as a list (for the few that are checked)."""

    def __init__(self, data: bytes, counts: list[int]) -> None:
        self.data = data
        self.counts = counts
        self._starts: list[int] | None = None

    def __len__(self) -> int:
        return len(self.counts)

    def __getitem__(self, index: int) -> list[int]:
        if index < 0:
            index += len(self.counts)
        if self._starts is None:
            from itertools import accumulate

            self._starts = list(accumulate(self.counts, initial=0))
        start = self._starts[index]
        return array("I", self.data[4 * start : 4 * self._starts[index + 1]]).tolist()
