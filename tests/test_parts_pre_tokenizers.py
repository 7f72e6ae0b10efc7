"""The generic pre-tokenisers (Whitespace, WhitespaceSplit, Punctuation, Digits, Split, Metaspace,
Sequence) give ``tokenizers`` 0.23.3's pieces and offsets, including the GPT-4 (cl100k),
Llama-3, GPT-4o (o200k) and Qwen split patterns on real text.

Hand-computed examples first (no ``../shared`` needed), then parity with the same parts built
with ``tokenizers``' Python API.
"""

from __future__ import annotations

import pytest
from conftest import read_corpus_sample
from hypothesis import given, settings
from hypothesis import strategies as st
from parts_support import EDGE_CASES, first_difference, hf_node, hf_pieces, ours_pieces
from tokenizers import Regex
from tokenizers import normalizers as hf_norm
from tokenizers import pre_tokenizers as hf

from toktools.errors import ToktoolsError
from toktools.parts import normalizers as tt_norm
from toktools.parts import pre_tokenizers as tt
from toktools.parts._onig import regex_disagreements
from toktools.parts.base import Piece
from toktools.parts.registry import part_from_json

CL100K = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)  # GPT-4; Llama-3 uses the same pattern
QWEN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
O200K = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
BEHAVIORS = {
    "Removed": "removed",
    "Isolated": "isolated",
    "MergedWithPrevious": "merged_with_previous",
    "MergedWithNext": "merged_with_next",
    "Contiguous": "contiguous",
}


def regex_split(pattern: str, behavior: str = "Isolated", invert: bool = False) -> tt.Split:
    return part_from_json(
        "pre_tokenizer", {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}
    )


# --- hand-computed ---------------------------------------------------------------------------


def test_split_behaviors_on_the_tokenizers_doc_example():
    text = "the-final--countdown"
    got = {b: [p for p, _ in tt.Split("-", b).pre_tokenize_str(text)] for b in BEHAVIORS}
    assert got == {
        "Removed": ["the", "final", "countdown"],
        "Isolated": ["the", "-", "final", "-", "-", "countdown"],
        "MergedWithPrevious": ["the-", "final-", "-", "countdown"],
        "MergedWithNext": ["the", "-final", "-", "-countdown"],
        "Contiguous": ["the", "-", "final", "--", "countdown"],
    }


def test_invert_makes_the_non_matches_the_delimiters():
    assert tt.Split(" ", "Removed", invert=True).pre_tokenize_str("a b") == [(" ", (1, 2))]


def test_whitespace_and_whitespace_split():
    assert tt.Whitespace().pre_tokenize_str("Hey man!") == [("Hey", (0, 3)), ("man", (4, 7)), ("!", (7, 8))]
    assert tt.WhitespaceSplit().pre_tokenize_str("Hey, man!") == [("Hey,", (0, 4)), ("man!", (5, 9))]


def test_punctuation_and_digits():
    assert tt.Punctuation().pre_tokenize_str("a,b") == [("a", (0, 1)), (",", (1, 2)), ("b", (2, 3))]
    assert tt.Digits().pre_tokenize_str("a123b") == [("a", (0, 1)), ("123", (1, 4)), ("b", (4, 5))]
    assert [p for p, _ in tt.Digits(True).pre_tokenize_str("12")] == ["1", "2"]


def test_metaspace_prepends_and_splits_with_offsets_in_the_original():
    assert tt.Metaspace().pre_tokenize_str("Hey friend!") == [("\u2581Hey", (0, 3)), ("\u2581friend!", (3, 11))]
    # "first" prepends only to the piece that starts the text
    first = tt.Metaspace(prepend_scheme="first")
    assert first.pre_tokenize([Piece("a", None, 5)])[0].text == "a"
    assert first.pre_tokenize([Piece("a", None, 0)])[0].text == "\u2581a"


def test_split_regex_follows_oniguruma_empty_match_rules():
    # Oniguruma drops an empty match right after a match (Python's finditer keeps it)
    assert [p for p, _ in regex_split("x*").pre_tokenize_str("axb")] == ["a", "x", "b"]


def test_json_errors_name_the_field():
    with pytest.raises(ToktoolsError, match="behavior"):
        part_from_json(
            "pre_tokenizer", {"type": "Split", "pattern": {"String": "a"}, "behavior": "isolated", "invert": False}
        )
    with pytest.raises(ToktoolsError, match="invert"):
        part_from_json("pre_tokenizer", {"type": "Split", "pattern": {"String": "a"}, "behavior": "Isolated"})
    with pytest.raises(ToktoolsError, match="individual_digits"):
        part_from_json("pre_tokenizer", {"type": "Digits", "individual_digits": 1})
    with pytest.raises(ToktoolsError, match="replacement"):
        part_from_json("pre_tokenizer", {"type": "Metaspace", "replacement": "__"})
    with pytest.raises(ToktoolsError, match="add_prefix_space"):
        part_from_json("pre_tokenizer", {"type": "Metaspace", "replacement": "_", "add_prefix_space": False})
    with pytest.raises(ToktoolsError, match="invalid regular expression"):
        regex_split("(unclosed")


# --- parity with tokenizers ----------------------------------------------------------------------


def _pairs() -> dict[str, tuple[object, object]]:
    pairs = {
        "Whitespace": (hf.Whitespace(), tt.Whitespace()),
        "WhitespaceSplit": (hf.WhitespaceSplit(), tt.WhitespaceSplit()),
        "Digits": (hf.Digits(), tt.Digits()),
        "DigitsIndividual": (hf.Digits(individual_digits=True), tt.Digits(True)),
        "Metaspace": (hf.Metaspace(), tt.Metaspace()),
        "MetaspaceFirstNoSplit": (
            hf.Metaspace(replacement="_", prepend_scheme="first", split=False),
            tt.Metaspace("_", "first", False),
        ),
        "MetaspaceNever": (hf.Metaspace(prepend_scheme="never"), tt.Metaspace(prepend_scheme="never")),
        "cl100k": (hf.Split(Regex(CL100K), "isolated"), regex_split(CL100K)),
        "qwen": (hf.Split(Regex(QWEN), "isolated"), regex_split(QWEN)),
        "o200k": (hf.Split(Regex(O200K), "isolated"), regex_split(O200K)),
        "Sequence": (
            hf.Sequence([hf.WhitespaceSplit(), hf.Punctuation(), hf.Digits(True)]),
            tt.Sequence([tt.WhitespaceSplit(), tt.Punctuation(), tt.Digits(True)]),
        ),
    }
    for ours, theirs in BEHAVIORS.items():
        pairs[f"Punctuation-{ours}"] = (hf.Punctuation(theirs), tt.Punctuation(ours))
        for invert in (False, True):
            pairs[f"SplitString-{ours}-{invert}"] = (hf.Split(" ", theirs, invert=invert), tt.Split(" ", ours, invert))
            pairs[f"SplitRegex-{ours}-{invert}"] = (
                hf.Split(Regex(r"\s+|\p{P}|\d"), theirs, invert=invert),
                regex_split(r"\s+|\p{P}|\d", ours, invert),
            )
    return pairs


PAIRS = _pairs()


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_to_json_equals_tokenizers_node(name):
    theirs, ours = PAIRS[name]
    assert ours.to_json() == hf_node(theirs)
    assert part_from_json("pre_tokenizer", hf_node(theirs)).to_json() == hf_node(theirs)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_edge_cases(name):
    theirs, ours = PAIRS[name]
    for text in EDGE_CASES:
        assert ours.pre_tokenize_str(text) == [(p, tuple(o)) for p, o in theirs.pre_tokenize_str(text)], text


CORPORA = ["en_wiki.txt.gz", "zh_wiki_sample.txt", "mixed_sample.txt"]


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_corpus_sample(name, corpus):
    text = read_corpus_sample(corpus, 30_000)
    theirs, ours = PAIRS[name]
    a = [(p, tuple(o)) for p, o in theirs.pre_tokenize_str(text)]
    b = ours.pre_tokenize_str(text)
    assert a == b, first_difference(a, b)


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("style", ["llama3", "qwen", "sentencepiece", "wordlevel"])
def test_offsets_in_the_original_text_through_a_normaliser(style, corpus):
    """A whole WordLevel tokenizer's encode offsets against toktools' pieces' original spans."""
    text = read_corpus_sample(corpus, 40_000)
    if style == "llama3":  # Split with the cl100k pattern, no normaliser
        theirs, ours = (None, hf.Split(Regex(CL100K), "isolated")), (None, regex_split(CL100K))
    elif style == "qwen":  # NFC + Split
        theirs = (hf_norm.NFC(), hf.Split(Regex(QWEN), "isolated"))
        ours = (tt_norm.NFC(), regex_split(QWEN))
    elif style == "sentencepiece":  # NFKC + Metaspace
        theirs = (hf_norm.NFKC(), hf.Metaspace())
        ours = (tt_norm.NFKC(), tt.Metaspace())
    else:  # lowercase + Whitespace + Digits
        theirs = (
            hf_norm.Sequence([hf_norm.NFKC(), hf_norm.Lowercase()]),
            hf.Sequence([hf.Whitespace(), hf.Digits(True)]),
        )
        ours = (
            tt_norm.Sequence([tt_norm.NFKC(), tt_norm.Lowercase()]),
            tt.Sequence([tt.Whitespace(), tt.Digits(True)]),
        )
    a, b = hf_pieces(*theirs, text), ours_pieces(*ours, text)
    assert a == b, first_difference(a, b)


def test_code_points_where_regex_and_oniguruma_disagree():
    """Text holding the code points whose classes differ between the engines takes the exact
    (spelled-out) pattern and still matches tokenizers."""
    risky = sorted(regex_disagreements("L") | regex_disagreements("N") | regex_disagreements("s"))
    sample = risky[:: max(1, len(risky) // 400)]
    text = " ".join(f"ab{ch}1{ch} {ch}{ch}'s" for ch in sample)
    # a non-ASCII literal rules out stand-ins: the pattern with classes spelled out runs instead
    for pattern in (CL100K, O200K, CL100K + "|\u4e2d"):
        a = [(p, tuple(o)) for p, o in hf.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]
        assert regex_split(pattern).pre_tokenize_str(text) == a
    word = sorted(regex_disagreements("rust_w"))[::20]
    text = " ".join(f"a{ch}b {ch}!" for ch in word) + " \U0001f468\u200d\U0001f469"
    a = [(p, tuple(o)) for p, o in hf.Whitespace().pre_tokenize_str(text)]
    assert tt.Whitespace().pre_tokenize_str(text) == a


_TEXT = st.text(
    alphabet=st.sampled_from(
        list("ab1 \n\r\t-.'sStT") + ["\u00e9", "\u0301", "\u4e2d", "\u0663", "\u00a0", "\u2581", "\U0001f600", "\u200d"]
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.sampled_from(sorted(BEHAVIORS)), st.booleans())
def test_generated_text_split_and_punctuation(text, behavior, invert):
    for pattern in (r"\s+", r"'s|\p{N}+", r"x*", CL100K):
        theirs = hf.Split(Regex(pattern), BEHAVIORS[behavior], invert=invert)
        assert regex_split(pattern, behavior, invert).pre_tokenize_str(text) == [
            (p, tuple(o)) for p, o in theirs.pre_tokenize_str(text)
        ], pattern
    theirs = hf.Punctuation(BEHAVIORS[behavior])
    assert tt.Punctuation(behavior).pre_tokenize_str(text) == [(p, tuple(o)) for p, o in theirs.pre_tokenize_str(text)]
    assert tt.Metaspace().pre_tokenize_str(text) == [(p, tuple(o)) for p, o in hf.Metaspace().pre_tokenize_str(text)]


ONIG_SYNTAX = [
    r"$",
    r"^",
    r"\Z",
    r"\z",
    r"\A\w",
    r"(?m:.)+",
    r".+",
    r"(?i)x",
    r"\h+",
    r"[^\h\s]+",
    r"\b",
    r"\p{Han}+",
    r"[[:alpha:]]+",
    r"\R",
    r"(?<=a)b",
    r"\X",
    r"[^\S\n]+",
    r"\p{^L}+",
    r"\P{L}+",
    r"[\p{L}&&[^a]]+",
    r"(?<name>a)\k<name>",
    r"\x41",
    r"ab|",
    r"",
    r"\d+(?=\D)",
    r"\p{Lu}\p{Ll}+",
]


@pytest.mark.parametrize("pattern", ONIG_SYNTAX)
def test_oniguruma_syntax_is_translated(pattern):
    """Ruby-syntax anchors (^ $ \\Z \\z), (?m) as dot-all, \\h, \\k<name>, set intersection…"""
    for text in [
        "ab\ncd\n",
        "Hello World\n\nfoo  bar\r\n",
        "x",
        "",
        "aXb\n",
        "\u65e5\u672c \u30c6\u30ad\n",
        "a.b\nc aab",
    ]:
        theirs = [(p, tuple(o)) for p, o in hf.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]
        assert regex_split(pattern).pre_tokenize_str(text) == theirs, text


@pytest.mark.parametrize("name", ["Whitespace", "WhitespaceSplit", "Punctuation-Isolated", "DigitsIndividual"])
def test_every_code_point_between_letters(name, unicode_scalars):
    """Each scalar value between two "a"s: its class (word, space, punctuation, digit) is
    tokenizers' for all of them (a sample of them but under ``-m full``)."""
    theirs, ours = PAIRS[name]
    scalars = list(unicode_scalars)
    if name == "Whitespace":  # 2.2M pieces take a minute: every 8th, and all where the engines differ
        scalars = sorted(
            {*(scalars[::8] if len(scalars) > 100_000 else scalars), *map(ord, regex_disagreements("rust_w"))}
        )
    text = "a" + "a".join(map(chr, scalars)) + "a"
    a = [(p, tuple(o)) for p, o in theirs.pre_tokenize_str(text)]
    b = ours.pre_tokenize_str(text)
    assert a == b, first_difference(a, b)
