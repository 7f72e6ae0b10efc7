"""The fast merge engine equals the naive oracle, and both equal ``tokenizers``.

``toktools.models.bpe.naive.train_bpe_naive`` recounts every pair at every merge and takes the best
with ``tokenizers``' tie-break (highest count, then the smallest ``(left id, right id)``); it is
short enough to check by reading. ``toktools.models.bpe.trainer.train_bpe`` must give the same vocabulary, merges
and merge counts on many small random corpora (Chinese, emoji, many ties, every option the oracle
has), and on a few of them ``tokenizers``' ``BpeTrainer`` must too.
"""

from __future__ import annotations

import collections
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toktools.models.bpe import trainer as bpe
from toktools.models.bpe.naive import ReusedToken, train_bpe_naive

ALPHABETS = ["ab", "abc", "lowerstind", "aab", "我是中国人你好们", "😀😃🎉ab", "ab#", "é\u0301e", "x😀中"]


def random_corpus(rnd: random.Random) -> dict[str, int]:
    """Up to 200 short words over a small alphabet; counts from a small set, so ties abound."""
    alphabet = rnd.choice(ALPHABETS)
    words: collections.Counter[str] = collections.Counter()
    for _ in range(rnd.randint(1, 200)):
        word = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, rnd.choice([3, 6, 15]))))
        words[word] += rnd.choice([1, 1, 1, 2, 3, 5, 50])
    return dict(words)


def random_options(rnd: random.Random) -> dict:
    options: dict = {"vocab_size": rnd.choice([10, 25, 60, 200]), "min_frequency": rnd.choice([0, 0, 1, 2, 3, 10])}
    if rnd.random() < 0.3:
        options["special_tokens"] = rnd.choice([["<s>"], ["<s>", "<pad>", "<s>"], ["a"]])
    if rnd.random() < 0.2:
        options["limit_alphabet"] = rnd.choice([1, 2, 4])
    if rnd.random() < 0.2:
        options["initial_alphabet"] = rnd.choice([["z"], ["b", "qq"], ["中"]])
    if rnd.random() < 0.3:
        options["continuing_subword_prefix"] = "##"
    if rnd.random() < 0.2:
        options["end_of_word_suffix"] = "</w>"
    if rnd.random() < 0.2:
        options["max_token_length"] = rnd.choice([1, 2, 3, 4, 6])
    return options


def engine(word_counts: dict[str, int], options: dict) -> tuple[list[str], list[tuple[str, str]], list[int]]:
    result = bpe.train_bpe(word_counts, bpe.BpeTrainerConfig(**options))
    return result.vocab, result.merges, result.merge_counts


@pytest.mark.parametrize("seed", range(400))
def test_the_engine_equals_the_oracle_on_random_corpora(seed: int) -> None:
    rnd = random.Random(seed)
    word_counts, options = random_corpus(rnd), random_options(rnd)
    try:
        expected = train_bpe_naive(word_counts, **options)
    except ReusedToken:
        pytest.skip("a merge reuses a token string: tokenizers' bookkeeping decides (test_bpe_engines.py)")
    assert engine(word_counts, options) == expected


def test_most_random_cases_are_compared() -> None:
    """The skip above is rare: it must not hide the comparison."""
    reused = 0
    for seed in range(400):
        rnd = random.Random(seed)
        word_counts, options = random_corpus(rnd), random_options(rnd)
        try:
            train_bpe_naive(word_counts, **options)
        except ReusedToken:
            reused += 1
    assert reused < 20


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    word_counts=st.dictionaries(
        st.text(alphabet="ab中😀#", min_size=1, max_size=7), st.sampled_from([1, 1, 2, 3, 8]), min_size=1, max_size=40
    ),
    vocab_size=st.integers(1, 40),
    min_frequency=st.integers(0, 4),
    prefix=st.sampled_from([None, "##"]),
    suffix=st.sampled_from([None, "</w>"]),
    max_token_length=st.sampled_from([None, 2, 3, 5]),
)
def test_the_engine_equals_the_oracle_for_generated_corpora(
    word_counts: dict[str, int],
    vocab_size: int,
    min_frequency: int,
    prefix: str | None,
    suffix: str | None,
    max_token_length: int | None,
) -> None:
    """The same, with hypothesis (which shrinks a failure to a minimal corpus)."""
    options = {
        "vocab_size": vocab_size,
        "min_frequency": min_frequency,
        "continuing_subword_prefix": prefix,
        "end_of_word_suffix": suffix,
        "max_token_length": max_token_length,
    }
    try:
        expected = train_bpe_naive(word_counts, **options)
    except ReusedToken:
        return
    assert engine(word_counts, options) == expected


def test_ties_go_to_the_smallest_left_then_right_id() -> None:
    # "ab", "cd" and "ba" each occur 4 times: ids a=0 b=1 c=2 d=3, so (a, b) = (0, 1) wins,
    # then (b, a) = (1, 0) before (c, d) = (2, 3).
    word_counts = {"cd": 4, "ba": 4, "ab": 4}
    vocab, merges, counts = train_bpe_naive(word_counts, vocab_size=7)
    assert merges == [("a", "b"), ("b", "a"), ("c", "d")]
    assert counts == [4, 4, 4]
    assert engine(word_counts, {"vocab_size": 7}) == (vocab, merges, counts)


# --- tokenizers' BpeTrainer ---------------------------------------------------------------------


def tokenizers_bpe(word_counts: dict[str, int], options: dict) -> tuple[list[str], list[tuple[str, str]]]:
    """Train ``tokenizers`` on the same word counts: each word repeated ``count`` times, split on
    whitespace (no normaliser), so its word counts are exactly ours."""
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    trainer = tokenizers.trainers.BpeTrainer(show_progress=False, **options)
    tokenizer.train_from_iterator([" ".join([word] * count) for word, count in word_counts.items()], trainer=trainer)
    model = json.loads(tokenizer.to_str())["model"]
    vocab = sorted(model["vocab"], key=model["vocab"].__getitem__)
    return vocab, [tuple(merge) for merge in model["merges"]]


# Without a prefix or suffix (whose symbols tokenizers numbers in hash-map order) and without
# ties at the limit_alphabet cut (which it breaks in hash-map order).
@pytest.mark.parametrize(
    "seed, options",
    [
        (1, {"vocab_size": 60}),
        (2, {"vocab_size": 200, "min_frequency": 2}),
        (3, {"vocab_size": 40, "special_tokens": ["<s>", "<pad>"]}),
        (4, {"vocab_size": 100, "max_token_length": 4}),
        (5, {"vocab_size": 80, "initial_alphabet": ["z", "中"]}),
    ],
)
@pytest.mark.parametrize("alphabet", ["lowerstind", "我是中国人你好们", "😀😃🎉ab"])
def test_oracle_and_engine_equal_tokenizers(seed: int, options: dict, alphabet: str) -> None:
    rnd = random.Random(seed)
    word_counts: collections.Counter[str] = collections.Counter()
    for _ in range(300):
        word_counts["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 8)))] += rnd.choice([1, 1, 2, 3, 9])
    vocab, merges, _ = train_bpe_naive(dict(word_counts), **options)
    assert tokenizers_bpe(dict(word_counts), options) == (vocab, merges)
    assert engine(dict(word_counts), options)[:2] == (vocab, merges)
