"""`compare --corpus --show N`: the N places (windows of at most ±40 characters) where the
tokenizers disagree most, on Chinese without spaces and on long English documents; the output
is bounded by N × (tokenizers + 3) lines whatever the documents' length; the tokens of a place
are the document's own tokens as `tokenizers` (loading the published tokenizer.json) cuts it;
the score is recomputed here from `tokenizers`' offsets by the documented definition."""

from __future__ import annotations

import bisect
import json
import random
from pathlib import Path

import pytest
import real_shapes
from click.testing import CliRunner
from conftest import ref_vocab_dir

from toktools.analysis import disagreement
from toktools.cli import main

pytestmark = pytest.mark.shared
SHOW = 3


def _published() -> list[tuple[str, str]]:
    return [(name, str(ref_vocab_dir(name) / "tokenizer.json")) for name in ("gpt2", "bert-base-uncased")]


def _library(path: str):
    import tokenizers

    library = tokenizers.Tokenizer.from_file(path)
    library.no_truncation()  # the published gpt2 file carries truncation: 50
    library.no_padding()
    return library


def _run(*args: str) -> tuple[dict, str]:
    """``compare ARGS --json`` and the plain output of the same report, in one run."""
    import toktools
    from toktools.analysis.corpus_compare import compare_corpus

    loaded = [(name, toktools.load(path)) for name, path in _published()]
    result = compare_corpus(loaded, [args[0]], show=SHOW, workers=1)
    return result.to_dict(), result.render_plain()


def test_the_cli_shows_places_as_token_boxes(tmp_path: Path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("我是中国人 unaffable\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["compare", "bytebpe-50k", "wordpiece-30k", "--corpus", str(corpus), "--show", "2"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # by hand: only wordpiece ends tokens after 我 and after 中; the other ends are shared
    assert lines[:4] == [
        "line 1, characters 1-15: 2 boundaries differ",
        "text          │ 我是中国人 unaffable",
        "bytebpe-50k   │ |我是|中国|人| un|aff|able|",  # GPT-2's space belongs to " un"
        "wordpiece-30k │ |我|是|中|国|人| |un|##aff|##able|",  # BERT drops it: outside the bars
    ]
    assert lines[4].startswith("legend:") and lines[5] == ""


@pytest.fixture(scope="module")
def chinese(tmp_path_factory) -> Path:
    return real_shapes.chinese_paragraphs(tmp_path_factory.mktemp("zh") / "zh.txt", count=4, low=2_000, high=6_000)


@pytest.fixture(scope="module")
def long_english(tmp_path_factory) -> Path:
    return real_shapes.long_documents(tmp_path_factory.mktemp("en") / "en.txt", count=2, low=12_000, high=16_000)


def _check_places(corpus: Path, report: dict, paths: list[tuple[str, str]]) -> None:
    """Every place is a ≤ 81-character window of its document; each row's tokens are the ids of
    the document's tokens (by `tokenizers`) that overlap the window, in order."""
    documents = corpus.read_text(encoding="utf-8").split("\n")
    libraries = {name: _library(path) for name, path in paths}
    assert 0 < len(report["shown"]) <= SHOW
    for place in report["shown"]:
        document = documents[place["line"] - 1]
        start, end = place["start"], place["end"]
        text = place["alignment"]["text"]
        assert 0 < len(text) == end - start <= disagreement.WIDTH and document[start:end] == text
        assert place["differing"] > 0
        for row in place["alignment"]["rows"]:
            encoding = libraries[row["name"]].encode(document, add_special_tokens=False)
            expected = [
                i
                for i, (s, e) in zip(encoding.ids, encoding.offsets)
                if (e > start and s < end) or start <= s == e < end
            ]
            assert [span["id"] for span in row["spans"]] == expected, row["name"]


def _places_lines(output: str) -> list[str]:
    """The lines of the places section (before the blank line and the tables)."""
    lines = output.splitlines()
    shown = lines[: next(i for i, line in enumerate(lines) if " documents, " in line)]
    assert shown[-1] == ""  # the blank line between the places and the tables
    return shown[:-1]


def test_places_on_chinese_without_spaces(chinese: Path):
    report, output = _run(str(chinese))
    _check_places(chinese, report, _published())
    assert any(span["partial"] for p in report["shown"] for r in p["alignment"]["rows"] for span in r["spans"])
    shown = _places_lines(output)
    assert 0 < len(shown) <= SHOW * (len(_published()) + 3)
    assert shown[-1].startswith("legend:") and sum(line.startswith("gpt2 ") for line in shown) == SHOW
    assert any("<" in line and ">" in line for line in shown)  # byte pieces drawn as <E6 88>


def test_places_on_long_documents_are_bounded_and_score_as_defined(long_english: Path):
    report, output = _run(str(long_english))
    _check_places(long_english, report, _published())
    assert 0 < len(_places_lines(output)) <= SHOW * (len(_published()) + 3)
    assert len(output) < 10_000  # 28K characters of documents, a few windows shown
    # the best place's score, from tokenizers' offsets by the definition in disagreement.py
    best = max(_best_window(document, [_library(p) for _, p in _published()]) for document in _lines(long_english))
    assert report["shown"][0]["differing"] == best


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _best_window(text: str, libraries: list) -> int:
    """The most differing boundaries in 81 characters starting at one of them (none: 0)."""
    k = len(libraries)
    ends: dict[int, int] = {}
    pieces: dict[int, int] = {}
    for library in libraries:
        encoding = library.encode(text, add_special_tokens=False)
        mine = {e - 1 for s, e in encoding.offsets if e > s and not text[e - 1].isspace()}
        starts = {s for i, (s, _) in zip(encoding.ids, encoding.offsets) if "\ufffd" in library.decode([i])}
        for p in mine:
            ends[p] = ends.get(p, 0) + 1
        for p in starts:
            pieces[p] = pieces.get(p, 0) + 1
    weight: dict[int, int] = {}
    for counts in (ends, pieces):
        for p, c in counts.items():
            if c < k:
                weight[p] = weight.get(p, 0) + 1
    positions = sorted(weight)
    running = [0]
    for p in positions:
        running.append(running[-1] + weight[p])
    return max(
        (running[bisect.bisect_left(positions, p + 81)] - running[i] for i, p in enumerate(positions)), default=0
    )


def test_array_and_list_window_picks_agree_and_never_overlap():
    """The numpy pick (a chunk of documents end to end) equals the per-document pick."""
    np = pytest.importorskip("numpy")
    rng = random.Random(5)
    for _ in range(40):
        lengths = [rng.randint(0, 400) for _ in range(rng.randint(1, 4))]
        base = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        weights = np.array([rng.random() < 0.15 and rng.randint(1, 2) or 0 for _ in range(int(base[-1]))], np.int64)
        n = rng.randint(1, 5)
        arrays = disagreement._pick_arrays(weights, base, n)
        per_document = []
        for doc, length in enumerate(lengths):
            local = {p - int(base[doc]): int(weights[p]) for p in range(int(base[doc]), int(base[doc + 1]))}
            for pick in disagreement._pick_lists(local, length, n):
                pick.document = doc
                per_document.append(pick)
        per_document.sort(key=lambda p: (-p.score, p.document, p.first))
        assert [vars(p) for p in arrays] == [vars(p) for p in per_document[:n]]
        for a in arrays:
            assert a.end - a.start <= disagreement.WIDTH and a.start <= a.first <= a.last < a.end
            others = [b for b in arrays if b is not a and b.document == a.document]
            assert all(a.end <= b.start or b.end <= a.start for b in others)


@pytest.mark.parametrize("shape", ["long_documents", pytest.param("chinese_paragraphs", marks=pytest.mark.full)])
def test_documents_counted_in_pieces_show_the_places_they_show_whole(shape: str, tmp_path: Path, monkeypatch):
    """A document longer than a segment (1 Mi characters; 2,000 here) is counted piece by piece;
    its places and their tokens are the ones found when it is counted whole."""
    import toktools
    from toktools.analysis.corpus_compare import compare_corpus
    from toktools.corpus import documents, long_documents, long_lines

    build = getattr(real_shapes, shape)
    corpus = build(tmp_path / "c.txt", count=2, low=5_000, high=7_000)
    loaded = [(name, toktools.load(path)) for name, path in _published()]
    whole = compare_corpus(loaded, [str(corpus)], show=SHOW, workers=1).to_dict()
    for module in (long_documents, long_lines, documents):
        monkeypatch.setattr(module, "SEGMENT_CHARS", 2_000)
    calls = []
    counted = disagreement.long_document_places
    monkeypatch.setattr(disagreement, "long_document_places", lambda *a: calls.append(1) or counted(*a))
    cut = compare_corpus(loaded, [str(corpus)], show=SHOW, workers=1).to_dict()
    assert len(calls) == 2  # both documents went the long way
    assert cut["metrics"] == whole["metrics"]
    assert len(whole["shown"]) == SHOW and cut["shown"] == whole["shown"]


def test_html_boxes_keep_a_byte_level_tokens_own_space_inside_it(tmp_path: Path):
    """GPT-2's " un" owns its space (its offsets are trimmed): the HTML row shows it once, inside
    the box; BERT drops the space: it stands between two boxes."""
    import re

    from toktools.analysis.html_report import _token_boxes

    corpus = tmp_path / "c.txt"
    corpus.write_text("我是中国人 unaffable\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["compare", "bytebpe-50k", "wordpiece-30k", "--corpus", str(corpus), "--show", "1", "--json"]
    )
    alignment = json.loads(result.stdout)["shown"][0]["alignment"]
    rows = re.findall(r'<span class="tokens">(.*?)</span></div>', _token_boxes(alignment))
    shown = [re.sub(r"<[^>]+>", "|", row) for row in rows]
    assert shown[0] == "|我是||中国||人|| un||aff||able|"
    assert shown[1] == "|我||是||中||国||人| |un||##aff||##able|"
