"""A ``.model`` as a :class:`~toktools.tokenizer.Tokenizer` that encodes as sentencepiece does.

``toktools.load(x.model)`` follows one of two rules (``model_rule``):

* ``"sentencepiece"`` (the default): ``SentencePieceProcessor.encode``'s ids on every line,
  whatever its length (:mod:`toktools.sentencepiece.encode`: longest-match normalisation,
  float32 sums over the whole line with the installed version's rescaling and user-defined
  scores, control pieces typed in the text never matched);
* ``"tokenizers"``: the ``tokenizer.json`` pipeline transformers converts the model to, run as
  ``tokenizers`` runs it (what ``convert --to tokenizer.json`` writes).

Both share the parts of that ``tokenizer.json`` for everything but encoding (vocabulary,
template, decoder), so :class:`SentencePieceTokenizer` only replaces how a sequence is encoded.
Corpus encoding sees the tokenizer as a ``tokenizer.json`` document; the sentencepiece rule
travels in it under :data:`DOCUMENT_KEY` (the model file and the rules), which engines that
follow ``tokenizers`` refuse and the reference turns back into this tokenizer.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from toktools.encoding import Encoding
from toktools.errors import ToktoolsError
from toktools.sentencepiece.encode import (
    RULES,
    SentencePieceBPE,
    SentencePieceRules,
    SentencePieceUnigram,
    encoder_for,
    version_rules,
)
from toktools.sentencepiece.model_file import SentencePieceModel
from toktools.sentencepiece.rule_marker import DOCUMENT_KEY
from toktools.sentencepiece.rule_marker import follows_sentencepiece as follows_sentencepiece  # re-exported
from toktools.tokenizer import Tokenizer, check_text

#: the rules a ``.model`` can be encoded with
MODEL_RULES = ("sentencepiece", "tokenizers")


def check_model_rule(rule: str | None) -> str:
    """``rule``, or the default ``"sentencepiece"``; anything else is one clear error."""
    if rule is None:
        return "sentencepiece"
    if rule not in MODEL_RULES:
        raise ToktoolsError(f"model rule {rule!r}: expected one of {', '.join(MODEL_RULES)}")
    return rule


class SentencePieceTokenizer(Tokenizer):
    """The parts of a ``.model``'s ``tokenizer.json``, encoding with sentencepiece's own encoder.

    Added tokens are not matched in the text (sentencepiece never matches a control piece
    typed in it); the template (``<s>``/``</s>`` when asked) still applies."""

    spm_model: SentencePieceModel
    rules: SentencePieceRules
    #: ``(alpha, nbest_size, seed)`` when :meth:`enable_sampling` is on
    sampling: tuple[float, int, int] | None = None
    encoder: SentencePieceUnigram | SentencePieceBPE

    @classmethod
    def wrap(
        cls, tokenizer: Tokenizer, model: SentencePieceModel, rules: SentencePieceRules | None = None
    ) -> SentencePieceTokenizer:
        """``tokenizer`` (built from the model's ``tokenizer.json``) encoding as sentencepiece."""
        out = cls.__new__(cls)
        out.__dict__.update(tokenizer.__dict__)
        out.spm_model = model
        out.rules = rules or version_rules()
        out.encoder = encoder_for(model, out.rules)
        return out

    @property
    def model_rule(self) -> str:
        return "sentencepiece"

    def enable_sampling(self, alpha: float = 0.1, nbest_size: int = -1, seed: int = 0) -> None:
        """Subword regularisation as sentencepiece's ``encode(enable_sampling=True, alpha,
        nbest_size)``, for a Unigram model (:meth:`SentencePieceUnigram.sample_encode`). Each
        text draws from its own generator, seeded by ``seed`` and the text, so the output does
        not depend on the batch, the order or the number of workers; ``alpha`` 0 or
        ``nbest_size`` 0/1 give the deterministic ids."""
        if not isinstance(self.encoder, SentencePieceUnigram):
            raise ToktoolsError("sampling (alpha, nbest_size) needs a Unigram .model; BPE takes dropout")
        self.sampling = (float(alpha), int(nbest_size), int(seed))

    def no_sampling(self) -> None:
        self.sampling = None

    def _sampled_ids(self, text: str) -> list[int] | None:
        """The sampled ids of ``text``, or None when sampling is off."""
        sampling = getattr(self, "sampling", None)
        if sampling is None or sampling[0] == 0.0:
            return None
        import hashlib
        import random

        alpha, nbest_size, seed = sampling
        digest = hashlib.sha256(f"{seed}\x00{text}".encode("utf-8", "surrogatepass")).digest()
        rng = random.Random(int.from_bytes(digest[:8], "little"))
        assert isinstance(self.encoder, SentencePieceUnigram)
        return self.encoder.sample_encode(text, alpha, nbest_size, rng)

    def encode_sequence(self, text: str, type_id: int = 0) -> Encoding:
        """One sequence: sentencepiece's ids, its pieces, and each piece's span in ``text``
        (sampled ones carry no spans: ``(0, 0)``)."""
        check_text(text)
        sampled = self._sampled_ids(text)
        if sampled is not None:
            tokens = [self.spm_model.pieces[i].piece for i in sampled]
            n = len(sampled)
            return Encoding(sampled, tokens, [(0, 0)] * n, [type_id] * n, [1] * n, [0] * n)
        ids, tokens, offsets = self.encoder.encode_with_offsets(text)
        n = len(ids)
        return Encoding(ids, tokens, offsets, [type_id] * n, [1] * n, [0] * n)

    def ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids only (no template), as corpus encoding asks for them: no offsets are made."""
        if getattr(self, "sampling", None) is not None:
            return [
                ids if (ids := self._sampled_ids(text)) is not None else self.encoder.encode(text) for text in texts
            ]
        return self.encoder.encode_batch(list(texts))

    def corpus_tokenizer_json(self) -> dict[str, Any]:
        """The ``tokenizer.json`` document with the sentencepiece rule in :data:`DOCUMENT_KEY`."""
        document = self.to_tokenizer_json()
        document[DOCUMENT_KEY] = {
            "model": base64.b64encode(self.spm_model.to_bytes()).decode("ascii"),
            "rules": self.rules.version,
        }
        if self.sampling is not None:
            document[DOCUMENT_KEY]["sampling"] = list(self.sampling)
        return document


def without_rule(document: Mapping[str, Any]) -> dict[str, Any]:
    """The plain ``tokenizer.json`` document (the parts ``tokenizers`` reads)."""
    return {k: v for k, v in document.items() if k != DOCUMENT_KEY}


def from_marked_document(document: Mapping[str, Any], tokenizer: Tokenizer) -> SentencePieceTokenizer:
    """``tokenizer`` (built from the plain parts of ``document``) back as a
    :class:`SentencePieceTokenizer`, from the model and rules carried in :data:`DOCUMENT_KEY`."""
    entry = document[DOCUMENT_KEY]
    try:
        data = base64.b64decode(entry["model"], validate=True)
        rules = RULES[entry["rules"]]
    except (KeyError, TypeError, ValueError):
        raise ToktoolsError(f"tokenizer.json: {DOCUMENT_KEY} must hold a base64 model and known rules") from None
    from toktools.sentencepiece.decoder import SentencePieceDecoder

    model = SentencePieceModel.from_bytes(data, DOCUMENT_KEY)
    if tokenizer.decoder is not None and not isinstance(tokenizer.decoder, SentencePieceDecoder):
        tokenizer.decoder = SentencePieceDecoder.for_model(model, tokenizer.decoder)
    out = SentencePieceTokenizer.wrap(tokenizer, model, rules)
    sampling = entry.get("sampling")
    if sampling:
        out.enable_sampling(*sampling)
    return out
