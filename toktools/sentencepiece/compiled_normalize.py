""":class:`~toktools.sentencepiece.normalize.SpmText`'s fast path compiled (needs numba): texts to
normalised code points for the Viterbi, with no Python string per text.

The fast path of ``SpmText`` is exact for a text in which no rule of two or more characters
matches, and no character starts a user-defined symbol or has an unsafe output (its proof is
in ``SpmText``): each character is replaced by its one-character unit's output, runs of spaces
collapsed, leading ones dropped, the dummy prefix put first, spaces escaped and trailing ``▁``
stripped. This kernel does the same over code points. ``SpmText`` sends every text holding a
character that continues some rule to the slow path; here only a text where such a character
follows one its rule can start with (two neighbours that open a rule, ``SpmText.openings``)
does -- a rule of two or more characters matches at ``i`` only if ``text[i:i + 2]`` opens one,
so e.g. a Cyrillic letter with a combining accent that no rule composes stays fast. Other
texts are flagged and go through ``SpmText`` itself. Each character's output is looked up once, in
``SpmText``'s own table (so both paths read the charsmap the same way), on first sight.
``tests/test_sentencepiece_normalize.py`` checks the two give the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from toktools.runtime.numba_cache import cached_njit

#: ``mapped`` values other than a code point
DELETED, SLOW, UNSEEN, ASKED = -1, -2, -3, -4
#: ``mapped[c] <= MULTI`` -- the output of ``c`` is ``multi[MULTI - mapped[c]]``
MULTI = -10


@cached_njit()
def _unseen(codes, mapped, found):
    """The code points whose output is not looked up yet, each once, into ``found``; returns
    how many."""
    count = 0
    for k in range(codes.size):
        c = codes[k]
        if mapped[c] == UNSEEN:
            mapped[c] = ASKED
            found[count] = c
            count += 1
    return count


@cached_njit()
def _output_bound(codes, mapped, multi_offsets):
    """How many characters the outputs of ``codes`` hold at most (one for a character the fast
    path cannot take: its text is dropped)."""
    total = 0
    for k in range(codes.size):
        value = mapped[codes[k]]
        if value <= MULTI:
            total += multi_offsets[MULTI - value + 1] - multi_offsets[MULTI - value]
        else:
            total += 1
    return total


@cached_njit()
def _normalize(
    codes,
    offsets,
    mapped,
    continues,
    openings,
    multi_codes,
    multi_offsets,
    remove_extra,
    dummy_prefix,
    space,
    out,
    out_offsets,
    slow,
    align,
):
    """Each text ``codes[offsets[t]:offsets[t + 1]]`` normalised into ``out`` from
    ``out_offsets[t]``; ``slow[t]`` set (and nothing written) for a text with a character the
    fast path cannot take. ``out`` has room for every character's output plus a prefix
    per text. ``align`` (when not empty) gets, per output character, the index in its text of
    the character it came from, as ``spm_normalize`` gives it: the dummy prefix that of the
    first character whose output is not one space, the space of a run that of its first."""
    aligned = align.size > 0
    written = 0
    for t in range(offsets.size - 1):
        out_offsets[t] = written
        begin = written
        first = offsets[t]
        prefix_set = not dummy_prefix
        if dummy_prefix:
            out[written] = space
            if aligned:
                align[written] = 0
            written += 1
        body = written
        pending = False
        pending_at = 0
        bad = False
        for k in range(first, offsets[t + 1]):
            code = codes[k]
            if continues[code] and k > first:
                key = np.int64(codes[k - 1]) * 0x110000 + code
                at = np.searchsorted(openings, key)
                if at < openings.size and openings[at] == key:
                    bad = True
                    break
            value = mapped[code]
            if not prefix_set and (value != 32 or not remove_extra):
                if aligned:
                    align[begin] = k - first
                prefix_set = True
            if value == DELETED:
                continue
            if value == SLOW or value == ASKED or value == UNSEEN:
                bad = True
                break
            if value >= 0:
                lo = 0
                hi = 1
            else:
                lo = multi_offsets[MULTI - value]
                hi = multi_offsets[MULTI - value + 1]
            for j in range(lo, hi):
                c = value if value >= 0 else multi_codes[j]
                if c == 32:
                    if remove_extra:
                        if written > body and not pending:
                            pending = True
                            pending_at = k - first
                        continue
                    c = space
                elif pending:
                    out[written] = space
                    if aligned:
                        align[written] = pending_at
                    written += 1
                    pending = False
                out[written] = c
                if aligned:
                    align[written] = k - first
                written += 1
        if bad:
            slow[t] = True
            written = begin
            continue
        if remove_extra:
            if written == body:
                written = begin  # nothing left: no dummy prefix either
            else:
                while written > begin and out[written - 1] == space:
                    written -= 1
        elif offsets[t + 1] == offsets[t]:
            written = begin
    out_offsets[offsets.size - 1] = written
    return written


class CompiledSpmText:
    """The fast path of one :class:`~toktools.sentencepiece.normalize.SpmText`, over code points."""

    def __init__(self, text: Any) -> None:
        self.text = text
        self.mapped = np.full(0x110000, UNSEEN, dtype=np.int32)
        self.mapped[0xD800:0xE000] = SLOW  # lone surrogates: the slow path says what they are
        self.multi: list[np.ndarray] = []
        self.multi_codes = np.zeros(1, dtype=np.int32)
        self.multi_offsets = np.zeros(1, dtype=np.int64)
        self.space = ord(text.space)
        self.continues = np.zeros(0x110000, dtype=np.uint8)
        keys = sorted(ord(first) * 0x110000 + ord(second) for first, second in text.openings)
        self.openings = np.array(keys, dtype=np.int64)
        for _, second in text.openings:
            self.continues[ord(second)] = 1

    def _look_up(self, codes: np.ndarray) -> None:
        """Fill :attr:`mapped` for the code points of ``codes`` met for the first time."""
        found = np.empty(min(codes.size, 0x110000), dtype=np.int32)
        count = _unseen(codes, self.mapped, found)
        if not count:
            return
        text = self.text
        table = text.table
        for code in found[:count].tolist():
            ch = chr(code)
            value: Any = table[code] if text.charsmap is not None else code
            if text.slow_for(ch) or (text.charsmap is not None and code in table.unsafe):
                self.mapped[code] = SLOW
            elif isinstance(value, int):
                self.mapped[code] = value
            elif len(value) == 0:
                self.mapped[code] = DELETED
            elif len(value) == 1:
                self.mapped[code] = ord(value)
            else:
                self.mapped[code] = MULTI - len(self.multi)
                self.multi.append(np.frombuffer(value.encode("utf-32-le"), dtype=np.int32))
                self.multi_codes = np.concatenate([*self.multi])
                self.multi_offsets = np.zeros(len(self.multi) + 1, dtype=np.int64)
                np.cumsum([m.size for m in self.multi], out=self.multi_offsets[1:])

    def aligned(self, text: str) -> tuple[str, list[int]] | None:
        """``spm_normalize(text, ...)``: the normalised text and the index in ``text`` each of
        its characters came from, or None when ``text`` needs the slow path."""
        from toktools.models.unigram.compiled_viterbi import code_points

        out, out_offsets, slow, align = self._run(*code_points([text]), aligned=True)
        if slow[0]:
            return None
        size = int(out_offsets[1])
        return out[:size].tobytes().decode("utf-32-le", "surrogatepass"), align[:size].tolist()

    def __call__(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The normalised code points of every text and where each starts (as
        :func:`~toktools.models.unigram.compiled_index.CompiledIndex.paths_of_codes` takes
        them); the texts the fast path cannot take go through ``SpmText``."""
        from toktools.models.unigram.compiled_viterbi import code_points

        out, out_offsets, slow, _ = self._run(*code_points(texts), aligned=False)
        if not slow.any():
            return out[: out_offsets[-1]], out_offsets
        parts: list[np.ndarray] = []
        sizes: list[int] = []
        for t, is_slow in enumerate(slow.tolist()):
            if is_slow:
                part = np.frombuffer(self.text(texts[t]).encode("utf-32-le", "surrogatepass"), dtype=np.int32)
            else:
                part = out[out_offsets[t] : out_offsets[t + 1]]
            parts.append(part)
            sizes.append(part.size)
        joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return joined, offsets

    def _run(
        self, codes: np.ndarray, offsets: np.ndarray, *, aligned: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The kernel over code points: the output, where each text's starts, the slow flags
        and (``aligned``) the alignment."""
        self._look_up(codes)
        text = self.text
        texts = offsets.size - 1
        out = np.empty(_output_bound(codes, self.mapped, self.multi_offsets) + texts, dtype=np.int32)
        out_offsets = np.zeros(texts + 1, dtype=np.int64)
        slow = np.zeros(texts, dtype=np.bool_)
        align = np.empty(out.size if aligned else 0, dtype=np.int64)
        _normalize(
            codes,
            offsets,
            self.mapped,
            self.continues,
            self.openings,
            self.multi_codes,
            self.multi_offsets,
            text.remove_extra,
            text.add_dummy_prefix,
            self.space,
            out,
            out_offsets,
            slow,
            align,
        )
        return out, out_offsets, slow, align
