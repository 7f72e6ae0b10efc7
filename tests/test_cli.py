"""The command line as a user meets it: every command explains itself, errors are one readable
line, and the data commands (count, encode, decode, convert) round-trip real files.

Tokenizers here are trained on the project's own fixture, so nothing needs ``../shared``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import toktools
from toktools.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "sample.txt"


def run(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def assert_clean_error(result, *fragments: str) -> None:
    """A failure is a non-zero exit with one line on stderr and no traceback."""
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("toktools: error:") or lines[0].startswith("Error:") or "Usage" in result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


@pytest.fixture(scope="module")
def bpe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bpe")
    result = run("train", "bytebpe", str(FIXTURE), "-o", str(out), "--vocab-size", "400", "--force")
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def wp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wp")
    result = run("train", "wordpiece", str(FIXTURE), "-o", str(out), "--vocab-size", "300", "--force")
    assert result.exit_code == 0, result.stderr
    return out


def _all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = []
    for name, command in group.commands.items():
        path = prefix + (name,)
        found.append((path, command))
        if isinstance(command, click.Group):
            found.extend(_all_commands(command, path))
    return found


@pytest.mark.parametrize("path", [p for p, _ in _all_commands(main)], ids=lambda p: " ".join(p))
def test_every_command_has_help_with_an_example(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout, f"`toktools {' '.join(path)} --help` shows no example"
    assert "toktools " in result.stdout.split("Example", 1)[1]


def test_version_is_the_package_version() -> None:
    assert run("--version").stdout.strip().endswith(toktools.__version__)


def test_help_starts_fast_because_heavy_modules_load_lazily() -> None:
    """`toktools --help` must not import tokenizers, rich or regex."""
    code = "import sys, toktools.cli; print(sorted(m for m in ('tokenizers', 'rich', 'regex') if m in sys.modules))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert imported == "[]"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "toktools.cli", "--help"], capture_output=True, check=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    assert cpu < 5  # CPU seconds, which a busy machine does not stretch as it does wall time; typical ~0.1 s


def test_a_command_imports_only_its_own_module() -> None:
    """The group lists every command, but running one imports only its module (the others'
    imports are start-up cost for nothing); listing them (``--help``) imports them all."""
    code = (
        "import sys, toktools.cli as cli\n"
        "mine = lambda: sorted(m for m in sys.modules if m.startswith('toktools.commands.') and m != 'toktools.commands._shared')\n"
        "print(mine()); cli.main.commands['encode']; print(mine()); print(sorted(cli.main.commands) == sorted(cli.COMMANDS))"
    )
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert lines[:3] == ["[]", "['toktools.commands.encode']", "True"]


def test_count_then_train_from_counts_gives_the_same_vocabulary(tmp_path: Path, wp_dir: Path) -> None:
    counts = tmp_path / "sample.counts"
    assert run("count", str(FIXTURE), "--model", "wordpiece", "-o", str(counts)).exit_code == 0
    header = json.loads(counts.read_text(encoding="utf-8").splitlines()[1][1:])
    assert header["kind"] == "wordpiece" and header["settings"]["lowercase"] is True
    out = tmp_path / "from-counts"
    result = run("train", "wordpiece", "--from-counts", str(counts), "-o", str(out), "--vocab-size", "300")
    assert result.exit_code == 0, result.stderr
    assert (out / "vocab.txt").read_bytes() == (wp_dir / "vocab.txt").read_bytes()


def test_train_refuses_counts_made_with_other_settings(tmp_path: Path) -> None:
    counts = tmp_path / "cased.counts"
    assert run("count", str(FIXTURE), "--model", "wordpiece", "--cased", "-o", str(counts)).exit_code == 0
    result = run("train", "wordpiece", "--from-counts", str(counts), "-o", str(tmp_path / "x"))
    assert_clean_error(result, "other settings", "lowercase")
    result = run("train", "bytebpe", "--from-counts", str(counts), "-o", str(tmp_path / "y"))
    assert_clean_error(result, "wordpiece counts")


def test_a_corrupt_counts_file_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.counts"
    bad.write_text("hello\t3\n", encoding="utf-8")
    assert_clean_error(
        run("train", "wordpiece", "--from-counts", str(bad), "-o", str(tmp_path / "x")), "not a toktools counts file"
    )


def test_encode_formats_agree_with_the_library(tmp_path: Path, bpe_dir: Path) -> None:
    tok = toktools.load(bpe_dir)
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    ids_out = run("encode", "-t", str(bpe_dir), str(FIXTURE)).stdout.splitlines()
    assert ids_out == [" ".join(map(str, tok.encode(line).ids)) for line in lines]
    jsonl = [
        json.loads(line)
        for line in run("encode", "-t", str(bpe_dir), "--format", "jsonl", str(FIXTURE)).stdout.splitlines()
    ]
    assert [row["ids"] for row in jsonl] == [tok.encode(line).ids for line in lines]
    assert [row["offsets"] for row in jsonl] == [[list(o) for o in tok.encode(line).offsets] for line in lines]


def test_encode_npy_and_bin_hold_every_id_in_order(tmp_path: Path, bpe_dir: Path) -> None:
    np = pytest.importorskip("numpy")
    tok = toktools.load(bpe_dir)
    expected = [i for line in FIXTURE.read_text(encoding="utf-8").splitlines() for i in tok.encode(line).ids]
    npy, raw = tmp_path / "ids.npy", tmp_path / "ids.bin"
    assert run("encode", "-t", str(bpe_dir), "--format", "npy", "-o", str(npy), str(FIXTURE)).exit_code == 0
    assert (
        run(
            "encode", "-t", str(bpe_dir), "--format", "bin", "--dtype", "uint32", "-o", str(raw), str(FIXTURE)
        ).exit_code
        == 0
    )
    loaded = np.load(npy)
    assert loaded.dtype == np.uint16 and loaded.tolist() == expected
    assert np.fromfile(raw, dtype="<u4").tolist() == expected
    usage = run("encode", "-t", str(bpe_dir), "--format", "npy", str(FIXTURE))  # conflicting options: a usage error
    assert usage.exit_code == 2 and "Error: --format npy writes binary data" in usage.stderr


def test_encode_pairs_and_truncation(wp_dir: Path) -> None:
    tok = toktools.load(wp_dir)
    out = run("encode", "-t", str(wp_dir), "--pair", "--format", "jsonl", input="the quick fox\tthe lazy dog\n").stdout
    row = json.loads(out)
    expected = tok.encode("the quick fox", "the lazy dog")
    assert row["ids"] == expected.ids and row["type_ids"] == expected.type_ids
    assert row["type_ids"][-1] == 1 and row["tokens"][0] == "[CLS]"
    short = run("encode", "-t", str(wp_dir), "--max-length", "4", input="the quick brown fox jumps\n").stdout.split()
    assert len(short) == 4
    assert_clean_error(run("encode", "-t", str(wp_dir), "--pair", input="no tab here\n"), "TAB")


def test_decode_inverts_encode_for_byte_level(bpe_dir: Path) -> None:
    text = "Emoji 😀 and 我是中国人 round-trip.\n"
    ids = run("encode", "-t", str(bpe_dir), input=text).stdout
    assert run("decode", "-t", str(bpe_dir), input=ids).stdout == text
    assert_clean_error(run("decode", "-t", str(bpe_dir), input="12 x 3\n"), "integer ids")


def test_convert_writes_layouts_that_load_back(tmp_path: Path, bpe_dir: Path, wp_dir: Path) -> None:
    tok = toktools.load(bpe_dir)
    sample = "Tokenizers cut text 😀"
    for target in ("tokenizer.json", "vocab.json+merges.txt"):
        out = tmp_path / target.replace("+", "_")
        assert run("convert", str(bpe_dir), "--to", target, "-o", str(out)).exit_code == 0
        assert toktools.load(out).encode(sample).ids == tok.encode(sample).ids
    tik = tmp_path / "tiktoken"
    assert run("convert", str(bpe_dir), "--to", "tiktoken", "-o", str(tik)).exit_code == 0
    ranks = dict(line.split() for line in (tik / "tokenizer.tiktoken").read_text().splitlines())
    assert len(ranks) == len(tok.vocab)
    assert_clean_error(run("convert", str(wp_dir), "--to", "tiktoken", "-o", str(tmp_path / "no")), "BPE")


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("encode", "-t", "no/such/dir"), "no tokenizer at"),
        (("encode", "-t", "{fixture_dir}"), "no tokenizer found"),
        (("train", "bytebpe", "missing.txt", "-o", "{tmp}/o"), "not found"),
        (("train", "wordpiece", "-o", "{tmp}/o"), "no corpus given"),
    ],
)
def test_bad_paths_get_one_readable_line(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    filled = [a.format(tmp=tmp_path, fixture_dir=FIXTURE.parent) for a in args]
    assert_clean_error(run(*filled, input=""), fragment)


def test_a_corrupt_vocabulary_is_reported(tmp_path: Path) -> None:
    (tmp_path / "vocab.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n", encoding="utf-8")
    assert_clean_error(run("encode", "-t", str(tmp_path), input="hi\n"), "vocab.json")
    (tmp_path / "vocab.json").write_text('{"a": 0, "b": 1}', encoding="utf-8")
    assert_clean_error(run("encode", "-t", str(tmp_path), input="hi\n"), "missing from the vocabulary")


def test_invalid_utf8_in_a_corpus_names_file_and_line(tmp_path: Path) -> None:
    corpus = tmp_path / "bad.txt"
    corpus.write_bytes(b"good line\nanother\nbroken \xff here\n")
    assert_clean_error(run("train", "bytebpe", str(corpus), "-o", str(tmp_path / "o")), "bad.txt, line 3")
    ok = run("train", "bytebpe", str(corpus), "-o", str(tmp_path / "o"), "--errors", "replace", "--vocab-size", "260")
    assert ok.exit_code == 0, ok.stderr


def test_an_empty_corpus_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    assert_clean_error(run("train", "wordpiece", str(empty), "-o", str(tmp_path / "o")), "empty")


def test_existing_output_needs_force_and_nothing_is_half_written(tmp_path: Path, bpe_dir: Path) -> None:
    before = (bpe_dir / "vocab.json").read_bytes()
    result = run("train", "bytebpe", str(FIXTURE), "-o", str(bpe_dir), "--vocab-size", "300")
    assert_clean_error(result, "--force")
    assert (bpe_dir / "vocab.json").read_bytes() == before
    assert not [p for p in bpe_dir.iterdir() if p.name.endswith(".tmp")]


def test_json_lines_and_compressed_corpora_train_like_plain_text(tmp_path: Path) -> None:
    """``--field text`` reads JSON Lines; ``.gz``/``.xz``/``.bz2`` are read transparently: all give
    the vocabulary the plain file gives."""
    import bz2
    import gzip
    import lzma

    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"id": i, "text": line}, ensure_ascii=False) + "\n" for i, line in enumerate(lines)),
        encoding="utf-8",
    )
    compressed = []
    for suffix, opener in ((".gz", gzip.open), (".xz", lzma.open), (".bz2", bz2.open)):
        path = tmp_path / f"corpus.txt{suffix}"
        with opener(path, "wb") as out:
            out.write(FIXTURE.read_bytes())
        compressed.append(path)
    plain = tmp_path / "plain"
    assert run("train", "wordpiece", str(FIXTURE), "-o", str(plain), "--vocab-size", "300").exit_code == 0
    expected = (plain / "vocab.txt").read_bytes()
    from_jsonl = tmp_path / "jsonl"
    result = run("train", "wordpiece", str(jsonl), "--field", "text", "-o", str(from_jsonl), "--vocab-size", "300")
    assert result.exit_code == 0, result.stderr
    assert (from_jsonl / "vocab.txt").read_bytes() == expected
    for path in compressed:
        out = tmp_path / path.name.replace(".", "_")
        assert run("train", "wordpiece", str(path), "-o", str(out), "--vocab-size", "300").exit_code == 0
        assert (out / "vocab.txt").read_bytes() == expected
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text field"}\n', encoding="utf-8")
    assert_clean_error(
        run("train", "wordpiece", str(bad), "--field", "text", "-o", str(tmp_path / "x")), "bad.jsonl, line 2"
    )


def test_errors_skip_drops_only_the_broken_lines(tmp_path: Path) -> None:
    corpus = tmp_path / "mixed.txt"
    corpus.write_bytes(FIXTURE.read_bytes() + b"broken \xff line\n")
    skipped, plain = tmp_path / "skipped", tmp_path / "plain"
    assert (
        run("train", "wordpiece", str(corpus), "--errors", "skip", "-o", str(skipped), "--vocab-size", "300").exit_code
        == 0
    )
    assert run("train", "wordpiece", str(FIXTURE), "-o", str(plain), "--vocab-size", "300").exit_code == 0
    assert (skipped / "vocab.txt").read_bytes() == (plain / "vocab.txt").read_bytes()
