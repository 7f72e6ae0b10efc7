"""The WordLevel model: ids, tokens and offsets equal to ``tokenizers`` 0.23.3's
``models.WordLevel`` (one token per pre-tokenised word, or the unknown token)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import read_corpus_sample
from tokenizers import Tokenizer, models
from tokenizers import normalizers as hf_norm
from tokenizers import pre_tokenizers as hf_pre

from toktools.errors import ToktoolsError
from toktools.parts import normalizers as tt_norm
from toktools.parts import pre_tokenizers as tt_pre
from toktools.parts.base import Piece
from toktools.parts.registry import part_from_json
from toktools.parts.wordlevel import WordLevel


def test_known_word_is_one_token_and_unknown_word_is_unk():
    model = WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]")
    assert model.tokenize("hello") == [(1, "hello", 0, 5)]
    assert model.tokenize("bye") == [(0, "[UNK]", 0, 3)]
    assert model.token_to_id("hello") == 1 and model.id_to_token(1) == "hello"
    assert model.id_to_token(7) is None and model.vocab_size == 2


def test_missing_unknown_token_is_a_clear_error():
    with pytest.raises(ToktoolsError, match="unknown token"):
        WordLevel({"a": 0}, unk_token="[UNK]").tokenize("b")


def test_json_round_trip_and_errors():
    node = {"type": "WordLevel", "vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"}
    model = part_from_json("model", node)
    assert model.to_json() == node
    assert list(model.to_json()["vocab"]) == ["a", "[UNK]"]  # written in id order, as tokenizers does
    with pytest.raises(ToktoolsError, match="unk_token"):
        part_from_json("model", {"type": "WordLevel", "vocab": {"a": 0}})
    with pytest.raises(ToktoolsError, match="vocab"):
        part_from_json("model", {"type": "WordLevel", "vocab": {"a": "0"}, "unk_token": "a"})


def test_to_json_equals_tokenizers_node():
    vocab = {"[UNK]": 0, "b": 2, "a": 1}
    theirs = json.loads(Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")).to_str())["model"]
    assert WordLevel(vocab, "[UNK]").to_json() == theirs
    assert list(WordLevel(vocab, "[UNK]").to_json()["vocab"]) == list(theirs["vocab"])


@pytest.mark.parametrize("corpus", ["en_wiki.txt.gz", "zh_wiki_sample.txt", "mixed_sample.txt"])
def test_encode_equals_tokenizers_on_real_text(corpus):
    """A vocabulary of the frequent words of one part of the corpus; another part encoded by
    tokenizers (NFKC + Lowercase, Whitespace) and by toktools' parts: same ids, tokens, offsets."""
    train = read_corpus_sample(corpus, 60_000)
    test = read_corpus_sample(corpus, 30_000, skip_lines=train.count("\n"))
    words = Counter(w for w, _ in tt_pre.Whitespace().pre_tokenize_str(tt_norm.Lowercase().normalize_str(train)))
    vocab = {"[UNK]": 0}
    for word, _n in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:3000]:
        vocab[word] = len(vocab)

    hf = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    hf.normalizer = hf_norm.Sequence([hf_norm.NFKC(), hf_norm.Lowercase()])
    hf.pre_tokenizer = hf_pre.Whitespace()
    model = part_from_json("model", json.loads(hf.to_str())["model"])
    normalizer = part_from_json("normalizer", json.loads(hf.to_str())["normalizer"])
    pre_tokenizer = part_from_json("pre_tokenizer", json.loads(hf.to_str())["pre_tokenizer"])

    for line in test.splitlines():
        enc = hf.encode(line)
        ours = []
        for piece in pre_tokenizer.pre_tokenize([normalizer.normalize(Piece(line))]):
            for token_id, token, start, end in model.tokenize(piece.text):
                ours.append((token_id, token, piece.original(start, end)))
        assert ours == [(i, t, tuple(o)) for i, t, o in zip(enc.ids, enc.tokens, enc.offsets)], line
