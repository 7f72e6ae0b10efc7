"""The two merge engines agree.

``bpe._LeanEngine`` drops pairs below min_frequency, keeps no position sets and visits words in
bulk; ``bpe._ExactEngine`` is a literal port of tokenizers' loop. Whenever no merge reuses a token
string, both must give the same vocab, merges and counts; when one does, the lean engine gives
up and ``train_bpe`` must return exactly what the literal engine gives.
"""

import collections
import random

import pytest

from toktools.models.bpe import trainer as bpe


def _random_case(seed: int):
    rnd = random.Random(seed)
    alphabet = rnd.choice(["ab", "abc", "ab#", "abcdefgh", "aab", "#a", "xyzxyzw", "你好你们"])
    word_counts = collections.Counter()
    for _ in range(rnd.randint(1, 300)):
        word = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, rnd.choice([3, 8, 30]))))
        word_counts[word] += rnd.choice([1, 1, 1, 2, 3, 7, 100])
    options = {}
    if rnd.random() < 0.3:
        options["max_token_length"] = rnd.choice([2, 3, 4, 6])
    if rnd.random() < 0.3:
        options["continuing_subword_prefix"] = "##"
    if rnd.random() < 0.1:
        options["end_of_word_suffix"] = "</w>"
    config = bpe.BpeTrainerConfig(
        vocab_size=rnd.choice([20, 50, 100, 300]),
        min_frequency=rnd.choice([0, 1, 2, 3, 5]),
        special_tokens=rnd.choice([[], ["<s>"]]),
        **options,
    )
    return dict(word_counts), config


@pytest.mark.parametrize("seed", range(300))
def test_lean_engine_matches_the_literal_one(seed):
    word_counts, config = _random_case(seed)
    exact = bpe._train(word_counts, config, None, bpe._ExactEngine)
    try:
        lean = bpe._train(word_counts, config, None, bpe._LeanEngine)
    except bpe._DuplicateToken:  # a merge reused a token string: train_bpe falls back
        lean = bpe.train_bpe(word_counts, config)
    assert (lean.vocab, lean.merges, lean.merge_counts) == (exact.vocab, exact.merges, exact.merge_counts)


@pytest.mark.parametrize("seed", range(300))
def test_compiled_loop_matches_the_literal_one(seed, monkeypatch):
    """The compiled merge loop (numba kernel) gives what the literal port gives, duplicate token
    strings included (it then hands over to the literal engine), and stops for the same reason as
    the lean engine."""
    from toktools.models.bpe import compiled_training

    if not compiled_training.compiled_trainer_available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(compiled_training, "COMPILE_FROM_SYMBOLS", 0)  # small words: compiled all the same
    word_counts, config = _random_case(seed)
    exact = bpe._train(word_counts, config, None, bpe._ExactEngine)
    try:
        compiled = bpe._train(word_counts, config, None, None)
    except bpe._DuplicateToken:
        compiled = bpe.train_bpe(word_counts, config)
    else:
        assert compiled.stop_reason == bpe._train(word_counts, config, None, bpe._LeanEngine).stop_reason
    assert (compiled.vocab, compiled.merges, compiled.merge_counts) == (exact.vocab, exact.merges, exact.merge_counts)
    from toktools.runtime import machine_code

    assert machine_code.ready(*compiled_training._KERNEL), "the kernel ran (not the lean engine in its place)"


def test_a_small_job_does_not_wait_for_the_kernel_to_compile(monkeypatch):
    """Without compiled code at hand, a small corpus is trained by the Python engines (numba
    would take longer to compile the kernel than they take), with the same result."""
    from toktools.models.bpe import compiled_training
    from toktools.runtime import machine_code

    monkeypatch.setattr(machine_code, "ready", lambda *kernel: False)
    monkeypatch.setattr(machine_code, "kernel", lambda *kernel: pytest.fail("the kernel was loaded"))
    word_counts, config = _random_case(7)
    words = list(word_counts)
    assert compiled_training.train_merges(words, [1] * len(words), [1] * 300, 400, 1, float("inf")) is None
    exact = bpe._train(word_counts, config, None, bpe._ExactEngine)
    trained = bpe.train_bpe(word_counts, config)
    assert (trained.vocab, trained.merges, trained.merge_counts) == (exact.vocab, exact.merges, exact.merge_counts)


def test_words_too_large_for_the_memory_budget_go_to_the_python_engines(monkeypatch):
    """The kernel's buffers take ~60 bytes per symbol where the Python engines hold a word in
    ~10: past the budget, they train instead."""
    from toktools.models.bpe import compiled_training

    monkeypatch.setattr(compiled_training, "MEMORY_BUDGET", 0)
    monkeypatch.setattr(compiled_training, "COMPILE_FROM_SYMBOLS", 0)
    word_counts, config = _random_case(11)
    words = list(word_counts)
    assert compiled_training.train_merges(words, [1] * len(words), [1] * 300, 400, 1, float("inf")) is None
