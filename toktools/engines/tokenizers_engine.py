"""The ``tokenizers`` engine: HuggingFace's Rust tokenizer loaded from the same document, so it is
exact for every tokenizer it can load."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toktools.engines.base import Engine, IdBatch, corpus_document
from toktools.errors import ToktoolsError
from toktools.io.serde_floats import dumps_for_serde


class TokenizersEngine(Engine):
    name = "tokenizers"
    batch_chars = 1 << 18

    def __init__(self, document: Mapping[str, Any]) -> None:
        import tokenizers

        try:
            self.tokenizer = tokenizers.Tokenizer.from_str(dumps_for_serde(corpus_document(document)))
        except Exception as err:  # tokenizers raises plain Exception subclasses
            raise ToktoolsError(f"engine tokenizers cannot load this tokenizer: {str(err).splitlines()[0]}") from None

    def encode_batch(self, texts: Sequence[str]) -> IdBatch:
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        return [e.ids for e in encode(list(texts), add_special_tokens=False)]
