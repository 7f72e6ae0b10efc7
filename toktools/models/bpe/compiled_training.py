"""The BPE trainer's merge loop compiled (:mod:`toktools.models.bpe.training_kernels`), called
without importing numba: the kernel's machine code comes from
:func:`toktools.runtime.machine_code.kernel` (kept in the user cache; numba only compiles it the
first time). Where there is no kernel (numba not installed, ``TOKTOOLS_PURE_PYTHON=1``), the
Python engines of :mod:`toktools.models.bpe.trainer` run instead, with the same result.

The kernel takes every array from here, sized from the words; when one proves too small it says
which, and the run starts again with that one four times larger.
"""

from __future__ import annotations

import ctypes
import sys
from array import array
from dataclasses import dataclass
from itertools import accumulate

#: The kernel: module, function, and the types of its parameters (its signature; see there).
_KERNEL = (
    "toktools.models.bpe.training_kernels",
    "train_merges_at",
    (
        "int64",  # n_words
        "int64",  # n_symbols
        "uint32*",  # symbols
        "int64*",  # starts
        "int64*",  # ends
        "int64*",  # word_counts
        "int64",  # n_lengths
        "int64*",  # lengths
        "int64",  # first_new
        "int64",  # vocab_size
        "int64",  # threshold
        "int64",  # max_length
        "int64",  # table_size
        "int64*",  # table
        "uint64",  # shift
        "int64",  # node_cap
        "int64*",  # nodes
        "int64",  # heap_cap
        "int64*",  # heap
        "int64*",  # visited
        "int64",  # merge_cap
        "int64*",  # merge_pairs
        "int64*",  # merge_counts
        "int64*",  # state
    ),
)

#: Below this many symbols in all words, the kernel is only used when it is compiled already:
#: the Python engines train that much in about the seconds numba takes to compile it once
#: (it is then compiled in the background, :mod:`toktools.runtime.background_compile`).
COMPILE_FROM_SYMBOLS = 1_000_000

#: Above this many bytes of buffers (~6M symbols of words, most of 7 MB of Chinese clauses
#: that never repeat), the Python engines train instead: slower, but in a sixth of the memory.
MEMORY_BUDGET = 384 << 20

_TABLE_FULL, _NODES_FULL, _HEAP_FULL = -1, -2, -3  # the kernel's codes (training_kernels)
_NO_LIMIT = (1 << 62) - 1


@dataclass
class CompiledMerges:
    """The merges the kernel learnt, in order: left ids, right ids and the count of each; merge
    ``k`` made id ``first_new + k``."""

    lefts: list[int]
    rights: list[int]
    counts: list[int]


def compiled_trainer_available() -> bool:
    """Whether the compiled merge loop can run here (numba installed, not turned off)."""
    from toktools.runtime.compiled_switch import numba_installed, pure_python_forced

    return not pure_python_forced() and numba_installed()


def prepare_kernel() -> bool:
    """Compile the kernel now (numba, seconds) and keep its machine code in the user cache, so
    that later jobs of any size use it (e.g. while building an image); whether it is ready."""
    if not compiled_trainer_available():
        return False
    from toktools.runtime.machine_code import kernel

    return kernel(*_KERNEL) is not None


def train_merges(
    words: list[str],
    counts: list[int],
    lengths: list[int],
    vocab_size: int,
    threshold: int,
    max_length: float,
) -> CompiledMerges | None:
    """The merges of ``words`` (strings of symbol ids, one character each) seen ``counts``
    times, until there are ``vocab_size`` ids (``len(lengths)`` before the first merge;
    ``lengths`` holds each id's length in initial symbols), or None without a kernel."""
    if not compiled_trainer_available():
        return None
    from toktools.runtime.machine_code import kernel, ready

    if sum(map(len, words)) < COMPILE_FROM_SYMBOLS and not ready(*_KERNEL):
        # compiling would take longer than the Python engines: they train this job, while a
        # detached process compiles the kernel for the next one
        from toktools.runtime.background_compile import start

        start(*_KERNEL)
        return None
    run = kernel(*_KERNEL)
    if run is None:
        return None
    first_new = len(lengths)
    merge_cap = max(vocab_size - first_new, 1)
    # plain buffers, not numpy (its import alone costs a tenth of a 5 MB run); the kernel
    # writes every element it reads, and bytearrays are zeroed lazily by the system
    symbols = "".join(words).encode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")
    n_words, n_symbols = len(words), len(symbols) // 4
    starts = array("q", accumulate(map(len, words), initial=0))
    word_counts = array("q", counts)
    # every merge occurrence forms at most two pairs and removes one symbol: these bounds are
    # generous for real text and enlarged on the rare run that needs more
    pairs = max(n_symbols - n_words, 1)  # pair occurrences
    slots = pairs // 4 + 2 * merge_cap  # distinct pairs ever counted: a third of the occurrences, or less
    nodes = 3 * pairs + 4 * merge_cap  # words noted: 2.5 per pair occurrence, or less
    if _buffer_bytes(n_symbols, n_words, slots, nodes) > MEMORY_BUDGET:
        return None  # the Python engines hold the words in less memory
    while True:
        bits = max(10, int(2 * slots - 1).bit_length())
        table_size = 1 << bits  # at most half full
        heap_cap = table_size // 2
        lengths_out = array("q", lengths)
        lengths_out.frombytes(bytes(8 * (max(vocab_size, first_new) + 1 - first_new)))
        state = array("q", [0, 0, 0])
        work = bytearray(symbols)
        table, node_array, heap = bytearray(32 * table_size), bytearray(16 * nodes), bytearray(16 * heap_cap)
        ends, visited = bytearray(8 * n_words), bytearray(8 * n_words)
        merge_pairs, merge_counts = bytearray(8 * merge_cap), bytearray(8 * merge_cap)
        done = run(
            n_words,
            n_symbols,
            _address(work),
            starts.buffer_info()[0],
            _address(ends),
            word_counts.buffer_info()[0],
            len(lengths_out),
            lengths_out.buffer_info()[0],
            first_new,
            vocab_size,
            threshold,
            _NO_LIMIT if max_length == float("inf") else int(max_length),
            table_size,
            _address(table),
            64 - bits,
            nodes,
            _address(node_array),
            heap_cap,
            _address(heap),
            _address(visited),
            merge_cap,
            _address(merge_pairs),
            _address(merge_counts),
            state.buffer_info()[0],
        )
        if done == _TABLE_FULL or done == _HEAP_FULL:
            slots *= 4
        elif done == _NODES_FULL:
            nodes *= 4
        else:
            break
    learnt = memoryview(merge_pairs).cast("q")[:done].tolist()
    lefts = [pair >> 32 for pair in learnt]
    rights = [pair & 0xFFFFFFFF for pair in learnt]
    return CompiledMerges(lefts, rights, memoryview(merge_counts).cast("q")[:done].tolist())


def _buffer_bytes(n_symbols: int, n_words: int, slots: int, nodes: int) -> int:
    """The kernel's buffers in bytes, at most (the pages it never touches cost nothing)."""
    table_size = 1 << max(10, int(2 * slots - 1).bit_length())
    return 4 * n_symbols + 24 * n_words + 32 * table_size + 16 * nodes + 8 * table_size


def _address(buffer: bytearray) -> int:
    """Where a bytearray's bytes are (for the kernel; the bytearray must outlive the call)."""
    return ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))
