"""sentencepiece's own ``encode`` for Unigram models, in pure Python: the reference for the
places where a ``tokenizer.json`` cannot follow it (``spec/unigram.md`` §6):

* normalisation by the *longest* charsmap match (``spm_normalize``), user-defined symbols verbatim;
* Viterbi sums in float32; ``min_score`` over NORMAL pieces only;
* only NORMAL and USER_DEFINED pieces are matched from text (never ``<s>``, ``<unk>``, bytes);
  USER_DEFINED pieces get a score that always wins;
* runs of unknown characters give one ``<unk>``, or their UTF-8 bytes with byte fallback.
"""
from __future__ import annotations

from pathlib import Path

from toktools.errors import ToktoolsError
from toktools.parts.precompiled import CharsMap, spm_normalize
from toktools.parts.unigram import UNK_PENALTY, PieceIndex, byte_piece, f32, viterbi
from toktools.sentencepiece_model import NORMAL, UNKNOWN, USER_DEFINED, SentencePieceModel, read_model

FLT_MIN = 1.1754943508222875e-38
USER_DEFINED_EPSILON = 0.1


class SentencePieceUnigram:
    """``SentencePieceProcessor.encode`` for a Unigram ``.model``."""

    def __init__(self, model: SentencePieceModel) -> None:
        if model.model_type != "unigram":
            raise ToktoolsError(f"sentencepiece_encode: a {model.model_type} model (only unigram is reproduced here)")
        self.model = model
        spec = model.normalizer_spec
        blob = spec.get("precompiled_charsmap")
        self.charsmap = CharsMap(blob) if blob else None
        self.flags = dict(add_dummy_prefix=spec.get("add_dummy_prefix"),
                          remove_extra_whitespaces=spec.get("remove_extra_whitespaces"),
                          escape_whitespaces=spec.get("escape_whitespaces"),
                          treat_whitespace_as_suffix=model.trainer_spec.get("treat_whitespace_as_suffix"))
        normal = [p.score for p in model.pieces if p.type == NORMAL]
        self.min_score = f32(min(normal)) if normal else 0.0
        max_score = max([FLT_MIN] + normal)
        self.user_defined = tuple(p.piece for p in model.pieces if p.type == USER_DEFINED)
        entries = []
        for i, p in enumerate(model.pieces):
            if p.type == NORMAL:
                entries.append((p.piece, i, p.score))
            elif p.type == USER_DEFINED:
                entries.append((p.piece, i, f32(len(p.piece.encode("utf-8")) * max_score - USER_DEFINED_EPSILON)))
        self.index = PieceIndex(entries)
        self.unk_id = next((i for i, p in enumerate(model.pieces) if p.type == UNKNOWN), None)
        if self.unk_id is None:
            raise ToktoolsError("sentencepiece model has no <unk> piece")
        self.unk_score = f32(self.min_score - UNK_PENALTY)
        self.ids = {p.piece: i for i, p in enumerate(model.pieces)}

    @classmethod
    def load(cls, path: str | Path) -> "SentencePieceUnigram":
        return cls(read_model(path))

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        normalized, _ = spm_normalize(text, self.charsmap, user_defined=self.user_defined, **self.flags)
        out: list[int] = []
        if add_bos:
            out.append(self._special("bos"))
        unk_run = False
        for start, end, piece_id in (viterbi(normalized, self.index, self.unk_id, self.unk_score, float32=True)
                                     if normalized else []):
            if piece_id == self.unk_id:
                if self.model.byte_fallback:
                    out.extend(self.ids[byte_piece(b)] for b in normalized[start:end].encode("utf-8"))
                elif not unk_run:
                    out.append(piece_id)
                unk_run = True
                continue
            unk_run = False
            out.append(piece_id)
        if add_eos:
            out.append(self._special("eos"))
        return out

    def _special(self, which: str) -> int:
        token_id = self.model.special_id(which)
        if token_id is None:
            raise ToktoolsError(f"the sentencepiece model has no {which} piece")
        return token_id
