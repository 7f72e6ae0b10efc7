"""Loading any supported tokenizer layout, and writing other layouts.

Supported layouts (a directory, or a file inside one):

* ``tokenizer.json`` (``tokenizers``' single-file format: any combination of the parts in
  :mod:`toktools.parts`, each looked up by its ``type``);
* ``vocab.json`` + ``merges.txt`` (byte-level BPE, as ``save_model`` writes them);
* ``encoder.json`` + ``vocab.bpe`` (OpenAI's GPT-2 release);
* ``vocab.txt`` (BERT WordPiece);
* a sentencepiece ``.model`` (the ``ModelProto`` protobuf, Unigram or BPE), read without
  sentencepiece and turned into the ``tokenizer.json`` transformers builds for it
  (:func:`toktools.sentencepiece.to_json.load_sentencepiece`).

A directory holding a ``tokenizer.json`` is loaded from it (it carries the full pipeline);
otherwise from the model files, the sentencepiece model last: ``spiece.model``,
``tokenizer.model``, ``sentencepiece.bpe.model``, ``spm.model``, ``sentencepiece.model`` (the
names transformers uses: ALBERT/T5/XLNet, Llama, XLM-R, DeBERTa-v2), else the one ``*.model``
file of the directory (several: an error asks for the file). A ``.model`` encodes as ``SentencePieceProcessor.encode`` does by default, without
``<s>``/``</s>``; ``add_bos_token`` / ``add_eos_token`` in a ``tokenizer_config.json`` beside it
(as transformers writes them for Llama or T5) add them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toktools import presets
from toktools.encoding import AddedToken
from toktools.errors import ToktoolsError
from toktools.io.outputs import dumps_tokenizer_json, write_files_atomically
from toktools.io.validate import parse_json, validate_byte_pieces, validate_tokenizer_json
from toktools.models.bpe import trainer as bpe
from toktools.models.bpe.bytelevel import is_byte_symbols, symbols_to_bytes
from toktools.parts.registry import part_from_json
from toktools.tokenizer import Tokenizer

__all__ = [
    "load",
    "load_sentencepiece_model",
    "resolve",
    "export",
    "from_tokenizer_json",
    "checked_tokenizer_json",
    "dumps_tokenizer_json",
    "write_files_atomically",
    "transformers_config_files",
    "EXPORT_TARGETS",
]


def resolve(path: str | Path) -> Path:
    """A path as given, or the name of a vocabulary shipped with toktools (:mod:`toktools.io.shipped`)."""
    candidate = Path(path)
    if candidate.exists():
        return candidate
    from toktools.io.shipped import name_hint, shipped_path

    shipped = shipped_path(str(path))
    if shipped is not None:
        return shipped
    raise ToktoolsError(
        f"no tokenizer at {path}: no such file or directory, and not a vocabulary shipped with toktools "
        f"({name_hint(str(path))})"
    )


def load(path: str | Path, *, model_rule: str | None = None) -> Tokenizer:
    """A tokenizer from a directory or file in any supported layout (see the module docstring).
    ``model_rule`` says how a sentencepiece ``.model`` encodes: ``"sentencepiece"`` (the
    default: ``SentencePieceProcessor.encode``'s ids) or ``"tokenizers"`` (its ``tokenizer.json``
    as ``tokenizers`` runs it); see :mod:`toktools.sentencepiece.tokenizer`.

    The garbage collector is paused meanwhile: a 50K vocabulary is a few hundred thousand new
    objects, none in a cycle, and its passes over them were a fifth of the load."""
    from toktools.runtime.gc_pause import gc_paused

    with gc_paused():
        return _load(path, model_rule)


def _load(path: str | Path, model_rule: str | None) -> Tokenizer:
    target = resolve(path)
    if target.is_file():
        if target.name.endswith(".json") and target.name not in ("vocab.json", "encoder.json"):
            return _from_tokenizer_json(target)
        if target.suffix == ".model":
            return load_sentencepiece_model(target, model_rule=model_rule)
        if target.suffix == ".txt" and target.name != "merges.txt":
            return _load_wordpiece_vocab(target)
        target = target.parent
    if (target / "tokenizer.json").is_file():
        return _from_tokenizer_json(target / "tokenizer.json")
    for vocab_name, merges_name in (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe")):
        if (target / vocab_name).is_file() and (target / merges_name).is_file():
            return _load_bpe_files(target / vocab_name, target / merges_name)
    if (target / "vocab.txt").is_file():
        return _load_wordpiece_vocab(target / "vocab.txt")
    model_file = _sentencepiece_file(target)
    if model_file is not None:
        return load_sentencepiece_model(model_file, model_rule=model_rule)
    raise ToktoolsError(
        f"{target}: no tokenizer found (expected tokenizer.json, vocab.json + merges.txt, "
        "encoder.json + vocab.bpe, vocab.txt or a sentencepiece .model)"
    )


#: The names transformers gives a sentencepiece model, in the order a directory is searched.
SENTENCEPIECE_NAMES = ("spiece.model", "tokenizer.model", "sentencepiece.bpe.model", "spm.model", "sentencepiece.model")


def _sentencepiece_file(directory: Path) -> Path | None:
    """The sentencepiece model of a directory: a usual name, else its only ``*.model`` file."""
    if not directory.is_dir():
        return None
    for name in SENTENCEPIECE_NAMES:
        if (directory / name).is_file():
            return directory / name
    found = sorted(p for p in directory.glob("*.model") if p.is_file())
    if len(found) > 1:
        raise ToktoolsError(
            f"{directory}: several sentencepiece models ({', '.join(p.name for p in found)}); give the file"
        )
    return found[0] if found else None


def load_sentencepiece_model(
    path: str | Path,
    *,
    add_bos: bool | None = None,
    add_eos: bool | None = None,
    model_rule: str | None = None,
) -> Tokenizer:
    """A sentencepiece ``.model`` as a tokenizer (``add_bos`` / ``add_eos`` as given, else from a
    ``tokenizer_config.json`` beside the file, else off). Truncated or foreign files, and
    word/char models, are one :class:`ToktoolsError` line.

    ``model_rule="sentencepiece"`` (the default) gives ``SentencePieceProcessor.encode``'s ids on
    every line (:class:`toktools.sentencepiece.tokenizer.SentencePieceTokenizer`);
    ``"tokenizers"`` runs the ``tokenizer.json`` transformers converts the model to as
    ``tokenizers`` does, which differs from sentencepiece on a few texts
    (``shared/spec/unigram.md`` §6): a control piece written in the text (``<s>``) is a special
    token, a mark after a compatibility character is normalised per grapheme, and float
    near-ties (f64 sums per word) may fall the other way. Decoding is sentencepiece's own
    (:class:`toktools.sentencepiece.decoder.SentencePieceDecoder`) under both rules."""
    from toktools.sentencepiece.decoder import SentencePieceDecoder
    from toktools.sentencepiece.model_file import BYTE, read_model
    from toktools.sentencepiece.to_json import sentencepiece_to_json
    from toktools.sentencepiece.tokenizer import SentencePieceTokenizer, check_model_rule

    rule = check_model_rule(model_rule)

    path = Path(path)
    config = _read_config(path.parent)
    bos = bool(config.get("add_bos_token", False)) if add_bos is None else add_bos
    eos = bool(config.get("add_eos_token", False)) if add_eos is None else add_eos
    model = read_model(path)
    validate_byte_pieces(((i, p.piece) for i, p in enumerate(model.pieces) if p.type == BYTE), str(path))
    document = sentencepiece_to_json(model, add_bos=bos, add_eos=eos)
    try:
        tokenizer = from_tokenizer_json(document)
    except ToktoolsError as err:
        raise ToktoolsError(f"{path}: {err}") from None
    # decode as sentencepiece does (unk_surface, leading ▁, byte runs); tokenizer.json keeps the chain
    assert tokenizer.decoder is not None  # sentencepiece_to_json always writes one
    tokenizer.decoder = SentencePieceDecoder.for_model(model, tokenizer.decoder)
    if rule == "sentencepiece":
        try:
            return SentencePieceTokenizer.wrap(tokenizer, model)
        except ToktoolsError as err:
            raise ToktoolsError(f"{path}: {err}") from None
    return tokenizer


def _read_config(directory: Path) -> dict[str, Any]:
    """``tokenizer_config.json`` beside the model files (transformers' settings), or ``{}``."""
    path = directory / "tokenizer_config.json"
    if not path.is_file():
        return {}
    config = parse_json(bpe.read_text_file(path, "tokenizer config"), str(path))
    return config if isinstance(config, dict) else {}


def _config_token(config: dict[str, Any], role: str) -> tuple[str, bool] | None:
    """The token a config names for ``role`` (``"mask_token"`` …) and its ``lstrip`` flag."""
    value = config.get(role)
    if isinstance(value, dict):
        content = value.get("content")
        return (content, bool(value.get("lstrip", False))) if isinstance(content, str) else None
    return (value, False) if isinstance(value, str) else None


def _load_bpe_files(vocab_path: Path, merges_path: Path) -> Tokenizer:
    """``vocab.json`` + ``merges.txt``; a ``tokenizer_config.json`` beside them (as transformers
    writes) adds its special tokens, ``add_prefix_space`` and, for RoBERTa, ``<s> A </s>``."""
    vocab = bpe.loads_vocab_json(bpe.read_text_file(vocab_path, "vocabulary"), str(vocab_path))
    merges = bpe.loads_merges_txt(bpe.read_text_file(merges_path, "merges file"), str(merges_path))
    config = _read_config(vocab_path.parent)
    added: list[AddedToken] = []
    for role in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        found = _config_token(config, role)
        if found and found[0] in vocab and all(t.content != found[0] for t in added):
            added.append(AddedToken(found[0], vocab[found[0]], special=True, lstrip=found[1]))
    add_prefix_space = bool(config.get("add_prefix_space", False))
    tokenizer = presets.byte_level_bpe(vocab, merges, add_prefix_space=add_prefix_space, added_tokens=added)
    if str(config.get("tokenizer_class", "")).startswith("Roberta"):
        cls, sep = (
            _config_token(config, "cls_token") or ("<s>", False),
            _config_token(config, "sep_token") or ("</s>", False),
        )
        if cls[0] in vocab and sep[0] in vocab:
            tokenizer.post_processor = presets.roberta_processing(tokenizer, cls[0], sep[0], add_prefix_space)
    return tokenizer


def _load_wordpiece_vocab(vocab_path: Path) -> Tokenizer:
    """``vocab.txt``; a ``tokenizer_config.json`` beside it sets lower-casing, accents and CJK
    handling (``do_lower_case`` …) and the special tokens, as transformers' BertTokenizer reads it."""
    config = _read_config(vocab_path.parent)
    options: dict[str, Any] = {}
    if "do_lower_case" in config:
        options["lowercase"] = bool(config["do_lower_case"])
    if "strip_accents" in config:
        options["strip_accents"] = config["strip_accents"]
    if "tokenize_chinese_chars" in config:
        options["handle_chinese_chars"] = bool(config["tokenize_chinese_chars"])
    for role in ("unk_token", "sep_token", "cls_token", "pad_token", "mask_token"):
        found = _config_token(config, role)
        if found:
            options[role] = found[0]
    return presets.WordPieceTokenizer.from_vocab_file(vocab_path, **options)


def _from_tokenizer_json(path: Path) -> Tokenizer:
    return checked_tokenizer_json(bpe.read_text_file(path, "tokenizer file"), str(path))[1]


def checked_tokenizer_json(text: str, source: str) -> tuple[dict[str, Any], Tokenizer]:
    """A ``tokenizer.json``'s text through every check of :func:`load`: parsed, its fields
    validated, and built. Paths that hand the document to another engine (``tokenizers``,
    tiktoken) call it too, so a malformed file is the same one line whoever encodes it."""
    document = validate_tokenizer_json(parse_json(text, source), source)
    try:
        tokenizer = from_tokenizer_json(document)
        return _with_assigned_ids(document, tokenizer), tokenizer
    except ToktoolsError as err:
        raise ToktoolsError(f"{source}: {err}") from None
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as err:
        raise ToktoolsError(
            f"{source}: not a tokenizer.json this version understands ({type(err).__name__}: {err})"
        ) from None


def _with_assigned_ids(document: dict[str, Any], tokenizer: Tokenizer) -> dict[str, Any]:
    """The document with each added token's id as loading gave it (:func:`added_tokens_with_ids`),
    so that every engine reading the document uses the ids ``tokenizers`` uses."""
    entries = document.get("added_tokens") or []
    assigned = tokenizer.added.by_content
    fixed = [
        {**entry, "id": assigned[entry["content"]].id}
        if entry["content"] in assigned and assigned[entry["content"]].id != entry["id"]
        else entry
        for entry in entries
    ]
    if all(new is old for new, old in zip(fixed, entries)):
        return document
    return {**document, "added_tokens": fixed}


def added_tokens_with_ids(entries: list[Any], model: Any) -> list[AddedToken]:
    """The added tokens of a ``tokenizer.json`` with the ids ``tokenizers`` gives them: the id
    written in the file is ignored (``tokenizers`` only warns when it differs); a token takes
    its id in the model's vocabulary, else an earlier entry's, else the next one from the
    vocabulary's size (``AddedVocabulary::add_tokens``)."""
    next_id = len(model.get_vocab())  # tokenizers' get_vocab_size(): entries, not the largest id + 1
    assigned: dict[str, int] = {}
    tokens = []
    for entry in entries:
        token = _added_token(entry)
        if not token.content:
            continue  # tokenizers ignores it
        token_id = assigned.get(token.content)
        if token_id is None:
            token_id = model.token_to_id(token.content)
        if token_id is None:
            token_id, next_id = next_id, next_id + 1
        assigned[token.content] = token_id
        tokens.append(dataclasses.replace(token, id=token_id))
    return tokens


def _added_token(entry: Any) -> AddedToken:
    if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not isinstance(entry.get("id"), int):
        raise ToktoolsError(f"tokenizer.json: added token {entry!r} needs a string content and an integer id")
    return AddedToken(
        entry["content"],
        entry["id"],
        bool(entry.get("special", False)),
        bool(entry.get("single_word", False)),
        bool(entry.get("lstrip", False)),
        bool(entry.get("rstrip", False)),
        bool(entry.get("normalized", False)),
    )


def from_tokenizer_json(document: Mapping[str, Any]) -> Tokenizer:
    """A tokenizer from a parsed ``tokenizer.json``: every part is looked up by its ``type``
    (any combination of the parts toktools knows), then added tokens, truncation and padding."""
    if not isinstance(document, Mapping) or not isinstance(document.get("model"), dict):
        raise ToktoolsError("tokenizer.json: no model")
    model = part_from_json("model", document["model"])
    tokenizer = Tokenizer(
        model,
        normalizer=part_from_json("normalizer", document.get("normalizer")),
        pre_tokenizer=part_from_json("pre_tokenizer", document.get("pre_tokenizer")),
        post_processor=part_from_json("post_processor", document.get("post_processor")),
        decoder=part_from_json("decoder", document.get("decoder")),
        added_tokens=added_tokens_with_ids(document.get("added_tokens") or [], model),
    )
    truncation = document.get("truncation")
    if truncation:
        strategy = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}
        tokenizer.enable_truncation(
            truncation["max_length"],
            strategy[truncation.get("strategy", "LongestFirst")],
            truncation.get("direction", "Right").lower(),
            truncation.get("stride", 0),
        )
    padding = document.get("padding")
    if padding:
        fixed = padding.get("strategy")
        length = fixed.get("Fixed") if isinstance(fixed, dict) else None
        tokenizer.enable_padding(
            length=length,
            pad_token=padding.get("pad_token", "[PAD]"),
            pad_id=padding.get("pad_id", 0),
            direction=padding.get("direction", "Right").lower(),
            pad_to_multiple_of=padding.get("pad_to_multiple_of"),
            pad_type_id=padding.get("pad_type_id", 0),
        )
    from toktools.sentencepiece.tokenizer import follows_sentencepiece, from_marked_document

    if follows_sentencepiece(document):  # a .model's corpus document, under the sentencepiece rule
        return from_marked_document(document, tokenizer)
    seed = document.get("toktools_seed")  # BPE-dropout's seed, in a corpus document
    if isinstance(seed, int) and hasattr(tokenizer.model, "seed"):
        tokenizer.model.seed = seed
    return tokenizer


# ---------------------------------------------------------------------------------------------
# Conversion
# ---------------------------------------------------------------------------------------------

EXPORT_TARGETS = ("tokenizer.json", "vocab.txt", "vocab.json+merges.txt", "tiktoken", "spiece.model")
#: The files each export target writes (checked before writing: never over an input).
EXPORT_FILES = {
    "tokenizer.json": ("tokenizer.json",),
    "vocab.txt": ("vocab.txt",),
    "vocab.json+merges.txt": ("vocab.json", "merges.txt"),
    "tiktoken": ("tokenizer.tiktoken", "special_tokens.json"),
    "spiece.model": ("spiece.model",),
}


def export(tokenizer: Tokenizer, target: str, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write ``tokenizer`` in another layout: ``tokenizer.json`` (any model), one of the model's
    own files (``vocab.txt`` for WordPiece, ``vocab.json+merges.txt`` for BPE), or ``tiktoken``
    (a byte-level BPE: ``base64(token bytes) rank`` per line, special tokens in a JSON file), or
    ``spiece.model`` (a Unigram tokenizer sentencepiece can express, as a ``.model`` it loads:
    :func:`toktools.sentencepiece.to_json.json_to_sentencepiece`)."""
    import base64

    directory = Path(directory)
    model_files = tokenizer.model.files()
    model_name = tokenizer.model.type
    files: dict[str, str | bytes]
    if target == "tokenizer.json":
        files = {"tokenizer.json": dumps_tokenizer_json(tokenizer.to_tokenizer_json())}
    elif target == "spiece.model":
        from toktools.sentencepiece.to_json import json_to_sentencepiece

        files = {"spiece.model": json_to_sentencepiece(tokenizer.to_tokenizer_json()).to_bytes()}
    elif target in ("vocab.txt", "vocab.json+merges.txt"):
        names = target.split("+")
        if not all(name in model_files for name in names):
            raise ToktoolsError(
                f"{target} does not hold a {model_name} model (its files: "
                f"{', '.join(model_files) or 'none'}; try tokenizer.json)"
            )
        files = {name: model_files[name] for name in names}
    elif target == "tiktoken":
        if "merges.txt" not in model_files:
            raise ToktoolsError(f"tiktoken needs a BPE model; this is a {model_name} model (try tokenizer.json)")
        specials = {t.content: t.id for t in tokenizer.added.tokens}
        lines = []
        for token, rank in sorted(tokenizer.vocab.items(), key=lambda item: item[1]):
            if token in specials:
                continue
            if not is_byte_symbols(token):
                raise ToktoolsError(f"token {token!r} (id {rank}) is not made of byte symbols; tiktoken cannot hold it")
            lines.append(f"{base64.b64encode(symbols_to_bytes(token)).decode('ascii')} {rank}\n")
        files = {
            "tokenizer.tiktoken": "".join(lines),
            "special_tokens.json": json.dumps(specials, ensure_ascii=False, indent=2) + "\n",
        }
    else:
        raise ToktoolsError(f"unknown target {target!r}; choose one of {', '.join(EXPORT_TARGETS)}")
    return write_files_atomically(directory, files, overwrite=overwrite)


def transformers_config_files(tokenizer: Tokenizer, model_max_length: int = 512) -> dict[str, str]:
    """``tokenizer_config.json`` + ``special_tokens_map.json`` so that
    ``transformers.AutoTokenizer.from_pretrained(dir)`` picks the class the model names (BERT,
    RoBERTa, GPT-2, or the generic one that runs ``tokenizer.json``) and knows the special
    tokens of the family that the tokenizer has."""
    config, roles = tokenizer.model.transformers_config(tokenizer)
    specials = {role: token for role, token in roles.items() if tokenizer.token_to_id(token) is not None}
    config = {**config, **specials, "model_max_length": model_max_length, "clean_up_tokenization_spaces": False}
    return {
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=2) + "\n",
        "special_tokens_map.json": json.dumps(specials, ensure_ascii=False, indent=2) + "\n",
    }
