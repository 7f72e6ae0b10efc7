"""Patterns as ``tokenizers`` runs them (Oniguruma, Ruby syntax), on the ``regex`` module.

Three things differ between the engines and are handled here:

- **Character classes.** ``\\p{L}``, ``\\s``, ``\\w``… follow each engine's Unicode version. The
  classes are spelled out as code-point ranges measured from ``tokenizers``
  (``toktools.tables.parts.ONIG_CLASSES``) in an *exact* variant of the pattern; since ``regex`` runs long
  range lists slowly, text that holds none of the code points where the built-ins disagree (nearly
  all text) uses the built-ins, as :mod:`toktools.models.bpe.bytelevel` does for the GPT-2 split.
- **Ruby syntax.** ``^``/``$`` always match at line ends (``regex.MULTILINE``), ``(?m)`` means
  dot-all, ``\\Z`` may stop before a final newline, ``\\z`` is the very end, ``\\h`` a hex digit.
- **Empty matches.** Oniguruma's ``find_iter`` never returns an empty match right where the
  previous match ended, and after a skipped one it resumes one char later. Python allows the
  first and retries at the same place; :func:`find_iter` follows Oniguruma.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from functools import cache

import regex

from toktools.errors import ToktoolsError

Ranges = list[tuple[int, int]]


def unpack(packed: str) -> Ranges:
    """``"41-5A 61 …"`` (hex, inclusive) → ranges."""
    out: Ranges = []
    for item in packed.split():
        lo, _, hi = item.partition("-")
        out.append((int(lo, 16), int(hi or lo, 16)))
    return out


@cache
def onig_class(name: str) -> Ranges:
    """Members of a class (``"L"``, ``"s"``, …; ``"rust_w"``/``"rust_s"`` for the Rust
    ``regex`` crate's ``\\w``/``\\s``)."""
    from toktools.tables.parts import ONIG_CLASSES, RUST_CLASSES

    if name.startswith("rust_"):
        return unpack(RUST_CLASSES[name.removeprefix("rust_")])
    return unpack(ONIG_CLASSES[name])


@cache
def regex_disagreements(name: str) -> frozenset[str]:
    """Chars where ``regex``'s built-in class differs from Oniguruma's (measured once per
    process for a ``regex`` version the generated table does not list)."""
    from toktools.tables.parts import REGEX_DISAGREEMENTS

    known = REGEX_DISAGREEMENTS.get(regex.__version__)
    if known is not None:
        return frozenset(chr(c) for lo, hi in unpack(known[name]) for c in range(lo, hi + 1))
    scalars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    ours = {ch for run in regex.findall(f"{_builtin(name)}+", scalars) for ch in run}
    theirs = {chr(c) for lo, hi in onig_class(name) for c in range(lo, hi + 1)}
    return frozenset(ours ^ theirs)


_SHORT = {"s": "s", "w": "w", "d": "d"}


def _builtin(name: str) -> str:
    name = name.removeprefix("rust_")
    return f"\\{name}" if name in _SHORT else f"\\p{{{name}}}"


def _complement(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= 0x10FFFF:
        out.append((nxt, 0x10FFFF))
    return out


def class_body(ranges: Ranges) -> str:
    """Code point ranges as the inside of a ``[...]`` character class."""
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


_GC_ALIASES = {
    "letter": "L",
    "uppercaseletter": "Lu",
    "lowercaseletter": "Ll",
    "titlecaseletter": "Lt",
    "modifierletter": "Lm",
    "otherletter": "Lo",
    "mark": "M",
    "combiningmark": "M",
    "nonspacingmark": "Mn",
    "spacingmark": "Mc",
    "enclosingmark": "Me",
    "number": "N",
    "decimalnumber": "Nd",
    "letternumber": "Nl",
    "othernumber": "No",
    "punctuation": "P",
    "punct": "P",
    "symbol": "S",
    "separator": "Z",
    "spaceseparator": "Zs",
    "control": "Cc",
    "cntrl": "Cc",
    "format": "Cf",
    "privateuse": "Co",
}


def _class_name(prop: str) -> str | None:
    """An Oniguruma property name → the ``ONIG_CLASSES`` key it denotes, if toktools has it."""
    from toktools.tables.parts import ONIG_CLASSES

    key = prop.replace("_", "").replace(" ", "").replace("-", "")
    for prefix in ("generalcategory=", "gc="):
        if key.lower().startswith(prefix):
            key = key[len(prefix) :]
    for name in ONIG_CLASSES:
        if name not in _SHORT and key.lower() == name.lower():
            return name
    return _GC_ALIASES.get(key.lower())


def translate(pattern: str) -> tuple[str, str, frozenset[str], bool]:
    """Oniguruma pattern → (fast ``regex`` pattern, exact ``regex`` pattern, the classes it uses,
    whether chars can be told apart only through those classes; see :class:`OnigPattern`)."""
    fast: list[str] = []
    exact: list[str] = []
    classes: set[str] = set()
    substitutable = True
    depth = 0  # inside a [...] class
    version1 = False
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            name: str | None = None
            negated = False
            size = 2
            if nxt in "sSwWdD":
                name, negated = nxt.lower(), nxt.isupper()
            elif nxt in "pP" and i + 2 < n and pattern[i + 2] == "{":
                close = pattern.find("}", i + 3)
                if close < 0:
                    raise ToktoolsError(f"pattern {pattern!r}: unterminated \\{nxt}{{")
                prop = pattern[i + 3 : close]
                negated = nxt == "P"
                if prop.startswith("^"):
                    prop, negated = prop[1:], not negated
                name = _class_name(prop)
                size = close + 1 - i
                if name is None:  # a class toktools has no table for: the regex built-in
                    substitutable = False
                    fast.append(pattern[i : i + size])
                    exact.append(pattern[i : i + size])
                    i += size
                    continue
            elif nxt in "hH":
                body = "0-9a-fA-F"
                piece = (f"[^{body}]" if nxt == "H" else f"[{body}]") if depth == 0 else body
                if depth and nxt == "H":
                    piece = class_body(_complement([(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)]))
                fast.append(piece)
                exact.append(piece)
                i += 2
                continue
            elif nxt == "k" and depth == 0 and pattern.startswith("<", i + 2) and ">" in pattern[i + 3 :]:
                close = pattern.index(">", i + 3)
                piece = f"(?P={pattern[i + 3 : close]})"  # a named back-reference
                fast.append(piece)
                exact.append(piece)
                i = close + 1
                continue
            elif nxt == "z" and depth == 0:
                fast.append(r"\Z")
                exact.append(r"\Z")
                i += 2
                continue
            elif nxt == "Z" and depth == 0:
                fast.append(r"(?=\n?\Z)")
                exact.append(r"(?=\n?\Z)")
                i += 2
                continue
            if name is not None:
                text = pattern[i : i + size]
                ranges = onig_class(name)
                classes.add(name)
                if depth == 0:
                    fast.append(text)
                    exact.append(f"[{'^' if negated else ''}{class_body(ranges)}]")
                else:
                    fast.append(text)
                    exact.append(class_body(_complement(ranges) if negated else ranges))
                i += size
                continue
            if nxt in "XbBuUxNpP0123456789":  # graphemes, word boundaries, code points: see chars
                substitutable = False
            fast.append(pattern[i : i + 2])
            exact.append(pattern[i : i + 2])
            i += 2
            continue
        if not ch.isascii() or (depth and ch in "-:"):  # a literal, a range or a POSIX bracket
            substitutable = False
        if ch == "[":
            if depth:
                version1 = True  # a nested set: only regex's VERSION1 has them
            depth += 1
            head = "["
            if i + 1 < n and pattern[i + 1] == "^":
                head += "^"
                i += 1
            if i + 1 < n and pattern[i + 1] == "]" and depth == 1:  # a literal ] first
                head += "\\]"
                i += 1
            fast.append(head)
            exact.append(head)
            i += 1
            continue
        if ch == "]" and depth:
            depth -= 1
        elif ch == "&" and depth and pattern.startswith("&&", i):
            version1 = True  # set intersection
        elif ch == "(" and depth == 0 and pattern.startswith("(?", i):
            j = i + 2
            while j < n and pattern[j] in "imx-":
                j += 1
            if j > i + 2 and j < n and pattern[j] in ":)":
                flags = pattern[i + 2 : j].replace("m", "s")  # Ruby's m is dot-all
                fast.append(f"(?{flags}")
                exact.append(f"(?{flags}")
                i = j
                continue
        fast.append(ch)
        exact.append(ch)
        i += 1
    prefix = "(?V1-f)" if version1 else ""  # nested sets and && need VERSION1; simple case folding
    return prefix + "".join(fast), prefix + "".join(exact), frozenset(classes), substitutable


def _member(ranges: Ranges, cp: int) -> bool:
    at = bisect_right(ranges, (cp, 0x110000)) - 1
    return at >= 0 and ranges[at][0] <= cp <= ranges[at][1]


def _stand_ins(classes: frozenset[str], risky: frozenset[str]) -> dict[int, str] | None:
    """For each risky char, a char that is in exactly the same Oniguruma classes (of those the
    pattern uses), on which ``regex``'s built-ins agree with Oniguruma, and without case."""
    tables = [onig_class(name) for name in sorted(classes)]
    found: dict[tuple[bool, ...], str] = {}
    out: dict[int, str] = {}
    for ch in sorted(risky):
        key = tuple(_member(t, ord(ch)) for t in tables)
        if key not in found:
            for cp in range(0xA0, 0x110000):
                cand = chr(cp)
                if (
                    0xD800 <= cp <= 0xDFFF
                    or cand in risky
                    or cand.lower() != cand
                    or cand.upper() != cand
                    or cand.casefold() != cand
                    or tuple(_member(t, cp) for t in tables) != key
                ):
                    continue
                found[key] = cand
                break
            else:
                return None
        out[ord(ch)] = found[key]
    return out


class OnigPattern:
    """A compiled ``tokenizers`` pattern: a string (matched literally) or an Oniguruma regex.

    Text without the risky chars (where ``regex``'s classes differ from Oniguruma's) runs the
    pattern with ``regex``'s fast built-in classes. Text with some runs it on a copy where each
    risky char is replaced by a stand-in that every class of the pattern treats alike — same
    length, so the same offsets — when the pattern can tell chars apart only through those
    classes (no non-ASCII literal, no range, no other property); otherwise the exact pattern with
    every class spelled out as ranges (about 30 times slower) is used.
    """

    def __init__(self, pattern: str, literal: bool = False, where: str = "pattern") -> None:
        self.source = pattern
        self.literal = literal
        try:
            if literal:
                self._setup("(?:" + regex.escape(pattern) + ")", "", frozenset(), False)
            else:
                self._setup(*translate(pattern))
        except regex.error as exc:
            raise ToktoolsError(f"{where}: invalid regular expression {pattern!r} ({exc})") from None

    def _setup(self, fast: str, exact: str, classes: frozenset[str], substitutable: bool) -> None:
        self._fast = regex.compile(fast, regex.MULTILINE)
        self._exact_source = exact
        self._exact: regex.Pattern[str] | None = None
        self._classes = classes
        self._risky = frozenset().union(*(regex_disagreements(name) for name in classes))
        self._substitutable = substitutable
        self._stand_ins: dict[int, str] | None = None

    @classmethod
    def spelled(cls, fast: str, exact: str, classes: frozenset[str]) -> OnigPattern:
        """A pattern toktools writes itself, given as its two variants and the classes it uses."""
        self = cls.__new__(cls)
        self.source, self.literal = fast, False
        self._setup(fast, exact, classes, True)
        return self

    def prepared(self, text: str) -> tuple[regex.Pattern[str], str]:
        """The compiled pattern to run and the text to run it on (same length as ``text``)."""
        if not self._risky or text.isascii() or self._risky.isdisjoint(text):
            return self._fast, text
        if self._substitutable:
            if self._stand_ins is None:
                self._stand_ins = _stand_ins(self._classes, self._risky) or {}
            if self._stand_ins:
                return self._fast, text.translate(self._stand_ins)
        if self._exact is None:
            self._exact = regex.compile(self._exact_source, regex.MULTILINE)
        return self._exact, text

    def find_iter(self, text: str) -> Iterator[tuple[int, int]]:
        """Matches as Oniguruma's ``find_iter`` yields them (see the module docstring)."""
        compiled, text = self.prepared(text)
        spans = [m.span() for m in compiled.finditer(text)]
        if all(s != e for s, e in spans):  # no empty match: Python and Oniguruma agree
            yield from spans
            return
        pos, last_end, n = 0, -1, len(text)
        while pos <= n:
            m = compiled.search(text, pos)
            if m is None:
                return
            s, e = m.span()
            if s == e and e == last_end:
                pos += 1
                continue
            pos = last_end = e
            yield s, e

    def find_matches(self, text: str) -> list[tuple[tuple[int, int], bool]]:
        """``Pattern::find_matches``: the whole text as alternating non-match/match spans."""
        if not text:
            return [((0, 0), False)]
        out: list[tuple[tuple[int, int], bool]] = []
        prev = 0
        for s, e in self.find_iter(text):
            if prev != s:
                out.append(((prev, s), False))
            out.append(((s, e), True))
            prev = e
        if prev != len(text):
            out.append(((prev, len(text)), False))
        return out


def pattern_from_json(node: object, where: str) -> OnigPattern:
    """``{"String": s}`` or ``{"Regex": r}`` (a ``tokenizers`` pattern node)."""
    if not isinstance(node, dict) or len(node) != 1:
        raise ToktoolsError(f'{where}: expected {{"String": ...}} or {{"Regex": ...}}, got {node!r}')
    ((kind, value),) = node.items()
    if kind not in ("String", "Regex") or not isinstance(value, str):
        raise ToktoolsError(f'{where}: expected {{"String": ...}} or {{"Regex": ...}}, got {node!r}')
    return OnigPattern(value, literal=kind == "String", where=where)


def pattern_to_json(pattern: OnigPattern) -> dict[str, str]:
    return {"String" if pattern.literal else "Regex": pattern.source}
