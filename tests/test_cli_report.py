"""`inspect`, `compare` and `parity` on the command line: the same facts as the library, as
plain text for people and as JSON for scripts. Uses the shipped vocabularies and the project's
own fixture, so nothing needs ``../shared``."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import toktools
from toktools import report
from toktools.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "sample.txt"


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)


def test_inspect_json_matches_the_library() -> None:
    result = run("inspect", "wordpiece-30k", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == report.vocab_stats(toktools.load("wordpiece-30k")).to_dict()


def test_inspect_plain_output_is_stable_text_without_colour_codes() -> None:
    result = run("inspect", "bytebpe-50k", env={"NO_COLOR": "1"})
    assert result.exit_code == 0
    assert "\x1b[" not in result.stdout
    assert "vocabulary      50000" in result.stdout
    assert "256 of 256 byte symbols" in result.stdout


def test_inspect_a_token_shows_bytes_and_merge_tree() -> None:
    result = run("inspect", "bytebpe-50k", "--token", "我", "--json")
    info = json.loads(result.stdout) if result.exit_code == 0 else None
    if info is None:  # 我 may be two tokens in this vocabulary: then the error says so
        assert "tokens" in result.stderr
        return
    assert info["hex"] == "E6 88 91"
    assert info["byte_symbols"] == "æĪĳ"


def test_inspect_with_a_corpus_reports_use_and_unk_rate() -> None:
    result = run("inspect", "wordpiece-30k", "--corpus", str(FIXTURE), "--json")
    usage = json.loads(result.stdout)["corpus_usage"]
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    assert usage["lines"] == len(lines)
    assert 0 <= usage["unk_rate"] < 0.05


def test_compare_marks_where_the_tokenizers_disagree() -> None:
    text = "unaffable 我是"
    result = run("compare", "wordpiece-30k", "bytebpe-50k", text, "--json")
    document = json.loads(result.stdout)
    expected = report.compare([(n, toktools.load(n)) for n in ("wordpiece-30k", "bytebpe-50k")], text).to_dict()
    assert document == expected
    plain = run("compare", "wordpiece-30k", "bytebpe-50k", text, env={"NO_COLOR": "1"}).stdout
    assert plain.splitlines()[0].startswith("wordpiece-30k")
    assert "^" in plain  # byte-level BPE cuts 我 inside the character; WordPiece keeps it whole


def test_compare_needs_text_or_a_file() -> None:
    result = run("compare", "wordpiece-30k")
    assert result.exit_code != 0 and "text" in result.stderr


def test_parity_reports_identical_files_for_bytebpe(tmp_path: Path) -> None:
    result = run("parity", "bytebpe", str(FIXTURE), "--vocab-size", "300", "--json")
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["ok"] is True
    assert "PARITY" in run("parity", "bytebpe", str(FIXTURE), "--vocab-size", "300").stdout


def test_train_check_prints_the_parity_verdict(tmp_path: Path) -> None:
    result = run("train", "bytebpe", str(FIXTURE), "-o", str(tmp_path / "o"), "--vocab-size", "300", "--check")
    assert result.exit_code == 0, result.stderr
    assert "PARITY" in result.stderr


def test_a_quoted_glob_is_expanded(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("hello world\n", encoding="utf-8")
    result = run("count", str(tmp_path / "*.txt"), "--model", "bytebpe", "-o", str(tmp_path / "c.counts"))
    assert result.exit_code == 0, result.stderr
    assert "counted 6 words (3 distinct)" in result.stderr  # hello, " world", "\\n" in each file
