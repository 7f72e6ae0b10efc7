"""Binary outputs of corpus encoding, one document at a time, written atomically.

* ``megatron``: ``PREFIX.bin`` (the ids, back to back) + ``PREFIX.idx`` in Megatron-LM's
  ``MMIDIDX`` layout (``megatron/core/datasets/indexed_dataset.py``, ``_IndexWriter``):

  ====================  ================================================================
  9 bytes               ``b"MMIDIDX\\x00\\x00"``
  uint64 (LE)           version, 1
  uint8                 dtype code (Megatron's ``DType``: 8 = uint16, 4 = int32)
  uint64 (LE)           sequence count S (one sequence per document here)
  uint64 (LE)           document count D = S + 1 (document indices start with 0)
  int32 x S             sequence lengths in tokens
  int64 x S             byte offset of each sequence in ``.bin``
  int64 x D             document indices: ``0, 1, ..., S`` (sequence index ending each document)
  ====================  ================================================================

  The dtype follows Megatron's ``DType.optimal_dtype``: uint16 below 65,500 ids, else int32.
* ``npy`` / ``bin``: the ids as one flat array (NumPy file or raw little-endian), as ``toktools
  encode`` always wrote them, plus ``NAME.offsets.npy`` / ``NAME.offsets.bin``: int64 token
  offsets of each document start, then the total (documents + 1 values).

Every file is written under a temporary name in the target directory and renamed into place
only when complete; any failure (a full disk included) removes the temporaries.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import mul
from pathlib import Path
from typing import Any, BinaryIO

from toktools.errors import ToktoolsError

MEGATRON_HEADER = b"MMIDIDX\x00\x00"
MEGATRON_DTYPE_CODES = {"uint16": 8, "int32": 4}
_ARRAY_CODES = {"uint16": "H", "uint32": "I", "int32": "i"}
_NPY_DESCR = {"uint16": "<u2", "uint32": "<u4", "int32": "<i4", "int64": "<i8"}
_NPY_HEADER_BYTES = 128
FORMATS = ("megatron", "npy", "bin")


def megatron_dtype(vocab_size: int) -> str:
    """Megatron's ``DType.optimal_dtype(cardinality)``: uint16 below 65,500, else int32."""
    return "uint16" if vocab_size < 65500 else "int32"


def flat_dtype(vocab_size: int) -> str:
    """npy/bin: uint16 when every id fits (up to 65,536 ids), else uint32 (as before)."""
    return "uint16" if vocab_size <= 1 << 16 else "uint32"


def npy_header(descr: str, length: int) -> bytes:
    body = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({length},), }}"
    prefix = b"\x93NUMPY\x01\x00"
    room = _NPY_HEADER_BYTES - len(prefix) - 2
    text = body.ljust(room - 1) + "\n"
    return prefix + len(text).to_bytes(2, "little") + text.encode("latin-1")


def output_files(fmt: str, base: Path, suffix: str | None = None) -> dict[str, Path]:
    """The files one output (or one shard) is made of, by role. npy/bin: ``base + suffix``
    (the extension the user gave, ``.npy``/``.bin`` by default) and ``base.offsets + suffix``."""
    if fmt == "megatron":
        return {"bin": Path(f"{base}.bin"), "idx": Path(f"{base}.idx")}
    suffix = f".{fmt}" if suffix is None else suffix
    return {"data": Path(f"{base}{suffix}"), "offsets": Path(f"{base}.offsets{suffix}")}


def uint32_to_dtype(data: bytes, dtype: str) -> bytes:
    """Native uint32 ids as little-endian ``dtype`` (every id fits: the dtype was chosen or
    checked against the vocabulary size); C calls only on a little-endian machine: uint16 is
    the low half of each id."""
    if sys.byteorder != "little":
        return _little(array(_ARRAY_CODES[dtype], array("I", data)))
    if dtype == "uint16":
        numpy = sys.modules.get("numpy")  # already loaded by the block paths: 5x faster than the slice
        if numpy is not None:
            return numpy.frombuffer(data, dtype=numpy.uint32).astype(numpy.uint16).tobytes()  # type: ignore[no-any-return]
        return array("H", data)[::2].tobytes()
    return data  # uint32, or int32 below 2**31: the same bytes


def _little(data: array) -> bytes:
    if sys.byteorder != "little":
        data = array(data.typecode, data)
        data.byteswap()
    return data.tobytes()


class _AtomicFile:
    """A temporary file for ``target`` that hashes what is written (as it is written: no second
    read of the file, unless a header was patched since); ``commit`` puts it in place
    (:func:`toktools.io.outputs.publish`: renamed, or copied into a device or FIFO)."""

    def __init__(self, target: Path) -> None:
        self.target = target
        from toktools.io.outputs import temporary_for

        try:  # registered: a SIGTERM during a long native call removes it too; makes a missing directory
            handle, self.temporary = temporary_for(target)
        except OSError as err:
            raise ToktoolsError(_write_error(target, err)) from None
        self.out: BinaryIO = os.fdopen(handle, "wb")
        self.bytes = 0
        self.digest: Any = hashlib.sha256()  # None once the file was patched: hashed on close

    def write(self, data: bytes | memoryview) -> None:
        try:
            self.out.write(data)
        except OSError as err:
            raise ToktoolsError(_write_error(self.target, err)) from None
        self.bytes += memoryview(data).nbytes
        if self.digest is not None:
            self.digest.update(data)

    def patch_start(self, data: bytes) -> None:
        """Overwrite the start of the file (a header whose counts are known only at the end)."""
        self.out.seek(0)
        self.out.write(data)
        self.out.seek(0, 2)
        self.digest = None

    def close_and_hash(self) -> str:
        """Flush to disk and return the sha256 of the whole file."""
        self.sync_and_close()
        if self.digest is not None:
            return self.digest.hexdigest()  # type: ignore[no-any-return]
        return file_sha256(Path(self.temporary))

    def flush_and_hash(self) -> str:
        """Hand what is buffered to the system and return the sha256 of what was written (hashed
        as it was written: only for a file never patched); :meth:`sync_and_close` later."""
        assert self.digest is not None
        try:
            self.out.flush()
        except OSError as err:
            raise ToktoolsError(_write_error(self.target, err)) from None
        return self.digest.hexdigest()  # type: ignore[no-any-return]

    def sync_and_close(self) -> None:
        """Flush to disk (fsync) and close."""
        try:
            self.out.flush()
            os.fsync(self.out.fileno())
            self.out.close()
        except OSError as err:
            raise ToktoolsError(_write_error(self.target, err)) from None

    def commit(self) -> None:
        from toktools.io.outputs import publish, unregister_temporary  # not formats: it would load the whole reference

        publish(self.temporary, self.target)
        unregister_temporary(self.temporary)

    def discard(self) -> None:
        from toktools.io.outputs import unregister_temporary

        try:
            self.out.close()
        except OSError:
            pass
        if os.path.exists(self.temporary):
            os.unlink(self.temporary)
        unregister_temporary(self.temporary)


def _write_error(target: Path, err: OSError) -> str:
    from toktools.io.outputs import write_error

    return write_error(target, err)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Committer:
    """Finished outputs synced to disk (fsync) and renamed into place on a thread of its own,
    while the run encodes and writes the next ones: jobs run one at a time, in the order
    queued, so a job queued after an output's (the manifest that records it) runs only once
    that output is durable. The first job that fails stops the rest (each one's ``on_failure``
    runs instead: its temporaries are removed); :meth:`check` and :meth:`close` raise its error
    in the caller's thread."""

    def __init__(self) -> None:
        import queue

        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], Callable[[], None] | None] | None] = queue.SimpleQueue()
        self._thread: Any = None
        self._error: BaseException | None = None

    def submit(self, job: Callable[[], None], on_failure: Callable[[], None] | None = None) -> None:
        self.check()
        if self._thread is None:
            import threading

            self._thread = threading.Thread(target=self._run, name="toktools-commit", daemon=True)
            self._thread.start()
        self._jobs.put((job, on_failure))

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            job, on_failure = item
            if self._error is None:
                try:
                    job()
                    continue
                except BaseException as err:  # noqa: BLE001 - raised again in the caller's thread
                    self._error = err
            if on_failure is not None:
                try:
                    on_failure()
                except BaseException:  # noqa: BLE001, S110 - the first error is the one reported
                    pass

    def check(self) -> None:
        """Raise the error of a job that failed."""
        if self._error is not None:
            raise self._error

    def close(self, *, check: bool = True) -> None:
        """Wait for every job queued (then raise the first error, with ``check``)."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None
        if check:
            self.check()


@dataclass
class ShardInfo:
    """What the manifest says about one finished output: counts and each file's checksum."""

    documents: int
    tokens: int
    files: dict[str, dict[str, Any]]


class DocumentWriter:
    """Documents in, one output (megatron pair, or flat array + offsets) out.

    ``write(ids)`` appends to the open document; ``end_document()`` closes it (a document with
    no token is dropped); ``finish()`` writes the index, renames everything into place and
    returns the counts and checksums. ``discard()`` leaves nothing behind."""

    def __init__(
        self, fmt: str, base: Path, dtype: str, suffix: str | None = None, committer: Committer | None = None
    ) -> None:
        if fmt not in FORMATS:
            raise ToktoolsError(f"unknown corpus format {fmt!r}; choose one of {', '.join(FORMATS)}")
        self.fmt = fmt
        self.dtype = dtype
        self.typecode = _ARRAY_CODES[dtype]
        self.itemsize = array(self.typecode).itemsize
        self.paths = output_files(fmt, base, suffix)
        self.lengths = array("q")  # tokens per finished document
        self.open_tokens = 0
        self.tokens = 0
        self._queue: list[Sequence[int] | bytes] = []  # id lists, or data already converted (bytes)
        self._queued = 0
        self._files: list[_AtomicFile] = []
        #: where a finished output's files are synced and put in place (None: in ``finish``)
        self.committer = committer
        self.data = self._open(self.paths["bin" if fmt == "megatron" else "data"])
        if fmt == "npy":
            self.data.write(npy_header(_NPY_DESCR[dtype], 0))

    def _open(self, target: Path) -> _AtomicFile:
        handle = _AtomicFile(target)
        self._files.append(handle)
        return handle

    def write(self, ids: Sequence[int]) -> None:
        """Append ids to the open document. They are queued and written in large blocks: one
        write over many documents costs far less than one per document."""
        if ids:
            self._queue.append(ids)
            self._queued += len(ids)
            self.open_tokens += len(ids)
            if self._queued >= 1 << 20:
                self.flush()

    def write_uint32(self, data: bytes) -> None:
        """Append ids given as native uint32 (:class:`toktools.engines.base.PackedIds` data: a batch
        at once, converted to the dtype in C calls). Unlike :meth:`write`, no document is
        counted: the caller ends them with :meth:`add_document`."""
        if data:
            self._queue.append(uint32_to_dtype(data, self.dtype))
            self._queued += len(data) >> 2
            if self._queued >= 1 << 20:
                self.flush()

    def write_ids(self, ids: Any) -> None:
        """:meth:`write_uint32` for a NumPy array of ids (the block path's arrays): converted to
        the dtype in one pass and written from the array itself, with no ``bytes`` copy of it
        (each copy of a 100 MB run's ids costs ~10 ms). No document is counted."""
        if not len(ids):
            return
        if sys.byteorder != "little":
            self.write_uint32(ids.astype("=u4").tobytes())
            return
        self.flush()  # what is queued goes first
        self.data.write(memoryview(ids.astype(_NPY_DESCR[self.dtype], copy=False)).cast("B"))

    def add_document(self, length: int) -> None:
        """Count a document of ``length`` ids written with :meth:`write_uint32` (none: dropped)."""
        if length:
            self.lengths.append(length)
            self.tokens += length

    def add_documents(self, lengths: bytes) -> None:
        """Count many documents at once: their lengths as native int64 (each at least 1), for
        ids written with :meth:`write_uint32` (no Python int per document on the caller's side)."""
        chunk = array("q")
        chunk.frombytes(lengths)
        self.lengths.extend(chunk)
        self.tokens += sum(chunk)

    def flush(self) -> None:
        if self._queue:
            # one struct.pack per document, little-endian already: about half the time of
            # array.fromlist + byteswap, on every id of the corpus
            code = self.typecode
            self.data.write(
                b"".join(
                    [ids if isinstance(ids, bytes) else struct.pack(f"<{len(ids)}{code}", *ids) for ids in self._queue]
                )
            )
            self._queue = []
            self._queued = 0

    def end_document(self) -> None:
        if self.open_tokens:
            self.lengths.append(self.open_tokens)
            self.tokens += self.open_tokens
            self.open_tokens = 0

    @property
    def documents(self) -> int:
        return len(self.lengths)

    def finish(self) -> ShardInfo:
        """Write the index and return the counts and checksums. The files are synced to disk
        and renamed into place here, or, with a :class:`Committer`, on its thread (in order:
        the caller records the output as written only in a job queued after this one)."""
        try:
            self.end_document()
            self.flush()
            if self.fmt == "megatron":
                index = self._open(self.paths["idx"])
                self._write_megatron_index(index)
                order = [("idx", index), ("bin", self.data)]
            else:
                if self.fmt == "npy":
                    self.data.patch_start(npy_header(_NPY_DESCR[self.dtype], self.tokens))
                offsets = self._open(self.paths["offsets"])
                self._write_offsets(offsets)
                order = [("offsets", offsets), ("data", self.data)]
            # later: only when every file was hashed as written (a patched one is read again once closed)
            later = self.committer is not None and all(handle.digest is not None for _, handle in order)
            hashes = {role: handle.flush_and_hash() if later else handle.close_and_hash() for role, handle in order}
            files = {}
            for role in self.paths:
                handle = next(f for f in self._files if f.target == self.paths[role])
                files[role] = {
                    "name": self.paths[role].name,
                    "bytes": os.path.getsize(handle.temporary),
                    "sha256": hashes[role],
                }
            if later:
                assert self.committer is not None
                self.committer.submit(self._sync_and_publish, self.discard)
            else:
                self._publish()
        except BaseException:
            self.discard()
            raise
        return ShardInfo(self.documents, self.tokens, files)

    def _sync_and_publish(self) -> None:
        for handle in self._files:
            handle.sync_and_close()
        self._publish()

    def _publish(self) -> None:
        for handle in self._files:  # data first, index last: an index never points at nothing
            handle.commit()

    def _write_megatron_index(self, out: _AtomicFile) -> None:
        count = len(self.lengths)
        out.write(MEGATRON_HEADER + struct.pack("<Q", 1) + struct.pack("<B", MEGATRON_DTYPE_CODES[self.dtype]))
        out.write(struct.pack("<Q", count) + struct.pack("<Q", count + 1))
        numpy = sys.modules.get("numpy")  # loaded by the block paths: the same bytes, ~20x faster
        if numpy is not None and sys.byteorder == "little":
            self._write_megatron_arrays(out, numpy)
            return
        step = 1 << 20  # write in slices: flat memory for any number of documents
        for start in range(0, count, step):
            if max(self.lengths[start : start + step], default=0) > 0x7FFFFFFF:
                raise ToktoolsError("a document longer than 2**31 tokens does not fit Megatron's int32 lengths")
            out.write(_little(array("i", self.lengths[start : start + step])))
        pointer = 0
        for start in range(0, count, step):  # running sums in C calls (no Python loop per document)
            pointers = array(
                "q", accumulate(map(mul, self.lengths[start : start + step], repeat(self.itemsize)), initial=pointer)
            )
            pointer = pointers.pop()
            out.write(_little(pointers))
        for start in range(0, count + 1, step):
            out.write(_little(array("q", range(start, min(start + step, count + 1)))))

    def _write_megatron_arrays(self, out: _AtomicFile, np: Any) -> None:
        """The index's three arrays as :meth:`_write_megatron_index` writes them, with NumPy."""
        count = len(self.lengths)
        lengths = np.frombuffer(self.lengths, dtype=np.int64) if count else np.zeros(0, dtype=np.int64)
        step = 1 << 20  # in slices: flat memory for any number of documents
        if count and int(lengths.max()) > 0x7FFFFFFF:
            raise ToktoolsError("a document longer than 2**31 tokens does not fit Megatron's int32 lengths")
        for start in range(0, count, step):
            out.write(memoryview(lengths[start : start + step].astype("<i4")).cast("B"))
        pointer = 0
        for start in range(0, count, step):
            sizes = lengths[start : start + step] * self.itemsize
            pointers = np.cumsum(sizes) - sizes + pointer  # running sums from ``pointer``
            pointer = int(pointers[-1] + sizes[-1])
            out.write(memoryview(pointers.astype("<i8", copy=False)).cast("B"))
        for start in range(0, count + 1, step):
            out.write(memoryview(np.arange(start, min(start + step, count + 1), dtype="<i8")).cast("B"))
        del lengths  # the view is released before the array may grow again

    def _write_offsets(self, out: _AtomicFile) -> None:
        count = len(self.lengths)
        if self.fmt == "npy":
            out.write(npy_header(_NPY_DESCR["int64"], count + 1))
        position = 0
        step = 1 << 20
        out.write(_little(array("q", [0])))
        for start in range(0, count, step):
            chunk = array("q", accumulate(self.lengths[start : start + step], initial=position))
            del chunk[0]
            if len(chunk):
                position = chunk[-1]
            out.write(_little(chunk))

    def discard(self) -> None:
        for handle in self._files:
            handle.discard()


# ---------------------------------------------------------------------------------------------
# Reading (for tests, verification and users without megatron-core)
# ---------------------------------------------------------------------------------------------


@dataclass
class MegatronIndex:
    dtype_code: int
    sequence_lengths: list[int]
    sequence_pointers: list[int]
    document_indices: list[int]


_CODE_TO_TYPE = {1: "B", 2: "b", 3: "h", 4: "i", 5: "q", 8: "H"}


def read_megatron_index(path: str | Path) -> MegatronIndex:
    """Parse an ``.idx`` file from the published layout (no NumPy, no Megatron needed)."""
    data = Path(path).read_bytes()
    if data[:9] != MEGATRON_HEADER:
        raise ToktoolsError(f"{path}: not a Megatron index (bad header)")
    (version,) = struct.unpack_from("<Q", data, 9)
    if version != 1:
        raise ToktoolsError(f"{path}: Megatron index version {version}, expected 1")
    code = data[17]
    sequences, documents = struct.unpack_from("<QQ", data, 18)
    offset = 34
    lengths = array("i", data[offset : offset + 4 * sequences])
    offset += 4 * sequences
    pointers = array("q", data[offset : offset + 8 * sequences])
    offset += 8 * sequences
    indices = array("q", data[offset : offset + 8 * documents])
    offset += 8 * documents
    if sys.byteorder != "little":
        for part in (lengths, pointers, indices):
            part.byteswap()
    if offset != len(data):
        raise ToktoolsError(f"{path}: {len(data) - offset} unexpected bytes after the index")
    return MegatronIndex(code, lengths.tolist(), pointers.tolist(), indices.tolist())


def read_megatron_documents(prefix: str | Path) -> list[list[int]]:
    """All documents of ``PREFIX.bin`` + ``PREFIX.idx`` as id lists."""
    index = read_megatron_index(f"{prefix}.idx")
    typecode = _CODE_TO_TYPE[index.dtype_code]
    data = Path(f"{prefix}.bin").read_bytes()
    size = array(typecode).itemsize
    sequences = []
    for pointer, length in zip(index.sequence_pointers, index.sequence_lengths):
        values = array(typecode, data[pointer : pointer + length * size])
        if sys.byteorder != "little":
            values.byteswap()
        sequences.append(values.tolist())
    bounds = index.document_indices
    return [[i for seq in sequences[a:b] for i in seq] for a, b in zip(bounds, bounds[1:])]
