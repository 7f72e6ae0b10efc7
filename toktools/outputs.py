"""Where results are written: checked before any work, written atomically, never over an input.

Every command that writes files calls :func:`check_output_file` or :func:`check_output_dir`
*before* it starts working (training an hour and then finding the directory unwritable is
the failure this module exists to prevent). The checks refuse, with one line each:

* an existing output without ``force`` (and an output that is one of the inputs, even with it);
* a path where a file stands in for a directory (``-o notes.txt/sub``), or a directory for a file;
* a place this process cannot write to.

Long-lived temporary files and directories are registered, so that a SIGTERM that arrives while
the main thread is stuck in native code can still remove them (see :mod:`toktools.interrupts`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Sequence

from toktools.errors import ToktoolsError

_registered: set[str] = set()
_registry_lock = threading.Lock()


# ---------------------------------------------------------------------------------------------
# Checks, before any work
# ---------------------------------------------------------------------------------------------


def _existing_inputs(inputs: Iterable[str | os.PathLike[str] | None]) -> list[Path]:
    return [Path(p) for p in inputs if p is not None and str(p) != "-" and Path(p).exists()]


def _is_input(target: Path, inputs: Sequence[Path]) -> Path | None:
    """The input that ``target`` is (same file, whatever the path says), if any."""
    if not target.exists():
        return None
    for candidate in inputs:
        try:
            if os.path.samefile(target, candidate):
                return candidate
        except OSError:
            continue
    return None


def _check_writable_place(directory: Path) -> None:
    """``directory`` (which may not exist yet) can be created and written into: its nearest
    existing ancestor is a directory we can create files in."""
    probe = directory
    while not probe.exists() and not probe.is_symlink():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.is_symlink() and not probe.exists():
        raise ToktoolsError(f"cannot write into {directory}: {probe} is a broken symbolic link")
    if not probe.is_dir():
        raise ToktoolsError(f"cannot write into {directory}: {probe} is a file, not a directory")
    try:  # the true test (root ignores permission bits; read-only and immutable places do not)
        handle, name = tempfile.mkstemp(prefix=".toktools-probe.", dir=probe)
    except OSError as err:
        raise ToktoolsError(f"cannot write into {directory}: {err.strerror or err}") from None
    os.close(handle)
    os.unlink(name)


def check_output_file(path: str | os.PathLike[str], *, force: bool = False,
                      inputs: Iterable[str | os.PathLike[str] | None] = (), what: str = "output") -> Path:
    """Refuse an output file that exists (without ``force``), is one of ``inputs``, is a
    directory, or cannot be created; the parent directory must exist."""
    target = Path(path)
    source = _is_input(target, _existing_inputs(inputs))
    if source is not None:
        raise ToktoolsError(f"refusing to write the {what} {target} over the input {source}")
    if target.is_dir():
        raise ToktoolsError(f"the {what} {target} is a directory; give a file name")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists() and not _below_a_file(parent):
        raise ToktoolsError(f"the {what}'s directory {parent} does not exist")
    _check_writable_place(parent)
    if (target.exists() or target.is_symlink()) and not force:
        raise ToktoolsError(f"{target} already exists; use --force to overwrite")
    return target


def _below_a_file(path: Path) -> bool:
    return any(p.exists() and not p.is_dir() for p in path.parents) or (path.exists() and not path.is_dir())


def check_output_dir(directory: str | os.PathLike[str], names: Sequence[str], *, force: bool = False,
                     inputs: Iterable[str | os.PathLike[str] | None] = (), what: str = "output directory",
                     subdirectories: bool = False) -> Path:
    """Refuse an output directory that is a file, cannot be created or written, or already
    holds one of ``names`` (without ``force``); refuse always if one of ``names`` is an input.
    ``names`` are files, or with ``subdirectories`` directories (replaced as a whole)."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise ToktoolsError(f"the {what} {target} is a file, not a directory")
    if not subdirectories:
        for name in names:
            if (target / name).is_dir():
                raise ToktoolsError(f"{target / name} is a directory; it cannot be replaced by a file")
    sources = _existing_inputs(inputs)
    for name in names:
        source = _is_input(target / name, sources)
        if source is not None:
            raise ToktoolsError(f"refusing to write {target / name} over the input {source}")
    _check_writable_place(target)
    existing = [name for name in names if (target / name).exists() or (target / name).is_symlink()]
    if existing and not force:
        raise ToktoolsError(f"{target} already holds {', '.join(existing)}; use --force to overwrite")
    return target


#: the files :func:`toktools.formats.load` may read in a tokenizer's directory (besides a
#: ``.model`` or ``.tiktoken`` file): the ones no output may be written over
TOKENIZER_FILE_NAMES = frozenset({
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "merges.txt", "encoder.json", "vocab.bpe", "vocab.txt", "special_tokens.json"})


def _tokenizer_file(path: Path) -> bool:
    return path.is_file() and (path.name in TOKENIZER_FILE_NAMES or path.suffix in (".model", ".tiktoken"))


def input_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files a tokenizer given as ``path`` may have been read from (the file and the
    tokenizer files beside it, or those of the directory), to refuse writing over them. Other
    files there (an earlier run's outputs, a corpus) are not the tokenizer's."""
    candidate = Path(path)
    if candidate.is_file():  # loaders also read the files beside it (tokenizer_config.json ...)
        return [candidate, *(p for p in candidate.parent.iterdir() if p != candidate and _tokenizer_file(p))]
    if candidate.is_dir():
        return [p for p in candidate.iterdir() if _tokenizer_file(p)]
    return []


# ---------------------------------------------------------------------------------------------
# Temporary files that a termination must not leave behind
# ---------------------------------------------------------------------------------------------


def register_temporary(path: str | os.PathLike[str]) -> None:
    with _registry_lock:
        _registered.add(str(path))


def unregister_temporary(path: str | os.PathLike[str]) -> None:
    with _registry_lock:
        _registered.discard(str(path))


def remove_registered_temporaries() -> None:
    """Remove every registered temporary file or directory (called on termination)."""
    with _registry_lock:
        paths = sorted(_registered)
        _registered.clear()
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


@contextmanager
def temporary_directory(prefix: str) -> Iterator[str]:
    """``tempfile.TemporaryDirectory`` that a termination also removes."""
    path = tempfile.mkdtemp(prefix=prefix)
    register_temporary(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        unregister_temporary(path)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


@contextmanager
def atomic_file(path: str | os.PathLike[str], binary: bool = False) -> Iterator[IO[Any]]:
    """A file that appears at ``path`` only when the block ends without error (a temporary file
    beside it is renamed over it); otherwise nothing is left behind."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise ToktoolsError(f"cannot write {target}: {err.strerror or err}") from None
    register_temporary(temporary)
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600 files
        options: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": "\n"}
        with os.fdopen(handle, "wb" if binary else "w", **options) as out:
            yield out
        os.replace(temporary, target)
    except OSError as err:
        if err.filename not in (None, temporary, str(target)):
            raise  # not about this output: the caller's business
        raise ToktoolsError(f"cannot write {target}: {err.strerror or err}") from None
    finally:
        unregister_temporary(temporary)
        if os.path.exists(temporary):
            os.unlink(temporary)
