"""The Precompiled normaliser reads sentencepiece's charsmap in pure Python and applies it as
``tokenizers`` does (per grapheme, with the same alignments), and as sentencepiece does
(longest match, whitespace rules) for ``nmt_nfkc``, ``nmt_nfkc_cf`` and ``identity``."""

from __future__ import annotations

import base64
import functools
import json
import random

import pytest
from conftest import read_corpus_sample

from toktools.errors import ToktoolsError
from toktools.parts.base import Piece
from toktools.parts.precompiled import CharsMap, Precompiled, spm_normalize
from toktools.parts.registry import part_from_json
from toktools.sentencepiece.model_file import NORMALIZER_FIELDS, Message

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

RULES = ["nmt_nfkc", "nmt_nfkc_cf", "identity"]
EXTRA = list("abc xyz  \u3000\t\n中文\u0301\u0308\u200d\ufe0f▁") + [
    "👩",
    "🏽",
    "👨‍👩‍👧",
    "🇫🇷",
    "ঘোষণা",
    "क्षि",
    "각",
    "ไทย",
]


@functools.cache
def builtin_charsmap(rule: str, **flags) -> bytes:
    """The charsmap sentencepiece compiles in for a rule name (no model file needed)."""
    normalizer = spm.SentencePieceNormalizer(rule_name=rule, **flags)
    return Message.parse(normalizer.serialized_normalizer_spec(), NORMALIZER_FIELDS, rule).get("precompiled_charsmap")


@functools.cache
def mapped_chars(blob: bytes) -> list[str]:
    cmap = CharsMap(blob)
    return [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and cmap.shortest(chr(c)) is not None]


def per_char_reference(blob: bytes):
    """tokenizers with this Precompiled and one token per normalised character: its offsets are
    the alignments."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, "[UNK]"))
    tok.normalizer = normalizers.Precompiled(blob)
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("(?m)."), "isolated")
    return tok


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nmt_nfkc_cf"])
def test_same_text_and_alignments_as_tokenizers_on_random_strings(rule):
    blob = builtin_charsmap(rule)
    ours, ref = Precompiled(blob), per_char_reference(blob)
    rng = random.Random(rule)
    alphabet = mapped_chars(blob)[::3] + EXTRA
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))
        piece = ours.normalize(Piece(text))
        enc = ref.encode(text)
        assert piece.text == ref.normalizer.normalize_str(text), text
        assert [piece.span_of(i) for i in range(len(piece.text))] == enc.offsets, text


def test_alignments_of_removed_expanded_and_merged_characters():
    """Cases checked by hand against tokenizers 0.23.3: a removed control char shifts the spans
    only at the very start; an expansion shares its source span; a merge takes the first char's."""
    ours = Precompiled(builtin_charsmap("nmt_nfkc"))
    cases = {
        "a\x01b": [(0, 1), (2, 3)],
        "\x01ab": [(0, 1), (1, 2)],
        "a㍻b": [(0, 1), (1, 2), (1, 2), (2, 3)],
        "㍻\x01b": [(0, 1), (1, 2), (2, 3)],
        "Ａ\u0301b": [(0, 1), (2, 3)],
        "aﬁ\x01\x01bcd": [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7)],
    }
    for text, spans in cases.items():
        piece = ours.normalize(Piece(text))
        assert [piece.span_of(i) for i in range(len(piece.text))] == spans, text


def test_same_text_as_tokenizers_on_the_corpora():
    blob = builtin_charsmap("nmt_nfkc")
    ours, ref = Precompiled(blob), tokenizers.normalizers.Precompiled(blob)
    text = read_corpus_sample("mixed_sample.txt", 200_000) + read_corpus_sample("zh_novels.txt", 100_000)
    lines = text.splitlines()
    assert [ours.normalize_str(line) for line in lines] == [ref.normalize_str(line) for line in lines]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize(
    "flags", [(True, True, True), (False, False, False), (True, False, True), (False, True, False)]
)
def test_sentencepiece_normalisation_with_its_whitespace_rules(rule, flags):
    kw = dict(add_dummy_prefix=flags[0], remove_extra_whitespaces=flags[1], escape_whitespaces=flags[2])
    normalizer = spm.SentencePieceNormalizer(rule_name=rule, **kw)
    blob = builtin_charsmap(rule, **kw)
    cmap = CharsMap(blob) if blob else None
    rng = random.Random(rule + str(flags))
    alphabet = (mapped_chars(blob)[::40] if blob else []) + EXTRA + [" ", " ", "Ａ\u0301"]
    for _ in range(800):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        expected, offsets = normalizer.normalize(text, with_offsets=True)
        got, origin = spm_normalize(text, cmap, **kw)
        assert got == expected, text
        # the Python binding reports, per output character, the source character's index
        assert origin == offsets[: len(got)], text


def test_longest_match_differs_from_tokenizers_on_a_combining_mark():
    blob = builtin_charsmap("nmt_nfkc")
    assert spm_normalize("Ａ\u0301", CharsMap(blob), add_dummy_prefix=False)[0] == "Á"
    assert Precompiled(blob).normalize_str("Ａ\u0301") == "A"  # tokenizers keeps the shortest match


def test_json_node_is_the_one_tokenizers_writes():
    blob = builtin_charsmap("nmt_nfkc")
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel({"a": 0}, "a"))
    tok.normalizer = tokenizers.normalizers.Precompiled(blob)
    node = json.loads(tok.to_str())["normalizer"]
    assert Precompiled(blob).to_json() == node
    assert part_from_json("normalizer", node).normalize_str("ﬁ①") == "fi1"


def test_empty_charsmap_is_identity_and_bad_charsmaps_are_one_line_errors():
    assert Precompiled(b"").normalize_str("ﬁ ①") == "ﬁ ①"
    with pytest.raises(ToktoolsError, match="base64"):
        part_from_json("normalizer", {"type": "Precompiled", "precompiled_charsmap": "not base64!"})
    with pytest.raises(ToktoolsError, match="trie size"):
        Precompiled(b"\xff\xff\x00\x00abcd")
    with pytest.raises(ToktoolsError, match="UTF-8"):
        Precompiled(b"\x04\x00\x00\x00\x00\x00\x00\x00\xff\xfe\x00")
    with pytest.raises(ToktoolsError):
        part_from_json("normalizer", {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(b"ab").decode()})
