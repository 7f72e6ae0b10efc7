"""`compare --corpus`: statistics that stream, checked against numbers worked out by hand on a
tiny corpus, and the command line around them (files, .gz, JSON Lines, stdin, --sample,
--show, --json, --plot, usage errors)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_report import hand_bpe, hand_wordpiece

from toktools.analysis import token_view
from toktools.analysis.corpus_compare import compare_corpus
from toktools.analysis.segstats import percentile
from toktools.cli import main

#: Four documents (the blank line is none). By hand, with the tokenizers of test_report:
#:   line 1 "the unaffable xyz"          wp: the | un ##aff ##able | [UNK]       bpe: the | Ġunaff able | Ġ x y z
#:   line 3 "the the"                    wp: the | the                           bpe: the | Ġ the
#:   line 4 "unaffable"                  wp: un ##aff ##able                     bpe: unaff able
#:   line 5 "xyz the unaffable the xyz"  wp: [UNK] | the | un ##aff ##able | the | [UNK]
#:                                       bpe: x y z | Ġ the | Ġunaff able | Ġ the | Ġ x y z
CORPUS = "the unaffable xyz\n\nthe the\nunaffable\r\nxyz the unaffable the xyz\n"
DOCUMENTS = ["the unaffable xyz", "the the", "unaffable", "xyz the unaffable the xyz"]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def tokenizers():
    return [("wp", hand_wordpiece()), ("bpe", hand_bpe())]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[str, str]:
    """The hand-built tokenizers saved as directories: the CLI loads them in milliseconds."""
    root = tmp_path_factory.mktemp("tokenizers")
    hand_wordpiece().save(root / "wp")
    hand_bpe().save(root / "bpe")
    return str(root / "wp"), str(root / "bpe")


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.txt"
    path.write_bytes(CORPUS.encode("utf-8"))
    return path


def test_the_hand_counts_hold_for_the_tokenizers():
    wp, bpe = hand_wordpiece(), hand_bpe()
    assert [len(wp.encode(d, add_special_tokens=False).ids) for d in DOCUMENTS] == [5, 2, 3, 7]
    assert [len(bpe.encode(d, add_special_tokens=False).ids) for d in DOCUMENTS] == [7, 3, 2, 13]
    assert token_view.specials_added(wp) == 2 and token_view.specials_added(bpe) == 0


def test_statistics_of_the_tiny_corpus(corpus_file: Path):
    result = compare_corpus(tokenizers(), [str(corpus_file)], show=2)
    wp, bpe = result.metrics["wp"], result.metrics["bpe"]
    characters = sum(len(d) for d in DOCUMENTS)  # 58: line endings are not counted
    words = sum(len(d.split()) for d in DOCUMENTS)  # 11
    assert (wp.documents, wp.characters, wp.bytes, wp.words) == (4, characters, characters, words)
    # WordPiece: 17 tokens; unaffable split twice + once; 3 [UNK]
    assert (wp.tokens, wp.split_words, wp.unk_count) == (17, 3, 3)
    assert wp.chars_per_token == pytest.approx(58 / 17) and wp.tokens_per_word == pytest.approx(17 / 11)
    assert wp.unk_rate == pytest.approx(3 / 17) and wp.byte_piece_chars == 0
    assert wp.tokens_per_word_histogram == {1: 8, 3: 3}
    assert wp.sequence_lengths == {4: 1, 5: 1, 7: 1, 9: 1}  # tokens + [CLS] [SEP]
    assert (wp.length_percentile(50), wp.length_percentile(90), max(wp.sequence_lengths)) == (5, 9, 9)
    # byte-level BPE: 25 tokens; "Ġ" alone belongs to no word; xyz is 3 tokens each time
    assert (bpe.tokens, bpe.split_words, bpe.unk_count) == (25, 6, 0)
    assert bpe.tokens_per_word_histogram == {1: 5, 2: 3, 3: 3}
    assert bpe.sequence_lengths == {2: 1, 3: 1, 7: 1, 13: 1}
    assert bpe.length_percentile(50) == 3 and bpe.over(128) == 0.0
    # differing boundaries (token ends inside words that only one of the two has), by hand:
    # line 5: x|y (bpe), un|aff (wp), x|y|z at the end (bpe) = 5; line 1: un|aff (wp), x|y (bpe) = 3;
    # line 4: un|aff = 1; line 3: none. Every document is shorter than a place (81 characters).
    assert [(s.line, s.differing) for s in result.shown] == [(5, 5), (1, 3)]
    assert [s.alignment.text for s in result.shown] == [DOCUMENTS[3], DOCUMENTS[0]]
    assert (result.shown[0].start, result.shown[0].end) == (0, len(DOCUMENTS[3]))


def test_sequence_length_overflow_and_percentiles_on_long_documents(tmp_path: Path):
    """Documents of 100, 200, 300 and 600 words of "the": BERT-style sequences of 102, 202,
    302 and 602 tokens."""
    path = tmp_path / "long.txt"
    path.write_text("".join(" ".join(["the"] * n) + "\n" for n in (100, 200, 300, 600)), encoding="utf-8")
    wp = compare_corpus([("wp", hand_wordpiece())], [str(path)]).metrics["wp"]
    assert wp.sequence_lengths == {102: 1, 202: 1, 302: 1, 602: 1}
    assert (wp.over(128), wp.over(256), wp.over(512)) == (0.75, 0.5, 0.25)
    assert (wp.length_percentile(50), wp.length_percentile(99)) == (202, 602)
    assert percentile({}, 50) is None


def test_byte_pieces_are_counted_in_characters(tmp_path: Path):
    """The hand-built BPE has no merges for 你 or 好: each becomes 3 byte tokens, so both
    characters of "你好 the" (6 characters) end up in byte pieces."""
    path = tmp_path / "zh.txt"
    path.write_text("你好 the\n", encoding="utf-8")
    bpe = compare_corpus([("bpe", hand_bpe())], [str(path)]).metrics["bpe"]
    assert (bpe.byte_piece_chars, bpe.characters) == (2, 6)
    assert bpe.token_lengths[0] == 6  # byte pieces have length 0


def test_same_result_for_any_number_of_workers(tmp_path: Path):
    path = tmp_path / "many.txt"
    path.write_text("".join(f"{DOCUMENTS[i % 4]} the\n" for i in range(3000)), encoding="utf-8")
    import toktools.analysis.compare_chunks as cc

    old = cc.CHUNK_DOCUMENTS
    cc.CHUNK_DOCUMENTS = 500  # several chunks, so the workers really share the work
    try:
        one = compare_corpus(tokenizers(), [str(path)], show=3, workers=1).to_dict()
        two = compare_corpus(tokenizers(), [str(path)], show=3, workers=2).to_dict()
    finally:
        cc.CHUNK_DOCUMENTS = old
    assert one == two
    assert one["metrics"]["wp"]["documents"] == 3000


def test_sample_reads_documents_spread_over_the_corpus(corpus_file: Path):
    result = compare_corpus(tokenizers(), [str(corpus_file)], sample=2)
    assert result.metrics["wp"].documents == 2
    assert result.metrics["wp"].characters == len(DOCUMENTS[0]) + len(DOCUMENTS[2])  # documents 0 and 2 of 4


# -- the command line ----------------------------------------------------------------------------


def test_cli_json_gives_every_statistic(corpus_file: Path):
    result = run("compare", "wordpiece-30k", "bytebpe-50k", "--corpus", str(corpus_file), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    wp = data["metrics"]["wordpiece-30k"]
    assert wp["documents"] == 4 and wp["characters"] == 58 and wp["words"] == 11
    assert set(wp["sequence_length"]) == {"p50", "p90", "p99", "max"} and set(wp["over"]) == {"128", "256", "512"}
    assert {"sequence_length", "tokens_per_word", "token_length"} <= set(wp["histograms"])


def test_cli_reads_gz_jsonl_stdin_and_globs_alike(tmp_path: Path, corpus_file: Path, saved):
    wp, bpe = saved
    expected = json.loads(run("compare", wp, bpe, "--corpus", str(corpus_file), "--json").stdout)
    gz = tmp_path / "tiny.txt.gz"
    gz.write_bytes(gzip.compress(CORPUS.encode("utf-8")))
    jsonl = tmp_path / "tiny.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(DOCUMENTS)), encoding="utf-8"
    )
    variants = [
        ["--corpus", str(gz)],
        ["--corpus", str(jsonl), "--field", "text"],
        ["--corpus", "-"],
        ["--corpus", str(tmp_path / "tiny.txt*")],  # a quoted glob: both files
        ["--file", str(corpus_file)],  # the deprecated alias
    ]
    for extra in variants:
        result = run("compare", wp, bpe, *extra, "--json", input=CORPUS)
        assert result.exit_code == 0, (extra, result.stderr)
        metrics = json.loads(result.stdout)["metrics"]
        factor = 2 if "*" in extra[-1] else 1
        # rows are labelled by the directories' names
        assert metrics["bpe"]["tokens"] == factor * expected["metrics"]["bpe"]["tokens"] == factor * 25, extra


def test_cli_plain_output_shows_the_disputed_line_and_tables(corpus_file: Path):
    result = run("compare", "wordpiece-30k", "bytebpe-50k", "--corpus", str(corpus_file), "--show", "1")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("line 5, characters 1-25: ") and "boundaries differ\ntext " in out
    assert "legend" in out and "4 documents, 11 words, 58 characters" in out
    assert "tokens/word" in out and ">512" in out


def test_compare_without_text_or_corpus_is_a_usage_error():
    result = run("compare", "wordpiece-30k", "bytebpe-50k")
    assert result.exit_code == 2 and "no text to compare" in result.stderr
    assert run("compare", "wordpiece-30k").exit_code == 2


def test_compare_dash_reads_the_text_from_stdin(saved):
    from_stdin = run("compare", *saved, "-", "--json", input="unaffable 我\n")
    direct = run("compare", *saved, "unaffable 我", "--json")
    assert from_stdin.exit_code == 0 and json.loads(from_stdin.stdout) == json.loads(direct.stdout)


def test_plot_writes_a_picture(tmp_path: Path, corpus_file: Path, saved):
    pytest.importorskip("matplotlib")
    for name in ("report.png", "report.svg"):
        target = tmp_path / name
        result = run("compare", *saved, "--corpus", str(corpus_file), "--plot", str(target), "--show", "0")
        assert result.exit_code == 0, result.stderr
        data = target.read_bytes()
        assert data.startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in data[:1000]
    bad = run("compare", saved[0], "--corpus", str(corpus_file), "--plot", str(tmp_path / "x.bmp"))
    assert bad.exit_code == 1 and "use .png" in bad.stderr


def test_plot_without_matplotlib_says_so_in_one_line(monkeypatch, corpus_file: Path, tmp_path: Path, saved):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run("compare", saved[0], "--corpus", str(corpus_file), "--plot", str(tmp_path / "r.png"))
    assert result.exit_code == 1
    assert result.stderr.strip() == "toktools: error: plotting needs matplotlib: pip install 'toktools[plot]'"


def test_shown_lines_name_their_file_and_json_errors_name_file_and_line(tmp_path: Path, corpus_file: Path):
    other = tmp_path / "other.txt"
    other.write_text("the\nxyz the unaffable the xyz the\n", encoding="utf-8")
    result = compare_corpus(tokenizers(), [str(other), str(corpus_file)], show=2)
    # the same 5 differing boundaries in both: the earlier document first
    assert [(Path(s.source).name, s.line) for s in result.shown] == [("other.txt", 2), ("tiny.txt", 5)]
    assert result.render_plain().startswith(f"{other}, line 2, characters 1-29: 5 boundaries differ")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text"}\n', encoding="utf-8")
    from toktools.errors import ToktoolsError

    with pytest.raises(ToktoolsError, match=r"bad.jsonl, line 2: not a JSON object with a 'text' field"):
        compare_corpus(tokenizers(), [str(bad)], json_field="text")
