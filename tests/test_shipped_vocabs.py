"""The vocabularies shipped in ``vocabs/`` are what make toktools useful on a fresh machine:
they load by name, and ``tokenizers`` and ``transformers`` read the same files to the same ids
(special tokens included, as each library adds them by default)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPORA_DIR
from tokenizers import Tokenizer

import toktools

VOCABS = Path(__file__).resolve().parent.parent / "vocabs"
FIXTURE = Path(__file__).parent / "fixtures" / "sample.txt"
SHIPPED = {"wordpiece-30k": "wordpiece", "bytebpe-50k": "bytebpe"}


def sample_lines() -> list[str]:
    """The project's own fixture, plus the shared multilingual sample when it is there."""
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    mixed = CORPORA_DIR / "mixed_sample.txt"
    if mixed.exists():
        lines += mixed.read_text(encoding="utf-8").splitlines()[::7]
    return lines


@pytest.mark.parametrize("name, kind", SHIPPED.items())
def test_a_shipped_vocabulary_loads_by_name(name: str, kind: str) -> None:
    tok = toktools.load(name)
    assert tok.kind == kind
    assert tok.vocab_size == (30000 if kind == "wordpiece" else 50000)
    readme = (VOCABS / name / "README.md").read_text(encoding="utf-8")
    assert "toktools train" in readme and "sha256" in readme


@pytest.mark.parametrize("name", SHIPPED)
def test_tokenizers_reads_the_same_ids_from_the_shipped_files(name: str) -> None:
    ours = toktools.load(name)
    theirs = Tokenizer.from_file(str(VOCABS / name / "tokenizer.json"))
    lines = sample_lines()
    for mine, hf in zip(ours.encode_batch(lines, workers=1), theirs.encode_batch(lines)):
        assert mine.ids == hf.ids
        assert mine.offsets == hf.offsets
    assert ours.encode("first part", "second part").ids == theirs.encode("first part", "second part").ids


def test_special_tokens_are_added_as_bert_and_roberta_expect() -> None:
    bert, roberta = toktools.load("wordpiece-30k"), toktools.load("bytebpe-50k")
    assert bert.encode("hello").tokens[0] == "[CLS]" and bert.encode("hello").tokens[-1] == "[SEP]"
    assert roberta.encode("hello").tokens[0] == "<s>" and roberta.encode("hello").tokens[-1] == "</s>"
    pair = roberta.encode("a", "b").tokens
    assert pair[0] == "<s>" and pair.count("</s>") == 3


def test_common_chinese_characters_are_not_unknown_to_the_wordpiece_vocabulary() -> None:
    tok = toktools.load("wordpiece-30k")
    text = "我们今天在北京大学学习中文，天气很好。"
    assert "[UNK]" not in tok.encode(text).tokens


@pytest.mark.parametrize("name, expected_class", [("wordpiece-30k", "Bert"), ("bytebpe-50k", "Roberta")])
def test_transformers_autotokenizer_gives_the_same_ids(name: str, expected_class: str) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    auto = transformers.AutoTokenizer.from_pretrained(str(VOCABS / name))
    assert type(auto).__name__.startswith(expected_class)
    ours = toktools.load(name)
    for line in sample_lines()[:300]:
        assert auto(line)["input_ids"] == ours.encode(line).ids, line
    assert auto("first part", "second part")["input_ids"] == ours.encode("first part", "second part").ids


def test_shipped_names_are_the_folders_with_a_tokenizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toktools.io.shipped import shipped_names, shipped_path

    assert shipped_names() == sorted(SHIPPED)
    assert shipped_path("wordpiece-30k") == VOCABS / "wordpiece-30k"
    for not_a_name in ("no-such-vocab", "", ".", "../vocabs", "wordpiece-30k/vocab.txt"):
        assert shipped_path(not_a_name) is None
    monkeypatch.chdir(tmp_path)  # a name is found from any directory
    assert toktools.load("bytebpe-50k").vocab_size == 50000
