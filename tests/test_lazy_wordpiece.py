"""``Tokenizer.encode_batch`` for WordPiece built a batch at a time with lazy fields
(:mod:`toktools.engines.lazy_wordpiece`): every field equal to ``tokenizers``' on held-out
English and Chinese, the suite's fuzz corpus and texts where BertNormalizer moves offsets
(accents stripped, lowercasing that changes a character's length, CJK characters split off,
characters removed, ``[UNK]`` words, words over ``max_input_chars_per_word``), for every
BertNormalizer option and none; single texts, pairs, truncation with stride, padding; and the
lazy fields equal to the eager pipeline's whichever is read first."""

from __future__ import annotations

import json

import pytest
import tokenizers
from conftest import ref_vocab_dir
from test_lazy_encodings import SPECIALS, assert_same, configure, fuzz, held_out, short

from toktools.encoding import Encoding, LazyEncoding
from toktools.engines import lazy_encodings
from toktools.formats import from_tokenizer_json, load
from toktools.io.shipped import shipped_path

#: texts where the normalised text and the original differ in length or content
ALIGNMENT = [
    "Héllo wörld ÉCOLE naïve café Ångström",
    "İstanbul İİx ǅemal ẞtraße ﬁne ﬂow",  # lowercase: İ -> i + U+0307, ǅ -> ǆ
    "a\x00b\tc\u200bd\ufffde\x7ff",  # removed by clean_text, or made spaces
    "abc你好，世界！ 123 漢字かなカナ한국어",
    "𠀀𠀁 ext-B and \U0001f600 emoji \U0001d400 math",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx long",
    "qzxqzx ☃☃ ᚠᛇᚻ unknown words",
    "\U0001d165\u0301x ड़्क reordering marks e\u0316\u0301",
    "ﾊﾝｶｸ full-width ＡＢＣ１２３ ",
    "  leading and trailing  ",
    "",
    "\u3000\u00a0\u2028",
]


BERT_DEFAULTS = {"clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True}


def _wordpiece(name: str = "wordpiece-30k", normalizer: dict | None | str = "keep", max_chars: int | None = None):
    """``name`` with another normaliser (a BertNormalizer's options, or None), both sides."""
    shipped = shipped_path(name)
    ours = load(shipped if shipped is not None else ref_vocab_dir(name))
    document = ours.to_tokenizer_json()
    document["truncation"] = document["padding"] = None
    if normalizer != "keep":
        document["normalizer"] = (
            None if normalizer is None else {"type": "BertNormalizer", **BERT_DEFAULTS, **normalizer}
        )
    if max_chars is not None:
        document["model"]["max_input_chars_per_word"] = max_chars
    return from_tokenizer_json(document), tokenizers.Tokenizer.from_str(json.dumps(document))


@pytest.fixture(autouse=True)
def every_batch_lazy(monkeypatch) -> None:
    monkeypatch.setattr(lazy_encodings, "COLD_MIN_CHARS", 0)
    monkeypatch.setattr(lazy_encodings, "WARM_MIN_CHARS", 0)


def _check(ours, theirs, texts, settings: str = "plain") -> None:
    configure(ours, theirs, settings)
    encodings = ours.encode_batch(texts, workers=1)
    assert any(isinstance(e, LazyEncoding) for e in encodings)  # the lazy path was taken
    assert_same(encodings, theirs.encode_batch(texts), texts)
    pairs = list(zip(texts[::2], texts[1::2]))
    assert_same(ours.encode_batch(pairs, workers=1), theirs.encode_batch(pairs), pairs)
    plain = texts[:100]
    assert_same(
        ours.encode_batch(plain, add_special_tokens=False, workers=1),
        theirs.encode_batch(plain, add_special_tokens=False),
        plain,
    )


@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("wordpiece-30k", "plain"),
        ("wordpiece-30k", "truncate+pad"),
        pytest.param("bert-base-uncased", "plain", marks=pytest.mark.full),
        pytest.param("bert-base-chinese", "truncate+pad", marks=pytest.mark.full),
    ],
)
def test_held_out_and_fuzz_batches_match_tokenizers(name: str, settings: str) -> None:
    ours, theirs = _wordpiece(name)
    ours.add_special_tokens(SPECIALS)
    theirs.add_special_tokens(SPECIALS)
    texts = held_out(6_000) + fuzz(100) + ALIGNMENT
    _check(ours, theirs, texts if settings == "plain" else short(texts), settings)
    if settings == "plain":  # forked workers take it too, and send back the same encodings
        assert ours.encode_batch(texts, workers=2) == ours.encode_batch(texts, workers=1)


@pytest.mark.parametrize(
    "normalizer",
    [
        {"lowercase": False, "strip_accents": None},
        {"lowercase": True, "strip_accents": False},
        {"lowercase": False, "strip_accents": True, "handle_chinese_chars": False},
        {"clean_text": False},
        None,
    ],
)
def test_every_normalizer_option_and_none_match_tokenizers(normalizer: dict | None) -> None:
    ours, theirs = _wordpiece(normalizer=normalizer)
    _check(ours, theirs, held_out(2_000) + fuzz(40) + ALIGNMENT)


def test_compiled_offsets_learn_new_characters_a_few_at_a_time(monkeypatch) -> None:
    """The compiled offsets map spans back through the normaliser with a table of each code
    point's translation length, filled as characters are first met: here from empty, three at a
    time (many rounds), on text with accents, wide forms, removed controls and Chinese."""
    from toktools.engines import lazy_wordpiece
    from toktools.models.wordpiece import compiled

    monkeypatch.setattr(compiled, "UNKNOWN_ROOM", 3)
    monkeypatch.setattr(lazy_wordpiece, "_LENGTH_BYTES", {})
    ours, theirs = _wordpiece(normalizer={"strip_accents": True})
    texts = (
        held_out(2_000)
        + ALIGNMENT
        + ["Héllo Wörld ＡＢＣ ﬁ", "\u00ad soft\u00adhyphen \x00ctrl\x07", "中文字符 İstanbul"]
    )
    encodings = ours.encode_batch(texts, workers=1)
    assert lazy_encodings._builder(ours).offsetter is not None  # the compiled offsets were used
    assert_same(encodings, theirs.encode_batch(texts), texts)


def test_unknown_and_overlong_words_match_tokenizers() -> None:
    """``max_input_chars_per_word`` 6: many words become one ``[UNK]`` over the whole word."""
    ours, theirs = _wordpiece(max_chars=6)
    texts = held_out(2_000) + ALIGNMENT
    _check(ours, theirs, texts)
    unk = ours.token_to_id("[UNK]")
    assert sum(e.ids.count(unk) for e in ours.encode_batch(texts, workers=1)) > 20


def test_reordering_and_added_tokens_take_the_reference_path() -> None:
    """A text where NFD may reorder marks, or holding an added token, is encoded by the reference
    pipeline, in the same batch as lazily built ones."""
    ours, theirs = _wordpiece()
    texts = ["plain text", "\U0001d165\u0301x marks", "with [SEP] inside", "more plain text"]
    encodings = ours.encode_batch(texts, add_special_tokens=False, workers=1)
    assert [isinstance(e, LazyEncoding) for e in encodings] == [True, False, False, True]
    assert_same(encodings, theirs.encode_batch(texts, add_special_tokens=False), texts)


def _eager(tokenizer, inputs, **options):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lazy_encodings, "lazy_sequences", lambda *args: None)
        return tokenizer.encode_batch(inputs, workers=1, **options)


@pytest.mark.parametrize("first", ["offsets", "tokens", pytest.param("overflowing", marks=pytest.mark.full)])
def test_lazy_fields_equal_eager_ones_whichever_is_read_first(first: str) -> None:
    ours, _ = _wordpiece()
    ours.enable_truncation(16, stride=3)
    ours.enable_padding()
    texts = short(held_out(3_000) + ALIGNMENT)[:120]
    items = texts[:40] + list(zip(texts[40::2], texts[41::2]))
    lazy, eager = ours.encode_batch(items, workers=1), _eager(ours, items)
    assert any(isinstance(e, LazyEncoding) for e in lazy)
    for a, b in zip(lazy, eager):
        assert type(b) is Encoding
        getattr(a, first)
        assert a == b and b == a


def test_unread_fields_are_never_computed() -> None:
    ours, _ = _wordpiece()
    encodings = ours.encode_batch(held_out(2_000)[:50], workers=1)
    assert all(isinstance(e, LazyEncoding) for e in encodings)
    assert sum(len(e.ids) for e in encodings) > 0
    for e in encodings:
        assert {"tokens", "offsets", "attention_mask"} <= set(e.__dict__["_pending"])


@pytest.mark.parametrize("name", ["wordpiece-30k", "bytebpe-50k"])
def test_templates_in_one_step_equal_the_post_processor_and_tokenizers(name: str, monkeypatch) -> None:
    """BertProcessing / RobertaProcessing (trimmed offsets) around a lazily built single text are
    built in one step (:mod:`toktools.engines.lazy_templates`), for every such text of the batch:
    the same encodings as the post-processor's own parts and as ``tokenizers``."""
    from toktools.engines import lazy_templates

    if name == "bytebpe-50k":
        from test_lazy_encodings import _load

        ours = _load(name)
        theirs = tokenizers.Tokenizer.from_str(json.dumps(ours.to_tokenizer_json()))
    else:
        ours, theirs = _wordpiece(name)
    texts = held_out(3_000) + fuzz(40) + ALIGNMENT
    framed = []
    original = lazy_templates._framed
    monkeypatch.setattr(lazy_templates, "_framed", lambda *args: framed.append(original(*args)) or framed[-1])
    encodings = ours.encode_batch(texts, workers=1)
    assert len(framed) == len(texts) and sum(e is not None for e in framed) > len(texts) // 2  # not: added tokens
    frame = lazy_templates.template_frame
    monkeypatch.setattr(lazy_templates, "template_frame", lambda *args: None)
    assert encodings == ours.encode_batch(texts, workers=1)
    assert_same(encodings, theirs.encode_batch(texts), texts)
    monkeypatch.setattr(lazy_templates, "template_frame", frame)
    framed.clear()
    configure(ours, theirs, "pad")  # padding after the one-step template (no truncation)
    padded = ours.encode_batch(texts[:200], workers=1)
    assert sum(e is not None for e in framed) > 100
    assert_same(padded, theirs.encode_batch(texts[:200]), texts[:200])


def test_a_changed_model_is_not_served_from_the_old_batches_cache() -> None:
    """The words cache is the model's as it is now: changing ``max_input_chars_per_word``
    between two batches changes the result, as it does in ``tokenizers``."""
    ours, _ = _wordpiece()
    texts = held_out(2_000)[:30]
    before = ours.encode_batch(texts, workers=1)
    ours.model.max_input_chars_per_word = 4
    _, theirs = _wordpiece(max_chars=4)
    after = ours.encode_batch(texts, workers=1)
    assert after != before
    assert_same(after, theirs.encode_batch(texts), texts)
