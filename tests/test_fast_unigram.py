"""The ids-only path for Unigram tokenizers (:mod:`toktools.engines.ids_only_unigram`) gives the reference
``Tokenizer.encode(text, add_special_tokens=False).ids`` and ``tokenizers``' ids.

Tokenizers: the ``spm_train`` models of the tests converted to ``tokenizer.json`` (Precompiled,
the whitespace Replaces, Metaspace without split), the same vocabularies in the pipeline of
``toktools train unigram`` (Nmt, NFKC, Metaspace with split) under each prepend scheme, and a
model trained by ``toktools.train_unigram``. Text: held-out English and Chinese lines with
their edge cases, added tokens written in the text, and generated text around the characters
where grapheme clusters join (combining marks, Hangul jamo, regional indicators, CR LF, ZWJ).
"""

from __future__ import annotations

import json

import pytest
from _spm_models import MODELS, held_out_lines, train
from conftest import read_corpus_sample
from hypothesis import given, settings
from hypothesis import strategies as st

from toktools import presets
from toktools.engines.base import corpus_document
from toktools.engines.choice import UNIGRAM_REFERENCE_MIN_BYTES, likely_engine, make_engine
from toktools.engines.ids_only import ids_encoder
from toktools.engines.ids_only_unigram import UnigramIdsEncoder, string_normalizer
from toktools.engines.reference import ReferenceEngine
from toktools.engines.tokenizers_engine import TokenizersEngine
from toktools.formats import from_tokenizer_json
from toktools.parts.unigram import Unigram

tokenizers = pytest.importorskip("tokenizers")

UNIGRAM_MODELS = [name for name, options in MODELS.items() if options.get("model_type", "unigram") == "unigram"]
ADDED_LINES = ["<s>hello</s> world", "</s>", "  <s> 中文 </s>  ", "a<s>b", "<s><s>x"]
#: characters where clusters join or normalisation acts: combining marks, fullwidth forms,
#: Hangul jamo and syllables, regional indicators, CR/LF, ZWJ and emoji, Bengali, spaces
ODD = "ae\u0301\u0308Ａ①ﬁ\u1100\u1161\u11a8가\U0001f1ef\U0001f1f5\r\n\u200d👩\u0995\u09cd\u09b7 \u3000\t中，"
odd_text = st.lists(st.sampled_from(list(ODD) + ["<s>", "</s>", "  ", "x"]), max_size=25).map("".join)


def converted(name: str) -> dict:
    from toktools.sentencepiece.to_json import load_sentencepiece

    return load_sentencepiece(train(name, **MODELS[name]))


def metaspace_pipeline(name: str, scheme: str, split: bool = True):
    """The spm vocabulary in ``toktools train unigram``'s pipeline, with <s> and </s> added."""
    from toktools.parts import pre_tokenizers
    from toktools.tokenizer import AddedToken

    doc = converted(name)
    model = Unigram([tuple(p) for p in doc["model"]["vocab"]], doc["model"]["unk_id"], doc["model"]["byte_fallback"])
    tokenizer = presets.sentencepiece_unigram(
        model, added_tokens=[AddedToken("<s>", 1, special=True), AddedToken("</s>", 2, special=True)]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace("\u2581", scheme, split)
    return corpus_document(tokenizer.to_tokenizer_json())


def assert_same(document: dict, lines: list[str], against_tokenizers: bool = True) -> None:
    reference = from_tokenizer_json(document)
    fast = ids_encoder(reference)
    assert isinstance(fast, UnigramIdsEncoder)
    expected = [reference.encode(line, add_special_tokens=False).ids for line in lines]
    got = fast.encode_batch(lines)
    assert [line for line, a, b in zip(lines, got, expected) if a != b] == []
    assert fast.encode_batch(lines[::-1]) == expected[::-1]  # from the cache, in another order
    if against_tokenizers:
        theirs = tokenizers.Tokenizer.from_str(json.dumps(document))
        assert got == [e.ids for e in theirs.encode_batch(lines, add_special_tokens=False)]


def lines() -> list[str]:
    return held_out_lines(400) + ADDED_LINES


@pytest.mark.parametrize("name", UNIGRAM_MODELS)
def test_converted_spm_models(name):
    assert_same(converted(name), lines())


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@pytest.mark.parametrize("split", [True, False])
def test_metaspace_pipelines(scheme, split):
    assert_same(metaspace_pipeline("unigram_bytes", scheme, split), lines())


def test_a_model_trained_by_toktools():
    import toktools

    text = read_corpus_sample("mixed_sample.txt", 12_000) + read_corpus_sample("zh_novels.txt", 3_000)
    tokenizer = toktools.train_unigram(
        texts=text.splitlines(), vocab_size=1000, unk_token="<unk>", special_tokens=["<unk>", "<s>"], workers=1
    )
    held = read_corpus_sample("mixed_sample.txt", 20_000, skip_lines=3000).splitlines()
    held += read_corpus_sample("zh_novels.txt", 10_000, skip_lines=3000).splitlines() + ["<s>x<s>", "☃ 𝔘 unseen"]
    assert_same(corpus_document(tokenizer.to_tokenizer_json()), held)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(odd_text, min_size=1, max_size=5))
def test_generated_text_around_joining_characters(texts):
    """Against the reference only: its grapheme clusters are ``regex``'s (toktools' rule)."""
    for name in ("unigram_bytes", "first"):
        if name not in _ENCODERS:  # built once, not per example
            reference = from_tokenizer_json(_DOCS[name])
            _ENCODERS[name] = (reference, ids_encoder(reference))
        reference, fast = _ENCODERS[name]
        expected = [reference.encode(text, add_special_tokens=False).ids for text in texts]
        assert fast.encode_batch(texts) == expected
        assert fast.encode_batch(texts[::-1]) == expected[::-1]  # from the cache, in another order


_ENCODERS: dict[str, tuple] = {}


_DOCS: dict[str, dict] = {}


@pytest.fixture(autouse=True, scope="module")
def _documents():
    _DOCS["unigram_bytes"] = converted("unigram_bytes")
    _DOCS["first"] = metaspace_pipeline("unigram_cf", "first")


@settings(max_examples=200, deadline=None)
@given(text=odd_text)
def test_the_string_normaliser_is_the_references(text):
    for name, doc in _DOCS.items():
        if name not in _NORMALIZERS:  # built once, not per example
            normalizer = from_tokenizer_json(doc).normalizer
            _NORMALIZERS[name] = (string_normalizer(normalizer), normalizer)
        fast, reference = _NORMALIZERS[name]
        assert fast(text) == reference.normalize_str(text)


_NORMALIZERS: dict[str, tuple] = {}


def test_packed_ids_are_the_batch_ids():
    """What a worker sends back: the ids of encode_batch as two int64 arrays (all ids, counts)."""
    from array import array

    fast = ids_encoder(from_tokenizer_json(converted("unigram")))
    texts = lines()
    flat, counts = fast.encode_packed(texts)
    ids, out = array("I", flat).tolist(), []  # ids: uint32; counts: int64
    for count in array("q", counts):
        out.append(ids[:count])
        ids = ids[count:]
    assert out == fast.encode_batch(texts)
    assert not fast.plans_compiled(10**12)  # its compiled Viterbi is loaded by the first texts


def test_sampling_and_other_pre_tokenizers_keep_the_reference_pipeline():
    doc = converted("unigram")
    sampling = from_tokenizer_json(doc)
    sampling.model.alpha = 0.1
    assert ids_encoder(sampling) is None
    other = dict(doc, pre_tokenizer={"type": "WhitespaceSplit"})
    assert ids_encoder(from_tokenizer_json(other)) is None


def test_reference_engine_in_workers(monkeypatch):
    monkeypatch.setattr("toktools.engines.reference.PARALLEL_CHARS", 2_000)  # workers even for this small batch
    document = corpus_document(converted("unigram_user"))
    engine = ReferenceEngine(document, workers=2)
    try:
        assert isinstance(engine.fast, UnigramIdsEncoder)
        texts = lines()
        expected = TokenizersEngine(document).encode_batch(texts)
        assert engine.encode_batch(texts) == expected
        assert engine.encode_batch(texts[::-1]) == expected[::-1]
        assert engine._pool is not None
    finally:
        engine.close()


# -- auto -------------------------------------------------------------------------------------


def test_auto_picks_the_compiled_reference_for_unigram_and_tokenizers_without_numba(monkeypatch):
    from toktools.parts.unigram import compiled_viterbi

    document = corpus_document(converted("unigram"))
    texts = lines()
    expected = TokenizersEngine(document).encode_batch(texts)
    auto = make_engine("auto", document, workers=1)
    try:
        assert auto.name == ("reference" if compiled_viterbi() is not None else "tokenizers")
        assert auto.encode_batch(texts) == expected
    finally:
        auto.close()
    monkeypatch.setenv("TOKTOOLS_PURE_PYTHON", "1")  # no compiled Viterbi: the reference is slower
    assert make_engine("auto", document).name == "tokenizers"


def test_auto_keeps_tokenizers_for_a_unigram_pipeline_without_the_ids_path():
    document = corpus_document(dict(converted("unigram"), pre_tokenizer={"type": "WhitespaceSplit"}))
    assert make_engine("auto", document).name == "tokenizers"


def test_text_that_is_not_unicode_is_refused_as_the_reference_refuses_it():
    reference = from_tokenizer_json(converted("unigram"))
    fast = ids_encoder(reference)
    with pytest.raises(TypeError, match="lone surrogate U\\+D800") as ours:
        fast.encode_batch(["fine", "a\ud800"])
    with pytest.raises(TypeError) as theirs:
        reference.encode("a\ud800")
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="must be str"):
        fast.encode_batch(["fine", 3])


def _megatron(tmp_path, model, corpus, engine, *rule):
    from click.testing import CliRunner

    from toktools.cli import main

    name = "-".join([engine, *rule[1:]])
    args = ["encode", "-t", str(model), str(corpus), "--format", "megatron", "-o", str(tmp_path / name)]
    result = CliRunner().invoke(main, [*args, "--engine", engine, "--json", *rule], catch_exceptions=False)
    return result, name


def test_cli_megatron_from_a_model_file_is_the_same_with_every_engine(tmp_path):
    """``toktools encode -t x.model FILE --format megatron --model-rule tokenizers`` writes the
    same bytes with every engine (the reference through its Unigram ids path); under the
    default rule (sentencepiece's ids) auto and the reference agree, and the tokenizers engine,
    which cannot follow sentencepiece, is refused in one line."""
    model = tmp_path / "model" / "x.model"
    model.parent.mkdir()
    model.write_bytes(train("unigram_bytes", **MODELS["unigram_bytes"]).read_bytes())
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines()) + "\n", encoding="utf-8")
    outputs = {}
    for engine in ("auto", "reference", "tokenizers"):
        result, name = _megatron(tmp_path, model, corpus, engine, "--model-rule", "tokenizers")
        assert result.exit_code == 0, result.stderr
        outputs[engine] = json.loads(result.stdout)["engine"], (tmp_path / f"{name}.bin").read_bytes()
    assert outputs["auto"][1] == outputs["reference"][1] == outputs["tokenizers"][1]
    assert outputs["tokenizers"][0] == "tokenizers" and outputs["reference"][0] == "reference"
    assert outputs["auto"][0] == "tokenizers"  # a small input: see test_auto_keeps_tokenizers_for_small_inputs
    spm_outputs = {}
    for engine in ("auto", "reference"):
        result, name = _megatron(tmp_path, model, corpus, engine)
        assert result.exit_code == 0, result.stderr
        spm_outputs[engine] = (tmp_path / f"{name}.bin").read_bytes()
    assert spm_outputs["auto"] == spm_outputs["reference"]
    result, _ = _megatron(tmp_path, model, corpus, "tokenizers")
    assert result.exit_code == 1 and "--engine sentencepiece or reference" in result.stderr
    assert "Traceback" not in result.stderr


def test_auto_keeps_tokenizers_for_small_inputs():
    """numba's start-up costs more than the compiled reference saves on a small input."""
    from toktools.parts.unigram import compiled_viterbi

    document = corpus_document(converted("unigram"))
    assert make_engine("auto", document, input_bytes=100_000).name == "tokenizers"
    large = make_engine("auto", document, input_bytes=UNIGRAM_REFERENCE_MIN_BYTES)
    large.close()
    assert large.name == ("reference" if compiled_viterbi() is not None else "tokenizers")


def test_no_verify_checker_is_forked_when_auto_takes_the_compiled_reference(tmp_path, monkeypatch):
    """``likely_engine`` knows ``fastest_reference``'s Unigram rule: a run that ``auto`` gives
    to the reference forks no ``--verify`` checker (it would build the reference and be closed
    unused); a small input keeps ``tokenizers``, checked as usual. The output is the same."""
    import importlib.util

    from toktools.corpus import verify as corpus_verify
    from toktools.corpus.encode import encode_corpus
    from toktools.parts.unigram import compiled_viterbi

    document = corpus_document(converted("unigram"))
    numba = importlib.util.find_spec("numba") is not None
    assert likely_engine("auto", document, workers=2, input_bytes=100_000) == "auto"
    assert likely_engine("auto", document, workers=2, input_bytes=None) == "auto"
    large = likely_engine("auto", document, workers=2, input_bytes=UNIGRAM_REFERENCE_MIN_BYTES)
    assert large == ("reference" if numba else "auto")

    tokenizer = tmp_path / "tokenizer.json"
    tokenizer.write_text(json.dumps(document), encoding="utf-8")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines()) + "\n", encoding="utf-8")
    forked: list[str] = []
    real = corpus_verify.CheckerProcess

    def counted(*args, **kwargs):
        forked.append("checker")
        return real(*args, **kwargs)

    monkeypatch.setattr(corpus_verify, "CheckerProcess", counted)
    small = encode_corpus([corpus], tokenizer, tmp_path / "small", format="megatron", workers=2)
    assert small.engine == "tokenizers" and small.verified >= 16 and forked == ["checker"]
    forked.clear()
    monkeypatch.setattr(
        "toktools.engines.choice.UNIGRAM_REFERENCE_MIN_BYTES", corpus.stat().st_size
    )  # this input is "large"
    big = encode_corpus([corpus], tokenizer, tmp_path / "big", format="megatron", workers=2)
    if compiled_viterbi() is not None:
        assert big.engine == "reference" and forked == [] and big.verified == 0
    assert (tmp_path / "big.bin").read_bytes() == (tmp_path / "small.bin").read_bytes()
    assert (tmp_path / "big.idx").read_bytes() == (tmp_path / "small.idx").read_bytes()
