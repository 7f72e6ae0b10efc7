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


def test_the_page_holds_every_figure_of_the_json(report):
    data, page = report
    parser = _Balance()
    parser.feed(page)
    shown = "\n".join(parser.text + parser.attributes)
    figures = _numbers(data)
    assert len(figures) > 100
    missing = [n for n in figures if not re.search(rf"(?<![\d.]){re.escape(repr(n))}(?![\d])", shown)]
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
