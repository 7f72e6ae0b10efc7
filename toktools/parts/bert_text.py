"""BERT normalizer and pre-tokenizer, identical to HuggingFace ``tokenizers`` on every code point.

``tokenizers`` (``BertNormalizer`` + ``BertPreTokenizer``) mixes Unicode tables of several ages,
so nothing here asks Python's ``unicodedata`` or ``\\p{..}`` regex properties: all per-code-point
facts come from :mod:`toktools.tables.bert` (generated from ``tokenizers`` by ``scripts/gen_bert_tables.py``).
See ``../shared/spec/wordpiece.md`` §2-§3.

How it works:

* Every normalizer step is per character, so for each configuration the four steps (clean_text →
  handle_chinese_chars → strip_accents → lowercase) are folded into one ``str.translate`` table.
* The one contextual part is NFD's canonical reordering (spec §2.4). Once strip_accents has dropped
  the nonspacing marks it only matters when a surviving char has combining class > 0 (viramas,
  U+1D165, some marks HF's Mn table does not know, …). Text holding such a char is cut into runs
  that reordering cannot cross, and only those runs go through an exact step-by-step emulation.
* Offsets: ``tokenizers`` gives every normalized char the alignment of one original char (chars
  it inserts share the alignment of the char consumed just before them), so one original index
  per normalized char describes it completely.
* The pre-tokenizer is one compiled regex, ``[P]|[^P W]+``, with explicit character classes.
  For word counting, punctuation padding is folded into the translate table and ``str.split``
  does the rest, when that is provably the same split (see ``_Tables.split_is_exact``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache

from toktools.tables import bert as _T

__all__ = [
    "BertNormalizerConfig",
    "DEFAULT_CONFIG",
    "PRE_TOKENIZER_RE",
    "iter_words",
    "normalize",
    "normalize_with_offsets",
    "original_span",
    "pre_tokenize",
    "words_with_offsets",
]


@dataclass(frozen=True)
class BertNormalizerConfig:
    """Options of ``tokenizers.normalizers.BertNormalizer``, with the same defaults."""

    clean_text: bool = True
    handle_chinese_chars: bool = True
    #: ``None`` means "same as ``lowercase``", as in ``tokenizers``.
    strip_accents: bool | None = None
    lowercase: bool = True

    @property
    def effective_strip_accents(self) -> bool:
        return self.lowercase if self.strip_accents is None else self.strip_accents


DEFAULT_CONFIG = BertNormalizerConfig()

Ranges = Sequence[tuple[int, int]]


# --------------------------------------------------------------------------- per-code-point facts


class _RangeSet:
    """Membership in sorted inclusive ranges, by binary search (no big expanded sets)."""

    __slots__ = ("_starts", "_ends")

    def __init__(self, ranges: Ranges) -> None:
        self._starts = [a for a, _ in ranges]
        self._ends = [b for _, b in ranges]

    def __contains__(self, cp: int) -> bool:
        i = bisect_right(self._starts, cp) - 1
        return i >= 0 and cp <= self._ends[i]


def _merge_ranges(ranges: Ranges) -> list[tuple[int, int]]:
    """Sorted inclusive ranges with overlapping and touching ones joined."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


def _char_class(ranges: Ranges) -> str:
    """A regex character-class body, every char escaped as \\UXXXXXXXX (valid in re and regex)."""
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in _merge_ranges(ranges))


def _bmp(ranges: Ranges) -> Iterator[int]:
    for a, b in ranges:
        yield from range(a, min(b, 0xFFFF) + 1)


_REMOVED = _RangeSet(_T.CLEAN_REMOVED)
_TO_SPACE = _RangeSet(_T.CLEAN_TO_SPACE)
_CHINESE = _RangeSet(_T.CHINESE)
_PUNCT = _RangeSet(_T.PRETOKENIZER_PUNCTUATION)
_HF_SPACE = frozenset(c for a, b in _T.PRETOKENIZER_WHITESPACE for c in range(a, b + 1))
_MN = frozenset(c for a, b in _T.NONSPACING_MARKS for c in range(a, b + 1))
_CCC = {c: k for a, b, k in _T.CCC for c in range(a, b + 1)}
#: Chars with combining class > 0 that strip_accents keeps: the only ones reordering can move.
_SURVIVING_MARKS = frozenset(c for c in _CCC if c not in _MN)
_HANGUL_FIRST, _HANGUL_LAST = _T.HANGUL_SYLLABLES


def _nfd(ch: str) -> str:
    """HF's canonical decomposition of one char (already in canonical order)."""
    cp = ord(ch)
    if _HANGUL_FIRST <= cp <= _HANGUL_LAST:
        s = cp - _HANGUL_FIRST
        trail = 0x11A7 + s % 28
        return chr(0x1100 + s // 588) + chr(0x1161 + (s % 588) // 28) + (chr(trail) if trail != 0x11A7 else "")
    return _T.NFD.get(cp, ch)


def _lower(ch: str) -> str:
    return _T.LOWERCASE.get(ord(ch), ch)


def _pad_punctuation(s: str) -> str:
    return "".join(f" {x} " if ord(x) in _PUNCT else x for x in s)


@lru_cache(maxsize=1)
def _python_whitespace() -> frozenset[int]:
    """What ``str.split()`` splits on in the running Python: ``str.isspace``, which is what
    ``re``'s ``\\s`` tests on a ``str`` (both are CPython's ``Py_UNICODE_ISSPACE``), run over every
    code point at once (a tenth of the time of calling ``isspace`` 1.1 million times)."""
    from array import array

    every = "".join(
        array("I", points).tobytes().decode("utf-32-le")  # surrogates hold no space
        for points in (range(0xD800), range(0xE000, 0x110000))
    )
    return frozenset(map(ord, re.findall(r"\s", every)))


# --------------------------------------------------------------------------- per-config tables


class _NeedsReordering(Exception):
    """Raised from inside ``str.translate`` when the text holds a char NFD may reorder."""


class _CharMap(dict):
    """``str.translate`` table: code point -> replacement (``None`` deletes, an int is itself).

    The BMP chars no step changes and the emoji blocks are filled up front, because a hit is
    much faster than the KeyError path ``str.translate`` takes on a miss. The BMP chars a step
    may change (``eager``: tens of thousands, each computed in Python) are computed by
    ``__missing__`` when first seen and kept, so building the table costs little and a text
    pays only for the chars it holds. Other astral chars are computed by ``__missing__`` and
    kept only if they change, so two planes of private use and CJK Ext B-F are only stored once
    seen. Chars that may need reordering are never stored: looking one up raises
    ``_NeedsReordering``, which makes the common case free of any scan.
    """

    def __init__(
        self, encode: Callable[[int], str | int | None], eager: set[int], maybe_changed: Ranges, reorder: frozenset[int]
    ) -> None:
        super().__init__()
        self._encode = encode
        self._maybe_changed = _RangeSet(_merge_ranges(maybe_changed))
        self._reorder = reorder
        self.update(zip(range(0x10000), range(0x10000)))
        for c in eager:
            if c < 0x10000:
                del self[c]
        # emoji: only those in the astral ranges some step changes are computed (~5 µs each)
        changed = self._maybe_changed
        self.update((c, encode(c) if c in changed else c) for c in range(0x1F000, 0x1FB00))
        for c in reorder:
            self.pop(c, None)

    def __missing__(self, cp: int) -> str | int | None:
        if cp in self._reorder:
            raise _NeedsReordering
        if cp > 0xFFFF and cp not in self._maybe_changed:
            return cp  # not stored: there can be a million distinct astral chars
        value = self._encode(cp)
        if value != cp or cp <= 0xFFFF:
            self[cp] = value
        return value


class _Tables:
    """Everything precomputed for one effective configuration."""

    def __init__(self, clean: bool, chinese: bool, strip: bool, lower: bool) -> None:
        self.clean, self.chinese, self.strip, self.lower = clean, chinese, strip, lower
        # Chars some enabled step changes: the small sets listed (``eager``), the big blocks
        # as ranges (``blocks``). The BMP part goes into the translate table up front, the
        # astral part (``_maybe_changed``) when first seen.
        eager: set[int] = set()
        blocks: list[tuple[int, int]] = []
        if clean:
            eager.update(_bmp(_T.CLEAN_REMOVED), _bmp(_T.CLEAN_TO_SPACE))
            blocks += _T.CLEAN_REMOVED
        if chinese:
            eager.update(_bmp(_T.CHINESE))
            blocks += _T.CHINESE
        if strip:
            eager.update(_MN, _T.NFD, range(_HANGUL_FIRST, _HANGUL_LAST + 1))
        if lower:
            eager.update(_T.LOWERCASE)
        self._eager = eager
        self._maybe_changed = [(c, c) for c in eager if c > 0xFFFF] + [r for r in blocks if r[1] > 0xFFFF]

        # Chars bringing a surviving char with combining class > 0 (spec §2.4): only around them
        # can NFD's canonical reordering change the result.
        trigger: set[int] = set()
        if strip:
            trigger = set(_SURVIVING_MARKS) | {
                c for c, d in _T.NFD.items() if any(ord(x) in _SURVIVING_MARKS for x in d)
            }
            if clean:
                trigger = {c for c in trigger if c not in _REMOVED}
        self.reorder = frozenset(trigger)
        self.reorder_re = re.compile(f"[{_char_class([(c, c) for c in trigger])}]") if trigger else None

        self.char_map = _CharMap(self.encode, eager, self._maybe_changed, self.reorder)

        self._blocks = blocks

    @cached_property
    def non_single_re(self) -> re.Pattern[str]:
        """Chars whose result is not exactly one char: offsets need care only around them. Whole
        blocks go in as ranges (their astral part is not among the eager chars). Built on first
        use: ids alone never need it."""
        non_single = list(self._blocks)
        if self.strip:
            non_single.append(_T.HANGUL_SYLLABLES)
        others = {
            c for c in self._eager if c not in _REMOVED and c not in _CHINESE and not _HANGUL_FIRST <= c <= _HANGUL_LAST
        }
        non_single += [(c, c) for c in others if len(self.expand(c)) != 1]
        return re.compile(f"[{_char_class(non_single)}]" if non_single else "(?!)")

    # ------------------------------------------------------------------ one char on its own

    @cached_property
    def expanded_lengths(self) -> dict[int, int]:
        """Memo of ``len(expand(cp))`` for the offsets of chars that do not map to one char
        (every CJK char, padded with spaces, is one of them)."""
        return {}

    def expand(self, cp: int) -> str:
        """The normalized form of one char on its own: the four steps in HF's order."""
        ch = chr(cp)
        if (  # a Chinese char no other step changes (nor the spaces): padded; the generic way costs ~5 µs
            self.chinese
            and cp in _CHINESE
            and cp not in _T.NFD
            and cp not in _T.LOWERCASE
            and cp not in _MN
            and cp not in _REMOVED
            and cp not in _TO_SPACE
            and not _HANGUL_FIRST <= cp <= _HANGUL_LAST
        ):
            return f" {ch} "
        if self.clean:
            if cp in _REMOVED:
                return ""
            if cp in _TO_SPACE:
                ch = " "
        s = f" {ch} " if self.chinese and cp in _CHINESE else ch
        if self.strip:
            s = "".join(x for y in s for x in _nfd(y) if ord(x) not in _MN)
        if self.lower:
            s = "".join(_lower(x) for x in s)
        return s

    def encode(self, cp: int) -> str | int | None:
        """``expand`` in the form ``str.translate`` wants."""
        s = self.expand(cp)
        return cp if s == chr(cp) else (s or None)

    def encode_padded(self, cp: int) -> str | int | None:
        """``encode`` with a space on each side of every punctuation char, for ``str.split``."""
        s = _pad_punctuation(self.expand(cp))
        return cp if s == chr(cp) else (s or None)

    # ------------------------------------------------------------------ word splitting

    @cached_property
    def split_is_exact(self) -> bool:
        """True if ``str.split()`` on normalized text splits exactly where BertPreTokenizer does.

        With clean_text on, every char that is whitespace for HF or for Python is deleted or
        turned into U+0020, and no char decomposes or lowercases into whitespace (U+2000 has
        the decomposition U+2002, but clean_text makes it a space first): then the only
        whitespace left is U+0020, on which both agree. Checked, not assumed, because Python's
        ``str.isspace`` depends on its Unicode version. The answer is kept in the user cache
        (keyed by this code, the tables and Python's version): checking costs ~0.05 s a process.
        """
        if not self.clean:
            return False
        from toktools.io.user_cache import entry_path, read_json, write_json

        options = "".join("1" if flag else "0" for flag in (self.clean, self.chinese, self.strip, self.lower))
        path = entry_path("bert-split-exact", options, ".json", modules=(__name__, _T.__name__))
        known = read_json(path)
        if isinstance(known, bool):
            return known
        exact = self._check_split()
        write_json(path, exact)
        return exact

    def _check_split(self) -> bool:
        """:attr:`split_is_exact`, computed (a pass over every code point)."""
        spaces = (_python_whitespace() | _HF_SPACE) - {0x20}
        if any(c not in _REMOVED and c not in _TO_SPACE for c in spaces):
            return False
        return not any(ord(x) in spaces for c in (*_T.NFD, *_T.LOWERCASE) for x in self.expand(c))

    @cached_property
    def padded_map(self) -> _CharMap:
        """Translate table that normalizes and pads punctuation with spaces (built on first use)."""
        punct = set(_bmp(_T.PRETOKENIZER_PUNCTUATION))
        maybe = self._maybe_changed + [r for r in _T.PRETOKENIZER_PUNCTUATION if r[1] > 0xFFFF]
        # Padding applies to results too (e.g. U+037E GREEK QUESTION MARK -> ";").
        return _CharMap(self.encode_padded, self._eager | punct, maybe, self.reorder)

    # ------------------------------------------------------------------ exact emulation

    def emulate(self, text: str, base: int) -> tuple[str, list[int]]:
        """Step-by-step copy of ``tokenizers``, alignments included; used only where NFD reorders.

        ``base`` is the index of ``text[0]`` in the original string.
        """
        items: list[tuple[str, int]] = []  # (char, original index)
        for k, ch in enumerate(text):
            i, cp = base + k, ord(ch)
            if self.clean:
                if cp in _REMOVED:
                    continue
                if cp in _TO_SPACE:
                    ch = " "
            if self.chinese and cp in _CHINESE:
                items += [(" ", i), (ch, i), (" ", i)]
            else:
                items.append((ch, i))
        if self.strip:
            # NFD: decompose, marking the chars after the first of a decomposition as inserted.
            decomposed: list[tuple[str, bool]] = []
            for ch, _ in items:
                decomposed += [(x, n > 0) for n, x in enumerate(_nfd(ch))]
            # Canonical reordering: a stable sort of every run of chars with class > 0.
            i = 0
            while i < len(decomposed):
                if _CCC.get(ord(decomposed[i][0]), 0) == 0:
                    i += 1
                    continue
                j = i
                while j < len(decomposed) and _CCC.get(ord(decomposed[j][0]), 0) > 0:
                    j += 1
                decomposed[i:j] = sorted(decomposed[i:j], key=lambda d: _CCC[ord(d[0])])
                i = j
            # HF aligns by position, not by char: a char that is not inserted takes the
            # alignment of the next old char, an inserted one that of the old char consumed
            # last; reordering does not carry alignments along. (A decomposition's first char
            # always precedes its inserted ones, so ``consumed`` is never -1 when used.)
            aligned: list[tuple[str, int]] = []
            consumed = -1
            for x, inserted in decomposed:
                if not inserted:
                    consumed += 1
                aligned.append((x, items[consumed][1]))
            items = [(x, i) for x, i in aligned if ord(x) not in _MN]
        if self.lower:
            items = [(y, i) for x, i in items for y in _lower(x)]
        return "".join(x for x, _ in items), [i for _, i in items]

    def starts_run(self, ch: str) -> bool:
        """True if NFD reordering cannot move anything from before ``ch`` to after it.

        That holds when ``ch`` reaches the NFD step and its decomposition begins with a starter
        (combining class 0): a run of combining marks ends there.
        """
        if self.clean and ord(ch) in _REMOVED:
            return False
        return _CCC.get(ord(_nfd(ch)[0]), 0) == 0

    def reorder_segments(self, text: str) -> Iterator[tuple[int, int]]:
        """Disjoint, increasing ``(start, end)`` spans of ``text`` that need ``emulate``."""
        if self.reorder_re is None:
            return
        pos = 0
        while (m := self.reorder_re.search(text, pos)) is not None:
            start = m.start()
            while start > pos and not self.starts_run(text[start]):
                start -= 1
            end = m.end()
            while end < len(text) and not self.starts_run(text[end]):
                end += 1
            yield start, end
            pos = end

    def translate(self, text: str, char_map: _CharMap, fix: Callable[[str], str] = str) -> str:
        """``text`` through ``char_map``; runs that need reordering are emulated, then ``fix``ed."""
        try:
            return text.translate(char_map)
        except _NeedsReordering:
            pass
        out: list[str] = []
        pos = 0
        for start, end in self.reorder_segments(text):
            out.append(text[pos:start].translate(char_map))
            out.append(fix(self.emulate(text[start:end], start)[0]))
            pos = end
        out.append(text[pos:].translate(char_map))
        return "".join(out)


@cache
def _tables(clean: bool, chinese: bool, strip: bool, lower: bool) -> _Tables:
    return _Tables(clean, chinese, strip, lower)


def tables_for(config: BertNormalizerConfig) -> _Tables:
    return _tables(config.clean_text, config.handle_chinese_chars, config.effective_strip_accents, config.lowercase)


# --------------------------------------------------------------------------- normalizer API


def normalize(text: str, config: BertNormalizerConfig = DEFAULT_CONFIG) -> str:
    """``BertNormalizer(...).normalize_str(text)``, without ``tokenizers``."""
    tables = tables_for(config)
    return tables.translate(text, tables.char_map)


def normalize_with_offsets(text: str, config: BertNormalizerConfig = DEFAULT_CONFIG) -> tuple[str, list[int]]:
    """The normalized text and, per normalized char, the index of the original char it comes from.

    This is ``tokenizers``' alignment: inserted spaces around CJK chars and the extra chars of a
    multi-char result (``İ`` → ``i̇``, decompositions) point at the char they come from. The
    original span of normalized ``[start, end)`` is ``original_span(offsets, start, end)``.
    """
    tables = tables_for(config)
    pieces: list[str] = []
    offsets: list[int] = []

    lengths = tables.expanded_lengths

    def plain(lo: int, hi: int) -> None:
        # Between chars that do not give exactly one char, offsets simply count up.
        pos = lo
        for m in tables.non_single_re.finditer(text, lo, hi):
            i = m.start()
            offsets.extend(range(pos, i))
            cp = ord(text[i])
            n = lengths.get(cp)
            if n is None:
                n = lengths[cp] = len(tables.expand(cp))
            offsets.extend([i] * n)
            pos = i + 1
        offsets.extend(range(pos, hi))
        pieces.append(text[lo:hi].translate(tables.char_map))

    pos = 0
    for start, end in tables.reorder_segments(text):
        plain(pos, start)
        piece, piece_offsets = tables.emulate(text[start:end], start)
        pieces.append(piece)
        offsets.extend(piece_offsets)
        pos = end
    plain(pos, len(text))
    return "".join(pieces), offsets


def original_span(offsets: Sequence[int], start: int, end: int) -> tuple[int, int]:
    """Original ``(start, end)`` of normalized chars ``[start, end)``, as ``Encoding.offsets`` gives it.

    The alignments never decrease, so the first and last chars bound the span.
    """
    return offsets[start], offsets[end - 1] + 1


# --------------------------------------------------------------------------- pre-tokenizer API

_PUNCT_CLASS = _char_class(_T.PRETOKENIZER_PUNCTUATION)
_SPACE_CLASS = _char_class(_T.PRETOKENIZER_WHITESPACE)
#: A punctuation char alone, or a run of chars that are neither punctuation nor whitespace.
#: Stdlib ``re``: with these explicit classes it gives the same matches as ``regex``, 6x faster.
PRE_TOKENIZER_RE = re.compile(f"[{_PUNCT_CLASS}]|[^{_PUNCT_CLASS}{_SPACE_CLASS}]+")


def pre_tokenize(normalized: str) -> list[tuple[str, int, int]]:
    """``BertPreTokenizer().pre_tokenize_str``: ``(piece, start, end)`` char offsets into the input.

    Whitespace separates pieces and is dropped; every punctuation char is a piece of its own.
    """
    return [(m.group(), m.start(), m.end()) for m in PRE_TOKENIZER_RE.finditer(normalized)]


def iter_words(text: str, config: BertNormalizerConfig = DEFAULT_CONFIG) -> Iterator[str]:
    """The words (pre-tokens) of a whole chunk of text, normalized: the input of training counts.

    ``tokenizers`` trains line by line, but a chunk of many lines gives the same words in the
    same order: the normalizer is per char (reordering cannot cross a line break) and the line
    break itself is whitespace, so no word spans two lines.
    """
    from toktools.corpus.documents import SEGMENT_CHARS, safe_segments

    if len(text) > SEGMENT_CHARS:  # one long line: piece by piece (cut at spaces, which end every word)
        return (word for start, end in safe_segments(text, SEGMENT_CHARS) for word in _words(text[start:end], config))
    return _words(text, config)


def _words(text: str, config: BertNormalizerConfig) -> Iterator[str]:
    tables = tables_for(config)
    if tables.split_is_exact:
        return iter(tables.translate(text, tables.padded_map, _pad_punctuation).split())
    return iter(PRE_TOKENIZER_RE.findall(normalize(text, config)))


def words_with_offsets(text: str, config: BertNormalizerConfig = DEFAULT_CONFIG) -> list[tuple[str, int, int]]:
    """Normalized words with ``(start, end)`` in the *original* text.

    These are the text and offsets of ``Tokenizer.encode(text)``'s tokens for whole-word tokens.
    """
    normalized, offsets = normalize_with_offsets(text, config)
    return [(w, *original_span(offsets, s, e)) for w, s, e in pre_tokenize(normalized)]
