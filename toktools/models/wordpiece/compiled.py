"""The compiled WordPiece of a batch (:mod:`toktools.models.wordpiece.kernel`) as the lazy
WordPiece batches call it, without importing numba: the kernel comes from
:func:`toktools.runtime.machine_code.kernel` (machine code kept in the user cache).

One call, without the GIL (ctypes), gives every token of a batch's normalised texts (their
words, each split by greedy longest match) with its span: no string per word, no Python per
word, where the Python path makes a string per word, looks each up and splits each new one.
"""

from __future__ import annotations

import numpy as np

from toktools.models.bpe.pair_table import EMPTY_KEY, PairTable

#: The kernel: module, function, and the types of its parameters.
_KERNEL = (
    "toktools.models.wordpiece.kernel",
    "wordpiece_at",
    (
        "int64",
        "uint32*",
        "uint8*",
        "int64",
        "uint64*",
        "int64*",
        "uint64",
        "int64",
        "int64",
        "int64*",
        "uint32*",
        "int64*",
        "int64*",
        "uint64",
        "int64",
        "int64",
        "int64",
        "uint64*",
        "uint64*",
        "int64*",
        "int64*",
        "int64*",
    ),
)
#: The polynomial hash's base (odd, so no code point's weight vanishes modulo 2**64).
BASE = np.uint64(0x100000001B3)
#: A word longer than this goes the Python way (the kernel's scratch is sized by it).
MAX_CHARS = 10_000


def kept() -> bool:
    """The compiled WordPiece loads cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL)


def start_compiling() -> None:
    """Have the kernel compiled into the user cache in a detached process, for later runs."""
    from toktools.runtime.background_compile import start

    start(*_KERNEL)


def _keys(points: np.ndarray, starts: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """Each entry's key as the kernel computes it: the polynomial hash of its code points (the
    longest entries set the number of steps), times 2, plus its flag; modulo 2**64."""
    lengths = np.diff(starts)
    keys = np.zeros(len(lengths), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(int(lengths.max(initial=0))):
            longer = lengths > k
            keys[longer] = keys[longer] * BASE + points[starts[:-1][longer] + k].astype(np.uint64)
        return keys * np.uint64(2) + flags.astype(np.uint64)


class CompiledWordPiece:
    """One WordPiece model's vocabulary as the kernel's hash table. Raises ``ImportError`` when
    there is no compiled kernel, ``ValueError`` when the model does not fit it (no unknown
    token in the vocabulary, two entries with one key, a huge ``max_input_chars_per_word``)."""

    def __init__(self, vocab: dict[str, int], unk_token: str, prefix: str, max_chars: int) -> None:
        if unk_token not in vocab or max_chars > MAX_CHARS or not prefix:
            raise ValueError("this WordPiece model goes the Python way")
        from toktools.runtime.machine_code import kernel

        run = kernel(*_KERNEL)
        if run is None:
            raise ImportError("the compiled WordPiece needs numba (extra 'fast')")
        self._kernel = run
        tokens = list(vocab)
        continuing = [token[len(prefix) :] for token in tokens if token.startswith(prefix)]
        bodies = tokens + continuing
        flags = np.zeros(len(bodies), dtype=np.int64)
        flags[len(tokens) :] = 1
        self.entry_ids = np.array(list(vocab.values()) + [vocab[prefix + body] for body in continuing], dtype=np.int64)
        joined = "".join(bodies)
        self.entry_points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        self.entry_starts = np.zeros(len(bodies) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, bodies), dtype=np.int64, count=len(bodies)), out=self.entry_starts[1:])
        self.entry_flags = flags
        keys = _keys(self.entry_points, self.entry_starts, flags)
        if len(np.unique(keys)) != len(keys) or (keys == EMPTY_KEY).any():
            raise ValueError("two vocabulary entries share a key: the Python way")
        self.table = PairTable(keys)
        self.longest = max(1, int(np.diff(self.entry_starts).max(initial=1)))
        self.unk_id = vocab[unk_token]
        self.max_chars = max_chars

    def tokens(self, points: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, starts, ends)`` of every token of the words in ``points`` (spans in ``points``).
        Runs without the GIL (several calls at once too: each has its own scratch)."""
        points = np.ascontiguousarray(points, dtype=np.uint32)
        room = max(1, len(points))
        ids, starts, ends = (np.empty(room, dtype=np.int64) for _ in range(3))
        hashes, powers = np.empty(self.max_chars + 1, dtype=np.uint64), np.empty(self.max_chars + 1, dtype=np.uint64)
        table = self.table
        count = self._kernel(
            len(points),
            points.ctypes.data,
            classes.ctypes.data,
            len(table.keys),
            table.keys.ctypes.data,
            table.index.ctypes.data,
            int(table.shift),
            len(self.entry_ids),
            len(self.entry_points),
            self.entry_starts.ctypes.data,
            self.entry_points.ctypes.data,
            self.entry_flags.ctypes.data,
            self.entry_ids.ctypes.data,
            int(BASE),
            self.unk_id,
            self.max_chars,
            self.longest,
            hashes.ctypes.data,
            powers.ctypes.data,
            ids.ctypes.data,
            starts.ctypes.data,
            ends.ctypes.data,
        )
        return ids[:count], starts[:count], ends[:count]


def load(vocab: dict[str, int], unk_token: str, prefix: str, max_chars: int) -> CompiledWordPiece | None:
    """The compiled WordPiece for this model if its machine code is kept here and the model fits
    it; else None (and the kernel's compilation started in the background if it is not kept)."""
    if not kept():
        start_compiling()
        return None
    try:
        return CompiledWordPiece(vocab, unk_token, prefix, max_chars)
    except (ImportError, ValueError):
        return None
