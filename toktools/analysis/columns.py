"""Text laid out in terminal columns: the display width of characters (wide CJK, zero-width
marks) and plain-text tables."""

from __future__ import annotations

import unicodedata

__all__ = ["char_width", "markdown_table", "pad", "table", "text_width"]


def char_width(ch: str) -> int:
    """Columns one character takes: 0 for combining marks, 2 for wide and full-width ones."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(s: str) -> int:
    """Columns a string takes."""
    return sum(char_width(ch) for ch in s)


def pad(s: str, width: int) -> str:
    """``s`` padded with spaces to ``width`` display columns."""
    return s + " " * (width - text_width(s))


def table(header: list[str], body: list[list[str]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(text_width(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first = pad(cells[0], widths[0])
        rest = [" " * (w - text_width(c)) + c for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(header), *[line(r) for r in body]]) + "\n"


def markdown_table(header: list[str], body: list[list[str]]) -> str:
    """The same table as GitHub-flavoured Markdown (for READMEs and papers): the first column
    left-aligned, the others right-aligned; ``|`` in a cell escaped."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rule = "| " + " | ".join([":---", *["---:"] * (len(header) - 1)]) + " |"
    return "\n".join([line(header), rule, *[line(r) for r in body]]) + "\n"
