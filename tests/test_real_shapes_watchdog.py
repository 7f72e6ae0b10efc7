"""Every corpus command on every shape of ``tests/real_shapes.py``, under the watchdog (issue 21).

Each run is a real ``toktools`` process watched by ``tests/watchdog.py``: when it makes no
progress for 30 s (no output, no stderr, no CPU time in any of its processes) the test fails
with the stacks of every process, instead of the session waiting forever. Every pipe of the run
has the smallest socket buffers Linux grants, so a protocol that can block both ways blocks
every time. Each run must also be right: ids are compared with ``tokenizers``' own.

The default run samples the matrix (a few commands on small shapes); ``-m full`` runs every
command, format and engine on every shape, the long documents at full size.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import real_shapes
from watchdog import SMALL_SNDBUF, run_watched

REPO_ROOT = Path(__file__).resolve().parent.parent
VOCABS = {name: REPO_ROOT / "vocabs" / name / "tokenizer.json" for name in ("bytebpe-50k", "wordpiece-30k")}
EOS = {"bytebpe-50k": "</s>", "wordpiece-30k": "[SEP]"}

pytestmark = pytest.mark.shared

#: Small versions of the shapes for the default run (the same builders, fewer documents).
SMALL: dict[str, Callable[[Path], Path]] = {
    "long_documents": lambda p: real_shapes.long_documents(p, count=4, low=20_000, high=40_000),
    "chinese_paragraphs": lambda p: real_shapes.chinese_paragraphs(p, count=6, low=2_000, high=20_000),
    "crlf": lambda p: real_shapes.crlf(p, count=300),
    "mixed": lambda p: real_shapes.mixed(p, count=2),
}
#: Every shape at full size, and a single line with no newline (1 MB here: the 30 MB line is
#: the memory tests' business).
FULL: dict[str, Callable[[Path], Path]] = {
    **real_shapes.SHAPES,
    "single_line": lambda p: real_shapes.single_line(p, 1_000_000),
}


@functools.cache
def _shape(name: str, full: bool, folder: str) -> Path:
    builders = FULL if full else SMALL
    suffix = ".jsonl" if name.startswith("jsonl") else ".txt"
    return builders[name](Path(folder) / f"{name}{'-full' if full else ''}{suffix}")


@pytest.fixture(scope="session")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, bool], Path]:
    folder = str(tmp_path_factory.mktemp("shapes"))
    return lambda name, full=False: _shape(name, full, folder)


@functools.cache
def _hf(name: str):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(VOCABS[name]))


def _lines(path: Path) -> list[str]:
    """The input lines as toktools reads them: only ``\\n`` ends a line (``\\r`` is text)."""
    text = path.read_bytes().decode("utf-8")  # not read_text: it would turn \r\n into \n
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _documents(path: Path, mode: str) -> list[str]:
    if mode == "jsonl":
        return [json.loads(line)["text"] for line in _lines(path) if line.strip()]
    return _lines(path)


def _expected_flat(path: Path, mode: str, tokenizer: str, eos: bool) -> np.ndarray:
    """The ids a binary format must hold: each document's ``tokenizers`` ids (no template),
    followed by EOS for Megatron; documents without ids are dropped."""
    hf = _hf(tokenizer)
    eos_id = [hf.token_to_id(EOS[tokenizer])] if eos else []
    rows = [e.ids for e in hf.encode_batch(_documents(path, mode), add_special_tokens=False)]
    return np.array([i for row in rows if row for i in (*row, *eos_id)], dtype=np.int64)


def _encode_binary(tmp_path: Path, corpus: Path, fmt: str, engine: str, tokenizer: str = "bytebpe-50k") -> None:
    mode = "jsonl" if corpus.suffix == ".jsonl" else "line"
    out = tmp_path / "out"
    out.mkdir()
    name = {"megatron": "s", "npy": "s.npy", "bin": "s.bin"}[fmt]
    run = run_watched(
        ["encode", "-t", tokenizer, str(corpus), "--format", fmt, "--engine", engine, "--document", mode]
        + ["-o", str(out / name), "--dtype", "uint16"],
        watch=[out],
        sndbuf=SMALL_SNDBUF,
    )
    assert run.returncode == 0, run.stderr
    if fmt == "megatron":
        ids = np.fromfile(out / "s.bin", dtype=np.uint16)
    elif fmt == "npy":
        ids = np.load(out / "s.npy")
    else:
        ids = np.fromfile(out / "s.bin", dtype=np.uint16)
    expected = _expected_flat(corpus, mode, tokenizer, eos=fmt == "megatron")
    assert np.array_equal(ids.astype(np.int64), expected)


def _encode_text(tmp_path: Path, corpus: Path, fmt: str, engine: str, tokenizer: str = "bytebpe-50k") -> None:
    out = tmp_path / f"out.{fmt}"
    special = engine != "tiktoken"  # tiktoken cannot add the template's tokens: it refuses them
    run = run_watched(
        ["encode", "-t", tokenizer, str(corpus), "--format", fmt, "--engine", engine, "-o", str(out)]
        + ([] if special else ["--no-add-special-tokens"]),
        watch=[tmp_path],
        sndbuf=SMALL_SNDBUF,
    )
    assert run.returncode == 0, run.stderr
    encodings = _hf(tokenizer).encode_batch(_lines(corpus), add_special_tokens=special)  # the template applies
    got = out.read_bytes().decode("utf-8").split("\n")[:-1]
    assert len(got) == len(encodings)
    if fmt == "jsonl":
        assert [json.loads(line)["ids"] for line in got] == [e.ids for e in encodings]
    elif fmt == "ids":
        assert got == [" ".join(map(str, e.ids)) for e in encodings]
    else:
        assert got == [" ".join(e.tokens) for e in encodings]


BINARY = ("megatron", "npy", "bin")
TEXT = ("ids", "tokens", "jsonl")


# ---------------------------------------------------------------------------------------------
# The default run: a sample
# ---------------------------------------------------------------------------------------------


def test_text_lines_on_crlf_by_the_auto_engine(shapes, tmp_path: Path) -> None:
    _encode_text(tmp_path, shapes("crlf"), "ids", "auto")


def test_npy_on_chinese_paragraphs_by_the_reference_engine(shapes, tmp_path: Path) -> None:
    _encode_binary(tmp_path, shapes("chinese_paragraphs"), "npy", "reference")


def test_megatron_on_mixed_shapes_by_the_gigatoken_engine(shapes, tmp_path: Path) -> None:
    _encode_binary(tmp_path, shapes("mixed"), "megatron", "gigatoken")


# ---------------------------------------------------------------------------------------------
# -m full: every command, format and engine on every shape
# ---------------------------------------------------------------------------------------------

SHAPE_NAMES = sorted(FULL)


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
# gigatoken by name: on these small shapes auto takes tiktoken (it starts sooner), and gigatoken's
# block path is the one that reads its own blocks
@pytest.mark.parametrize("engine", ["auto", "gigatoken", "reference", "tokenizers", "tiktoken"])
@pytest.mark.parametrize("fmt", BINARY)
def test_binary_formats(shapes, tmp_path: Path, shape: str, engine: str, fmt: str) -> None:
    _encode_binary(tmp_path, shapes(shape, True), fmt, engine)


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize("tokenizer", ["wordpiece-30k"])
def test_the_wordpiece_ids_only_path(shapes, tmp_path: Path, shape: str, tokenizer: str) -> None:
    _encode_binary(tmp_path, shapes(shape, True), "megatron", "reference", tokenizer)


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize(
    "fmt, engine", [("ids", "auto"), ("ids", "reference"), ("tokens", "tiktoken"), ("jsonl", "tokenizers")]
)
def test_text_formats(shapes, tmp_path: Path, shape: str, fmt: str, engine: str) -> None:
    _encode_text(tmp_path, shapes(shape, True), fmt, engine)


def _ok(args: list[str], tmp_path: Path) -> str:
    run = run_watched(args, watch=[tmp_path], sndbuf=SMALL_SNDBUF)
    assert run.returncode == 0, run.stderr
    return run.stdout.decode("utf-8")


def _plain_lines(path: Path) -> list[str]:
    """Documents as compare and inspect read them: non-blank lines, line ending removed."""
    return [line.removesuffix("\r") for line in _lines(path) if line.strip()]


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_compare_corpus(shapes, tmp_path: Path, shape: str) -> None:
    corpus = shapes(shape, True)
    field = ["--field", "text"] if corpus.suffix == ".jsonl" else []
    report = json.loads(_ok(["compare", *VOCABS, "--corpus", str(corpus), *field, "--json"], tmp_path))
    documents = _documents(corpus, "jsonl") if field else _plain_lines(corpus)
    for name in VOCABS:
        metrics = report["metrics"][name]
        tokens = sum(len(e.ids) for e in _hf(name).encode_batch(documents, add_special_tokens=False))
        assert (metrics["documents"], metrics["tokens"]) == (len(documents), tokens)


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_inspect_corpus(shapes, tmp_path: Path, shape: str) -> None:
    corpus = shapes(shape, True)
    report = json.loads(_ok(["inspect", "bytebpe-50k", "--corpus", str(corpus), "--json"], tmp_path))
    assert report["corpus_usage"], report.keys()


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_count(shapes, tmp_path: Path, shape: str) -> None:
    counts = tmp_path / "c.counts"
    _ok(["count", str(shapes(shape, True)), "--model", "bytebpe", "-o", str(counts)], tmp_path)
    header = json.loads(counts.read_text(encoding="utf-8").split("\n")[1][1:])
    assert header["total"] > 0 and header["words"] > 0


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize("model", ["bytebpe", "wordpiece", "unigram"])
def test_train(shapes, tmp_path: Path, shape: str, model: str) -> None:
    from tokenizers import Tokenizer

    out = tmp_path / "tok"
    _ok(["train", model, str(shapes(shape, True)), "-o", str(out), "--vocab-size", "8000"], tmp_path)
    trained = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert 0 < trained.get_vocab_size() <= 8000


@pytest.mark.full
@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_pretrain_data(shapes, tmp_path: Path, shape: str) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "ex.parquet"
    _ok(
        ["pretrain-data", str(shapes(shape, True)), "-t", "wordpiece-30k", "-o", str(out), "--max-length", "128"],
        tmp_path,
    )
    assert pq.read_metadata(out).num_rows > 0
