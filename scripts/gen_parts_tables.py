#!/usr/bin/env python3
"""Regenerate ``toktools/tables/parts.py``: the Unicode facts of the generic ``tokenizers`` parts
(NFC/NFD/NFKC/NFKD, StripAccents, Digits, the Oniguruma classes of Split/Whitespace patterns),
measured from ``tokenizers`` itself.

Why: ``tokenizers`` 0.23.3 normalises with ``unicode-normalization-alignments`` (tables of about
Unicode 12) and runs patterns with Oniguruma (Unicode 16).
Python's ``unicodedata`` (14.0 on 3.11, newer later) and the ``regex`` module (17.0) disagree with
both on a few thousand code points. Canonical decompositions, combining classes and lowercase are
already measured in ``toktools.tables.bert`` (same crate, same functions); this adds what is missing:

- ``COMPAT``: the full NFKD of every char whose NFKD differs from its NFD;
- ``COMPOSE``: the canonical pairs ``(a, b) -> c`` that NFC composes;
- ``COMBINING_MARKS``: what ``StripAccents`` removes (``is_combining_mark``);
- ``NUMERIC``: what ``Digits`` isolates (Rust ``char::is_numeric``);
- ``ONIG_CLASSES``: members of ``\\p{..}``, ``\\s``, ``\\w``, ``\\d`` as Oniguruma sees them, and
  ``REGEX_DISAGREEMENTS``: where the ``regex`` module's built-ins differ (per ``regex`` version).

Every code point (0..0x10FFFF minus surrogates) is pushed through ``tokenizers`` in a few batched
calls, joined with U+0000 (a starter that nothing decomposes to or composes with).

Run:  python scripts/gen_parts_tables.py   (needs the pinned ``tokenizers``)
"""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import regex
import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

from toktools.tables import bert as BT

OUT = Path(__file__).resolve().parent.parent / "toktools" / "tables" / "parts.py"
SEP = "\x00"
SCALARS = [c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
#: Classes a Split pattern may use that toktools spells out exactly (Oniguruma syntax).
CLASSES = (
    "L",
    "Lu",
    "Ll",
    "Lt",
    "Lm",
    "Lo",
    "M",
    "Mn",
    "Mc",
    "Me",
    "N",
    "Nd",
    "Nl",
    "No",
    "P",
    "Pc",
    "Pd",
    "Ps",
    "Pe",
    "Pi",
    "Pf",
    "Po",
    "S",
    "Sm",
    "Sc",
    "Sk",
    "So",
    "Z",
    "Zs",
    "Zl",
    "Zp",
    "Cc",
    "Cf",
    "Co",
)
SHORTHANDS = {"s": r"\s", "w": r"\w", "d": r"\d"}


def per_char(fn) -> dict[int, str]:
    """``fn`` of every code point alone, from one call on a separated batch."""
    parts = fn(SEP.join(map(chr, SCALARS))).split(SEP)
    assert len(parts) == len(SCALARS), "batching broke"
    return dict(zip(SCALARS, parts))


def members(onig_class: str) -> list[int]:
    """Code points Oniguruma (inside tokenizers) puts in ``onig_class``."""
    splitter = pre_tokenizers.Split(Regex(f"[^{onig_class}]"), behavior="removed")
    everything = [0, *SCALARS]
    found: list[int] = []
    step = 1 << 16
    for lo in range(0, len(everything), step):
        block = everything[lo : lo + step]
        for _piece, (start, end) in splitter.pre_tokenize_str("".join(map(chr, block))):
            found.extend(block[start:end])
    return found


def rust_word_and_space() -> tuple[list[int], list[int]]:
    """\\w and \\s of the Rust ``regex`` crate, which ``Whitespace`` uses (not Oniguruma): each
    code point c sits in ``"a" c "a"``; a word char glues the three, a space char splits them
    apart and vanishes, anything else comes out alone."""
    text = " ".join(f"a{chr(c)}a" for c in SCALARS)
    cover: dict[int, int] = {}
    for _piece, (start, end) in pre_tokenizers.Whitespace().pre_tokenize_str(text):
        for i in range(start, end):
            cover[i] = end - start
    word, space = [], []
    for i, c in enumerate(SCALARS):
        size = cover.get(4 * i + 1)
        if size == 3:
            word.append(c)
        elif size is None:
            space.append(c)
        else:
            assert size == 1, hex(c)
    return word, space


def to_ranges(points) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in sorted(set(points)):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def packed(ranges: list[tuple[int, int]]) -> list[str]:
    """Ranges as ``"lo-hi lo-hi …"`` in hex, cut into source lines."""
    items = [f"{lo:X}" if lo == hi else f"{lo:X}-{hi:X}" for lo, hi in ranges]
    lines, row = [], ""
    for item in items:
        if len(row) + len(item) > 90:
            lines.append(f'    "{row}"')
            row = ""
        row += item + " "
    if row or not lines:
        lines.append(f'    "{row}"')
    return lines


def compositions() -> dict[tuple[int, int], int]:
    """Canonical pairs that ``tokenizers``' NFC composes. Candidates are Python's primary
    composites (``tokenizers``' tables are older than any supported Python); each pair is kept
    only if ``tokenizers`` composes it."""
    cands: dict[tuple[int, int], int] = {}
    for c in SCALARS:
        d = unicodedata.decomposition(chr(c))
        if not d or d.startswith("<"):
            continue
        parts = [int(x, 16) for x in d.split()]
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(c)) == chr(c):
            cands[(parts[0], parts[1])] = c
    keys = list(cands)
    out = normalizers.NFC().normalize_str(SEP.join(chr(a) + chr(b) for a, b in keys)).split(SEP)
    assert len(out) == len(keys)
    kept = {k: cands[k] for k, o in zip(keys, out) if o == chr(cands[k])}
    for k, o in zip(keys, out):
        assert o in (chr(cands[k]), chr(k[0]) + chr(k[1])), (k, o)
    return kept


def main() -> int:
    nfd = per_char(normalizers.NFD().normalize_str)
    nfkd = per_char(normalizers.NFKD().normalize_str)
    strip = per_char(normalizers.StripAccents().normalize_str)
    hangul_lo, hangul_hi = BT.HANGUL_SYLLABLES
    for c in SCALARS:  # toktools.tables.bert.NFD is tokenizers' canonical decomposition
        if not hangul_lo <= c <= hangul_hi:
            assert nfd[c] == BT.NFD.get(c, chr(c)), hex(c)
    compat = {c: nfkd[c] for c in SCALARS if nfkd[c] != nfd[c]}
    marks = [c for c in SCALARS if strip[c] == ""]
    assert all(strip[c] in ("", chr(c)) for c in SCALARS)
    digits = pre_tokenizers.Digits(individual_digits=True)
    text = "a" + "a".join(map(chr, SCALARS)) + "a"
    numeric = [ord(piece) for piece, (s, e) in digits.pre_tokenize_str(text) if e - s == 1 and s % 2 == 1]
    compose = compositions()

    lines = [
        f'"""Generated by scripts/gen_parts_tables.py from tokenizers {tokenizers.__version__}. Do not edit.',
        "",
        "Per-code-point facts of the generic tokenizers parts (see the script for why). Ranges are",
        'packed as "lo-hi lo …" in hex (inclusive); toktools.parts.unicode_forms unpacks them.',
        '"""',
        "from __future__ import annotations",
        "",
        f'TOKENIZERS_VERSION = "{tokenizers.__version__}"',
        "",
        "# Full NFKD of every char whose NFKD differs from its NFD (Hangul syllables excluded).",
        "COMPAT: dict[int, str] = {",
    ]
    row = ""
    for c in sorted(compat):
        item = f"0x{c:X}: {ascii(compat[c])}, "
        if len(row) + len(item) > 96:
            lines.append("    " + row.rstrip())
            row = ""
        row += item
    lines += ["    " + row.rstrip(), "}", ""]
    lines.append("# NFC's canonical pairs as 'a b c' (hex): a followed by b composes to c.")
    lines.append("COMPOSE = (")
    row = ""
    for (a, b), c in sorted(compose.items()):
        item = f"{a:X} {b:X} {c:X},"
        if len(row) + len(item) > 90:
            lines.append(f'    "{row}"')
            row = ""
        row += item
    lines += [f'    "{row}"', ")", ""]
    lines += [
        "# StripAccents removes these (unicode-normalization's is_combining_mark).",
        "COMBINING_MARKS = (",
        *packed(to_ranges(marks)),
        ")",
        "",
    ]
    lines += ["# Digits isolates these (Rust char::is_numeric).", "NUMERIC = (", *packed(to_ranges(numeric)), ")", ""]
    lines.append("# Members of each class as Oniguruma in tokenizers sees it: \\p{X} by name, and \\s \\w \\d.")
    lines.append("ONIG_CLASSES: dict[str, str] = {")
    onig: dict[str, list[tuple[int, int]]] = {}
    for name in CLASSES:
        onig[name] = to_ranges(members(rf"\p{{{name}}}"))
    for name, cls in SHORTHANDS.items():
        onig[name] = to_ranges(members(cls))
    word, space = rust_word_and_space()
    rust = {"w": to_ranges(word), "s": to_ranges(space)}
    for name, ranges in onig.items():
        lines.append(f'    "{name}": (')
        lines.extend("    " + x for x in packed(ranges))
        lines.append("    ),")
    lines += ["}", ""]
    lines.append(r"# \w and \s of the Rust regex crate (the Whitespace pre-tokenizer's \w+|[^\w\s]+).")
    lines.append("RUST_CLASSES: dict[str, str] = {")
    for name, ranges in rust.items():
        lines.append(f'    "{name}": (')
        lines.extend("    " + x for x in packed(ranges))
        lines.append("    ),")
    lines += ["}", ""]
    lines.append("# Code points where the regex module's built-in class differs from ONIG_CLASSES, per regex version.")
    lines.append("REGEX_DISAGREEMENTS: dict[str, dict[str, str]] = {")
    lines.append(f"    {regex.__version__!r}: {{")
    scalars = "".join(map(chr, [0, *SCALARS]))
    for name, ranges in [*onig.items(), *((f"rust_{k}", v) for k, v in rust.items())]:
        builtin = SHORTHANDS.get(name.removeprefix("rust_"), rf"\p{{{name}}}")
        ours = {ord(ch) for run in regex.findall(f"{builtin}+", scalars) for ch in run}
        theirs = {c for lo, hi in ranges for c in range(lo, hi + 1)}
        lines.append(f'        "{name}": (')
        lines.extend("        " + x for x in packed(to_ranges(ours ^ theirs)))
        lines.append("        ),")
        print(f"{name}: {len(theirs)} code points, {len(ours ^ theirs)} differ from regex {regex.__version__}")
    lines += ["    },", "}", ""]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(
        f"wrote {OUT}: {len(compat)} compat decompositions, {len(compose)} pairs, "
        f"{len(marks)} marks, {len(numeric)} numeric"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
