"""The one output policy (:mod:`toktools.io.outputs`), as a table: every command that writes a
file × every kind of place it may be asked to write to (issue 22).

* an output that *is* an input — the same path, a hard link, a symbolic link; always the
  *second* input — is refused, even with ``--force``, and the input is untouched;
* a device (``/dev/null``, through a symbolic link in the sandbox, and ``/dev/null`` itself for
  the single-file commands) and a FIFO (read by a thread of the test) are written *into*: they
  stay what they are, and the FIFO's reader gets the very bytes a regular file gets;
* a missing directory is created, and said on stderr;
* an existing file is refused without ``--force`` and replaced with it (a plot, whose commands
  have no ``--force``, is replaced);
* regular files get the mode the umask gives new files (022 → 0644, 077 → 0600).

Nothing here may replace ``/dev/null`` (the suite runs as root on CI machines): every test runs
with ``os.replace``/``os.rename``/``os.unlink`` refusing any path under ``/dev``, and checks
afterwards that ``/dev/null`` is still a character device. The default run takes a sample of
the table (every command once, every case once); ``-m full`` runs all of it.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

import toktools
from toktools.cli import main

SAMPLE = Path(__file__).parent / "fixtures" / "sample.txt"


# ---------------------------------------------------------------------------------------------
# The sandbox
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small byte-level BPE and a small WordPiece (it has [MASK], for pretrain-data)."""
    base = tmp_path_factory.mktemp("trained")
    toktools.train_bytebpe([str(SAMPLE)], 300, workers=1).save(base / "bpe")
    toktools.train_wordpiece([str(SAMPLE)], 200, workers=1).save(base / "wp")
    return base


@pytest.fixture(autouse=True)
def dev_is_untouchable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Whatever the code under test does, nothing under /dev is renamed over or removed."""

    def guarded(original: Callable[..., object], *checked: int) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            for index in checked:
                if index < len(args) and os.path.realpath(os.fspath(args[index])).startswith("/dev/"):  # type: ignore[arg-type]
                    raise AssertionError(f"{original.__name__} on {args[index]}: /dev must never be replaced")
            return original(*args, **kwargs)

        return call

    monkeypatch.setattr(os, "replace", guarded(os.replace, 0, 1))
    monkeypatch.setattr(os, "rename", guarded(os.rename, 0, 1))
    monkeypatch.setattr(os, "unlink", guarded(os.unlink, 0))
    yield
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is no longer a character device"


@dataclass
class Writer:
    """One command that writes, as the table runs it.

    ``argv(inputs, out)``: the command line, given the two inputs and the output (``-o``); the
    case that makes an output *be* an input puts the second input at ``primary(out)``.
    ``files(out)``: the regular files a run writes; ``primary(out)``: the one file the device,
    FIFO, link and existing-file cases stand at; ``input_bytes``: what the second input holds."""

    name: str
    argv: Callable[[list[Path], Path], list[str]]
    files: Callable[[Path], list[Path]]
    primary: Callable[[Path], Path] = lambda out: out
    input_bytes: Callable[[Path], bytes] = lambda trained: SAMPLE.read_bytes()
    force: bool = True  # has --force
    directory: bool = False  # -o names a directory
    marks: list = field(default_factory=list)


def _encode(fmt: str, *extra: str) -> Callable[[list[Path], Path], list[str]]:
    return lambda inputs, out: ["encode", "-t", "{bpe}", "--format", fmt, *extra, "-o", str(out), *map(str, inputs)]


WRITERS = [
    Writer("encode-ids", _encode("ids"), lambda out: [out]),
    Writer("encode-tokens", _encode("tokens"), lambda out: [out]),
    Writer("encode-jsonl", _encode("jsonl"), lambda out: [out]),
    Writer("encode-npy", _encode("npy"), lambda out: [out, out.with_name(out.stem + ".offsets.npy")]),
    Writer("encode-bin", _encode("bin"), lambda out: [out, out.with_name(out.stem + ".offsets.bin")]),
    Writer(
        "encode-megatron",
        _encode("megatron", "--no-append-eos"),
        lambda out: [Path(f"{out}.bin"), Path(f"{out}.idx")],
        primary=lambda out: Path(f"{out}.bin"),
    ),
    Writer(
        "encode-megatron-shards",
        _encode("megatron", "--no-append-eos", "--shard-tokens", "50"),
        lambda out: [Path(f"{out}-00000.bin"), Path(f"{out}-00000.idx"), Path(f"{out}-manifest.json")],
        primary=lambda out: Path(f"{out}-00000.bin"),
    ),
    Writer(
        "count",
        lambda inputs, out: ["count", *map(str, inputs), "--model", "bytebpe", "--workers", "1", "-o", str(out)],
        lambda out: [out],
    ),
    Writer(
        "pretrain-data",
        lambda inputs, out: ["pretrain-data", *map(str, inputs), "-t", "{wp}", "--max-length", "16", "-o", str(out)],
        lambda out: [out],
    ),
    Writer(
        "train",
        lambda inputs, out: [
            "train",
            "bytebpe",
            *map(str, inputs),
            "--vocab-size",
            "280",
            "--workers",
            "1",
            "-o",
            str(out),
        ],
        lambda out: [out / "vocab.json", out / "merges.txt", out / "tokenizer.json"],
        primary=lambda out: out / "tokenizer.json",
        directory=True,
    ),
    Writer(
        "convert",
        lambda inputs, out: ["convert", str(inputs[1]), "--to", "tokenizer.json", "-o", str(out)],
        lambda out: [out / "tokenizer.json"],
        primary=lambda out: out / "tokenizer.json",
        input_bytes=lambda trained: (trained / "bpe" / "tokenizer.json").read_bytes(),
        directory=True,
    ),
    Writer(
        "compare-plot",
        lambda inputs, out: ["compare", "{bpe}", "{wp}", *(f"--corpus={p}" for p in inputs), "--plot", str(out)],
        lambda out: [out],
        force=False,
    ),
    Writer(
        "inspect-plot",
        lambda inputs, out: ["inspect", "{bpe}", *(f"--corpus={p}" for p in inputs), "--plot", str(out)],
        lambda out: [out],
        force=False,
    ),
    Writer(
        "parity-keep",
        lambda inputs, out: ["parity", "bytebpe", *map(str, inputs), "--vocab-size", "280", "--keep", str(out)],
        lambda out: [out / "reference" / "tokenizer.json", out / "fast" / "tokenizer.json"],
        primary=lambda out: out / "reference" / "tokenizer.json",
        directory=True,
    ),
]
_BY_NAME = {writer.name: writer for writer in WRITERS}

#: The output's file name per command (plots need a known suffix).
_OUT_NAMES = {"compare-plot": "plot.png", "inspect-plot": "plot.png", "encode-npy": "ids.npy", "encode-bin": "ids.bin"}


@dataclass
class Sandbox:
    root: Path
    trained: Path
    writer: Writer
    first: Path
    second: Path

    @property
    def out(self) -> Path:
        return self.root / "out" / _OUT_NAMES.get(self.writer.name, "result")

    def run(self, out: Path, *, second: Path | None = None, force: bool = False) -> object:
        argv = self.writer.argv([self.first, second or self.second], out)
        argv = [a.format(bpe=self.trained / "bpe", wp=self.trained / "wp") for a in argv]
        if force and self.writer.force:
            argv.append("--force")
        return CliRunner().invoke(main, argv, input="")

    def expected(self) -> dict[str, bytes]:
        """What a run into a fresh directory writes, by file name (made once per test)."""
        fresh = self.root / "expected" / self.out.name
        result = self.run(fresh)
        assert result.exit_code == 0, (result.stderr, result.exception)
        return {str(p.relative_to(fresh.parent)): p.read_bytes() for p in self.writer.files(fresh)}


def _sandbox(tmp_path: Path, trained: Path, name: str) -> Sandbox:
    writer = _BY_NAME[name]
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    first = inputs / "first.txt"
    first.write_bytes(b"".join(lines[: len(lines) // 2]))
    second = inputs / ("tokenizer.json" if name == "convert" else "second.txt")
    second.write_bytes(writer.input_bytes(trained))
    (tmp_path / "out").mkdir()
    return Sandbox(tmp_path, trained, writer, first, second)


def _one_line(result: object, fragment: str) -> None:
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert result.exit_code == 1, (result.exit_code, result.stderr, result.exception)  # type: ignore[attr-defined]
    assert len(lines) == 1 and fragment in lines[0], lines


def _prepare_primary(box: Sandbox) -> Path:
    primary = box.writer.primary(box.out)
    primary.parent.mkdir(parents=True, exist_ok=True)
    return primary


# ---------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------


def case_output_is_input(box: Sandbox) -> None:
    """The second input given by the output's own path."""
    primary = _prepare_primary(box)
    data = box.writer.input_bytes(box.trained)
    primary.write_bytes(data)
    _one_line(box.run(box.out, second=primary, force=True), "over the input")
    assert primary.read_bytes() == data


def case_hard_link_to_input(box: Sandbox) -> None:
    primary = _prepare_primary(box)
    os.link(box.second, primary)
    _one_line(box.run(box.out, force=True), "over the input")
    assert box.second.read_bytes() == box.writer.input_bytes(box.trained)
    assert os.path.samefile(primary, box.second)


def case_symlink_to_input(box: Sandbox) -> None:
    primary = _prepare_primary(box)
    primary.symlink_to(box.second)
    _one_line(box.run(box.out, force=True), "over the input")
    assert box.second.read_bytes() == box.writer.input_bytes(box.trained)
    assert primary.is_symlink()


def case_device(box: Sandbox) -> None:
    """The output is /dev/null, named through a symbolic link in the sandbox: written into."""
    if box.writer.name == "parity-keep":
        pytest.skip("--keep replaces whole directories: no single file to point at a device")
    primary = _prepare_primary(box)
    primary.symlink_to("/dev/null")
    result = box.run(box.out, force=True)
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert primary.is_symlink() and os.readlink(primary) == "/dev/null"
    for written in box.writer.files(box.out):
        if written != primary:
            assert written.is_file() and written.stat().st_size > 0, written
    assert not [p for p in Path("/tmp").glob(".*toktools-tmp*") if primary.name in p.name]


def case_fifo(box: Sandbox) -> None:
    """The output is a FIFO that a thread reads: it gets what a regular file gets."""
    if box.writer.name == "parity-keep":
        pytest.skip("--keep replaces whole directories: no single file to be a FIFO")
    expected = box.expected()
    primary = _prepare_primary(box)
    os.mkfifo(primary)
    received: list[bytes] = []

    def read() -> None:
        with open(primary, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        result = box.run(box.out)  # no --force needed: nothing is overwritten
    finally:
        try:  # a run that failed before opening the FIFO: let the reader go
            os.close(os.open(primary, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        reader.join(timeout=60)
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert stat.S_ISFIFO(os.lstat(primary).st_mode), "the FIFO was replaced"
    assert received == [expected[str(primary.relative_to(box.out.parent))]]


def case_missing_directory(box: Sandbox) -> None:
    out = box.root / "out" / "new" / "deeper" / box.out.name
    result = box.run(out)
    assert result.exit_code == 0, (result.stderr, result.exception)
    for written in box.writer.files(out):
        assert written.is_file(), written
    if not box.writer.directory:
        assert f"created the directory {out.parent}" in result.stderr


def case_existing_without_force(box: Sandbox) -> None:
    primary = _prepare_primary(box)
    primary.write_bytes(b"earlier\n")
    result = box.run(box.out)
    if not box.writer.force:  # plots: the commands that draw have no --force, a plot is replaced
        assert result.exit_code == 0, (result.stderr, result.exception)
        assert primary.read_bytes().startswith(b"\x89PNG")
        return
    _one_line(result, "use --force")
    assert primary.read_bytes() == b"earlier\n"


def case_existing_with_force(box: Sandbox) -> None:
    expected = box.expected()
    primary = _prepare_primary(box)
    primary.write_bytes(b"earlier\n")
    os.chmod(primary, 0o640)
    result = box.run(box.out, force=True)
    assert result.exit_code == 0, (result.stderr, result.exception)
    key = str(primary.relative_to(box.out.parent))
    assert primary.read_bytes() == expected[key]
    assert stat.S_IMODE(primary.stat().st_mode) == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _case_umask(mask: int) -> Callable[[Sandbox], None]:
    def case(box: Sandbox) -> None:
        previous = os.umask(mask)
        try:
            result = box.run(box.out)
        finally:
            os.umask(previous)
        assert result.exit_code == 0, (result.stderr, result.exception)
        modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in box.writer.files(box.out)}
        assert modes == {str(p): oct(0o666 & ~mask) for p in box.writer.files(box.out)}

    return case


CASES: dict[str, Callable[[Sandbox], None]] = {
    "output-is-input": case_output_is_input,
    "hard-link": case_hard_link_to_input,
    "symlink": case_symlink_to_input,
    "dev-null": case_device,
    "fifo": case_fifo,
    "missing-directory": case_missing_directory,
    "existing": case_existing_without_force,
    "existing-force": case_existing_with_force,
    "umask-022": _case_umask(0o022),
    "umask-077": _case_umask(0o077),
}

#: The default run: every command once and every case once or more, along a diagonal of the table.
#: Besides, the rows the issue reported: pretrain-data over its own corpus (also as the second
#: input) and its 0600 files, a device and a FIFO under the binary formats, parity's --keep.
_SAMPLED = (
    {(writer.name, list(CASES)[i % len(CASES)]) for i, writer in enumerate(WRITERS)}
    | {(list(_BY_NAME)[i % len(WRITERS)], case) for i, case in enumerate(CASES)}
    | {
        ("pretrain-data", "output-is-input"),
        ("pretrain-data", "umask-077"),
        ("count", "dev-null"),
        ("encode-megatron", "fifo"),
        ("parity-keep", "output-is-input"),
    }
) - {("parity-keep", "dev-null")}
_TABLE = [
    pytest.param(writer, case, id=f"{writer}-{case}", marks=[] if (writer, case) in _SAMPLED else [pytest.mark.full])
    for writer in _BY_NAME
    for case in CASES
]


@pytest.mark.parametrize("writer, case", _TABLE)
def test_output_policy(tmp_path: Path, trained: Path, writer: str, case: str) -> None:
    CASES[case](_sandbox(tmp_path, trained, writer))


# ---------------------------------------------------------------------------------------------
# /dev/null and /dev/full themselves
# ---------------------------------------------------------------------------------------------

_SINGLE_FILE = ["encode-ids", "encode-jsonl", "count", "pretrain-data"]


@pytest.mark.parametrize("writer", _SINGLE_FILE)
def test_dev_null_itself_is_written_into(tmp_path: Path, trained: Path, writer: str) -> None:
    """``-o /dev/null --force``: as root, a rename would replace /dev/null for the whole machine."""
    box = _sandbox(tmp_path, trained, writer)
    before = os.stat("/dev/null")
    result = box.run(Path("/dev/null"), force=True)
    assert result.exit_code == 0, (result.stderr, result.exception)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert not [name for name in os.listdir("/dev") if "toktools" in name]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("writer", _SINGLE_FILE)
def test_dev_full_is_one_line_about_the_full_disk(tmp_path: Path, trained: Path, writer: str) -> None:
    box = _sandbox(tmp_path, trained, writer)
    _one_line(box.run(Path("/dev/full")), "No space left on device (the disk is full)")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


# ---------------------------------------------------------------------------------------------
# The finer points
# ---------------------------------------------------------------------------------------------


def test_an_input_inside_an_input_directory_is_never_an_output(tmp_path: Path, trained: Path) -> None:
    """A corpus given as a directory stands for every file below it."""
    box = _sandbox(tmp_path, trained, "count")
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    shutil.copy(SAMPLE, corpus / "sub" / "a.txt")
    argv = ["count", str(corpus), "--model", "bytebpe", "-o", str(corpus / "sub" / "a.txt"), "--force"]
    _one_line(CliRunner().invoke(main, argv), "over the input")
    assert (corpus / "sub" / "a.txt").read_bytes() == SAMPLE.read_bytes()
    del box


def test_standard_input_redirected_from_the_output_is_refused(tmp_path: Path) -> None:
    """``toktools count - -o corpus.txt --force < corpus.txt``."""
    import subprocess
    import sys

    corpus = tmp_path / "corpus.txt"
    shutil.copy(SAMPLE, corpus)
    with open(corpus, "rb") as stdin:
        run = subprocess.run(
            [sys.executable, "-m", "toktools.cli", "count", "-", "--model", "bytebpe", "-o", str(corpus), "--force"],
            stdin=stdin,
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent)),
        )
    assert run.returncode == 1 and "over the input standard input" in run.stderr, run.stderr
    assert corpus.read_bytes() == SAMPLE.read_bytes()


def test_a_socket_is_refused(tmp_path: Path, trained: Path) -> None:
    import socket

    box = _sandbox(tmp_path, trained, "count")
    path = box.out
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        _one_line(box.run(path, force=True), "is a socket")
    finally:
        server.close()


def test_a_run_refused_after_the_checks_creates_no_directory(tmp_path: Path, trained: Path) -> None:
    """The missing directory is made when the output is written, not when it is checked."""
    box = _sandbox(tmp_path, trained, "encode-ids")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    out = tmp_path / "new" / "ids.txt"
    result = CliRunner().invoke(main, ["encode", "-t", str(broken), str(box.first), "-o", str(out)])
    assert result.exit_code == 1
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("fmt", ["npy", "megatron"])
def test_a_device_named_for_a_format_of_several_files_is_refused(tmp_path: Path, trained: Path, fmt: str) -> None:
    """``--format npy -o /dev/null`` would also write /dev/null.offsets (in /dev, as root)."""
    box = _sandbox(tmp_path, trained, f"encode-{fmt}")
    before = set(os.listdir("/dev"))
    _one_line(box.run(Path("/dev/null"), force=True), "is a device, and this format also writes")
    assert set(os.listdir("/dev")) == before
