"""The compiled jieba segmentation (toktools/analysis/han_segmenter.py) and the word rule over a
chunk's arrays (words.segmented_starts) against jieba itself and the per-document rule."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from conftest import read_corpus_sample

jieba = pytest.importorskip("jieba")
np = pytest.importorskip("numpy")

from toktools.analysis import han_segmenter, words  # noqa: E402

#: jieba's own class of Chinese characters: within it, ``lcut(HMM=False)`` is the dictionary route
_JIEBA_HAN = re.compile("[\u4e00-\u9fd5]+")


def _compiled(table: han_segmenter.DictionaryTable | None = None) -> han_segmenter.HanSegmenter:
    from toktools.runtime.machine_code import kernel

    shipped = han_segmenter.segmenter()
    if shipped is None:
        pytest.skip("no compiled kernel here (numba missing)")
    return shipped if table is None else han_segmenter.HanSegmenter(table, kernel(*han_segmenter._KERNEL))


def _lcut_spans(segmenter: object, run: str) -> list[tuple[int, int]]:
    spans, at = [], 0
    for word in segmenter.lcut(run, HMM=False):  # type: ignore[attr-defined]
        spans.append((at, at + len(word)))
        at += len(word)
    return spans


def _runs(text: str) -> list[str]:
    return [m.group() for m in re.finditer(f"[{words.HAN}]+", text)]


def _check_shipped(text: str, minimum: int) -> None:
    compiled = _compiled()
    loop = words._chinese_words()  # the loop path's own ChineseWords (jieba loaded once a process)
    reference = loop._segmenter  # jieba.Tokenizer() of the shipped dictionary
    runs = _runs(text)
    assert len(runs) >= minimum
    for run in runs:
        assert compiled.words(run) == loop.dictionary_words(run), run
        if _JIEBA_HAN.fullmatch(run):
            assert compiled.words(run) == _lcut_spans(reference, run), run


def test_shipped_dictionary_words_equal_jiebas():
    """Every Chinese run of samples of the shared corpora: the kernel's words are the Python
    loop's and ``jieba.lcut(run, HMM=False)``'s."""
    text = read_corpus_sample("zh_wiki_sample.txt", 40_000) + read_corpus_sample("zh_novels.txt", 40_000)
    _check_shipped(text + "豈更車\u3400\u4dbf\U00020000\U0002a6df\uf9ff\u9fff", 1000)


@pytest.mark.full
def test_shipped_dictionary_words_equal_jiebas_whole_corpora():
    text = "".join(read_corpus_sample(name, 10**9) for name in ("zh_wiki_sample.txt", "zh_novels.txt"))
    _check_shipped(text, 100_000)


#: A dictionary with ties between routes (甲|乙丙 and 甲乙|丙 sum the same logs), a word of
#: frequency 0 (a prefix only), a repeated word (jieba keeps the last, counts both in the total)
#: and characters it lacks (庚).
_TIES = "甲 2\n乙丙 3\n甲乙 3\n丙 2\n丁戊己 0\n丁戊 4\n戊 1\n己 5\n乙 7\n戊己 5\n己甲乙丙 1\n甲乙丙丁 6\n丁 9\n丁 3\n"


def test_adversarial_dictionary_routes_equal_jiebas(tmp_path: Path):
    """Random runs over a small dictionary built for ties and odd entries, every length to 14:
    the kernel (table built by the module) == the Python loop == jieba's lcut."""
    from toktools.pretraining.masking import ChineseWords

    path = tmp_path / "dict.txt"
    path.write_text(_TIES, encoding="utf-8")
    compiled = _compiled(han_segmenter._table_of(path.read_bytes()))
    loop = ChineseWords(path)
    reference = jieba.Tokenizer(dictionary=str(path))
    reference.initialize()
    alphabet = "甲乙丙丁戊己庚"
    rng = random.Random(27)
    runs = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))) for _ in range(1500)]
    runs += ["甲乙丙", "庚", "甲乙丙丁", "己甲乙丙丁戊己", "丁戊己"]
    tied = 0
    for run in runs:
        expected = _lcut_spans(reference, run)
        assert compiled.words(run) == loop.dictionary_words(run) == expected, run
        tied += "甲乙丙" in run
    assert tied > 20
    assert compiled.words("甲乙丙") == [(0, 2), (2, 3)]  # the tie goes to the longer first word


def test_many_runs_in_one_call_and_bad_runs_refused():
    compiled = _compiled()
    text = "我是中国人，他们在北京。"
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    marks = np.zeros(len(points), dtype=np.uint8)
    count = compiled.mark_words(points, np.array([0, 6]), np.array([5, 11]), marks)
    expected = [s for s, _ in compiled.words(text[:5])] + [6 + s for s, _ in compiled.words(text[6:11])]
    assert np.flatnonzero(marks).tolist() == expected and count == len(expected) > 4
    with pytest.raises(ValueError):
        compiled.mark_words(points, np.array([3]), np.array([3]), marks)
    with pytest.raises(ValueError):
        compiled.mark_words(points, np.array([0]), np.array([5]), np.zeros(3, dtype=np.uint8))


def test_table_entry_round_trip_and_damage():
    table = han_segmenter.build_table({"中": 3, "中国": 5, "中国人": 0, "人": 2}, 10)
    assert table.chars.tolist() == [0, ord("中"), ord("人"), ord("国"), ord("人")]
    assert table.first.tolist() == [1, 3, 4, 4, 5, 5]  # 人 (node 2) has no children
    back = han_segmenter._unpacked(han_segmenter._packed(table))
    assert back is not None and np.array_equal(back.first, table.first) and back.unknown == table.unknown
    assert np.array_equal(back.scores, table.scores, equal_nan=True)
    assert han_segmenter._unpacked(b"not an npz") is None


# --- the word rule over a chunk's arrays (words.segmented_starts, ChunkText) -----------------


def _texts() -> list[str]:
    lines = read_corpus_sample("zh_wiki_sample.txt", 6_000) + read_corpus_sample("mixed_sample.txt", 6_000)
    odd = [
        "中文，夹杂English和数字123。かなカナｶﾀ ไทย ລາວ ខ្មែរ မြန်မာ",
        "中",
        "文",  # a run across two documents stays two runs
        "",
        " 中国 \u3000人民\t豈\U0002b820\U0002b920𠀀x",
        "あ中い",
    ]
    return odd + [line for line in lines.split("\n") if line.strip()]


@pytest.mark.parametrize("mode", ["compiled", "loop", "no jieba"])
def test_chunk_words_equal_the_rule_per_document(mode: str, monkeypatch):
    """The word starts and counts ChunkText gets from the arrays equal words.word_spans of each
    document, with the kernel, with the Python loop, and per character without jieba."""
    from toktools.analysis.chunk_tally import ChunkText

    if mode == "compiled":
        _compiled()
    else:
        monkeypatch.setattr(han_segmenter, "segmenter", lambda: None)
    if mode == "no jieba":
        monkeypatch.setattr(words, "_chinese_words", lambda: None)
    texts = _texts()
    chunk = ChunkText(texts)
    expected = np.zeros(chunk.characters, dtype=bool)
    counts = dict.fromkeys(words.SOURCES, 0)
    for k, text in enumerate(texts):
        starts, _, made = words.word_spans(text)
        expected[[int(chunk.base[k]) + s for s in starts]] = True
        for source in counts:
            counts[source] += made[source]
    found = np.diff(chunk.word_of, prepend=-1) > 0
    assert np.array_equal(found, expected)
    assert chunk.segmentation == counts
    assert counts["jieba" if mode != "no jieba" else "per character"] > 500
