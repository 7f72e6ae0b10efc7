"""The WordLevel model: a word is one token, or the unknown token."""

from __future__ import annotations

from typing import Any

from toktools.errors import ToktoolsError
from toktools.parts._fields import field
from toktools.parts.base import Model
from toktools.parts.registry import register


@register
class WordLevel(Model):
    """``models.WordLevel``: looks each pre-tokenised word up whole; a word not in ``vocab`` is
    ``unk_token`` (which must then be in the vocabulary, as in ``tokenizers``)."""

    type = "WordLevel"

    def __init__(self, vocab: dict[str, int], unk_token: str = "<unk>") -> None:
        self.vocab = dict(vocab)
        self.unk_token = unk_token
        self._by_id = {i: t for t, i in self.vocab.items()}

    @classmethod
    def from_json(cls, node: dict[str, Any]) -> WordLevel:
        where = "model WordLevel"
        vocab = field(node, "vocab", dict, where)
        for token, token_id in vocab.items():
            if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
                raise ToktoolsError(f"{where}: field 'vocab' maps {token!r} to {token_id!r}, not an id")
        return cls(vocab, field(node, "unk_token", str, where))

    def to_json(self) -> dict[str, Any]:
        vocab = dict(sorted(self.vocab.items(), key=lambda item: item[1]))
        return {"type": "WordLevel", "vocab": vocab, "unk_token": self.unk_token}

    def spelling(self) -> dict[str, Any]:
        return {"unk_token": self.unk_token}

    def tokenize(self, word: str) -> list[tuple[int, str, int, int]]:
        token_id = self.vocab.get(word)
        if token_id is not None:
            return [(token_id, word, 0, len(word))]
        unk_id = self.vocab.get(self.unk_token)
        if unk_id is None:
            raise ToktoolsError(
                f"WordLevel: {word!r} is not in the vocabulary and the unknown token "
                f"{self.unk_token!r} is missing from it"
            )
        return [(unk_id, self.unk_token, 0, len(word))]

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)  # not len(get_vocab()): that copies the vocabulary

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self._by_id.get(token_id)
