"""The one output policy of every command: checked before any work, written atomically, never
over an input, never over a device.

Also the ``tokenizer.json`` text as ``tokenizers`` pretty-prints it, and several files written
all-or-nothing (:func:`write_files_atomically`).

Every command that writes files calls :func:`check_output_file` or :func:`check_output_dir`
*before* it starts working (training an hour and then finding the directory unwritable is
the failure this module exists to prevent), and writes through :func:`atomic_file`,
:func:`write_files_atomically` or :func:`temporary_for` + :func:`publish`. The rules:

* an output that *is* an input (the same file by any path: a hard link, a symbolic link, a
  file inside an input directory, standard input redirected from it) is refused, even with
  ``force``: losing a user's input is the one unforgivable bug;
* an existing output that is not a regular file (``/dev/null``, ``/dev/full``, a FIFO) is
  written *into*, in place, and never renamed over (as root, renaming over ``/dev/null`` would
  replace it for the whole machine); a socket or a directory is refused;
* a regular file is written to a temporary file beside it and renamed over it when complete
  (an existing one only with ``force``), with the mode the umask gives new files;
* missing parent directories of an output file are created when it is written (said on
  stderr); a file where a directory should be, or a place this process cannot write to, is
  refused before any work;
* a temporary file of an earlier run whose lock is free (its process is gone) is removed when
  the next run checks its outputs there.

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


#: Where an input's identity is taken from: ``(st_dev, st_ino)`` → the input as given.
Identities = dict[tuple[int, int], Path]


def input_identities(inputs: Iterable[str | os.PathLike[str] | None]) -> Identities:
    """The files ``inputs`` name, by identity (device and inode), so that an output that is one
    of them is found whatever path, hard link or symbolic link names it: a directory stands for
    every file below it, a quoted glob for its matches, ``-`` for standard input when the shell
    redirected it from a file."""
    import glob

    found: Identities = {}

    def add(path: Path, shown: Path) -> None:
        try:
            status = os.stat(path)
        except OSError:
            return
        found.setdefault((status.st_dev, status.st_ino), shown)

    for given in inputs:
        if given is None:
            continue
        name = os.fspath(given)
        if name == "-":
            import stat

            try:
                status = os.fstat(0)
            except OSError:
                continue
            if stat.S_ISREG(status.st_mode):  # `toktools ... - < corpus.txt`
                found.setdefault((status.st_dev, status.st_ino), Path("-"))
            continue
        path = Path(name)
        if path.is_dir():
            add(path, path)  # an output directory replaced as a whole must not be it either
            for root, _dirs, files in os.walk(path):
                for file in files:
                    add(Path(root, file), Path(root, file))
        elif path.exists():
            add(path, path)
        elif any(ch in name for ch in "*?["):
            for match in glob.glob(name, recursive=True):
                found.update(input_identities([match]))
    return found


def _is_input(target: Path, inputs: Identities) -> Path | None:
    """The input that ``target`` is (same file, whatever the path says), if any."""
    try:
        status = os.stat(target)
    except OSError:
        return None
    return inputs.get((status.st_dev, status.st_ino))


def is_special(target: str | os.PathLike[str]) -> bool:
    """Whether ``target`` exists and is neither a regular file nor a directory (a device, a
    FIFO, a socket; a symbolic link is followed): such a file is written into, never replaced."""
    import stat

    try:
        mode = os.stat(target).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _check_special(target: Path, what: str) -> None:
    """An existing device or FIFO: it must accept writing (a socket never does)."""
    import stat

    if stat.S_ISSOCK(os.stat(target).st_mode):
        raise ToktoolsError(f"the {what} {target} is a socket; give a file, a device or a FIFO")
    if not os.access(target, os.W_OK):
        raise ToktoolsError(f"cannot write {target}: permission denied")


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


def _make_directory(directory: Path) -> None:
    """Create the missing ``directory`` of an output file, and say so on stderr."""
    import sys

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ToktoolsError(f"cannot create the directory {directory}: {err.strerror or err}") from None
    sys.stderr.write(f"toktools: note: created the directory {directory}\n")


def check_output_file(
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    inputs: Iterable[str | os.PathLike[str] | None] | Identities = (),
    what: str = "output",
) -> Path:
    """Refuse an output file that is one of ``inputs`` (even with ``force``), exists as a
    regular file (without ``force``), is a directory or a socket, or cannot be written. A device
    or a FIFO is accepted as it is (it is written into); a missing parent directory is created.
    Orphaned temporary files beside it are removed."""
    target = Path(path)
    identities = inputs if isinstance(inputs, dict) else input_identities(inputs)  # type: ignore[arg-type]
    source = _is_input(target, identities)
    if source is not None:
        shown = "standard input" if str(source) == "-" else str(source)
        raise ToktoolsError(f"refusing to write the {what} {target} over the input {shown}")
    if target.is_dir():
        raise ToktoolsError(f"the {what} {target} is a directory; give a file name")
    if is_special(target):
        _check_special(target, what)
        return target
    parent = target.parent if str(target.parent) else Path(".")
    _check_writable_place(parent)  # a missing one can be made: it is, when the output is written
    if (target.exists() or target.is_symlink()) and not force:
        raise ToktoolsError(f"{target} already exists; use --force to overwrite")
    if parent.is_dir():
        remove_orphans(parent)
    return target


def check_companions(named: str | os.PathLike[str], planned: Sequence[Path]) -> None:
    """An output named after a device (``-o /dev/null``) whose format also writes files named
    from it (``/dev/null.offsets``, ``/dev/null.bin``) is refused: they would be created beside
    the device, in ``/dev`` (as root). A FIFO, or a link to a device made elsewhere, takes its
    own file; the others are written beside it as usual."""
    import stat

    target = Path(named)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return
    if not (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
        return
    home = os.path.dirname(os.path.realpath(target))
    beside = [
        p
        for p in planned
        if os.path.abspath(p) != os.path.abspath(target)
        and os.path.realpath(p.parent if str(p.parent) else ".") == home
        and not is_special(p)
    ]
    if beside:
        raise ToktoolsError(
            f"{target} is a device, and this format also writes {', '.join(str(p) for p in beside)} beside it; "
            "give a file name (or links to the device, one for each file)"
        )


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
    ``names`` are files, or with ``subdirectories`` directories (replaced as a whole). A name
    that is a device or a FIFO is written into, as :func:`check_output_file` says."""
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise ToktoolsError(f"the {what} {target} is a file, not a directory")
    for name in names:
        if not subdirectories and (target / name).is_dir():
            raise ToktoolsError(f"{target / name} is a directory; it cannot be replaced by a file")
        if subdirectories and is_special(target / name):
            raise ToktoolsError(f"{target / name} is a device, FIFO or socket; it cannot be replaced by a directory")
    identities = input_identities(inputs)
    for name in names:
        source = _is_input(target / name, identities)
        if source is None and subdirectories and (target / name).is_dir():  # replaced with what it holds
            inside = input_identities([target / name])
            source = next((identities[key] for key in inside if key in identities), None)
        if source is not None:
            shown = "standard input" if str(source) == "-" else str(source)
            raise ToktoolsError(f"refusing to write {target / name} over the input {shown}")
    special = [name for name in names if not subdirectories and is_special(target / name)]
    for name in special:
        _check_special(target / name, "output")
    if len(special) == len(names):  # only written into: nothing is created there (/dev)
        return target
    _check_writable_place(target)
    existing = [
        name for name in names if name not in special and ((target / name).exists() or (target / name).is_symlink())
    ]
    if existing and not force:
        raise ToktoolsError(f"{target} already holds {', '.join(existing)}; use --force to overwrite")
    if target.is_dir():
        remove_orphans(target)
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
#: In the name of a temporary file between its creation and its lock (then it is renamed to
#: carry :data:`TEMPORARY_TAG`): only such a file can be unlocked while its writer lives.
FRESH_TAG = "toktools-new"
#: A fresh file (:data:`FRESH_TAG`) younger than this (seconds since its last write) is left
#: alone: its writer may be between creating it and locking it. A tagged file is locked from
#: the moment it has its name, so a free lock means an orphan, whatever its age.
ORPHAN_MIN_AGE = 10.0
#: Temporary file → the descriptor holding its lock (closed when it is unregistered).
_locks: dict[str, int] = {}
#: (process id, directory) already swept of orphans.
_swept: set[tuple[int, str]] = set()


def temporary_beside(target: Path, directory: Path | None = None) -> tuple[int, str]:
    """A new temporary file beside ``target`` (or in ``directory``), ``(descriptor open for
    writing, path)``, named ``.NAME.toktools-tmp.XXXXXXXX.tmp`` and registered
    (:func:`register_temporary`).

    An interrupt or an error removes it; SIGKILL or a lost machine cannot. So the file is also
    locked (``flock``) until it is unregistered, which the kernel releases when its process
    dies, however it dies; it is created under a ``toktools-new`` name and gets its tagged name
    only once locked, so that a tagged file with a free lock is always an orphan. The first
    temporary file a process makes in a directory removes the orphans there first
    (:func:`remove_orphans`), so that a run killed with ``kill -9`` does not leave gigabytes of
    half-written shards hidden in the output directory. Raises ``OSError`` as ``mkstemp`` does."""
    if directory is None:
        directory = target.parent if str(target.parent) else Path(".")
    key = (os.getpid(), os.path.abspath(directory))
    if key not in _swept:
        _swept.add(key)
        remove_orphans(directory)
    handle, fresh = tempfile.mkstemp(prefix=f".{target.name}.{FRESH_TAG}.", suffix=".tmp", dir=directory)
    lock = _lock(fresh)
    temporary = fresh
    if lock is not None:
        unique = os.path.basename(fresh)[len(f".{target.name}.{FRESH_TAG}.") :]
        temporary = os.path.join(os.path.dirname(fresh), f".{target.name}.{TEMPORARY_TAG}.{unique}")
        try:
            os.rename(fresh, temporary)
        except OSError:
            temporary = fresh
    with _registry_lock:
        _registered.add(temporary)
        if lock is not None:
            _locks[temporary] = lock
    return handle, temporary


def temporary_for(target: Path) -> tuple[int, str]:
    """:func:`temporary_beside` for an output that will be :func:`publish`-ed to ``target``:
    beside it for a regular file (renamed over it), in the system's temporary directory for a
    device or a FIFO (copied into it: ``/dev`` is no place for our files). A missing parent
    directory is created now, when the output is about to be written (said on stderr), so that
    a run refused before it writes leaves nothing behind."""
    if is_special(target):
        return temporary_beside(target, Path(tempfile.gettempdir()))
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        _make_directory(parent)
    return temporary_beside(target)


def publish(temporary: str | os.PathLike[str], target: Path) -> None:
    """Put the finished ``temporary`` (from :func:`temporary_for`) in place at ``target``:
    renamed over a regular file, with the mode the umask gives new files; copied into a device
    or a FIFO, which stays what it is. The temporary file is gone afterwards (it stays
    registered until the caller unregisters it). A full disk is one :class:`ToktoolsError`."""
    temporary = os.fspath(temporary)
    try:
        if is_special(target):
            _copy_into(temporary, target)
            os.unlink(temporary)
            return
        os.chmod(temporary, 0o666 & ~current_umask())  # mkstemp makes 0600 files
        os.replace(temporary, target)
    except OSError as err:
        raise ToktoolsError(write_error(target, err)) from None


def write_error(target: str | os.PathLike[str], err: OSError) -> str:
    """One line for a failed write of ``target``, a full disk said in words."""
    import errno

    if err.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"cannot write {target}: {err.strerror or 'No space left on device'} (the disk is full)"
    if err.errno == errno.EFBIG:
        return f"cannot write {target}: the file is larger than the file system allows"
    return f"cannot write {target}: {err.strerror or err}"


def _copy_into(temporary: str, target: Path) -> None:
    """Write the bytes of ``temporary`` into the device or FIFO ``target``, in place (no
    ``O_CREAT``, no ``O_TRUNC``: nothing is created, replaced or cut)."""
    handle = os.open(target, os.O_WRONLY)
    try:
        with open(temporary, "rb") as source:
            while block := source.read(1 << 20):
                view = memoryview(block)
                while view:
                    view = view[os.write(handle, view) :]
    finally:
        os.close(handle)


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
    gone: unlocked (the kernel dropped the lock with the process); a fresh one (not yet locked
    by its writer) only when not written to for :data:`ORPHAN_MIN_AGE` seconds. A file whose
    lock cannot be tested is kept. Returns the names removed."""
    import time

    try:
        import fcntl
    except ImportError:
        return []
    markers = (f".{TEMPORARY_TAG}.", f".{FRESH_TAG}.")
    removed: list[str] = []
    try:
        entries = [
            e
            for e in os.scandir(directory)
            if e.name.startswith(".") and any(m in e.name for m in markers) and e.name.endswith(".tmp")
        ]
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        with _registry_lock:
            if entry.path in _registered or os.path.abspath(entry.path) in _registered:
                continue  # ours, being written
        fresh = f".{TEMPORARY_TAG}." not in entry.name
        try:
            if not entry.is_file(follow_symlinks=False) or (
                fresh and now - entry.stat(follow_symlinks=False).st_mtime < ORPHAN_MIN_AGE
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
    beside it is renamed over it, or copied into a device or FIFO: :func:`publish`); otherwise
    nothing is left behind."""
    target = Path(path)
    try:
        handle, temporary = temporary_for(target)
    except OSError as err:
        raise ToktoolsError(write_error(target, err)) from None
    try:
        options: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": "\n"}
        try:
            with os.fdopen(handle, "wb" if binary else "w", **options) as out:
                yield out
        except OSError as err:
            if err.filename not in (None, temporary, str(target)):
                raise  # not about this output: the caller's business
            raise ToktoolsError(write_error(target, err)) from None
        publish(temporary, target)
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
    """Write every file (text as UTF-8, or bytes) to a temporary name first, then put them all
    in place (:func:`publish`: renamed, or copied into a device or FIFO).

    A crash or Ctrl-C while writing leaves the old files (or none), never a half-written one.
    """
    check_output_dir(directory, list(files), force=overwrite)  # one line for a file in the way, no permission ...
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ToktoolsError(f"cannot create {directory}: {err.strerror or err}") from None
    targets = [directory / name for name in files]
    temporaries: list[tuple[str, Path]] = []
    try:
        for name, text in files.items():
            try:  # registered: a SIGTERM stuck in native code removes it too
                handle, temporary = temporary_for(directory / name)
                temporaries.append((temporary, directory / name))
                with os.fdopen(handle, "wb") as out:
                    out.write(text.encode("utf-8") if isinstance(text, str) else text)  # text: no newline translation
                    out.flush()
                    os.fsync(out.fileno())
            except OSError as err:
                raise ToktoolsError(write_error(directory / name, err)) from None
        for temporary, target in temporaries:
            publish(temporary, target)
    finally:
        for temporary, _ in temporaries:
            if os.path.exists(temporary):
                os.unlink(temporary)
            unregister_temporary(temporary)
    return targets
