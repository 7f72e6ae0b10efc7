"""The tokenizer being extended: what it is, which files it came in, and how it is loaded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toktools.errors import ToktoolsError
from toktools.formats import SENTENCEPIECE_NAMES, load, resolve
from toktools.io.validate import parse_json
from toktools.models.bpe.files import read_text_file
from toktools.tokenizer import Tokenizer

#: the files of a base directory that are carried over or rewritten, by layout
BPE_FILE_PAIRS = (("vocab.json", "merges.txt"), ("encoder.json", "vocab.bpe"))
CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")


@dataclass
class Base:
    """A base tokenizer as found on disk.

    ``kind`` says which extender applies: ``"bpe"`` (a BPE model in ``tokenizer.json`` or
    ``vocab.json`` + ``merges.txt``), ``"tiktoken"`` (ranks), ``"wordpiece"`` (``vocab.txt`` or a
    WordPiece ``tokenizer.json``) or ``"sentencepiece"`` (a ``.model``)."""

    path: Path
    kind: str
    tokenizer: Tokenizer
    #: the files of the layout, by their name in the base (carried over under that name)
    files: dict[str, Path] = field(default_factory=dict)
    #: the parsed ``tokenizer.json``, when the base has one (rewritten field by field)
    document: dict[str, Any] | None = None

    @property
    def directory(self) -> Path:
        return self.path if self.path.is_dir() else self.path.parent

    def config_files(self) -> dict[str, str]:
        """``tokenizer_config.json`` / ``special_tokens_map.json`` beside the base, as text."""
        found = {}
        for name in CONFIG_FILES:
            path = self.directory / name
            if path.is_file():
                found[name] = read_text_file(path, name)
        return found


def _tiktoken_file(target: Path) -> Path | None:
    if target.is_file() and target.suffix == ".tiktoken":
        return target
    if target.is_dir():
        found = sorted(target.glob("*.tiktoken"))
        if found and not (target / "tokenizer.json").is_file():
            return found[0]
    return None


def open_base(path: str | Path, pattern: str | None = None) -> Base:
    """The base at ``path`` (a directory, or one file of a layout), loaded once."""
    target = resolve(path)
    ranks = _tiktoken_file(target)
    if ranks is not None:
        from toktools.extend.tiktoken_ranks import load_ranks

        return Base(target, "tiktoken", load_ranks(ranks, pattern), {ranks.name: ranks})
    model_path = target if target.is_file() and target.suffix == ".model" else _sentencepiece_path(target)
    if model_path is not None:  # the .model is the source of truth (a tokenizer.json beside it is derived)
        from toktools.formats import load_sentencepiece_model

        return Base(target, "sentencepiece", load_sentencepiece_model(model_path), {model_path.name: model_path})
    tokenizer = load(target)
    model_type = tokenizer.model.type
    files: dict[str, Path] = {}
    document = None
    directory = target if target.is_dir() else target.parent
    json_path = target if target.is_file() and target.suffix == ".json" else directory / "tokenizer.json"
    if json_path.is_file() and json_path.name not in ("vocab.json", "encoder.json"):
        if target.is_dir() or target == json_path:
            files["tokenizer.json"] = json_path
            document = parse_json(read_text_file(json_path, "tokenizer file"), str(json_path))
    if target.is_dir() or target.name in {name for pair in BPE_FILE_PAIRS for name in pair}:
        for pair in BPE_FILE_PAIRS:
            if all((directory / name).is_file() for name in pair):
                files.update({name: directory / name for name in pair})
    if model_type == "BPE":
        return Base(target, "bpe", tokenizer, files, document)
    if model_type == "WordPiece":
        vocab_txt = directory / "vocab.txt"
        if vocab_txt.is_file() and (target.is_dir() or target == vocab_txt):
            files["vocab.txt"] = vocab_txt
        return Base(target, "wordpiece", tokenizer, files, document)
    if model_type == "Unigram":
        raise ToktoolsError(
            f"{target}: a Unigram tokenizer.json without its sentencepiece .model; "
            "extend needs the .model (give the directory that holds it)"
        )
    raise ToktoolsError(f"{target}: cannot extend a {model_type} model (BPE, WordPiece and sentencepiece only)")


def _sentencepiece_path(target: Path) -> Path | None:
    if not target.is_dir():
        return None
    for name in SENTENCEPIECE_NAMES:
        if (target / name).is_file():
            return target / name
    found = sorted(target.glob("*.model"))
    return found[0] if len(found) == 1 else None


def dumps_json(value: Any) -> str:
    """Small JSON files as the project writes them (2-space indent, raw UTF-8, final newline)."""
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def largest_id(tokenizer: Tokenizer) -> int:
    """The largest id the base gives (its model's vocabulary and its added tokens): new tokens
    are numbered after it, so every existing id, special ones included, stays where it is."""
    return max([*tokenizer.model.get_vocab().values(), *tokenizer.added.by_id], default=-1)
