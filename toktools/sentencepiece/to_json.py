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
import json
import re
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError
from toktools.sentencepiece.model_file import CONTROL, NORMAL, UNKNOWN, USER_DEFINED, SentencePieceModel, read_model

SPACE = "\u2581"


def load_sentencepiece(path: str | Path, *, add_bos: bool = False, add_eos: bool = False) -> dict[str, Any]:
    """The ``tokenizer.json`` document for a ``.model`` file (see the module docstring)."""
    return sentencepiece_to_json(read_model(path), add_bos=add_bos, add_eos=add_eos)


def sentencepiece_to_json(model: SentencePieceModel, *, add_bos: bool = False, add_eos: bool = False) -> dict[str, Any]:
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
    return [
        {
            "id": i,
            "content": p.piece,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, p in enumerate(model.pieces)
        if p.type == CONTROL
    ]


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
    ends: list[str | None] = []
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
        return {
            "type": "Unigram",
            "unk_id": trainer.get("unk_id"),
            "vocab": [[p.piece, p.score] for p in model.pieces],
            "byte_fallback": byte_fallback,
        }
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
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": unk,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": True,
        "byte_fallback": byte_fallback,
        "ignore_merges": has_user_defined,
        "vocab": vocab,
        "merges": [[left, right] for _, _, left, right in ranked],
    }


def _charsmap(steps: list[dict[str, Any]], flags: dict[str, bool]) -> tuple[bytes, str]:
    """The charsmap and rule name for the normaliser ``steps``, setting the whitespace ``flags``:

    * a ``Precompiled`` charsmap is kept as it is;
    * ``Nmt`` / ``NFKC`` / ``Lowercase`` become a charsmap of their own
      (:func:`toktools.sentencepiece.charsmap_rules.compile_charsmap`, sentencepiece's longest-match NFKC table);
    * the whitespace ``Replace`` steps become ``remove_extra_whitespaces`` / ``escape_whitespaces``
      (runs of spaces made one: ``remove_extra_whitespaces``, which also trims both ends).

    Any other step, or a charsmap step after another kind of step, is one :class:`ToktoolsError`."""
    from toktools.parts.registry import part_from_json
    from toktools.sentencepiece.charsmap_rules import SUPPORTED, compile_charsmap, rule_name

    charsmap = b""
    char_parts: list[Any] = []
    whitespace_seen = False
    for step in steps:
        kind, pattern = step.get("type"), step.get("pattern", {})
        if kind in SUPPORTED and not whitespace_seen and not charsmap:
            char_parts.append(part_from_json("normalizer", step))
            continue
        if kind == "Precompiled" and not char_parts and not whitespace_seen:
            charsmap = base64.b64decode(step.get("precompiled_charsmap") or "")
            continue
        whitespace_seen = True
        if kind == "Replace" and pattern == {"Regex": r"\A +| +\z"}:
            flags["remove_extra_whitespaces"] = True
        elif kind == "Replace" and pattern == {"Regex": " {2,}"} and step.get("content") == " ":
            flags["remove_extra_whitespaces"] = True
        elif kind == "Replace" and (pattern == {"Regex": " {2,}"} or pattern == {"Regex": rf"\A{SPACE}"}):
            continue
        elif kind == "Replace" and pattern == {"String": " "} and step.get("content") == SPACE:
            flags["escape_whitespaces"] = True
        elif kind in SUPPORTED or kind == "Precompiled":
            raise ToktoolsError(
                f"the normalizer step {kind!r} cannot follow the steps before it: sentencepiece "
                "applies one charsmap (Precompiled, or Nmt/NFKC/Lowercase), before any other step"
            )
        else:
            raise ToktoolsError(
                f"the normalizer step {kind!r} ({json.dumps(step, ensure_ascii=False)[:60]}) has no "
                "sentencepiece equivalent"
            )
    if char_parts:
        return compile_charsmap(char_parts), rule_name(char_parts)
    return charsmap, "nmt_nfkc" if charsmap else "identity"


def json_to_sentencepiece(doc: dict[str, Any]) -> SentencePieceModel:
    """The ``.model`` for a Unigram ``tokenizer.json`` that sentencepiece can express: the
    documents :func:`load_sentencepiece` writes, or a ``Metaspace`` + ``Unigram`` tokenizer
    (``tokenizers``' ``UnigramTrainer``, toktools' ``train unigram`` with its ``Nmt`` + ``NFKC``
    normaliser, see :func:`_charsmap`). Anything else is one clear :class:`ToktoolsError`.

    Where sentencepiece cannot follow (``benchmarks/charsmap_agreement.py`` measures it): a plain
    ``Metaspace`` adds no ``▁`` to text that already starts with one (a leading space), the dummy
    prefix always does; trailing spaces are a ``▁`` piece for the tokenizer, trimmed by
    ``remove_extra_whitespaces``; the charsmap is NFKC by longest match (no reordering of marks)."""
    from toktools.sentencepiece.model_file import BYTE, NORMALIZER_FIELDS, TRAINER_FIELDS, Message, SentencePiece

    model = doc.get("model") or {}
    if model.get("type") != "Unigram":
        raise ToktoolsError(
            f"only Unigram tokenizers can be written as a sentencepiece model (this one is {model.get('type')!r})"
        )
    spec = Message(NORMALIZER_FIELDS)
    flags = {"add_dummy_prefix": False, "remove_extra_whitespaces": False, "escape_whitespaces": False}
    normalizer = doc.get("normalizer")
    steps = (
        normalizer.get("normalizers", [])
        if normalizer and normalizer.get("type") == "Sequence"
        else ([normalizer] if normalizer else [])
    )
    charsmap, name = _charsmap(steps, flags)
    pre = doc.get("pre_tokenizer")
    pre_steps = pre.get("pretokenizers", []) if pre and pre.get("type") == "Sequence" else ([pre] if pre else [])
    user_defined = None
    for step in pre_steps:
        if step.get("type") == "Metaspace" and step.get("replacement", SPACE) == SPACE:
            flags["add_dummy_prefix"] = step.get("prepend_scheme", "always") != "never"
            flags["escape_whitespaces"] = True
        elif step.get("type") == "Split" and "Regex" in step.get("pattern", {}):
            # the alternation of user-defined pieces written by sentencepiece_to_json
            try:
                user_defined = re.compile(step["pattern"]["Regex"])
            except re.error:
                raise ToktoolsError("the Split pre-tokenizer is not a list of user-defined pieces") from None
        else:
            raise ToktoolsError(f"the pre-tokenizer {step.get('type')!r} has no sentencepiece equivalent")
    spec.set("name", name)
    spec.set("precompiled_charsmap", charsmap)
    for name, value in flags.items():
        spec.set(name, value)

    added = {t["id"]: t for t in doc.get("added_tokens") or []}
    unk_id = model.get("unk_id")
    byte_fallback = bool(model.get("byte_fallback"))
    pieces = []
    for i, (piece, score) in enumerate(model["vocab"]):
        if i == unk_id:
            kind = UNKNOWN
        elif i in added:
            kind = CONTROL if added[i].get("special") else USER_DEFINED
        elif user_defined is not None and user_defined.fullmatch(piece):
            kind = USER_DEFINED
        elif byte_fallback and re.fullmatch(r"<0x[0-9A-F]{2}>", piece):
            kind = BYTE
        else:
            kind = NORMAL
        pieces.append(SentencePiece(piece, float(score), kind))
    if unk_id is None:
        raise ToktoolsError("sentencepiece needs an unknown piece: the Unigram model has no unk_id")
    trainer = Message(TRAINER_FIELDS)
    trainer.set("model_type", 1)
    trainer.set("vocab_size", len(pieces))
    if byte_fallback:
        trainer.set("byte_fallback", True)
    trainer.set("unk_id", unk_id)
    trainer.set("unk_piece", pieces[unk_id].piece)
    for which, default in (("bos", "<s>"), ("eos", "</s>"), ("pad", "<pad>")):
        found = next((i for i, p in enumerate(pieces) if p.piece == default and p.type == CONTROL), -1)
        trainer.set(f"{which}_id", found)
    # no _present: to_bytes then writes each score, and each type that is not NORMAL
    return SentencePieceModel(pieces, trainer, spec)
