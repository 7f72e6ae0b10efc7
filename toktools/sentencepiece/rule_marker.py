"""Where a corpus document carries the sentencepiece rule, and whether it does: asked at the
start of every corpus run (which engine, which checker), so kept apart from
:mod:`toktools.sentencepiece.tokenizer`, whose imports (the encoder, ``regex``, the parts) a run
on a library engine never needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: where a corpus document carries the sentencepiece rule (a key ``tokenizers`` would refuse)
DOCUMENT_KEY = "toktools_sentencepiece"


def follows_sentencepiece(document: Mapping[str, Any]) -> bool:
    """Whether a corpus document carries the sentencepiece rule."""
    return isinstance(document.get(DOCUMENT_KEY), Mapping)
