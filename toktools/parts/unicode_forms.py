"""NFD, NFKD, NFC and NFKC exactly as ``tokenizers`` 0.23.3 does them, offsets included.

``tokenizers`` uses ``unicode-normalization-alignments``, whose tables are about Unicode 12: older
than any Python's ``unicodedata`` (U+32FF and U+11938 are left alone). The tables are measured from
``tokenizers`` (:mod:`toktools.tables.bert` for canonical decompositions, classes and lowercase;
:mod:`toktools.tables.parts` for the rest). The crate yields ``(char, change)`` pairs; they are reproduced
here step by step, because the offsets depend on them: reordering moves a change along with its
char, and a char that composes with a later mark absorbs the mark *before* it in the offsets.

Most text never reaches that code: a char that decomposes to itself, has class 0 and composes
with nothing before it ("inert") cannot interact with its neighbours, so only the runs of other
chars (plus the inert char before a run that may compose with it) are simulated, and the streams
of recurring runs (fullwidth punctuation…) are cached.
"""

from __future__ import annotations

import re
from functools import lru_cache

from toktools.parts.normalized_string import Change
from toktools.tables import bert as _BT

_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_L_COUNT, _V_COUNT, _T_COUNT = 19, 21, 28
_N_COUNT = _V_COUNT * _T_COUNT
_S_COUNT = _L_COUNT * _N_COUNT


class _Tables:
    def __init__(self) -> None:
        from toktools.tables import parts as PT

        self.ccc = {c: k for lo, hi, k in _BT.CCC for c in range(lo, hi + 1)}
        self.canonical = {chr(c): d for c, d in _BT.NFD.items()}
        self.compat = dict(self.canonical)
        self.compat.update((chr(c), d) for c, d in PT.COMPAT.items())
        self.compose: dict[tuple[str, str], str] = {}
        for triple in PT.COMPOSE.split(","):
            if triple:
                a, b, c = (chr(int(x, 16)) for x in triple.split())
                self.compose[(a, b)] = c
        self.seconds = {b for _a, b in self.compose}
        self.joining: dict[bool, frozenset[str]] = {}  # per compat: may compose with the char before
        self._active: dict[tuple[bool, bool], re.Pattern[str]] = {}

    def decompose(self, ch: str, compat: bool) -> str:
        cp = ord(ch)
        if _S_BASE <= cp < _S_BASE + _S_COUNT:
            s = cp - _S_BASE
            out = chr(_L_BASE + s // _N_COUNT) + chr(_V_BASE + (s % _N_COUNT) // _T_COUNT)
            return out + (chr(_T_BASE + s % _T_COUNT) if s % _T_COUNT else "")
        return (self.compat if compat else self.canonical).get(ch, ch)

    def composed(self, a: str, b: str) -> str | None:
        ca, cb = ord(a), ord(b)
        if _L_BASE <= ca < _L_BASE + _L_COUNT and _V_BASE <= cb < _V_BASE + _V_COUNT:
            return chr(_S_BASE + ((ca - _L_BASE) * _V_COUNT + cb - _V_BASE) * _T_COUNT)
        if _S_BASE <= ca < _S_BASE + _S_COUNT and (ca - _S_BASE) % _T_COUNT == 0 and _T_BASE < cb < _T_BASE + _T_COUNT:
            return chr(ca + cb - _T_BASE)
        return self.compose.get((a, b))

    def active(self, compat: bool, compose: bool) -> re.Pattern[str]:
        """Runs of chars that are not inert; for the composing forms a run that starts with a
        char that may compose with the one before (a second half of a pair, a Hangul vowel or
        trailing consonant, a mark) takes that char along. Built once per form."""
        pattern = self._active.get((compat, compose))
        if pattern is None:
            pattern = self._active[(compat, compose)] = self._active_pattern(compat, compose)
        return pattern

    def _active_pattern(self, compat: bool, compose: bool) -> re.Pattern[str]:
        table = self.compat if compat else self.canonical
        active: set[int] = {ord(c) for c in table} | set(self.ccc)
        active |= set(range(_S_BASE, _S_BASE + _S_COUNT))
        if not compose:
            return re.compile(f"[{_class(active)}]+")
        vowels_trails = set(range(_V_BASE, _V_BASE + _V_COUNT)) | set(range(_T_BASE + 1, _T_BASE + _T_COUNT))
        seconds = {ord(b) for b in self.seconds}
        active |= seconds | vowels_trails
        joining = {
            c
            for c in active
            if (first := ord(self.decompose(chr(c), compat)[0])) in seconds
            or first in self.ccc
            or first in vowels_trails
        }
        self.joining[compat] = frozenset(map(chr, joining))
        return re.compile(f"[{_class(active)}]+")


def _class(cps: set[int]) -> str:
    """Code points → the body of a ``re`` character class."""
    ranges: list[tuple[int, int]] = []
    for c in sorted(cps):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_tables: _Tables | None = None


def tables() -> _Tables:
    global _tables
    if _tables is None:
        _tables = _Tables()
    return _tables


def decompositions(text: str, compat: bool) -> list[Change]:
    """The crate's ``Decompositions`` stream: full decompositions, non-starters stably sorted
    by combining class; the first char of each decomposition has change 0, the rest 1."""
    t = tables()
    ccc = t.ccc
    out: list[Change] = []
    pending: list[tuple[int, str, int]] = []
    for ch in text:
        for j, d in enumerate(t.decompose(ch, compat)):
            cls = ccc.get(ord(d), 0)
            if cls == 0 and pending:
                pending.sort(key=lambda item: item[0])
                out.extend((c, k) for _cls, c, k in pending)
                pending = []
            pending.append((cls, d, 0 if j == 0 else 1))
    pending.sort(key=lambda item: item[0])
    out.extend((c, k) for _cls, c, k in pending)
    return out


def recompositions(stream: list[Change]) -> list[Change]:
    """The crate's ``Recompositions`` over a decomposition stream (a composed char's change is
    ``k + change - 1``; the composed starter is emitted before the marks it skipped)."""
    t = tables()
    ccc = t.ccc
    out: list[Change] = []
    composee: Change | None = None
    last_ccc: int | None = None
    buffer: list[Change] = []
    for ch, change in stream:
        cls = ccc.get(ord(ch), 0)
        if composee is None:
            if cls != 0:
                out.append((ch, change))
            else:
                composee = (ch, change)
            continue
        if last_ccc is not None and last_ccc >= cls:  # blocked
            if cls == 0:
                out.append(composee)
                out.extend(buffer)
                buffer = []
                composee, last_ccc = (ch, change), None
            else:
                buffer.append((ch, change))
                last_ccc = cls
            continue
        r = t.composed(composee[0], ch)
        if r is not None:
            composee = (r, composee[1] + change - 1)
            continue
        if last_ccc is None and cls == 0:
            out.append(composee)
            composee = (ch, change)
            continue
        buffer.append((ch, change))
        last_ccc = cls
    if composee is not None:
        out.append(composee)
    out.extend(buffer)
    return out


@lru_cache(maxsize=4096)
def changes(text: str, compat: bool, compose: bool) -> list[Change]:
    """``(char, change)`` stream of one of the four forms over ``text``."""
    stream = decompositions(text, compat)
    return recompositions(stream) if compose else stream


def active_runs(text: str, compat: bool, compose: bool) -> list[tuple[int, int]]:
    """``(start, end)`` of the stretches that normalisation may change; the rest is inert."""
    t = tables()
    pattern = t.active(compat, compose)
    if not compose:
        return [m.span() for m in pattern.finditer(text)]
    joining = t.joining[compat]
    runs: list[tuple[int, int]] = []
    for m in pattern.finditer(text):
        start, end = m.span()
        if start and text[start] in joining and (not runs or runs[-1][1] < start):
            start -= 1  # the inert char before may compose with this run
        runs.append((start, end))
    return runs
