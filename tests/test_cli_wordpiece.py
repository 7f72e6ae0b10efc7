"""The command line for WordPiece: ``toktools train wordpiece`` and ``toktools encode`` with a
WordPiece tokenizer directory.

Pinned here:

* ``train wordpiece`` writes ``vocab.txt`` and ``tokenizer.json``; on the small fixture corpus
  the token set equals what ``tokenizers.BertWordPieceTokenizer.train`` learns with the same
  settings, for the reference backend and for ``--backend fast`` (and the two backends agree);
  ``--cased`` keeps case in the vocabulary and the saved normaliser; ``--algorithm likelihood``
  (with ``--min-pair-frequency``) writes what the library's likelihood trainer writes;
* user errors (missing corpus, invalid UTF-8, empty corpus, existing output without
  ``--force``, an option the fast backend cannot honour) end with exit code 1 and one readable
  line on stderr, never a traceback;
* ``encode -t DIR`` prints one line per input line: the ids (or tokens) that tokenizers gives
  for the same ``tokenizer.json``, with ``[CLS]``/``[SEP]`` unless ``--no-add-special-tokens``;
  a directory holding only a ``vocab.txt`` behaves like ``BertWordPieceTokenizer(vocab.txt)``.

The fixture ``tests/fixtures/wordpiece_cli_corpus.txt`` is a small text written for these tests.
``tokenizers``' trainer is not deterministic when a ``vocab_size`` cut falls among pairs of equal
count (spec §6), so the sizes used below stop right after a merge whose count is strictly
higher than the next one: 96 tokens lower-cased (89 base symbols + 7 merges, counts 67 … 14,
next 13) and 117 cased (110 + 7). 60 tokenizers runs at 96 all gave the same set.

Uses click's ``CliRunner`` (click >= 8.2 keeps ``result.stdout`` and ``result.stderr`` apart).
"""

from __future__ import annotations

import json
import shutil
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ref_vocab_dir
from tokenizers import BertWordPieceTokenizer, Tokenizer

import toktools
from toktools.cli import main
from toktools.models.wordpiece.model import dumps_vocab_txt

CORPUS = Path(__file__).parent / "fixtures" / "wordpiece_cli_corpus.txt"
FILES = ("vocab.txt", "tokenizer.json")
STABLE_UNCASED, STABLE_CASED = 96, 117

_CLICK = tuple(int(part) for part in version("click").split(".")[:2])
pytestmark = pytest.mark.skipif(_CLICK < (8, 2), reason="needs click >= 8.2 (separate result.stderr)")


def run(*args, input: str | bytes | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def vocab_lines(directory: Path) -> list[str]:
    return (directory / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]


def hf_trained_set(vocab_size: int, lowercase: bool = True) -> set[str]:
    tokenizer = BertWordPieceTokenizer(lowercase=lowercase)
    tokenizer.train([str(CORPUS)], vocab_size=vocab_size, show_progress=False)
    return set(tokenizer.get_vocab(with_added_tokens=False))


def assert_one_line_error(result, *fragments: str) -> None:
    """Exit code 1, a single ``toktools: error:`` line on stderr naming ``fragments``, nothing
    on stdout, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.stdout, result.stderr)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("toktools: error:"), lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# ---------------------------------------------------------------------------------------------
# train wordpiece
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli-wp") / "reference"
    result = run(
        "train", "wordpiece", CORPUS, "-o", out, "--vocab-size", STABLE_UNCASED, "--workers", 1, "--no-progress"
    )
    assert result.exit_code == 0, result.stderr
    return out


def test_train_writes_vocab_txt_and_tokenizer_json(trained_dir):
    """Both files exist; ``vocab.txt`` starts with BERT's five specials (the CLI default, in
    order) and holds exactly the token set tokenizers learns with the same settings."""
    written = sorted(p.name for p in trained_dir.iterdir() if not p.name.startswith("."))
    assert written == sorted(
        FILES + ("tokenizer_config.json", "special_tokens_map.json")
    )  # transformers config: default
    tokens = vocab_lines(trained_dir)
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(tokens) == STABLE_UNCASED
    assert set(tokens) == hf_trained_set(STABLE_UNCASED)


def test_train_output_is_what_the_api_writes(trained_dir, tmp_path):
    """The CLI is a thin layer: same bytes as ``toktools.train_wordpiece(...).save(...)`` with
    the CLI's defaults (min_frequency 2, limit_alphabet 1000, lower-casing)."""
    toktools.train_wordpiece([str(CORPUS)], STABLE_UNCASED, workers=1).save(tmp_path)
    for name in FILES:
        assert (trained_dir / name).read_bytes() == (tmp_path / name).read_bytes()


def test_train_summary_goes_to_stderr(tmp_path):
    """Nothing on stdout; a short summary on stderr naming the written files."""
    result = run("train", "wordpiece", CORPUS, "-o", tmp_path / "out", "--vocab-size", STABLE_UNCASED, "--no-progress")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "vocab.txt" in result.stderr and "tokenizer.json" in result.stderr
    assert "Traceback" not in result.stderr


def test_trained_tokenizer_json_loads_in_tokenizers(trained_dir):
    """The written ``tokenizer.json`` encodes like tokenizers' ``Tokenizer.from_file`` of it."""
    theirs = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    ours = toktools.load(trained_dir)
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        assert ours.encode(line).ids == theirs.encode(line).ids


def test_fast_backend_gives_the_same_token_set(trained_dir, tmp_path):
    """``--backend fast`` (HuggingFace tokenizers) and the reference backend learn the same set
    at a size where tokenizers is stable; both start with the specials in order."""
    out = tmp_path / "fast"
    result = run("train", "wordpiece", CORPUS, "-o", out, "--vocab-size", STABLE_UNCASED, "--backend", "fast")
    assert result.exit_code == 0, result.stderr
    fast_tokens, reference_tokens = vocab_lines(out), vocab_lines(trained_dir)
    assert set(fast_tokens) == set(reference_tokens)
    assert fast_tokens[:5] == reference_tokens[:5]
    assert json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["model"]["type"] == "WordPiece"


@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_cased(tmp_path, backend):
    """``--cased``: upper-case letters stay in the alphabet, the saved normaliser has
    ``lowercase: false``, and the set equals tokenizers' with ``lowercase=False``."""
    out = tmp_path / "cased"
    result = run("train", "wordpiece", CORPUS, "-o", out, "--vocab-size", STABLE_CASED, "--cased", "--backend", backend)
    assert result.exit_code == 0, result.stderr
    tokens = vocab_lines(out)
    assert "T" in tokens and "W" in tokens
    assert set(tokens) == hf_trained_set(STABLE_CASED, lowercase=False)
    normalizer = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"]
    assert normalizer["lowercase"] is False
    theirs = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert theirs.encode("The Town").tokens == toktools.load(out).encode("The Town").tokens
    assert "T" in "".join(theirs.encode("The Town").tokens)


def test_algorithm_likelihood(tmp_path):
    """``--algorithm likelihood --min-pair-frequency 3`` writes what
    ``train_wordpiece(algorithm="likelihood", min_pair_frequency=3)`` learns, of the requested size."""
    out = tmp_path / "lk"
    result = run(
        "train",
        "wordpiece",
        CORPUS,
        "-o",
        out,
        "--vocab-size",
        130,
        "--algorithm",
        "likelihood",
        "--min-pair-frequency",
        3,
    )
    assert result.exit_code == 0, result.stderr
    expected = toktools.train_wordpiece([str(CORPUS)], 130, algorithm="likelihood", min_pair_frequency=3, workers=1)
    assert (out / "vocab.txt").read_text(encoding="utf-8") == dumps_vocab_txt(expected.vocab)
    assert len(vocab_lines(out)) == 130
    default = tmp_path / "lk-default"
    assert (
        run("train", "wordpiece", CORPUS, "-o", default, "--vocab-size", 130, "--algorithm", "likelihood").exit_code
        == 0
    )
    assert vocab_lines(default) != vocab_lines(out), "--min-pair-frequency should change the result"


def test_existing_output_needs_force(trained_dir, tmp_path):
    """A second run into a directory holding the files fails and leaves them alone; with
    ``--force`` it overwrites them."""
    out = tmp_path / "again"
    shutil.copytree(trained_dir, out)
    before = {name: (out / name).read_bytes() for name in FILES}
    result = run("train", "wordpiece", CORPUS, "-o", out, "--vocab-size", 100)
    assert_one_line_error(result, "--force", "vocab.txt")
    assert {name: (out / name).read_bytes() for name in FILES} == before
    result = run("train", "wordpiece", CORPUS, "-o", out, "--vocab-size", 100, "--force")
    assert result.exit_code == 0, result.stderr
    assert len(vocab_lines(out)) == 100


@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_missing_corpus_file(tmp_path, backend):
    result = run("train", "wordpiece", tmp_path / "nope.txt", "-o", tmp_path / "out", "--backend", backend)
    assert_one_line_error(result, "nope.txt")
    assert not (tmp_path / "out" / "vocab.txt").exists()


@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_invalid_utf8_names_file_and_line(tmp_path, backend):
    """Invalid UTF-8 (an error in tokenizers too): the one-line message names the file and the
    line, whichever backend trains."""
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"first line\nsecond line\nthird \xff line\nfourth\n")
    result = run("train", "wordpiece", bad, "-o", tmp_path / "out", "--backend", backend)
    assert_one_line_error(result, "bad.txt", "line 3", "UTF-8")
    assert not (tmp_path / "out" / "vocab.txt").exists()


@pytest.mark.parametrize("backend", ["reference", "fast"])
@pytest.mark.parametrize("content", [b"", b"\n\n   \n\t\n"], ids=["empty-file", "only-whitespace"])
def test_empty_corpus(tmp_path, content, backend):
    """A corpus with no words at all: nothing to learn from, no files written — whichever
    backend is asked to train."""
    empty = tmp_path / "empty.txt"
    empty.write_bytes(content)
    result = run("train", "wordpiece", empty, "-o", tmp_path / "out", "--backend", backend)
    assert_one_line_error(result, "empty")
    assert not (tmp_path / "out" / "vocab.txt").exists()


def test_fast_backend_refuses_likelihood(tmp_path):
    """Conflicting options are a usage error (exit 2), found before any work."""
    result = run("train", "wordpiece", CORPUS, "-o", tmp_path / "out", "--backend", "fast", "--algorithm", "likelihood")
    assert result.exit_code == 2, result.stderr
    assert "Error: --backend fast trains the bpe algorithm only" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_corpus_from_stdin(trained_dir, tmp_path):
    """``-`` reads the corpus from standard input: same files as from the file."""
    out = tmp_path / "stdin"
    result = run("train", "wordpiece", "-", "-o", out, "--vocab-size", STABLE_UNCASED, input=CORPUS.read_bytes())
    assert result.exit_code == 0, result.stderr
    for name in FILES:
        assert (out / name).read_bytes() == (trained_dir / name).read_bytes()


# ---------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------

INPUT_LINES = ["The bakery opened early.", "Naïve CAFÉ owners, 北京!", "", "  spaced   out  ", "[MASK] and [mask]"]


def hf_lines(tokenizer, lines, add_special_tokens=True, field="ids") -> str:
    return "".join(
        " ".join(map(str, getattr(tokenizer.encode(line, add_special_tokens=add_special_tokens), field))) + "\n"
        for line in lines
    )


@pytest.mark.parametrize("field", ["ids", "tokens"])
def test_encode_prints_tokenizers_ids_and_tokens(trained_dir, field):
    """One output line per input line, the ids (or tokens) of tokenizers' ``Tokenizer.from_file``
    on our ``tokenizer.json``, ``[CLS]`` first and ``[SEP]`` last."""
    stdin = "\n".join(INPUT_LINES) + "\n"
    result = run("encode", "-t", trained_dir, "--format", field, input=stdin.encode("utf-8"))
    assert result.exit_code == 0, result.stderr
    theirs = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    assert result.stdout == hf_lines(theirs, INPUT_LINES, field=field)
    if field == "tokens":
        rows = result.stdout.splitlines()
        assert len(rows) == len(INPUT_LINES)
        assert all(row.split()[0] == "[CLS]" and row.split()[-1] == "[SEP]" for row in rows)
        assert rows[4].split().count("[MASK]") == 1  # "[mask]" is not the special token


def test_encode_without_special_tokens(trained_dir):
    """``--no-add-special-tokens``: no [CLS]/[SEP]; the empty line gives an empty output line."""
    stdin = "\n".join(INPUT_LINES) + "\n"
    result = run(
        "encode", "-t", trained_dir, "--format", "tokens", "--no-add-special-tokens", input=stdin.encode("utf-8")
    )
    assert result.exit_code == 0, result.stderr
    theirs = Tokenizer.from_file(str(trained_dir / "tokenizer.json"))
    assert result.stdout == hf_lines(theirs, INPUT_LINES, add_special_tokens=False, field="tokens")
    rows = result.stdout.split("\n")
    assert "[CLS]" not in result.stdout.split() and rows[2] == ""


def test_encode_files_with_a_vocab_txt_only_directory(tmp_path):
    """A directory with just bert-base-uncased's ``vocab.txt``, inputs given as files: the ids
    of ``BertWordPieceTokenizer(vocab.txt)`` line by line, files in order."""
    shutil.copy(ref_vocab_dir("bert-base-uncased") / "vocab.txt", tmp_path / "vocab.txt")
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("Hello, World!\nunaffable\n", encoding="utf-8")
    second.write_text("foo[MASK]bar [mask]\n", encoding="utf-8")
    result = run("encode", "-t", tmp_path, first, second)
    assert result.exit_code == 0, result.stderr
    theirs = BertWordPieceTokenizer(str(tmp_path / "vocab.txt"))
    assert result.stdout == hf_lines(theirs, ["Hello, World!", "unaffable", "foo[MASK]bar [mask]"])
    assert result.stdout.splitlines()[0].split()[0] == "101"


def test_encode_missing_tokenizer(tmp_path):
    result = run("encode", "-t", tmp_path / "nowhere", input=b"hello\n")
    assert_one_line_error(result, "nowhere")


def test_encode_invalid_utf8_input(trained_dir, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\n")
    result = CliRunner().invoke(main, ["encode", "-t", str(trained_dir), str(bad)])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "line 2" in lines[0] and "UTF-8" in lines[0]
    assert "Traceback" not in result.stderr
