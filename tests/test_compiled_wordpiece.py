"""The compiled WordPiece of the lazy WordPiece batches (:mod:`toktools.models.wordpiece.compiled`):
``encode_batch`` through it equal to ``tokenizers`` in every field, on held-out English and
Chinese, the fuzz corpus, texts where BertNormalizer moves offsets, long documents and Chinese
without spaces, unknown and over-long words; and the same without it (its machine code not kept)."""

from __future__ import annotations

import pytest
from test_compiled_split import long_documents
from test_lazy_encodings import assert_same, fuzz, held_out
from test_lazy_wordpiece import ALIGNMENT, _wordpiece

from toktools.encoding import LazyEncoding
from toktools.engines import lazy_encodings
from toktools.models.wordpiece import compiled
from toktools.runtime.machine_code import kernel

WORDS = [
    "unbelievable tokenization ##ing # ## ###x a##b",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101 + " " + "qzxqzxqzxq" * 9,
    "thé quick brøwn fox 狐狸跳过了懒狗 jumps",
]


@pytest.fixture(autouse=True)
def every_batch_lazy(monkeypatch) -> None:
    monkeypatch.setattr(lazy_encodings, "COLD_MIN_CHARS", 0)
    monkeypatch.setattr(lazy_encodings, "WARM_MIN_CHARS", 0)
    assert kernel(*compiled._KERNEL) is not None  # compiled once per machine (the user cache keeps it)


@pytest.mark.parametrize("with_kernel", [True, False])
def test_batches_with_and_without_it_match_tokenizers(with_kernel: bool, monkeypatch) -> None:
    if not with_kernel:  # as where its machine code is not kept: the Python way, a compile started
        started = []
        monkeypatch.setattr(compiled, "kept", lambda: False)
        monkeypatch.setattr(compiled, "start_compiling", lambda: started.append(True))
    ours, theirs = _wordpiece()
    texts = held_out(4_000) + fuzz(80) + ALIGNMENT + WORDS + long_documents()
    encodings = ours.encode_batch(texts, workers=1)
    assert (lazy_encodings._builder(ours).compiled is not None) is with_kernel
    if not with_kernel:
        assert started
    assert isinstance(encodings[-1], LazyEncoding)
    assert_same(encodings, theirs.encode_batch(texts), texts)


def test_few_characters_per_word_and_no_normalizer() -> None:
    for ours, theirs in (_wordpiece(max_chars=6), _wordpiece(normalizer=None)):
        texts = held_out(2_000) + ALIGNMENT + WORDS
        encodings = ours.encode_batch(texts, workers=1)
        assert lazy_encodings._builder(ours).compiled is not None
        assert_same(encodings, theirs.encode_batch(texts), texts)


@pytest.mark.full
def test_bert_base_chinese_and_cased() -> None:
    texts = held_out() + fuzz() + ALIGNMENT + WORDS + long_documents()
    for ours, theirs in (_wordpiece("bert-base-chinese"), _wordpiece(normalizer={"lowercase": False})):
        encodings = ours.encode_batch(texts, workers=1)
        assert lazy_encodings._builder(ours).compiled is not None
        assert_same(encodings, theirs.encode_batch(texts), texts)
