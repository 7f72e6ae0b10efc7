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
from toktools.sentencepiece.normalize import SpmText, second_characters

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


@pytest.mark.parametrize("name", UNIGRAM_MODELS)
def test_held_out_lines(name):
    sp = encoder(name)
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **sp.flags)
    for line in held_out_lines(400):
        assert fast(line) == spm_normalize(line, sp.charsmap, user_defined=sp.user_defined, **sp.flags)[0], line


@settings(max_examples=300, deadline=None)
@given(text=texts, flags=st.sampled_from(FLAGS), name=st.sampled_from(UNIGRAM_MODELS))
def test_generated_text(text, flags, name):
    sp = _ENCODERS[name]
    options = {**sp.flags, **flags}
    fast = SpmText(sp.charsmap, user_defined=sp.user_defined, **options)
    assert fast(text) == spm_normalize(text, sp.charsmap, user_defined=sp.user_defined, **options)[0]


_ENCODERS: dict = {}


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
