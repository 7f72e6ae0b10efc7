"""`compare TOK... --parallel en.txt zh.txt de.txt`: token premiums of each language over the
first, on the line-aligned sample shipped in tests/fixtures/parallel (written for this suite),
checked against counts made here with `tokenizers` on the published tokenizer.json files; bad
input (line counts that differ, one file, --corpus too) in one line with exit 2."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ref_vocab_dir

from toktools.cli import main

pytestmark = pytest.mark.shared
SAMPLE = Path(__file__).parent / "fixtures" / "parallel"
FILES = [str(SAMPLE / f"{language}.txt") for language in ("en", "zh", "de")]
NAMES = ("gpt2", "bert-base-uncased")


def _run(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


def _counts(name: str, path: str) -> list[int]:
    import tokenizers

    library = tokenizers.Tokenizer.from_file(str(ref_vocab_dir(name) / "tokenizer.json"))
    library.no_truncation()  # the published files carry truncation and padding
    library.no_padding()
    lines = Path(path).read_text(encoding="utf-8").split("\n")[:-1]
    return [len(e.ids) for e in library.encode_batch(lines, add_special_tokens=False)]


@pytest.fixture(scope="module")
def report() -> dict:
    tokenizers = [str(ref_vocab_dir(name) / "tokenizer.json") for name in NAMES]
    result = _run(*tokenizers, "--parallel", *FILES, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["parallel"]


def test_the_sample_is_line_aligned():
    counts = {len(Path(f).read_text(encoding="utf-8").splitlines()) for f in FILES}
    assert counts == {48}


def test_premiums_equal_counts_made_with_tokenizers(report: dict):
    assert report["languages"] == ["en", "zh", "de"] and report["reference"] == "en" and report["lines"] == 48
    spreads = {}
    for name in NAMES:
        counts = {language: _counts(name, path) for language, path in zip(report["languages"], FILES)}
        found = report["tokenizers"][name]
        assert found["tokens"] == {language: sum(c) for language, c in counts.items()}
        means = [1.0]
        for language in ("zh", "de"):
            ratios = [o / r for o, r in zip(counts[language], counts["en"])]
            premium = found["premium"][language]
            assert premium["mean"] == pytest.approx(statistics.fmean(ratios), abs=1e-6)
            assert premium["median"] == pytest.approx(statistics.median(ratios), abs=1e-6)
            assert premium["total_ratio"] == pytest.approx(sum(counts[language]) / sum(counts["en"]), abs=1e-6)
            assert (premium["lines"], premium["skipped"]) == (48, 0)
            means.append(statistics.fmean(ratios))
        spreads[name] = max(means) / min(means)
        assert found["spread"] == pytest.approx(spreads[name], abs=1e-6)
    assert report["fairest"] == min(spreads, key=spreads.__getitem__)
    assert spreads["gpt2"] > 2  # GPT-2 spends far more tokens on Chinese than on English


def test_blank_lines_and_lines_without_tokens_are_skipped(tmp_path: Path):
    en, zh = tmp_path / "en.txt", tmp_path / "zh.txt"
    en.write_text("the cat sat\n\na dog\nhello world\n", encoding="utf-8")
    zh.write_text("猫坐着\n狗\n\n你好世界\n", encoding="utf-8")
    result = _run(str(ref_vocab_dir("gpt2") / "tokenizer.json"), "--parallel", str(en), str(zh), "--json")
    assert result.exit_code == 0, result.output
    premium = json.loads(result.stdout)["parallel"]["tokenizers"]["gpt2"]["premium"]["zh"]
    en_counts, zh_counts = _counts("gpt2", str(en)), _counts("gpt2", str(zh))
    kept = [zh_counts[i] / en_counts[i] for i in (0, 3)]  # lines 2 and 3 are blank on one side
    assert (premium["lines"], premium["skipped"]) == (2, 2)
    assert premium["mean"] == pytest.approx(statistics.fmean(kept), abs=1e-6)


def test_table_and_html(tmp_path: Path, report: dict):
    page = tmp_path / "parity.html"
    result = _run("bytebpe-50k", "wordpiece-30k", "--parallel", *FILES[:2], "--html", str(page))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "48 aligned lines; premium = tokens / en tokens, per line"
    assert lines[2].split() == ["parity", "en", "tokens", "zh", "tokens", "zh/en", "mean", "zh/en", "median", "spread"]
    assert lines[-1].startswith("fairest: ")
    html = page.read_text(encoding="utf-8")
    assert "fairest" in html and "zh/en" not in html and "premium" in html


def test_markdown_table(report: dict):
    result = _run(*(str(ref_vocab_dir(n) / "tokenizer.json") for n in NAMES), "--parallel", *FILES, "--markdown")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert rows[0].split(" | ")[:2] == ["| parity", "en tokens"] and rows[1].startswith("| :--- | ---: |")
    for name, row in zip(NAMES, rows[2:], strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == name and int(cells[1]) == report["tokenizers"][name]["tokens"]["en"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--parallel", FILES[0]], "--parallel needs two or more line-aligned files"),
        (["--parallel", FILES[0], FILES[1], "--json", "--markdown"], "choose one"),
        (["--parallel", FILES[0], FILES[1], "--corpus", FILES[0]], "--parallel and --corpus"),
        (["--parallel", FILES[0], FILES[1], "--show", "2"], "--show goes with --corpus"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str):
    result = _run("bytebpe-50k", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_files_of_different_line_counts_are_refused_in_one_line(tmp_path: Path):
    short = tmp_path / "zh.txt"
    short.write_text("一\n二\n", encoding="utf-8")
    result = _run("bytebpe-50k", "--parallel", FILES[0], str(short))
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"toktools: error: the --parallel files must have the same number of lines: {FILES[0]} 48, {short} 2\n"
    )
