"""Byte-level text handling of GPT-2 / RoBERTa: bytes as printable symbols, and the GPT-2 split.

Byte-level BPE never sees characters: text becomes UTF-8 bytes, and each byte is shown as one
printable Unicode symbol so that the merge engine can work on ``str`` (``我`` = E6 88 91 →
``æĪĳ``). Nothing is ever unknown, since every byte has a symbol.

Before that, a sequence is cut into words by GPT-2's regular expression. Its classes ``\\p{L}``,
``\\p{N}`` and ``\\s`` are spelled out from :mod:`toktools.tables.bytelevel` (what the Oniguruma build in
``tokenizers`` 0.23.3 says) instead of relying on the Unicode version of the ``regex`` module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import regex

# the byte <-> symbol map (section 1), re-exported
from toktools.models.bpe.byte_symbols import ALPHABET as ALPHABET
from toktools.models.bpe.byte_symbols import BYTE_TO_SYMBOL as BYTE_TO_SYMBOL
from toktools.models.bpe.byte_symbols import SYMBOL_TO_BYTE as SYMBOL_TO_BYTE
from toktools.models.bpe.byte_symbols import bytes_to_symbols as bytes_to_symbols
from toktools.models.bpe.byte_symbols import is_byte_symbols as is_byte_symbols
from toktools.models.bpe.byte_symbols import symbols_to_bytes as symbols_to_bytes
from toktools.models.bpe.byte_symbols import text_to_symbols as text_to_symbols
from toktools.tables.bytelevel import LETTER_RANGES, NUMBER_RANGES, REGEX_DISAGREEMENTS, SPACE_RANGES


@dataclass(frozen=True)
class ByteViewRow:
    """One character of a text seen by byte-level BPE: its UTF-8 bytes and their symbols."""

    char: str
    hex_bytes: str
    symbols: str


def byte_view(text: str) -> list[ByteViewRow]:
    """A readable byte view: ``我`` → ``ByteViewRow("我", "E6 88 91", "æĪĳ")``."""
    rows = []
    for ch in text:
        raw = ch.encode("utf-8")
        rows.append(ByteViewRow(ch, " ".join(f"{b:02X}" for b in raw), bytes_to_symbols(raw)))
    return rows


# --------------------------------------------------------------------------------------------
# 2. The GPT-2 split pattern
# --------------------------------------------------------------------------------------------


def _without(ranges: tuple[tuple[int, int], ...], code_point: int) -> tuple[tuple[int, int], ...]:
    """``ranges`` with one code point taken out."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        out.extend(r for r in ((lo, min(hi, code_point - 1)), (max(lo, code_point + 1), hi)) if r[0] <= r[1])
    return tuple(out)


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _bmp_class(ranges: Iterable[tuple[int, int]]) -> str:
    """The Basic Multilingual Plane part of code-point ranges as a class body."""
    return _char_class((lo, min(hi, 0xFFFF)) for lo, hi in ranges if lo <= 0xFFFF)


def _char_class(ranges: Iterable[tuple[int, int]]) -> str:
    """Ranges → the body of a ``regex`` character class (without brackets)."""
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def _gpt2_pattern(letter: str, number: str, space: str, space_not_lf: str | None = None) -> str:
    """GPT-2's ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
    with the three classes given as class bodies.

    With ``space_not_lf`` it is the variant for many ``\\n``-terminated lines at once: it gives
    exactly the pieces that splitting each line on its own would, because whitespace runs never
    cross a line end, and a run that reaches one ends with it (as at the end of a single line).
    """
    words = rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letter}]+| ?[{number}]+| ?[^{space}{letter}{number}]+"
    if space_not_lf is None:
        return rf"{words}|[{space}]+(?![^{space}])|[{space}]+"
    return rf"{words}|[{space_not_lf}]*\n|[{space_not_lf}]+(?![^{space}])|[{space_not_lf}]+"


class _Splitters:
    """The compiled split patterns, built on first use.

    The exact patterns spell out ``tokenizers``' classes as code-point ranges, but ``regex``
    runs long range lists ~9x slower than its built-in ``\\p{L}``/``\\p{N}``/``\\s``. Those
    built-ins differ from ``tokenizers`` only on a few code points (characters newer than its
    Unicode 16.0), found here by one scan of all code points. Text that holds none of them —
    nearly all text — goes through the fast built-in pattern; other text through the exact one.
    """

    def __init__(self) -> None:
        self.fast = regex.compile(_gpt2_pattern(r"\p{L}", r"\p{N}", r"\s"))
        self.fast_lines = regex.compile(_gpt2_pattern(r"\p{L}", r"\p{N}", r"\s", r"^\S\n"))
        known = REGEX_DISAGREEMENTS.get(regex.__version__)
        ranges = known if known is not None else _cached_disagreements()
        self.risky = frozenset(chr(c) for lo, hi in ranges for c in range(lo, hi + 1))
        self._exact: tuple[regex.Pattern[str], regex.Pattern[str]] | None = None
        self._bmp_lines: re.Pattern[str] | None = None

    @property
    def exact(self) -> tuple[regex.Pattern[str], regex.Pattern[str]]:
        """The patterns with every class spelled out (compiled on first need: it is slow)."""
        if self._exact is None:
            letter, number, space = _char_class(LETTER_RANGES), _char_class(NUMBER_RANGES), _char_class(SPACE_RANGES)
            space_not_lf = _char_class(_without(SPACE_RANGES, 0x0A))
            self._exact = (
                regex.compile(_gpt2_pattern(letter, number, space)),
                regex.compile(_gpt2_pattern(letter, number, space, space_not_lf)),
            )
        return self._exact

    @property
    def bmp_lines(self) -> re.Pattern[str]:
        """The exact many-lines pattern for text without astral characters, in the standard
        ``re`` module: it runs classes of Basic Multilingual Plane ranges from a bitmap, twice
        as fast as ``regex`` runs even its built-in classes (astral ranges it scans one by one,
        so those are cut off here; text that holds them goes through ``regex``)."""
        if self._bmp_lines is None:
            letter, number, space = (_bmp_class(r) for r in (LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES))
            space_not_lf = _bmp_class(_without(SPACE_RANGES, 0x0A))
            self._bmp_lines = re.compile(_gpt2_pattern(letter, number, space, space_not_lf))
        return self._bmp_lines

    def split_lines(self, chunk: str) -> list[str]:
        """The pieces of a chunk of whole lines: lines without astral characters through
        :attr:`bmp_lines`, the others through :meth:`pick`'s pattern (the pattern never makes a
        piece across a line end, so cutting between lines changes nothing)."""
        if chunk.isascii() or not _ASTRAL.search(chunk):
            return self.bmp_lines.findall(chunk)
        pieces: list[str] = []
        done = 0  # the chunk is split up to here
        for found in _ASTRAL.finditer(chunk):
            at = found.start()
            if at < done:
                continue
            line_start = chunk.rfind("\n", 0, at) + 1
            line_end = chunk.find("\n", at) + 1 or len(chunk)
            pieces += self.bmp_lines.findall(chunk, done, line_start)
            lines = chunk[line_start:line_end]
            pieces += self.pick(lines, lines=True).findall(lines)
            done = line_end
        pieces += self.bmp_lines.findall(chunk, done)
        return pieces

    def pick(self, text: str, lines: bool = False) -> regex.Pattern[str]:
        # set(text) is C-speed and ~10x faster than a regex search for a class of ranges
        if not self.risky or text.isascii() or self.risky.isdisjoint(set(text)):
            return self.fast_lines if lines else self.fast
        return self.exact[1] if lines else self.exact[0]


def measure_regex_disagreements() -> list[tuple[int, int]]:  # also run by scripts/gen_bytelevel_tables.py
    """Code-point ranges where ``regex``'s ``\\p{L}``, ``\\p{N}`` or ``\\s`` differ from
    ``tokenizers``' (one C-speed pass over a string of every scalar value)."""
    scalars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    wrong: set[int] = set()
    for builtin, ranges in ((r"\p{L}", LETTER_RANGES), (r"\p{N}", NUMBER_RANGES), (r"\s", SPACE_RANGES)):
        theirs = {c for lo, hi in ranges for c in range(lo, hi + 1)}
        ours = {ord(ch) for run in regex.findall(f"{builtin}+", scalars) for ch in run}
        wrong |= theirs ^ ours
    out: list[tuple[int, int]] = []
    for c in sorted(wrong):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def _cached_disagreements() -> list[tuple[int, int]]:
    """:func:`measure_regex_disagreements` for a ``regex`` version the generated table does not list,
    measured once and kept in the user cache (:mod:`toktools.io.user_cache`) per ``regex``
    version and tables: the scan costs ~0.7 s, a large share of a short encoding run."""
    import hashlib

    from toktools.io.user_cache import cache_file, read_json, write_json

    tables = hashlib.sha256(repr((LETTER_RANGES, NUMBER_RANGES, SPACE_RANGES)).encode()).hexdigest()[:16]
    path = cache_file("regex-disagreements-v1", f"bytelevel-{regex.__version__}-{tables}.json")
    cached = read_json(path)
    if isinstance(cached, list) and all(isinstance(r, list) and len(r) == 2 for r in cached):
        return [(int(lo), int(hi)) for lo, hi in cached]
    ranges = measure_regex_disagreements()
    write_json(path, ranges)
    return ranges


_splitters: _Splitters | None = None
_LINE_START_WITHOUT_SPACE = regex.compile(r"(?:^|(?<=\n))(?=[^ ])")


def splitters() -> _Splitters:
    """The split patterns (built once per process, on first use)."""
    global _splitters
    if _splitters is None:
        _splitters = _Splitters()
    return _splitters


def split(text: str) -> list[str]:
    """The GPT-2 split of one sequence, as text pieces (not yet byte-mapped)."""
    return splitters().pick(text).findall(text)


def split_lines(chunk: str, add_prefix_space: bool = False) -> list[str]:
    """Pieces of a chunk of whole lines, identical to splitting each line separately.

    ``tokenizers`` trains on files line by line (each line keeps its ``\\n``), and with
    ``add_prefix_space`` each line gets its own leading space. Doing one ``findall`` over a
    multi-megabyte chunk is several times faster than a loop over its lines.
    """
    if add_prefix_space:
        chunk = _LINE_START_WITHOUT_SPACE.sub(" ", chunk)
    return splitters().split_lines(chunk)


def prefixed(sequence: str, add_prefix_space: bool) -> str:
    """The sequence with the prefix space that ``add_prefix_space`` asks for."""
    if add_prefix_space and sequence and not sequence.startswith(" "):
        return " " + sequence
    return sequence


def pieces_of_lines(chunk: str, add_prefix_space: bool = False, use_regex: bool = True) -> list[str]:
    """Text pieces (not yet byte-mapped) of a chunk of ``\\n``-terminated training lines."""
    if use_regex:
        return split_lines(chunk, add_prefix_space)
    return [prefixed(line, add_prefix_space) for line in _split_on_newline(chunk)]


def _split_on_newline(chunk: str) -> list[str]:
    """Split only at ``\\n``, keeping it (``str.splitlines`` also splits at ``\\r`` and others)."""
    parts = chunk.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def training_pieces(chunk: str, add_prefix_space: bool = False, use_regex: bool = True) -> Iterable[str]:
    """Text pieces of a chunk of training lines (top-level, so worker processes can run it).
    A chunk longer than a segment (one long line) is split piece by piece, cut where the GPT-2
    split provably restarts (:func:`toktools.corpus.documents.safe_segments`): the same pieces,
    without a list of all of them at once."""
    from toktools.corpus.documents import SEGMENT_CHARS, safe_segments

    if not use_regex or len(chunk) <= SEGMENT_CHARS:
        return pieces_of_lines(chunk, add_prefix_space, use_regex)
    return (
        piece
        for start, end in safe_segments(chunk, SEGMENT_CHARS)
        for piece in pieces_of_lines(chunk[start:end], add_prefix_space, use_regex)
    )
