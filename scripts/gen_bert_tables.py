#!/usr/bin/env python3
"""Regenerate ``toktools/tables/bert.py`` from HuggingFace ``tokenizers``.

``tokenizers`` builds BertNormalizer/BertPreTokenizer on Unicode tables of several vintages (old
``unicode_categories`` for Cc/Cf/Co/Mn/P*, an old NFD table, Rust std's Unicode 16 for whitespace
and lowercase; see ../shared/spec/wordpiece.md §2.6). Python's ``unicodedata`` matches none of
them exactly, so toktools ships tables measured from ``tokenizers`` itself: every Unicode scalar
value (0..0x10FFFF minus surrogates) is pushed through each normalizer step on its own and through
the pre-tokenizer, in a few large batched calls.

Batching trick: code points are joined with a separator that every step leaves alone and that is
a canonical starter (ccc 0), so NFD reordering cannot cross it. Splitting the output on the
separator must then give exactly one result per code point (checked), and a random sample plus all
"interesting" code points are re-checked one call per code point.

Usage:  python scripts/gen_bert_tables.py [--output toktools/tables/bert.py]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import tokenizers
from tokenizers import normalizers, pre_tokenizers

EXPECTED_TOKENIZERS_VERSION = "0.23.3"
SEP = "|"
# Reference marks for detecting HF's canonical combining class: U+0334 has ccc 1 (the smallest
# non-zero class) and U+0345 has ccc 240 (the largest); both date from Unicode 1.1.
LOW_MARK, HIGH_MARK = "\u0334", "\u0345"
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3

ALL_CODE_POINTS: list[int] = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]

Ranges = list[tuple[int, int]]


def per_char(fn: Callable[[str], str], cps: Sequence[int]) -> dict[int, str]:
    """``fn`` applied to each code point alone, computed with one call on a separated batch."""
    batch = [c for c in cps if chr(c) != SEP]
    parts = fn(SEP.join(map(chr, batch))).split(SEP)
    if len(parts) != len(batch):
        raise AssertionError(f"batching broke: {len(parts)} results for {len(batch)} code points")
    out = dict(zip(batch, parts))
    if ord(SEP) in cps:
        out[ord(SEP)] = fn(SEP)
    return out


def to_ranges(cps: Iterable[int]) -> Ranges:
    """Sorted, merged inclusive ranges."""
    out: Ranges = []
    for c in sorted(set(cps)):
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def hangul_nfd(cp: int) -> str:
    """The algorithmic decomposition of a precomposed Hangul syllable (Unicode §3.12)."""
    s = cp - HANGUL_FIRST
    lead, vowel, trail = 0x1100 + s // 588, 0x1161 + (s % 588) // 28, 0x11A7 + s % 28
    return chr(lead) + chr(vowel) + (chr(trail) if trail != 0x11A7 else "")


def bert(clean: bool, chinese: bool, strip: bool, lower: bool) -> Callable[[str], str]:
    return normalizers.BertNormalizer(
        clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower
    ).normalize_str


def scan_normalizer() -> dict[str, object]:
    """Each BertNormalizer step on its own, per code point."""
    cps = ALL_CODE_POINTS
    clean = per_char(bert(True, False, False, False), cps)
    chinese = per_char(bert(False, True, False, False), cps)
    strip = per_char(bert(False, False, True, False), cps)
    lower = per_char(bert(False, False, False, True), cps)
    nfd = per_char(normalizers.NFD().normalize_str, cps)

    removed = [c for c in cps if clean[c] == ""]
    to_space = [c for c in cps if clean[c] == " " and c != 0x20]
    for c in cps:
        assert clean[c] in ("", " ", chr(c)), (hex(c), clean[c])
    cjk = [c for c in cps if chinese[c] == f" {chr(c)} "]
    for c in cps:
        assert chinese[c] in (chr(c), f" {chr(c)} "), hex(c)

    # NFD output chars are NFD-stable; among those, strip_accents removes exactly HF's Mn set.
    stable = {c for c in cps if nfd[c] == chr(c)}
    for c in cps:
        assert all(ord(ch) in stable for ch in nfd[c]), hex(c)
    mn = {c for c in stable if strip[c] == ""}
    for c in cps:  # strip_accents == NFD, then drop Mn: the runtime relies on this identity
        expect = "".join(ch for ch in nfd[c] if ord(ch) not in mn)
        assert strip[c] == expect, (hex(c), strip[c], expect)
    for c in range(HANGUL_FIRST, HANGUL_LAST + 1):
        assert nfd[c] == hangul_nfd(c), hex(c)
    decomp = {c: nfd[c] for c in cps if nfd[c] != chr(c) and not HANGUL_FIRST <= c <= HANGUL_LAST}
    lowercase = {c: lower[c] for c in cps if lower[c] != chr(c)}
    return {
        "removed": removed,
        "to_space": to_space,
        "cjk": cjk,
        "stable": stable,
        "mn": mn,
        "decomp": decomp,
        "lowercase": lowercase,
        "_single": (clean, chinese, strip, lower, nfd),
    }


def scan_ccc(stable: set[int]) -> list[tuple[int, int, int]]:
    """HF's canonical combining classes, as (start, end, class) for the code points with class > 0.

    Only NFD-stable code points matter (only they occur in NFD output). A char x has class > 0 iff
    NFD moves it: "x LOW" reorders when ccc(x) > 1, "HIGH x" when 0 < ccc(x) < 240. The exact
    classes come from comparing every pair of such chars ("x y" reorders iff ccc(x) > ccc(y)),
    which yields HF's order without trusting any other table; the numeric label is Python's
    ``unicodedata`` value, checked to induce exactly the same order.
    """
    import unicodedata

    nfd = normalizers.NFD().normalize_str
    cands = sorted(c for c in stable if chr(c) not in (SEP, LOW_MARK, HIGH_MARK))

    def reorders(pairs: list[tuple[str, str]]) -> list[bool]:
        out = nfd(SEP.join(a + b for a, b in pairs)).split(SEP)
        assert len(out) == len(pairs)
        for (a, b), o in zip(pairs, out):
            assert o in (a + b, b + a), (a, b, o)
        return [o == b + a for (a, b), o in zip(pairs, out)]

    low = reorders([(chr(c), LOW_MARK) for c in cands])
    high = reorders([(HIGH_MARK, chr(c)) for c in cands])
    marks = [c for c, lo, hi in zip(cands, low, high) if lo or hi] + [ord(LOW_MARK), ord(HIGH_MARK)]
    marks.sort()
    pairs = [(a, b) for a in marks for b in marks if a != b]
    greater = dict(zip(pairs, reorders([(chr(a), chr(b)) for a, b in pairs])))
    # Python's class must induce the same strict order on every pair.
    py = {c: unicodedata.combining(chr(c)) for c in marks}
    bad = [(hex(a), hex(b)) for (a, b), gt in greater.items() if gt != (py[a] > py[b])]
    if bad or any(v == 0 for v in py.values()):
        raise SystemExit(
            f"HF combining classes disagree with unicodedata {unicodedata.unidata_version}: "
            f"{bad[:10]}; run this script on a Python whose Unicode is at least HF's"
        )
    out: list[tuple[int, int, int]] = []
    for c in marks:
        if out and out[-1][1] == c - 1 and out[-1][2] == py[c]:
            out[-1] = (out[-1][0], c, py[c])
        else:
            out.append((c, c, py[c]))
    return out


def scan_pretokenizer() -> tuple[list[int], list[int]]:
    """Whitespace and punctuation code points of BertPreTokenizer.

    Each code point sits between two "a"s: a whitespace char is left out of every piece, a
    punctuation char comes out as a one-char piece, any other char glues to its neighbours.
    """
    cps = ALL_CODE_POINTS
    text = "a" + "a".join(map(chr, cps)) + "a"
    covered = bytearray(len(text))
    alone: set[int] = set()
    for piece, (start, end) in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(text):
        assert piece == text[start:end]
        covered[start:end] = b"\x01" * (end - start)
        if end - start == 1 and start % 2 == 1:
            alone.add(start)
    assert all(covered[i] for i in range(0, len(text), 2)), "a separator went missing"
    whitespace = [c for i, c in enumerate(cps) if not covered[2 * i + 1]]
    punct = [c for i, c in enumerate(cps) if 2 * i + 1 in alone]
    return whitespace, punct


def spot_check(norm: dict[str, object], whitespace: list[int], punct: list[int]) -> int:
    """Re-derive a sample one call per code point, so the batching trick is shown to be sound."""
    clean, chinese, strip, lower, nfd = norm["_single"]  # type: ignore[misc]
    rng = random.Random(20240601)
    interesting = set(norm["removed"]) | set(norm["to_space"]) | set(norm["mn"])  # type: ignore[arg-type]
    interesting |= set(norm["decomp"]) | set(norm["lowercase"]) | set(whitespace) | set(punct)  # type: ignore[arg-type]
    sample = sorted(
        set(rng.sample(ALL_CODE_POINTS, 4000))
        | set(rng.sample(sorted(interesting), 4000))
        | set(range(0x80))
        | set(norm["cjk"][:50])
    )  # type: ignore[index]
    fns = [
        bert(True, False, False, False),
        bert(False, True, False, False),
        bert(False, False, True, False),
        bert(False, False, False, True),
        normalizers.NFD().normalize_str,
    ]
    pre = pre_tokenizers.BertPreTokenizer().pre_tokenize_str
    ws, pu = set(whitespace), set(punct)
    for c in sample:
        ch = chr(c)
        for fn, table in zip(fns, (clean, chinese, strip, lower, nfd)):
            assert fn(ch) == table[c], hex(c)
        pieces = pre("a" + ch + "a")
        if c in ws:
            assert pieces == [("a", (0, 1)), ("a", (2, 3))], hex(c)
        elif c in pu:
            assert pieces == [("a", (0, 1)), (ch, (1, 2)), ("a", (2, 3))], hex(c)
        else:
            assert pieces == [("a" + ch + "a", (0, 3))], hex(c)
    return len(sample)


def _wrapped(items: list[str]) -> list[str]:
    """Items packed into indented rows of at most ~100 characters."""
    lines, row = [], ""
    for item in items:
        if len(row) + len(item) > 99:
            lines.append("    " + row.rstrip())
            row = ""
        row += item
    if row:
        lines.append("    " + row.rstrip())
    return lines


def fmt_ranges(name: str, ranges: Ranges, doc: str) -> str:
    lines = [f"# {doc}", f"{name}: tuple[tuple[int, int], ...] = ("]
    lines += _wrapped([f"(0x{a:04X}, 0x{b:04X}), " for a, b in ranges])
    lines.append(")")
    return "\n".join(lines)


def fmt_map(name: str, mapping: dict[int, str], doc: str) -> str:
    lines = [f"# {doc}", f"{name}: dict[int, str] = {{"]
    lines += _wrapped([f"0x{c:04X}: {ascii(mapping[c])}, " for c in sorted(mapping)])
    lines.append("}")
    return "\n".join(lines)


def render(norm: dict[str, object], ccc: list[tuple[int, int, int]], whitespace: list[int], punct: list[int]) -> str:
    ccc_lines = [
        "# HF canonical combining class (> 0 only) as (first, last, class); every other char has 0.",
        "CCC: tuple[tuple[int, int, int], ...] = (",
    ]
    row = ""
    for a, b, k in ccc:
        item = f"(0x{a:04X}, 0x{b:04X}, {k}), "
        if len(row) + len(item) > 99:
            ccc_lines.append("    " + row.rstrip())
            row = ""
        row += item
    if row:
        ccc_lines.append("    " + row.rstrip())
    ccc_lines.append(")")
    parts = [
        '"""Per-code-point behaviour of HuggingFace tokenizers\' BertNormalizer and BertPreTokenizer.',
        "",
        "GENERATED FILE - do not edit. Regenerate with `python scripts/gen_bert_tables.py`.",
        f"Measured from tokenizers {tokenizers.__version__} by an exhaustive scan of all "
        f"{len(ALL_CODE_POINTS):,} Unicode scalar values;",
        "nothing here depends on the running Python's unicodedata. Ranges are inclusive and sorted.",
        '"""',
        "from __future__ import annotations",
        "",
        f'TOKENIZERS_VERSION = "{tokenizers.__version__}"',
        "",
        fmt_ranges(
            "CLEAN_REMOVED",
            to_ranges(norm["removed"]),  # type: ignore[arg-type]
            "clean_text deletes these (U+0000, U+FFFD and HF's old Cc/Cf/Co minus TAB/LF/CR).",
        ),
        "",
        fmt_ranges(
            "CLEAN_TO_SPACE",
            to_ranges(norm["to_space"]),  # type: ignore[arg-type]
            "clean_text turns these into U+0020 (White_Space chars that were not deleted; not U+0020 itself).",
        ),
        "",
        fmt_ranges(
            "CHINESE",
            to_ranges(norm["cjk"]),  # type: ignore[arg-type]
            "handle_chinese_chars pads these with a space on each side.",
        ),
        "",
        fmt_ranges(
            "NONSPACING_MARKS",
            to_ranges(norm["mn"]),  # type: ignore[arg-type]
            "strip_accents deletes these after NFD (HF's old Mn table, restricted to NFD-stable chars).",
        ),
        "",
        fmt_map(
            "NFD",
            norm["decomp"],  # type: ignore[arg-type]
            "HF's full canonical decomposition of every char it decomposes, except Hangul syllables.",
        ),
        "",
        "# Hangul syllables decompose algorithmically (Unicode §3.12); verified equal to HF by the generator.",
        f"HANGUL_SYLLABLES = (0x{HANGUL_FIRST:04X}, 0x{HANGUL_LAST:04X})",
        "",
        "\n".join(ccc_lines),
        "",
        fmt_map(
            "LOWERCASE",
            norm["lowercase"],  # type: ignore[arg-type]
            "HF's per-char lowercase (Rust std, no final sigma) for every char it changes.",
        ),
        "",
        fmt_ranges(
            "PRETOKENIZER_WHITESPACE",
            to_ranges(whitespace),
            "BertPreTokenizer splits on these and drops them (Rust char::is_whitespace).",
        ),
        "",
        fmt_ranges(
            "PRETOKENIZER_PUNCTUATION",
            to_ranges(punct),
            "BertPreTokenizer isolates these (ASCII punctuation/symbols and HF's old P* categories).",
        ),
        "",
    ]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "toktools" / "tables" / "bert.py"
    parser.add_argument("--output", type=Path, default=default)
    args = parser.parse_args(argv)
    if tokenizers.__version__ != EXPECTED_TOKENIZERS_VERSION:
        print(
            f"warning: tokenizers {tokenizers.__version__}, parity was verified with {EXPECTED_TOKENIZERS_VERSION}",
            file=sys.stderr,
        )
    norm = scan_normalizer()
    ccc = scan_ccc(norm["stable"])  # type: ignore[arg-type]
    whitespace, punct = scan_pretokenizer()
    checked = spot_check(norm, whitespace, punct)
    text = render(norm, ccc, whitespace, punct)
    args.output.write_text(text, encoding="utf-8")
    print(
        f"wrote {args.output} ({len(text.encode()):,} bytes); "
        f"{len(norm['decomp'])} decompositions, {len(norm['lowercase'])} lowercase mappings, "  # type: ignore[arg-type]
        f"{sum(b - a + 1 for a, b, _ in ccc)} chars with ccc>0; {checked} code points re-checked one by one",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
