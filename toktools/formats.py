"""Loading any supported tokenizer layout, and writing files atomically.

Supported layouts (a directory, or a file inside one):

* ``tokenizer.json`` (``tokenizers``' single-file format; BPE with ByteLevel, or WordPiece);
* ``vocab.json`` + ``merges.txt`` (byte-level BPE, as ``save_model`` writes them);
* ``encoder.json`` + ``vocab.bpe`` (OpenAI's GPT-2 release);
* ``vocab.txt`` (BERT WordPiece).

A directory holding a ``tokenizer.json`` is loaded from it (it carries the full pipeline);
otherwise from the model files.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from toktools.errors import ToktoolsError
from toktools.tokenizer import Tokenizer

SHIPPED_VOCABS_DIR = Path(__file__).resolve().parent.parent / "vocabs"


def dumps_tokenizer_json(document: Mapping[str, Any]) -> str:
    """Pretty-printed like ``Tokenizer.save`` (2-space indent, raw UTF-8)."""
    return json.dumps(document, ensure_ascii=False, indent=2)


def write_files_atomically(directory: Path, files: Mapping[str, str], *, overwrite: bool = True) -> list[Path]:
    """Write every file to a temporary name first, then rename them all into place.

    A crash or Ctrl-C while writing leaves the old files (or none), never a half-written one.
    """
    from toktools.outputs import check_output_dir

    check_output_dir(directory, list(files), force=overwrite)  # one line for a file in the way, no permission ...
    directory.mkdir(parents=True, exist_ok=True)
    targets = [directory / name for name in files]
    temporaries: list[tuple[str, Path]] = []
    mode = 0o666 & ~_umask()  # mkstemp makes 0600 files; give them the usual permissions
    try:
        for name, text in files.items():
            handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            temporaries.append((temporary, directory / name))
            os.chmod(temporary, mode)
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
        for temporary, target in temporaries:
            os.replace(temporary, target)
    finally:
        for temporary, _ in temporaries:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return targets


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def resolve(path: str | Path) -> Path:
    """A path as given, or the name of a vocabulary shipped in ``vocabs/``."""
    candidate = Path(path)
    if candidate.exists():
        return candidate
    shipped = SHIPPED_VOCABS_DIR / str(path)
    if shipped.is_dir():
        return shipped
    raise ToktoolsError(f"no tokenizer at {path}: no such file or directory, and not a vocabulary shipped with toktools")


def load(path: str | Path) -> Tokenizer:
    """A tokenizer from a directory or file in any supported layout (see the module docstring)."""
    target = resolve(path)
    if target.is_file():
        if target.name.endswith(".json") and target.name not in ("vocab.json", "encoder.json"):
            return _from_tokenizer_json(target)
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
    raise ToktoolsError(
        f"{target}: no tokenizer found (expected tokenizer.json, vocab.json + merges.txt, "
        "encoder.json + vocab.bpe, or vocab.txt)"
    )


def _read_config(directory: Path) -> dict[str, Any]:
    """``tokenizer_config.json`` beside the model files (transformers' settings), or ``{}``."""
    path = directory / "tokenizer_config.json"
    if not path.is_file():
        return {}
    from toktools import bpe

    from toktools.validate import parse_json

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
    from toktools import bpe
    from toktools.bytelevel import ByteLevelBPETokenizer
    from toktools.encoding import AddedToken, TemplateProcessor

    vocab = bpe.loads_vocab_json(bpe.read_text_file(vocab_path, "vocabulary"), str(vocab_path))
    merges = bpe.loads_merges_txt(bpe.read_text_file(merges_path, "merges file"), str(merges_path))
    config = _read_config(vocab_path.parent)
    added = []
    for role in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        found = _config_token(config, role)
        if found and found[0] in vocab and all(t.content != found[0] for t in added):
            added.append(AddedToken(found[0], vocab[found[0]], special=True, lstrip=found[1]))
    processor = None
    if str(config.get("tokenizer_class", "")).startswith("Roberta"):
        cls, sep = _config_token(config, "cls_token") or ("<s>", False), _config_token(config, "sep_token") or ("</s>", False)
        if cls[0] in vocab and sep[0] in vocab:
            processor = TemplateProcessor.roberta((cls[0], vocab[cls[0]]), (sep[0], vocab[sep[0]]),
                                                  add_prefix_space=bool(config.get("add_prefix_space", False)))
    return ByteLevelBPETokenizer(vocab, merges, add_prefix_space=bool(config.get("add_prefix_space", False)),
                                 added_tokens=added, post_processor=processor)


def _load_wordpiece_vocab(vocab_path: Path) -> Tokenizer:
    """``vocab.txt``; a ``tokenizer_config.json`` beside it sets lower-casing, accents and CJK
    handling (``do_lower_case`` …) and the special tokens, as transformers' BertTokenizer reads it."""
    from toktools import wordpiece

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
    return wordpiece.WordPieceTokenizer.from_vocab_file(vocab_path, **options)


def _from_tokenizer_json(path: Path) -> Tokenizer:
    from toktools import bpe

    from toktools.validate import parse_json, validate_tokenizer_json

    document = validate_tokenizer_json(parse_json(bpe.read_text_file(path, "tokenizer file"), str(path)), str(path))
    try:
        return from_tokenizer_json(document)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ToktoolsError(f"{path}: not a tokenizer.json this version understands ({type(err).__name__}: {err})") from None


def from_tokenizer_json(document: Mapping[str, Any]) -> Tokenizer:
    """Build our tokenizer from a parsed ``tokenizer.json``."""
    from toktools.encoding import AddedToken

    model = document["model"]
    model_type = model.get("type")
    added = [AddedToken(t["content"], t["id"], bool(t.get("special", False)), bool(t.get("single_word", False)),
                        bool(t.get("lstrip", False)), bool(t.get("rstrip", False)), bool(t.get("normalized", False)))
             for t in document.get("added_tokens") or []]
    if model_type == "BPE":
        tokenizer = _bpe_from_json(document, added)
    elif model_type == "WordPiece":
        from toktools import wordpiece

        tokenizer = wordpiece.WordPieceTokenizer.from_tokenizer_json(document, added)
    else:
        raise ValueError(f"model type {model_type!r} is not supported (BPE and WordPiece are)")
    truncation = document.get("truncation")
    if truncation:
        strategy = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}
        tokenizer.enable_truncation(truncation["max_length"], strategy[truncation.get("strategy", "LongestFirst")],
                                    truncation.get("direction", "Right").lower())
    padding = document.get("padding")
    if padding:
        fixed = padding.get("strategy")
        length = fixed.get("Fixed") if isinstance(fixed, dict) else None
        tokenizer.enable_padding(length=length, pad_token=padding.get("pad_token", "[PAD]"), pad_id=padding.get("pad_id", 0),
                                 direction=padding.get("direction", "Right").lower(),
                                 pad_to_multiple_of=padding.get("pad_to_multiple_of"),
                                 pad_type_id=padding.get("pad_type_id", 0))
    return tokenizer


def _bpe_from_json(document: Mapping[str, Any], added: list[Any]) -> Tokenizer:
    from toktools.bytelevel import ByteLevelBPETokenizer
    from toktools.encoding import TemplateProcessor

    model = document["model"]
    pre = document.get("pre_tokenizer") or {}
    if pre.get("type") != "ByteLevel":
        raise ValueError(f"BPE with pre-tokenizer {pre.get('type')!r}: only ByteLevel BPE is supported")
    if document.get("normalizer"):
        raise ValueError(f"normalizer {document['normalizer'].get('type')!r} is not supported for byte-level BPE")
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    for number, merge in enumerate(merges, start=1):
        if len(merge) != 2:
            raise ValueError(f"merge {number} is not a pair: {merge!r}")
    processor = TemplateProcessor.from_json(document.get("post_processor") or {})
    return ByteLevelBPETokenizer(
        dict(model["vocab"]),
        merges,  # type: ignore[arg-type]
        add_prefix_space=bool(pre.get("add_prefix_space", False)),
        use_regex=bool(pre.get("use_regex", True)),
        added_tokens=added,
        post_processor=processor,
        unk_token=model.get("unk_token"),
        fuse_unk=bool(model.get("fuse_unk", False)),
        ignore_merges=bool(model.get("ignore_merges", False)),
        continuing_subword_prefix=model.get("continuing_subword_prefix"),
        end_of_word_suffix=model.get("end_of_word_suffix"),
    )


# ---------------------------------------------------------------------------------------------
# Conversion
# ---------------------------------------------------------------------------------------------

EXPORT_TARGETS = ("tokenizer.json", "vocab.txt", "vocab.json+merges.txt", "tiktoken")
#: The files each export target writes (checked before writing: never over an input).
EXPORT_FILES = {"tokenizer.json": ("tokenizer.json",), "vocab.txt": ("vocab.txt",),
                "vocab.json+merges.txt": ("vocab.json", "merges.txt"),
                "tiktoken": ("tokenizer.tiktoken", "special_tokens.json")}


def export(tokenizer: Tokenizer, target: str, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write ``tokenizer`` in another layout: ``tokenizer.json`` (any model), ``vocab.txt``
    (WordPiece), ``vocab.json+merges.txt`` (byte-level BPE), or ``tiktoken`` (byte-level BPE:
    ``base64(token bytes) rank`` per line, special tokens listed in a JSON file beside it)."""
    import base64

    directory = Path(directory)
    kind = tokenizer.kind
    if target == "tokenizer.json":
        files = {"tokenizer.json": dumps_tokenizer_json(tokenizer.to_tokenizer_json())}
    elif target == "vocab.txt":
        if kind != "wordpiece":
            raise ToktoolsError("vocab.txt holds a WordPiece vocabulary; a byte-level BPE needs its merges (use vocab.json+merges.txt)")
        from toktools.wordpiece import dumps_vocab_txt

        files = {"vocab.txt": dumps_vocab_txt(tokenizer.vocab)}
    elif target in ("vocab.json+merges.txt", "tiktoken"):
        if kind != "bytebpe":
            raise ToktoolsError(f"{target} needs a BPE model; this is a {kind} tokenizer (try tokenizer.json)")
        from toktools import bpe
        from toktools.bytelevel import is_byte_symbols, symbols_to_bytes

        merges = tokenizer.merges  # type: ignore[attr-defined]
        if target == "vocab.json+merges.txt":
            files = {"vocab.json": bpe.dumps_vocab_json(tokenizer.vocab), "merges.txt": bpe.dumps_merges_txt(merges)}
        else:
            specials = {t.content: t.id for t in tokenizer.added.tokens}
            lines = []
            for token, rank in sorted(tokenizer.vocab.items(), key=lambda item: item[1]):
                if token in specials:
                    continue
                if not is_byte_symbols(token):
                    raise ToktoolsError(f"token {token!r} (id {rank}) is not made of byte symbols; tiktoken cannot hold it")
                lines.append(f"{base64.b64encode(symbols_to_bytes(token)).decode('ascii')} {rank}\n")
            files = {"tokenizer.tiktoken": "".join(lines),
                     "special_tokens.json": json.dumps(specials, ensure_ascii=False, indent=2) + "\n"}
    else:
        raise ToktoolsError(f"unknown target {target!r}; choose one of {', '.join(EXPORT_TARGETS)}")
    return write_files_atomically(directory, files, overwrite=overwrite)


def transformers_config_files(tokenizer: Tokenizer, model_max_length: int = 512) -> dict[str, str]:
    """``tokenizer_config.json`` + ``special_tokens_map.json`` so that
    ``transformers.AutoTokenizer.from_pretrained(dir)`` picks the right class (BERT or RoBERTa)
    and knows the special tokens; the pipeline itself comes from ``tokenizer.json``."""
    def present(token: str) -> bool:
        return tokenizer.token_to_id(token) is not None

    if tokenizer.kind == "wordpiece":
        roles = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}
        normalizer = getattr(tokenizer, "normalizer", None)
        config: dict[str, Any] = {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": bool(normalizer.lowercase) if normalizer else False,
            "strip_accents": normalizer.strip_accents if normalizer else None,
            "tokenize_chinese_chars": bool(normalizer.handle_chinese_chars) if normalizer else False,
        }
    else:
        roles = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "sep_token": "</s>", "pad_token": "<pad>",
                 "cls_token": "<s>", "mask_token": "<mask>"}
        config = {"tokenizer_class": "RobertaTokenizer" if tokenizer.post_processor is not None else "GPT2Tokenizer",
                  "add_prefix_space": bool(getattr(tokenizer, "pre_tokenizer").add_prefix_space)}
    specials = {role: token for role, token in roles.items() if present(token)}
    config.update(specials)
    config.update({"model_max_length": model_max_length, "clean_up_tokenization_spaces": False})
    return {
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=2) + "\n",
        "special_tokens_map.json": json.dumps(specials, ensure_ascii=False, indent=2) + "\n",
    }
