"""The command line: ``toktools train bytebpe`` and ``toktools encode`` for byte-level BPE.

Pinned here:

* ``train bytebpe`` writes ``vocab.json``, ``merges.txt`` and ``tokenizer.json``, byte-identical
  to what the Python API writes with the same settings; ``--backend fast`` (HuggingFace
  ``tokenizers``) writes the same files as the reference backend;
* existing output is only overwritten with ``--force``;
* user errors (missing corpus, invalid UTF-8, empty corpus, missing tokenizer) end with a non-zero
  exit code and one readable line on stderr, never a traceback;
* ``encode -t DIR`` prints one line per input line (ids or tokens), from stdin or files, and the
  ids are those of ``tokenizers`` loading the same ``tokenizer.json``.

Uses click's ``CliRunner`` (click >= 8.2 keeps stderr apart: ``result.stdout`` / ``result.stderr``)
and real files in ``tmp_path``. The small training corpus is ``tests/fixtures/bytebpe_cli_corpus.txt``.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ref_vocab_dir
from tokenizers import Tokenizer

import toktools
from toktools.cli import main
from toktools.training import tokenizers_backend as fast

CORPUS = Path(__file__).parent / "fixtures" / "bytebpe_cli_corpus.txt"
FILES = ("vocab.json", "merges.txt", "tokenizer.json")

_CLICK = tuple(int(part) for part in version("click").split(".")[:2])
pytestmark = pytest.mark.skipif(_CLICK < (8, 2), reason="needs click >= 8.2 (separate result.stderr)")


def run(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def read_files(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in FILES}


def assert_one_line_error(result, *fragments: str) -> None:
    """Non-zero exit, a single readable line on stderr mentioning ``fragments``, no traceback."""
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert lines[0].startswith("toktools: error:"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# ---------------------------------------------------------------------------------------------
# train bytebpe
# ---------------------------------------------------------------------------------------------


def test_train_writes_the_three_files_of_the_api(tmp_path):
    """Same files as ``toktools.train_bytebpe(...).save(...)`` with the CLI's defaults
    (min_frequency 2, no specials, no prefix space)."""
    out = tmp_path / "cli"
    result = run("train", "bytebpe", CORPUS, "-o", out, "--vocab-size", 350, "--workers", 1)
    assert result.exit_code == 0, result.stderr
    api = tmp_path / "api"
    toktools.train_bytebpe([str(CORPUS)], 350, workers=1).save(api)
    assert read_files(out) == read_files(api)
    assert "Traceback" not in result.stderr


def test_train_options_reach_the_trainer(tmp_path):
    """``--special-tokens``, ``--min-frequency``, ``--add-prefix-space``, ``--max-token-length``:
    the same files as the API called with the same values."""
    out = tmp_path / "cli"
    result = run(
        "train",
        "bytebpe",
        CORPUS,
        "-o",
        out,
        "--vocab-size",
        330,
        "--min-frequency",
        3,
        "--special-tokens",
        "<s>,<pad>,</s>",
        "--add-prefix-space",
        "--max-token-length",
        5,
    )
    assert result.exit_code == 0, result.stderr
    api = tmp_path / "api"
    toktools.train_bytebpe(
        [str(CORPUS)], 330, 3, ["<s>", "<pad>", "</s>"], add_prefix_space=True, max_token_length=5, workers=1
    ).save(api)
    assert read_files(out) == read_files(api)


def test_fast_backend_writes_the_same_files_as_the_reference(tmp_path):
    """``--backend fast`` trains with ``tokenizers``: byte-identical files to the reference backend,
    and its vocab.json / merges.txt are those of ``tokenizers``' own ``save_model``."""
    reference, fast_out, hf_out = tmp_path / "reference", tmp_path / "fast", tmp_path / "hf"
    options = ("--vocab-size", 350, "--special-tokens", "<|endoftext|>")
    assert run("train", "bytebpe", CORPUS, "-o", reference, *options).exit_code == 0
    result = run("train", "bytebpe", CORPUS, "-o", fast_out, "--backend", "fast", *options)
    assert result.exit_code == 0, result.stderr
    assert read_files(fast_out) == read_files(reference)
    fast.save_bytebpe(fast.train_bytebpe([str(CORPUS)], 350, special_tokens=["<|endoftext|>"]), hf_out)
    for name in ("vocab.json", "merges.txt"):
        assert (fast_out / name).read_bytes() == (hf_out / name).read_bytes()


def test_fast_backend_trains_on_a_plain_copy_of_a_compressed_corpus(tmp_path):
    """``tokenizers`` reads plain files only: a .gz corpus is decompressed into a temporary
    directory for it, and the files are those of the plain corpus."""
    import gzip

    packed = tmp_path / "corpus.txt.gz"
    packed.write_bytes(gzip.compress(CORPUS.read_bytes()))
    plain, from_gz = tmp_path / "plain", tmp_path / "gz"
    assert run("train", "bytebpe", CORPUS, "-o", plain, "--vocab-size", 350, "--backend", "fast").exit_code == 0
    result = run("train", "bytebpe", packed, "-o", from_gz, "--vocab-size", 350, "--backend", "fast")
    assert result.exit_code == 0, result.stderr
    assert read_files(from_gz) == read_files(plain)


def test_existing_output_is_only_overwritten_with_force(tmp_path):
    """A second run into the same directory refuses (and leaves the files alone) unless
    ``--force`` is given."""
    out = tmp_path / "out"
    assert run("train", "bytebpe", CORPUS, "-o", out, "--vocab-size", 350).exit_code == 0
    before = read_files(out)
    refused = run("train", "bytebpe", CORPUS, "-o", out, "--vocab-size", 300)
    assert_one_line_error(refused, "--force")
    assert read_files(out) == before
    forced = run("train", "bytebpe", CORPUS, "-o", out, "--vocab-size", 300, "--force")
    assert forced.exit_code == 0, forced.stderr
    assert read_files(out) != before
    assert len(toktools.load(out).vocab) == 300


def test_missing_corpus_file(tmp_path):
    """A corpus path that does not exist: one line naming it, exit code != 0, nothing written."""
    out = tmp_path / "out"
    result = run("train", "bytebpe", tmp_path / "no-such-corpus.txt", "-o", out)
    assert_one_line_error(result, "no-such-corpus.txt")
    assert not any((out / name).exists() for name in FILES)


@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_invalid_utf8_corpus_names_the_file_and_line(backend, tmp_path):
    """Spec §3: invalid UTF-8 is an error (as in ``tokenizers``); the message says which file and
    which line (line 3 of the second file here), whichever backend trains."""
    good, corpus = tmp_path / "good.txt", tmp_path / "broken.txt"
    good.write_bytes(b"a valid file\n")
    corpus.write_bytes(b"first line\nsecond line\nthird \xff\xfe line\nfourth\n")
    out = tmp_path / "out"
    result = run("train", "bytebpe", good, corpus, "-o", out, "--backend", backend)
    assert_one_line_error(result, "broken.txt", "line 3")
    assert not any((out / name).exists() for name in FILES)


def test_corpus_from_stdin(tmp_path):
    """``-`` reads the corpus from standard input: the same files as training on the file."""
    from_file, from_stdin = tmp_path / "file", tmp_path / "stdin"
    assert run("train", "bytebpe", CORPUS, "-o", from_file, "--vocab-size", 350).exit_code == 0
    result = run("train", "bytebpe", "-", "-o", from_stdin, "--vocab-size", 350, input=CORPUS.read_bytes())
    assert result.exit_code == 0, result.stderr
    assert read_files(from_stdin) == read_files(from_file)


def test_vocab_size_below_the_byte_alphabet(tmp_path):
    """A vocab size below specials + 256 cannot be honoured (``tokenizers`` would silently keep
    the whole byte alphabet and learn no merges): the CLI refuses it on both backends, names the
    smallest size that works, and writes nothing. The library keeps ``tokenizers``' behaviour."""
    for backend in ("reference", "fast"):
        out = tmp_path / backend
        result = run(
            "train",
            "bytebpe",
            CORPUS,
            "-o",
            out,
            "--vocab-size",
            100,
            "--special-tokens",
            "<s>,</s>",
            "--backend",
            backend,
        )
        assert_one_line_error(result, "smaller than the alphabet", "258")
        assert not any((out / name).exists() for name in FILES)
    assert len(toktools.train_bytebpe([str(CORPUS)], vocab_size=100).vocab) == 256


def test_empty_corpus(tmp_path):
    """An empty corpus has nothing to learn from: an error, not an empty vocabulary."""
    corpus = tmp_path / "empty.txt"
    corpus.write_bytes(b"")
    out = tmp_path / "out"
    result = run("train", "bytebpe", corpus, "-o", out)
    assert_one_line_error(result)
    assert "empty" in result.stderr
    assert not any((out / name).exists() for name in FILES)


# ---------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bpe_dir(tmp_path_factory) -> Path:
    """A small vocabulary with specials, trained and saved through the API."""
    directory = tmp_path_factory.mktemp("cli-bpe") / "bpe"
    toktools.train_bytebpe([str(CORPUS)], 400, special_tokens=["<s>", "</s>"], workers=1).save(directory)
    return directory


INPUT_LINES = [
    "Hello world",
    "",
    "我们今天去公园散步，天气很好。",
    "   leading and trailing spaces   ",
    "tabs\tand emoji 👍🏽 🇫🇷",
    "special <s> tokens </s> inside",
    "crlf line\r",
]


def expected_lines(directory: Path, lines: list[str], what: str) -> list[str]:
    hf = Tokenizer.from_file(str(directory / "tokenizer.json"))
    return [" ".join(map(str, getattr(hf.encode(line), what))) for line in lines]


@pytest.mark.parametrize("output_format, field", [("ids", "ids"), ("tokens", "tokens")])
def test_encode_stdin_one_line_per_input_line(output_format, field, bpe_dir):
    """Each input line (without its ``\\n``; a ``\\r`` stays part of the text) gives one output
    line: the ids or tokens ``tokenizers`` produces for it, space-separated. An empty line gives
    an empty line."""
    stdin = "\n".join(INPUT_LINES) + "\n"
    result = run("encode", "-t", bpe_dir, "--format", output_format, input=stdin.encode("utf-8"))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == expected_lines(bpe_dir, INPUT_LINES, field)
    assert result.stdout.endswith("\n")


def test_encode_files_and_dash_in_order(bpe_dir, tmp_path):
    """Files given as arguments are read in order; ``-`` is standard input; the default format is
    ids. A last line without ``\\n`` is still a line."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes("Hello world\n我们\n".encode())
    second.write_bytes(b"last line without newline")
    result = run("encode", "-t", bpe_dir, first, "-", second, input="from stdin\n")
    assert result.exit_code == 0, result.stderr
    lines = ["Hello world", "我们", "from stdin", "last line without newline"]
    assert result.stdout.split("\n")[:-1] == expected_lines(bpe_dir, lines, "ids")


def test_encode_with_the_published_gpt2_files():
    """``-t`` pointing at the published GPT-2 directory: "Hello world" → 15496 995."""
    result = run("encode", "-t", ref_vocab_dir("gpt2"), input="Hello world\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "15496 995\n"


def test_encode_missing_tokenizer_dir(tmp_path):
    """A tokenizer path that does not exist: one readable line, exit code != 0."""
    result = run("encode", "-t", tmp_path / "nowhere", input="Hello\n")
    assert_one_line_error(result, "nowhere")


def test_encode_missing_input_file(bpe_dir, tmp_path):
    """An input file that does not exist: one readable line naming it."""
    result = run("encode", "-t", bpe_dir, tmp_path / "absent.txt")
    assert_one_line_error(result, "absent.txt")


def test_encode_invalid_utf8_input_names_the_line(bpe_dir):
    """Invalid UTF-8 on standard input: one readable line that says which line, exit code != 0."""
    result = run("encode", "-t", bpe_dir, input=b"fine\nbroken \xff here\n")
    assert_one_line_error(result, "line 2")
