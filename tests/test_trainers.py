"""The trainer registry: one trainer per trainable model, found by the name the CLI uses, and
consistent with the model it makes (its files, its ``kind``)."""

from __future__ import annotations

import pytest

from toktools.errors import ToktoolsError
from toktools.parts.models import BPE, WordPiece
from toktools.parts.unigram import Unigram
from toktools.training.trainers import TRAINERS, get_trainer

WORDS = {"low": 5, "lower": 2, "newest": 6, "widest": 3, "low,": 1}


def test_the_three_trainers_and_a_clear_error_for_others():
    assert list(TRAINERS) == ["bytebpe", "wordpiece", "unigram"]
    with pytest.raises(ToktoolsError, match=r"unknown tokenizer kind 'wordlevel' \(bytebpe or wordpiece or unigram\)"):
        get_trainer("wordlevel")


def test_each_model_names_its_trainer():
    assert get_trainer(BPE.kind).name == "bytebpe" and get_trainer(WordPiece.kind).name == "wordpiece"
    assert get_trainer(Unigram.kind).name == "unigram"


def test_counts_files_record_the_settings_that_shape_the_words():
    """The same headers as counts files written before the registry existed."""
    assert get_trainer("bytebpe").count_settings({"add_prefix_space": True}) == {
        "add_prefix_space": True,
        "use_regex": True,
    }
    assert get_trainer("wordpiece").count_settings({"lowercase": False}) == {
        "lowercase": False,
        "strip_accents": None,
        "clean_text": True,
        "handle_chinese_chars": True,
    }


def test_unknown_trainer_option_is_refused():
    with pytest.raises(ToktoolsError, match="unknown trainer option.*lowercase"):
        get_trainer("bytebpe").with_defaults({"lowercase": True})


@pytest.mark.parametrize("name", ["bytebpe", "wordpiece", "unigram"])
def test_a_trained_model_writes_the_trainers_files(name, tmp_path):
    trainer = get_trainer(name)
    specials = {"wordpiece": ["[UNK]"], "unigram": ["<unk>"]}.get(name, [])
    words = {"wordpiece": WORDS, "unigram": {"▁" + word: n for word, n in WORDS.items()}}.get(
        name, {word.replace("l", "Ġl"): n for word, n in WORDS.items()}
    )
    tokenizer = trainer.train(300, 1, specials, dict(words), {})
    assert tokenizer.kind == name
    written = sorted(p.name for p in tokenizer.save(tmp_path))
    assert written == sorted([*trainer.model_files, "tokenizer.json"])
    assert trainer.read_vocab(tmp_path) == [t for t, _ in sorted(tokenizer.vocab.items(), key=lambda item: item[1])]
