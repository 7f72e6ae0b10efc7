"""``toktools encode --format ids|tokens|jsonl --engine ...``: the same bytes on every engine.

The text formats go through the engines too (:mod:`toktools.corpus.text_outputs`). Expected output is
``tokenizers`` itself (its ``encode_batch`` on the same lines), and every engine must print
exactly the same lines; tiktoken, which gives ids only, takes tokens from the vocabulary and
refuses offsets (``jsonl``) in one line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import read_corpus_sample, ref_vocab_dir

from toktools.cli import main
from toktools.corpus.encode import encode_corpus


@pytest.fixture(autouse=True)
def no_analysis_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """English and Chinese lines, an empty line, a special token and odd spacing (~25 KB)."""
    lines = (read_corpus_sample("mixed_sample.txt", 15_000) + read_corpus_sample("zh_novels.txt", 8_000)).splitlines()
    lines[3:3] = ["", "before <|endoftext|> after [SEP] tail", "  two  spaces\tand a tab  ", "Ünïcödé ﬁ ½ 123,456"]
    path = tmp_path_factory.mktemp("text") / "lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(*args: str) -> str:
    result = CliRunner().invoke(main, ["encode", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.stdout


def hf_lines(tokenizer_dir: Path, sample: Path, field: str, **options) -> list[str]:
    """What ``tokenizers`` gives for each line, rendered as the format does."""
    import tokenizers

    hf = tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    lines = sample.read_text(encoding="utf-8").split("\n")[:-1]
    encodings = hf.encode_batch(lines, **options)
    if field == "ids":
        return [" ".join(map(str, e.ids)) for e in encodings]
    return [" ".join(e.tokens) for e in encodings]


@pytest.mark.parametrize("fmt", ["ids", "tokens"])
def test_gpt2_ids_and_tokens_are_the_same_on_every_engine(sample: Path, fmt: str) -> None:
    gpt2 = ref_vocab_dir("gpt2")
    expected = hf_lines(gpt2, sample, fmt)
    outputs = {
        engine: run("-t", gpt2, "--format", fmt, "--engine", engine, sample)
        for engine in ("auto", "reference", "tokenizers", "tiktoken", "gigatoken")
    }
    for engine, text in outputs.items():
        assert text.split("\n")[:-1] == expected, engine
    assert len(set(outputs.values())) == 1


def test_auto_takes_gigatoken_for_gpt2_ids_and_tokenizers_for_jsonl(sample: Path, tmp_path: Path) -> None:
    gpt2 = ref_vocab_dir("gpt2")
    assert encode_corpus([sample], gpt2, tmp_path / "ids.txt", format="ids").engine == "gigatoken"
    assert encode_corpus([sample], gpt2, tmp_path / "out.jsonl", format="jsonl").engine == "tokenizers"
    reference = encode_corpus([sample], gpt2, tmp_path / "ref.jsonl", format="jsonl", engine="reference")
    assert reference.engine == "reference"
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "ref.jsonl").read_bytes()


def test_bert_jsonl_with_template_pairs_and_truncation_is_the_same_on_every_engine(tmp_path: Path) -> None:
    bert = ref_vocab_dir("bert-base-uncased")
    lines = [
        line.replace(". ", ".\t", 1)
        for line in read_corpus_sample("mixed_sample.txt", 6_000).splitlines()
        if ". " in line
    ]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for options in (
        (),
        ("--pair",),
        ("--pair", "--max-length", "24"),
        ("--no-add-special-tokens", "--max-length", "7"),
    ):
        outputs = {
            engine: run("-t", bert, "--format", "jsonl", "--engine", engine, *options, pairs)
            for engine in ("auto", "reference", "tokenizers")
        }
        assert len(set(outputs.values())) == 1, options
        first = json.loads(outputs["auto"].split("\n")[0])
        assert set(first) == {"ids", "tokens", "offsets", "type_ids"}


def test_tiktoken_refuses_what_it_cannot_give_in_one_line(sample: Path) -> None:
    gpt2, bert = ref_vocab_dir("gpt2"), ref_vocab_dir("bert-base-uncased")
    result = CliRunner().invoke(
        main, ["encode", "-t", str(bert), "--engine", "tiktoken", "--format", "ids", str(sample)]
    )
    assert result.exit_code == 1
    assert "not exact" in result.output and result.output.startswith("toktools: error: ")
    assert len(result.output.strip().splitlines()) == 1
    for args, reason in (
        (("--format", "jsonl"), "cannot write --format jsonl (it gives no offsets)"),
        (("--pair",), "cannot write --pair"),
    ):  # whatever the tokenizer: a usage error (exit 2)
        result = CliRunner().invoke(main, ["encode", "-t", str(gpt2), "--engine", "tiktoken", *args, str(sample)])
        assert result.exit_code == 2
        assert [line for line in result.stderr.splitlines() if line.startswith("Error:")] == [
            f"Error: --engine tiktoken {reason}"
        ]


def test_gpt2_truncation_on_tiktoken_keeps_the_head(sample: Path) -> None:
    gpt2 = ref_vocab_dir("gpt2")
    expected = run("-t", gpt2, "--max-length", "5", "--engine", "tokenizers", sample)
    assert run("-t", gpt2, "--max-length", "5", "--engine", "tiktoken", sample) == expected
    assert all(len(line.split()) <= 5 for line in expected.splitlines())


# ---------------------------------------------------------------------------------------------
# --verify: a sample of lines re-encoded by the reference, output lines compared
# ---------------------------------------------------------------------------------------------


def test_verify_checks_a_sample_of_lines_against_the_reference(sample: Path, tmp_path: Path) -> None:
    gpt2 = ref_vocab_dir("gpt2")
    checked = encode_corpus([sample], gpt2, tmp_path / "ids.txt", format="ids", verify=8)
    # the sample is 64 KB at least: every line of this smaller input is checked
    lines = [line for line in sample.read_text(encoding="utf-8").split("\n") if line]
    assert checked.engine == "gigatoken"
    assert (checked.verified, checked.verified_bytes) == (len(lines), sum(len(line.encode()) for line in lines))
    assert encode_corpus([sample], gpt2, tmp_path / "off.txt", format="ids", verify=0).verified == 0
    # the reference is not checked against itself
    assert encode_corpus([sample], gpt2, tmp_path / "ref.txt", format="ids", engine="reference", verify=8).verified == 0
    assert (
        (tmp_path / "ids.txt").read_bytes()
        == (tmp_path / "off.txt").read_bytes()
        == (tmp_path / "ref.txt").read_bytes()
    )


def _broken_where(monkeypatch: pytest.MonkeyPatch, cls: type, method: str, word: str, change) -> None:
    """Make ``cls.method`` (an engine's batch call) wrong on the lines that contain ``word``."""
    real = getattr(cls, method)

    def broken(self, inputs, *args):
        out = real(self, inputs, *args)
        return [change(row) if word in text else row for text, row in zip(inputs, out)]

    monkeypatch.setattr(cls, method, broken)


def _numbers_of_lines_with(path: Path, word: str) -> set[int]:
    return {n for n, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1) if word in line}


def test_a_wrong_id_stops_the_run_naming_the_file_and_line_and_writes_nothing(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toktools.engines.tiktoken_engine import TiktokenEngine

    _broken_where(monkeypatch, TiktokenEngine, "encode_batch", " the ", lambda ids: [i + 1 for i in ids])
    out = tmp_path / "ids.txt"
    result = CliRunner().invoke(
        main,
        [
            "encode",
            "-q",
            "-t",
            str(ref_vocab_dir("gpt2")),
            "--format",
            "ids",
            "--engine",
            "tiktoken",
            "--verify",
            "200",
            "-o",
            str(out),
            str(sample),
        ],
    )
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1, result.output
    found = re.match(
        r"toktools: error: engine tiktoken disagrees with the reference on (.+), line (\d+) \(character \d+",
        result.output,
    )
    assert found, result.output
    assert found.group(1) == str(sample) and int(found.group(2)) in _numbers_of_lines_with(sample, " the ")
    assert not list(tmp_path.iterdir())  # no output, no temporary file


def test_wrong_offsets_alone_are_found_in_jsonl_and_on_standard_output(
    sample: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output lines are compared, not only the ids: a fast engine whose offsets are off is
    stopped too; on standard output nothing of the batch holding the difference is printed."""
    from toktools.corpus import text_outputs as encode_text

    def shifted(row):
        return encode_text.Row(row.ids, row.tokens, [[a + 1, b + 1] for a, b in row.offsets], row.type_ids)

    _broken_where(monkeypatch, encode_text._Tokenizers, "encode", "和", shifted)
    result = CliRunner().invoke(
        main,
        [
            "encode",
            "-q",  # (the file's truncation and padding are warned about)
            "-t",
            str(ref_vocab_dir("bert-base-uncased")),
            "--format",
            "jsonl",
            "--engine",
            "tokenizers",
            "--verify",
            "300",
            str(sample),
        ],
    )
    assert result.exit_code == 1
    assert result.output.startswith("toktools: error: engine tokenizers disagrees with the reference on ")
    assert len(result.output.strip().splitlines()) == 1, result.output[:300]
    line = int(re.search(r", line (\d+) ", result.output).group(1))
    assert line in _numbers_of_lines_with(sample, "和")


def test_a_difference_on_standard_input_is_named_and_nothing_is_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    from toktools.engines.tiktoken_engine import TiktokenEngine

    _broken_where(monkeypatch, TiktokenEngine, "encode_batch", "second", lambda ids: [i + 1 for i in ids])
    result = CliRunner().invoke(
        main,
        ["encode", "-q", "-t", str(ref_vocab_dir("gpt2")), "--engine", "tiktoken"],
        input="the first line, a little longer\nthe second line\n" * 20,
    )
    assert result.exit_code == 1
    assert result.output.startswith(
        "toktools: error: engine tiktoken disagrees with the reference on standard input, line "
    )
    assert len(result.output.strip().splitlines()) == 1, result.output
