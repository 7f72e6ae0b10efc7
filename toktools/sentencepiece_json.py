"""A sentencepiece ``.model`` as a ``tokenizer.json`` document, so it loads through the parts.

The document is the one transformers' ``SpmConverter.build_tokenizer_from_spm_proto`` builds
(``legacy=True``), which follows the model's own NormalizerSpec so that it encodes like
``SentencePieceProcessor.encode``:

* normaliser ``Sequence``: ``Precompiled`` (if there is a charsmap); with
  ``remove_extra_whitespaces`` ``Replace(/\\A +| +\\z/, "")`` and ``Replace(/ {2,}/, " ")``; with
  ``escape_whitespaces`` ``Replace(" ", "▁")``; with ``add_dummy_prefix`` ``Replace(/\\A▁/, "▁▁")``
  (Metaspace would not add its prefix to text already starting with ``▁``; sentencepiece does);
* pre-tokeniser ``Sequence``: ``Metaspace(prepend_scheme="always", split=False)`` with
  ``add_dummy_prefix``; ``Split(user-defined symbols, "isolated")`` when there are any;
* model ``Unigram(vocab, unk_id, byte_fallback)``, or ``BPE`` with merges ranked by piece score;
* decoder ``Sequence``: ``Replace("▁", " ")``, ``ByteFallback``, ``Fuse`` + ``Strip(" ", 1, 0)``.

Added to that: CONTROL pieces as special added tokens and, when asked, a ``TemplateProcessing``
that adds ``<s>``/``</s>`` as ``encode(add_bos=True, add_eos=True)`` does.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError
from toktools.sentencepiece_model import CONTROL, NORMAL, UNKNOWN, USER_DEFINED, SentencePieceModel, read_model

SPACE = "\u2581"


def load_sentencepiece(path: str | Path, *, add_bos: bool = False, add_eos: bool = False) -> dict[str, Any]:
    """The ``tokenizer.json`` document for a ``.model`` file (see the module docstring)."""
    return sentencepiece_to_json(read_model(path), add_bos=add_bos, add_eos=add_eos)


def sentencepiece_to_json(model: SentencePieceModel, *, add_bos: bool = False,
                          add_eos: bool = False) -> dict[str, Any]:
    spec = model.normalizer_spec
    trainer = model.trainer_spec
    byte_fallback = model.byte_fallback
    user_defined = [p.piece for p in model.pieces if p.type == USER_DEFINED]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added_tokens(model),
        "normalizer": _normalizer(spec),
        "pre_tokenizer": _pre_tokenizer(spec.get("add_dummy_prefix"), user_defined),
        "post_processor": _post_processor(model, add_bos, add_eos),
        "decoder": _decoder(spec.get("add_dummy_prefix"), byte_fallback),
        "model": _model(model, trainer, byte_fallback, bool(user_defined)),
    }


def _added_tokens(model: SentencePieceModel) -> list[dict[str, Any]]:
    return [{"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for i, p in enumerate(model.pieces) if p.type == CONTROL]


def _regex_replace(pattern: str, content: str) -> dict[str, Any]:
    return {"type": "Replace", "pattern": {"Regex": pattern}, "content": content}


def _normalizer(spec) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    charsmap = spec.get("precompiled_charsmap")
    if charsmap:
        parts.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")})
    if spec.get("remove_extra_whitespaces"):
        parts += [_regex_replace(r"\A +| +\z", ""), _regex_replace(" {2,}", " ")]
    if spec.get("escape_whitespaces"):
        parts.append({"type": "Replace", "pattern": {"String": " "}, "content": SPACE})
    if spec.get("add_dummy_prefix"):
        parts.append(_regex_replace(rf"\A{SPACE}", SPACE * 2))
    return {"type": "Sequence", "normalizers": parts}


def _pre_tokenizer(add_dummy_prefix: bool, user_defined: list[str]) -> dict[str, Any] | None:
    parts: list[dict[str, Any]] = []
    if add_dummy_prefix:
        parts.append({"type": "Metaspace", "replacement": SPACE, "prepend_scheme": "always", "split": False})
    if user_defined:
        pattern = "|".join(re.escape(p) for p in sorted(user_defined, key=len, reverse=True))
        parts.append({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False})
    return {"type": "Sequence", "pretokenizers": parts} if parts else None


def _decoder(add_dummy_prefix: bool, byte_fallback: bool) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "Replace", "pattern": {"String": SPACE}, "content": " "}]
    if byte_fallback:
        parts.append({"type": "ByteFallback"})
    if add_dummy_prefix:
        parts += [{"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]
    elif byte_fallback:
        parts.append({"type": "Fuse"})
    return {"type": "Sequence", "decoders": parts}


def _post_processor(model: SentencePieceModel, add_bos: bool, add_eos: bool) -> dict[str, Any] | None:
    if not (add_bos or add_eos):
        return None
    specials: dict[str, Any] = {}
    single: list[dict[str, Any]] = []
    pair: list[dict[str, Any]] = []
    ends = []
    for which, wanted in (("bos", add_bos), ("eos", add_eos)):
        if not wanted:
            ends.append(None)
            continue
        token_id = model.special_id(which)
        if token_id is None:
            raise ToktoolsError(f"the sentencepiece model has no {which} piece ({which}_id is disabled)")
        piece = model.pieces[token_id].piece
        specials[piece] = {"id": piece, "ids": [token_id], "tokens": [piece]}
        ends.append(piece)
    bos, eos = ends

    def special(piece: str, type_id: int) -> dict[str, Any]:
        return {"SpecialToken": {"id": piece, "type_id": type_id}}

    for seq, type_id, out in (("A", 0, single), ("A", 0, pair), ("B", 1, pair)):
        if bos:
            out.append(special(bos, type_id))
        out.append({"Sequence": {"id": seq, "type_id": type_id}})
        if eos:
            out.append(special(eos, type_id))
    return {"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": specials}


def _model(model: SentencePieceModel, trainer, byte_fallback: bool, has_user_defined: bool) -> dict[str, Any]:
    if model.model_type == "unigram":
        return {"type": "Unigram", "unk_id": trainer.get("unk_id"),
                "vocab": [[p.piece, p.score] for p in model.pieces], "byte_fallback": byte_fallback}
    # BPE: merges are the splits of NORMAL pieces into two NORMAL pieces, best score first
    vocab = {p.piece: i for i, p in enumerate(model.pieces)}
    normal = {p.piece: (p.score, i) for i, p in enumerate(model.pieces) if p.type == NORMAL}
    ranked = []
    for token, (score, token_id) in normal.items():
        for split in range(1, len(token)):
            left, right = token[:split], token[split:]
            if left in normal and right in normal:
                ranked.append((-score, token_id, left, right))
    ranked.sort()
    unk = trainer.get("unk_piece")
    return {"type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": byte_fallback,
            "ignore_merges": has_user_defined, "vocab": vocab,
            "merges": [[left, right] for _, _, left, right in ranked]}


__all__ = ["load_sentencepiece", "sentencepiece_to_json", "UNKNOWN"]
