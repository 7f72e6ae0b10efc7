"""The one reader of text lines, and the one place that starts worker processes.

``corpus.read_lines`` serves encode, decode, inspect and parity's held-out files: every format
gives the same lines, ``\\r`` is text (only ``\\n`` ends a line, as in ``tokenizers``), and a bad
file is one error naming it. ``workers.process_pool`` never starts more processes than cores,
is not started at all for work too small to share, and stops its workers at once on an error.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import signal
import time
from pathlib import Path

import pytest

import toktools
from toktools.corpus import reading as corpus
from toktools.errors import ToktoolsError
from toktools.runtime import workers

TEXT = "first line\r\nsecond, with a tab\there\n\nlast line without newline"
LINES = ["first line\r", "second, with a tab\there", "", "last line without newline"]


@pytest.mark.parametrize(
    "suffix, compress",
    [("", lambda b: b), (".gz", gzip.compress), (".xz", lzma.compress), (".bz2", bz2.compress)],
    ids=["plain", "gz", "xz", "bz2"],
)
def test_every_format_gives_the_same_lines(tmp_path: Path, suffix: str, compress) -> None:
    path = tmp_path / f"text.txt{suffix}"
    path.write_bytes(compress(TEXT.encode("utf-8")))
    assert list(corpus.read_lines([str(path)])) == LINES
    assert "".join(corpus.read_lines([str(path)], keep_ends=True)) == TEXT


def test_lines_of_several_files_follow_each_other(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a1\na2\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("b1", encoding="utf-8")
    assert list(corpus.read_lines([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])) == ["a1", "a2", "b1"]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p.write_bytes(b"fine\nalso fine\nbad \xff byte\n"), "bad.txt, line 3: invalid UTF-8 (byte 0xFF)"),
        (lambda p: None, "file not found"),
        (lambda p: p.mkdir(), "is a directory"),
    ],
    ids=["invalid-utf8", "missing", "directory"],
)
def test_a_bad_file_is_one_error_naming_it(tmp_path: Path, make, message: str) -> None:
    path = tmp_path / "bad.txt"
    make(path)
    with pytest.raises(ToktoolsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        list(corpus.read_lines([str(path)]))


def test_a_corrupt_compressed_file_is_named(tmp_path: Path) -> None:
    truncated = tmp_path / "cut.txt.gz"
    truncated.write_bytes(gzip.compress(b"some text\n" * 1000)[:-50])
    with pytest.raises(ToktoolsError, match=r"cut\.txt\.gz: cannot decompress \(the file ends too early\)"):
        list(corpus.read_lines([str(truncated)]))
    fake = tmp_path / "fake.txt.gz"
    fake.write_bytes(b"plain text pretending\n")
    with pytest.raises(ToktoolsError, match=r"fake\.txt\.gz: cannot decompress"):
        list(corpus.read_lines([str(fake)]))


# ---------------------------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------------------------


def test_workers_are_capped_at_the_cores() -> None:
    cores = workers.available_cores()
    assert workers.cap_workers(1000) == cores
    assert workers.cap_workers(1) == 1 and workers.cap_workers(None) is None
    assert workers.worth_starting(1000, items=10 * 64 * cores, per_worker=64) == cores
    assert workers.worth_starting(8, items=100, per_worker=64) == 1  # not enough work for two


def _no_pool(*args, **kwargs):
    raise AssertionError("a process pool was started for a tiny input")


def test_tiny_inputs_are_not_forked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One chunk of corpus, or a handful of lines to encode: no worker process, even when asked."""
    monkeypatch.setattr(corpus, "process_pool", _no_pool)
    monkeypatch.setattr(workers, "process_pool", _no_pool)
    path = tmp_path / "small.txt"
    path.write_text("a small corpus\nof two lines\n", encoding="utf-8")
    assert corpus.count_words([corpus.CorpusSource(str(path))], str.split, workers=8) == {
        "a": 1,
        "small": 1,
        "corpus": 1,
        "of": 1,
        "two": 1,
        "lines": 1,
    }
    tokenizer = toktools.load("bytebpe-50k")
    lines = ["some text"] * 10
    assert tokenizer.encode_batch(lines, workers=8) == tokenizer.encode_batch(lines, workers=1)


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_an_error_in_the_pool_stops_the_workers_at_once() -> None:
    """Leaving the pool by an exception (Ctrl-C, SIGTERM, a bad chunk) drops the queued work and
    kills the workers: it does not wait for them to finish."""
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with workers.process_pool(2) as pool:
            futures = [pool.submit(_sleep, 30) for _ in range(4)]
            processes = list(pool._processes.values())
            raise KeyboardInterrupt
    assert time.monotonic() - started < 15
    assert not any(process.is_alive() for process in processes)
    assert all(future.cancelled() or future.done() for future in futures)


def _deaf_to_sigterm(started: str) -> None:
    """A task that ignores SIGTERM (as native code that blocks signals would), says it is
    running, then waits."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(started).touch()
    time.sleep(60)


def test_a_worker_deaf_to_sigterm_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that does not stop on SIGTERM within the grace period (shortened here) is killed."""
    monkeypatch.setattr(workers, "TERMINATE_GRACE_SECONDS", 0.5)
    started = tmp_path / "started"
    with pytest.raises(KeyboardInterrupt):
        with workers.process_pool(1) as pool:
            pool.submit(_deaf_to_sigterm, str(started))
            processes = list(pool._processes.values())
            deadline = time.monotonic() + 60
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert started.exists(), "the task did not start"
            raise KeyboardInterrupt
    assert processes and not any(process.is_alive() for process in processes)
