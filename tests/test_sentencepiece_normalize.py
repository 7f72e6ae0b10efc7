"""The fast sentencepiece normaliser (:class:`toktools.sentencepiece.normalize.SpmText`) gives
:func:`toktools.parts.precompiled.spm_normalize`'s text: on held-out lines, and on generated
text around everything that makes units longer than a character or moves spaces (combining
marks after letters, half-width kana and their voicing marks, Hangul jamo, runs of spaces and
ideographic spaces, literal ``▁``, control characters, user-defined symbols), under each
whitespace setting, with every charsmap of the test models."""

from __future__ import annotations

import pytest
from _spm_models import MODELS, held_out_lines, train
from hypothesis import given, settings
from hypothesis import strategies as st

from toktools.parts.precompiled import spm_normalize
from toktools.sentencepiece.normalize import SpmText, rule_openings, second_characters

pytest.importorskip("sentencepiece")

UNIGRAM_MODELS = [name for name, options in MODELS.items() if options.get("model_type", "unigram") == "unigram"]
PIECES = list("aAeé1,中，。") + [
    "\u0301",
    "\u0308",
    "ｶ",
    "ﾞ",
    "\u1100",
    "\u1161",
    "\u11a8",
    " ",
    "  ",
    "\u3000",
    "\u2581",
    "\t",
    "\n",
    "\x01",
    "\u200b",
    "①",
    "ﬁ",
    "<mask>",
    "[SEP]",
    "中文",
    "<s>",
    "\U0001f600",
]
texts = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)
FLAGS = [
    dict(),
    dict(remove_extra_whitespaces=False),
    dict(escape_whitespaces=False),
    dict(add_dummy_prefix=False),
    dict(treat_whitespace_as_suffix=True),
]


def encoder(name):
    from toktools.sentencepiece.encode import SentencePieceUnigram

    return SentencePieceUnigram.load(train(name, **MODELS[name]))


def compiled_normalizer(fast: SpmText):
    """``CompiledSpmText`` of ``fast``, or None without numba or when ``fast`` has no fast path."""
    from toktools.runtime.compiled_switch import compiled_module

    module = compiled_module("toktools.sentencepiece.compiled_normalize")
    return module.CompiledSpmText(fast) if module is not None and fast.fast else None


def compiled_texts(fast: SpmText, texts: list[str]) -> list[str] | None:
    """The texts through the compiled normaliser of ``fast``, in one batch (None as
    :func:`compiled_normalizer`)."""
    compiled = compiled_normalizer(fast)
    if compiled is None:
        return None
    codes, offsets = compiled(texts)
    return [codes[a:b].tobytes().decode("utf-32-le", "surrogatepass") for a, b in zip(offsets, offsets[1:])]


@pytest.mark.parametrize("name", UNIGRAM_MODELS)
def test_held_out_lines(name):
    """Line by line (SpmText) and as one batch (the compiled normaliser, which sends the lines
    it cannot take to SpmText)."""
    sp = encoder(name)
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **sp.flags)
    lines = held_out_lines(400)
    want = [spm_normalize(line, sp.charsmap, user_defined=sp.user_defined, **sp.flags)[0] for line in lines]
    for line, text in zip(lines, want):
        assert fast(line) == text, line
    assert compiled_texts(fast, lines) in (None, want)
    compiled = compiled_normalizer(fast)
    if compiled is not None:  # with the alignment, one text at a time
        for line in lines:
            found = compiled.aligned(line)
            assert found is None or found == spm_normalize(line, sp.charsmap, user_defined=sp.user_defined, **sp.flags)


@settings(max_examples=300, deadline=None)
@given(text=texts, flags=st.sampled_from(FLAGS), name=st.sampled_from(UNIGRAM_MODELS))
def test_generated_text(text, flags, name):
    sp = _ENCODERS[name]
    options = {**sp.flags, **flags}
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **options)
    want = spm_normalize(text, sp.charsmap, user_defined=sp.user_defined, **options)[0]
    assert fast(text) == want
    key = (name, tuple(sorted(flags.items())))
    if key not in _COMPILED:
        _COMPILED[key] = compiled_normalizer(fast)
    compiled = _COMPILED[key]
    found = compiled.aligned(text) if compiled is not None else None
    assert found is None or found == spm_normalize(text, sp.charsmap, user_defined=sp.user_defined, **options)
    if compiled is not None:  # the text among others the compiled path takes on its own
        codes, offsets = compiled(["a b", text, "", " 中 "])
        got = [codes[a:b].tobytes().decode("utf-32-le", "surrogatepass") for a, b in zip(offsets, offsets[1:])]
        assert got == [fast("a b"), want, "", fast(" 中 ")]


_ENCODERS: dict = {}
#: the compiled normaliser of each (model, flags) the generated tests meet
_COMPILED: dict = {}


@pytest.fixture(autouse=True, scope="module")
def _encoders():
    for name in UNIGRAM_MODELS:
        _ENCODERS[name] = encoder(name)


def test_the_characters_that_continue_a_rule_are_those_of_the_rules():
    """Every listed character really continues some rule after some first character (the
    walk finds a longer match), e.g. a combining acute after a letter; plain text continues none."""
    charsmap = encoder("unigram").charsmap
    seconds = second_characters(charsmap)
    assert "\u0301" in seconds and "ﾞ" in seconds
    assert not seconds & set("abc 中，。1")
    assert charsmap.longest("A\u0301".encode(), 0)[0] == 3  # one unit of two characters
    openings = rule_openings(charsmap)
    assert ("A", "\u0301") in openings and ("ｶ", "ﾞ") in openings
    assert ("е", "\u0301") not in openings  # Cyrillic: no rule composes it
    assert {second for _, second in openings} == seconds


def test_compiled_normaliser_around_characters_that_continue_rules():
    """Where the two neighbours open a rule the text takes SpmText's slow path, elsewhere the
    compiled fast path: both give spm_normalize's text."""
    sp = encoder("unigram")
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **sp.flags)
    texts = ["Андре\u0301й A\u0301B", "Андре\u0301й  ab", "ｶﾞ ﾞ x", "\u0301 at the start", "e\u0308 ё  ", "x" * 5]
    want = [spm_normalize(text, sp.charsmap, user_defined=sp.user_defined, **sp.flags)[0] for text in texts]
    assert compiled_texts(fast, texts) in (None, want)


#: user-defined symbols that share first characters with ordinary text (Chinese, Latin), one the
#: prefix of another, one starting with a character the charsmap rewrites, and one holding a
#: character that continues a rule (that one takes the slow path)
USER_SYMBOLS = ["中文", "的话", "AB", "A", "<mask>", "①x", "ｶﾞ", "▁x"]
AROUND = ["中文", "的话", "的", "中", "文", "AB", "A", "B", "①x", "①", "ｶﾞ", "ｶ", "ﾞ", "▁x", "▁", "<mask>"]
AROUND += [" ", "  ", "\u3000", "\t", "\n", "a", "Ａ", "我们", "。", "\u0301", "x"]
around_symbols = st.lists(st.sampled_from(AROUND), min_size=1, max_size=12).map("".join)


@pytest.fixture(scope="module")
def user_model():
    """A Unigram model trained by sentencepiece on the shared corpora, with USER_SYMBOLS."""
    spm = pytest.importorskip("sentencepiece")
    path = train("unigram_user_symbols", user_defined_symbols=USER_SYMBOLS)
    return encoder_at(path), spm.SentencePieceProcessor(model_file=str(path))


def encoder_at(path):
    from toktools.sentencepiece.encode import SentencePieceUnigram

    return SentencePieceUnigram.load(path)


def _counting_slow(fast: SpmText) -> list[str]:
    """Texts that ``fast`` sends down the slow path, recorded."""
    seen: list[str] = []
    slow = fast.slow

    def recorded(text: str) -> str:
        seen.append(text)
        return slow(text)

    fast.slow = recorded  # type: ignore[method-assign]
    return seen


def test_user_symbols_split_around_spaces_and_inside_chinese(user_model):
    """Adversarial places for the symbols, against sentencepiece's own normaliser and ids, and
    without the per-character path (only texts with a character that continues a rule take it:
    a combining mark, or ﾞ, which the symbol ｶﾞ holds)."""
    sp, processor = user_model
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **sp.flags)
    slow_texts = _counting_slow(fast)
    cases = [
        "中文",
        " 中文",
        "中文 ",
        "  中文  ",
        "中文中文中文",
        "我们说中文吧",
        "说 中文 吧",
        "中文\n中文",
        "\u3000中文\u3000",
        "中文。的话的话",
        "ABA AB  A",
        "ＡB AＢ",
        "①x① x①",
        "x▁x ▁x▁",
        "▁x",
        "<mask> <mask><mask> ",
        "a\u0301中文",
        "中\u0301文",
        "\t中文\t",
    ]
    for text in cases:
        assert fast(text) == processor.normalize(text), text
        assert sp.encode(text) == processor.encode(text), text
    assert slow_texts == ["a\u0301中文", "中\u0301文"]  # a combining mark continues a rule: per unit
    assert fast("ｶﾞ中文") == processor.normalize("ｶﾞ中文") and slow_texts[-1] == "ｶﾞ中文"


@settings(max_examples=300, deadline=None)
@given(text=around_symbols)
def test_generated_text_around_user_symbols(user_model, text):
    sp, processor = user_model
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **sp.flags)
    assert fast(text) == processor.normalize(text)
    assert sp.encode(text) == processor.encode(text)


@pytest.mark.parametrize("flags", FLAGS[1:4])
@settings(max_examples=100, deadline=None)
@given(text=around_symbols)
def test_user_symbols_under_each_whitespace_setting(user_model, flags, text):
    """Settings a model can have and this one has not: against the reference normaliser."""
    sp, _ = user_model
    options = {**sp.flags, **flags}
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **options)
    assert fast(text) == spm_normalize(text, sp.charsmap, user_defined=sp.user_defined, **options)[0]


def test_chinese_paragraphs_with_a_chinese_symbol_take_the_fast_path(user_model, tmp_path):
    """Chinese without spaces (real_shapes), the symbol 中文 inside: sentencepiece's text and ids."""
    import real_shapes

    sp, processor = user_model
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **sp.flags)
    slow_texts = _counting_slow(fast)
    path = real_shapes.chinese_paragraphs(tmp_path / "zh.txt", count=6, low=2_000, high=8_000)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines = [line[:500] + " 中文" + line[500:1000] + "中文 的话" + line[1000:] for line in lines]
    for line in lines:
        assert fast(line) == processor.normalize(line)
    assert slow_texts == []
    assert [sp.encode(line) for line in lines] == [processor.encode(line) for line in lines]
