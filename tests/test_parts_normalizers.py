"""The generic normalisers (NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Replace, Prepend,
Sequence) give ``tokenizers`` 0.23.3's text *and* the original span of every normalised char.

First small hand-computed examples (they need nothing but toktools), then the same parts built
with ``tokenizers``' Python API compared on edge cases, on every Unicode code point, on samples of
the shared corpora and on generated text.
"""

from __future__ import annotations

import pytest
from conftest import read_corpus_sample
from hypothesis import given, settings
from hypothesis import strategies as st
from parts_support import EDGE_CASES, first_difference, hf_char_spans, hf_node, hf_pieces, ours_char_spans, ours_pieces
from tokenizers import Regex
from tokenizers import normalizers as hf

from toktools.errors import ToktoolsError
from toktools.parts import normalizers as tt
from toktools.parts import pre_tokenizers as tt_pre
from toktools.parts.base import Piece
from toktools.parts.registry import part_from_json
from toktools.parts.unicode_forms import tables


def spans(normalizer, text: str) -> tuple[str, list[tuple[int, int]]]:
    piece = normalizer.normalize(Piece(text))
    return piece.text, piece.all_spans()


# --- hand-computed ---------------------------------------------------------------------------


def test_nfkc_splits_a_ligature_and_both_letters_point_at_it():
    assert spans(tt.NFKC(), "\ufb01x") == ("fix", [(0, 1), (0, 1), (1, 2)])


def test_nfd_gives_the_accent_the_span_of_its_letter():
    assert spans(tt.NFD(), "\u00e9!") == ("e\u0301!", [(0, 1), (0, 1), (1, 2)])


def test_nfc_composed_char_keeps_only_the_span_of_its_first_part():
    # tokenizers' quirk: the composed char replaces the letter and "removes" the mark, so its
    # span is the letter's (0, 1), not (0, 2).
    assert spans(tt.NFC(), "e\u0301!") == ("\u00e9!", [(0, 1), (2, 3)])


def test_chars_newer_than_tokenizers_tables_are_left_alone():
    # U+32FF (Unicode 12.1) and U+11938 (13.0) decompose in Python's unicodedata, not in tokenizers
    assert tt.NFKC().normalize_str("\u32ff") == "\u32ff"
    assert tt.NFD().normalize_str("\U00011938") == "\U00011938"
    assert tt.NFC().normalize_str("\U00011935\U00011930") == "\U00011935\U00011930"


def test_lowercase_is_per_char_without_final_sigma_and_expands_dotted_i():
    assert spans(tt.Lowercase(), "\u0130\u03a3") == ("i\u0307\u03c3", [(0, 1), (0, 1), (1, 2)])


def test_strip_accents_removes_marks_only_after_decomposition():
    assert tt.StripAccents().normalize_str("\u00e9") == "\u00e9"
    assert spans(tt.StripAccents(), "e\u0301o") == ("eo", [(0, 1), (2, 3)])


def test_strip_keeps_the_spans_of_what_remains():
    assert spans(tt.Strip(), "  ab \n") == ("ab", [(2, 3), (3, 4)])
    assert spans(tt.Strip(left=False, right=True), " ab ") == (" ab", [(0, 1), (1, 2), (2, 3)])


def test_replace_aligns_the_replacement_with_the_last_replaced_char():
    assert spans(tt.Replace("ab", "XYZ"), "cab") == ("cXYZ", [(0, 1), (2, 3), (2, 3), (2, 3)])


def test_prepend_aligns_with_the_first_char_and_skips_empty_text():
    assert spans(tt.Prepend("\u2581"), "hi") == ("\u2581hi", [(0, 1), (0, 1), (1, 2)])
    assert tt.Prepend("\u2581").normalize_str("") == ""


def test_sequence_runs_in_order():
    seq = tt.Sequence([tt.NFKC(), tt.Lowercase(), tt.Replace(" ", "\u2581")])
    assert seq.normalize_str("\uff21 \ufb01") == "a\u2581fi"


def test_json_round_trip_and_field_errors():
    node = {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "}
    assert part_from_json("normalizer", node).to_json() == node
    with pytest.raises(ToktoolsError, match="strip_left"):
        part_from_json("normalizer", {"type": "Strip", "strip_left": "yes", "strip_right": True})
    with pytest.raises(ToktoolsError, match="content"):
        part_from_json("normalizer", {"type": "Replace", "pattern": {"String": "a"}})
    with pytest.raises(ToktoolsError, match="pattern"):
        part_from_json("normalizer", {"type": "Replace", "pattern": "a", "content": "b"})
    with pytest.raises(ToktoolsError, match="normalizers"):
        part_from_json("normalizer", {"type": "Sequence"})
    with pytest.raises(ToktoolsError, match="NoSuchNormalizer"):
        part_from_json("normalizer", {"type": "NoSuchNormalizer"})


# --- parity with tokenizers ----------------------------------------------------------------------

PAIRS = {
    "NFC": (hf.NFC(), tt.NFC()),
    "NFD": (hf.NFD(), tt.NFD()),
    "NFKC": (hf.NFKC(), tt.NFKC()),
    "NFKD": (hf.NFKD(), tt.NFKD()),
    "Lowercase": (hf.Lowercase(), tt.Lowercase()),
    "StripAccents": (hf.StripAccents(), tt.StripAccents()),
    "Strip": (hf.Strip(), tt.Strip()),
    "StripLeft": (hf.Strip(left=True, right=False), tt.Strip(True, False)),
    "StripRight": (hf.Strip(left=False, right=True), tt.Strip(False, True)),
    "ReplaceString": (hf.Replace(" ", "\u2581\u2581"), tt.Replace(" ", "\u2581\u2581")),
    "ReplaceDelete": (hf.Replace("e", ""), tt.Replace("e", "")),
    "ReplaceRegex": (
        hf.Replace(Regex(r"\s+"), " "),
        part_from_json("normalizer", {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "}),
    ),
    "ReplaceRegexEmptyMatches": (
        hf.Replace(Regex(r"x*"), "-"),
        part_from_json("normalizer", {"type": "Replace", "pattern": {"Regex": "x*"}, "content": "-"}),
    ),
    "Prepend": (hf.Prepend("\u2581"), tt.Prepend("\u2581")),
    "Sequence": (
        hf.Sequence([hf.NFD(), hf.StripAccents(), hf.Lowercase(), hf.Strip()]),
        tt.Sequence([tt.NFD(), tt.StripAccents(), tt.Lowercase(), tt.Strip()]),
    ),
    "SentencePieceLike": (
        hf.Sequence([hf.NFKC(), hf.Replace(Regex(" {2,}"), " "), hf.Prepend("\u2581"), hf.Replace(" ", "\u2581")]),
        tt.Sequence(
            [
                tt.NFKC(),
                part_from_json("normalizer", {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}),
                tt.Prepend("\u2581"),
                tt.Replace(" ", "\u2581"),
            ]
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_to_json_equals_tokenizers_node(name):
    ours_hf, ours = PAIRS[name]
    assert ours.to_json() == hf_node(ours_hf)
    assert part_from_json("normalizer", hf_node(ours_hf)).to_json() == hf_node(ours_hf)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_edge_cases_text_and_spans(name):
    theirs, ours = PAIRS[name]
    for text in EDGE_CASES:
        assert ours_char_spans(ours, text) == hf_char_spans(theirs, text), (name, text)


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents"])
def test_every_code_point(form, unicode_scalars):
    """Each scalar value alone (joined by U+0000, which nothing touches): the text for all of
    them (a sample of them but under ``-m full``), and the spans for every one that the form
    may change."""
    theirs, ours = PAIRS[form]
    everything = "\x00".join(chr(c) for c in unicode_scalars if c)
    assert ours.normalize_str(everything) == theirs.normalize_str(everything)
    t = tables()
    interesting = sorted(
        {
            *map(ord, t.compat),
            *t.ccc,
            *map(ord, t.seconds),
            *range(0xAC00, 0xAC00 + 600),
            0x130,
            0x3A3,
            0x1E9E,
            0x11938,
            0x32FF,
        }
    )
    text = "\x00".join(map(chr, interesting))
    assert ours_char_spans(ours, text) == hf_char_spans(theirs, text)


def test_every_canonical_pair_composes_as_in_tokenizers():
    t = tables()
    text = "\x00".join(a + b for a, b in t.compose)
    assert ours_char_spans(tt.NFC(), text) == hf_char_spans(hf.NFC(), text)


CORPORA = ["en_wiki.txt.gz", "zh_wiki_sample.txt", "mixed_sample.txt"]


@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("name", ["NFKC", "NFKD", "Lowercase", "Sequence", "SentencePieceLike", "ReplaceRegex"])
def test_corpus_sample_spans(name, corpus):
    text = read_corpus_sample(corpus, 60_000)
    theirs, ours = PAIRS[name]
    a, b = hf_char_spans(theirs, text), ours_char_spans(ours, text)
    assert a[0] == b[0]
    assert a[1] == b[1], first_difference(a[1], b[1])


@pytest.mark.parametrize("corpus", CORPORA)
def test_offsets_through_a_normaliser_and_a_pre_tokenizer(corpus):
    """Encode offsets of a WordLevel tokenizer with NFKC+Lowercase and Whitespace equal the
    original spans of toktools' pieces."""
    from tokenizers import pre_tokenizers as hf_pre

    text = read_corpus_sample(corpus, 40_000)
    a = hf_pieces(hf.Sequence([hf.NFKD(), hf.StripAccents(), hf.Lowercase()]), hf_pre.Whitespace(), text)
    b = ours_pieces(tt.Sequence([tt.NFKD(), tt.StripAccents(), tt.Lowercase()]), tt_pre.Whitespace(), text)
    assert a == b, first_difference(a, b)


_ALPHABET = st.sampled_from(
    list("aeoAEO sS\u0130\u03a3\t\n")
    + [
        "\u0301",
        "\u0308",
        "\u0323",
        "\u0345",
        "\u0334",
        "\u0f71",
        "\u0f72",
        "\u0f74",
        "\u00e9",
        "\u1e69",
        "\ufb01",
        "\u2460",
        "\u1100",
        "\u1161",
        "\u11a8",
        "\uac00",
        "\u3392",
        "\U00011935",
        "\U00011930",
        "\u05b0",
        "\u0591",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=12).map("".join))
def test_generated_text_matches_for_every_form(text):
    for name in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "SentencePieceLike"):
        theirs, ours = PAIRS[name]
        assert ours_char_spans(ours, text) == hf_char_spans(theirs, text), name
