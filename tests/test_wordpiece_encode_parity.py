"""Encoding and decoding parity with HuggingFace ``tokenizers`` for BERT WordPiece.

Pinned here (expected values always come from ``tokenizers`` 0.23.3 or from
``shared/spec/wordpiece.md``, never from toktools itself):

* the published bert-base-uncased (lower-casing) and bert-base-chinese (cased,
  ``lowercase=False``) vocabularies, and a vocabulary trained by toktools (loaded in
  ``tokenizers`` through the ``tokenizer.json`` we write), give the same ids, tokens, offsets,
  type ids, attention mask and special-tokens mask as ``tokenizers`` on real English, Chinese and
  mixed-script text (spec §1–§5, §7);
* sentence pairs, special tokens inside the text (matched on the raw input, case-sensitive,
  spec §4), words longer than 100 characters and words with an unmatchable character (one
  ``[UNK]`` for the whole word, spec §5);
* truncation (longest_first / only_first / only_second, both directions, max_length 16 and 512)
  and padding (fixed 512, batch-longest, ``pad_to_multiple_of``), set the same way on both sides;
  the edge cases where ``tokenizers`` truncates to nothing or not at all are pinned separately;
* ``decode`` with ``skip_special_tokens`` both ways, including every cleanup rule of spec §8;
* property tests (hypothesis): identical ids (and decoding) on generated text with CJK, accents
  and combining marks, punctuation, emoji, special tokens and all kinds of whitespace.

The HF side is ``tokenizers.BertWordPieceTokenizer(vocab.txt, lowercase=...)``, the class the
spec describes; the toktools side is ``WordPieceTokenizer.from_vocab_file`` with the same options.
"""

from __future__ import annotations

import itertools

import pytest
from conftest import read_corpus_sample, ref_vocab_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import BertWordPieceTokenizer, Tokenizer, decoders, models

import toktools
from toktools.presets import WordPieceTokenizer

ALL_FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask")


def fields(encoding) -> dict[str, list]:
    out = {name: list(getattr(encoding, name)) for name in ALL_FIELDS}
    out["offsets"] = [tuple(o) for o in out["offsets"]]
    return out


def assert_same_encoding(ours, theirs, context: str = "") -> None:
    """All six fields, field by field, with both sides' values in the message of the first
    difference."""
    a, b = fields(ours), fields(theirs)
    for name in ALL_FIELDS:
        assert a[name] == b[name], f"{name} differ{context}:\n  toktools:   {a[name]}\n  tokenizers: {b[name]}"


def assert_same_lines(ours, theirs, lines: list[str], pairs: bool = False) -> None:
    """Every line (or every pair of consecutive lines) encoded on both sides; the first
    difference is reported with its input."""
    inputs = list(zip(lines, lines[1:])) if pairs else lines
    expected = theirs.encode_batch(inputs)
    for number, (item, b) in enumerate(zip(inputs, expected), start=1):
        a = ours.encode(*item) if pairs else ours.encode(item)
        assert_same_encoding(a, b, context=f" on input {number}: {str(item)[:100]!r}")


def outcome(call):
    """An encoding's fields, or the marker "error" when the call raises (ToktoolsError on our
    side, a plain Exception from tokenizers)."""
    try:
        return fields(call())
    except Exception:  # ToktoolsError on our side, a plain Exception from tokenizers
        return "error"


# ---------------------------------------------------------------------------------------------
# Fixtures: the published vocabularies, a trained one, texts
# ---------------------------------------------------------------------------------------------


class Pair:
    """One tokenizer on both sides, built from the same files with the same options."""

    def __init__(self, name: str, ours, theirs, directory=None) -> None:
        self.name, self.ours, self.theirs, self.directory = name, ours, theirs, directory

    def __repr__(self) -> str:
        return self.name


@pytest.fixture(scope="module")
def uncased() -> Pair:
    vocab = ref_vocab_dir("bert-base-uncased") / "vocab.txt"
    return Pair("bert-base-uncased", WordPieceTokenizer.from_vocab_file(vocab), BertWordPieceTokenizer(str(vocab)))


@pytest.fixture(scope="module")
def chinese() -> Pair:
    """bert-base-chinese, cased as published (``do_lower_case=False``)."""
    vocab = ref_vocab_dir("bert-base-chinese") / "vocab.txt"
    return Pair(
        "bert-base-chinese",
        WordPieceTokenizer.from_vocab_file(vocab, lowercase=False),
        BertWordPieceTokenizer(str(vocab), lowercase=False),
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Pair:
    """A 6K vocabulary trained by toktools on English, Chinese and mixed text, saved, and loaded
    by ``tokenizers.Tokenizer.from_file`` from the ``tokenizer.json`` we wrote."""
    text = (
        read_corpus_sample("en_wiki.txt.gz", 400_000, skip_lines=30_000)
        + read_corpus_sample("zh_wiki_sample.txt", 150_000, skip_lines=2_000)
        + read_corpus_sample("mixed_sample.txt", 150_000)
    )
    corpus = tmp_path_factory.mktemp("wp-encode") / "train.txt"
    corpus.write_bytes(text.encode("utf-8"))
    tokenizer = toktools.train_wordpiece([str(corpus)], 6000, workers=1)
    out = corpus.parent / "trained"
    tokenizer.save(out)
    return Pair("trained-6k", tokenizer, Tokenizer.from_file(str(out / "tokenizer.json")), out)


@pytest.fixture(params=["uncased", "chinese", "trained"])
def pair(request) -> Pair:
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def texts() -> dict[str, list[str]]:
    """Real lines: English and Chinese Wikipedia and novels (regions not used for training
    above) and the whole mixed sample (37 languages, emoji with ZWJ, code). Lines are cut at
    ``\n`` only, so U+2028, NEL, VT, FF and U+001C–U+001F stay inside the text."""

    def lines(text: str) -> list[str]:
        return text.split("\n")[:-1]

    return {
        "en": lines(read_corpus_sample("en_wiki.txt.gz", 250_000, skip_lines=60_000)),
        "zh": lines(read_corpus_sample("zh_wiki_sample.txt", 200_000, skip_lines=3_500))
        + lines(read_corpus_sample("zh_novels.txt", 60_000, skip_lines=5_000)),
        "mixed": lines(read_corpus_sample("mixed_sample.txt", 1_000_000)),
    }


# ---------------------------------------------------------------------------------------------
# Real text
# ---------------------------------------------------------------------------------------------


#: English and Chinese by default; the mixed sample (both in one corpus, the heaviest) under -m full
CORPORA = ["en", "zh", pytest.param("mixed", marks=pytest.mark.full)]


@pytest.mark.parametrize("corpus", CORPORA)
def test_real_text_single_sequences(pair, texts, corpus):
    """Every line of the corpus: same six fields as tokenizers, with [CLS]/[SEP] added."""
    assert_same_lines(pair.ours, pair.theirs, texts[corpus])


@pytest.mark.parametrize("corpus", CORPORA)
def test_real_text_pairs(pair, texts, corpus):
    """Consecutive lines as (A, B) pairs: ``[CLS] A [SEP] B [SEP]`` with type ids 0 then 1
    (spec §7)."""
    assert_same_lines(pair.ours, pair.theirs, texts[corpus][:400], pairs=True)


@pytest.mark.parametrize("corpus", CORPORA)
def test_real_text_without_special_tokens(pair, texts, corpus):
    """``add_special_tokens=False`` adds nothing, for singles and pairs."""
    lines = texts[corpus][:300]
    expected = pair.theirs.encode_batch(lines, add_special_tokens=False)
    for line, b in zip(lines, expected):
        assert_same_encoding(pair.ours.encode(line, add_special_tokens=False), b, f" on {line[:80]!r}")
    for a_text, b_text in zip(lines, lines[1:]):
        assert_same_encoding(
            pair.ours.encode(a_text, b_text, add_special_tokens=False),
            pair.theirs.encode(a_text, b_text, add_special_tokens=False),
        )


def test_encode_batch(pair, texts):
    """``encode_batch`` on a mixed batch of singles and pairs equals tokenizers'."""
    batch = (
        texts["en"][:20] + [tuple(p) for p in zip(texts["zh"][:10], texts["mixed"][100:110])] + texts["mixed"][200:220]
    )
    for index, (a, b) in enumerate(zip(pair.ours.encode_batch(batch), pair.theirs.encode_batch(batch))):
        assert_same_encoding(a, b, f" on batch item {index}")


def test_saved_trained_vocabulary_loads_back_identically(trained, texts):
    """``toktools.load`` on the directory we saved encodes exactly like the trained object (and
    so like tokenizers, which loaded the same ``tokenizer.json``)."""
    loaded = toktools.load(trained.directory)
    lines = texts["mixed"][:600]
    expected = trained.theirs.encode_batch(lines)
    for line, b in zip(lines, expected):
        assert_same_encoding(loaded.encode(line), b, f" on {line[:80]!r}")


# ---------------------------------------------------------------------------------------------
# Special tokens, long words, unknown characters
# ---------------------------------------------------------------------------------------------

SPECIAL_CASES = [
    "foo[MASK]bar [mask]",  # spec §4: fo ##o [MASK] bar [ mask ] with the 30K vocab
    "[CLS][SEP]x[PAD]y[UNK]z",  # adjacent specials, no word boundary needed
    "[MASK][MASK] [MASK]",
    "[MASK",  # an incomplete special is plain text
    "[[MASK]]",
    "Ünïcödé[SEP]ÀÉÎ",  # normalisation on each side of a special
    "[Mask] [MASK] [mask]",  # case-sensitive
    "",  # empty input: [CLS] [SEP]
    "   \t\n ",  # whitespace only
]


@pytest.mark.parametrize("text", SPECIAL_CASES)
def test_special_tokens_inside_text(pair, text):
    """Special tokens are cut out of the raw input first, leftmost-longest and case-sensitive;
    the text between them is normalised on its own (spec §4). Singles, pairs, and without
    added special tokens; a special found in the text is *not* flagged in
    ``special_tokens_mask``, as in tokenizers."""
    assert_same_encoding(pair.ours.encode(text), pair.theirs.encode(text))
    assert_same_encoding(
        pair.ours.encode(text, add_special_tokens=False), pair.theirs.encode(text, add_special_tokens=False)
    )
    assert_same_encoding(pair.ours.encode(text, text), pair.theirs.encode(text, text))


def test_spec_example_for_special_tokens_in_text(uncased):
    """Spec §4: in ``"foo[MASK]bar [mask]"`` the exact ``[MASK]`` is cut out of the raw text with
    no word boundary on either side, while the lower-case ``[mask]`` is ordinary text split as
    ``[ mask ]``. (The spec's ``fo ##o`` is for its 30K test vocabulary; bert-base-uncased has
    ``foo``.)"""
    tokens = uncased.ours.encode("foo[MASK]bar [mask]", add_special_tokens=False).tokens
    assert tokens == ["foo", "[MASK]", "bar", "[", "mask", "]"]


LONG_WORD_CASES = [
    "a" * 100,  # exactly the limit: split into pieces
    "a" * 101,  # over the limit: one [UNK] spanning the word
    "x " + "ab" * 50 + " y",  # 100 chars between two short words
    "x " + "ab" * 50 + "c y",  # 101
    "é" * 101,  # the limit counts normalised chars (é → e when stripping)
    "e\u0301" * 51,  # 102 input chars, 51 or 102 normalised depending on accents
    "ß" * 101,
    "İ" * 60,  # lower-cases to 2 chars each: 120 > 100 when lower-casing
    "中" * 150,  # CJK chars are words of their own: never too long
]


@pytest.mark.parametrize("text", LONG_WORD_CASES, ids=lambda t: f"{len(t)}:{t[:6]}")
def test_words_longer_than_100_chars_become_one_unk(pair, text):
    """``max_input_chars_per_word=100`` (HF; Google's BERT uses 200): a longer pre-token is one
    ``[UNK]`` whose offsets span the whole word (spec §5)."""
    assert_same_encoding(pair.ours.encode(text), pair.theirs.encode(text))


def test_over_long_word_spec_rule(uncased):
    """The rule itself, from the spec: 101 code points → exactly one [UNK] covering 0..101."""
    encoding = uncased.ours.encode("a" * 101, add_special_tokens=False)
    assert encoding.tokens == ["[UNK]"] and encoding.offsets == [(0, 101)]
    assert "[UNK]" not in uncased.ours.encode("a" * 100, add_special_tokens=False).tokens


UNMATCHABLE_CASES = [
    "hello☃world ok",  # ☃ is a symbol (not punctuation): it stays inside the word
    "snow☃",
    "☃snow",
    "ok €100 fine",
    "naïve™ tea",
    "x\U0001f600y smile",
    "\u2b820 ext-e",  # not split by HF's CJK ranges (starts at 2B920)
]


@pytest.mark.parametrize("text", UNMATCHABLE_CASES)
def test_word_with_an_unmatchable_char_is_one_unk(pair, text):
    """If no piece matches at some position, the *whole* word is one ``[UNK]`` and the pieces
    found before are dropped (spec §5)."""
    assert_same_encoding(pair.ours.encode(text), pair.theirs.encode(text))


def test_unmatchable_char_spec_rule(uncased):
    """With bert-base-uncased (no ☃ in the vocab): ``hello☃world`` is one ``[UNK]`` spanning 0..11."""
    encoding = uncased.ours.encode("hello☃world ok", add_special_tokens=False)
    assert encoding.tokens == ["[UNK]", "ok"]
    assert encoding.offsets == [(0, 11), (12, 14)]


# ---------------------------------------------------------------------------------------------
# Truncation and padding
# ---------------------------------------------------------------------------------------------


def raw(theirs) -> Tokenizer:
    """The ``tokenizers.Tokenizer`` inside ``BertWordPieceTokenizer`` (whose wrapper lacks
    ``direction``)."""
    return getattr(theirs, "_tokenizer", theirs)


@pytest.fixture
def reset(pair):
    """Leave both sides without truncation or padding after the test."""
    yield pair
    for side in (pair.ours, raw(pair.theirs)):
        side.no_truncation()
        side.no_padding()


@pytest.fixture
def fresh() -> Pair:
    """A new bert-base-uncased pair for tests that change settings."""
    vocab = ref_vocab_dir("bert-base-uncased") / "vocab.txt"
    return Pair("bert-base-uncased", WordPieceTokenizer.from_vocab_file(vocab), BertWordPieceTokenizer(str(vocab)))


@pytest.fixture(scope="module")
def truncation_inputs(texts) -> list:
    """Real English lines: long (≥ 60 tokens) and short (≤ 10 words), combined as singles and as
    all four (long/short) pairs."""
    lines = texts["en"]
    long = [line for line in lines if len(line.split()) > 80][:3]
    short = [line for line in lines if 2 <= len(line.split()) <= 8][:3]
    assert len(long) == 3 and len(short) == 3
    singles = [(x,) for x in long + short]
    pairs = [(a, b) for a, b in itertools.product(long[:2] + short[:2], repeat=2)]
    return singles + pairs


@pytest.mark.parametrize("direction", ["right", "left"])
@pytest.mark.parametrize("max_length", [16, 512])
@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
def test_truncation(reset, truncation_inputs, strategy, max_length, direction):
    """``enable_truncation(max_length, strategy, direction)`` on both sides: same encodings, or
    an error on both sides (only_first/only_second raise when the sequence to cut is too short).

    Singles with ``only_second`` are pinned by their own test below."""
    pair = reset
    pair.ours.enable_truncation(max_length, strategy=strategy, direction=direction)
    raw(pair.theirs).enable_truncation(max_length, strategy=strategy, direction=direction)
    for item in truncation_inputs:
        if strategy == "only_second" and len(item) == 1:
            continue
        for add in (True, False):
            ours = outcome(lambda: pair.ours.encode(*item, add_special_tokens=add))
            theirs = outcome(lambda: pair.theirs.encode(*item, add_special_tokens=add))
            assert ours == theirs, (
                f"{strategy} {max_length} {direction} add_special_tokens={add} on {[t[:40] for t in item]}"
            )


def test_truncation_longest_first_rule(fresh):
    """Spec §7 worked example: budget L = 16 - 3 = 13 for a pair of 20 and 4 tokens →
    n1 = 4 (the shorter is kept), n2 = max(4, 13 - 4) = 9."""
    ours = fresh.ours
    ours.enable_truncation(16)
    encoding = ours.encode(" ".join(["word"] * 20), "a b c d")
    assert encoding.tokens == ["[CLS]"] + ["word"] * 9 + ["[SEP]", "a", "b", "c", "d", "[SEP]"]
    assert encoding.type_ids == [0] * 11 + [1] * 5


def test_only_second_truncation_leaves_a_fitting_single_sequence_alone(fresh):
    """tokenizers only truncates (and so only complains about a missing second sequence) when
    the input is too long: with ``only_second``, a single sequence that fits is returned as is;
    one that does not fit raises "Second sequence not provided"."""
    ours, theirs = fresh.ours, raw(fresh.theirs)
    ours.enable_truncation(16, strategy="only_second")
    theirs.enable_truncation(16, strategy="only_second")
    short = "a short sentence"
    assert_same_encoding_outcome(lambda: ours.encode(short), lambda: theirs.encode(short))
    long = " ".join(["word"] * 30)
    assert outcome(lambda: theirs.encode(long)) == "error"
    assert outcome(lambda: ours.encode(long)) == "error"


def assert_same_encoding_outcome(ours_call, theirs_call) -> None:
    theirs = outcome(theirs_call)
    assert theirs != "error", "tokenizers raised; the test expects an encoding"
    assert outcome(ours_call) == theirs


@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
def test_truncation_to_exactly_the_special_tokens(fresh, strategy):
    """When ``max_length`` equals the number of added special tokens, the budget is 0 and
    tokenizers truncates every sequence to nothing, for every strategy, without an error:
    ``[CLS] [SEP] [SEP]`` for a pair with max_length 3 (and ``[]`` with max_length 0 and no
    special tokens)."""
    ours, theirs = fresh.ours, raw(fresh.theirs)
    ours.enable_truncation(3, strategy=strategy)
    theirs.enable_truncation(3, strategy=strategy)
    assert_same_encoding_outcome(lambda: ours.encode("a b c d e", "f g"), lambda: theirs.encode("a b c d e", "f g"))
    assert theirs.encode("a b c d e", "f g").tokens == ["[CLS]", "[SEP]", "[SEP]"]
    ours.enable_truncation(0, strategy=strategy)
    theirs.enable_truncation(0, strategy=strategy)
    assert_same_encoding_outcome(
        lambda: ours.encode("a b c", "d e", add_special_tokens=False),
        lambda: theirs.encode("a b c", "d e", add_special_tokens=False),
    )


def test_max_length_below_the_special_tokens_is_ignored(fresh):
    """With a ``max_length`` smaller than the number of special tokens the template adds (2 for
    a single sequence, 3 for a pair), tokenizers does not truncate at all and returns the full
    encoding (checked for max_length 0, 1 and 2)."""
    ours, theirs = fresh.ours, raw(fresh.theirs)
    for max_length in (0, 1, 2):
        ours.enable_truncation(max_length)
        theirs.enable_truncation(max_length)
        assert len(theirs.encode("a b c d e", "f g").ids) == 10
        assert_same_encoding_outcome(lambda: ours.encode("a b c d e", "f g"), lambda: theirs.encode("a b c d e", "f g"))
        if max_length < 2:
            assert_same_encoding_outcome(lambda: ours.encode("a b c d e"), lambda: theirs.encode("a b c d e"))


PADDING_SETTINGS = [
    dict(length=512),
    dict(),  # batch-longest
    dict(pad_to_multiple_of=8),
    dict(length=20, pad_to_multiple_of=8),  # 20 rounded up to 24
    dict(direction="left"),
    dict(direction="left", pad_to_multiple_of=5),
    dict(length=5),  # shorter than some inputs: no padding for those
    dict(pad_id=7, pad_token="[PAD]", pad_type_id=3),
]


@pytest.mark.parametrize("truncate", [None, 16])
@pytest.mark.parametrize(
    "options", PADDING_SETTINGS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "batch-longest"
)
def test_padding(reset, texts, options, truncate):
    """``enable_padding(...)`` (with and without truncation to 16): same padded ids, tokens,
    offsets (0, 0), type ids, attention mask 0 and special-tokens mask 1 on the padding, for
    single encodes and batches of singles and pairs (spec §7: padding runs after the
    post-processor)."""
    pair = reset
    pair.ours.enable_padding(**options)
    raw(pair.theirs).enable_padding(**options)
    if truncate:
        pair.ours.enable_truncation(truncate)
        raw(pair.theirs).enable_truncation(truncate)
    batch = texts["en"][:6] + [("a b c", "d e f g h"), tuple(texts["zh"][:2]), "", "one"]
    for add in (True, False):
        for index, (a, b) in enumerate(
            zip(
                pair.ours.encode_batch(batch, add_special_tokens=add),
                pair.theirs.encode_batch(batch, add_special_tokens=add),
            )
        ):
            assert_same_encoding(a, b, f" on batch item {index}, add_special_tokens={add}")
        assert_same_encoding(
            pair.ours.encode("hi there", add_special_tokens=add), pair.theirs.encode("hi there", add_special_tokens=add)
        )


def test_padding_with_only_a_pad_token_given(fresh):
    """``enable_padding(pad_token="[MASK]")``: tokenizers keeps its default ``pad_id=0`` (the
    ids say [PAD] while the tokens say [MASK]); the defaults are tokenizers', not looked up."""
    ours, theirs = fresh.ours, raw(fresh.theirs)
    ours.enable_padding(pad_token="[MASK]")
    theirs.enable_padding(pad_token="[MASK]")
    batch = ["hello world", "one two three four"]
    for a, b in zip(ours.encode_batch(batch), theirs.encode_batch(batch)):
        assert_same_encoding(a, b)


def test_published_tokenizer_json_truncates_and_pads_to_128(texts):
    """bert-base-uncased's ``tokenizer.json`` switches on truncation (LongestFirst, 128) and
    fixed padding to 128: ``toktools.load`` applies both exactly as
    ``tokenizers.Tokenizer.from_file`` does; after ``no_truncation()`` / ``no_padding()`` on
    both sides the plain encodings are equal too."""
    path = ref_vocab_dir("bert-base-uncased") / "tokenizer.json"
    ours, theirs = toktools.load(path), Tokenizer.from_file(str(path))
    long = " ".join(texts["en"][:40])
    inputs = [(long,), ("short one",), (long, "short"), ("short", long), (long, long), ("",)]
    for item in inputs:
        a, b = ours.encode(*item), theirs.encode(*item)
        assert len(b.ids) == 128
        assert_same_encoding(a, b, f" on {[t[:30] for t in item]}")
    batch = [long, ("x", "y"), "z"]
    for a, b in zip(ours.encode_batch(batch), theirs.encode_batch(batch)):
        assert_same_encoding(a, b)
    ours.no_truncation(), ours.no_padding()
    theirs.no_truncation(), theirs.no_padding()
    for item in inputs:
        assert_same_encoding(ours.encode(*item), theirs.encode(*item))
    assert len(theirs.encode(long).ids) > 128


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", CORPORA)
def test_decode_real_text(pair, texts, corpus):
    """``decode(ids)`` with ``skip_special_tokens`` True and False, on the ids tokenizers
    produced: same strings (spec §8)."""
    lines = texts[corpus][:400]
    for encoding in pair.theirs.encode_batch(lines):
        for skip in (True, False):
            assert pair.ours.decode(encoding.ids, skip_special_tokens=skip) == pair.theirs.decode(
                encoding.ids, skip_special_tokens=skip
            )


# A vocabulary with tokens that trigger each cleanup rule of spec §8 when decoded.
CLEANUP_TOKENS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    "?",
    "!",
    ",",
    "'",
    "n't",
    "'m",
    "'s",
    "'ve",
    "'re",
    "do not",
    " do not",
    "x ' y",
    "' ",
    " '",
    "i",
    "it",
    "do",
    "not",
    "don",
    "can",
    "s",
    "m",
    "re",
    "ve",
    "t",
    "n",
    "hello",
    "world",
    "##.",
    "##,",
    "##'",
    "##s",
    "##n't",
    "##ing",
    "##",
    "###",
    "a . b",
    "a , b",
    "a ! b",
    "a ? b",
]


@pytest.fixture(scope="module")
def cleanup_pair() -> Pair:
    vocab = {token: index for index, token in enumerate(CLEANUP_TOKENS)}
    ours = WordPieceTokenizer.bert(vocab)
    theirs = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    theirs.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    theirs.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    return Pair("cleanup", ours, theirs)


@pytest.mark.parametrize(
    "tokens",
    [
        ["hello", ".", "world", "!"],  # " ." → "."  " !" → "!"
        ["it", "?", "hello", ","],  # " ?" → "?"  " ," → ","
        ["don", "n't"],  # " n't" → "n't"
        ["i", "'m", "it", "'s", "i", "'ve", "i", "'re"],
        ["i", "do not", "hello"],  # " do not" → " don't" (per token)
        ["i", " do not"],  # "  do not" → " don't"
        ["it", "'", "s"],  # stays "it ' s": cleanup is per token
        ["x ' y"],  # " ' " → "'" inside one token
        ["##ing", "hello"],  # the first token keeps its ##
        ["hello", "##ing", "##s", "##."],
        ["hello", "##", "###"],  # "##" strips to ""; "###" to "#"
        ["a . b", "a , b", "a ! b", "a ? b"],
        ["[CLS]", "hello", "[MASK]", "[SEP]", "[PAD]"],
    ],
)
def test_decoder_cleanup_rules(cleanup_pair, tokens):
    """Each cleanup replacement of spec §8, applied to each token separately after the
    ``##``/space gluing; ``skip_special_tokens`` both ways."""
    ids = [CLEANUP_TOKENS.index(t) for t in tokens]
    for skip in (True, False):
        assert cleanup_pair.ours.decode(ids, skip_special_tokens=skip) == cleanup_pair.theirs.decode(
            ids, skip_special_tokens=skip
        )


def test_decoder_cleanup_spec_examples(cleanup_pair):
    """Spec §8 by hand: per-token cleanup leaves ``it ' s`` alone, but fixes ``n't`` and ``.``."""

    def decode(*tokens):
        return cleanup_pair.ours.decode([CLEANUP_TOKENS.index(t) for t in tokens])

    assert decode("it", "'", "s") == "it ' s"
    assert decode("do", "n't", ".") == "don't."
    assert decode("i", "do not", "hello") == "i don't hello"
    assert decode("##ing", "hello") == "##ing hello"


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(ids=st.lists(st.integers(min_value=0, max_value=len(CLEANUP_TOKENS) + 2), max_size=12), skip=st.booleans())
def test_decode_property(cleanup_pair, ids, skip):
    """Any id sequence (unknown ids included, which both sides skip) decodes identically."""
    assert cleanup_pair.ours.decode(ids, skip_special_tokens=skip) == cleanup_pair.theirs.decode(
        ids, skip_special_tokens=skip
    )


# ---------------------------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------------------------

_INTERESTING = (
    list(" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u2029\u202f\u205f\u3000\x1c\x1f")  # whitespace variety
    + list("\x00\u200b\u200c\u200d\u00ad\ufeff\ufffd\ue000\U000f0000\u0600\u061c")  # removed by clean_text
    + list("\u0301\u0308\u0327\u1734\ufe0f\U0001d165")  # combining marks
    + list("ΣσςİıßẞǅﬁÅΩ")  # casing oddities
    + list(".,;:!?'\"()[]{}#$%&*+-/<=>@\\^_`|~¡¿«»‹›–—…·•※〈〉「」『』【】〔〕、。，！？：；")
    + list("€£¥©®™°±×÷∞≈≠√∑∫")  # symbols: not punctuation
    + ["\u2b820", "\u2b91f", "\u2b920", "\U0002ceb0", "\U00030000"]  # CJK range edges
    + list("😀👍🏽🇫🇷👨‍👩‍👧🏴\U000e0067\U000e0062\U000e007f")
)
_WORDS = [
    "[MASK]",
    "[CLS]",
    "[SEP]",
    "[UNK]",
    "[PAD]",
    "[mask]",
    "##",
    "un",
    "##aff",
    "able",
    "the",
    "don't",
    "naïve",
    "café",
    "ΟΔΟΣ",
    "北京",
    "我爱",
    "日本語",
    "한국어",
    "русский",
    "العربية",
    "ภาษาไทย",
]

TEXT = st.lists(
    st.one_of(
        st.sampled_from(_INTERESTING),
        st.sampled_from(_WORDS),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),  # CJK
        st.characters(min_codepoint=0x00C0, max_codepoint=0x024F),  # Latin with accents
        st.characters(min_codepoint=0x0300, max_codepoint=0x036F),  # combining marks
        st.characters(min_codepoint=0x1F300, max_codepoint=0x1FAFF),  # emoji
        st.characters(codec="utf-8"),  # anything (no surrogates)
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=12),
    ),
    max_size=30,
).map("".join)

PROPERTY_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


@PROPERTY_SETTINGS
@given(text=TEXT)
def test_property_ids_uncased(uncased, text):
    """bert-base-uncased: same ids, tokens and offsets as tokenizers on generated text."""
    assert_same_encoding(uncased.ours.encode(text), uncased.theirs.encode(text), f" on {text!r}")


@PROPERTY_SETTINGS
@given(text=TEXT)
def test_property_ids_chinese_cased(chinese, text):
    """bert-base-chinese with ``lowercase=False``: same encodings as tokenizers."""
    assert_same_encoding(chinese.ours.encode(text), chinese.theirs.encode(text), f" on {text!r}")


@PROPERTY_SETTINGS
@given(text=TEXT, second=TEXT)
def test_property_pairs_and_decode_trained(trained, text, second):
    """The trained vocabulary: pairs encode identically, and decoding those ids gives the same
    string with and without special tokens."""
    a, b = trained.ours.encode(text, second), trained.theirs.encode(text, second)
    assert_same_encoding(a, b, f" on {text!r} / {second!r}")
    for skip in (True, False):
        assert trained.ours.decode(b.ids, skip_special_tokens=skip) == trained.theirs.decode(
            b.ids, skip_special_tokens=skip
        )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(text=TEXT, lowercase=st.booleans(), strip_accents=st.sampled_from([None, True, False]))
def test_property_normaliser_options(uncased, text, lowercase, strip_accents):
    """All lowercase × strip_accents combinations (bert-base-uncased vocabulary): the options
    reach the normaliser exactly as in ``BertWordPieceTokenizer``."""
    vocab = ref_vocab_dir("bert-base-uncased") / "vocab.txt"
    key = (lowercase, strip_accents)
    if key not in _OPTION_CACHE:
        _OPTION_CACHE[key] = (
            WordPieceTokenizer.bert(uncased.ours.vocab, lowercase=lowercase, strip_accents=strip_accents),
            BertWordPieceTokenizer(str(vocab), lowercase=lowercase, strip_accents=strip_accents),
        )
    ours, theirs = _OPTION_CACHE[key]
    assert_same_encoding(ours.encode(text), theirs.encode(text), f" on {text!r} with {key}")


_OPTION_CACHE: dict = {}
