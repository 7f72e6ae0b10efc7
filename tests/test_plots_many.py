"""``compare --plot`` with many tokenizers: nothing in the picture collides, every tokenizer is
named briefly, and unknown tokens have their own bar."""

from __future__ import annotations

from pathlib import Path

import pytest

from toktools import load
from toktools.analysis import plots
from toktools.analysis.corpus_compare import compare_corpus


@pytest.fixture(scope="module")
def figure(tmp_path_factory: pytest.TempPathFactory):
    """One picture of eight tokenizers (two shipped ones under long, clashing paths), drawn once."""
    pytest.importorskip("matplotlib")
    folder = tmp_path_factory.mktemp("plots")
    corpus = folder / "corpus.txt"
    corpus.write_text("The 🜁 planetarium projected stars.\n天文馆的穹顶上投影着星空。\n" * 3, encoding="utf-8")
    names = [f"/very/long/path/number-{i}/{'bytebpe' if i % 2 else 'wordpiece'}/tokenizer.json" for i in range(8)]
    counted = compare_corpus([(n, load(n)) for n in ("wordpiece-30k", "bytebpe-50k")], [str(corpus)], workers=1)
    shipped = list(counted.metrics.values())  # counted once; eight tokenizers to draw
    metrics = {name: shipped[i % 2] for i, name in enumerate(names)}
    drawn = {}

    def keep(fig, path: Path) -> None:  # drawn, not saved: test_compare_corpus saves a picture
        fig.canvas.draw()
        drawn["figure"] = fig

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(plots, "_save", keep)
    try:
        plots.plot_comparison(metrics, folder / "eight.png")
    finally:
        monkeypatch.undo()
    return drawn["figure"], metrics


def _boxes(texts):
    return [t.get_window_extent() for t in texts if t.get_visible() and t.get_text()]


def _overlapping(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes) if i < j and a.overlaps(b)]


def test_titles_never_collide(figure):
    fig, _ = figure
    titles = _boxes(axis.title for axis in fig.get_axes())
    assert len(titles) == 2 + 8
    assert _overlapping(titles) == []


def test_tick_labels_never_collide(figure):
    fig, _ = figure
    for axis in fig.get_axes():
        assert _overlapping(_boxes(axis.get_xticklabels())) == []
        assert _overlapping(_boxes(axis.get_yticklabels())) == []


def test_tokenizers_are_named_briefly_and_unknowns_have_a_bar(figure):
    fig, metrics = figure
    titles = [axis.title.get_text() for axis in fig.get_axes()]
    assert not any("/very/long" in t for t in titles)
    labels = [label.get_text() for label in fig.get_axes()[0].get_yticklabels()]
    assert len(set(labels)) == 8
    assert not any("/very/long" in label for label in labels)
    small = fig.get_axes()[2:]
    assert all(axis.get_xticklabels()[0].get_text() == "UNK" for axis in small)
    unk = [m.unk_count for m in metrics.values()]
    assert any(unk)  # wordpiece-30k does not know 🜁
    for axis, count, m in zip(small, unk, metrics.values()):
        heights = [bar.get_height() for bar in axis.patches]
        assert heights[0] == pytest.approx(count / (count + sum(m.token_lengths.values())) * 100)
