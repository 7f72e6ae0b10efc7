"""Directories as transformers saves them: ``vocab.txt`` or ``vocab.json`` + ``merges.txt`` with a
``tokenizer_config.json`` beside them and no ``tokenizer.json``. toktools reads the config the
way transformers does, so a cased BERT stays cased and a RoBERTa directory adds ``<s> … </s>``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import toktools

VOCABS = Path(__file__).resolve().parent.parent / "vocabs"
TEXTS = ["Hello World, this is Toktools.", "Café naïve 我是中国人 😀", "It's <mask> time", "x"]


def _without_tokenizer_json(source: Path, target: Path, files: tuple[str, ...], config: dict) -> Path:
    target.mkdir()
    for name in files:
        shutil.copy(source / name, target / name)
    (target / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


def test_a_cased_bert_config_keeps_case(tmp_path: Path) -> None:
    cased = _without_tokenizer_json(
        VOCABS / "wordpiece-30k",
        tmp_path / "cased",
        ("vocab.txt",),
        {"tokenizer_class": "BertTokenizer", "do_lower_case": False},
    )
    tok = toktools.load(cased)
    assert tok.normalizer.lowercase is False  # type: ignore[attr-defined]
    assert "[UNK]" in tok.encode("Hello").tokens  # the vocabulary is lower-cased: "H" is unknown
    assert toktools.load(VOCABS / "wordpiece-30k" / "vocab.txt").encode("Hello").tokens == ["[CLS]", "hello", "[SEP]"]


@pytest.mark.parametrize(
    "name, files, config",
    [
        ("wordpiece-30k", ("vocab.txt",), {"tokenizer_class": "BertTokenizer", "do_lower_case": True}),
        (
            "wordpiece-30k",
            ("vocab.txt",),
            {"tokenizer_class": "BertTokenizer", "do_lower_case": False, "strip_accents": False},
        ),
        (
            "bytebpe-50k",
            ("vocab.json", "merges.txt"),
            {
                "tokenizer_class": "RobertaTokenizer",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "sep_token": "</s>",
                "cls_token": "<s>",
                "unk_token": "<unk>",
                "pad_token": "<pad>",
                "mask_token": "<mask>",
            },
        ),
    ],
)
def test_same_ids_as_transformers_without_tokenizer_json(
    tmp_path: Path, name: str, files: tuple[str, ...], config: dict
) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    directory = _without_tokenizer_json(VOCABS / name, tmp_path / "model", files, config)
    auto = transformers.AutoTokenizer.from_pretrained(str(directory))
    ours = toktools.load(directory)
    for text in TEXTS:
        assert ours.encode(text).ids == auto(text)["input_ids"], text
