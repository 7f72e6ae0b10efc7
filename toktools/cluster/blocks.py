"""Past one machine: the per-block work of ``count`` (and ``encode``) on a Dask cluster.

The corpus is cut into blocks — byte ranges of a file that start and end at a line boundary
(compressed files cannot be entered in the middle, so each is one block) — and every block is
one task that runs the same function the local process pool runs. Inputs are read through
fsspec, so ``s3://``, ``gs://`` or ``hdfs://`` paths work wherever that backend is installed.

Results never depend on the cluster: per-block word counts are merged in block order (by the
client, after a tree of merges on the workers when there are many blocks), and every merge keeps
that order (``Counter.update`` appends new words in order), so the counts — and their
first-occurrence order, which WordPiece training reads — are the local run's, byte for byte.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from toktools.errors import ToktoolsError

#: Default block: big enough that the scheduler's ~1 ms per task is noise, small enough that
#: a 2-core worker holds a few in memory (see README, "Running on a cluster").
BLOCK_BYTES = 64 << 20
#: Per-block results merged this many at a time (a tree, so no worker gets every result).
MERGE_FAN_IN = 8
_READ_BYTES = 4 << 20
_INSTALL_HINT = "--cluster needs Dask: pip install 'toktools[dask]'"


# ---------------------------------------------------------------------------------------------
# Connecting
# ---------------------------------------------------------------------------------------------


def _worker_version() -> str:
    from toktools._version import __version__

    return __version__


@contextmanager
def cluster_client(address: str, timeout: float = 30.0) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address`` (``tcp://host:8786``), or for a LocalCluster on
    the loopback with ``local`` / ``local:N`` (N worker processes, one thread each). Workers
    must run this very toktools version: mixed versions could cut text differently."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ToktoolsError(_INSTALL_HINT) from None
    cluster = None
    if address == "local" or address.startswith("local:"):
        count = address.partition(":")[2]
        if count and not (count.isdigit() and int(count) > 0):
            raise ToktoolsError(f"--cluster {address}: expected local or local:N with N a positive number")
        workers = int(count) if count else (os.cpu_count() or 1)
        # the scheduler's HTTP server (metrics; no dashboard) on a free loopback port: the default
        # 8787 may be taken, which printed a warning
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0", "dashboard": False},
        )
        client = Client(cluster, timeout=timeout)
    else:
        try:
            client = Client(address, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as err:
            raise ToktoolsError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s ({err})") from None
    try:
        check_workers(client, address)
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def check_workers(client: Any, address: str) -> None:
    """Refuse, in one line, a cluster with no workers or with workers that cannot run this
    version of toktools."""
    from toktools._version import __version__

    versions = client.run(_worker_version, on_error="return")
    if not versions:
        raise ToktoolsError(f"the Dask cluster at {address} has no workers")
    for worker, version in sorted(versions.items()):
        if isinstance(version, BaseException):
            raise ToktoolsError(
                f"Dask worker {worker} cannot run toktools ({type(version).__name__}: {version}); "
                f"install toktools {__version__} on every worker"
            )
        if version != __version__:
            raise ToktoolsError(
                f"Dask worker {worker} runs toktools {version}, this is {__version__}: "
                "mixed versions could give different ids; install the same version everywhere"
            )


# ---------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A byte range ``[start, start + length)`` of one input, widened to whole lines when read;
    ``length`` None means the whole (compressed) file."""

    path: str
    start: int
    length: int | None
    compression: str | None


def _expand(raw: str) -> list[str]:
    """A path, glob or directory (local or any fsspec URL) → its files, sorted."""
    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(raw)
    except (ImportError, ValueError) as err:
        raise ToktoolsError(f"cannot read {raw}: {err}") from None
    protocol = raw.split("://", 1)[0] + "://" if "://" in raw else ""
    if any(ch in root for ch in "*?["):
        found = sorted(fs.glob(root))
        if not found:
            raise ToktoolsError(f"no file matches {raw}")
    elif fs.isdir(root):
        found = sorted(p for p in fs.find(root) if not os.path.basename(p).startswith("."))
        if not found:
            raise ToktoolsError(f"directory {raw} holds no files")
    elif fs.exists(root):
        found = [root]
    else:
        raise ToktoolsError(f"corpus file not found: {raw}")
    return [raw if p == root and not protocol else fs.unstrip_protocol(p) if protocol else p for p in found]


def plan_blocks(inputs: Sequence[str], block_bytes: int = BLOCK_BYTES) -> list[Block]:
    """The blocks of all inputs, in input order."""
    import fsspec
    from fsspec.utils import infer_compression

    if block_bytes < 1:
        raise ToktoolsError("the block size must be at least one byte")
    blocks: list[Block] = []
    for raw in inputs:
        if raw == "-":
            raise ToktoolsError("standard input cannot be sent to a cluster: name files")
        if "://" not in raw and _read_once(raw):  # blocks are read by offset, on other machines
            raise ToktoolsError(f"{raw} is a FIFO, pipe or device: it cannot be cut into blocks; name files")
        for path in _expand(raw):
            compression = infer_compression(path)
            if compression is not None:
                blocks.append(Block(path, 0, None, compression))
                continue
            fs, local = fsspec.core.url_to_fs(path)
            size = fs.size(local)
            blocks.extend(Block(path, start, block_bytes, None) for start in range(0, max(size, 1), block_bytes))
    return blocks


def lines_before(block: Block) -> int:
    """How many lines of the file come before the block (asked for only to name a bad line).

    A block that does not start the file begins just after the first newline at or after
    byte ``start - 1``: the lines before it are the newlines before that byte, plus that one."""
    if block.start == 0:
        return 0
    import fsspec

    with fsspec.open(block.path, "rb") as handle:
        seen, lines = 0, 0
        while seen < block.start - 1:
            data = handle.read(min(_READ_BYTES, block.start - 1 - seen))
            if not data:
                break
            seen += len(data)
            lines += data.count(b"\n")
    return lines + 1


def read_block(block: Block) -> Iterator[bytes]:
    """The block's whole lines, in pieces of about 4 MB that end at a newline (or the end)."""
    import fsspec

    try:
        if block.compression is None:
            fs, path = fsspec.core.url_to_fs(block.path)
            data = fs.read_block(path, block.start, block.length, delimiter=b"\n")
            at = 0
            while at < len(data):
                end = data.find(b"\n", at + _READ_BYTES - 1)
                end = len(data) if end < 0 else end + 1
                yield data[at:end]
                at = end
            return
        with fsspec.open(block.path, "rb", compression=block.compression) as handle:
            pending = b""
            while True:
                data = handle.read(_READ_BYTES)
                if not data:
                    break
                data = pending + data
                cut = data.rfind(b"\n") + 1
                pending = data[cut:]
                if cut:
                    yield data[:cut]
            if pending:
                yield pending
    except (OSError, EOFError) as err:
        raise ToktoolsError(f"{block.path}: cannot read ({err})") from None


# ---------------------------------------------------------------------------------------------
# count
# ---------------------------------------------------------------------------------------------


def count_block(block: Block, splitter: Any, errors: str = "strict", json_field: str | None = None) -> dict[str, int]:
    """Word counts of one block, in first-occurrence order (the task every worker runs)."""
    from toktools.corpus import reading as corpus

    source = corpus.CorpusSource(block.path, json_field)
    counts: Counter[str] = Counter()
    lines = 0  # lines of the block before the current piece
    for piece in read_block(block):
        try:
            text = corpus.decode_lines(piece, source, 1, errors)  # type: ignore[arg-type]
            if json_field:
                text = corpus.json_lines_text(text, source, 1)
        except ToktoolsError:
            raise _relocated(piece, source, lines_before(block) + lines + 1, errors, json_field) from None
        counts.update(splitter(text))
        lines += piece.count(b"\n")
    return dict(counts)


def _relocated(piece: bytes, source: Any, first_line: int, errors: str, json_field: str | None) -> ToktoolsError:
    """The same error, now naming the line in the whole file."""
    from toktools.corpus import reading as corpus

    try:
        text = corpus.decode_lines(piece, source, first_line, errors)  # type: ignore[arg-type]
        if json_field:
            corpus.json_lines_text(text, source, first_line)
    except ToktoolsError as err:
        return err
    return ToktoolsError(f"{source.path}: cannot read")  # pragma: no cover - the error recurs


def merge_counts(*parts: dict[str, int]) -> dict[str, int]:
    """Ordered merge: the words of earlier parts first, new words in the order they come."""
    total: Counter[str] = Counter()
    for part in parts:
        total.update(part)
    return dict(total)


def _pack(counts: dict[str, int]) -> bytes:
    import pickle

    return pickle.dumps(counts, protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(data: bytes) -> dict[str, int]:
    import pickle

    return pickle.loads(data)  # noqa: S301 - our own tasks' results, from our own workers


def count_block_packed(block: Block, splitter: Any, errors: str = "strict", json_field: str | None = None) -> bytes:
    """:func:`count_block`, pickled. Dask walks a dict or list result item by item (about
    50 µs per item: 7 s for the 5 results of a 2 MB corpus, against 0.5 s of counting); a
    bytes object it sends as it is."""
    return _pack(count_block(block, splitter, errors, json_field))


def merge_packed(*parts: bytes) -> bytes:
    """:func:`merge_counts` of packed parts, packed."""
    return _pack(merge_counts(*(_unpack(part) for part in parts)))


def count_words(
    client: Any,
    inputs: Sequence[str],
    splitter: Any,
    *,
    errors: str = "strict",
    json_field: str | None = None,
    block_bytes: int = BLOCK_BYTES,
    progress: Any = None,
) -> dict[str, int]:
    """``word -> count`` of the inputs, computed on the cluster; equal, in content and order, to
    :func:`toktools.corpus.reading.count_words` on the same files.

    Up to :data:`CLIENT_MERGES` block results are merged here, in block order, as they come
    (like the local pool's main process does); more are first merged on the workers in a tree,
    since one machine cannot take in the results of thousands of blocks. Each tree level
    unpickles, merges and pickles again what it receives: on 100 MB of text (16 blocks, most
    words of the Chinese part distinct per block) a two-level tree cost ~9 CPU-seconds
    against ~2.5 s for merging here."""
    blocks = plan_blocks(inputs, block_bytes)
    futures = client.map(
        count_block_packed, blocks, splitter=splitter, errors=errors, json_field=json_field, pure=False
    )
    total_bytes = _progress_as_done(futures, blocks, progress) if progress is not None else 0
    tops = _reduce_to(client, futures, merge_packed, CLIENT_MERGES)
    del futures  # the tree holds what it still needs
    total: Counter[str] = Counter()
    try:
        for index, future in enumerate(tops):
            total.update(_unpack(future.result()))
            tops[index] = None  # let the worker free it
    except ToktoolsError:
        raise
    except Exception as err:  # a task failed on a worker: its message is ours if it was a ToktoolsError
        raise ToktoolsError(f"the cluster failed: {type(err).__name__}: {err}") from None
    if progress is not None:  # the last task's callback may still be on its way
        progress(total_bytes, total_bytes)
    if not total:
        raise ToktoolsError("the corpus is empty: no words to learn from")
    return dict(total)


#: Block results the client merges itself; beyond this, the workers merge them first.
CLIENT_MERGES = 64


def _reduce_to(client: Any, futures: list[Any], merge: Any, limit: int) -> list[Any]:
    """Merge tasks, :data:`MERGE_FAN_IN` neighbours at a time, until at most ``limit`` remain
    (in order); submitted at once, so merges run while later blocks are still counted."""
    while len(futures) > max(1, limit):
        futures = [
            client.submit(merge, *futures[i : i + MERGE_FAN_IN], pure=False)
            for i in range(0, len(futures), MERGE_FAN_IN)
        ]
    return list(futures)


def _progress_as_done(futures: Sequence[Any], blocks: Sequence[Block], progress: Any) -> int:
    """Call ``progress(done, total)`` in bytes of blocks as each block's task finishes (from
    Dask's thread; rich progress bars take updates from any thread); returns the total."""
    import threading

    file_sizes: dict[str, int] = {}
    sizes = [block_size(block, file_sizes) for block in blocks]
    total, state, lock = sum(sizes), [0], threading.Lock()

    def finished(size: int) -> Any:
        def callback(_future: Any) -> None:
            with lock:
                state[0] += size
                progress(min(state[0], total), total)

        return callback

    for future, size in zip(futures, sizes):
        future.add_done_callback(finished(size))
    return total


def block_size(block: Block, file_sizes: dict[str, int] | None = None) -> int:
    """A block's bytes on disk: its range within the file (a compressed file: its size)."""
    import fsspec

    sizes = {} if file_sizes is None else file_sizes
    if block.path not in sizes:
        fs, path = fsspec.core.url_to_fs(block.path)
        sizes[block.path] = int(fs.size(path) or 0)
    if block.length is None:
        return sizes[block.path]
    return max(0, min(block.length, sizes[block.path] - block.start))


#: Counting cuts the corpus into at least this many tasks per worker thread, so that a slow
#: or late worker holds up the end by a fraction of its share, not by half the corpus ...
TASKS_PER_WORKER = 8
#: ... but no smaller than this: ~1 s of counting per task at ~5 MB/s per core, against ~1 ms of scheduling.
SMALLEST_BALANCED_BLOCK = 4 << 20


def balanced_block_bytes(client: Any, inputs: Sequence[str], largest: int) -> int:
    """The block size for counting: ``largest`` (``--block-size``), or smaller when the corpus
    would then give the cluster's workers fewer than :data:`TASKS_PER_WORKER` blocks each (a
    100 MB corpus on 2 workers in 64 MiB blocks is 2 uneven tasks: one worker waits for the
    other). Counts do not depend on the block size; only the time does."""
    import fsspec

    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values()) or 1
    total = 0
    for raw in inputs:
        for path in _expand(raw) if raw != "-" else []:
            fs, local = fsspec.core.url_to_fs(path)
            total += fs.size(local) or 0
    balanced = max(SMALLEST_BALANCED_BLOCK, -(-total // (TASKS_PER_WORKER * threads)))
    return max(1, min(largest, balanced))


def count_corpus(
    cluster: Any,
    inputs: Sequence[str],
    splitter: Any,
    *,
    errors: str = "strict",
    json_field: str | None = None,
    progress: Any = None,
) -> dict[str, int]:
    """:func:`count_words` on ``cluster``: what ``cluster=`` of the counting API does. It is a
    :class:`toktools.cluster.settings.Cluster` or an address (connected to, then closed), or a
    ``distributed.Client`` the caller already holds (used as it is, and left open). Blocks are
    at most the cluster's ``block_bytes`` (see :func:`balanced_block_bytes`)."""
    from toktools.cluster.settings import DEFAULT_BLOCK_BYTES, as_cluster

    if is_client(cluster):
        check_workers(cluster, str(cluster.scheduler.address))
        return count_words(
            cluster,
            inputs,
            splitter,
            errors=errors,
            json_field=json_field,
            progress=progress,
            block_bytes=balanced_block_bytes(cluster, inputs, DEFAULT_BLOCK_BYTES),
        )
    chosen = as_cluster(cluster)
    assert chosen is not None
    with cluster_client(chosen.address, chosen.timeout) as client:
        return count_words(
            client,
            inputs,
            splitter,
            errors=errors,
            json_field=json_field,
            progress=progress,
            block_bytes=balanced_block_bytes(client, inputs, chosen.block_bytes),
        )


def is_client(value: Any) -> bool:
    """A ``distributed.Client``, recognised without importing Dask when it is not one."""
    return type(value).__name__ == "Client" and type(value).__module__.startswith("distributed")


def _read_once(path: str) -> bool:
    from toktools.io.inputs import read_once

    return read_once(path)
