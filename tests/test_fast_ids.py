"""The ids-only path (toktools.engines.ids_only) gives exactly the ids of the reference pipeline
(``Tokenizer.encode(text, add_special_tokens=False).ids``) and of ``tokenizers``, on real
English, Chinese and mixed text, on the odd code points (where the ``regex`` module's Unicode
tables and Oniguruma's disagree, combining marks, whitespace runs, control characters, emoji,
lone CR), on special tokens written in the text, and on random text (hypothesis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import read_corpus_sample, ref_vocab_dir
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toktools.engines import ids_only as fast_ids
from toktools.engines import ids_words
from toktools.engines.analysis import probe_code_points, probe_text
from toktools.engines.base import corpus_document
from toktools.engines.ids_only import ids_encoder
from toktools.engines.reference import ReferenceEngine
from toktools.engines.tokenizers_engine import TokenizersEngine
from toktools.formats import load
from toktools.io.shipped import shipped_path
from toktools.models.bpe import bulk_merge as bpe_bulk
from toktools.models.bpe import vectorized_merge as bpe_vectorized

tokenizers = pytest.importorskip("tokenizers")

NAMES = ["gpt2", "bytebpe-50k", "bert-base-uncased", "bert-base-chinese", "wordpiece-30k"]
_loaded: dict[str, tuple] = {}


def _directory(name: str) -> Path:
    shipped = shipped_path(name)
    return shipped if shipped is not None else ref_vocab_dir(name)


def trio(name: str) -> tuple:
    """(the reference tokenizer, its ids-only encoder, tokenizers' own from the same files),
    without truncation or padding (gpt2's tokenizer.json truncates at 50)."""
    if name not in _loaded:
        directory = _directory(name)
        reference = load(directory)
        reference.no_truncation()
        reference.no_padding()
        published = directory / "tokenizer.json"
        if published.is_file():
            theirs = tokenizers.Tokenizer.from_file(str(published))
        else:  # bert-base-chinese ships vocab.txt + config only: tokenizers loads what toktools built
            theirs = tokenizers.Tokenizer.from_str(json.dumps(reference.to_tokenizer_json()))
        theirs.no_truncation()
        theirs.no_padding()
        _loaded[name] = (reference, ids_encoder(reference), theirs)
    return _loaded[name]


def assert_same_ids(name: str, texts: list[str]) -> None:
    reference, fast, theirs = trio(name)
    assert fast is not None, f"{name} is not recognised"
    ours = fast.encode_batch(texts)
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False, workers=1)]
    hf = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]
    for text, a, b, c in zip(texts, ours, expected, hf):
        assert a == b, f"{name}: fast ids differ from the reference on {text[:60]!r}"
        assert a == c, f"{name}: fast ids differ from tokenizers on {text[:60]!r}"


# ---------------------------------------------------------------------------------------------
# Which tokenizers it takes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_five_vocabularies_are_recognised(name: str) -> None:
    assert trio(name)[1] is not None


def test_other_pipelines_and_settings_are_refused() -> None:
    reference = load(_directory("gpt2"))
    assert ids_encoder(reference) is None  # its tokenizer.json truncates: encode would cut
    reference.no_truncation()
    assert ids_encoder(reference) is not None
    reference.enable_padding(length=8)
    assert ids_encoder(reference) is None
    # a Metaspace / NFKC pipeline is left to the reference
    doc = {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "\u2581a": 1}, "unk_token": "[UNK]"},
    }
    from toktools.formats import from_tokenizer_json

    assert ids_encoder(from_tokenizer_json(doc)) is None


# ---------------------------------------------------------------------------------------------
# Real text
# ---------------------------------------------------------------------------------------------

CORPORA = {"en": "en_wiki.txt.gz", "zh": "zh_wiki_sample.txt", "novels": "zh_novels.txt", "mixed": "mixed_sample.txt"}


@pytest.mark.parametrize("corpus", list(CORPORA))
@pytest.mark.parametrize("name", NAMES)
def test_corpus_samples(name: str, corpus: str) -> None:
    text = read_corpus_sample(CORPORA[corpus], 60_000, skip_lines=50)
    lines = [line for line in text.split("\n") if line]
    assert_same_ids(name, lines)
    # whole multi-line documents too (blank-line and file documents keep their newlines)
    assert_same_ids(name, [text[:20_000], text[20_000:40_000]])


# ---------------------------------------------------------------------------------------------
# Odd code points
# ---------------------------------------------------------------------------------------------

ODD_TEXTS = [
    "",
    " ",
    "  ",
    "\n",
    "\r",
    "a\rb",
    "\r\n\r\n",
    "line\r",
    "\t\t x",
    "x   \n  y  ",
    "end with spaces   ",
    "   leading",
    "\u00a0\u3000\u2028\u2029\u0085\u180e\u200b\ufeff",
    "a\x00b\x01c\x1fd\x7fe",
    "\x1c\x1d\x1e\x1f",
    "e\u0301 e\u0301\u0327 \u0915\u094d\u0937 n\u0303o\u0308",
    "\u1e9b\u0323 \u00c5\u212b \u0130stanbul \u00df",
    "emoji \U0001f600\U0001f468\u200d\U0001f469\u200d\U0001f467 \U0001f1ef\U0001f1f5 ok",
    "\U00020000\U0002a6d6 \U0001d400x",
    "中文English混合123，测试。",
    "天地玄黄宇宙洪荒日月盈昃辰宿列张" * 3,
    "ｆｕｌｌ　ｗｉｄｔｈ　１２３",
    "한국어 텍스트 입니다",
    "it's we've they'll I'd 'S 'LL",
    "$$$ ### 1,234.56 --- ...",
    "\u0660\u0661\u0662 \u00bd \u2460 \u2167",
    "<|endoftext|>",
    "a<|endoftext|>b",
    " <|endoftext|> ",
    "<|endoftext|><|endoftext|>x",
    "[CLS] hello [SEP] world [MASK]",
    "[cls] lower [Sep]",
    "x[PAD]y[UNK]z",
]


@pytest.mark.parametrize("name", NAMES)
def test_odd_code_points_and_specials(name: str) -> None:
    assert_same_ids(name, ODD_TEXTS)


@pytest.mark.parametrize("name", NAMES)
def test_where_regex_and_oniguruma_disagree(name: str) -> None:
    """Every code point of the disagreement table (and the spec's extras), in the probe's
    six contexts: the ids-only split never relies on ``regex``'s own tables."""
    assert_same_ids(name, probe_text(probe_code_points()))  # first, middle, last of each range


def test_every_disagreeing_code_point_against_tokenizers() -> None:
    """All of them (the reference is slow on these: tokenizers alone is the yardstick here)."""
    _, fast, theirs = trio("gpt2")
    texts = probe_text(probe_code_points(full=True))
    assert fast.encode_batch(texts) == [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]


@pytest.mark.parametrize("name", ["gpt2", "bert-base-uncased"])
def test_a_lone_surrogate_is_refused_like_the_reference(name: str) -> None:
    reference, fast, _ = trio(name)
    with pytest.raises(TypeError):
        reference.encode("bad \ud800", add_special_tokens=False)
    with pytest.raises(TypeError):
        fast.encode("bad \ud800")


# ---------------------------------------------------------------------------------------------
# Random text
# ---------------------------------------------------------------------------------------------

_POOL = (
    "abcxyz ABC 0129 '.,!?-_\t\n\r\x00\x1f\x7f\u00a0\u3000\u2028\u0301\u0327\u094d\u00e9\u00df\u0130\u212b"
    "中国人民天地的了是不我你他们大小文字測試한국\u3002\uff0c\U0001f600\U00020000\u200d<|>[]CLSEPMAK"
    "endoftxt"
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(list(_POOL)),
            st.sampled_from(["<|endoftext|>", "[SEP]", "[MASK]", "中国", " the", "'s"]),
            st.characters(blacklist_categories=("Cs",)),
        ),
        max_size=40,
    ).map("".join)
)
def test_random_text(text: str) -> None:
    for name in NAMES:
        assert_same_ids(name, [text])


# ---------------------------------------------------------------------------------------------
# Cutting CJK words where no merge reaches across
# ---------------------------------------------------------------------------------------------


def _byte_level_doc(merges: list[tuple[bytes, bytes]]) -> dict:
    from toktools.models.bpe.bytelevel import ALPHABET, bytes_to_symbols

    vocab = {symbol: i for i, symbol in enumerate(ALPHABET)}
    pairs = []
    for a, b in merges:
        left, right = bytes_to_symbols(a), bytes_to_symbols(b)
        vocab.setdefault(left + right, len(vocab))
        pairs.append([left, right])
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": pairs,
        },
    }


@pytest.mark.parametrize("cuts_after", [0.0, float("inf")], ids=["cut-at-once", "never-cut"])
def test_merges_across_partial_characters_are_never_cut(cuts_after: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vocabulary whose merges join the last byte of 中 with the first of 国 (a token made
    of two half characters), a whole 国中 token and merges inside characters: cutting at a
    boundary such a merge can cross would change the ids. The same ids whether the words are
    cut (as once merging has cost ``CUTS_AFTER_SECONDS``) or merged whole (a short job)."""
    monkeypatch.setattr(ids_words, "CUTS_AFTER_SECONDS", cuts_after)
    zhong, guo, min_ = "中".encode(), "国".encode(), "民".encode()  # E4 B8 AD, E5 9B BD, E6 B0 91
    merges = [
        (zhong[2:], guo[:1]),  # AD E5: across 中|国, half of each
        (min_[2:], zhong[:1]),  # 91 E4: across 民|中
        (zhong[:1], zhong[1:2]),
        (guo[1:2], guo[2:]),
        (zhong[:2], zhong[2:] + guo[:1]),  # E4 B8 + AD E5
        (zhong + guo[:1], guo[1:]),  # 中国, whole
        (min_[:1], min_[1:2]),
        (min_[:2], min_[2:]),
        (guo[:1], guo[1:]),
        (zhong[1:2], zhong[2:]),
    ]
    doc = _byte_level_doc(merges)
    from toktools.formats import from_tokenizer_json

    reference = from_tokenizer_json(doc)
    fast = ids_encoder(reference)
    assert fast is not None
    theirs = tokenizers.Tokenizer.from_str(json.dumps(doc))
    texts = ["中国", "国中", "中国中国国中民", "民中国民民国", "人中国人", "中民国", "x中国y", "国国中中"]
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False).ids
        assert fast.encode(text) == expected == theirs.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize("cuts_after", [0.0, float("inf")], ids=["cut-at-once", "never-cut"])
@pytest.mark.parametrize("name", ["gpt2", "bytebpe-50k"])
def test_chinese_runs_cut_or_whole_give_the_same_ids(
    name: str, cuts_after: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of CJK text are merged whole until a process has merged for ``CUTS_AFTER_SECONDS``,
    then in the parts no merge crosses: both give tokenizers' ids (a fresh encoder each time,
    so the threshold decides from the first word)."""
    monkeypatch.setattr(ids_words, "CUTS_AFTER_SECONDS", cuts_after)
    _, _, theirs = trio(name)
    reference = load(_directory(name))
    reference.no_truncation()  # gpt2's tokenizer.json truncates at 50
    fast = ids_encoder(reference)
    text = read_corpus_sample("zh_novels.txt", 20_000) + read_corpus_sample("zh_wiki_sample.txt", 20_000)
    lines = [line for line in text.split("\n") if line] + ODD_TEXTS
    assert [fast.encode(line) for line in lines] == [
        e.ids for e in theirs.encode_batch(lines, add_special_tokens=False)
    ]
    assert (fast.cache.compute._cuts is not None) == (cuts_after == 0.0)


# ---------------------------------------------------------------------------------------------
# The reference engine uses it, in worker processes for large batches
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bytebpe-50k", "bert-base-uncased"])
def test_reference_engine_in_workers(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toktools.engines.reference.PARALLEL_CHARS", 2_000)  # workers even for this small batch
    reference, _, theirs = trio(name)
    document = corpus_document(reference.to_tokenizer_json())
    engine = ReferenceEngine(document, workers=2)
    try:
        assert engine.fast is not None
        lines = [line for line in read_corpus_sample("mixed_sample.txt", 40_000).split("\n") if line]
        lines += ["", "<|endoftext|> [SEP]"]
        expected = TokenizersEngine(document).encode_batch(lines)
        assert engine.encode_batch(lines) == expected
        assert engine.encode_batch(lines[::-1]) == expected[::-1]  # the pool is kept and reused
    finally:
        engine.close()


def test_reference_engine_without_a_fast_path_still_encodes() -> None:
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2}, "unk_token": "[UNK]"},
    }
    engine = ReferenceEngine(doc, workers=1)
    assert engine.fast is None
    assert engine.encode_batch(["a b c", "ｂ"]) == [[1, 2, 0], [2]]


def test_reference_engine_without_a_fast_path_in_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toktools.engines.reference.PARALLEL_CHARS", 20)  # workers even for these few lines
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2}, "unk_token": "[UNK]"},
    }
    engine = ReferenceEngine(doc, workers=2)
    try:
        assert engine.fast is None
        lines = ["a b c", "ｂ", "b b a", "c"] * 50
        assert engine.encode_batch(lines) == [[1, 2, 0], [2], [2, 2, 1], [0]] * 50
        assert engine._pool is not None  # the batch really went to the workers
    finally:
        engine.close()


# ---------------------------------------------------------------------------------------------
# New words merged all at once (toktools.models.bpe.bulk_merge): numpy steps and the numba kernel
# ---------------------------------------------------------------------------------------------


def _corpus_words(name: str) -> list[str]:
    """Distinct words of real English, Chinese and mixed text, and of the odd texts."""
    _, fast, _ = trio(name)
    words: set[str] = set()
    for corpus in CORPORA.values():
        words.update(fast.words(read_corpus_sample(corpus, 30_000, skip_lines=10)))
    for text in ODD_TEXTS + probe_text(probe_code_points()):
        words.update(fast.words(text))
    words.add("a" * 300 + "中国人" * 100)  # long words: many numpy steps, finished in Python
    return sorted(words)


def _python_ids(name: str, words: list[str]) -> list[tuple[int, ...]]:
    bpe = trio(name)[1].cache.compute
    return [bpe.merge(word) for word in words]


@pytest.mark.parametrize("name", ["gpt2", "bytebpe-50k"])
@pytest.mark.parametrize("finish_below", [0, 2048])
def test_numpy_steps_merge_like_python(name: str, finish_below: int, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numpy")
    monkeypatch.setattr(bpe_vectorized.VectorMerger, "FINISH_BELOW", finish_below)
    words = _corpus_words(name)
    merger = trio(name)[1].cache.compute.bulk().vector()
    assert merger is not None and merger.plan.monotone  # both vocabularies were trained
    assert merger(words) == _python_ids(name, words)


@pytest.mark.parametrize("name", ["gpt2", "bytebpe-50k"])
def test_compiled_kernel_merges_like_python(name: str) -> None:
    pytest.importorskip("numba")
    words = _corpus_words(name)
    merger = trio(name)[1].cache.compute.bulk().compiled()
    assert merger is not None
    assert merger(words) == _python_ids(name, words)
    assert merger([]) == [] and merger(["a"]) == _python_ids(name, ["a"])


def test_merges_out_of_rank_order_take_one_step_per_merge() -> None:
    """A merge listed before the merge that makes its input (``a`` + ``bc`` before ``b`` +
    ``c``: not monotone), so one numpy step may merge only the leftmost best pair of a word."""
    pytest.importorskip("numpy")
    doc = _byte_level_doc([(b"c", b"d"), (b"a", b"bc"), (b"b", b"c"), (b"bc", b"bc"), (b"a", b"a"), (b"aa", b"a")])
    from toktools.formats import from_tokenizer_json

    reference = from_tokenizer_json(doc)
    bpe = ids_encoder(reference).cache.compute
    merger = bpe.bulk().vector()
    assert merger is not None and not merger.plan.monotone
    theirs = tokenizers.Tokenizer.from_str(json.dumps(doc))
    words = ["abcd", "abc", "bcbc", "abcabc", "aaaaaaa", "bcbcbcbca", "aabcaabcd", "dcba"] * 300  # past FINISH_BELOW
    expected = [tuple(theirs.encode(w, add_special_tokens=False).ids) for w in words]
    assert merger(words) == expected == [bpe.merge(w) for w in words]


def test_two_merges_making_one_token_are_left_to_python() -> None:
    """Not E2 (``ab`` from ``a b`` and from nothing else, ``abc`` from ``ab c`` and ``a bc``):
    a stale heap entry may then merge another pair's token, so no step over all words."""
    doc = _byte_level_doc([(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc")])
    from toktools.formats import from_tokenizer_json

    bpe = ids_encoder(from_tokenizer_json(doc)).cache.compute
    assert bpe_vectorized.plan(bpe.bulk().byte_ids, bpe.merge_map) is None
    assert bpe.bulk().vector() is None


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("name", ["gpt2", "bytebpe-50k"])
def test_batches_with_new_words_set_aside(name: str, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """encode_batch sets a batch's new words aside, merges them in bulk and encodes again the
    texts that missed one (added tokens and all), batch after batch."""
    pytest.importorskip("numba" if compiled else "numpy")
    monkeypatch.setattr(bpe_bulk, "VECTOR_MIN_WORDS", 1)
    monkeypatch.setattr(bpe_bulk, "COMPILED_AFTER_SECONDS", 0.0 if compiled else 1e9)
    monkeypatch.setattr(fast_ids, "BULK_MIN_WORDS", 1)
    reference, _, theirs = trio(name)
    fast = ids_encoder(reference)  # a cold cache of its own
    text = read_corpus_sample("mixed_sample.txt", 40_000)
    lines = [line for line in text.split("\n") if line] + ODD_TEXTS
    for batch in (lines[: len(lines) // 2], lines[len(lines) // 2 :], lines):
        fast._defer = True
        expected = [e.ids for e in theirs.encode_batch(batch, add_special_tokens=False)]
        assert fast.encode_batch(batch) == expected
    assert bool(fast.cache.compute.bulk()._compiled) is compiled  # the path meant was taken
    assert compiled or fast.cache.compute.bulk()._vector  # numpy merged the new words and parts


_RANDOM_TEXT = st.lists(
    st.one_of(
        st.sampled_from(list(_POOL)),
        st.sampled_from(["<|endoftext|>", "中国", " the", "'s"]),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=40,
).map("".join)


_bulk_encoders: dict[tuple[str, bool], object] = {}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_RANDOM_TEXT, min_size=1, max_size=30), st.booleans())
def test_random_batches_merged_in_bulk(texts: list[str], compiled: bool) -> None:
    if compiled:
        pytest.importorskip("numba")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bpe_bulk, "VECTOR_MIN_WORDS", 1)
        patch.setattr(bpe_bulk, "VECTOR_MAX_CHARS", 10_000)
        patch.setattr(bpe_bulk, "COMPILED_AFTER_SECONDS", 0.0 if compiled else 1e9)
        patch.setattr(bpe_vectorized.VectorMerger, "FINISH_BELOW", 0)
        patch.setattr(fast_ids, "BULK_MIN_WORDS", 1)
        for name in ("gpt2", "bytebpe-50k"):
            reference, _, theirs = trio(name)
            fast = _bulk_encoders.setdefault((name, compiled), ids_encoder(reference))
            fast.cache.clear()  # every word new: all of them merged in bulk
            fast._defer = True
            expected = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]
            assert fast.encode_batch(texts) == expected


def _unpack(flat: bytes, counts: bytes) -> list[list[int]]:
    from array import array

    ids, out = array("I", flat).tolist(), []  # ids: uint32; counts: int64
    for count in array("q", counts):
        out.append(ids[:count])
        ids = ids[count:]
    return out


@pytest.mark.parametrize("name", ["gpt2", "bytebpe-50k", "bert-base-uncased"])
def test_packed_ids_of_whole_texts(name: str) -> None:
    """What a worker sends back: with the compiled merge loaded, every word of the texts merged
    by it, no cache (texts with an added token the usual way); WordPiece packs its lists."""
    reference, _, theirs = trio(name)
    fast = ids_encoder(reference)
    if name != "bert-base-uncased":
        pytest.importorskip("numba")
        assert fast.cache.compute.bulk().compiled() is not None
    lines = [line for line in read_corpus_sample("mixed_sample.txt", 30_000).split("\n") if line]
    texts = lines + ODD_TEXTS + probe_text(probe_code_points())
    expected = [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)]
    assert _unpack(*fast.encode_packed(texts)) == expected
    assert _unpack(*fast.encode_packed(lines)) == expected[: len(lines)]  # no added token: one kernel call
    assert _unpack(*fast.encode_packed([])) == []


def test_reference_engine_workers_with_the_compiled_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numba")
    monkeypatch.setattr("toktools.engines.reference.PARALLEL_CHARS", 2_000)
    monkeypatch.setattr(bpe_bulk, "COMPILED_FORESEEN_SECONDS", 0.0)  # loaded before forking
    reference, _, _ = trio("bytebpe-50k")
    document = corpus_document(reference.to_tokenizer_json())
    engine = ReferenceEngine(document, workers=2)
    try:
        lines = [line for line in read_corpus_sample("zh_novels.txt", 40_000).split("\n") if line]
        lines += ["", "<|endoftext|> 中文 <|endoftext|>"]
        expected = TokenizersEngine(document).encode_batch(lines)
        assert engine.encode_batch(lines) == expected
        assert engine.fast.cache.compute.bulk()._compiled  # the workers had it
        assert engine.encode_batch(lines[::-1]) == expected[::-1]
    finally:
        engine.close()


def test_the_ids_paths_share_one_interface() -> None:
    """The reference engine talks to every ids-only path through ``fast_ids.IdsPath``."""
    from toktools.engines.ids_only import IdsPath

    for name in ("gpt2", "bert-base-uncased"):
        fast = trio(name)[1]
        for method in IdsPath.__dict__:
            if not method.startswith("_"):
                assert callable(getattr(fast, method)), (name, method)
    assert not trio("bert-base-uncased")[1].plans_compiled(10**12)  # WordPiece has no compiled merge


@pytest.mark.parametrize("workers", [1, 2])
def test_reference_engine_planned_for_a_large_input(workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """An input of COMPILED_PLANNED_BYTES or more: a zygote loads the compiled merge and forks the
    workers, with no timing involved and no first texts encoded here; the ids are tokenizers'
    (English, Chinese, added tokens, empty texts), batch after batch, for any worker count."""
    pytest.importorskip("numba")
    monkeypatch.setattr("toktools.engines.reference.PARALLEL_CHARS", 2_000)
    monkeypatch.setattr(bpe_bulk, "COMPILED_PLANNED_BYTES", 50_000)
    reference, _, _ = trio("bytebpe-50k")
    document = corpus_document(reference.to_tokenizer_json())
    lines = [
        line
        for line in (read_corpus_sample("zh_novels.txt", 40_000) + read_corpus_sample("en_wiki.txt.gz", 40_000)).split(
            "\n"
        )
        if line
    ]
    lines += ["", "<|endoftext|> 中文 <|endoftext|>", *ODD_TEXTS]
    expected = TokenizersEngine(document).encode_batch(lines)
    small = ReferenceEngine(document, workers=workers, input_bytes=49_999)
    assert small._pool is None  # below the size: the first texts decide, as before
    small.close()
    engine = ReferenceEngine(document, workers=workers, input_bytes=60_000)
    try:
        assert engine._zygote is (workers > 1)
        assert engine.encode_batch(lines) == expected
        assert engine.encode_batch(lines[::-1]) == expected[::-1]
        assert engine.encode_batch(lines[:1]) == expected[:1]  # a batch too small for the workers
        assert not engine.fast.cache.compute.bulk()._compiled or workers == 1  # never loaded here
    finally:
        engine.close()
    if workers > 1:
        with pytest.raises(RuntimeError):  # a closed engine forks nothing again
            engine.encode_batch(lines)


def test_scipy_linalg_is_hidden_only_while_loading() -> None:
    import sys

    had = sys.modules.get("scipy.linalg", 0)
    with bpe_bulk.without_scipy_linalg():
        if had == 0 and "numba.np.arraymath" not in sys.modules:
            with pytest.raises(ImportError):
                import scipy.linalg  # noqa: F401
    assert sys.modules.get("scipy.linalg", 0) is had
