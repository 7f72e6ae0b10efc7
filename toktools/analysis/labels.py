"""Short, distinct tokenizer labels for tables, pictures and reports.

A tokenizer given as ``…/gpt2/tokenizer.json`` should read ``gpt2``, not ``tokenizer.json``
nor the whole path (which runs into the next panel's title in a picture).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["short_name", "short_names"]

#: File names that say nothing about the tokenizer: its folder names it.
_FILE_NAMES = {"tokenizer.json", "vocab.txt", "vocab.json", "merges.txt", "tokenizer.model", "spiece.model"}


def short_name(name: str) -> str:
    """A tokenizer's label without its path: ``…/gpt2/tokenizer.json`` → ``gpt2``."""
    path = Path(name.rstrip("/\\"))
    if path.name in _FILE_NAMES and path.parent.name not in ("", ".", ".."):
        return path.parent.name
    return path.name or name


def short_names(names: Sequence[str]) -> list[str]:
    """Short labels for ``names``, kept distinct: where shortening merges two, the folder and
    file name (``gpt2/vocab.json``), and if that is not enough, a number (``gpt2 (2)``)."""
    short = [short_name(n) for n in names]
    short = [
        label if short.count(label) == 1 else "/".join(Path(name.rstrip("/\\")).parts[-2:])
        for label, name in zip(short, names)
    ]
    seen: dict[str, int] = {}
    out = []
    for label in short:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if short.count(label) == 1 else f"{label} ({seen[label]})")
    return out
