"""Inputs that can be read only once — a FIFO, a pipe named ``/dev/fd/N`` as ``<(zcat …)``
gives — and the readers that need them twice (issue 22): ``encode`` to npy/megatron hashes every
input before encoding it, ``tokenizers`` opens a file twice, ``compare --sample`` counts first.
Each gets the same result as from the regular file; resuming matches inputs by content, so the
same bytes by another path (or through a pipe) resume."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import toktools
from toktools.cli import main
from toktools.corpus.writers import read_megatron_documents
from toktools.io.inputs import read_once, rereadable

SAMPLE = Path(__file__).parent / "fixtures" / "sample.txt"


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bpe") / "bpe"
    toktools.train_bytebpe([str(SAMPLE)], 300, workers=1).save(directory)
    return directory


@contextmanager
def fifo(path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO at ``path`` that a thread feeds ``data`` once, to its first reader."""
    os.mkfifo(path)

    def feed() -> None:
        with open(path, "wb") as out:
            out.write(data)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield path
    finally:
        if feeder.is_alive():  # nobody read it all: take the rest, so that the feeder ends
            handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                while feeder.is_alive():
                    try:
                        os.read(handle, 1 << 16)
                    except BlockingIOError:
                        feeder.join(timeout=0.01)
            finally:
                os.close(handle)
        feeder.join()


@contextmanager
def process_substitution(data: bytes) -> Iterator[Path]:
    """``<(cat file)``: an anonymous pipe, named ``/dev/fd/N``, fed once by a thread."""
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(data)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield Path(f"/dev/fd/{read_end}")
    finally:
        os.close(read_end)
        feeder.join(timeout=30)


def _run(*argv: str) -> object:
    result = CliRunner().invoke(main, list(argv), input="")
    assert result.exit_code == 0, (result.stderr, result.exception)
    return result


@pytest.mark.parametrize("kind", ["fifo", "pipe"])
def test_encode_npy_from_an_input_read_once_has_every_id(tmp_path: Path, bpe: Path, kind: str) -> None:
    _run("encode", "-t", str(bpe), "--format", "npy", "-o", str(tmp_path / "file.npy"), str(SAMPLE))
    feeding = fifo(tmp_path / "corpus.fifo", SAMPLE.read_bytes()) if kind == "fifo" else None
    with feeding or process_substitution(SAMPLE.read_bytes()) as source:
        assert read_once(source)
        _run("encode", "-t", str(bpe), "--format", "npy", "-o", str(tmp_path / "once.npy"), str(source))
    expected = np.load(tmp_path / "file.npy")
    assert len(expected) > 100
    assert np.array_equal(np.load(tmp_path / "once.npy"), expected)
    assert np.array_equal(np.load(tmp_path / "once.offsets.npy"), np.load(tmp_path / "file.offsets.npy"))


def test_megatron_shards_from_a_pipe_resume_from_the_file_by_content(tmp_path: Path, bpe: Path) -> None:
    """The manifest records what the pipe carried; the same bytes named by the file's path (or by
    a symbolic link to it) are the same input: the run resumes instead of refusing."""
    command = ["encode", "-t", str(bpe), "--format", "megatron", "--no-append-eos", "--shard-tokens", "60"]
    with process_substitution(SAMPLE.read_bytes()) as source:
        _run(*command, "-o", str(tmp_path / "web"), str(source))
    link = tmp_path / "link.txt"
    link.symlink_to(SAMPLE)
    again = _run(*command, "-o", str(tmp_path / "web"), str(link))
    assert "nothing to do: 9 shards kept" in again.stderr  # type: ignore[attr-defined]
    _run(*command, "-o", str(tmp_path / "direct"), str(SAMPLE))
    shards = sorted(p.name for p in tmp_path.glob("web-0*.bin"))
    assert shards and shards == sorted(p.name.replace("direct", "web") for p in tmp_path.glob("direct-0*.bin"))
    for name in shards:
        prefix = name[: -len(".bin")]
        assert read_megatron_documents(tmp_path / prefix) == read_megatron_documents(
            tmp_path / prefix.replace("web", "direct")
        )


def test_other_inputs_are_still_refused_on_resume(tmp_path: Path, bpe: Path) -> None:
    command = ["encode", "-t", str(bpe), "--format", "megatron", "--no-append-eos", "--shard-tokens", "60"]
    _run(*command, "-o", str(tmp_path / "web"), str(SAMPLE))
    other = tmp_path / "other.txt"
    other.write_bytes(SAMPLE.read_bytes() + b"One more line.\n")
    result = CliRunner().invoke(main, [*command, "-o", str(tmp_path / "web"), str(other)])
    assert result.exit_code == 1 and "other inputs" in result.stderr, result.stderr


def test_train_fast_from_a_fifo_learns_what_the_file_teaches(tmp_path: Path) -> None:
    """``tokenizers`` opens a file once to look at it and again to read it: from a FIFO, the
    second open found nothing ("the corpus is empty")."""
    args = ["train", "bytebpe", "--backend", "fast", "--vocab-size", "300"]
    _run(*args, "-o", str(tmp_path / "from-file"), str(SAMPLE))
    with fifo(tmp_path / "corpus.fifo", SAMPLE.read_bytes()) as source:
        _run(*args, "-o", str(tmp_path / "from-fifo"), str(source))
    for name in ("vocab.json", "merges.txt"):
        assert (tmp_path / "from-fifo" / name).read_bytes() == (tmp_path / "from-file" / name).read_bytes()


def test_compare_sample_from_a_fifo_reads_it_once(tmp_path: Path, bpe: Path) -> None:
    """Counting the documents first would read the FIFO to its end: a one-pass sample instead."""
    with fifo(tmp_path / "corpus.fifo", SAMPLE.read_bytes()) as source:
        result = _run("compare", str(bpe), "--corpus", str(source), "--sample", "3", "--json")
    import json

    report = json.loads(result.output)  # type: ignore[attr-defined]
    assert report["metrics"] and all(stats["documents"] == 3 for stats in report["metrics"].values())


def test_rereadable_copies_once_and_removes_the_copy(tmp_path: Path) -> None:
    regular = tmp_path / "plain.txt"
    regular.write_bytes(b"plain\n")
    with fifo(tmp_path / "corpus.fifo", b"through a FIFO\n") as source:
        with rereadable([regular, source]) as paths:
            assert paths[0] == str(regular)
            copy = Path(paths[1])
            assert copy != source and not read_once(copy)
            assert copy.read_bytes() == copy.read_bytes() == b"through a FIFO\n"
    assert not copy.exists() and not copy.parent.exists()


def test_train_check_refuses_a_fifo_in_one_line(tmp_path: Path) -> None:
    with fifo(tmp_path / "corpus.fifo", SAMPLE.read_bytes()) as source:
        result = CliRunner().invoke(main, ["train", "bytebpe", str(source), "--check", "-o", str(tmp_path / "m")])
    assert result.exit_code == 2 and "a FIFO" in result.stderr, result.stderr


def test_blocks_refuse_a_pipe_in_one_line(tmp_path: Path, bpe: Path) -> None:
    """Blocks are read by offset (on other machines, with --cluster): a pipe cannot be cut."""
    with process_substitution(SAMPLE.read_bytes()) as source:
        result = CliRunner().invoke(
            main,
            [
                "encode",
                "-t",
                str(bpe),
                "--format",
                "megatron",
                "--no-append-eos",
                "--block-size",
                "1MB",
                "-o",
                str(tmp_path / "x"),
                str(source),
            ],
        )
    assert result.exit_code == 1 and "cannot be cut into blocks" in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []
