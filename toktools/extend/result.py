"""What every extender returns: the extended tokenizer, the files to write, and the new tokens."""

from __future__ import annotations

from dataclasses import dataclass, field

from toktools.extend.mapping import NewToken
from toktools.tokenizer import Tokenizer


@dataclass
class Extension:
    """An extended tokenizer before it is written: ``files`` (name -> text or bytes) go into the
    output directory as they are; ``notes`` are lines for the report (why fewer tokens were added,
    how many merges were passed over)."""

    tokenizer: Tokenizer
    files: dict[str, str | bytes]
    new_tokens: list[NewToken]
    base_size: int
    notes: list[str] = field(default_factory=list)
