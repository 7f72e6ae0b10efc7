"""A run killed with SIGKILL (or on a machine that went down) cannot remove its half-written
temporary files: they stay hidden beside the outputs, as large as the shard was when it died.
The next run that writes into that directory removes them, and only them: a temporary file whose
writer still lives (it holds a lock the kernel drops with the process), a fresh one, and files
that are not toktools' temporaries are left alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fcntl")  # no flock (Windows): nothing is swept

from toktools.cli import main  # noqa: E402
from toktools.io.outputs import FRESH_TAG, TEMPORARY_TAG, remove_orphans  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

#: A writer: one temporary file beside the target, half written, then it waits to be killed.
_WRITER = r"""
import os, sys, time
from pathlib import Path
from toktools.io.outputs import temporary_beside
handle, path = temporary_beside(Path(sys.argv[1]))
os.write(handle, b"half a shard")
print(path, flush=True)
time.sleep(600)
"""


def _start_writer(target: Path) -> tuple[subprocess.Popen, Path]:
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert writer.stdout is not None
    return writer, Path(writer.stdout.readline().strip())


def _kill(writer: subprocess.Popen) -> None:
    writer.kill()  # SIGKILL: nothing of the writer runs
    writer.wait()


def _age(path: Path, seconds: float = 60) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_the_next_encode_into_the_directory_removes_what_a_killed_run_left(tmp_path: Path) -> None:
    writer, orphan = _start_writer(tmp_path / "shard.bin")
    _kill(writer)
    assert orphan.exists() and TEMPORARY_TAG in orphan.name
    _age(orphan)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Tokenizers cut words.\n我是中国人\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["encode", "-t", "bytebpe-50k", "--format", "megatron", "-o", str(tmp_path / "shard"), str(corpus)]
    )
    assert result.exit_code == 0, result.output
    assert not orphan.exists()
    assert (tmp_path / "shard.bin").stat().st_size > 0
    assert not [p.name for p in tmp_path.iterdir() if TEMPORARY_TAG in p.name]


def test_a_live_writers_file_is_kept_until_it_dies(tmp_path: Path) -> None:
    writer, live = _start_writer(tmp_path / "shard.bin")
    try:
        _age(live)  # even when it has not written for a while
        assert remove_orphans(tmp_path) == []
        assert live.read_bytes() == b"half a shard"
    finally:
        _kill(writer)
    assert remove_orphans(tmp_path) == [live.name]
    assert not live.exists()


def test_an_orphan_is_removed_at_once_and_other_files_are_left_alone(tmp_path: Path) -> None:
    """A tagged temporary is locked from the moment it has its name: a free lock means its
    writer is gone, however recently it wrote (issue 22: an orphan used to survive a rerun
    within 10 s). Only a file still under its fresh name (created, not yet locked) gets the grace."""
    writer, orphan = _start_writer(tmp_path / "shard.bin")
    _kill(writer)
    notes = tmp_path / ".notes.tmp"  # a hidden temporary file, but not one of toktools'
    notes.write_text("mine", encoding="utf-8")
    _age(notes)
    fresh = tmp_path / f".shard.bin.{FRESH_TAG}.abcdefgh.tmp"  # between mkstemp and flock
    fresh.write_bytes(b"being created")
    os.utime(orphan)  # written just now
    assert remove_orphans(tmp_path) == [orphan.name]
    assert fresh.exists(), "a fresh file may be between its creation and its lock"
    _age(fresh)
    assert remove_orphans(tmp_path) == [fresh.name]
    assert notes.read_text(encoding="utf-8") == "mine"


def test_a_resume_with_nothing_to_write_removes_an_orphan(tmp_path: Path) -> None:
    """The sweep happens when the outputs are checked, not when the first temporary is made:
    a complete run resumed writes nothing and still removes what a killed run left."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Tokenizers cut words.\n\n我是中国人\n", encoding="utf-8")
    command = ["encode", "-t", "bytebpe-50k", "--format", "megatron", "--shard-tokens", "4"]
    first = CliRunner().invoke(main, [*command, "-o", str(tmp_path / "web"), str(corpus)])
    assert first.exit_code == 0, first.output
    writer, orphan = _start_writer(tmp_path / "web-00000.bin")
    _kill(writer)
    again = CliRunner().invoke(main, [*command, "-o", str(tmp_path / "web"), str(corpus)])
    assert again.exit_code == 0, again.output
    assert "nothing to do: 2 shards kept" in again.output
    assert not orphan.exists()
