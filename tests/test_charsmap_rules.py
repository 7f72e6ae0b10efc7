"""``toktools.sentencepiece.charsmap_rules`` turns toktools' character normalisers (``Nmt``, ``NFKC``,
``Lowercase``) into a table sentencepiece applies by longest match, as sentencepiece's own
builder does for NFKC (``BuildNFKCMap``):

* on real text, and on decomposed text that NFKC composes, the table gives what the parts give;
* what a longest-match table cannot do is pinned: canonical reordering of combining marks;
* against sentencepiece's built-in ``nmt_nfkc`` every code point that normalises differently is
  explained: a newer Unicode in sentencepiece's table (toktools' NFKC follows ``tokenizers``'
  Unicode 12 tables), or one of three NMT rules ``tokenizers``' ``Nmt`` has differently.
"""

from __future__ import annotations

import unicodedata

import pytest
from conftest import read_corpus_sample

from toktools.errors import ToktoolsError
from toktools.parts.normalizers import NFKC, Lowercase, Nmt
from toktools.parts.precompiled import CharsMap, spm_normalize
from toktools.sentencepiece.charsmap_builder import build_charsmap
from toktools.sentencepiece.charsmap_rules import charsmap_rules, compile_charsmap, rule_name
from toktools.sentencepiece.model_file import NORMALIZER_FIELDS, Message

PARTS = [Nmt(), NFKC()]


@pytest.fixture(scope="module")
def rules() -> CharsMap:
    """The Nmt + NFKC rules, compiled: tests read them through the blob, as sentencepiece does."""
    return CharsMap(compile_charsmap(PARTS))


def by_parts(text: str, parts=PARTS) -> str:
    for part in parts:
        text = part.normalize_str(text)
    return text


def by_table(charsmap: CharsMap, text: str) -> str:
    """Text normalised by the table as sentencepiece applies it: longest match, left to right."""
    return spm_normalize(
        text, charsmap, add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False
    )[0]


def test_the_table_normalises_real_text_like_the_parts(rules):
    lines = (
        read_corpus_sample("mixed_sample.txt", 60_000, skip_lines=4000).splitlines()
        + read_corpus_sample("zh_novels.txt", 30_000, skip_lines=4000).splitlines()
    )
    assert [by_table(rules, line) for line in lines] == [by_parts(line) for line in lines]


def test_decomposed_and_compatibility_text_composes(rules):
    words = ["café", "naïve", "Ångström", "Đặng Thị Ậ", "한국어 각", "ﬁve ① Ｆｕｌｌ ｶﾞ ㍻", "Ω ǅ ẛ"]
    for word in words:
        for form in ("NFC", "NFD", "NFKD"):
            text = unicodedata.normalize(form, word)
            assert by_table(rules, text) == by_parts(text), (word, form)
    # a compatibility letter with a combining mark composes too ("Ａ" + U+0301 -> "Á")
    assert by_table(rules, "Ａ\u0301") == by_parts("Ａ\u0301") == "Á"


def test_what_longest_match_cannot_do_canonical_reordering(rules):
    """NFKC sorts combining marks by class before composing; a table sees them in text order."""
    text = "a\u0302\u0323"  # circumflex (230) then dot below (220)
    assert by_parts(text) == "ậ"
    assert by_table(rules, text) == "â\u0323"
    text = "\u1e9b\u0323"  # long s with dot above, then dot below
    assert by_parts(text) == "ṩ"
    assert by_table(rules, text) == "ṡ\u0323"


def test_lowercase_and_rule_names():
    parts = [Nmt(), NFKC(), Lowercase()]
    lowered = CharsMap(build_charsmap(charsmap_rules(parts)))
    for text in ["The QUICK Ｂｒｏｗｎ", "ÉCOLE", "E\u0301COLE"]:
        assert by_table(lowered, text) == by_parts(text, parts), text
    assert rule_name(PARTS) == "nmt_nfkc" and rule_name(parts) == "nmt_nfkc_lowercase"
    with pytest.raises(ToktoolsError, match="'Replace' has no sentencepiece charsmap equivalent"):
        from toktools.parts.normalizers import Replace

        charsmap_rules([Nmt(), Replace(" ", "_")])


def test_the_blob_is_compiled_once_per_process():
    assert compile_charsmap([Nmt(), NFKC()]) is compile_charsmap([Nmt(), NFKC()])


def test_every_difference_from_sentencepiece_nmt_nfkc_is_explained():
    spm = pytest.importorskip("sentencepiece", reason="sentencepiece is not installed (test extra)")

    def normalizer(blob: bytes):
        spec = Message(NORMALIZER_FIELDS)
        spec.set("name", "x")
        spec.set("precompiled_charsmap", blob)
        for name in ("add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces"):
            spec.set(name, False)
        return spm.SentencePieceNormalizer(normalizer_spec=spec.serialize())

    builtin = Message.parse(
        spm.SentencePieceNormalizer(rule_name="nmt_nfkc").serialized_normalizer_spec(), NORMALIZER_FIELDS, "nmt_nfkc"
    ).get("precompiled_charsmap")
    ours = compile_charsmap(PARTS)
    chars = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
    theirs_out, ours_out = normalizer(builtin).normalize(chars), normalizer(ours).normalize(chars)
    # our reader applies our blob as sentencepiece does
    charsmap = CharsMap(ours)
    checked = [i for i, (ch, out) in enumerate(zip(chars, ours_out)) if out != ch or i % 64 == 0]
    assert [ours_out[i] for i in checked] == [by_table(charsmap, chars[i]) for i in checked]
    nfkc = NFKC()
    nmt, newer, unexplained = {}, [], []
    for ch, theirs, mine in zip(chars, theirs_out, ours_out):
        if theirs == mine:
            continue
        if unicodedata.category(ch) == "Cn" or nfkc.normalize_str(ch) != unicodedata.normalize("NFKC", ch):
            newer.append(ch)  # unassigned in Python's Unicode, or changed since Unicode 12
        elif ch in "\u061c\u200d\uff5e":
            nmt[ch] = (theirs, mine)
        else:
            unexplained.append(ch)
    assert unexplained == []
    # U+061C ARABIC LETTER MARK: a space for sentencepiece, kept by tokenizers' Nmt; U+200D ZERO
    # WIDTH JOINER the other way round; U+FF5E FULLWIDTH TILDE: sentencepiece keeps it, NFKC does not
    assert nmt == {"\u061c": (" ", "\u061c"), "\u200d": ("\u200d", " "), "\uff5e": ("\uff5e", "~")}
    assert 0 < len(newer) < 300
