"""An alignment (:class:`~toktools.analysis.alignment.Alignment`) drawn as plain text: one row per
tokenizer in display columns, the differing regions marked, long lines wrapped at token
boundaries, an optional block of UTF-8 bytes, and a legend of the marks used."""

from __future__ import annotations

from dataclasses import dataclass

from toktools.analysis import token_view
from toktools.analysis.alignment_rows import AlignedText, ByteMap, SegmentationRow
from toktools.analysis.columns import char_width, pad, text_width

__all__ = ["legend_lines", "render_alignment"]


def _visible(ch: str, after_cut: bool) -> str:
    """How one character is drawn: a space as a space, invisible characters (other whitespace,
    controls, zero-width and format characters such as ZWJ) as escapes (``\\n``, ``\\u200d``),
    a combining mark that starts a column on a dotted circle."""
    if ch == " ":
        return " "
    escaped = token_view.escape_char(ch)
    if escaped != ch:
        return escaped
    if char_width(ch) == 0:
        return ("◌" + ch) if after_cut else ch
    return ch


@dataclass
class _Column:
    """One column of the drawing: a character (or its bytes) in every row, or a gutter."""

    width: int
    cells: list[str]  # one per line of the block (already padded to ``width``)
    gutter: bool = False  # a place where a line may be wrapped


def _lay_out(labels: list[str], columns: list[_Column], width: int | None, label_width: int) -> list[str]:
    """Label column + the columns, wrapped into blocks of at most ``width`` display columns
    (each block starting at a gutter when one is in reach, so tokens are cut between
    boundaries rather than anywhere)."""
    room = None if width is None else max(width - label_width, 8)
    blocks: list[list[_Column]] = [[]]
    used = 0
    for column in columns:
        block = blocks[-1]
        if room is not None and block and used + column.width > room:
            cut = max((i for i, c in enumerate(block) if c.gutter and i > 0), default=len(block))
            if sum(c.width for c in block[cut:]) + column.width > room:  # no gutter near enough
                cut = len(block)
            blocks[-1], carried = block[:cut], block[cut:]
            blocks.append(carried)
            used = sum(c.width for c in carried)
        blocks[-1].append(column)
        used += column.width
    lines: list[str] = []
    for number, block in enumerate([b for b in blocks if b] or [[]]):
        if number:
            lines.append("")
        for line_index, label in enumerate(labels):
            body = "".join(column.cells[line_index] for column in block)
            lines.append((pad(label, label_width) + body).rstrip())
    return lines


def _filler(text: str, position: int) -> str:
    """What a row draws in a gutter where it does not cut (another row does): a space next to
    a space, else ``·`` so a word stays visibly one token (``|Anarch·ism|``)."""
    if 0 < position < len(text) and not text[position - 1].isspace() and not text[position].isspace():
        return "·"
    return " "


def _cuts_inside(row: SegmentationRow, bmap: ByteMap) -> dict[int, set[int]]:
    """Characters a row cuts inside (between byte-level tokens): char → byte offsets of the cuts."""
    cuts: dict[int, set[int]] = {}
    for span in row.spans:
        for b in (span.byte_start, span.byte_end):
            if b not in bmap.starts:
                cuts.setdefault(bmap.char_of_byte[b], set()).add(b)
    return cuts


def _char_block(alignment: AlignedText, bmap: ByteMap) -> tuple[list[str], list[_Column], set[str]]:
    """The main view and the legend entries it needs."""
    text = alignment.text
    rows = alignment.rows
    drawn = [set(r.drawn) for r in rows]
    unknown_bounds = [{b for s in r.spans if s.unknown for b in (s.char_start, s.char_end)} for r in rows]
    cuts = [_cuts_inside(r, bmap) for r in rows]
    gutters = set().union(*drawn) if drawn else set()
    in_diff = [False] * (len(text) + 1)
    diff_gutter: set[int] = set()
    for d in alignment.diffs:
        for c in range(d.char_start, d.char_end):
            in_diff[c] = True
        diff_gutter.update(range(d.char_start + 1, d.char_end))
    labels = [r.name for r in rows] + (["diff"] if alignment.diffs else [])
    columns: list[_Column] = []
    for position in range(len(text) + 1):
        if position in gutters:
            cells = [
                "?" if position in u else "|" if position in b else _filler(text, position)
                for b, u in zip(drawn, unknown_bounds)
            ]
            if alignment.diffs:
                cells.append("^" if position in diff_gutter else " ")
            columns.append(_Column(1, cells, gutter=True))
        if position == len(text):
            break
        w, cells = _char_cells(_visible(text[position], position in gutters), position, cuts, bmap)
        if alignment.diffs:
            cells.append("^" * w if in_diff[position] else " " * w)
        columns.append(_Column(w, cells))
    return labels, columns, _marks_used(alignment, bmap, unknown_bounds, cuts)


def _char_cells(glyph: str, position: int, cuts: list[dict[int, set[int]]], bmap: ByteMap) -> tuple[int, list[str]]:
    """One character's width and its cell in every row: the glyph, or, in a row that cuts inside
    the character, its UTF-8 bytes with ``¦`` at the cut."""
    if not any(position in row_cuts for row_cuts in cuts):
        return text_width(glyph), [glyph] * len(cuts)
    b0, b1 = bmap.char_start[position], bmap.char_start[position + 1]
    w = max(text_width(glyph), 3 * (b1 - b0) - 1)
    cells = []
    for row_cuts in cuts:
        inside = row_cuts.get(position)
        cells.append(pad(glyph if inside is None else _hex_with_cuts(bmap.data[b0:b1], b0, inside, "¦"), w))
    return w, cells


def _hex_with_cuts(raw: bytes, start: int, cuts: set[int], mark: str) -> str:
    """``E6 88¦91``: one character's bytes (the first at byte offset ``start``) as hex, with
    ``mark`` instead of the space before each byte where a token starts."""
    hexes = [f"{x:02X}" for x in raw]
    return hexes[0] + "".join((mark if start + k in cuts else " ") + h for k, h in enumerate(hexes[1:], start=1))


def _marks_used(
    alignment: AlignedText, bmap: ByteMap, unknown_bounds: list[set[int]], cuts: list[dict[int, set[int]]]
) -> set[str]:
    """The marks the main view draws, for the legend (keys of :data:`_LEGEND`)."""
    used: set[str] = {"|"}
    if alignment.diffs:
        used.add("^")
    if any(unknown_bounds):
        used.add("?")
    if any(cuts):
        used.add("cut")
    if any(ch != " " and token_view.escape_char(ch) != ch for ch in alignment.text):
        used.add("escape")
    if any(
        s.byte_start < s.byte_end and bmap.core(s.byte_start, s.byte_end) != (s.byte_start, s.byte_end)
        for r in alignment.rows
        for s in r.spans
    ):
        used.add("space")
    return used


def _byte_block(alignment: AlignedText, bmap: ByteMap) -> tuple[list[str], list[_Column]]:
    """The byte view: each multi-byte character as its hex bytes (under the character), with
    ``|`` where a tokenizer cuts — between characters in the gutters, inside a character in
    place of the space between two bytes (``E6 88|91``). One-byte characters stay as they are."""
    text = alignment.text
    rows = alignment.rows
    bounds = [set(r.byte_boundaries) for r in rows]
    gutter_bytes = {b for s in bounds for b in s if b in bmap.starts}
    labels = ["bytes"] + [r.name for r in rows]

    def multi(position: int) -> bool:
        return bmap.char_start[position + 1] - bmap.char_start[position] > 1

    columns: list[_Column] = []
    for position in range(len(text) + 1):
        b = bmap.char_start[position]
        if b in gutter_bytes:
            columns.append(_Column(1, [" "] + ["|" if b in s else " " for s in bounds], gutter=True))
        elif 0 < position < len(text) and (multi(position - 1) or multi(position)):
            columns.append(_Column(1, [" "] * (len(bounds) + 1)))  # keeps neighbours' hex apart
        if position == len(text):
            break
        raw = bmap.data[b : bmap.char_start[position + 1]]
        glyph = _visible(text[position], b in gutter_bytes)
        if len(raw) == 1:
            columns.append(_Column(text_width(glyph), [glyph] * (len(bounds) + 1)))
            continue
        w = max(text_width(glyph), 3 * len(raw) - 1)
        cells = [pad(glyph, w)]
        cells += [pad(_hex_with_cuts(raw, b, s, "|"), w) for s in bounds]
        columns.append(_Column(w, cells))
    return labels, columns


_LEGEND = (
    ("|", "| token boundary   · no boundary here (another tokenizer cuts)"),
    ("space", "| cut| a space drawn inside bars belongs to that token (GPT-2's Ġ)"),
    ("^", "^ the tokenizers cut this region differently"),
    ("?", "?…? an unknown token (UNK): the text between ? is lost"),
    ("cut", "E6 88¦91 a character cut between byte-level tokens (at ¦), shown as its UTF-8 bytes"),
    ("escape", "\\n \\u200d invisible characters, escaped"),
)


def legend_lines(used: set[str]) -> list[str]:
    """The legend for the marks in ``used`` (``|``, ``space``, ``^``, ``?``, ``cut``, ``escape``)."""
    entries = [text for key, text in _LEGEND if key in used]
    return [("legend  " if i == 0 else "        ") + entry for i, entry in enumerate(entries)]


def render_alignment(alignment: AlignedText, width: int | None, byte_view: bool, legend: bool = True) -> str:
    """What :meth:`Alignment.render_plain <toktools.analysis.alignment.Alignment.render_plain>` draws."""
    if not alignment.rows:
        return ""
    bmap = ByteMap(alignment.text)
    labels, columns, used = _char_block(alignment, bmap)
    blocks = [(labels, columns)]
    if byte_view:
        blocks.append(_byte_block(alignment, bmap))
    label_width = max(text_width(label) for labels, _ in blocks for label in labels) + 2
    lines: list[str] = []
    for labels, columns in blocks:
        if lines:
            lines.append("")
        lines.extend(_lay_out(labels, columns, width, label_width))
    if legend:
        lines += [""] + legend_lines(used)
    return "\n".join(lines) + "\n"
