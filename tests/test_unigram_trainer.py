"""The reference Unigram trainer follows ``tokenizers``' ``UnigramTrainer``.

``tokenizers`` is not deterministic here (hash-map word order, per-thread sums, hash-set order
of the characters it adds at the end), so beyond its own unit-test fixtures the comparison is:
the same pieces, the same scores up to summation order (except the characters given a
``min_score + k·0.0001`` penalty, whose k follows hash order), and the same tokens on held-out text.
"""

from __future__ import annotations

import collections
import json
import math

import pytest
from conftest import read_corpus_sample

from toktools.errors import ToktoolsError
from toktools.models.unigram.trainer import UnigramTrainer, compiled_kernels, seed_pieces, suffix_tree_nodes

tokenizers = pytest.importorskip("tokenizers")


def test_seed_pieces_match_tokenizers_own_fixture():
    # tokenizers/src/models/unigram/trainer.rs, test_unigram_chars
    seeds = seed_pieces([("This is a", 1), ("こんにちは友達", 1)])
    assert [p for p, _ in seeds] == [
        "s",
        "i",
        " ",
        "達",
        "友",
        "ん",
        "は",
        "に",
        "ち",
        "こ",
        "h",
        "a",
        "T",
        "is ",
        "s ",
    ]
    expected = [-2.5649493574615367] * 3 + [-3.258096538021482] * 10 + [-1.4663370687934272, -1.8718021769015916]
    assert all(math.isclose(s, e, rel_tol=1e-12) for (_, s), e in zip(seeds, expected))


def test_suffix_tree_nodes_are_the_repeated_right_branching_substrings():
    text = "abcab\0xbcab\0"
    nodes = {text[s : s + d]: f for s, d, f in suffix_tree_nodes([ord(c) for c in text])}
    # brute force: substrings seen twice or more whose following characters differ
    occ = collections.defaultdict(list)
    for i in range(len(text)):
        for j in range(i + 1, len(text) + 1):
            occ[text[i:j]].append(text[j] if j < len(text) else None)
    brute = {s: len(nx) for s, nx in occ.items() if len(nx) > 1 and len(set(nx)) > 1}
    assert nodes == {"": len(text), **brute}  # plus the root


def test_special_tokens_and_unk_placement_as_in_tokenizers_tests():
    words = {"The": 12, "are": 11}
    vocab = UnigramTrainer(8000, special_tokens=["[SEP]", "[CLS]"], unk_token="[UNK]").train(words).vocab
    assert vocab[:3] == [("[UNK]", 0.0), ("[SEP]", 0.0), ("[CLS]", 0.0)]
    model = UnigramTrainer(8000, special_tokens=["[SEP]", "[CLS]", "[UNK]"], unk_token="[UNK]").train(words)
    assert model.vocab[:3] == [("[SEP]", 0.0), ("[CLS]", 0.0), ("[UNK]", 0.0)] and model.unk_id == 2
    assert UnigramTrainer(8000).train(words).vocab[0][0] == "e"


def test_same_as_tokenizers_trainer_on_tiny_input():
    """Two words: no summation-order effects and no penalised characters -> the same pieces and
    scores bit for bit, in the same order up to ties (equal scores follow hash order there)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(
        ["The are"] * 12,
        trainers.UnigramTrainer(
            vocab_size=100, unk_token="<unk>", special_tokens=["<unk>", "<s>"], show_progress=False
        ),
    )
    ref = json.loads(tok.to_str())["model"]
    ours = UnigramTrainer(100, unk_token="<unk>", special_tokens=["<unk>", "<s>"]).train({"The": 12, "are": 12})
    node = ours.to_json()
    assert {k: v for k, v in node.items() if k != "vocab"} == {k: v for k, v in ref.items() if k != "vocab"}
    assert sorted(map(tuple, node["vocab"])) == sorted(map(tuple, ref["vocab"]))
    assert [s for _, s in node["vocab"]] == [s for _, s in ref["vocab"]]


@pytest.mark.parametrize(
    "corpus, size, vocab_size", [("mixed_sample.txt", 40_000, 1500), ("zh_novels.txt", 40_000, 2500)]
)
def test_agreement_with_tokenizers_trainer(corpus, size, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    lines = read_corpus_sample(corpus, size).splitlines()
    pre = pre_tokenizers.Metaspace()
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre
    tok.train_from_iterator(
        lines,
        trainers.UnigramTrainer(
            vocab_size=vocab_size, unk_token="<unk>", special_tokens=["<unk>"], show_progress=False
        ),
    )
    ref = dict((p, s) for p, s in json.loads(tok.to_str())["model"]["vocab"])
    counts = collections.Counter(w for line in lines for w, _ in pre.pre_tokenize_str(line))
    model = UnigramTrainer(vocab_size, unk_token="<unk>", special_tokens=["<unk>"]).train(counts)
    ours = dict(model.vocab)
    jaccard = len(ref.keys() & ours.keys()) / len(ref.keys() | ours.keys())
    assert jaccard >= 0.99, jaccard
    # scores agree to summation order, apart from the penalised characters (|diff| is k·1e-4)
    close = [p for p in ref.keys() & ours.keys() if math.isclose(ref[p], ours[p], rel_tol=1e-9)]
    penalised = [p for p in ref.keys() & ours.keys() if p not in close]
    assert all(len(p) == 1 for p in penalised)
    assert len(close) >= 0.9 * len(ref)
    held = read_corpus_sample(corpus, 60_000, skip_lines=len(lines) + 10).splitlines()
    mine = Tokenizer(models.Unigram([tuple(v) for v in model.to_json()["vocab"]], model.unk_id, False))
    mine.pre_tokenizer = pre
    # tokens, not ids: ids are positions, and penalised characters sit in hash order in tokenizers
    same = sum(tok.encode(line).tokens == mine.encode(line).tokens for line in held)
    assert same >= 0.95 * len(held), (same, len(held))


def test_deterministic_whatever_the_order_of_the_words():
    words = collections.Counter(read_corpus_sample("mixed_sample.txt", 15_000).split())
    reordered = dict(sorted(words.items(), key=lambda kv: (-kv[1], kv[0][::-1])))
    a = UnigramTrainer(400, unk_token="<unk>").train(words).to_json()
    b = UnigramTrainer(400, unk_token="<unk>").train(reordered).to_json()
    assert json.dumps(a) == json.dumps(b)


def test_vocab_smaller_than_the_alphabet_is_one_clear_error():
    with pytest.raises(ToktoolsError, match="smaller than the 6 characters"):
        UnigramTrainer(5).train({"abcdef": 3})


# -- the compiled steps (numba, extra "fast") give the same vocabulary as the pure-Python ones --

needs_numba = pytest.mark.skipif(compiled_kernels() is None, reason="numba is not installed (extra 'fast')")


def _both_ways(monkeypatch, words, vocab_size, **options):
    monkeypatch.delenv("TOKTOOLS_PURE_PYTHON", raising=False)
    compiled = UnigramTrainer(vocab_size, unk_token="<unk>", **options).train(words).to_json()
    monkeypatch.setenv("TOKTOOLS_PURE_PYTHON", "1")
    pure = UnigramTrainer(vocab_size, unk_token="<unk>", **options).train(words).to_json()
    return json.dumps(compiled), json.dumps(pure)


@needs_numba
@pytest.mark.parametrize(
    "corpus, size, vocab_size, options",
    [
        ("zh_novels.txt", 12_000, 1600, {}),
        (
            "mixed_sample.txt",
            20_000,
            700,
            {
                "n_sub_iterations": 3,
                "shrinking_factor": 0.6,
                "max_piece_length": 5,
                "initial_alphabet": ["ẞ"],
                "special_tokens": ["<s>"],
            },
        ),
    ],
)
def test_compiled_steps_give_the_pure_python_vocabulary(monkeypatch, corpus, size, vocab_size, options):
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.Metaspace()
    words = collections.Counter(
        w for line in read_corpus_sample(corpus, size).splitlines() for w, _ in pre.pre_tokenize_str(line)
    )
    compiled, pure = _both_ways(monkeypatch, words, vocab_size, **options)
    assert compiled == pure


@needs_numba
def test_compiled_steps_with_the_training_unk_spelled_in_the_text(monkeypatch):
    # "<UNK>" is both the training-time unk piece (id 0) and a seed substring: looked up by string
    words = {"a<UNK>b": 3, "<UNK>": 5, "x<UNK>": 2, "abab": 4, "xbxa": 1, "<UNK><UNK>": 2}
    compiled, pure = _both_ways(monkeypatch, words, 30)
    assert compiled == pure


@needs_numba
@pytest.mark.parametrize("max_piece_length, extra", [(16, 10**6), (4, 40), (2, 0)])
def test_compiled_seeds_are_the_suffix_array_seeds(max_piece_length, extra):
    from toktools.models.unigram.trainer import _seed_pieces_compiled

    words = sorted(collections.Counter(read_corpus_sample("mixed_sample.txt", 30_000).split()).items())
    chars = {ch for w, _ in words for ch in w}
    size = len(chars) + extra  # a seed_size that cuts the substrings, ties at the cut included
    assert _seed_pieces_compiled(words, max_piece_length, size, compiled_kernels()) == seed_pieces(
        words, max_piece_length, size
    )


@needs_numba
def test_pieces_left_to_the_python_lattice_prune_the_same(monkeypatch):
    """A piece whose 2-best agenda would need trimming is handed to the Python ``Lattice``: the
    result is the same (here every other piece is handed over)."""
    kernels = compiled_kernels()
    two_best = kernels.two_best

    def half_handed_over(*args):
        status, first_len, alt_off, alt = two_best(*args)
        status[1::2] = -1
        return status, first_len, alt_off, alt

    words = collections.Counter(read_corpus_sample("mixed_sample.txt", 12_000).split())
    monkeypatch.setattr(kernels, "two_best", half_handed_over)
    compiled, pure = _both_ways(monkeypatch, words, 500)
    assert compiled == pure
