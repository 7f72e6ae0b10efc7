"""Edits of a :class:`Piece` that keep ``tokenizers``' alignments, character for character.

``tokenizers`` changes a ``NormalizedString`` through one primitive, ``transform``: a stream of
``(char, change)`` where ``change`` is ``0`` (the char replaces the next old one), ``1`` (a new
char, aligned with the previous old char) or ``-n`` (replaces the next old one and removes ``n``
more). Every normaliser (NFC, Lowercase, Replace, Strip, …) and Metaspace are written in terms of
it, so reproducing the stream (:func:`transform_ranges`) reproduces the offsets, quirks included.

A piece's ``base`` is the origin of its original text (``tokenizers``' ``original_shift``): a new
char inserted before everything is aligned with ``(base, base)``, and ``Metaspace`` with
``prepend_scheme="first"`` prepends only when ``base == 0``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from toktools.parts.base import Piece, Span

Change = tuple[str, int]


def keep_where(piece: Piece, keep: list[bool]) -> Piece:
    """``NormalizedString::filter``: kept chars keep their own spans."""
    if all(keep):
        return piece
    spans = piece.all_spans()
    idx = [i for i, k in enumerate(keep) if k]
    return Piece("".join(piece.text[i] for i in idx), [spans[i] for i in idx], piece.base)


def prepend(piece: Piece, s: str) -> Piece:
    """``NormalizedString::prepend``: every new char is aligned with the first char."""
    if not piece.text or not s:
        return piece
    first = piece.span_of(0)
    spans = [first] * len(s) + piece.all_spans()
    return Piece(s + piece.text, spans, piece.base)


def replace_matches(piece: Piece, matches: Iterable[tuple[int, int]], content: str) -> Piece:
    """``NormalizedString::replace`` for the given non-overlapping ``[start, end)`` matches.

    The content of a match is aligned with the match's last char (with the char before an empty
    match, or ``(base, base)`` at the very start), as ``transform_range`` does."""
    spans = piece.all_spans()
    text = piece.text
    out_text: list[str] = []
    out_spans: list[Span] = []
    prev = 0
    changed = False
    for start, end in matches:
        changed = True
        out_text.append(text[prev:start])
        out_spans.extend(spans[prev:start])
        if content:
            if end > start:
                span = spans[end - 1]
            elif out_spans:
                span = out_spans[-1]
            else:
                span = (piece.base, piece.base)
            out_text.append(content)
            out_spans.extend([span] * len(content))
        prev = end
    if not changed:
        return piece
    out_text.append(text[prev:])
    out_spans.extend(spans[prev:])
    return Piece("".join(out_text), out_spans, piece.base)


def cut(piece: Piece, start: int, end: int) -> Piece:
    """``NormalizedString::slice`` by normalised offsets: the slice's origin is where its first
    char came from (its ``original_shift``)."""
    if piece.spans is None:
        return Piece(piece.text[start:end], None, piece.base + start)
    spans = piece.spans[start:end]
    return Piece(piece.text[start:end], spans, spans[0][0] if spans else piece.base)


# --------------------------------------------------------------------------------------------
# Splitting a piece on matches, with SplitDelimiterBehavior
# --------------------------------------------------------------------------------------------

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
Match = tuple[tuple[int, int], bool]


def split_by(piece: Piece, matches: list[Match], behavior: str) -> list[Piece]:
    """``NormalizedString::split``: ``matches`` cover the text in order, each flagged as a match
    (delimiter) or not; ``behavior`` says what becomes of the delimiters. Empty pieces drop."""
    splits: list[list] = []  # [start, end, remove]
    if behavior == "Isolated":
        splits = [[s, e, False] for (s, e), _ in matches]
    elif behavior == "Removed":
        splits = [[s, e, m] for (s, e), m in matches]
    elif behavior == "Contiguous":
        previous = False
        for (s, e), m in matches:
            if m == previous and splits:
                splits[-1][1] = e
            else:
                splits.append([s, e, False])
            previous = m
    elif behavior == "MergedWithPrevious":
        previous = False
        for (s, e), m in matches:
            if m and not previous and splits:
                splits[-1][1] = e
            else:
                splits.append([s, e, False])
            previous = m
    elif behavior == "MergedWithNext":
        previous = False
        for (s, e), m in reversed(matches):
            if m and not previous and splits:
                splits[-1][0] = s
            else:
                splits.append([s, e, False])
            previous = m
        splits.reverse()
    else:  # pragma: no cover - from_json validates
        raise ValueError(behavior)
    return [cut(piece, s, e) for s, e, remove in splits if not remove and e > s]


def char_matches(text: str, is_delimiter) -> list[Match]:
    """The ``Fn(char) -> bool`` pattern: every matching char is its own match."""
    if not text:
        return [((0, 0), False)]
    out: list[Match] = []
    last = 0
    for i, ch in enumerate(text):
        if is_delimiter(ch):
            if last < i:
                out.append(((last, i), False))
            out.append(((i, i + 1), True))
            last = i + 1
    if last < len(text):
        out.append(((last, len(text)), False))
    return out


def invert(matches: list[Match]) -> list[Match]:
    return [(span, not m) for span, m in matches]


def transform_ranges(piece: Piece, edits: Iterable[tuple[int, int, list[Change]]]) -> Piece:
    """Several ``NormalizedString::transform_range`` calls on disjoint, ascending
    ``[start, end)`` ranges at once (each stream consumes exactly its range)."""
    if piece.spans is None:
        b = piece.base
        spans: Sequence[Span] = list(zip(range(b, b + len(piece.text)), range(b + 1, b + len(piece.text) + 1)))
    else:
        spans = piece.spans
    text = piece.text
    out_text: list[str] = []
    out_spans: list[Span] = []
    prev = 0
    for start, end, items in edits:
        out_text.append(text[prev:start])
        out_spans.extend(spans[prev:start])
        offset = start
        for ch, change in items:
            if change > 0:
                out_spans.append(spans[offset - 1] if offset >= 1 else (piece.base, piece.base))
            else:
                out_spans.append(spans[offset])
                offset += 1 - change
            out_text.append(ch)
        prev = end
    if prev == 0 and not out_text:
        return piece
    out_text.append(text[prev:])
    out_spans.extend(spans[prev:])
    return Piece("".join(out_text), out_spans, piece.base)
