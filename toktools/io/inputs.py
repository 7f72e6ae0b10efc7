"""Inputs that can be read only once (standard input, a FIFO, ``<(zcat …)``, a character device),
copied once to a temporary file where a reader needs to read them again.

A command that reads its input once, front to back (``count``, the reference ``train``,
``pretrain-data``, ``encode`` to text), streams such an input as it comes: an endless pipe stays
an endless pipe. A reader that needs the bytes twice gets a copy instead, made by
:func:`rereadable`, the one function for it:

* ``encode`` to megatron/npy/bin hashes every input for the manifest before it encodes it;
* ``tokenizers`` (``train --backend fast``, parity's fast side) opens a file once to look at it
  and again to read it, so the first open eats what a FIFO had;
* ``compare --sample`` counts the documents before it picks them (it takes a one-pass sample
  instead: :func:`read_once` tells it to).

The copies live in a temporary directory that is registered (a SIGTERM removes it, see
:mod:`toktools.io.outputs`) and removed when the reader is done.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from toktools.errors import ToktoolsError

#: The suffixes ``tokenizers`` cannot read (it reads plain UTF-8 files only).
COMPRESSED = (".gz", ".xz", ".bz2")


def read_once(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` can be read only once: ``-`` (standard input) or an existing file that is
    neither a regular file nor a directory (a FIFO, a pipe such as ``/dev/fd/63``, a device)."""
    name = os.fspath(path)
    if name == "-":
        return True
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextmanager
def rereadable(
    paths: Iterable[str | os.PathLike[str]],
    *,
    decompress: bool = False,
    stdin: bool = True,
    prefix: str = "toktools-input-",
    copy: Callable[[str, BinaryIO], None] | None = None,
) -> Iterator[list[str]]:
    """The paths, with each input that can be read only once (:func:`read_once`) replaced by a
    plain copy of it made once, now; with ``decompress``, .gz/.xz/.bz2 files are copied
    decompressed too (for ``tokenizers``). ``copy(path, out)`` writes a copy (default: the bytes
    as they are, or decompressed by :mod:`toktools.corpus.reading`, whose errors name the
    file). Without ``stdin``, ``-`` is left as it is (its reader streams it). The copies are
    removed when the block ends, and by a SIGTERM during it."""
    from toktools.io.outputs import register_temporary, unregister_temporary

    directory: Path | None = None
    result: list[str] = []
    try:
        for index, given in enumerate([os.fspath(path) for path in paths]):
            compressed = decompress and given.endswith(COMPRESSED) and given != "-"
            if not compressed and (not read_once(given) or (given == "-" and not stdin)):
                result.append(given)
                continue
            if directory is None:
                directory = Path(tempfile.mkdtemp(prefix=prefix))
                register_temporary(directory)  # removed on SIGTERM even during a long native call
            name = "stdin" if given == "-" else Path(given).name
            if compressed:
                name = name.rsplit(".", 1)[0]
            target = directory / f"{index}-{name}"
            try:
                with open(target, "wb") as out:
                    if copy is not None:
                        copy(given, out)
                    else:
                        _copy(given, out, decompress=compressed)
            except OSError as err:
                if err.filename is not None and os.fspath(err.filename) == str(target):
                    raise ToktoolsError(
                        f"cannot copy {given} to read it again: {err.strerror or err} (in {directory}; set TMPDIR)"
                    ) from None
                raise
            result.append(str(target))
        yield result
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
            unregister_temporary(directory)


def _copy(given: str, out: BinaryIO, *, decompress: bool) -> None:
    if given == "-" or decompress:
        from toktools.corpus.reading import CorpusSource, read_blocks

        for block in read_blocks(CorpusSource(given)):  # a corrupt file is one error naming it
            out.write(block)
        return
    try:
        source = open(given, "rb")
    except OSError as err:
        raise ToktoolsError(f"cannot read {given}: {err.strerror or err}") from None
    with source:
        shutil.copyfileobj(source, out, 1 << 20)


def any_read_once(paths: Iterable[str | os.PathLike[str]]) -> bool:
    """Whether one of ``paths`` can be read only once."""
    return any(read_once(path) for path in paths)
