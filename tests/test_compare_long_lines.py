"""`compare --corpus` on a line longer than a segment: counted on the fast paths (tiktoken,
word caches, ``tokenizers``) in the pieces the aligned pipeline counted it in, with the report
that pipeline gave: the expected report is computed with the long path switched off (each piece
of a long document encoded by the reference and tallied token by token, as before), never
copied from the new code; token counts are checked against ``tokenizers`` encoding the whole
line. The default run lowers the segment (1 Mi characters) so that lines of
a few hundred kilobytes take the long path; the ``full`` tests run the real sizes, and the peak
memory of a 50 MB line."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import real_shapes
from conftest import ref_vocab_dir

import toktools
from toktools.analysis import compare_chunks, disagreement, han_segmenter, long_tally, words
from toktools.analysis.corpus_compare import compare_corpus
from toktools.corpus import long_documents
from toktools.errors import ToktoolsError

pytestmark = pytest.mark.shared
SHOW = 3
GIB = 1 << 30


@functools.cache
def _tokenizers() -> list[tuple[str, object]]:
    """The four of the measurements: two shipped, two published (BERT pads Chinese characters;
    bytebpe-50k trims offsets with a prefix space, so each piece's first token is its own case)."""
    return [
        ("wordpiece-30k", toktools.load("wordpiece-30k")),
        ("bytebpe-50k", toktools.load("bytebpe-50k")),
        ("bert-base-uncased", toktools.load(str(ref_vocab_dir("bert-base-uncased")))),
        ("gpt2", toktools.load(str(ref_vocab_dir("gpt2")))),
    ]


def _library(tokenizer):
    import tokenizers

    library = tokenizers.Tokenizer.from_str(json.dumps(tokenizer.to_tokenizer_json()))
    library.no_truncation()
    library.no_padding()
    return library


def _fast_and_reference(tokenizers, paths, monkeypatch, long: int = 1, **options) -> tuple[dict, dict]:
    """The report as counted now, and as it was counted before: each piece of a long document
    encoded by the reference's aligned pipeline and tallied token by token (the other documents
    on the fast paths in both, as before); each run checked to have taken its own way for its
    ``long`` long documents."""
    calls = {"fast": 0, "pieces": 0}
    count_long, count_pieces = long_tally.count_long, compare_chunks._count_long

    def fast(*args, **kwargs):
        calls["fast"] += 1
        return count_long(*args, **kwargs)

    def pieces(*args, **kwargs):
        calls["pieces"] += 1
        return count_pieces(*args, **kwargs)

    monkeypatch.setattr(long_tally, "count_long", fast)
    monkeypatch.setattr(compare_chunks, "_count_long", pieces)
    new = compare_corpus(tokenizers, paths, workers=1, show=SHOW, **options)
    assert calls == {"fast": long, "pieces": 0}
    cuttable, known = long_documents.tokenizer_cuttable, {}

    def remembered(tokenizer) -> bool:  # the same answer, without serialising the model each time
        if id(tokenizer) not in known:
            known[id(tokenizer)] = cuttable(tokenizer)
        return known[id(tokenizer)]

    with monkeypatch.context() as patched:
        patched.setattr(compare_chunks, "USE_LONG_ARRAYS", False)
        patched.setattr(long_documents, "tokenizer_cuttable", remembered)
        old = compare_corpus(tokenizers, paths, workers=1, show=SHOW, **options)
    assert calls["pieces"] == long * len(tokenizers)
    for name, stats in new.metrics.items():  # the order the efficiencies are summed in, unrounded
        assert list(stats.token_counts.items()) == list(old.metrics[name].token_counts.items())
        assert (stats.shannon_efficiency, stats.renyi_efficiency) == (
            old.metrics[name].shannon_efficiency,
            old.metrics[name].renyi_efficiency,
        )
    return new.to_dict(), old.to_dict()


def _uncuttable(tmp_path: Path):
    """bytebpe-50k behind an NFC normaliser: a byte-level BPE with a normaliser is never cut."""
    document = toktools.load("bytebpe-50k").to_tokenizer_json()
    document["normalizer"] = {"type": "NFC"}
    (tmp_path / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    tokenizer = toktools.load(str(tmp_path / "tokenizer.json"))
    assert not long_documents.tokenizer_cuttable(tokenizer)
    return tokenizer


def test_long_lines_among_ordinary_ones_are_counted_as_the_aligned_pipeline_counted_them(
    tmp_path: Path, monkeypatch
) -> None:
    """A 14 KB line (English with Chinese runs, a CRLF line end) and 3,500 Chinese characters
    without a space (one piece for everyone) between ordinary lines, a blank one among them;
    lines over 3,000 characters are long here (the real segment is 1 Mi characters) and go
    6,000 characters of pieces at a time; a tokenizer that may not be cut counts each long
    line whole while the others count its pieces. The same report, byte for byte, places
    included, and every tokenizer's tokens those of ``tokenizers``."""
    monkeypatch.setattr(long_documents, "SEGMENT_CHARS", 3_000)
    monkeypatch.setattr(compare_chunks, "CHUNK_CHARS", 6_000)
    # Chinese words one per character on both sides (as without jieba): loading jieba's own
    # dictionary for the token-by-token tally would cost more than the rest; the full tests use it
    monkeypatch.setattr(words, "_chinese_words", lambda: None)
    monkeypatch.setattr(han_segmenter, "segmenter", lambda: None)
    line = real_shapes.single_line(tmp_path / "line.txt", 14_000).read_text(encoding="utf-8")
    chinese = "".join(real_shapes.chinese_lines()[:100]).replace(" ", "").replace("\u3000", "")[:3_500]
    ordinary = real_shapes.english_lines()[:6] + real_shapes.chinese_lines()[:3]
    rows = [*ordinary[:4], line, "  ", *ordinary[4:], chinese, "short line"]
    corpus = tmp_path / "c.txt"
    corpus.write_bytes("".join(row + ("\r\n" if row is line else "\n") for row in rows).encode("utf-8"))
    tokenizers = [*_tokenizers()[:2], ("nfc-bytebpe", _uncuttable(tmp_path))]
    kept = []
    add_group = disagreement.LongMarks.add_group

    def watched(self, start, marks, characters):
        kept.append(len(marks))
        return add_group(self, start, marks, characters)

    monkeypatch.setattr(disagreement.LongMarks, "add_group", watched)
    new, old = _fast_and_reference(tokenizers, [str(corpus)], monkeypatch, long=2)
    assert 2 in kept and 1 in kept  # the English line: two cuts, boundaries kept until all are in
    assert json.dumps(new, ensure_ascii=False, indent=2) == json.dumps(old, ensure_ascii=False, indent=2)
    assert len(new["shown"]) == SHOW and any(place["line"] == 5 for place in new["shown"])
    documents = [row for row in rows if row.strip()]
    for name, tokenizer in tokenizers:
        expected = _library(tokenizer).encode_batch(documents, add_special_tokens=False)
        assert new["metrics"][name]["tokens"] == sum(len(e.ids) for e in expected)
        assert new["metrics"][name]["documents"] == len(documents)


def test_a_piece_too_long_is_refused_as_the_piece_by_piece_count_refused_it(tmp_path: Path, monkeypatch) -> None:
    """A line without a safe cut longer than the longest piece (4 Mi characters; 40,000 here)."""
    from toktools.corpus import documents

    monkeypatch.setattr(long_documents, "SEGMENT_CHARS", 20_000)
    monkeypatch.setattr(documents, "MAX_UNCUT_CHARS", 40_000)
    corpus = tmp_path / "zh.txt"
    corpus.write_text("short line\n" + "我们" * 25_000 + "\n", encoding="utf-8")
    tokenizers = _tokenizers()[:2]
    with pytest.raises(ToktoolsError) as new:
        compare_corpus(tokenizers, [str(corpus)], workers=1, show=SHOW)
    with monkeypatch.context() as patched:
        patched.setattr(compare_chunks, "USE_LONG_ARRAYS", False)
        with pytest.raises(ToktoolsError) as old:
            compare_corpus(tokenizers, [str(corpus)], workers=1, show=SHOW)
    assert str(new.value) == str(old.value)
    assert "zh.txt, line 2: document longer than 0 Mi characters in one piece and it holds no space" in str(new.value)


@pytest.mark.parametrize("block", [7, 97, 1000])
def test_the_window_picker_picks_what_the_whole_array_picks(block: int, monkeypatch) -> None:
    """Weights fed a block at a time (and the best windows kept between blocks) give the places
    that scoring the whole document at once gives."""
    monkeypatch.setattr(disagreement, "_PICK_BLOCK", block)
    rng = np.random.default_rng(block)
    for _ in range(30):
        length = int(rng.integers(0, 4_000))
        density = float(rng.random())
        weights = (rng.random(length) < density).astype(np.uint8) + (rng.random(length) < density / 3)
        n = int(rng.integers(1, 5))
        whole = disagreement._pick_arrays(weights.astype(np.int64), np.array([0, length]), n)
        assert [vars(p) for p in disagreement._pick_long(weights, n)] == [vars(p) for p in whole]


# ---------------------------------------------------------------------------------------------
# Real sizes (full)
# ---------------------------------------------------------------------------------------------


@pytest.mark.full
@pytest.mark.parametrize("shape", ["single_line", "chinese"])
def test_a_3_mb_line_at_the_real_segment_size(shape: str, tmp_path: Path, monkeypatch) -> None:
    corpus = tmp_path / "c.txt"
    if shape == "single_line":
        real_shapes.single_line(corpus, 3_000_000)
    else:  # 1.2 M Chinese characters without a space: one piece
        text = "".join(real_shapes.chinese_lines()).replace(" ", "").replace("\u3000", "")
        corpus.write_text((text * 4)[:1_200_000] + "\n", encoding="utf-8")
    new, old = _fast_and_reference(_tokenizers(), [str(corpus)], monkeypatch)
    assert new == old


@pytest.mark.full
def test_peak_memory_of_a_50_mb_line_with_four_tokenizers(tmp_path: Path) -> None:
    from test_long_documents import peak_memory

    line = real_shapes.single_line(tmp_path / "line.txt", 50_000_000)
    names = ["wordpiece-30k", "bytebpe-50k", str(ref_vocab_dir("bert-base-uncased")), str(ref_vocab_dir("gpt2"))]
    code, peak, last = peak_memory("compare", *names, "--corpus", str(line), "--show", "3", "--json")
    assert code == 0, last
    assert peak <= GIB, f"{peak / 2**20:.0f} MiB"


@pytest.mark.full
def test_a_20_mb_json_lines_record(tmp_path: Path) -> None:
    from test_long_documents import peak_memory

    text = real_shapes.single_line(tmp_path / "line.txt", 20_000_000).read_text(encoding="utf-8")
    corpus = tmp_path / "c.jsonl"
    with corpus.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"text": "a short record"}) + "\n")
        handle.write(json.dumps({"text": text.replace(". ", ".\n", 1_000)}, ensure_ascii=False) + "\n")
    names = ["bytebpe-50k", "wordpiece-30k"]
    code, peak, last = peak_memory("compare", *names, "--corpus", str(corpus), "--field", "text", "--show", "3")
    assert code == 0, last
    assert peak <= GIB, f"{peak / 2**20:.0f} MiB"
    report = compare_corpus([(n, toktools.load(n)) for n in names], [str(corpus)], json_field="text", show=0)
    library = _library(toktools.load("bytebpe-50k"))
    expected = len(library.encode("a short record", add_special_tokens=False).ids) + len(
        library.encode(text.replace(". ", ".\n", 1_000), add_special_tokens=False).ids
    )
    assert report.metrics["bytebpe-50k"].tokens == expected
