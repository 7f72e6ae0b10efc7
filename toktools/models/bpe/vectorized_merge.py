"""Merging many words at once with numpy: the cold misses of the reference engine's word cache.

A word merged alone in Python costs ~13 µs (the loop of :func:`toktools.models.bpe.merges.merge_symbols`);
a corpus batch holds thousands of words not seen before. Here all of them are merged together:
one numpy pass per merge step over the symbols of every word still merging.

Why one step over all words gives ``tokenizers``' ids. ``Word::merge_all`` pops a min-heap of
``(rank, position)`` entries and skips entries whose pair has changed since (the new id
differs). When no two merges make the same token (``E2``: checked in :func:`plan`), a popped
entry that is not skipped names the pair now at its position, with that pair's rank, and every
pair of adjacent symbols has an entry; so each step merges the current pair of lowest rank,
leftmost on ties. That depends only on the current symbols, which is what lets a step run over
all words at once, and lets any word stop here and finish in Python from where it is.

When, besides, every merge's inputs are made by earlier merges (``monotone``: true of trained
vocabularies, checked too), a merge only creates pairs of higher rank than its own, so the
steps after it merge the other occurrences of the same pair, left to right (in a run
``a a a`` of a pair ``(a, a)``: the first, third...). One numpy step then does them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from toktools.models.bpe.pair_table import PairTable

Pair = tuple[int, int]
_NONE = np.iinfo(np.int64).max


@dataclass
class VectorPlan:
    """The merges as a :class:`PairTable` of ``left << 32 | right`` keys, with their ranks and
    new ids."""

    table: PairTable
    ranks: np.ndarray
    new_ids: np.ndarray
    byte_ids: np.ndarray
    monotone: bool


def plan(byte_ids: list[int], merge_map: Mapping[Pair, tuple[int, int]]) -> VectorPlan | None:
    """The plan for these merges, or ``None`` when a step over all words is not exact (two merges
    make one token, or an id does not fit in 31 bits)."""
    n = len(merge_map)
    if n == 0:
        return None
    pairs = np.array(list(merge_map.keys()), dtype=np.int64).reshape(n, 2)
    values = np.array(list(merge_map.values()), dtype=np.int64).reshape(n, 2)
    if pairs.min() < 0 or max(int(pairs.max()), int(values[:, 1].max()), max(byte_ids)) >= 1 << 31:
        return None
    ranks, new_ids = values[:, 0].copy(), values[:, 1].copy()
    if len(np.unique(new_ids)) != n:
        return None  # not E2: a stale heap entry could then name another pair's token
    # monotone: the rank at which each input is made (-1: a byte, never made) is below the merge's
    made_at = np.full(int(max(new_ids.max(), pairs.max())) + 1, -1, dtype=np.int64)
    made_at[new_ids] = ranks
    monotone = bool(np.all((made_at[pairs[:, 0]] < ranks) & (made_at[pairs[:, 1]] < ranks)))
    return VectorPlan(
        PairTable((pairs[:, 0] << 32) | pairs[:, 1]), ranks, new_ids, np.array(byte_ids, dtype=np.int64), monotone
    )


class VectorMerger:
    """Words → their merged id tuples, all words a step at a time.

    Words still merging when few symbols are left (long words need many steps, and a step has a
    fixed cost) are finished one by one by ``finish`` (the Python merge), from where they are."""

    #: Below this many symbols still merging, the rest is left to ``finish``.
    FINISH_BELOW = 2048

    def __init__(self, vector_plan: VectorPlan, finish: Callable[[list[int]], list[int]]) -> None:
        self.plan = vector_plan
        self.finish = finish

    def _pairs(self, symbols: np.ndarray, last: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rank and new id of the pair starting at each position ``at`` (none after a word's
        last symbol)."""
        p = self.plan
        following = np.minimum(at + 1, len(symbols) - 1)
        found = p.table.find((symbols[at] << 32) | symbols[following])
        found[last[at]] = -1
        hit = found >= 0
        return np.where(hit, p.ranks[found], _NONE), np.where(hit, p.new_ids[found], -1)

    def __call__(self, words: list[str]) -> list[tuple[int, ...]]:
        p = self.plan
        encoded = [word.encode("utf-8") for word in words]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        out: list[tuple[int, ...]] = [()] * len(words)
        which = np.flatnonzero(lengths)
        lengths = lengths[which]
        symbols = p.byte_ids[np.frombuffer(b"".join(encoded), dtype=np.uint8)]
        last = np.zeros(len(symbols), dtype=bool)
        last[np.cumsum(lengths) - 1] = True
        rank, new = self._pairs(symbols, last, np.arange(len(symbols)))
        while len(which):
            n = len(symbols)
            starts = np.zeros(len(lengths), dtype=np.int64)
            np.cumsum(lengths[:-1], out=starts[1:])
            if n < self.FINISH_BELOW:
                flat, bounds = symbols.tolist(), [*starts.tolist(), n]
                for w, a, b in zip(which.tolist(), bounds, bounds[1:]):
                    out[w] = tuple(self.finish(flat[a:b]))
                break
            lowest = np.minimum.reduceat(rank, starts)
            done = lowest == _NONE
            if done.any():  # words with nothing left to merge: out, and off the arrays
                finished = np.repeat(done, lengths)
                flat, ends = symbols[finished].tolist(), np.cumsum(lengths[done]).tolist()
                for w, a, b in zip(which[done].tolist(), [0, *ends], ends):
                    out[w] = tuple(flat[a:b])
                going, staying = ~done, ~finished
                which, lengths, lowest = which[going], lengths[going], lowest[going]
                symbols, last, rank, new = symbols[staying], last[staying], rank[staying], new[staying]
                if not len(which):
                    break
                starts = np.zeros(len(lengths), dtype=np.int64)
                np.cumsum(lengths[:-1], out=starts[1:])
            chosen = np.flatnonzero(rank == np.repeat(lowest, lengths))
            if p.monotone:
                # every occurrence of the word's best pair, but in a run of them (a a a) only the
                # 1st, 3rd...: a run's positions are consecutive, so keep even offsets in it
                run_start = np.ones(len(chosen), dtype=bool)
                run_start[1:] = np.diff(chosen) != 1
                first = np.maximum.accumulate(np.where(run_start, np.arange(len(chosen)), 0))
                chosen = chosen[(np.arange(len(chosen)) - first) % 2 == 0]
            else:
                # only the leftmost in each word
                word_of = np.repeat(np.arange(len(lengths)), lengths)[chosen]
                chosen = chosen[np.r_[True, word_of[1:] != word_of[:-1]]]
            symbols[chosen] = new[chosen]
            last[chosen] = last[chosen + 1]
            removed = np.zeros(len(symbols), dtype=bool)
            removed[chosen + 1] = True
            lengths = lengths - np.add.reduceat(removed.astype(np.int64), starts)
            alive = ~removed
            symbols, last, rank, new = symbols[alive], last[alive], rank[alive], new[alive]
            # only the pairs around the merged symbols changed
            merged_at = chosen - np.arange(len(chosen))
            refresh = np.concatenate((merged_at, merged_at[merged_at > 0] - 1))
            rank[refresh], new[refresh] = self._pairs(symbols, last, refresh)
        return out
