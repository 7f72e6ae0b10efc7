"""The word cache of sentencepiece's Unigram Viterbi (:mod:`toktools.models.unigram.word_cache`):
sentencepiece's ids, and the kernel's without the cache, on near-ties built to break one way or
the other with the running score of the line, and on the shared corpora as sentences and as
documents of 20K-200K characters."""

from __future__ import annotations

import itertools
import pickle
import random

import pytest
from _spm_models import MODELS, processor, train
from real_shapes import chinese_paragraphs, english_lines, long_documents

import toktools
from toktools.parts.unigram import f32
from toktools.sentencepiece.encode import version_rules
from toktools.sentencepiece.model_file import BYTE, NORMAL, SentencePiece, read_model, write_model

pytest.importorskip("numba")
pytestmark = pytest.mark.skipif(version_rules().version != "0.2.3", reason="the cache follows sentencepiece 0.2.3")

#: how far a longer piece's score sits from the sum of its characters': from far below one
#: float32 ulp at 1e5 (2^-7) to well above it, both ways
NUDGES = [0.0, 1e-7, -1e-7, 1e-6, -1e-6, 1e-5, -1e-5, 1e-3, -1e-3, 4e-3, -4e-3, 1e-2, -1e-2, 3e-2, -3e-2, 0.1, -0.1]


def near_tie_model(path, seed: int = 0):
    """A Unigram model over ``▁abcd`` whose longer pieces score the sum of their characters'
    scores nudged by one of :data:`NUDGES`: in every word, segmentations whose exact scores
    differ by less than what float32 rounds away at a running score of 1e4-1e5."""
    model = read_model(train("unigram", **MODELS["unigram"]))
    rng = random.Random(seed)
    specials = [p for p in model.pieces if p.type not in (NORMAL, BYTE)]
    single = {ch: f32(-rng.uniform(2, 6)) for ch in "▁abcd"}
    pieces = [SentencePiece(ch, score) for ch, score in single.items()]
    for n in (2, 3, 4):
        for combo in itertools.product("▁abcd", repeat=n):
            piece = "".join(combo)
            if "▁" in piece[1:] or rng.random() < 0.4:
                continue
            pieces.append(SentencePiece(piece, f32(sum(single[c] for c in piece) + rng.choice(NUDGES))))
    model.pieces = specials + pieces
    write_model(model, path)
    return path


def words_text(length: int, rng: random.Random) -> str:
    words: list[str] = []
    size = 0
    while size < length:
        words.append("".join(rng.choice("abcd") for _ in range(rng.randint(1, 7))))
        size += len(words[-1]) + 1
    return " ".join(words)


def kernel_ids(tokenizer, texts, *, word_cache: bool):
    """The compiled kernel's ids of each text, with or without the word cache."""
    encoder = tokenizer.encoder
    rules = encoder.rules
    normalized = [encoder.normalize(text) for text in texts]
    ids, _, _, counts = encoder.index.compiled().paths(
        normalized, encoder.unk_id, encoder.unk_score, float32=1, fuse=True, reset=rules.reset, word_cache=word_cache
    )
    flat, out, k = ids.tolist(), [], 0
    for count in counts.tolist():
        out.append(flat[k : k + count])
        k += count
    return out


def the_cache(tokenizer):
    (cache,) = tokenizer.encoder.index.compiled().word_caches.values()
    return cache


def naive_per_word_ids(tokenizer, text: str) -> list[int]:
    """Each ``▁word`` on its own, from a running score of 0: what a cache without the margin
    test would give."""
    encoder = tokenizer.encoder
    normalized = encoder.normalize(text)
    words = ["▁" + w for w in normalized.split("▁") if w]
    return [i for ids in encoder._batch_piece_ids(words) for i in ids]


def test_near_ties_that_flip_with_the_running_score(tmp_path):
    """Lines up to 150,000 characters of words full of near-ties: sentencepiece's ids, the
    kernel's without the cache; the cache served words and refused others where their margin
    was too thin for the running score; without its margin test (each word from 0) the ids
    differ, so the near-ties are live and the test bites."""
    path = near_tie_model(tmp_path / "near.model")
    sp, tokenizer = processor(path), toktools.load(path)
    rng = random.Random(5)
    texts = [words_text(length, rng) for length in (40, 3_000, 40_000, 150_000)]
    want = [sp.encode(text) for text in texts]
    assert tokenizer.ids_batch(texts) == want
    assert kernel_ids(tokenizer, texts, word_cache=False) == want
    cache = the_cache(tokenizer)
    assert cache.hits > 1_000 and cache.refused > 100
    assert any(naive_per_word_ids(tokenizer, text) != ids for text, ids in zip(texts, want))


@pytest.mark.full
def test_near_ties_many(tmp_path):
    for seed in range(4):
        path = near_tie_model(tmp_path / f"near{seed}.model", seed=seed)
        sp, tokenizer = processor(path), toktools.load(path)
        rng = random.Random(seed)
        texts = [words_text(length, rng) for length in (10, 500, 20_000, 60_000, 120_000, 200_000)]
        want = [sp.encode(text) for text in texts]
        assert tokenizer.ids_batch(texts) == want
        assert kernel_ids(tokenizer, texts, word_cache=False) == want


@pytest.mark.parametrize("name", ["unigram", "unigram_user"])
def test_sentences_and_documents(tmp_path, name):
    """The shared corpora as sentences and as 20K-200K-character documents: sentencepiece's
    ids with the cache serving most words."""
    path = train(name, **MODELS[name])
    sp, tokenizer = processor(path), toktools.load(path)
    texts = english_lines()[:1_500] + long_documents(tmp_path / "long.txt", count=2).read_text("utf-8").splitlines()
    assert max(map(len, texts)) >= 20_000
    want = [sp.encode(text) for text in texts]
    assert tokenizer.ids_batch(texts) == want
    cache = the_cache(tokenizer)
    assert cache.hits > 10 * cache.refused
    # a pickled copy (what a worker may get) leaves the cache behind and refills its own
    copy = pickle.loads(pickle.dumps(tokenizer))
    assert not copy.encoder.index.compiled().word_caches
    assert copy.ids_batch(texts[:100]) == want[:100]


@pytest.mark.full
@pytest.mark.parametrize("name", [name for name in MODELS if name.startswith("unigram")])
def test_sentences_and_documents_every_model(tmp_path, name):
    path = train(name, **MODELS[name])
    sp, tokenizer = processor(path), toktools.load(path)
    texts = english_lines() + long_documents(tmp_path / "long.txt", count=12).read_text("utf-8").splitlines()
    texts += chinese_paragraphs(tmp_path / "zh.txt", count=40).read_text("utf-8").splitlines()
    want = [sp.encode(text) for text in texts]
    assert tokenizer.ids_batch(texts) == want
    assert kernel_ids(tokenizer, texts, word_cache=False) == kernel_ids(tokenizer, texts, word_cache=True)
