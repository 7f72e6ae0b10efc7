"""The adapter between reports and models: what a token stands for, how to show it, and the
unknown and special tokens, read from each tokenizer's tokenizer.json."""

from __future__ import annotations

import pytest
from test_report import hand_bpe, hand_wordpiece

import toktools
from toktools.analysis import token_view
from toktools.models.bpe.bytelevel import text_to_symbols
from toktools.presets import ByteLevelBPETokenizer


def test_byte_level_tokens_stand_for_their_bytes():
    bpe = hand_bpe()
    assert token_view.is_byte_level(bpe) and token_view.family(bpe) == "bytebpe"
    assert token_view.token_bytes(bpe, "Ġunaff") == b" unaff"
    assert token_view.token_text(bpe, "Ġunaff") == " unaff"
    symbols = text_to_symbols("我")  # three byte symbols
    assert token_view.token_text(bpe, symbols[:2]) is None and token_view.is_partial(bpe, symbols[:2])
    assert token_view.readable(bpe, symbols[:2]) == "<E6 88>"
    assert token_view.readable(bpe, text_to_symbols(" 我")[:3]) == " <E6 88>"  # text, then hex
    assert token_view.readable(bpe, text_to_symbols("a\n")) == "a\\n"
    assert token_view.is_word_start(bpe, "Ġunaff") and not token_view.is_word_start(bpe, "able")
    assert token_view.unk_token(bpe) is None and token_view.unk_id(bpe) is None
    assert token_view.merge_of(bpe, "Ġunaff") == (4, "Ġ", "unaff") and token_view.merge_of(bpe, "x") is None


def test_wordpiece_pieces_continue_words_and_keep_their_prefix_when_shown():
    wp = hand_wordpiece()
    assert not token_view.is_byte_level(wp) and token_view.family(wp) == "wordpiece"
    assert token_view.token_bytes(wp, "##aff") == b"aff" and token_view.is_continuation(wp, "##aff")
    assert not token_view.is_continuation(wp, "un") and token_view.is_word_start(wp, "un")
    assert token_view.readable(wp, "##aff") == "##aff"
    assert token_view.unk_token(wp) == "[UNK]" and token_view.unk_id(wp) == 1
    assert token_view.special_tokens(wp) == {"[UNK]": 1, "[SEP]": 3, "[CLS]": 2, "[PAD]": 0, "[MASK]": 4}
    assert token_view.specials_added(wp) == 2 and token_view.merges(wp) is None


def test_a_bpe_continuation_prefix_is_read_from_tokenizer_json():
    vocab = {s: i for i, s in enumerate(["a", "b", "##b", "a##b"])}
    bpe = ByteLevelBPETokenizer(vocab, [], continuing_subword_prefix="##")
    assert token_view.is_continuation(bpe, "##b") and token_view.token_bytes(bpe, "##b") == b"b"


def test_escapes_make_invisible_characters_visible():
    assert token_view.escape_text("a\u200db\tc\x00 d") == "a\\u200db\\tc\\x00 d"
    assert token_view.escape_text("naïve 我") == "naïve 我"


def test_views_follow_added_tokens_and_plain_copies_leave_the_original_alone():
    wp = hand_wordpiece()
    assert "[NEW]" not in token_view.special_tokens(wp)
    wp.add_special_tokens(["[NEW]"])
    assert "[NEW]" in token_view.special_tokens(wp)  # the cached view is rebuilt
    wp.enable_truncation(3)
    plain = token_view.without_truncation(wp)
    assert plain is not wp and len(plain.encode("the the the the the", add_special_tokens=False).ids) == 5
    assert len(wp.encode("the the the the the", add_special_tokens=False).ids) == 3


def test_shipped_vocabularies():
    gpt = toktools.load("bytebpe-50k")
    assert token_view.readable(gpt, "ĠHello") == " Hello"
    with pytest.raises(KeyError):
        token_view.view(gpt).model_vocab["no such token"]
