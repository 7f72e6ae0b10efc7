"""Encoding and decoding parity with HuggingFace ``tokenizers`` for byte-level BPE.

Pinned here (expected values always come from ``tokenizers`` 0.23.3 or from the published GPT-2
files / the spec, never from toktools itself):

* the published GPT-2 vocabulary, loaded by ``toktools.load`` from each of its three layouts
  (``vocab.json`` + ``merges.txt``, OpenAI's ``encoder.json`` + ``vocab.bpe``, ``tokenizer.json``),
  gives the same ids, tokens and offsets as ``tokenizers`` on real English, Chinese and mixed text;
* a vocabulary trained by toktools, loaded by ``tokenizers.Tokenizer.from_file``, encodes the same
  on both sides;
* special tokens inside the text (and the ``lstrip`` / ``rstrip`` / ``single_word`` flags of
  added tokens, and tokenizers with 1,000 of them), offsets with ``add_prefix_space`` and with a
  trimming ``ByteLevel`` post-processor, RoBERTa's ``<s> A </s></s> B </s>`` template, truncation
  (longest_first / only_first / only_second, both directions) and padding, configured the same
  way on both sides; large ``encode_batch`` calls (spread over processes by toktools);
* ``decode`` (including ids that cut a multi-byte character, unknown ids, and
  ``skip_special_tokens`` both ways);
* property tests (hypothesis): ``decode(encode(s)) == s`` and identical ids to ``tokenizers`` on
  generated text with emoji, CJK, all kinds of whitespace and control characters.

Note on the GPT-2 ``tokenizer.json``: it enables truncation to 50 tokens, so both sides call
``no_truncation()`` / ``no_padding()`` after loading it.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import read_corpus_sample, ref_vocab_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

import toktools

ALL_FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")
MODEL_FIELDS = ("ids", "tokens", "offsets")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "<|endoftext|>"]


def assert_same_encoding(ours, theirs, fields=MODEL_FIELDS, context=""):
    """Field by field, with both sides' values in the message of the first difference."""
    for name in fields:
        a, b = list(getattr(ours, name)), list(getattr(theirs, name))
        if name == "offsets":
            a, b = [tuple(x) for x in a], [tuple(x) for x in b]
        assert a == b, f"{name} differ{context}:\n  toktools:   {a}\n  tokenizers: {b}"


def assert_same_lines(tok, hf, lines, fields=MODEL_FIELDS):
    """Every line encoded on both sides; the first difference is reported with its line."""
    theirs = hf.encode_batch(lines)
    for number, (line, b) in enumerate(zip(lines, theirs), start=1):
        assert_same_encoding(tok.encode(line), b, fields, context=f" on line {number}: {line[:80]!r}")


# ---------------------------------------------------------------------------------------------
# Fixtures: GPT-2 in three layouts, a trained 8K vocabulary, texts
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_layouts(tmp_path_factory) -> dict[str, Path]:
    """The published GPT-2 files, one directory (or file) per layout that ``toktools.load`` reads."""
    source = ref_vocab_dir("gpt2")
    root = tmp_path_factory.mktemp("gpt2")
    layouts = {}
    for name, files in (
        ("vocab.json+merges.txt", ("vocab.json", "merges.txt")),
        ("encoder.json+vocab.bpe", ("encoder.json", "vocab.bpe")),
    ):
        directory = root / name
        directory.mkdir()
        for f in files:
            shutil.copy(source / f, directory / f)
        layouts[name] = directory
    layouts["tokenizer.json"] = source / "tokenizer.json"
    return layouts


def _load_without_limits(path):
    tok = toktools.load(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def gpt2(gpt2_layouts):
    """toktools' GPT-2 tokenizer for each layout."""
    return {name: _load_without_limits(path) for name, path in gpt2_layouts.items()}


@pytest.fixture(scope="module")
def hf_gpt2():
    """``tokenizers`` with the Hub ``tokenizer.json`` (added token ``<|endoftext|>`` = 50256)."""
    hf = Tokenizer.from_file(str(ref_vocab_dir("gpt2") / "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    return hf


@pytest.fixture(scope="module")
def hf_gpt2_model_only():
    """``tokenizers`` with only ``vocab.json`` + ``merges.txt`` (no added tokens), the HF
    equivalent of loading the two model files."""
    source = ref_vocab_dir("gpt2")
    hf = Tokenizer(models.BPE.from_file(str(source / "vocab.json"), str(source / "merges.txt")))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    return hf


def hf_for_layout(name, hf_gpt2, hf_gpt2_model_only):
    return hf_gpt2 if name == "tokenizer.json" else hf_gpt2_model_only


@pytest.fixture(scope="module")
def texts() -> dict[str, list[str]]:
    """Lines of real text: English and Chinese Wikipedia/novels, and mixed_sample.txt in full."""
    en = read_corpus_sample("en_wiki.txt.gz", 300_000, skip_lines=60_000)
    zh = read_corpus_sample("zh_novels.txt", 150_000, skip_lines=6000) + read_corpus_sample(
        "zh_wiki_sample.txt", 150_000, skip_lines=3000
    )
    mixed = read_corpus_sample("mixed_sample.txt", 2_000_000)
    return {"en": en.split("\n"), "zh": zh.split("\n"), "mixed": mixed.split("\n")}


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory) -> Path:
    """An 8K vocabulary trained by toktools on English + Chinese + mixed text, with the RoBERTa
    specials and ``<|endoftext|>`` (ids 0–5), saved with ``tok.save``."""
    root = tmp_path_factory.mktemp("trained8k")
    corpus = root / "corpus.txt"
    corpus.write_bytes(
        (
            read_corpus_sample("en_wiki.txt.gz", 600_000)
            + read_corpus_sample("zh_wiki_sample.txt", 300_000)
            + read_corpus_sample("mixed_sample.txt", 150_000)
        ).encode("utf-8")
    )
    tok = toktools.train_bytebpe([str(corpus)], 8000, special_tokens=SPECIALS, workers=1)
    tok.save(root / "bpe")
    return root / "bpe"


@pytest.fixture(scope="module")
def trained(trained_dir):
    return toktools.load(trained_dir)


@pytest.fixture(scope="module")
def hf_trained(trained_dir):
    return Tokenizer.from_file(str(trained_dir / "tokenizer.json"))


@pytest.fixture(scope="module")
def roberta_dir(trained_dir, tmp_path_factory) -> Path:
    """The trained vocabulary configured as RoBERTa in ``tokenizers`` (prefix space, RobertaProcessing)
    and saved; toktools loads that same file."""
    hf = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    hf.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    path = tmp_path_factory.mktemp("roberta") / "tokenizer.json"
    hf.save(str(path))
    return path


@pytest.fixture()
def roberta_pair(roberta_dir):
    """A fresh (toktools, tokenizers) RoBERTa pair per test, so settings do not leak."""
    return toktools.load(roberta_dir), Tokenizer.from_file(str(roberta_dir))


@pytest.fixture(scope="module")
def prefix_space_dir(trained_dir, tmp_path_factory) -> Path:
    """The trained vocabulary with ``add_prefix_space=True`` and the default ByteLevel post-processor."""
    hf = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    path = tmp_path_factory.mktemp("prefix") / "tokenizer.json"
    hf.save(str(path))
    return path


# ---------------------------------------------------------------------------------------------
# GPT-2, published files
# ---------------------------------------------------------------------------------------------

LAYOUTS = ["vocab.json+merges.txt", "encoder.json+vocab.bpe", "tokenizer.json"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpt2_hello_world(layout, gpt2):
    """The published GPT-2 answer (SOURCE.txt): "Hello world" → [15496, 995] = Hello, Ġworld."""
    encoding = gpt2[layout].encode("Hello world")
    assert encoding.ids == [15496, 995]
    assert encoding.tokens == ["Hello", "Ġworld"]
    assert encoding.offsets == [(0, 5), (5, 11)]


@pytest.fixture(
    scope="module", params=[pytest.param(3, id="every-3rd-line"), pytest.param(1, id="whole", marks=pytest.mark.full)]
)
def mixed_lines(request, texts) -> list[str]:
    """mixed_sample.txt: every third line (all 37 languages and scripts), all of it under ``-m full``."""
    return texts["mixed"][:: request.param]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpt2_layouts_match_tokenizers_on_mixed_sample(layout, gpt2, hf_gpt2, hf_gpt2_model_only, mixed_lines):
    """mixed_sample.txt (37 languages, emoji with ZWJ / flags / tags, Python and JavaScript
    indentation), line by line: same ids, tokens and character offsets."""
    assert_same_lines(gpt2[layout], hf_for_layout(layout, hf_gpt2, hf_gpt2_model_only), mixed_lines)


@pytest.mark.parametrize("corpus", ["en", "zh"])
def test_gpt2_matches_tokenizers_on_english_and_chinese(corpus, gpt2, hf_gpt2, texts):
    """English and Chinese running text, line by line (tokenizer.json layout)."""
    assert_same_lines(gpt2["tokenizer.json"], hf_gpt2, texts[corpus])


def test_gpt2_whole_document_as_one_sequence(gpt2, hf_gpt2, mixed_lines):
    """mixed_sample.txt as one sequence (900 KB under ``-m full``): newlines, blank lines and
    indentation between lines are part of the words, and offsets run over the whole document."""
    document = "\n".join(mixed_lines)
    assert_same_encoding(gpt2["encoder.json+vocab.bpe"].encode(document), hf_gpt2.encode(document))


def test_bytelevel_post_processor_with_trim_offsets(tmp_path):
    """Spec §10: a ``ByteLevel`` post-processor adds no token but, with ``trim_offsets: true``
    (the default of ``processors.ByteLevel()``; Hub files such as GPT-NeoX's use it), makes
    offsets exclude the spaces a token starts or ends with. Ids are unchanged, offsets must
    match too."""
    hf = Tokenizer.from_file(str(ref_vocab_dir("gpt2") / "tokenizer.json"))
    hf.no_truncation()
    hf.post_processor = processors.ByteLevel(trim_offsets=True)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok, hf = _load_without_limits(path), Tokenizer.from_file(str(path))
    hf.no_truncation()
    for text, pair in [("Hello world  and  more ", None), (" leading space", "pair  text "), ("a\n\n  b", None)]:
        assert_same_encoding(tok.encode(text, pair), hf.encode(text, pair), context=f" for {(text, pair)}")


def test_large_encode_batch_matches_tokenizers(gpt2, hf_gpt2, texts):
    """``encode_batch`` of all 9,000 lines of mixed_sample.txt (big batches are spread over worker
    processes by toktools; two are asked for here): same result as ``tokenizers``'
    ``encode_batch``, in the same order."""
    tok, lines = gpt2["tokenizer.json"], texts["mixed"]
    ours, theirs = tok.encode_batch(lines, workers=2), hf_gpt2.encode_batch(lines)
    assert len(ours) == len(theirs)
    for number, (a, b) in enumerate(zip(ours, theirs), start=1):
        assert_same_encoding(a, b, context=f" on line {number}")


def test_large_padded_pair_batch_matches_tokenizers(roberta_pair, texts):
    """2,000 RoBERTa pairs in one ``encode_batch`` with padding to the longest (multiple of 8):
    the padding is computed over the whole batch, however it was split up. (Offsets are left to
    the offset tests; lines here may start with whitespace.)"""
    tok, hf = roberta_pair
    lines = [line for line in texts["mixed"] if line.strip()][:4000]
    pairs = list(zip(lines[0::2], lines[1::2]))
    assert len(pairs) == 2000
    tok.enable_padding(pad_id=1, pad_token="<pad>", pad_to_multiple_of=8)
    hf.enable_padding(pad_id=1, pad_token="<pad>", pad_to_multiple_of=8)
    ours, theirs = tok.encode_batch(pairs), hf.encode_batch(pairs)
    assert len(ours) == len(theirs)
    fields = ("ids", "tokens", "type_ids", "attention_mask", "special_tokens_mask")
    for number, (a, b) in enumerate(zip(ours, theirs), start=1):
        assert_same_encoding(a, b, fields, context=f" on pair {number}")


def test_gpt2_endoftext_inside_text(gpt2, hf_gpt2, hf_gpt2_model_only):
    """With tokenizer.json, ``<|endoftext|>`` is an added special token: cut out of the input and
    given id 50256, even glued to words. With only vocab.json + merges.txt there is no added token,
    and it is split like any text (as ``tokenizers`` does with the same two files)."""
    text = "First document.<|endoftext|>Second one <|endoftext|> and<|endoftext|>\n<|endoftext|>"
    ours = gpt2["tokenizer.json"].encode(text)
    assert_same_encoding(ours, hf_gpt2.encode(text))
    assert ours.ids.count(50256) == 4
    plain = gpt2["vocab.json+merges.txt"].encode(text)
    assert_same_encoding(plain, hf_gpt2_model_only.encode(text))
    assert 50256 not in plain.ids


# ---------------------------------------------------------------------------------------------
# A vocabulary trained by toktools, loaded by tokenizers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", ["en", "zh", "mixed"])
def test_trained_vocab_encodes_the_same_in_tokenizers(corpus, trained, hf_trained, texts):
    """toktools' own 8K files, read by ``Tokenizer.from_file``: same ids, tokens, offsets."""
    assert_same_lines(trained, hf_trained, texts[corpus])


def test_special_tokens_are_cut_out_of_the_text(trained, hf_trained):
    """Spec §9: added special tokens are matched in the raw text first (also glued to words and
    to each other) and get their fixed ids 0–5."""
    text = "<s>Hello</s></s>world <mask> is<pad><pad> here<|endoftext|>next\n<unk> 我们<s>"
    ours = trained.encode(text)
    assert_same_encoding(ours, hf_trained.encode(text))
    assert ours.ids[0] == 0 and ours.ids[-1] == 0
    assert ours.ids.count(1) == 2 and 5 in ours.ids


def test_special_tokens_in_the_text_are_not_flagged_in_special_tokens_mask(trained, hf_trained):
    """``tokenizers`` sets ``special_tokens_mask`` only for tokens added by the post-processor;
    a special token that was typed in the text (``<s>`` below) gets 0, like any token."""
    text = "a<s>b </s> c"
    assert_same_encoding(trained.encode(text), hf_trained.encode(text), ("ids", "special_tokens_mask"))


def test_prefix_space_offsets(prefix_space_dir):
    """With ``add_prefix_space``, ``tokenizers`` aligns the added space with the first character
    of the sequence: a token made of that space alone (the sequence starts with other whitespace,
    or the vocabulary has no ``Ġx`` merge) gets the first character's span, not an empty one."""
    tok, hf = toktools.load(prefix_space_dir), Tokenizer.from_file(str(prefix_space_dir))
    for text in ["\nfoo", "\tx", "\u3000x", "Hello world"]:
        assert_same_encoding(tok.encode(text), hf.encode(text), context=f" for {text!r}")


@pytest.mark.parametrize(
    "flag, text",
    [
        ("lstrip", "Fill in the <mask> here, or<mask>there"),
        ("rstrip", "Fill in the <mask>   here and <mask>\tthere"),
        ("single_word", "<mask> alone, but not in a<mask>b"),
    ],
)
def test_added_token_matching_flags(flag, text, trained_dir, tmp_path):
    """Spec §9: an added token's ``lstrip`` / ``rstrip`` / ``single_word`` fields in
    ``tokenizer.json`` control how it is matched (roberta-base ships ``<mask>`` with
    ``lstrip: true``, so that ``"the <mask>"`` swallows the space). A file with the flag set must
    encode the same in toktools as in ``tokenizers``."""
    hf = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    hf.add_special_tokens([AddedToken("<mask>", special=True, normalized=False, **{flag: True})])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    hf = Tokenizer.from_file(str(path))
    assert_same_encoding(toktools.load(path).encode(text), hf.encode(text), context=f" for {text!r}")


_LOAD_AND_ENCODE = "import json, sys, toktools; print(json.dumps(toktools.load(sys.argv[1]).encode(sys.argv[2]).ids))"


def test_a_thousand_added_tokens_load_quickly(trained_dir, tmp_path):
    """Tokenizers with many added tokens exist (reserved / extra ids); ``tokenizers`` loads 1,000
    of them in milliseconds. toktools must load such a ``tokenizer.json`` (and match its tokens in
    the text, longest first) within a few seconds: the subprocess gets 8 s of CPU time (which a
    busy machine does not stretch as it does wall time)."""
    hf = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    hf.add_special_tokens([f"<extra_{i}>" for i in range(1000)])
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    text = "a<extra_1>b <extra_10><extra_999> <extra_99x"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_AND_ENCODE, str(path), text],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    assert cpu < 8, f"toktools.load of a tokenizer.json with 1,000 added tokens took {cpu:.1f} s of CPU time"
    assert json.loads(done.stdout) == hf.encode(text).ids


# ---------------------------------------------------------------------------------------------
# RoBERTa template, truncation, padding
# ---------------------------------------------------------------------------------------------

PAIRS = [
    ("Hello world", None),
    ("The quick brown fox jumps over the lazy dog.", "It sleeps in the sun, all day long."),
    ("Beijing 北京 is the capital of China.", "Shanghai 上海 is larger!"),
    ("Short one", "A somewhat longer second sequence with more words in it."),
]


def test_roberta_template_matches_spec_and_tokenizers(roberta_pair):
    """Spec §10: single ``<s> A </s>``; pair ``<s> A </s> </s> B </s>``; all type ids 0; the
    special-token mask marks exactly the template tokens, whose offsets are (0, 0); other offsets
    are trimmed of the leading space."""
    tok, hf = roberta_pair
    for text, pair in PAIRS:
        ours = tok.encode(text, pair)
        assert_same_encoding(ours, hf.encode(text, pair), ALL_FIELDS, context=f" for {(text, pair)}")
        assert ours.ids[0] == 0 and ours.ids[-1] == 2 and set(ours.type_ids) == {0}
        if pair is not None:
            a_len = len(tok.encode(text, add_special_tokens=False).ids)
            assert ours.ids[a_len + 1 : a_len + 3] == [2, 2]
            assert ours.special_tokens_mask == [1] + [0] * a_len + [1, 1] + [0] * (len(ours.ids) - a_len - 4) + [1]


def test_roberta_encode_batch(roberta_pair):
    """``encode_batch`` with single texts and pairs mixed, as ``tokenizers`` does it."""
    tok, hf = roberta_pair
    batch = [t if p is None else (t, p) for t, p in PAIRS]
    for ours, theirs in zip(tok.encode_batch(batch), hf.encode_batch(batch)):
        assert_same_encoding(ours, theirs, ALL_FIELDS)


def test_roberta_pair_with_an_empty_second_sequence(roberta_pair):
    """An empty second sequence is still a pair: ``<s> A </s></s></s>`` (three ``</s>``)."""
    tok, hf = roberta_pair
    assert_same_encoding(tok.encode("Hello world", ""), hf.encode("Hello world", ""), ALL_FIELDS)


def test_roberta_without_special_tokens(roberta_pair):
    """``add_special_tokens=False`` skips the template, but ``RobertaProcessing`` still runs: it
    trims the offsets of spaces and sets every type id to 0 (RoBERTa has no segment ids)."""
    tok, hf = roberta_pair
    for text, pair in PAIRS[1:]:
        assert_same_encoding(
            tok.encode(text, pair, add_special_tokens=False),
            hf.encode(text, pair, add_special_tokens=False),
            ALL_FIELDS,
            context=f" for {(text, pair)}",
        )


LONG_A = "The quick brown fox jumps over the lazy dog again and again, all day long."
LONG_B = "Beijing 北京 is the capital of the People's Republic of China, Shanghai 上海 is larger."
SHORT = "Hi there"
TRUNCATION_PAIRS = {
    "longest_first": [(LONG_A, LONG_B), (SHORT, LONG_B), (LONG_A, SHORT)],
    "only_first": [(LONG_A, SHORT), (LONG_B, "Hello")],
    "only_second": [(SHORT, LONG_A), ("Hello", LONG_B)],
}


@pytest.mark.parametrize("direction", ["right", "left"])
@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
def test_truncation(strategy, direction, roberta_pair):
    """``enable_truncation(max_length, strategy, direction)`` on both sides: max_length counts the
    four template tokens of a pair (two of a single text). Pairs are chosen so that the strategy
    can do its job (only_first: a long first and a short second, and so on)."""
    tok, hf = roberta_pair
    tok.enable_truncation(14, strategy=strategy, direction=direction)
    hf.enable_truncation(14, strategy=strategy, direction=direction)
    for text, pair in TRUNCATION_PAIRS[strategy]:
        ours = tok.encode(text, pair)
        assert_same_encoding(ours, hf.encode(text, pair), ALL_FIELDS, context=f" for {(text, pair)}")
        assert len(ours.ids) == 14
    if strategy != "only_second":
        ours = tok.encode(LONG_A)
        assert_same_encoding(ours, hf.encode(LONG_A), ALL_FIELDS)
        assert len(ours.ids) == 14


def test_truncation_only_second_of_a_single_sequence_that_fits(roberta_pair):
    """``only_second`` with a single sequence that needs no truncation: ``tokenizers`` returns it
    unchanged (its "Second sequence not provided" error only arises when something must be cut)."""
    tok, hf = roberta_pair
    tok.enable_truncation(64, strategy="only_second")
    hf.enable_truncation(64, strategy="only_second")
    assert_same_encoding(tok.encode("Hello world"), hf.encode("Hello world"), ALL_FIELDS)


@pytest.mark.parametrize("case", ["only_first", "only_second", "only_second-single"])
def test_truncation_that_cannot_be_done_fails_on_both_sides(case, roberta_pair):
    """Removing more tokens than the chosen sequence has ("Sequence to truncate too short"), or
    ``only_second`` on a single text that is too long ("Second sequence not provided"), is an
    error in ``tokenizers``; toktools must refuse too, not return something else."""
    tok, hf = roberta_pair
    strategy = case.split("-")[0]
    tok.enable_truncation(8, strategy=strategy)
    hf.enable_truncation(8, strategy=strategy)
    args = {"only_first": ("Hi", LONG_A), "only_second": (LONG_A, "Hi"), "only_second-single": (LONG_A,)}[case]
    with pytest.raises(Exception):
        hf.encode(*args)
    with pytest.raises(Exception):
        tok.encode(*args)


@pytest.mark.parametrize(
    "options",
    [
        dict(length=40, pad_id=1, pad_token="<pad>"),
        dict(length=40, pad_id=1, pad_token="<pad>", direction="left"),
        dict(pad_id=1, pad_token="<pad>", pad_to_multiple_of=8),
        dict(pad_id=1, pad_token="<pad>", pad_type_id=3),
    ],
    ids=["fixed-right", "fixed-left", "multiple-of-8", "batch-longest"],
)
def test_padding(options, roberta_pair):
    """``enable_padding`` with explicit pad id/token: single encodes and ``encode_batch`` (which
    pads to the longest of the batch): pad ids, attention mask 0, special-token mask 1, offsets
    (0, 0), on the configured side."""
    tok, hf = roberta_pair
    tok.enable_padding(**options)
    hf.enable_padding(**options)
    for text, pair in PAIRS:
        assert_same_encoding(tok.encode(text, pair), hf.encode(text, pair), ALL_FIELDS, context=f" for {(text, pair)}")
    batch = [t if p is None else (t, p) for t, p in PAIRS]
    for ours, theirs in zip(tok.encode_batch(batch), hf.encode_batch(batch)):
        assert_same_encoding(ours, theirs, ALL_FIELDS)


def test_padding_defaults_are_those_of_tokenizers(roberta_pair):
    """``enable_padding(length=...)`` without a pad token, and with ``pad_token`` but no
    ``pad_id``: ``tokenizers``' defaults are ``pad_id=0`` and ``pad_token="[PAD]"`` (it never looks
    the pad token up). Same call, same output."""
    tok, hf = roberta_pair
    for options in (dict(length=12), dict(length=12, pad_token="<pad>")):
        tok.enable_padding(**options)
        hf.enable_padding(**options)
        assert_same_encoding(
            tok.encode("Hello world"), hf.encode("Hello world"), ALL_FIELDS, context=f" with {options}"
        )


def test_roberta_tokenizer_json_round_trip(roberta_dir, tmp_path):
    """toktools writes back the RoBERTa ``tokenizer.json`` it read, byte for byte."""
    toktools.load(roberta_dir).save(tmp_path)
    assert (tmp_path / "tokenizer.json").read_bytes() == Path(roberta_dir).read_bytes()


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


def test_decode_ids_that_cut_multibyte_characters(gpt2, hf_gpt2):
    """Every prefix, suffix and single id of an encoding whose tokens split UTF-8 characters
    (emoji, CJK, accents): the bytes are joined and decoded with U+FFFD replacement exactly like
    ``tokenizers`` (spec §8); ``<|endoftext|>`` (special) dropped or kept on request."""
    tok = gpt2["tokenizer.json"]
    text = "a😀b 我们 é👍🏽<|endoftext|>🇫🇷 x"
    ids = hf_gpt2.encode(text).ids
    assert tok.encode(text).ids == ids
    pieces = [ids[:i] for i in range(len(ids) + 1)] + [ids[i:] for i in range(len(ids))] + [[i] for i in ids]
    pieces += [ids[::2], ids[1::2], list(reversed(ids))]
    for part in pieces:
        for skip in (True, False):
            assert tok.decode(part, skip_special_tokens=skip) == hf_gpt2.decode(part, skip_special_tokens=skip), (
                part,
                skip,
            )
    assert tok.decode(ids) == text.replace("<|endoftext|>", "")
    assert tok.decode(ids, skip_special_tokens=False) == text


def test_decode_random_id_sequences(gpt2, hf_gpt2):
    """3,000 random id sequences over the whole GPT-2 vocabulary (mostly invalid UTF-8), plus ids
    outside it, which both sides skip."""
    tok = gpt2["tokenizer.json"]
    rng = random.Random(20240)
    for _ in range(3000):
        ids = [rng.randrange(50257) for _ in range(rng.randint(0, 8))]
        if rng.random() < 0.1:
            ids.insert(rng.randint(0, len(ids)), rng.choice([50256, 50257, 10**6]))
        for skip in (True, False):
            assert tok.decode(ids, skip_special_tokens=skip) == hf_gpt2.decode(ids, skip_special_tokens=skip), (
                ids,
                skip,
            )


def test_decode_with_trained_specials(trained, hf_trained):
    """The RoBERTa specials and ``<|endoftext|>`` of the trained vocabulary: removed by default,
    kept with ``skip_special_tokens=False``."""
    ids = hf_trained.encode("<s>Hello</s></s>world<pad><mask> 你好<|endoftext|>").ids
    for skip in (True, False):
        assert trained.decode(ids, skip_special_tokens=skip) == hf_trained.decode(ids, skip_special_tokens=skip)
    assert trained.decode(ids) == "Helloworld 你好"


def test_decode_keeps_the_added_prefix_space(prefix_space_dir):
    """Spec §8: with ``add_prefix_space`` the space is not removed again: "Hello" → " Hello"."""
    tok, hf = toktools.load(prefix_space_dir), Tokenizer.from_file(str(prefix_space_dir))
    ids = tok.encode("Hello").ids
    assert ids == hf.encode("Hello").ids
    assert tok.decode(ids) == hf.decode(ids) == " Hello"


# ---------------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------------

WHITESPACE = list(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
CONTROLS = [chr(c) for c in (0, 1, 7, 8, 0x1B, 0x7F, 0x80, 0x8D, 0x9F, 0xAD, 0x200B, 0x200D, 0xFEFF)]
CJK_AND_EMOJI = list("我你好中文國語日本語한국어ひらがなカタカナ😀👍🏽❤️🇫🇷🏳️‍🌈👨‍👩‍👧\U0001f9d1\u200d\U0001f4bb")
PIECES = [
    "'s",
    "'S",
    "'ll",
    "'t",
    "'re",
    " ",
    "  ",
    "2024",
    "年",
    "Hello",
    " world",
    "é",
    "e\u0301",
    "<s>",
    "</s>",
    "<|endoftext|>",
    "\r\n",
]

text_strategy = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(WHITESPACE),
        st.sampled_from(CONTROLS),
        st.sampled_from(CJK_AND_EMOJI),
        st.sampled_from(PIECES),
    ),
    max_size=40,
).map("".join)

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY_SETTINGS
@given(text=text_strategy)
def test_decode_encode_round_trip(text, gpt2):
    """Byte-level BPE is lossless: the GPT-2 model files (no added tokens) give back any text."""
    tok = gpt2["vocab.json+merges.txt"]
    assert tok.decode(tok.encode(text).ids) == text


@PROPERTY_SETTINGS
@given(text=text_strategy)
def test_gpt2_ids_match_tokenizers_on_generated_text(text, gpt2, hf_gpt2):
    """Same ids, tokens and offsets as ``tokenizers`` with the GPT-2 tokenizer.json."""
    assert_same_encoding(gpt2["tokenizer.json"].encode(text), hf_gpt2.encode(text))


@PROPERTY_SETTINGS
@given(text=text_strategy)
def test_trained_ids_match_tokenizers_on_generated_text(text, trained, hf_trained):
    """Same ids, tokens and offsets with the trained 8K vocabulary (specials in the text too)."""
    assert_same_encoding(trained.encode(text), hf_trained.encode(text))


@PROPERTY_SETTINGS
@given(text=text_strategy, pair=st.one_of(st.none(), text_strategy))
def test_roberta_matches_tokenizers_on_generated_pairs(text, pair, roberta_dir):
    """RoBERTa configuration (prefix space, template with offset trimming) on generated single
    texts and pairs, empty ones included: every field of the encoding."""
    tok, hf = _roberta_cached(roberta_dir)
    assert_same_encoding(tok.encode(text, pair), hf.encode(text, pair), ALL_FIELDS)


_ROBERTA_CACHE: dict[Path, tuple] = {}


def _roberta_cached(path):
    if path not in _ROBERTA_CACHE:
        _ROBERTA_CACHE[path] = (toktools.load(path), Tokenizer.from_file(str(path)))
    return _ROBERTA_CACHE[path]
