"""The compiled WordPiece of a batch (:mod:`toktools.models.wordpiece.kernel`) as the lazy
WordPiece batches call it, without importing numba: the kernel comes from
:func:`toktools.runtime.machine_code.kernel` (machine code kept in the user cache).

One call, without the GIL (ctypes), gives every token of a batch's normalised texts (their
words, each split by greedy longest match) with its span: no string per word, no Python per
word, where the Python path makes a string per word, looks each up and splits each new one.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from functools import partial
from itertools import accumulate, chain
from typing import Any

from toktools.models.bpe.compiled_merge import address, zeros

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
#: The kernel that fills the vocabulary's hash table.
_TABLE_KERNEL = (
    "toktools.models.wordpiece.kernel",
    "wordpiece_table_at",
    ("int64", "int64", "int64*", "uint32*", "int64*", "uint64", "int64", "uint64*", "int64*", "uint64"),
)
#: The kernel that maps tokens' spans back to the original texts.
_OFFSETS_KERNEL = (
    "toktools.models.wordpiece.offsets_kernel",
    "offsets_at",
    (
        "int64",
        "int64",
        "uint32*",
        "uint8*",
        "int64",
        "int64*",
        "int64*",
        "int64",
        "int64*",
        "int64*",
        "int64",
        "int64*",
        "int64*",
        "int64",
        "int64*",
    ),
)
#: Unknown code points listed per kernel call (it is called again while the list fills up).
UNKNOWN_ROOM = 4096
LIST_UNKNOWN, SPANS, SPANS_UNCHANGED = 0, 1, 2
#: A code point whose translation's length is not known yet, in :func:`length_table`'s tables.
UNKNOWN = 255
#: The polynomial hash's base (odd, so no code point's weight vanishes modulo 2**64).
BASE = 0x100000001B3
#: A word longer than this goes the Python way (the kernel's scratch is sized by it).
MAX_CHARS = 10_000


def kept() -> bool:
    """The compiled WordPiece loads cheaply here (:func:`toktools.runtime.machine_code.ready`)."""
    from toktools.runtime.machine_code import ready

    return ready(*_KERNEL) and ready(*_TABLE_KERNEL)


def start_compiling() -> None:
    """Have the kernels compiled into the user cache in a detached process, for later runs."""
    from toktools.runtime.background_compile import start

    start(*_KERNEL)
    start(*_TABLE_KERNEL)
    start(*_OFFSETS_KERNEL)


class Tokens:
    """A batch's tokens as :meth:`CompiledWordPiece.tokens` gives them (``array.array``
    buffers): ids, spans in the joined text, their number, and each text's first token."""

    def __init__(self, ids: array, starts: array, ends: array, count: int, text_firsts: list[int]) -> None:  # type: ignore[type-arg]
        self.ids, self.starts, self.ends, self.count, self.text_firsts = ids, starts, ends, count, text_firsts


class CompiledWordPiece:
    """One WordPiece model's vocabulary as the kernel's hash table, built without NumPy. Raises
    ``ImportError`` when there is no compiled kernel, ``ValueError`` when the model does not fit
    it (no unknown token in the vocabulary, two entries with one key, a huge
    ``max_input_chars_per_word``)."""

    def __init__(self, vocab: dict[str, int], unk_token: str, prefix: str, max_chars: int) -> None:
        if unk_token not in vocab or max_chars > MAX_CHARS or not prefix:
            raise ValueError("this WordPiece model goes the Python way")
        from toktools.runtime.machine_code import kernel

        run, build = kernel(*_KERNEL), kernel(*_TABLE_KERNEL)
        if run is None or build is None:
            raise ImportError("the compiled WordPiece needs numba (extra 'fast')")
        self._kernel = run
        tokens = list(vocab)
        continuing = [token[len(prefix) :] for token in tokens if token.startswith(prefix)]
        bodies = tokens + continuing
        self.entry_ids = array("q", chain(vocab.values(), [vocab[prefix + body] for body in continuing]))
        self.entry_points = "".join(bodies).encode("utf-32-le", "surrogatepass")
        self.entry_starts = array("q", chain((0,), accumulate(map(len, bodies))))
        self.entry_flags = array("q", [0]) * len(tokens) + array("q", [1]) * len(continuing)
        self.n_entries = len(bodies)
        bits = max(4, (4 * len(bodies)).bit_length())  # load factor at most 1/4
        self.table_size, self.shift = 1 << bits, 64 - bits
        self.table_keys, self.table_index = zeros("Q", self.table_size), zeros("q", self.table_size)
        made = build(
            self.n_entries,
            len(self.entry_points) // 4,
            address(self.entry_starts),
            address(self.entry_points),
            address(self.entry_flags),
            BASE,
            self.table_size,
            address(self.table_keys),
            address(self.table_index),
            self.shift,
        )
        if made != 0:
            raise ValueError("two vocabulary entries share a key: the Python way")
        self.longest = max(1, max(map(len, bodies), default=1))
        self.unk_id = vocab[unk_token]
        self.max_chars = max_chars

    def tokens(self, points: bytes, classes: array, text_starts: array) -> Tokens:  # type: ignore[type-arg]
        """Every token of the words in ``points`` (UTF-32-LE code points of the joined texts; text
        ``t`` starts at ``text_starts[t]``), with its span in them, and each text's first token.
        Needs no NumPy; runs without the GIL (several calls at once too: each has its own scratch)."""
        n_points = len(points) // 4
        ids, starts, ends = zeros("q", n_points), zeros("q", n_points), zeros("q", n_points)
        hashes, powers = zeros("Q", self.max_chars + 1), zeros("Q", self.max_chars + 1)
        count = self._kernel(
            n_points,
            address(points),
            address(classes),
            self.table_size,
            address(self.table_keys),
            address(self.table_index),
            self.shift,
            self.n_entries,
            len(self.entry_points) // 4,
            address(self.entry_starts),
            address(self.entry_points),
            address(self.entry_flags),
            address(self.entry_ids),
            BASE,
            self.unk_id,
            self.max_chars,
            self.longest,
            address(hashes),
            address(powers),
            address(ids),
            address(starts),
            address(ends),
        )
        firsts = [bisect_left(starts, start, 0, count) for start in text_starts]
        return Tokens(ids, starts, ends, count, firsts)


def length_table() -> array:  # type: ignore[type-arg]
    """A table of every code point's translation length, all :data:`UNKNOWN` (one per normaliser)."""
    return array("B", [UNKNOWN]) * 0x110000


class CompiledOffsets:
    """Tokens' spans in a batch's normalised texts → their offsets in the original texts,
    without NumPy. Raises ``ImportError`` when there is no compiled kernel."""

    def __init__(self) -> None:
        from toktools.runtime.machine_code import kernel

        run = kernel(*_OFFSETS_KERNEL)
        if run is None:
            raise ImportError("the compiled offsets need numba (extra 'fast')")
        self._kernel = run

    def offsets(
        self,
        texts: list[str],
        tokens: Tokens,
        bounds: list[int],
        n_normalized: int,
        lengths: array | None,  # type: ignore[type-arg]
        length_of: Any,
    ) -> tuple[array, array] | None:  # type: ignore[type-arg]
        """``(starts, ends)`` of ``tokens`` (spans in the texts normalised and joined by spaces,
        ``n_normalized`` characters) in the original ``texts``, text ``t``'s being
        ``bounds[t]:bounds[t + 1]``. ``lengths`` is the normaliser's :func:`length_table`
        (filled here through ``length_of(code point)`` as characters are met), or None without a
        normaliser. None where a translation is too long for the table."""
        points = " ".join(texts).encode("utf-32-le")
        n_tokens, n_texts = tokens.count, len(texts)
        text_starts = array("q", accumulate((len(text) + 1 for text in texts), initial=0))[:n_texts]
        bound_array = array("q", bounds)
        table = lengths if lengths is not None else zeros("B", 1)
        starts, ends = zeros("q", n_tokens), zeros("q", n_tokens)
        call = partial(self._call, points, table, tokens, bound_array, text_starts, n_normalized, starts, ends)
        if lengths is not None:
            unknown = zeros("q", UNKNOWN_ROOM)
            while True:
                found = call(LIST_UNKNOWN, unknown)
                too_long = False
                for code in unknown[:found].tolist():
                    length = length_of(code)
                    too_long = too_long or length >= UNKNOWN - 1
                    lengths[code] = length if length < UNKNOWN - 1 else UNKNOWN  # (asked again next time)
                if too_long:
                    return None
                if found < UNKNOWN_ROOM:
                    break
        if call(SPANS if lengths is not None else SPANS_UNCHANGED, unknown if lengths is not None else starts) < 0:
            raise AssertionError("normalised text and its alignment disagree")  # per character: cannot happen
        return starts[:n_tokens], ends[:n_tokens]

    def _call(
        self,
        points: bytes,
        table: Any,
        tokens: Tokens,
        bounds: Any,
        text_starts: Any,
        n_normalized: int,
        starts: Any,
        ends: Any,
        mode: int,
        unknown: Any,
    ) -> int:
        return int(
            self._kernel(
                mode,
                len(points) // 4,
                address(points),
                address(table),
                tokens.count,
                address(tokens.starts),
                address(tokens.ends),
                len(text_starts),
                address(bounds),
                address(text_starts),
                n_normalized,
                address(starts),
                address(ends),
                len(unknown),
                address(unknown),
            )
        )


def load_offsets() -> CompiledOffsets | None:
    """The compiled offsets if their machine code is kept here; else None (NumPy computes them)
    and their compilation started in the background."""
    from toktools.runtime.machine_code import ready

    if not ready(*_OFFSETS_KERNEL):
        start_compiling()
        return None
    try:
        return CompiledOffsets()
    except ImportError:
        return None


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
