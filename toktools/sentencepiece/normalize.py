"""sentencepiece's normalised text (:func:`~toktools.parts.precompiled.spm_normalize`), fast for
the texts where it reduces to per-character replacements.

``spm_normalize`` walks the text unit by unit: the *longest* charsmap rule at each position (a
rule may span several characters: a letter and a combining mark compose), the whitespace rules
between units. When no rule of two or more characters can start anywhere in a text, every unit
is one character and its output is fixed by that character alone, so the text is one
``str.translate``; the whitespace rules then act on the joined outputs as plain string
operations (proved in :class:`SpmText`). User-defined symbols are units copied verbatim:
a text holding one is split on them, the pieces between translated and the symbols put back
before the whitespace rules run on the whole. Other texts take ``spm_normalize`` itself.
``tests/test_sentencepiece_normalize.py`` checks both give the same text, and sentencepiece's.
"""

from __future__ import annotations

import re
from typing import Any
from weakref import WeakKeyDictionary

from toktools.parts.precompiled import SPACE, CharsMap, spm_normalize, unit_offset


def rule_openings(charsmap: CharsMap) -> frozenset[tuple[str, str]] | None:
    """The first two characters of every rule of two or more characters (a text with no two
    neighbours among them has no match of such a rule), or None when a rule ends inside a
    UTF-8 character (then only the slow path knows what to do).

    The trie (darts-clone shares the nodes of common suffixes, so paths are many more than
    nodes) is walked over one whole first character, keeping only the distinct nodes reached,
    then over every possible second character from those nodes: every node leads on to some
    rule, so a second character the walk gets through is one a rule holds."""
    units = charsmap.units
    size = len(units)

    def children(state: int, low: int, high: int) -> list[tuple[int, int, bool]]:
        """``(byte, next state, a rule ends here)`` for the labels ``low..high`` of ``state``."""
        out = []
        for c in range(low, high + 1):
            index = state ^ c
            if index < size:
                unit = units[index]
                if unit & 0x800000FF == c:
                    out.append((c, index ^ unit_offset(unit), bool((unit >> 8) & 1)))
        return out

    def whole_characters(state: int) -> list[tuple[bytes, int]] | None:
        """Every character the walk from ``state`` gets through, with the node after it."""
        out: list[tuple[bytes, int]] = []
        for lead, node, leaf in children(state, 1, 0xF4):
            length = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            paths = [(bytes((lead,)), node, leaf)]
            for _ in range(length - 1):
                if any(hit for _, _, hit in paths):
                    return None  # a rule that ends inside a character
                paths = [
                    (path + bytes((c,)), child, hit)
                    for path, node, _ in paths
                    for c, child, hit in children(node, 0x80, 0xBF)
                ]
            out.extend((path, node) for path, node, _ in paths)
        return out

    firsts = whole_characters(unit_offset(units[0]))
    if firsts is None:
        return None
    after: dict[int, list[str]] = {}
    for state in {node for _, node in firsts}:
        found = whole_characters(state)
        if found is None:
            return None
        try:
            after[state] = [path.decode("utf-8") for path, _ in found]
        except UnicodeDecodeError:
            return None
    pairs: set[tuple[str, str]] = set()
    for path, node in firsts:
        if after[node]:
            try:
                first = path.decode("utf-8")
            except UnicodeDecodeError:
                return None
            pairs.update((first, second) for second in after[node])
    return frozenset(pairs)


def second_characters(charsmap: CharsMap) -> frozenset[str] | None:
    """The character at index 1 of every rule of two or more characters (a text holding none of
    them has no match of such a rule), or None as :func:`rule_openings`."""
    pairs = _openings(charsmap)
    return None if pairs is None else frozenset(second for _, second in pairs)


#: :func:`rule_openings` of each charsmap met (a walk of the whole trie: once per charsmap)
_pairs: WeakKeyDictionary[CharsMap, frozenset[tuple[str, str]] | None] = WeakKeyDictionary()
_NOT_YET = frozenset({("", "")})


def _openings(charsmap: CharsMap) -> frozenset[tuple[str, str]] | None:
    found = _pairs.get(charsmap, _NOT_YET)
    if found is _NOT_YET:
        found = _pairs[charsmap] = rule_openings(charsmap)
    return found


#: :func:`second_characters` of each charsmap met (a walk of the whole trie: once per charsmap)
_seconds: WeakKeyDictionary[CharsMap, frozenset[str] | None] = WeakKeyDictionary()
_UNKNOWN = frozenset({""})


class _Replacements(dict):
    """``str.translate`` table: code point → the output of the one-character unit (the longest
    rule within its bytes, or itself); filled on first sight. A character with a rule that ends
    inside it, or whose output holds two spaces in a row, is also put in :attr:`unsafe` (a
    text holding one takes the slow path)."""

    def __init__(self, charsmap: CharsMap) -> None:
        super().__init__()
        self.charsmap = charsmap
        self.unsafe: set[int] = set()

    def __missing__(self, code: int) -> Any:
        ch = chr(code)
        state = self.charsmap.char_state(ch)
        value: Any = code
        if state is not None:
            _, hits, length = state
            if hits and hits[-1][0] == length:
                value = self.charsmap.replacement(hits[-1][1])
            elif hits:  # a rule ending inside the character: the slow path says what to do
                self.unsafe.add(code)
        if isinstance(value, str) and "  " in value:
            self.unsafe.add(code)
        self[code] = value
        return value


class SpmText:
    """``spm_normalize(text, ...)[0]`` for one model's charsmap and flags.

    Why the string operations are exact, for a text whose units are single characters with
    outputs holding no two spaces in a row (``remove_extra_whitespaces``): ``spm_normalize``
    skips leading units whose output is ``" "`` and strips the leading spaces of a unit that
    follows output ending in a space (empty outputs change nothing), so every run of spaces
    made of two or more units' outputs becomes one space and leading spaces go: that is
    ``re.sub(" {2,}", " ", joined).lstrip(" ")`` -- a run inside one output is at most one
    space here. A text with nothing left is ``""`` (no dummy prefix). Then the dummy prefix,
    ``" "`` → ``▁`` with ``escape_whitespaces``, and trailing spaces (or ``▁``, literal ones
    included) removed. Without ``remove_extra_whitespaces`` the outputs are only joined, the
    prefix put before them and spaces escaped."""

    def __init__(
        self,
        charsmap: CharsMap | None,
        *,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
        user_defined: tuple[str, ...] = (),
    ) -> None:
        self.charsmap = charsmap
        self.flags = dict(
            add_dummy_prefix=add_dummy_prefix,
            remove_extra_whitespaces=remove_extra_whitespaces,
            escape_whitespaces=escape_whitespaces,
            treat_whitespace_as_suffix=treat_whitespace_as_suffix,
        )
        self.user_defined = user_defined
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra = remove_extra_whitespaces
        self.space = SPACE if escape_whitespaces else " "
        self.fast = not treat_whitespace_as_suffix
        blocked: set[str] = set()
        #: the first two characters of the charsmap's rules of two or more characters
        self.openings: frozenset[tuple[str, str]] = frozenset()
        if charsmap is not None:
            self.table: Any = _Replacements(charsmap)
            seconds = _seconds.get(charsmap, _UNKNOWN)
            if seconds is _UNKNOWN:
                seconds = _seconds[charsmap] = second_characters(charsmap)
            if seconds is None:
                self.fast = False
            else:
                blocked |= seconds
                self.openings = _openings(charsmap) or frozenset()
        else:
            self.table = {}
        symbols = sorted({symbol for symbol in user_defined if symbol}, key=len, reverse=True)
        # A symbol is a unit where it starts (sentencepiece tries the symbols first, longest
        # first), so splitting on it is exact while every other unit is one character. Not so
        # when a rule of two characters could swallow its first character, or when its own
        # spaces would be collapsed by the string operations (two in a row): then the slow path.
        splittable = all(symbol[0] not in blocked and "  " not in symbol for symbol in symbols)
        if not splittable:
            blocked |= {symbol[0] for symbol in symbols}
        #: the text split on the symbols (longest first: re tries the alternatives in order)
        self.split = re.compile("(" + "|".join(map(re.escape, symbols)) + ")").split if symbols and splittable else None
        self.symbol_starts = frozenset(symbol[0] for symbol in symbols)
        # any character that continues a rule of two or more (or starts a symbol not split on)
        self.blocked = re.compile("[" + "".join(map(re.escape, sorted(blocked))) + "]").search if blocked else None
        self.runs = re.compile(" {2,}").sub

    def __call__(self, text: str) -> str:
        if not self.fast or (self.blocked is not None and self.blocked(text) is not None):
            return self.slow(text)
        table = self.table
        parts = self.split(text) if self.split is not None and not self.symbol_starts.isdisjoint(text) else None
        if parts is None or len(parts) == 1:
            joined = text.translate(table)
            plain = text
        else:  # pieces at even places, symbols (copied verbatim) at odd ones
            joined = "".join(part if index & 1 else part.translate(table) for index, part in enumerate(parts))
            plain = "".join(parts[0::2])
        if self.charsmap is not None and table.unsafe and not table.unsafe.isdisjoint(map(ord, set(plain))):
            return self.slow(text)
        if self.remove_extra:
            joined = self.runs(" ", joined).lstrip(" ")
            if not joined:
                return ""
        elif not text:
            return ""
        if self.add_dummy_prefix:
            joined = " " + joined
        if self.space != " ":
            joined = joined.replace(" ", self.space)
        return joined.rstrip(self.space) if self.remove_extra else joined

    def slow_for(self, ch: str) -> bool:
        """Whether a text holding ``ch`` takes the slow path (or, when it starts a user-defined
        symbol, the split on the symbols), whatever its neighbours: a character that continues
        a rule only does after the first characters of :attr:`openings`."""
        return ch in self.symbol_starts

    def slow(self, text: str) -> str:
        return spm_normalize(text, self.charsmap, user_defined=self.user_defined, **self.flags)[0]
