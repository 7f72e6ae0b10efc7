"""`inspect`, `compare` and `parity` on the command line: the same facts as the library, as
plain text for people and as JSON for scripts. Uses the shipped vocabularies and the project's
own fixture, so nothing needs ``../shared``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import toktools
from toktools.analysis.comparison import compare
from toktools.analysis.vocabulary import vocab_stats
from toktools.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "sample.txt"


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner(env=env).invoke(main, list(args), catch_exceptions=False)


def test_inspect_json_matches_the_library() -> None:
    result = run("inspect", "wordpiece-30k", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == vocab_stats(toktools.load("wordpiece-30k")).to_dict()


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
    expected = compare([(n, toktools.load(n)) for n in ("wordpiece-30k", "bytebpe-50k")], text).to_dict()
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


# -- inspect: --token and --id never guessed, readable tokens, most common tokens, embedding cost


def test_inspect_token_and_id_are_separate_options() -> None:
    as_token = json.loads(run("inspect", "bytebpe-50k", "--token", "1990", "--json").stdout)
    assert as_token["token"] == "1990"  # "1990" is itself a token: never read as an id
    as_id = json.loads(run("inspect", "bytebpe-50k", "--id", "1990", "--json").stdout)
    assert as_id["id"] == 1990 and as_id["token"] == toktools.load("bytebpe-50k").id_to_token(1990)
    assert as_id["readable"] == "一个"  # byte symbols shown as the text they stand for
    both = run("inspect", "bytebpe-50k", "--token", "a", "--id", "3")
    assert both.exit_code == 2


def test_inspect_an_unknown_token_is_one_readable_line() -> None:
    result = run("inspect", "wordpiece-30k", "--token", "Ω²x")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("toktools: error: 'Ω²x' is not a token of this vocabulary")
    digits = run("inspect", "wordpiece-30k", "--token", "123456789")
    assert digits.exit_code == 1 and "--id 123456789" in digits.stderr


def test_inspect_corpus_lists_the_most_common_tokens(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat the dog the end\n", encoding="utf-8")
    result = run("inspect", "wordpiece-30k", "--corpus", str(corpus), "--top", "2", env={"NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    top = lines[lines.index("most common tokens") + 1]
    assert top.split()[0] == "3" and top.endswith("«the»")  # "the" 3 times of 6 tokens
    data = json.loads(run("inspect", "wordpiece-30k", "--corpus", str(corpus), "--top", "2", "--json").stdout)
    assert data["corpus_usage"]["most_common"][0]["count"] == 3


def test_inspect_shows_the_embedding_cost() -> None:
    """30,000 tokens: V×768 = 23.04M, V×1024 = 30.72M; ALBERT 30000×128 + 128×768 = 3.94M;
    23.04M / 110M = 20.9%."""
    data = json.loads(run("inspect", "wordpiece-30k", "--json").stdout)["embedding"]
    assert data["full"] == {"768": 23_040_000, "1024": 30_720_000}
    assert data["albert_e128"] == {"768": 3_938_304, "1024": 3_971_072}
    assert data["bert_base_share"] == pytest.approx(23_040_000 / 110_000_000, abs=1e-6)
    plain = run("inspect", "wordpiece-30k", env={"NO_COLOR": "1"}).stdout
    assert "20.9% of BERT-base's 110M parameters" in plain


def test_inspect_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "vocab.png"
    result = run("inspect", "wordpiece-30k", "--plot", str(target))
    assert result.exit_code == 0, result.stderr
    assert target.read_bytes().startswith(b"\x89PNG")


# -- train: honest about a short vocabulary; transformers config files by default


def test_train_says_why_the_vocabulary_is_smaller(tmp_path: Path) -> None:
    """一…十 occur 10, 9, …, 1 times (55 characters). --limit-alphabet 5 keeps the five most
    frequent and drops five characters making 5+4+3+2+1 = 15 of 55 occurrences (27.3%); each
    Han character is a word of its own, so there is no pair to merge."""
    chars = "一二三四五六七八九十"
    corpus = tmp_path / "zh.txt"
    corpus.write_text("".join(ch * (10 - i) + "\n" for i, ch in enumerate(chars)), encoding="utf-8")
    result = run(
        "train",
        "wordpiece",
        str(corpus),
        "-o",
        str(tmp_path / "out"),
        "--vocab-size",
        "1000",
        "--limit-alphabet",
        "5",
        "--no-progress",
    )
    assert result.exit_code == 0, result.stderr
    assert "the vocabulary has 10 tokens, 990 fewer than --vocab-size 1000" in result.stderr
    assert "dropped 5 characters covering 27.3% of the corpus" in result.stderr
    # every word is one character: a larger corpus would not help, only the alphabet limit does
    assert "--limit-alphabet 10 keeps all 10" in result.stderr and "a larger corpus would not help" in result.stderr
    assert "merging stopped" not in result.stderr
    assert result.stderr.count("toktools: warning:") == 1


def test_train_says_when_merging_stopped_at_min_frequency(tmp_path: Path) -> None:
    corpus = tmp_path / "en.txt"
    corpus.write_text("abc abc abd xyz\n", encoding="utf-8")
    result = run("train", "bytebpe", str(corpus), "-o", str(tmp_path / "out"), "--vocab-size", "400", "--no-progress")
    assert result.exit_code == 0, result.stderr
    assert "--min-frequency 2" in result.stderr and "fewer than --vocab-size 400" in result.stderr


def test_train_writes_transformers_config_by_default(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    out = tmp_path / "bert"
    result = run("train", "wordpiece", str(FIXTURE), "-o", str(out), "--vocab-size", "300", "--no-progress")
    assert result.exit_code == 0, result.stderr
    assert (out / "tokenizer_config.json").is_file() and (out / "special_tokens_map.json").is_file()
    auto = transformers.AutoTokenizer.from_pretrained(str(out))  # a local directory: no download
    assert (auto.pad_token, auto.mask_token, auto.cls_token, auto.sep_token) == ("[PAD]", "[MASK]", "[CLS]", "[SEP]")
    ours = toktools.load(out)
    assert auto("hello world")["input_ids"] == ours.encode("hello world").ids
    again = run("train", "wordpiece", str(FIXTURE), "-o", str(out), "--vocab-size", "300", "--no-progress")
    assert again.exit_code == 1 and "--force" in again.stderr
    out2 = tmp_path / "plain"
    result = run(
        "train",
        "wordpiece",
        str(FIXTURE),
        "-o",
        str(out2),
        "--vocab-size",
        "300",
        "--no-progress",
        "--no-transformers-config",
    )
    assert result.exit_code == 0 and not (out2 / "tokenizer_config.json").exists()


def test_inspect_says_when_a_byte_symbol_token_is_also_a_text() -> None:
    """ "²" is GPT-2's symbol for the byte B2 (a token of its own) and, as text, the bytes C2 B2
    (the token "Â²"): the token string wins and the note names the other reading."""
    info = json.loads(run("inspect", "bytebpe-50k", "--token", "²", "--json").stdout)
    assert (info["token"], info["hex"], info["readable"]) == ("²", "B2", "<B2>")
    assert info["note"].startswith("taken as a token string; as text, '²' is the token Â²")
