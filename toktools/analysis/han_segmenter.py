"""jieba's dictionary words of many runs of Chinese characters in one compiled call, without
loading jieba.

``compare --corpus`` cuts every Chinese run of a corpus into jieba's dictionary words
(:mod:`toktools.analysis.words`). Done run by run in Python
(:meth:`toktools.pretraining.masking.ChineseWords.dictionary_words`) that costs ~1.3 s of CPU a
3.3 MB Chinese corpus, and loading jieba's dictionary ~0.7 s more: more than encoding the corpus.
Here the dictionary is a prefix trie in three flat arrays (:class:`DictionaryTable`), built once
from jieba's own dictionary file with jieba's own parser (``gen_pfdict``) and kept in the user
cache (:mod:`toktools.io.user_cache`, named by the sha256 of the dictionary file), and the route
of every run of a chunk is found by the compiled kernel :mod:`toktools.analysis.han_kernels`
(machine code from the user cache, :mod:`toktools.runtime.machine_code`; numba only to compile
it once). Where there is no kernel (numba missing), :func:`segmenter` gives None and the caller
cuts the runs with the Python loop: the same words (``tests/test_han_segmenter.py`` checks both
against ``jieba.lcut(run, HMM=False)``).
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["DictionaryTable", "HanSegmenter", "build_table", "dictionary_path", "segmenter"]

#: The kernel: module, function, and the types of its parameters (see ``segment_runs_at``).
_KERNEL = (
    "toktools.analysis.han_kernels",
    "segment_runs_at",
    (
        "int64",
        "uint32*",
        "int64",
        "int64*",
        "int64*",
        "int64",
        "uint32*",
        "uint32*",
        "float64*",
        "float64*",
        "int64",
        "float64*",
        "int64*",
        "uint8*",
    ),
)


@dataclass
class DictionaryTable:
    """jieba's prefix dictionary as a trie: node 0 is the empty prefix, the children of node
    ``k`` are nodes ``first[k]`` to ``first[k + 1] - 1`` sorted by ``chars`` (the character that
    leads to each), ``scores`` a node's ``log(freq) - log(total)`` (NaN for a prefix that is no
    word), ``unknown`` the score of a character no word starts with (``-log(total)``)."""

    first: np.ndarray
    chars: np.ndarray
    scores: np.ndarray
    unknown: float


def build_table(frequencies: dict[str, int], total: int) -> DictionaryTable:
    """The trie of jieba's ``FREQ`` (every word and every prefix of one, prefixes at 0) and
    ``total``, nodes numbered level by level so that each node's children are consecutive.
    The scores are computed as :meth:`~toktools.pretraining.masking.ChineseWords._route` does."""
    from math import log

    log_total = log(total)
    node_of = {"": 0}
    chars = [0]
    scores = [float("nan")]
    parents = [-1]
    by_length: dict[int, list[str]] = {}
    for word in frequencies:
        by_length.setdefault(len(word), []).append(word)
    for length in sorted(by_length):
        level = sorted((node_of[w[:-1]], ord(w[-1]), w) for w in by_length[length])
        for parent, char, word in level:
            node_of[word] = len(chars)
            chars.append(char)
            count = frequencies[word]
            scores.append(log(count) - log_total if count else float("nan"))
            parents.append(parent)
    below = np.array(parents[1:], dtype=np.int64)  # non-decreasing: level by level, parents in order
    first = 1 + np.searchsorted(below, np.arange(len(chars) + 1), side="left")
    return DictionaryTable(
        first=first.astype(np.uint32),
        chars=np.array(chars, dtype=np.uint32),
        scores=np.array(scores, dtype=np.float64),
        unknown=-log_total,
    )


def dictionary_path() -> str | None:
    """jieba's shipped dictionary (the one ``jieba.Tokenizer()`` loads), found without importing
    jieba; None when jieba is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("jieba")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "dict.txt")
    return path if os.path.isfile(path) else None


def _table_of(data: bytes) -> DictionaryTable:
    """The table of a dictionary file's bytes, parsed by jieba itself."""
    import jieba

    frequencies, total = jieba.Tokenizer().gen_pfdict(io.BytesIO(data))
    return build_table(frequencies, total)


def _packed(table: DictionaryTable) -> bytes:
    out = io.BytesIO()
    np.savez(out, first=table.first, chars=table.chars, scores=table.scores, unknown=np.array([table.unknown]))
    return out.getvalue()


def _unpacked(payload: bytes) -> DictionaryTable | None:
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
            table = DictionaryTable(
                first=arrays["first"],
                chars=arrays["chars"],
                scores=arrays["scores"],
                unknown=float(arrays["unknown"][0]),
            )
    except (OSError, ValueError, KeyError, IndexError):
        return None
    n = len(table.chars)
    if len(table.first) != n + 1 or len(table.scores) != n or (n and int(table.first[-1]) != n):
        return None
    return table


def load_table(path: str) -> DictionaryTable:
    """The table of the jieba dictionary at ``path``, from the user cache (named by the file's
    sha256, keyed by this module's source and jieba's version), built and stored on a miss."""
    from toktools.io.user_cache import entry_path, read_blob, write_blob

    with open(path, "rb") as handle:
        data = handle.read()
    digest = hashlib.sha256(data).hexdigest()
    entry = entry_path("jieba-table", digest, ".npz", modules=(__name__,), libraries=("jieba",))
    payload = read_blob(entry)
    table = None if payload is None else _unpacked(payload)
    if table is None:
        table = _table_of(data)
        write_blob(entry, _packed(table))
    return table


class HanSegmenter:
    """jieba's dictionary words (``HMM=False``) of many runs at once, through the compiled kernel."""

    def __init__(self, table: DictionaryTable, kernel: Callable[..., int]) -> None:
        self.table = table
        self._kernel = kernel
        self._unknown = np.array([table.unknown], dtype=np.float64)

    def mark_words(self, points: Any, run_starts: Any, run_ends: Any, word_start: Any) -> int:
        """Sets ``word_start[i] = 1`` (a ``uint8`` array as long as ``points``) where one of
        jieba's words of a run starts, run ``r`` being ``points[run_starts[r]:run_ends[r]]``
        (``uint32`` code points); returns how many words there are."""
        points = np.ascontiguousarray(points, dtype=np.uint32)
        run_starts = np.ascontiguousarray(run_starts, dtype=np.int64)
        run_ends = np.ascontiguousarray(run_ends, dtype=np.int64)
        if not len(run_starts):
            return 0
        if not (word_start.flags.c_contiguous and word_start.dtype == np.uint8 and len(word_start) == len(points)):
            raise ValueError("word_start must be a contiguous uint8 array as long as points")
        if (run_starts < 0).any() or (run_ends > len(points)).any() or (run_ends <= run_starts).any():
            raise ValueError("runs must be non-empty and inside points")
        longest = int((run_ends - run_starts).max())
        best = np.empty(longest + 1, dtype=np.float64)
        following = np.empty(longest + 1, dtype=np.int64)
        table = self.table
        return self._kernel(
            len(points),
            points.ctypes.data,
            len(run_starts),
            run_starts.ctypes.data,
            run_ends.ctypes.data,
            len(table.chars),
            table.first.ctypes.data,
            table.chars.ctypes.data,
            table.scores.ctypes.data,
            self._unknown.ctypes.data,
            longest,
            best.ctypes.data,
            following.ctypes.data,
            word_start.ctypes.data,
        )

    def words(self, run: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` spans of one run's words (for tests and single runs)."""
        points = np.frombuffer(run.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        marks = np.zeros(len(points), dtype=np.uint8)
        self.mark_words(points, np.array([0]), np.array([len(points)]), marks)
        starts = np.flatnonzero(marks).tolist()
        return list(zip(starts, starts[1:] + [len(points)]))


@lru_cache(maxsize=1)
def segmenter() -> HanSegmenter | None:
    """The compiled segmenter of jieba's shipped dictionary, loaded once per process; None when
    jieba or the compiled kernel (numba) is missing: the caller then uses the Python loop."""
    path = dictionary_path()
    if path is None:
        return None
    from toktools.runtime.machine_code import kernel

    compiled = kernel(*_KERNEL)
    if compiled is None:
        return None
    try:
        table = load_table(path)
    except Exception:  # noqa: BLE001 - a jieba that cannot parse its own file: the Python loop says why
        return None
    return HanSegmenter(table, compiled)
