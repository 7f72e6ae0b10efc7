"""The BERT normalizer and pre-tokenizer match HuggingFace ``tokenizers`` exactly.

Reference: ``tokenizers.normalizers.BertNormalizer`` and ``tokenizers.pre_tokenizers.BertPreTokenizer``
(pinned 0.23.3). The tests go from the exhaustive (every Unicode code point, under many option
combinations; a sample of them but under ``-m full``) to the concrete (the examples of ``spec/wordpiece.md``), then real corpora and
random text. ``tokenizers`` is only the oracle here; ``toktools.parts.bert_text`` never imports it.
"""

from __future__ import annotations

import functools
import itertools

import pytest
from conftest import read_corpus_sample
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from toktools.parts.bert_text import (
    BertNormalizerConfig,
    iter_words,
    normalize,
    normalize_with_offsets,
    original_span,
    pre_tokenize,
    words_with_offsets,
)
from toktools.tables import bert as _bert_tables

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers  # noqa: E402
from tokenizers.models import WordPiece  # noqa: E402


@functools.cache
def chars_of(scalars: tuple[int, ...]) -> str:
    """The ``unicode_scalars`` of a sweep (every Unicode scalar value under ``-m full``, a sample
    otherwise), each once, in code point order: neighbours such as runs of combining marks also
    exercise NFD's canonical reordering."""
    return "".join(map(chr, scalars))


DEFAULT = BertNormalizerConfig()
CASED = BertNormalizerConfig(lowercase=False)  # strip_accents None -> off as well
#: The meaningful combinations: each option flipped alone from the default, the cased variants,
#: strip_accents forced on/off against lowercase, and everything off.
CONFIGS = [
    DEFAULT,
    CASED,
    BertNormalizerConfig(clean_text=False),
    BertNormalizerConfig(handle_chinese_chars=False),
    BertNormalizerConfig(strip_accents=False),  # lowercase without stripping
    BertNormalizerConfig(strip_accents=True, lowercase=False),  # strip without lowercase
    BertNormalizerConfig(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False),
    BertNormalizerConfig(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True),
    BertNormalizerConfig(clean_text=True, handle_chinese_chars=False, lowercase=False),
    BertNormalizerConfig(clean_text=False, handle_chinese_chars=False, lowercase=False),  # identity
]


def hf_normalizer(config: BertNormalizerConfig) -> normalizers.BertNormalizer:
    return normalizers.BertNormalizer(
        clean_text=config.clean_text,
        handle_chinese_chars=config.handle_chinese_chars,
        strip_accents=config.strip_accents,
        lowercase=config.lowercase,
    )


HF_PRE = pre_tokenizers.BertPreTokenizer()


def hf_pre_tokenize(text: str) -> list[tuple[str, int, int]]:
    return [(piece, start, end) for piece, (start, end) in HF_PRE.pre_tokenize_str(text)]


def hf_tokenizer(config: BertNormalizerConfig, vocab: dict[str, int], *, per_char: bool = False) -> Tokenizer:
    """A BERT-style ``tokenizers.Tokenizer`` (no special tokens added) over ``vocab``.

    With ``per_char``, the pre-tokenizer also cuts every word into single chars, so each
    normalized char becomes its own token and ``Encoding.offsets`` exposes HF's alignment.
    """
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=10**9))
    tok.normalizer = hf_normalizer(config)
    tok.pre_tokenizer = (
        HF_PRE
        if not per_char
        else pre_tokenizers.Sequence([HF_PRE, pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")])
    )
    return tok


def hf_char_offsets(texts: list[str], config: BertNormalizerConfig) -> list[list[tuple[int, int]]]:
    """HF's original span of every non-whitespace normalized char, one list per text."""
    tok = hf_tokenizer(config, {"[UNK]": 0}, per_char=True)
    return [enc.offsets for enc in tok.encode_batch(texts, add_special_tokens=False)]


def our_char_offsets(text: str, config: BertNormalizerConfig) -> list[tuple[int, int]]:
    """Our alignment, for the same chars as ``hf_char_offsets``."""
    normalized, offsets = normalize_with_offsets(text, config)
    assert len(offsets) == len(normalized)
    return [original_span(offsets, i, i + 1) for _, start, end in pre_tokenize(normalized) for i in range(start, end)]


#: The options of ``test_words_of_every_code_point``: HF's normalized text of every code point
#: under them is computed once (~1 s each) for it and ``test_normalize_every_code_point``.
WORD_CONFIGS = [DEFAULT, BertNormalizerConfig(clean_text=False)]
_HF_NORMALIZED_ALL: dict[tuple[BertNormalizerConfig, str], str] = {}


def hf_normalized_chars(config: BertNormalizerConfig, chars: str) -> str:
    """HF's normalized ``chars`` (a sweep's ``chars_of``), kept for the ``WORD_CONFIGS`` only
    (4 MB each for the full sweep)."""
    if (config, chars) in _HF_NORMALIZED_ALL:
        return _HF_NORMALIZED_ALL[config, chars]
    normalized = hf_normalizer(config).normalize_str(chars)
    if config in WORD_CONFIGS:
        _HF_NORMALIZED_ALL[config, chars] = normalized
    return normalized


def first_difference(ours: str, theirs: str) -> str:
    i = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return f"first difference at output index {i}: ours {ours[i - 8 : i + 8]!r}, HF {theirs[i - 8 : i + 8]!r}"


# --------------------------------------------------------------------------- (a) every code point


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_normalize_every_code_point(config: BertNormalizerConfig, unicode_scalars: tuple[int, ...]) -> None:
    """All 1,112,064 scalar values in one string: the normalized text is identical to HF's."""
    chars = chars_of(unicode_scalars)
    ours, theirs = normalize(chars, config), hf_normalized_chars(config, chars)
    assert ours == theirs, first_difference(ours, theirs)


def test_normalize_every_code_point_alone(unicode_scalars: tuple[int, ...]) -> None:
    """With a starter between code points, each one is normalized alone (no reordering with its
    neighbour): the per-char tables are right even where neighbours would mask a mistake."""
    text = "|".join(chars_of(unicode_scalars))
    ours, theirs = normalize(text), hf_normalizer(DEFAULT).normalize_str(text)
    assert ours == theirs, first_difference(ours, theirs)


def test_pre_tokenize_every_code_point(unicode_scalars: tuple[int, ...]) -> None:
    """Each code point between two letters: it is whitespace (dropped), punctuation (isolated) or
    part of the word, exactly as in HF; and the same on all code points side by side."""
    chars = chars_of(unicode_scalars)
    separated = "a" + "a".join(chars) + "a"
    assert pre_tokenize(separated) == hf_pre_tokenize(separated)
    assert pre_tokenize(chars) == hf_pre_tokenize(chars)


@pytest.mark.parametrize("config", WORD_CONFIGS, ids=str)
def test_words_of_every_code_point(config: BertNormalizerConfig, unicode_scalars: tuple[int, ...]) -> None:
    """``iter_words`` (the training fast path: str.split with clean_text, the regex without)
    gives HF's pieces of the normalized text of all code points."""
    chars = chars_of(unicode_scalars)
    theirs = [piece for piece, _ in HF_PRE.pre_tokenize_str(hf_normalized_chars(config, chars))]
    assert list(iter_words(chars, config)) == theirs


@pytest.mark.parametrize("config", [DEFAULT, CASED, BertNormalizerConfig(strip_accents=False)], ids=str)
def test_offsets_every_code_point(config: BertNormalizerConfig, unicode_scalars: tuple[int, ...]) -> None:
    """The original index of every normalized char equals HF's alignment, for all code points.

    Code points go in groups of 16 neighbours (so reordering and multi-char results are covered)
    separated by spaces (so HF's per-char WordPiece split stays cheap)."""
    chars = chars_of(unicode_scalars)
    texts = [chars[i : i + 4096] for i in range(0, len(chars), 4096)]
    texts = [" ".join(t[j : j + 16] for j in range(0, len(t), 16)) for t in texts]
    for text, theirs in zip(texts, hf_char_offsets(texts, config)):
        assert our_char_offsets(text, config) == theirs, f"text starting at U+{ord(text[0]):04X}"


# --------------------------------------------------------------------------- (b) spec examples


def test_lowercase_is_per_char_so_no_final_sigma() -> None:
    """HF lowercases char by char: a word-final Σ becomes σ, never ς (unlike str.lower())."""
    assert normalize("ΟΔΟΣ") == "οδοσ"
    assert "ΟΔΟΣ".lower() == "οδος"
    assert normalize("ΟΔΟΣ", BertNormalizerConfig(strip_accents=False)) == "οδοσ"


def test_dotted_capital_i() -> None:
    """İ lowercases to two chars, i + U+0307; with strip_accents the dot goes away again (NFD first)."""
    assert normalize("İ", BertNormalizerConfig(strip_accents=False)) == "i\u0307"
    assert normalize("İ") == "i"
    assert normalize_with_offsets("İx", BertNormalizerConfig(strip_accents=False)) == ("i\u0307x", [0, 0, 1])


def test_clean_text_removes_format_and_private_use_chars() -> None:
    """ZWJ (so emoji sequences fall apart), soft hyphen, BOM and private use are deleted."""
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert normalize(family) == "\U0001f468\U0001f469\U0001f467"
    assert normalize("co\u00adop\ufeff\ue000\U000f0000") == "coop"
    assert normalize(family, BertNormalizerConfig(clean_text=False, lowercase=False)) == family


def test_vt_ff_nel_are_deleted_not_spaces() -> None:
    """VT, FF and NEL are controls, and removal is tested before whitespace: they vanish, so the
    words around them join. Without clean_text they stay and the pre-tokenizer splits on them."""
    assert normalize("a\x0bb\x0cc\x85d") == "abcd"
    assert normalize("a\tb\nc\u3000d\u00a0e") == "a b c d e"
    raw = BertNormalizerConfig(clean_text=False)
    assert [w for w, _, _ in pre_tokenize(normalize("a\x0bb\x0cc\x85d", raw))] == ["a", "b", "c", "d"]


def test_chinese_chars_are_padded_but_not_ext_e_start() -> None:
    """CJK ideographs get a space on each side; U+2B820..U+2B91F are *not* padded by HF (its
    range starts at U+2B920, Google's at U+2B820). Kana and hangul stay inside words."""
    assert normalize("我爱ab") == " 我  爱 ab"
    assert normalize("\U0002b81f\U0002b820\U0002b91f\U0002b920") == " \U0002b81f \U0002b820\U0002b91f \U0002b920 "
    assert normalize("カタカナ한국", CASED) == "カタカナ한국"
    assert normalize("我", BertNormalizerConfig(handle_chinese_chars=False)) == "我"


def test_accents_are_stripped_by_default_and_kept_when_cased() -> None:
    """strip_accents follows lowercase unless set: uncased strips, cased keeps. Stripping is NFD
    then dropping nonspacing marks, so NFD's other effects stay: Hangul syllables come out as
    conjoining jamo, and the emoji variation selector U+FE0F (a nonspacing mark) is dropped."""
    assert normalize("Héllo Wörld Ångström") == "hello world angstrom"
    assert normalize("Héllo", CASED) == "Héllo"
    assert normalize("Héllo", BertNormalizerConfig(strip_accents=True, lowercase=False)) == "Hello"
    assert normalize("한국") == "\u1112\u1161\u11ab\u1100\u116e\u11a8"
    assert normalize("\u2764\ufe0f") == "\u2764"


def test_table_differences_from_recent_unicode() -> None:
    """HF's old tables: U+1734 is stripped (it was Mn), U+11938 is not decomposed, new Mn such as
    U+1ABF are kept, and Unicode 16 letters lowercase (U+1C89 -> U+1C8A)."""
    assert normalize("a\u1734") == "a"
    assert normalize("\U00011938") == "\U00011938"
    assert normalize("a\u1abf") == "a\u1abf"
    assert normalize("\u1c89") == "\u1c8a"


def test_canonical_reordering_of_surviving_marks() -> None:
    """NFD sorts combining marks; when one survives strip_accents (here the musical stem U+1D165,
    class 216, and U+1D16D, class 226) the order HF outputs is the sorted one."""
    text = "a\U0001d16d\U0001d165 \U0001d15f"
    expected = "a\U0001d165\U0001d16d \U0001d158\U0001d165"
    assert normalize(text) == expected == hf_normalizer(DEFAULT).normalize_str(text)
    # HF aligns reordered chars by position: each keeps the index of the char at its place.
    assert normalize_with_offsets(text)[1] == [0, 1, 2, 3, 4, 4]


def test_words_around_reordered_marks() -> None:
    """Where NFD reordering forces the exact emulation, the word fast path still isolates the
    punctuation that starts the run ("." before the Balinese virama U+1B44, class 9)."""
    text = "x.\u1b44\u1b44 y\U0001d16d\U0001d165!"
    expected = ["x", ".", "\u1b44\u1b44", "y\U0001d165\U0001d16d", "!"]
    assert list(iter_words(text)) == expected
    assert [w for w, _, _ in pre_tokenize(normalize(text))] == expected


def test_offsets_of_inserted_and_removed_chars() -> None:
    """Inserted spaces and extra chars point at their source char; removed chars leave no trace."""
    assert normalize_with_offsets("中İé") == (" 中 ie", [0, 0, 0, 1, 2])
    assert normalize_with_offsets("a\u200db") == ("ab", [0, 2])
    assert words_with_offsets("Hello, 世界!") == [
        ("hello", 0, 5),
        (",", 5, 6),
        ("世", 7, 8),
        ("界", 8, 9),
        ("!", 9, 10),
    ]


def test_pre_tokenizer_punctuation_and_symbols() -> None:
    """Every ASCII non-alphanumeric is punctuation; non-ASCII symbols (€, ©, emoji) are not."""
    assert pre_tokenize("foo-bar") == [("foo", 0, 3), ("-", 3, 4), ("bar", 4, 7)]
    assert pre_tokenize("$5 5€ ©2024 a+b") == [
        ("$", 0, 1),
        ("5", 1, 2),
        ("5€", 3, 5),
        ("©2024", 6, 11),
        ("a", 12, 13),
        ("+", 13, 14),
        ("b", 14, 15),
    ]
    assert pre_tokenize("«hi»—ok") == [("«", 0, 1), ("hi", 1, 3), ("»", 3, 4), ("—", 4, 5), ("ok", 5, 7)]
    assert pre_tokenize(" \t\n ") == []


def test_tables_come_from_the_pinned_tokenizers() -> None:
    """The generated tables say which ``tokenizers`` they were measured on; it is the one installed."""
    assert _bert_tables.TOKENIZERS_VERSION == tokenizers.__version__


# --------------------------------------------------------------------------- (c) real text


CORPORA = [
    ("en_wiki.txt.gz", DEFAULT),
    ("zh_novels.txt", DEFAULT),
    ("mixed_sample.txt", DEFAULT),
    ("mixed_sample.txt", CASED),
]


@pytest.mark.shared
@pytest.mark.parametrize(("name", "config"), CORPORA, ids=["en_wiki", "zh_novels", "mixed", "mixed-cased"])
def test_corpus_parity_line_by_line(name: str, config: BertNormalizerConfig) -> None:
    """About 1 MB of each shared corpus, line by line as HF trains: same words, same offsets."""
    lines = read_corpus_sample(name, 1_000_000).splitlines(keepends=True)
    hf = hf_normalizer(config)
    for line in lines:
        normalized = normalize(line, config)
        assert normalized == hf.normalize_str(line), line
        assert pre_tokenize(normalized) == hf_pre_tokenize(normalized), line


@pytest.mark.shared
@pytest.mark.parametrize("name", ["en_wiki.txt.gz", "zh_novels.txt", "mixed_sample.txt"])
def test_corpus_offsets_match_encode(name: str) -> None:
    """Original offsets of every normalized char match HF ``Tokenizer.encode(...).offsets``."""
    lines = read_corpus_sample(name, 300_000).splitlines(keepends=True)
    for line, theirs in zip(lines, hf_char_offsets(lines, DEFAULT)):
        assert our_char_offsets(line, DEFAULT) == theirs, line


@pytest.mark.shared
def test_word_offsets_match_whole_word_encode() -> None:
    """With a vocabulary holding every word, ``Tokenizer.encode`` gives one token per word; its
    text and offsets are what ``words_with_offsets`` returns."""
    lines = read_corpus_sample("mixed_sample.txt", 300_000).splitlines(keepends=True)
    ours = [words_with_offsets(line) for line in lines]
    vocab = {"[UNK]": 0}
    for words in ours:
        for word, _, _ in words:
            vocab.setdefault(word, len(vocab))
    encodings = hf_tokenizer(DEFAULT, vocab).encode_batch(lines, add_special_tokens=False)
    for line, words, enc in zip(lines, ours, encodings):
        assert words == [(t, s, e) for t, (s, e) in zip(enc.tokens, enc.offsets)], line


@pytest.mark.shared
def test_whole_chunk_words_equal_line_by_line_words() -> None:
    """Counting words over a whole chunk gives the words of HF's line-by-line processing, in order."""
    text = read_corpus_sample("mixed_sample.txt", 1_000_000)
    hf = hf_normalizer(DEFAULT)
    line_words = [
        w for line in text.splitlines(keepends=True) for w, _ in HF_PRE.pre_tokenize_str(hf.normalize_str(line))
    ]
    assert list(iter_words(text)) == line_words


# --------------------------------------------------------------------------- (d) random text

INTERESTING = (
    "aZ \t\n\r\x0b\x0c\x85\u00a0\u3000\u2028\u200d\u00ad\ufeff\ue000\ufffd\x00.-,'$€©"
    "ΣςİIéÉ\u0301\u0300\u0327\u0345\u0334\u0344\u0f73\u1b44\u302e\u08d4\U0001d165\U0001d16d\U0001d15f"
    "ﬁ\ufb01Å\u212b가각中\uf900\U0002b820\U0002b920\U00020000ア\u1c89\u1734\U00011938\u2764\ufe0f\U0001f600"
)
#: Any Unicode scalar value (surrogates cannot reach ``tokenizers``), biased towards the above.
TEXTS = st.text(st.one_of(st.sampled_from(INTERESTING), st.characters(codec="utf-8")), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, config=st.sampled_from(CONFIGS))
@example(text="\u2028\u08d4", config=DEFAULT)  # a run NFD reorders holds a char clean_text makes a space
@example(text="\uf900\U0001d16d", config=DEFAULT)  # ... and a Chinese char that gets padded
def test_random_text_matches_hf(text: str, config: BertNormalizerConfig) -> None:
    """For any text and options: same normalized text, same pieces, same original offsets."""
    normalized = normalize(text, config)
    assert normalized == hf_normalizer(config).normalize_str(text)
    assert pre_tokenize(normalized) == hf_pre_tokenize(normalized)
    assert list(iter_words(text, config)) == [piece for piece, _, _ in hf_pre_tokenize(normalized)]
    assert normalize_with_offsets(text, config)[0] == normalized
    assert our_char_offsets(text, config) == hf_char_offsets([text], config)[0]


def test_strip_accents_none_follows_lowercase() -> None:
    """``strip_accents=None`` means "same as lowercase", exactly as in ``tokenizers``."""
    for clean, chinese, lower in itertools.product([True, False], repeat=3):
        unset = BertNormalizerConfig(clean, chinese, None, lower)
        explicit = BertNormalizerConfig(clean, chinese, lower, lower)
        assert unset.effective_strip_accents == lower
        assert normalize("Ÿé Σ", unset) == normalize("Ÿé Σ", explicit)


def test_python_whitespace_is_what_str_isspace_says() -> None:
    """The set str.split() splits on is found with re's \\s over all code points at once: the
    same test as str.isspace (both are CPython's Py_UNICODE_ISSPACE), checked here on each."""
    from toktools.parts.bert_text import _python_whitespace

    assert _python_whitespace() == frozenset(c for c in range(0x110000) if chr(c).isspace())


def test_translate_table_fills_changed_chars_on_first_sight() -> None:
    """The translate table is built without computing the tens of thousands of BMP chars a step
    may change: each is computed the first time a text holds it, and kept."""
    from toktools.parts.bert_text import _Tables

    table = _Tables(clean=True, chinese=True, strip=True, lower=True).char_map
    assert 0xC9 not in table and 0x4E2D not in table  # É and 中: not computed yet
    assert "\u00c9t\u00c9\u4e2d".translate(table) == "ete \u4e2d "
    assert table[0xC9] == "e" and table[0x4E2D] == " \u4e2d " and table[ord("t")] == ord("t")


def test_split_is_exact_is_kept_in_the_user_cache(tmp_path, monkeypatch) -> None:
    """The check (a pass over every code point, ~0.05 s a process) is stored once per option
    set and read back by the next process (here: fresh tables whose check would fail)."""
    from toktools.parts import bert_text

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path))
    options = [
        (True, chinese, strip, lower) for chinese in (True, False) for strip in (True, False) for lower in (True, False)
    ]
    computed = {flags: bert_text._Tables(*flags)._check_split() for flags in options}
    assert [bert_text._Tables(*flags).split_is_exact for flags in options] == list(computed.values())
    monkeypatch.setattr(bert_text._Tables, "_check_split", lambda self: pytest.fail("computed again"))
    assert [bert_text._Tables(*flags).split_is_exact for flags in options] == list(computed.values())
    assert bert_text._Tables(False, True, True, True).split_is_exact is False  # without clean_text: never
