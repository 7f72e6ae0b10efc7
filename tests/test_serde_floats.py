"""Scores read as ``tokenizers`` reads them (serde_json without ``float_roundtrip``), so a Unigram
``tokenizer.json`` encodes like ``tokenizers`` at near-ties and every engine writes the same
shards (issue 25)."""

from __future__ import annotations

import json
import random

import pytest
from conftest import read_corpus_sample

import toktools
from toktools.io.serde_floats import dumps_for_serde, serde_json_float, serde_literal

tokenizers = pytest.importorskip("tokenizers")


def unigram_document(vocab: list[str], pre_tokenizer: dict | None = None) -> str:
    """A Unigram ``tokenizer.json`` whose vocab entries are ``vocab`` (JSON text each)."""
    return (
        '{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,'
        f'"pre_tokenizer":{json.dumps(pre_tokenizer)},"post_processor":null,"decoder":null,'
        f'"model":{{"type":"Unigram","unk_id":0,"vocab":[{",".join(vocab)}],"byte_fallback":false}}}}'
    )


def held_scores(text: str) -> list[float]:
    """The scores ``tokenizers`` holds after reading ``text`` (``to_str`` writes them exactly)."""
    return [score for _, score in json.loads(tokenizers.Tokenizer.from_str(text).to_str())["model"]["vocab"]]


def literals(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = [repr(-rng.uniform(0, 20)) for _ in range(count)]
    out += [f"{-rng.uniform(0, 20):.{rng.randint(15, 25)}f}" for _ in range(count)]
    out += [f"{rng.uniform(-1e-6, 1e-6):.{rng.randint(15, 22)}e}" for _ in range(count // 4)]
    out += ["-0.5", "1E-7", "-12.3456789012345678901234567", "123456789012345678901234.5", "1e-320", "2.5e+3"]
    return out


def test_scores_are_read_as_tokenizers_reads_them(tmp_path):
    found = literals(1_000)
    text = unigram_document([f'["p{i}", {literal}]' for i, literal in enumerate(found)])
    held = held_scores(text)
    assert [serde_json_float(literal) for literal in found] == held
    assert sum(float(literal) != score for literal, score in zip(found, held)) > 50  # it matters
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    assert [score for _, score in toktools.load(path).model.vocab] == held


def test_literals_written_for_tokenizers_are_read_back_exactly():
    values = [serde_json_float(literal) for literal in literals(2_000, seed=1)] + [5e-324, -1e300]
    assert all(serde_json_float(serde_literal(v)) == v for v in values)
    document = json.loads(unigram_document([f'["p{i}", 0.0]' for i in range(len(values))]))
    document["model"]["vocab"] = [[f"p{i}", v] for i, v in enumerate(values)]
    assert held_scores(dumps_for_serde(document)) == values


def test_a_near_tie_falls_as_in_tokenizers(tmp_path):
    """``ab`` scored by a literal that serde_json reads one ulp above Python's ``float()``,
    ``a`` + ``b`` exactly what serde_json reads: a tie, which ``tokenizers`` gives to ``ab``."""
    rng = random.Random(0)
    while True:
        literal = "-1." + "".join(rng.choice("0123456789") for _ in range(18))
        if serde_json_float(literal) > float(literal):
            break
    b = serde_literal(serde_json_float(literal))
    text = unigram_document(['["<unk>", 0.0]', '["a", 0.0]', f'["b", {b}]', f'["ab", {literal}]'])
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    theirs = tokenizers.Tokenizer.from_str(text).encode("ab").tokens
    assert theirs == ["ab"]
    assert toktools.load(path).encode("ab").tokens == theirs


def _trained(tmp_path, vocab_size: int) -> tuple[object, str]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    lines = read_corpus_sample("en_wiki.txt.gz", 1_500_000).splitlines()
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size, unk_token="<unk>", special_tokens=["<unk>"], show_progress=False
    )
    tokenizer.train_from_iterator(lines, trainer)
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return tokenizer, str(path)


@pytest.mark.full
def test_a_12000_piece_model_trained_by_tokenizers(tmp_path):
    """Every score equal to what ``tokenizers`` holds after reading the file; 0 differences on
    20,000 near-tie strings (runs of pieces glued together); the same shards from the reference
    and ``tokenizers`` engines."""
    import numpy as np
    from click.testing import CliRunner

    from toktools.cli import main

    _, path = _trained(tmp_path, 12_000)
    theirs = tokenizers.Tokenizer.from_file(path)
    held = [score for _, score in json.loads(theirs.to_str())["model"]["vocab"]]
    ours = toktools.load(path)
    assert [score for _, score in ours.model.vocab] == held
    pieces = [piece.lstrip("▁") for piece, _ in ours.model.vocab[1:]]
    rng = random.Random(5)
    texts = [
        " ".join("".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 6)))
        for _ in range(20_000)
    ]
    expected = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]
    assert [e.ids for e in ours.encode_batch(texts, add_special_tokens=False, workers=1)] == expected
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    shards = {}
    for engine in ("reference", "tokenizers"):
        out = tmp_path / f"{engine}.npy"
        args = ["encode", "-t", path, str(corpus), "--format", "npy", "-o", str(out), "--engine", engine]
        result = CliRunner().invoke(main, [*args, "--no-progress"], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        shards[engine] = np.load(out).tolist()
    assert shards["reference"] == shards["tokenizers"] == [i for ids in expected for i in ids]
