"""The Unigram model part gives ``tokenizers.models.Unigram``'s ids, tokens and offsets.

Vocabularies come from sentencepiece models trained here on samples of the shared corpora, and
from tokenizers' own trainer; both sides see the same whitespace-split words.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from _spm_models import held_out_lines, processor, train

from toktools.errors import ToktoolsError
from toktools.parts.registry import part_from_json
from toktools.parts.unigram import Unigram

tokenizers = pytest.importorskip("tokenizers")


def spm_vocab(path):
    sp = processor(path)
    return [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())], sp.unk_id()


def reference(vocab, unk_id, byte_fallback):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.Unigram(vocab, unk_id, byte_fallback))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


def ours_encode(model: Unigram, line: str):
    out = []
    for word in re.finditer(r"\S+", line):
        for token_id, token, start, end in model.tokenize(word.group()):
            out.append((token_id, token, (word.start() + start, word.start() + end)))
    return out


def assert_same(model, ref, lines):
    mismatches = []
    for line in lines:
        enc = ref.encode(line)
        expected = list(zip(enc.ids, enc.tokens, enc.offsets))
        if ours_encode(model, line) != expected:
            mismatches.append(line)
    assert not mismatches, f"{len(mismatches)}/{len(lines)} lines differ, first: {mismatches[0]!r}"


@pytest.mark.parametrize("byte_fallback", [False, True])
def test_same_tokens_as_tokenizers_on_a_sentencepiece_vocabulary(byte_fallback):
    vocab, unk_id = spm_vocab(train(f"uni_bf{int(byte_fallback)}", byte_fallback=byte_fallback))
    model = Unigram(vocab, unk_id, byte_fallback)
    assert_same(model, reference(vocab, unk_id, byte_fallback), held_out_lines())


def test_same_tokens_as_tokenizers_on_a_vocabulary_trained_by_tokenizers():
    from conftest import read_corpus_sample
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    text = read_corpus_sample("mixed_sample.txt", 80_000)
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator(
        text.splitlines(),
        trainers.UnigramTrainer(vocab_size=1500, unk_token="<unk>", special_tokens=["<unk>"], show_progress=False),
    )
    node = json.loads(tok.to_str())["model"]
    model = part_from_json("model", node)
    assert model.to_json() == node
    assert_same(model, tok, held_out_lines())


def test_byte_fallback_spells_unknown_runs_in_bytes_when_all_byte_pieces_exist():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("<0xF0>", 0.0), ("<0x9F>", 0.0), ("<0x98>", 0.0), ("<0x80>", 0.0)]
    ref = reference(vocab, 0, True)
    for text in ["a😀a", "😀😀", "aé", "a😀é"]:  # é has no byte pieces -> the whole run is one <unk>
        assert ours_encode(Unigram(vocab, 0, True), text) == list(
            zip(*[getattr(ref.encode(text), k) for k in ("ids", "tokens", "offsets")])
        )


def test_ties_go_to_the_longest_last_piece_as_in_tokenizers():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("ab", -2.0), ("aba", -3.0), ("ba", -2.0)]
    ref = reference(vocab, 0, False)
    for text in ["ab", "aba", "abab", "ababa", "bab", "ba" * 7]:
        enc = ref.encode(text)
        assert ours_encode(Unigram(vocab, 0, False), text) == list(zip(enc.ids, enc.tokens, enc.offsets))


def test_unknown_characters_without_unk_id_are_an_error():
    model = Unigram([("a", -1.0)], None)
    assert model.tokenize("aa") == [(0, "a", 0, 1), (0, "a", 1, 2)]
    with pytest.raises(ToktoolsError, match="unk_id"):
        model.tokenize("ab")


def test_json_round_trip_and_bad_nodes():
    node = {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.5]], "byte_fallback": False}
    assert part_from_json("model", node).to_json() == node
    assert Unigram().to_json() == json.loads(tokenizers.Tokenizer(tokenizers.models.Unigram()).to_str())["model"]
    for bad, field in [
        ({**node, "unk_id": 5}, "unk_id"),
        ({**node, "vocab": [["a"]]}, "vocab entry 0"),
        ({**node, "byte_fallback": "yes"}, "byte_fallback"),
        ({**node, "vocab": {}}, "vocab"),
    ]:
        with pytest.raises(ToktoolsError, match=field):
            part_from_json("model", bad)


def test_nbest_lists_segmentations_by_score():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -1.2), ("ab", -1.5), ("abab", -2.9)]
    model = Unigram(vocab, 0)
    best = model.nbest("abab", 10)
    # the five segmentations of "abab", by hand: -2.9, -3.0, two ties at -3.7, -4.4
    pieces = [p for p, _ in best]
    assert pieces[:2] == [["abab"], ["ab", "ab"]] and pieces[4] == ["a", "b", "a", "b"]
    assert sorted(pieces[2:4]) == [["a", "b", "ab"], ["ab", "a", "b"]]
    scores = [score for _, score in best]
    assert scores == sorted(scores, reverse=True)
    assert math.isclose(scores[0], -2.9) and math.isclose(scores[-1], -4.4)
    assert model.nbest("abab", 1)[0][0] == [model.id_to_token(i) for i, *_ in model.tokenize("abab")]


def test_sampling_is_reproducible_given_a_seed_and_follows_the_scores():
    vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("ab", -1.0)]
    draws = {}
    for seed in (1, 1, 2):
        model = Unigram(vocab, 0, alpha=1.0, seed=seed)
        draws.setdefault(seed, []).append([tuple(t for _, t, _, _ in model.tokenize("abab")) for _ in range(50)])
    assert draws[1][0] == draws[1][1] and draws[1][0] != draws[2][0]
    # exp(score): "ab ab" (-2) is e times as likely as "a b ab" (-3) -- over many draws
    model = Unigram(vocab, 0, alpha=1.0, seed=7)
    counts = {}
    for _ in range(4000):
        key = tuple(t for _, t, _, _ in model.tokenize("abab"))
        counts[key] = counts.get(key, 0) + 1
    z = math.exp(-2) + 2 * math.exp(-3) + math.exp(-4)
    assert abs(counts[("ab", "ab")] / 4000 - math.exp(-2) / z) < 0.03
    assert abs(counts[("a", "b", "a", "b")] / 4000 - math.exp(-4) / z) < 0.03
    nbest = Unigram(vocab, 0, alpha=1.0, nbest_size=1, seed=3)
    assert {tuple(t for _, t, _, _ in nbest.tokenize("abab")) for _ in range(20)} == {("ab", "ab")}


@pytest.mark.parametrize("float32", [False, True])
def test_cached_word_matches_give_the_same_path_as_matching_in_place(float32):
    """When no piece crosses the start of a ``▁word``, Viterbi takes each word's matches from a
    cache: the same candidates in the same order, so the same path (f64 and float32 sums)."""
    from toktools.parts.unigram import PieceIndex, viterbi

    vocab, unk_id = spm_vocab(train("uni_bf0", byte_fallback=False))
    model = Unigram(vocab, unk_id)
    cached = PieceIndex((p, i, s) for i, (p, s) in enumerate(model.vocab))
    in_place = PieceIndex((p, i, s) for i, (p, s) in enumerate(model.vocab))
    assert cached.by_word
    in_place.by_word = False
    lines = ["\u2581" + line.replace(" ", "\u2581") for line in held_out_lines() if line]
    lines.append("\u2581" + "\u2581".join(["x" * 60, "word", "word", "x" * 60]))  # long words: matched in place
    for line in lines * 2:  # the second time from the cache
        assert viterbi(line, cached, unk_id, model.unk_score, float32=float32) == viterbi(
            line, in_place, unk_id, model.unk_score, float32=float32
        ), line
