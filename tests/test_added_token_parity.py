"""Added tokens as ``tokenizers`` 0.23.3 matches them and numbers them.

* Matching (``single_word``, ``lstrip``, ``rstrip``, ``normalized``, ``special``) fuzzed on strings
  of words, newlines, Unicode spaces, marks and punctuation, on a byte-level BPE and a BERT
  WordPiece (lower-casing normaliser): the same ids, tokens and offsets.
* Ids: ``tokenizers`` ignores the id written in ``added_tokens``; a token takes its vocabulary id,
  else the next one from the vocabulary's size. Every engine of the corpus path uses those ids.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from small_shipped import shipped_text
from tokenizers import Tokenizer as HFTokenizer

import toktools
from toktools.formats import from_tokenizer_json

FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")
#: contents of the added tokens: bracketed, word-like, punctuation, non-ASCII, with a space
CONTENTS = ("[NEW]", "new", "<m>", "ab", "é!", "x y", "中文", "--")
#: what the fuzzed strings are made of, besides the contents themselves
PIECES = (
    "a",
    "word",
    "Ab",
    "_",
    "7",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\u1680",
    "\x1c",
    "\x85",
    "\u200d",
    "\u0301",
    ".",
    ",",
    "!",
    "-",
    "中",
    "ー",
    "é",
    "٣",
    "²",
)


def _document(name: str) -> str:
    return shipped_text(name)


def _with_added_tokens(name: str, seed: int) -> str:
    """The shipped tokenizer plus one added token per content, each with random flags (seeded)."""
    rng = random.Random(seed)
    document = json.loads(_document(name))
    document["added_tokens"] = list(document["added_tokens"]) + [
        {"id": 0, "content": content, **{flag: rng.random() < 0.5 for flag in FLAGS}} for content in CONTENTS
    ]
    return json.dumps(document)


def _strings(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = PIECES + CONTENTS * 3
    out = ["x\n[NEW]\ny", "x\n[NEW]", "[NEW]\n", "a [NEW] b", "a[NEW]b", "new\nnew", "\n\n[NEW] \n"]
    while len(out) < count:
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))))
    return out


def _assert_same(name: str, seed: int, count: int) -> None:
    text = _with_added_tokens(name, seed)
    theirs = HFTokenizer.from_str(text)
    ours = from_tokenizer_json(json.loads(text))
    for string in _strings(seed, count):
        expected, got = theirs.encode(string, add_special_tokens=False), ours.encode(string, add_special_tokens=False)
        assert (got.ids, got.tokens, got.offsets) == (expected.ids, expected.tokens, expected.offsets), (
            name,
            seed,
            string,
        )


@pytest.mark.parametrize("name", ["bytebpe-50k", "wordpiece-30k"])
def test_added_token_matching_fuzzed_against_tokenizers(name: str) -> None:
    _assert_same(name, seed=1, count=400)


@pytest.mark.full
@pytest.mark.parametrize("seed", range(2, 12))
@pytest.mark.parametrize("name", ["bytebpe-50k", "wordpiece-30k"])
def test_added_token_matching_fuzzed_against_tokenizers_full(name: str, seed: int) -> None:
    _assert_same(name, seed, count=3000)


def test_a_single_word_token_after_a_newline() -> None:
    """``\\w$`` in Python also matches before a final newline (Rust's ``$`` does not): GPT-2-style
    BPE plus ``[NEW]`` on ``"x\\n[NEW]\\ny"`` gives ``x Ċ [NEW] Ċ y`` in ``tokenizers``."""
    document = json.loads(_document("bytebpe-50k"))
    flags = dict(single_word=True, lstrip=False, rstrip=False, normalized=False, special=False)
    document["added_tokens"] = [{"id": 0, "content": "[NEW]", **flags}]
    text = json.dumps(document)
    theirs, ours = HFTokenizer.from_str(text), from_tokenizer_json(json.loads(text))
    assert theirs.encode("x\n[NEW]\ny", add_special_tokens=False).tokens == ["x", "Ċ", "[NEW]", "Ċ", "y"]
    for string in ("x\n[NEW]\ny", "x\r\n[NEW]\r\ny", "x\u2028[NEW]", "x [NEW]\n", "x\n\n[NEW]", "x\n[NEW]y"):
        assert ours.encode(string).tokens == theirs.encode(string).tokens, string


# ---------------------------------------------------------------------------------------------
# Ids
# ---------------------------------------------------------------------------------------------


def _shipped_with(added: list[dict], tmp_path: Path, name: str = "wordpiece-30k") -> Path:
    document = json.loads(_document(name))
    document["added_tokens"] = list(document["added_tokens"]) + added
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _added(content: str, token_id: int, special: bool = True) -> dict:
    flags = dict(single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
    return {"id": token_id, "content": content, **flags}


@pytest.mark.parametrize(
    "added",
    [
        pytest.param([_added("[NEW]", 100)], id="duplicate-of-unk"),
        pytest.param(  # beyond the vocabulary, then another duplicate
            [_added("[NEW]", 40000), _added("[TWO]", 7)], id="beyond-and-duplicate", marks=pytest.mark.full
        ),
        pytest.param([_added("[NEW]", 100), _added("[NEW]", 5, special=False)], id="same-content-twice"),
        pytest.param(  # a vocabulary token with another id
            [_added("the", 99999), _added("[NEW]", 30000)], id="vocabulary-token", marks=pytest.mark.full
        ),
    ],
)
def test_added_token_ids_are_the_ones_tokenizers_assigns(tmp_path: Path, added: list[dict]) -> None:
    path = _shipped_with(added, tmp_path)
    theirs, ours = HFTokenizer.from_file(str(path)), toktools.load(path)
    text = "the [NEW] and [TWO] [UNK] here"
    assert ours.encode(text).ids == theirs.encode(text).ids
    assert ours.get_vocab() == theirs.get_vocab()
    assert ours.decode(theirs.encode(text).ids) == theirs.decode(theirs.encode(text).ids)


@pytest.mark.parametrize(
    "engine", ["tokenizers", *[pytest.param(e, marks=pytest.mark.full) for e in ("tiktoken", "reference", "auto")]]
)
def test_the_corpus_path_uses_the_ids_tokenizers_assigns(tmp_path: Path, engine: str) -> None:
    """``encode --format npy`` on every engine: ``[NEW]`` written with the id of a vocabulary
    token is given the vocabulary's size, as ``tokenizers`` gives it."""
    import numpy as np

    from toktools.corpus.encode import encode_corpus

    path = _shipped_with([_added("[NEW]", 100)], tmp_path, "bytebpe-50k")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello [NEW] world\nplain text [NEW]\n", encoding="utf-8")
    theirs = HFTokenizer.from_file(str(path))
    lines = corpus.read_text(encoding="utf-8").splitlines()
    expected = [i for line in lines for i in theirs.encode(line, add_special_tokens=False).ids]
    output = tmp_path / "ids.npy"
    encode_corpus([str(corpus)], path, output, format="npy", engine=engine, append_eos=False, workers=1)
    assert np.load(output).tolist() == expected
