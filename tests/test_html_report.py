"""``compare --html``: one self-contained page that parses and holds every figure of ``--json``,
and the short labels the tables, pictures and pages share."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from toktools.analysis.html_report import render_html
from toktools.analysis.labels import short_name, short_names
from toktools.cli import main

_VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source", "track", "embed"}
_SVG_VOID = {"line", "rect"}  # written as self-closing <x/> in the inline SVG


class _Balance(HTMLParser):
    """Parses the page and checks that every element is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes += [value or "" for _, value in attrs]
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attributes += [value or "" for _, value in attrs]

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _numbers(value: object) -> list[int | float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    """One run of ``compare --corpus … --show 4 --html --json`` on English and Chinese, with a
    tokenizer that leaves Chinese unknown (UNK boxes) and one that cuts it into bytes."""
    folder = tmp_path_factory.mktemp("html")
    corpus = folder / "corpus.txt"
    corpus.write_text(
        "The 🜁 planetarium 🜂 projected stars onto the dome, naïve.\n"
        "天文馆的穹顶上投影着星空，观众可以看到银河。\n"
        "Walker's Eidouranion was the heart of his public lectures.\n"
        "他在一八二五年展出了一台直径十二米的仪器🜁🜂。\n",
        encoding="utf-8",
    )
    page = folder / "report.html"
    result = CliRunner().invoke(
        main,
        ["compare", "bytebpe-50k", "wordpiece-30k", "--corpus", str(corpus), "--show", "4"]
        + ["--html", str(page), "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), page.read_text(encoding="utf-8")


def test_the_page_parses_with_balanced_tags(report):
    _, page = report
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.errors == []
    assert parser.stack == []
    assert page.startswith("<!DOCTYPE html>")


def _missing_figures(data: dict, page: str) -> tuple[list[int | float], str]:
    """The numbers of ``--json`` that the page's text and attributes do not hold exactly (repr)."""
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.errors == [] and parser.stack == []
    shown = "\n".join(parser.text + parser.attributes)
    figures = _numbers(data)
    assert figures
    return [n for n in figures if not re.search(rf"(?<![\d.]){re.escape(repr(n))}(?![\d])", shown)], shown


def test_the_page_holds_every_figure_of_the_json(report):
    data, page = report
    assert len(_numbers(data)) > 100
    missing, shown = _missing_figures(data, page)
    assert missing == []
    for name, metrics in data["metrics"].items():
        assert name in shown
        assert str(metrics["tokens"]) in shown


def test_the_page_fetches_nothing(report):
    _, page = report
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|<script|<link|@import|url\(", page, re.I)


def test_shown_places_are_token_boxes_with_unknowns_and_byte_pieces_marked(report):
    data, page = report
    rows = [row for place in data["shown"] for row in place["alignment"]["rows"]]
    spans = [span for row in rows for span in row["spans"]]
    assert spans
    assert page.count('class="t t') >= len(spans)
    unknown = sum(s["unknown"] for s in spans)
    partial = sum(s["partial"] for s in spans)
    assert unknown and partial  # the corpus holds both: the page must mark both
    assert len(re.findall(r'class="t t\d[^"]*\bunk\b', page)) == unknown
    assert len(re.findall(r'class="t t\d[^"]*\bpartial\b', page)) == partial


def test_new_keys_of_the_report_appear_without_code_for_them():
    report = {
        "sources": ["a.txt"],
        "metrics": {"x": {"renyi_efficiency": 0.123456789, "histograms": {"token_length": {"1": 3, "2": 5}}}},
        "parity": [{"language": "zh", "premium_mean": 1.75}],
        "unused": {"x": ["##zz", "qq"]},
    }
    page = render_html(report)
    for text in ("renyi", "0.123456789", "premium", "1.75", "##zz", "Parity", "token length"):
        assert text in page


@pytest.mark.parametrize(
    ("names", "labels"),
    [
        (["../vocabs-ref/gpt2/tokenizer.json", "bytebpe-50k"], ["gpt2", "bytebpe-50k"]),
        (["../vocabs-ref/gpt2/", "x/bert/vocab.txt"], ["gpt2", "bert"]),
        (["a/gpt2/tokenizer.json", "a/gpt2/vocab.json"], ["gpt2/tokenizer.json", "gpt2/vocab.json"]),
        (["a/gpt2/tokenizer.json", "b/gpt2/tokenizer.json"], ["gpt2/tokenizer.json (1)", "gpt2/tokenizer.json (2)"]),
    ],
)
def test_labels_are_short_and_distinct(names, labels):
    assert short_names(names) == labels
    assert len(set(short_names(names))) == len(names)


def test_a_bare_file_name_keeps_its_name():
    assert short_name("tokenizer.json") == "tokenizer.json"
    assert short_name(str(Path("my.model"))) == "my.model"


def test_many_distinct_values_are_binned_with_the_total_kept():
    from toktools.analysis.html_report import _binned

    items = [(k, 1.0) for k in range(1, 301)] + [(5000, 3.0)]
    bars = _binned(items, 303.0)
    assert len(bars) <= 40
    assert sum(v for _, v in bars) == 303.0
    assert bars[0][0].startswith("1") and bars[-1][0].endswith("+")
    assert _binned([(1, 2.0), (3, 1.0)], 3.0) == [("1", 2.0), ("3", 1.0)]


def _panels(page: str, title: str) -> dict[str, str]:
    """name -> inline SVG of each small multiple under the heading ``title``."""
    section = page.split(f"<h3>{title}</h3>", 1)[1].split("<h3>", 1)[0].split("<h2>", 1)[0]
    return {
        html_text.replace("<wbr>", ""): svg
        for html_text, svg in re.findall(r'<div class="multiple"><div>(.*?)</div>(<svg.*?</svg>)', section)
    }


def test_token_length_bars_unk_first_byte_pieces_then_lengths_capped_at_16():
    report = {
        "metrics": {
            "w": {"unk_count": 10, "histograms": {"token_length": {"0": 2, "1": 5, "3": 1, "16": 1, "20": 1}}},
            "b": {"unk_count": 0, "histograms": {"token_length": {"0": 4, "2": 4}}},
        }
    }
    panels = _panels(render_html(report), "token length")
    titles = {name: re.findall(r"<title>(.*?)</title>", svg) for name, svg in panels.items()}
    # 20 tokens for w: UNK 10 of them, bytes 2, 1 char 5, 3 chars 1, 16+ chars 2
    assert titles["w"][0] == "unknown tokens (UNK): 10 (50.0%)"
    assert titles["w"][1] == "byte pieces (part of a character): 2 (10.0%)"
    assert titles["w"][2] == "1: 5 (25.0%)" and titles["w"][-1] == "16+: 2 (10.0%)"
    assert len(titles["w"]) == 18 == len(titles["b"])  # UNK, byte, 1…15, 16+
    assert titles["b"][0] == "unknown tokens (UNK): 0 (0.0%)"
    assert ">50.0%</text>" in panels["w"] and "%</text>" not in panels["b"]  # the share written over a UNK bar
    heights = [float(h) for h in re.findall(r'<rect [^>]*height="([\d.]+)"', panels["w"])]
    assert heights[0] == max(heights)  # same scale in every panel: the tallest bar of all is w's UNK
    assert [t.split(">")[-1] for t in re.findall(r"<text[^>]*>[^<]*", panels["b"])] == ("UNK byte 1 4 8 12 16+".split())


@pytest.fixture(scope="module")
def unknowns(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, list[str]]:
    """``compare --corpus --show 2 --html --json`` of BERT (uncased, published) and bytebpe-50k on
    a Chinese and English sample: BERT leaves many Chinese characters unknown."""
    from conftest import read_corpus_sample, ref_vocab_dir

    text = read_corpus_sample("zh_wiki_sample.txt", 1500) + read_corpus_sample("mixed_sample.txt", 1500)
    folder = tmp_path_factory.mktemp("unk")
    corpus = folder / "mixed.txt"
    corpus.write_text(text, encoding="utf-8")
    page = folder / "report.html"
    bert = str(ref_vocab_dir("bert-base-uncased") / "tokenizer.json")
    result = CliRunner().invoke(
        main,
        ["compare", bert, "bytebpe-50k", "--corpus", str(corpus), "--show", "2", "--html", str(page), "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    documents = [line for line in text.split("\n") if line.strip()]
    return json.loads(result.stdout), page.read_text(encoding="utf-8"), documents


@pytest.mark.shared
def test_the_unk_bar_equals_the_unknowns_counted_by_tokenizers(unknowns):
    import tokenizers
    from conftest import ref_vocab_dir

    data, page, documents = unknowns
    library = tokenizers.Tokenizer.from_file(str(ref_vocab_dir("bert-base-uncased") / "tokenizer.json"))
    library.no_truncation()
    library.no_padding()
    unk_id = library.token_to_id("[UNK]")
    encodings = library.encode_batch(documents, add_special_tokens=False)
    tokens = sum(len(e.ids) for e in encodings)
    unknown = sum(e.ids.count(unk_id) for e in encodings)
    assert unknown > 50  # the sample is meant to hold many
    svg = _panels(page, "token length")["bert-base-uncased"]
    rects = re.findall(r'<rect [^>]*height="([\d.]+)"[^>]*><title>(.*?)</title>', svg)
    assert rects[0][1] == f"unknown tokens (UNK): {unknown} ({unknown / tokens:.1%})"
    assert 'class="unk-bar"' in svg and f">{unknown / tokens:.1%}</text>" in svg
    heights = [float(h) for h, _ in rects]  # each bar's height is its share of all tokens, UNK included
    assert heights[0] / sum(heights) == pytest.approx(unknown / tokens, abs=0.05 * len(heights) / sum(heights))
    assert f"UNK: {unknown}</td>" in page  # and the number in the table beside the panels


@pytest.mark.shared
def test_the_unknowns_page_holds_every_figure_and_marks_unknown_boxes(unknowns):
    data, page, _ = unknowns
    missing, _ = _missing_figures(data, page)
    assert missing == []
    spans = [s for place in data["shown"] for row in place["alignment"]["rows"] for s in row["spans"]]
    assert sum(s["unknown"] for s in spans) == len(re.findall(r'class="t t\d[^"]*\bunk\b', page)) > 0


def test_the_parity_page_holds_every_figure_of_the_json(tmp_path: Path):
    sample = Path(__file__).parent / "fixtures" / "parallel"
    page = tmp_path / "parity.html"
    files = [str(sample / f"{language}.txt") for language in ("en", "zh", "de")]
    result = CliRunner().invoke(
        main,
        ["compare", "bytebpe-50k", "wordpiece-30k", "--parallel", *files, "--json", "--html", str(page)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    html_page = page.read_text(encoding="utf-8")
    missing, shown = _missing_figures(data, html_page)
    assert missing == [] and len(_numbers(data)) > 20
    assert data["parallel"]["fairest"] in shown and "Cross-lingual parity" in shown


def test_panels_share_their_bins_so_their_x_axes_agree():
    from toktools.analysis.html_report import _binned

    short = [(k, 1.0) for k in range(1, 11)]
    long = [(k, 1.0) for k in range(1, 301)]
    scale = sorted(dict.fromkeys(k for k, _ in short + long).items())
    scale = [(k, 1.0 + (k <= 10)) for k, _ in scale]
    a, b = _binned(short, 10.0, scale=scale), _binned(long, 300.0, scale=scale)
    assert [label for label, _ in a] == [label for label, _ in b]
    assert sum(v for _, v in a) == 10.0 and sum(v for _, v in b) == 300.0
