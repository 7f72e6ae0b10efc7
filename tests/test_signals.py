"""Stopping toktools from outside: SIGTERM is handled like Ctrl-C, and no worker outlives it.

Each test starts ``python -m toktools.cli`` as a real process (with this checkout on the path and
a private TMPDIR), waits until it is working (its worker processes exist, or its temporary
directory does, and it has read some of its input), records the pids of its children from /proc,
sends the signal to the pid it started, and then checks the process table for survivors. Only
the processes these tests start are ever signalled.

No test races the machine: the input of every run that is signalled never ends. It is a FIFO
that a thread of the test keeps feeding with the same generated text (about 1 MB, so nothing
needs ``../shared``) until the reader goes away, so the work cannot finish before the signal
arrives, however fast or slow the machine is.
"""

from __future__ import annotations

import errno
import gzip
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 1 MB of varied text: one reading chunk, fed over and over by ``EndlessInput``."""
    rng = random.Random(7)
    words = [
        ("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))) for _ in range(20000)
    ]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 25))) for _ in range(10000)]
    path = tmp_path_factory.mktemp("signals") / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tokenizer_dir(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import toktools

    directory = tmp_path_factory.mktemp("tok")
    sample = directory / "sample.txt"
    sample.write_bytes(corpus.read_bytes()[:200_000])
    toktools.train_bytebpe([str(sample)], 600, workers=1).save(directory)
    return directory


class EndlessInput:
    """A FIFO that a thread of the test feeds with ``data`` over and over while a reader has it
    open: the reader never reaches its end. Each open by a reader gets a stream of its own
    (``tokenizers`` opens a file once to look at it, then again to read it); ``written`` counts
    the bytes the current reader has taken, the sign that the work it feeds is under way."""

    #: Written in pieces of this size, so that ``written`` follows a slow reader closely.
    PIECE = 1 << 16
    #: A pause after each copy of the text: a reader that only copies its input (parity's
    #: held-out split) fills the disk at most about 50 MB/s.
    PAUSE = 0.02

    def __init__(self, path: Path, data: bytes) -> None:
        os.mkfifo(path)
        self.path, self.data = path, data
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, name=f"feed {path.name}", daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        while not self._stop.is_set():
            try:  # non-blocking: fails with ENXIO while no reader has the FIFO open
                handle = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as err:
                if err.errno != errno.ENXIO:
                    raise
                time.sleep(0.01)
                continue
            os.set_blocking(handle, True)
            self.written = 0
            try:
                while not self._stop.is_set():
                    for start in range(0, len(self.data), self.PIECE):
                        self.written += os.write(handle, self.data[start : start + self.PIECE])
                    time.sleep(self.PAUSE)
            except BrokenPipeError:  # the reader closed it (or died): wait for the next one
                pass
            finally:
                os.close(handle)

    def read_end(self) -> int:
        """A descriptor of the FIFO's read end, for a child's standard input (opening it does
        not wait for the writer; the child inherits a blocking descriptor)."""
        handle = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(handle, True)
        return handle

    def close(self) -> None:
        """Stop feeding (the reader is gone by now, so a blocked write has failed too)."""
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def endless(corpus: Path, tmp_path: Path) -> Iterator[Callable[[str], EndlessInput]]:
    """``endless(name)``: an ``EndlessInput`` FIFO of the generated text at ``tmp_path/name``."""
    inputs: list[EndlessInput] = []

    def make(name: str) -> EndlessInput:
        inputs.append(EndlessInput(tmp_path / name, corpus.read_bytes()))
        return inputs[-1]

    yield make
    for endless_input in inputs:
        endless_input.close()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _descendants(pid: int) -> list[int]:
    """Children, their children...: the reference engine's workers for a large byte-level BPE
    input are forked by one process of its own (a zygote), not by toktools' main process."""
    found, todo = [], [pid]
    while todo:
        children = _children(todo.pop())
        found += children
        todo += children
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent's wait() counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _default_signal_handling() -> None:
    """In the child before exec: Ctrl-C and SIGTERM as a terminal gives them. A pytest started
    in the background by a shell without job control (``pytest &`` in a script, CI, nohup)
    ignores SIGINT, and an ignored signal stays ignored across exec: toktools would then rightly
    ignore it too (as every program started with ``&`` does), and the Ctrl-C test would fail."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Run:
    """One toktools process with a private TMPDIR."""

    def __init__(self, tmp_path: Path, *args: str, stdin: EndlessInput | None = None) -> None:
        self.tmp = tmp_path / "private-tmp"
        self.tmp.mkdir()
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TMPDIR=str(self.tmp), TOKTOOLS_CACHE_DIR="")
        standard_input = stdin.read_end() if stdin is not None else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "toktools.cli", *args],
                stdin=standard_input,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                preexec_fn=_default_signal_handling,
            )
        finally:
            if stdin is not None:
                os.close(standard_input)  # the child's copy only: the feeder sees it go
        self.workers: list[int] = []

    def wait_for(self, condition, what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None:
                pytest.fail(f"toktools ended before {what}: {self.process.stderr.read().decode()}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"timed out waiting for {what}")
            time.sleep(0.05)

    def wait_for_workers(self, count: int, feeding: EndlessInput) -> None:
        """Until ``count`` worker processes exist and the run has read more of its endless
        input (work went out to the workers)."""

        def enough() -> bool:
            self.workers = _descendants(self.process.pid)
            return len(self.workers) >= count

        self.wait_for(enough, f"{count} worker processes")
        self.wait_for_reading(feeding)
        self.workers = _descendants(self.process.pid)

    def wait_for_reading(self, feeding: EndlessInput, more: int = 1 << 18) -> None:
        """Until the run has taken ``more`` bytes (256 KB) more from ``feeding``."""
        target = feeding.written + more
        self.wait_for(lambda: feeding.written >= target, f"{more} more bytes of input read")

    def stop(self, signum: int) -> tuple[int, str]:
        self.process.send_signal(signum)
        try:
            _, stderr = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("toktools did not stop within 30 s of the signal")
        return self.process.returncode, stderr.decode()

    def survivors(self, within: float = 5.0) -> list[int]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if not any(_alive(pid) for pid in self.workers):
                return []
            time.sleep(0.1)
        return [pid for pid in self.workers if _alive(pid)]

    def kill(self) -> None:
        """Clean up after a failed test: only the processes this test started."""
        for pid in [self.process.pid, *self.workers]:
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.process.wait(timeout=10)


@pytest.mark.parametrize(
    "command, signum, code, message",
    [
        (
            ["train", "bytebpe", "{corpus}", "-o", "{out}", "--workers", "2", "--no-progress"],
            signal.SIGTERM,
            143,
            "toktools: terminated",
        ),
        (
            ["count", "{corpus}", "--model", "wordpiece", "-o", "{out}", "--workers", "2", "--no-progress"],
            signal.SIGINT,
            130,
            "toktools: interrupted",
        ),
        (
            ["count", "{corpus}", "--model", "bytebpe", "-o", "{out}", "--workers", "2", "--no-progress"],
            signal.SIGTERM,
            143,
            "toktools: terminated",
        ),
    ],
    ids=["train-sigterm", "count-sigint", "count-sigterm"],
)
def test_a_signal_stops_counting_with_one_line_and_no_survivors(tmp_path, endless, command, signum, code, message):
    out = tmp_path / "out"
    feeding = endless("corpus.txt")
    run = Run(tmp_path, *[a.format(corpus=feeding.path, out=out) for a in command])
    run.wait_for_workers(2, feeding)
    returncode, stderr = run.stop(signum)
    assert (returncode, stderr.strip()) == (code, message)
    assert run.survivors() == [], "worker processes outlived the parent"
    assert not out.exists() and os.listdir(run.tmp) == []


def test_workers_die_with_a_killed_parent(tmp_path, endless):
    """SIGKILL cannot be handled: the kernel takes the workers down with the parent."""
    feeding = endless("corpus.txt")
    run = Run(
        tmp_path, "count", str(feeding.path), "--model", "bytebpe", "-o", str(tmp_path / "counts"), "--workers", "2"
    )
    run.wait_for_workers(2, feeding)
    run.process.send_signal(signal.SIGKILL)
    run.process.wait(timeout=30)
    assert run.survivors(within=5.0) == [], "workers outlived a killed parent"


@pytest.mark.parametrize("output_format, engine", [("npy", "reference"), ("ids", None)], ids=["npy-reference", "ids"])
def test_sigterm_during_parallel_encode_leaves_no_partial_output(
    tmp_path, endless, tokenizer_dir, output_format, engine
):
    """No ``.out.XXXX.tmp`` beside the output, no BrokenPipeError from the workers, no worker
    left: with the reference engine's pool of processes (training data) and with the line
    encoder's. The endless input comes on standard input (a named input would be hashed to
    the end first, for the manifest)."""
    out_dir = tmp_path / "encoded"
    out_dir.mkdir()
    options = ["--engine", engine] if engine else ["--engine", "reference", "--batch-lines", "2000"]
    feeding = endless("stdin.txt")
    run = Run(
        tmp_path,
        "encode",
        "-t",
        str(tokenizer_dir),
        "-",
        "--format",
        output_format,
        "-o",
        str(out_dir / f"out.{output_format}"),
        "--workers",
        "2",
        "--no-progress",
        *options,
        stdin=feeding,
    )
    run.wait_for_workers(2, feeding)
    returncode, stderr = run.stop(signal.SIGTERM)
    assert (returncode, stderr.strip()) == (143, "toktools: terminated")
    assert run.survivors() == []
    assert os.listdir(out_dir) == [] and os.listdir(run.tmp) == []


def test_sigterm_during_a_threaded_encode_leaves_no_partial_output(tmp_path, endless, tokenizer_dir):
    """The tiktoken engine encodes on threads: SIGTERM once the output's temporary file holds
    data (its first million ids were written)."""
    out_dir = tmp_path / "encoded"
    out_dir.mkdir()
    feeding = endless("stdin.txt")
    run = Run(
        tmp_path,
        "encode",
        "-t",
        str(tokenizer_dir),
        "-",
        "--format",
        "npy",
        "-o",
        str(out_dir / "out.npy"),
        "--engine",
        "tiktoken",
        "--workers",
        "2",
        "--no-progress",
        stdin=feeding,
    )
    run.wait_for(lambda: _largest_temporary(out_dir) >= 1 << 20, "the first MB in the temporary output file")
    returncode, stderr = run.stop(signal.SIGTERM)
    assert (returncode, stderr.strip()) == (143, "toktools: terminated")
    assert os.listdir(out_dir) == [] and os.listdir(run.tmp) == []


def _largest_temporary(directory: Path) -> int:
    """The size of the largest temporary output file in ``directory`` (0 if there is none)."""
    sizes = []
    for name in os.listdir(directory):
        if name.endswith(".tmp"):
            try:
                sizes.append((directory / name).stat().st_size)
            except FileNotFoundError:
                pass
    return max(sizes, default=0)


@pytest.fixture(scope="module")
def small_gz(corpus: Path) -> Path:
    """200 KB of the text, gzipped: decompressed into a temporary directory for tokenizers."""
    path = corpus.with_name("small.txt.gz")
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(corpus.read_bytes()[:200_000])
    return path


@pytest.mark.parametrize(
    "command, prefix",
    [
        (
            ["train", "bytebpe", "{gz}", "{fifo}", "-o", "{out}", "--backend", "fast", "--vocab-size", "2000"],
            "toktools-fast-",
        ),
        (["parity", "bytebpe", "{fifo}", "--vocab-size", "2000"], "toktools-parity-"),
    ],
    ids=["train-fast", "parity"],
)
def test_sigterm_removes_temporary_directories(tmp_path, endless, small_gz, command, prefix):
    """The decompressed copy for tokenizers lives in a temporary directory; SIGTERM removes it,
    also while tokenizers (native code, deaf to Python signal handlers) is training: it reads
    the endless input after the decompressed file. Parity copies its endless input (less the
    held-out lines) into its temporary directory."""
    feeding = endless("corpus.txt")
    run = Run(tmp_path, *[a.format(gz=small_gz, fifo=feeding.path, out=tmp_path / "out") for a in command])
    run.wait_for(lambda: any(name.startswith(prefix) for name in os.listdir(run.tmp)), "the temporary directory")
    run.wait_for_reading(feeding)  # tokenizers is training (or parity is copying)
    started = time.monotonic()
    returncode, stderr = run.stop(signal.SIGTERM)
    assert (returncode, stderr.strip()) == (143, "toktools: terminated")
    assert time.monotonic() - started < 15
    assert os.listdir(run.tmp) == []
    assert not (tmp_path / "out").exists()


#: The process signals itself from inside a fork hook (as a SIGTERM landing while a worker is
#: forked does): Python cannot propagate an exception from there and would print and drop it.
_SIGNAL_INSIDE_A_FORK_HOOK = """
import os, signal, sys
from toktools import cli
fired, signum = [], getattr(signal, sys.argv[4])
def signal_inside_the_fork_hook():
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), signum)
        sum(range(1000))  # the handler runs here, inside the hook
os.register_at_fork(after_in_parent=signal_inside_the_fork_hook)
sys.argv = ["toktools", "encode", "-t", sys.argv[1], sys.argv[2], "-o", sys.argv[3], "--workers", "2", "--engine", "reference"]
cli.main()
"""


@pytest.mark.parametrize(
    "name, code, message", [("SIGTERM", 143, "toktools: terminated"), ("SIGINT", 130, "toktools: interrupted")]
)
def test_a_signal_during_a_fork_is_not_lost(tmp_path, corpus, tokenizer_dir, name, code, message):
    """One line and the signal's exit code, promptly: not "Exception ignored" and a run that goes on."""
    private = tmp_path / "private-tmp"
    private.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TMPDIR=str(private))
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _SIGNAL_INSIDE_A_FORK_HOOK,
            str(tokenizer_dir),
            str(corpus),
            str(tmp_path / "ids.txt"),
            name,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        timeout=120,
        preexec_fn=_default_signal_handling,
    )
    assert (result.returncode, result.stderr.decode().strip()) == (code, message)
    assert time.monotonic() - started < 30
    assert not (tmp_path / "ids.txt").exists() and os.listdir(private) == []
