"""Where results are written: checked before any work, written atomically, never over an input.

Also the ``tokenizer.json`` text as ``tokenizers`` pretty-prints it, and several files written
all-or-nothing (:func:`write_files_atomically`).

Every command that writes files calls :func:`check_output_file` or :func:`check_output_dir`
*before* it starts working (training an hour and then finding the directory unwritable is
the failure this module exists to prevent). The checks refuse, with one line each:

* an existing output without ``force`` (and an output that is one of the inputs, even with it);
* a path where a file stands in for a directory (``-o notes.txt/sub``), or a directory for a file;
* a place this process cannot write to.

Long-lived temporary files and directories are registered, so that a SIGTERM that arrives while
the main thread is stuck in native code can still remove them (see :mod:`toktools.runtime.interrupts`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

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


def check_output_file(
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    what: str = "output",
) -> Path:
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


def check_output_dir(
    directory: str | os.PathLike[str],
    names: Sequence[str],
    *,
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    what: str = "output directory",
    subdirectories: bool = False,
) -> Path:
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
TOKENIZER_FILE_NAMES = frozenset(
    {
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "added_tokens.json",
        "vocab.json",
        "merges.txt",
        "encoder.json",
        "vocab.bpe",
        "vocab.txt",
        "special_tokens.json",
    }
)


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


#: In the name of every temporary file made by :func:`temporary_beside`, so that orphans are found.
TEMPORARY_TAG = "toktools-tmp"
#: An orphan younger than this (seconds since its last write) is left alone: its writer may be
#: between creating it and locking it.
ORPHAN_MIN_AGE = 10.0
#: Temporary file → the descriptor holding its lock (closed when it is unregistered).
_locks: dict[str, int] = {}
#: (process id, directory) already swept of orphans.
_swept: set[tuple[int, str]] = set()


def temporary_beside(target: Path) -> tuple[int, str]:
    """A new temporary file beside ``target``, ``(descriptor open for writing, path)``, named
    ``.NAME.toktools-tmp.XXXXXXXX.tmp`` and registered (:func:`register_temporary`).

    An interrupt or an error removes it; SIGKILL or a lost machine cannot. So the file is also
    locked (``flock``) until it is unregistered, which the kernel releases when its process
    dies, however it dies. The first temporary file a process makes in a directory removes the
    orphans there first (:func:`remove_orphans`), so that a run killed with ``kill -9`` does
    not leave gigabytes of half-written shards hidden in the output directory. Raises
    ``OSError`` as ``mkstemp`` does."""
    directory = target.parent if str(target.parent) else Path(".")
    key = (os.getpid(), os.path.abspath(directory))
    if key not in _swept:
        _swept.add(key)
        remove_orphans(directory)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.{TEMPORARY_TAG}.", suffix=".tmp", dir=directory)
    lock = _lock(temporary)
    with _registry_lock:
        _registered.add(temporary)
        if lock is not None:
            _locks[temporary] = lock
    return handle, temporary


def _lock(path: str) -> int | None:
    """A descriptor of ``path`` holding an exclusive ``flock`` on it, or None where this
    platform or file system has no such locks."""
    try:
        import fcntl
    except ImportError:  # Windows: no locks, no sweeping
        return None
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(handle)
        return None
    return handle


def remove_orphans(directory: Path) -> list[str]:
    """Remove the temporary files of :func:`temporary_beside` in ``directory`` whose process is
    gone: unlocked (the kernel dropped the lock with the process) and not written to for
    :data:`ORPHAN_MIN_AGE` seconds. A file whose lock cannot be tested is kept. Returns the
    names removed."""
    import time

    try:
        import fcntl
    except ImportError:
        return []
    marker = f".{TEMPORARY_TAG}."
    removed: list[str] = []
    try:
        entries = [
            e for e in os.scandir(directory) if e.name.startswith(".") and marker in e.name and e.name.endswith(".tmp")
        ]
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        with _registry_lock:
            if entry.path in _registered or os.path.abspath(entry.path) in _registered:
                continue  # ours, being written
        try:
            if (
                not entry.is_file(follow_symlinks=False)
                or now - entry.stat(follow_symlinks=False).st_mtime < ORPHAN_MIN_AGE
            ):
                continue
            handle = os.open(entry.path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while its writer lives
            os.unlink(entry.path)
            removed.append(entry.name)
        except OSError:
            pass
        finally:
            os.close(handle)
    return removed


def register_temporary(path: str | os.PathLike[str]) -> None:
    with _registry_lock:
        _registered.add(str(path))


def unregister_temporary(path: str | os.PathLike[str]) -> None:
    """Forget ``path`` (renamed into place or removed); its lock, if any, is released."""
    with _registry_lock:
        _registered.discard(str(path))
        lock = _locks.pop(str(path), None)
    if lock is not None:
        try:
            os.close(lock)
        except OSError:
            pass


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


def current_umask() -> int:
    """The process's umask (reading it means setting it, so it is set back at once)."""
    current = os.umask(0)
    os.umask(current)
    return current


@contextmanager
def atomic_file(path: str | os.PathLike[str], binary: bool = False) -> Iterator[IO[Any]]:
    """A file that appears at ``path`` only when the block ends without error (a temporary file
    beside it is renamed over it); otherwise nothing is left behind."""
    target = Path(path)
    try:
        handle, temporary = temporary_beside(target)
    except OSError as err:
        raise ToktoolsError(f"cannot write {target}: {err.strerror or err}") from None
    try:
        os.chmod(temporary, 0o666 & ~current_umask())  # mkstemp makes 0600 files
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


# ---------------------------------------------------------------------------------------------
# Several files at once, and the tokenizer.json text
# ---------------------------------------------------------------------------------------------


def dumps_tokenizer_json(document: Mapping[str, Any]) -> str:
    """Pretty-printed like ``Tokenizer.save`` (2-space indent, raw UTF-8)."""
    return json.dumps(document, ensure_ascii=False, indent=2)


def write_files_atomically(directory: Path, files: Mapping[str, str | bytes], *, overwrite: bool = True) -> list[Path]:
    """Write every file (text as UTF-8, or bytes) to a temporary name first, then rename them all
    into place.

    A crash or Ctrl-C while writing leaves the old files (or none), never a half-written one.
    """
    check_output_dir(directory, list(files), force=overwrite)  # one line for a file in the way, no permission ...
    directory.mkdir(parents=True, exist_ok=True)
    targets = [directory / name for name in files]
    temporaries: list[tuple[str, Path]] = []
    mode = 0o666 & ~current_umask()  # mkstemp makes 0600 files; give them the usual permissions
    try:
        for name, text in files.items():
            handle, temporary = temporary_beside(
                directory / name
            )  # registered: a SIGTERM stuck in native code removes it too
            temporaries.append((temporary, directory / name))
            os.chmod(temporary, mode)
            with os.fdopen(handle, "wb") as out:
                out.write(text.encode("utf-8") if isinstance(text, str) else text)  # text: no newline translation
                out.flush()
                os.fsync(out.fileno())
        for temporary, target in temporaries:
            os.replace(temporary, target)
    finally:
        for temporary, _ in temporaries:
            if os.path.exists(temporary):
                os.unlink(temporary)
            unregister_temporary(temporary)
    return targets
