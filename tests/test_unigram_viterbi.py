"""The compiled Viterbi (:mod:`toktools.models.unigram.compiled_viterbi`, numba) gives the pure-Python
:func:`~toktools.parts.unigram.viterbi`'s paths exactly: the same pieces, the same ties (strict
``>``, first candidate kept), in f64 as ``tokenizers`` adds and in float32 as sentencepiece
does, the same unknown-character nodes and the same errors.

Vocabularies here are small and their scores few, so that exact ties and float32 near-ties
are common; the real models are the ``spm_train`` ones of the tests and a ``toktools train
unigram`` one, checked against the pure-Python path and against ``sentencepiece``.
"""

from __future__ import annotations

import pytest
from _spm_models import MODELS, held_out_lines, processor, train
from hypothesis import given, settings
from hypothesis import strategies as st

from toktools.errors import ToktoolsError
from toktools.parts.unigram import PieceIndex, Unigram, best_paths, compiled_viterbi, f32, viterbi

needs_numba = pytest.mark.skipif(compiled_viterbi() is None, reason="numba is not installed (extra 'fast')")
pytestmark = needs_numba

ALPHABET = "ab▁c"
#: few distinct scores: many paths of equal total (exact ties); the float32 ones make sums
#: that round differently in float32 and f64 (near-ties)
SCORES = [-1.0, -2.0, -0.5, -3.0, f32(-1.1), f32(-2.2), f32(-3.3), f32(-0.7)]

pieces = st.lists(
    st.tuples(st.text(ALPHABET, min_size=1, max_size=4), st.sampled_from(SCORES)), min_size=1, max_size=30
)
texts = st.lists(st.text(ALPHABET + "x▁", max_size=30), min_size=1, max_size=6)  # "x" is never a piece


def pure_paths(texts, index, unk_id, unk_score, float32):
    out = []
    for text in texts:
        try:
            out.append(viterbi(text, index, unk_id, unk_score, float32=float32))
        except ToktoolsError as err:
            return str(err)
    return out


def compiled_paths(texts, index, unk_id, unk_score, float32):
    try:
        return best_paths(texts, index, unk_id, unk_score, float32=float32)
    except ToktoolsError as err:
        return str(err)


@settings(max_examples=300, deadline=None)
@given(pieces=pieces, texts=texts, with_unk=st.booleans(), float32=st.booleans())
def test_the_same_paths_as_pure_python(pieces, texts, with_unk, float32):
    entries = [(piece, i + 1, score) for i, (piece, score) in enumerate(pieces)]
    index = PieceIndex(entries)
    unk_id = 0 if with_unk else None
    unk_score = f32(min(SCORES) - 10.0)
    expected = pure_paths(texts, index, unk_id, unk_score, float32)
    assert compiled_paths(texts, index, unk_id, unk_score, float32) == expected


@settings(max_examples=200, deadline=None)
@given(
    pieces=pieces,
    words=st.lists(st.text(ALPHABET + "xé▁", min_size=1, max_size=20), min_size=1, max_size=8),
    byte_fallback=st.booleans(),
)
def test_word_ids_are_the_ids_of_tokenize(pieces, words, byte_fallback):
    """Runs of unknown characters are fused and looked up by string, with byte fallback."""
    vocab = [("<unk>", 0.0), *pieces, ("<0x78>", -5.0), ("<0xC3>", -5.0), ("<0xA9>", -5.0)]
    model = Unigram(vocab, unk_id=0, byte_fallback=byte_fallback)
    assert model.word_ids(words) == [tuple(t[0] for t in Unigram(vocab, 0, byte_fallback).tokenize(w)) for w in words]


def test_ties_go_to_the_longest_last_piece():
    # "ab" = "a" + "b" = -2 in total: the path whose last piece is longest wins, in both
    index = PieceIndex([("a", 1, -1.0), ("b", 2, -1.0), ("ab", 3, -2.0)])
    assert best_paths(["ab"], index, None, -20.0) == [viterbi("ab", index, None, -20.0)] == [[(0, 2, 3)]]


def test_a_model_without_unk_fails_as_the_pure_path_does():
    index = PieceIndex([("a", 1, -1.0)])
    with pytest.raises(ToktoolsError, match="no unk_id"):
        best_paths(["ax"], index, None, -11.0)


# -- real models -------------------------------------------------------------------------------

UNIGRAM_MODELS = [name for name, options in MODELS.items() if options.get("model_type", "unigram") == "unigram"]


@pytest.mark.parametrize("name", UNIGRAM_MODELS)
def test_spm_models_compiled_pure_and_sentencepiece_agree(name, monkeypatch):
    from toktools.sentencepiece.encode import SentencePieceUnigram

    path = train(name, **MODELS[name])
    lines = held_out_lines(400)
    compiled = SentencePieceUnigram.load(path)
    assert compiled.index.compiled() is not None
    got = compiled.encode_batch(lines)
    monkeypatch.setenv("TOKTOOLS_PURE_PYTHON", "1")
    pure = SentencePieceUnigram.load(path)
    assert pure.index.compiled() is None
    assert got == [pure.encode(line) for line in lines]
    # sentencepiece itself (the float32 rule, longest-match normaliser): every line
    assert got == processor(path).encode(lines)


@pytest.mark.parametrize("name", UNIGRAM_MODELS)
def test_spm_models_in_f64_as_tokenizers_adds(name):
    """The converted model's Unigram (f64): every normalised line, compiled against pure Python."""
    from toktools.sentencepiece.encode import SentencePieceUnigram

    encoder = SentencePieceUnigram.load(train(name, **MODELS[name]))
    model = Unigram([(p.piece, p.score) for p in encoder.model.pieces], unk_id=encoder.unk_id)
    texts = [t for t in map(encoder.normalize, held_out_lines(400)) if t]
    paths = best_paths(texts, model.index, model.unk_id, model.unk_score)
    assert paths == [viterbi(t, model.index, model.unk_id, model.unk_score) for t in texts]
