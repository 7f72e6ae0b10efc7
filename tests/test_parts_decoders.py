"""The generic decoders (Metaspace, BPEDecoder, ByteFallback, Fuse, Strip, Replace, Sequence):
``decode_chain`` and ``decode`` equal to ``tokenizers`` 0.23.3, and the same JSON nodes."""

from __future__ import annotations

import pytest
from conftest import read_corpus_sample
from hypothesis import given, settings
from hypothesis import strategies as st
from parts_support import hf_node
from tokenizers import Regex
from tokenizers import decoders as hf
from tokenizers import pre_tokenizers as hf_pre

from toktools.errors import ToktoolsError
from toktools.parts import decoders as tt
from toktools.parts.registry import part_from_json

# --- hand-computed ---------------------------------------------------------------------------


def test_metaspace_drops_every_marker_of_the_first_token_unless_never():
    assert tt.Metaspace().decode(["\u2581Hey", "\u2581friend!"]) == "Hey friend!"
    assert tt.Metaspace().decode_chain(["\u2581\u2581a\u2581b", "\u2581c"]) == ["ab", " c"]
    assert tt.Metaspace(prepend_scheme="never").decode(["\u2581a", "\u2581b"]) == " a b"


def test_bpe_decoder_turns_the_suffix_into_spaces_except_at_the_end():
    assert tt.BPEDecoder().decode_chain(["a</w>", "b", "c</w>"]) == ["a ", "b", "c"]


def test_byte_fallback_bytes_to_text_and_invalid_runs_to_one_fffd_per_token():
    assert tt.ByteFallback().decode(["<0xE6>", "<0x88>", "<0x91>", "!"]) == "\u6211!"
    assert tt.ByteFallback().decode_chain(["<0xE6>", "<0x88>", "a"]) == ["\ufffd", "\ufffd", "a"]
    assert tt.ByteFallback().decode(["<0x+F>", "<0xGG>"]) == "\x0f<0xGG>"  # Rust from_str_radix takes "+F"


def test_fuse_strip_replace_sequence():
    assert tt.Fuse().decode_chain(["a", "b"]) == ["ab"]
    assert tt.Strip(" ", 1, 1).decode_chain(["  a  ", "b "]) == [" a ", "b"]
    assert tt.Replace("\u2581", " ").decode(["\u2581a\u2581", "b"]) == " a b"
    seq = tt.Sequence([tt.Replace("\u2581", " "), tt.ByteFallback(), tt.Fuse(), tt.Strip(" ", 1, 0)])
    assert seq.decode(["\u2581hi", "<0x21>"]) == "hi!"


def test_strip_that_would_overlap_is_an_error_not_a_crash():
    with pytest.raises(ToktoolsError, match="Strip"):
        tt.Strip(" ", 2, 3).decode(["   "])


def test_json_errors_name_the_field():
    with pytest.raises(ToktoolsError, match="suffix"):
        part_from_json("decoder", {"type": "BPEDecoder"})
    with pytest.raises(ToktoolsError, match="start"):
        part_from_json("decoder", {"type": "Strip", "content": " ", "start": -1, "stop": 0})
    with pytest.raises(ToktoolsError, match="content"):
        part_from_json("decoder", {"type": "Strip", "content": "ab", "start": 1, "stop": 0})
    with pytest.raises(ToktoolsError, match="decoders"):
        part_from_json("decoder", {"type": "Sequence"})


# --- parity with tokenizers ----------------------------------------------------------------------

PAIRS = {
    "Metaspace": (hf.Metaspace(), tt.Metaspace()),
    "MetaspaceNever": (hf.Metaspace(prepend_scheme="never"), tt.Metaspace(prepend_scheme="never")),
    "MetaspaceFirst": (
        hf.Metaspace(replacement="_", prepend_scheme="first", split=False),
        tt.Metaspace("_", "first", False),
    ),
    "BPEDecoder": (hf.BPEDecoder(), tt.BPEDecoder()),
    "BPEDecoderSuffix": (hf.BPEDecoder(suffix="@@"), tt.BPEDecoder("@@")),
    "ByteFallback": (hf.ByteFallback(), tt.ByteFallback()),
    "Fuse": (hf.Fuse(), tt.Fuse()),
    "Strip": (hf.Strip(" ", 1, 0), tt.Strip(" ", 1, 0)),
    "StripBoth": (hf.Strip("\u2581", 2, 1), tt.Strip("\u2581", 2, 1)),
    "ReplaceString": (hf.Replace("\u2581", " "), tt.Replace("\u2581", " ")),
    "ReplaceRegex": (
        hf.Replace(Regex(r"\s+|</w>"), "_"),
        part_from_json("decoder", {"type": "Replace", "pattern": {"Regex": r"\s+|</w>"}, "content": "_"}),
    ),
    "LlamaSequence": (
        hf.Sequence([hf.Replace("\u2581", " "), hf.ByteFallback(), hf.Fuse(), hf.Strip(" ", 1, 0)]),
        tt.Sequence([tt.Replace("\u2581", " "), tt.ByteFallback(), tt.Fuse(), tt.Strip(" ", 1, 0)]),
    ),
}

TOKEN_LISTS = [
    [],
    [""],
    ["\u2581"],
    ["\u2581Hello", "\u2581wor", "ld", "!", "\u2581\u2581", "\u2581"],
    ["hel", "lo</w>", "wor", "ld</w>", "</w>"],
    ["@@a", "b@@", "c"],
    ["<0xE4>", "<0xBD>", "<0xA0>", "\u2581x", "<0xFF>", "<0x0A>", "<0xe6>", "<0x88>", "<0x+F>", "<0xZZ>", "<0x41>"],
    ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"],
    ["  a", " ", "", "b  ", "\u2581\u2581c\u2581"],
]


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_to_json_equals_tokenizers_node(name):
    theirs, ours = PAIRS[name]
    assert ours.to_json() == hf_node(theirs)
    assert part_from_json("decoder", hf_node(theirs)).to_json() == hf_node(theirs)


def assert_same_decode(theirs, ours, tokens: list[str]) -> None:
    """Equal output, or: where tokenizers panics (Strip past a token's ends), a ToktoolsError."""
    try:
        expected = theirs.decode(tokens)
    except BaseException as exc:  # pyo3's PanicException is a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        with pytest.raises(ToktoolsError):
            ours.decode(tokens)
        return
    assert ours.decode(tokens) == expected, tokens


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_hand_written_token_lists(name):
    theirs, ours = PAIRS[name]
    for tokens in TOKEN_LISTS:
        assert_same_decode(theirs, ours, tokens)


@pytest.mark.parametrize("corpus", ["en_wiki.txt.gz", "zh_wiki_sample.txt", "mixed_sample.txt"])
def test_metaspace_pieces_of_real_text_decode_back(corpus):
    text = read_corpus_sample(corpus, 20_000)
    for line in text.splitlines()[:200]:
        tokens = [p for p, _ in hf_pre.Metaspace().pre_tokenize_str(line)]
        for name in ("Metaspace", "MetaspaceNever", "ReplaceString", "LlamaSequence", "StripBoth"):
            assert_same_decode(*PAIRS[name], tokens)


_BYTE_TOKENS = st.lists(
    st.one_of(
        st.integers(0, 255).map(lambda b: f"<0x{b:02X}>"),
        st.sampled_from(["a", "\u2581b", "<0x>", "<0xG1>", "<0x+1>", "\u6211"]),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_BYTE_TOKENS)
def test_generated_byte_tokens(tokens):
    for name in ("ByteFallback", "LlamaSequence", "Metaspace", "Fuse", "Strip"):
        assert_same_decode(*PAIRS[name], tokens)
