"""The embedding map: for each new token, its id and the base's ids for the same text, so that a
model can grow its embedding matrix and start each new row where the base already was (the mean
of those rows: the new token then begins as the average of the pieces it replaces)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError


@dataclass
class NewToken:
    """One new token: its id, its string in the vocabulary, the text it stands for, and the base's
    ids for that text (in the same position of a word)."""

    id: int
    token: str
    text: str
    base_ids: list[int]
    #: the token's bytes in hex, when they are not whole UTF-8 characters (byte-level BPE)
    hex: str | None = None
    #: the id this token replaced (``[unused7]``), when it took an unused slot
    replaces: str | None = None

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": self.id, "token": self.token, "text": self.text, "base_ids": self.base_ids}
        if self.hex is not None:
            entry["hex"] = self.hex
        if self.replaces is not None:
            entry["replaces"] = self.replaces
        return entry


def dumps_new_tokens(base: str, tokens: Sequence[NewToken], base_size: int) -> str:
    """``new_tokens.json``: the base, its size (rows of its embedding matrix), and the new tokens."""
    document = {
        "base": base,
        "base_vocab_size": base_size,
        "vocab_size": max([base_size - 1, *(t.id for t in tokens)]) + 1,
        "new_tokens": [t.to_json() for t in tokens],
    }
    return json.dumps(document, ensure_ascii=False, indent=1) + "\n"


def _entries(mapping: str | Path | Mapping[str, Any] | Sequence[Any]) -> tuple[list[tuple[int, list[int]]], int | None]:
    """``(id, base ids)`` pairs and the vocabulary size, from a ``new_tokens.json`` (path or parsed)
    or a list of its entries (dicts, or ``(id, base_ids)`` pairs)."""
    if isinstance(mapping, (str, Path)):
        try:
            mapping = json.loads(Path(mapping).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ToktoolsError(f"cannot read the embedding map {mapping}: {err}") from None
    size = None
    if isinstance(mapping, Mapping):
        size = mapping.get("vocab_size")
        mapping = mapping.get("new_tokens", [])
    pairs = []
    for entry in mapping:  # type: ignore[union-attr]
        if isinstance(entry, Mapping):
            pairs.append((int(entry["id"]), [int(i) for i in entry["base_ids"]]))
        else:
            token_id, base_ids = entry[0], entry[1]
            pairs.append((int(token_id), [int(i) for i in base_ids]))
    return pairs, size


def init_embeddings(old: Any, mapping: str | Path | Mapping[str, Any] | Sequence[Any]) -> Any:
    """A new embedding matrix (NumPy) for the extended vocabulary: the rows of ``old`` kept, each
    new token's row the mean of the base rows of its ``base_ids``.

    ``mapping`` is ``new_tokens.json`` (its path, or its parsed content, or its ``new_tokens``
    list). The matrix has ``max(len(old), vocab_size)`` rows: a token that took an unused slot
    (``--use-unused``) overwrites that row in place. A new token whose ``base_ids`` are empty
    keeps a row of the mean of all old rows."""
    import numpy as np

    matrix = np.asarray(old)
    if matrix.ndim != 2:
        raise ToktoolsError(f"the embedding matrix must have 2 dimensions, not {matrix.ndim}")
    pairs, size = _entries(mapping)
    rows = max([len(matrix), size or 0, *(token_id + 1 for token_id, _ in pairs)])
    out = np.empty((rows, matrix.shape[1]), dtype=matrix.dtype)
    out[: len(matrix)] = matrix
    fallback = matrix.mean(axis=0)
    out[len(matrix) :] = fallback
    for token_id, base_ids in pairs:
        if any(i >= len(matrix) or i < 0 for i in base_ids):
            raise ToktoolsError(f"new token {token_id}: base id outside the {len(matrix)} rows of the matrix")
        out[token_id] = matrix[base_ids].mean(axis=0) if base_ids else fallback
    return out
