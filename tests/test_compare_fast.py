"""`compare --corpus` on the fast path (ids and offsets from ``tokenizers``) reports what the
reference's aligned pipeline reports: the expected value is computed with the fast encoder
switched off (every document encoded by the reference, as before), never copied from the new
code. Sampled corpora in the default run; the shared corpora whole under ``full``."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from conftest import corpus_path, read_corpus_sample, ref_vocab_dir

import toktools
from toktools.analysis import compare_chunks, fast_offsets, token_view
from toktools.analysis.corpus_compare import compare_corpus


@functools.cache
def _tokenizers() -> list[tuple[str, object]]:
    return [
        ("bert-base-uncased", toktools.load(str(ref_vocab_dir("bert-base-uncased")))),
        ("gpt2", toktools.load(str(ref_vocab_dir("gpt2")))),
        ("bytebpe-50k", toktools.load("bytebpe-50k")),
    ]


def _both(paths: list[str], monkeypatch: pytest.MonkeyPatch, **options):
    fast = compare_corpus(_tokenizers(), paths, workers=1, **options).to_dict()
    with monkeypatch.context() as patched:
        patched.setattr(fast_offsets, "_library_encoder", lambda tokenizer: None)
        patched.setattr(compare_chunks, "USE_ARRAYS", False)
        reference = compare_corpus(_tokenizers(), paths, workers=1, **options).to_dict()
    return fast, reference


def test_fast_statistics_equal_the_reference_pipeline(tmp_path: Path, monkeypatch):
    paths = []
    for name, size in [("mixed_sample.txt", 12_000), ("zh_wiki_sample.txt", 8_000)]:
        paths.append(tmp_path / name)
        paths[-1].write_text(read_corpus_sample(name, size), encoding="utf-8")
    fast, reference = _both([str(p) for p in paths], monkeypatch, show=2)
    assert fast["metrics"]["gpt2"]["tokens"] > 0 and fast["metrics"]["gpt2"]["byte_piece_chars"] > 0
    assert len(fast["shown"]) == 2
    assert fast == reference


def test_fast_offsets_are_the_reference_offsets():
    text = read_corpus_sample("mixed_sample.txt", 3_000).splitlines()
    for _, tokenizer in _tokenizers():
        plain = token_view.without_truncation(tokenizer)
        encode = fast_offsets._library_encoder(plain)
        assert encode is not None
        expected = [(e.ids, [tuple(o) for o in e.offsets]) for e in plain.encode_batch(text, add_special_tokens=False)]
        assert [(ids, [tuple(o) for o in offsets]) for ids, offsets in encode(text)] == expected


@pytest.mark.full
@pytest.mark.parametrize("name", ["mixed_sample.txt", "zh_wiki_sample.txt", "zh_novels.txt"])
def test_fast_statistics_equal_the_reference_pipeline_whole_corpora(name: str, monkeypatch):
    fast, reference = _both([str(corpus_path(name))], monkeypatch, show=3)
    assert fast == reference


def test_labels_of_tokenizer_files_are_their_folders():
    from toktools.commands.compare import _labels

    assert _labels(["../x/gpt2/tokenizer.json", "models/bert/vocab.txt", "bytebpe-50k"]) == [
        "gpt2",
        "bert",
        "bytebpe-50k",
    ]
    # two tokenizers with the same folder name: toktools.analysis.labels (tests/test_plots_many.py)
    first, second = _labels(["a/gpt2/tokenizer.json", "b/gpt2/tokenizer.json"])
    assert first != second


def test_efficiencies_by_hand():
    from toktools.analysis.segstats import SegmentStats

    # ids 1,1,2,3 of a vocabulary of 4: p = 1/2, 1/4, 1/4
    stats = SegmentStats(1, 4, 4, 4, 1, 0, 0, 0, 0, token_counts={1: 2, 2: 1, 3: 1}, vocab_size=4, renyi_alpha=2.0)
    assert stats.shannon_efficiency == pytest.approx(1.5 / 2)  # H = 1.5 bits, log2 4 = 2
    # H_2 = -log2(1/4 + 1/16 + 1/16) = log2(8/3)
    assert stats.renyi_efficiency == pytest.approx(math.log2(8 / 3) / 2)
    assert (stats.seen, stats.seen_well) == (3, 0)
    data = stats.to_dict()["vocabulary"]
    assert data == {"size": 4, "seen": 3, "seen_share": 0.75, "seen_10": 0, "seen_10_share": 0.0}


@pytest.mark.parametrize("alpha", [2.5, 3.0])
def test_efficiencies_equal_tokenization_scorer(alpha: float, tmp_path: Path):
    scorer = pytest.importorskip("tokenization_scorer.metrics")
    lines = read_corpus_sample("mixed_sample.txt", 6_000).splitlines()
    path = tmp_path / "sample.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    name, tokenizer = _tokenizers()[1]
    result = compare_corpus([(name, tokenizer)], [str(path)], workers=1, show=0, renyi_alpha=alpha).metrics[name]
    plain = token_view.without_truncation(tokenizer)
    # the same tokens, as strings (ids would do: the package counts whatever it is given)
    tokens = [plain.encode(line, add_special_tokens=False).ids for line in lines if line.strip()]
    size = len(plain.get_vocab())
    expected_renyi = scorer._renyi_efficiency([list(map(str, t)) for t in tokens], power=alpha, vocab=size)
    expected_shannon = scorer._shannon_efficiency([list(map(str, t)) for t in tokens], vocab=size)
    assert result.vocab_size == size
    assert abs(result.renyi_efficiency - expected_renyi) < 1e-9
    assert abs(result.shannon_efficiency - expected_shannon) < 1e-9


def test_array_counts_equal_the_loop_on_odd_text(tmp_path: Path, monkeypatch):
    """Whitespace of every kind, Chinese cut into byte pieces, unknown characters, a document of
    spaces between words: the array counting and the per-token loop agree."""
    lines = [
        "a\u3000b\u00a0c\x1cd\x85e  f\tg",
        "我是中国人 emoji 🤗🤗 and ☃ snow",
        " \u2003 leading spaces and trailing   ",
        "x",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﬁ ligature ＡＢＣ full width",
    ]
    path = tmp_path / "odd.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tokenizers = _tokenizers() + [("bert-base-chinese", toktools.load(str(ref_vocab_dir("bert-base-chinese"))))]
    arrays = compare_corpus(tokenizers, [str(path)], workers=1, show=2).to_dict()
    monkeypatch.setattr(compare_chunks, "USE_ARRAYS", False)
    loop = compare_corpus(tokenizers, [str(path)], workers=1, show=2).to_dict()
    assert arrays["metrics"]["bert-base-chinese"]["unk_count"] > 0
    assert arrays["metrics"]["gpt2"]["byte_piece_chars"] > 0
    assert arrays == loop


def test_unused_lists_never_seen_tokens_longest_first(tmp_path: Path):
    from test_compare_corpus import CORPUS, tokenizers

    path = tmp_path / "tiny.txt"
    path.write_text(CORPUS, encoding="utf-8")
    result = compare_corpus(tokenizers(), [str(path)], workers=1, show=0, unused=1000)
    for name, tokenizer in tokenizers():
        seen = {tokenizer.id_to_token(i) for i in result.metrics[name].token_counts}
        unseen = [t for t in tokenizer.get_vocab() if t not in seen]
        listed = result.unused[name]
        assert len(listed) == len(unseen) > 0
        lengths = [len(t) for t in listed]
        assert lengths == sorted(lengths, reverse=True)
    assert "xyz" not in result.unused["wp"]  # never a token of this vocabulary, nor listed
    assert "the" not in result.unused["wp"] and "[CLS]" in result.unused["wp"]


# --- the per-word cache (toktools/analysis/word_spans.py) -------------------------------------

ODD_LINES = [
    "a\u3000b\u00a0c\x1cd\x85e  f\tg",  # \x1c and \x85: Python splits there, BERT does not
    "x\x0by\x0cz\u2028w\u2029v \x1d\x1e\x1f end",
    "我是中国人 emoji 🤗🤗 and ☃ snow [UNK] [CLS]x y[SEP]",
    " \u2003 leading spaces and trailing   ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﬁ ligature ＡＢＣ full width Café naïve ¨ ´x",
    "\x00\ufffd\u200b control only: \x07\x08 \u200b",
    "x",
    "ab中cd 中\u0301文 豈\U0002b820\U0002b920x a\U0002b820b 中[UNK]国 ｶ中カ1中,中##",  # Chinese characters cut alone
]


def _word_texts() -> list[list[str]]:
    """Two chunks (the second meets the first's words in the cache): odd lines, English,
    Chinese."""
    english = [line for line in read_corpus_sample("mixed_sample.txt", 8_000).splitlines() if line.strip()]
    chinese = [line for line in read_corpus_sample("zh_wiki_sample.txt", 4_000).splitlines() if line.strip()]
    return [ODD_LINES + english[: len(english) // 2] + chinese, english[len(english) // 2 :] + ODD_LINES]


def _word_tokenizers() -> list[tuple[str, object]]:
    return [
        ("bert-base-uncased", token_view.without_truncation(_tokenizers()[0][1])),
        ("bert-base-chinese", token_view.without_truncation(toktools.load(str(ref_vocab_dir("bert-base-chinese"))))),
        ("wordpiece-30k", token_view.without_truncation(toktools.load("wordpiece-30k"))),
    ]


@pytest.mark.parametrize("library", [True, False], ids=["tokenizers", "reference"])
def test_word_cache_gives_the_reference_ids_and_spans(library: bool, monkeypatch):
    """The arrays gathered from the per-word cache equal those made from the reference's own
    offsets of the whole documents, token for token, over two chunks and after the cache
    restarts; documents whose whitespace BERT does not split at are encoded whole."""
    import numpy as np

    from toktools.analysis import word_spans
    from toktools.analysis.chunk_tally import ChunkText, spans_of

    if not library:
        monkeypatch.setattr(fast_offsets, "_library_encoder", lambda tokenizer: None)
    chunks = _word_texts()
    for name, tokenizer in _word_tokenizers()[: 3 if library else 1]:
        for limit in (word_spans.MAX_WORDS, 50):
            monkeypatch.setattr(word_spans, "MAX_WORDS", limit)
            source = word_spans.word_spans(tokenizer)
            assert isinstance(source, word_spans.WordSpans), name
            assert source.threaded == library
            assert source.han_alone, name  # BERT pads Chinese characters: each is a unit
            for texts in chunks:
                chunk = ChunkText(texts)
                expected = spans_of(
                    chunk,
                    [(e.ids, e.offsets) for e in tokenizer.encode_batch(texts, add_special_tokens=False, workers=1)],
                )
                found = source.arrays(texts, chunk)
                for got, want in zip(found, expected):
                    assert np.array_equal(got, want), name
            if limit == 50:  # started again empty for the last chunk: only its words are kept
                assert len(source.index) == len(chunk.interned_words(True)[0]) > 50


def test_word_cache_separators_are_what_bert_splits_at():
    """BERT drops and splits at Unicode whitespace; Python's ``isspace`` also holds \\x1c-\\x1f
    (not whitespace to Rust), and BertNormalizer removes \\x0b, \\x0c and \\x85 (control
    characters) instead."""
    from toktools.analysis.fast_offsets import offsets_encoder
    from toktools.analysis.word_spans import _separators

    good, bad = _separators(offsets_encoder(_word_tokenizers()[0][1]))
    assert {" ", "\t", "\n", "\r", "\u3000", "\u00a0", "\u2028", "\u2029"} <= good
    assert {"\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85"} <= bad


def test_word_cache_only_for_pipelines_that_cut_words_alone():
    from toktools.analysis.word_spans import _split_words, han_separable, word_separable, word_spans

    assert word_spans(token_view.without_truncation(_tokenizers()[1][1])) is None  # gpt2: byte-level
    document = _tokenizers()[0][1].to_tokenizer_json()
    assert word_separable(document)
    spaced = {**document, "added_tokens": [*document["added_tokens"], {"id": 9, "content": "new york"}]}
    stripping = {**document, "added_tokens": [*document["added_tokens"], {"id": 9, "content": "<m>", "lstrip": True}]}
    metaspace = {**document, "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"}}
    replace = {**document, "normalizer": {"type": "Sequence", "normalizers": [{"type": "Replace"}]}}
    for other in (spaced, stripping, metaspace, replace):
        assert not word_separable(other)
    # Chinese characters cut alone only where BertNormalizer pads them and no added token holds one
    assert han_separable(document)
    unpadded = {**document, "normalizer": {**document["normalizer"], "handle_chinese_chars": False}}
    chinese_token = {**document, "added_tokens": [*document["added_tokens"], {"id": 9, "content": "<中>"}]}
    assert not han_separable(unpadded) and not han_separable(chinese_token) and not han_separable(metaspace)
    # a token across the space between two joined words: not given back to words
    assert _split_words(["ab", "cd"], [1, 2], [(0, 2), (1, 5)]) is None
    ids, counts, starts, ends = _split_words(["ab", "cd"], [1, 2, 3], [(0, 1), (1, 2), (3, 5)])
    assert (ids.tolist(), counts.tolist(), starts.tolist(), ends.tolist()) == ([1, 2, 3], [2, 1], [0, 1, 0], [1, 2, 2])
