"""Cross-lingual parity (``compare TOK... --parallel en.txt zh.txt [more.txt]``): how many more
tokens the same text costs in one language than in another (Petrov et al. 2023, "Language
model tokenizers introduce unfairness between languages").

Definitions (one each, also in ``compare --help``):

* the files are **line-aligned**: line *i* of every file is the same text in its language; the
  first file is the **reference** language. Lines are read as ``toktools`` reads text (strict
  UTF-8, cut at ``\\n``; a final ``\\r`` is dropped).
* **tokens** of a line: its tokens without special tokens, truncation or padding.
* the **premium** of a language on a line: its tokens / the reference's tokens. A line counts
  for a language only when both its text and the reference's are non-blank and both have at
  least one token; other lines are **skipped** for that language (counted, not guessed).
* per tokenizer and language: the **mean** and **median** of the premiums of the counted lines,
  and the **total ratio** (their tokens summed / the reference's summed over the same lines).
* **spread** of a tokenizer: its largest mean premium / its smallest, the reference's being 1;
  1 means every language costs the same. The **fairest** tokenizer has the smallest spread (the
  first given on a tie).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toktools.analysis.columns import markdown_table, table
from toktools.errors import ToktoolsError

__all__ = ["LineCountMismatch", "Parity", "Premium", "language_names", "parallel_parity", "read_parallel"]


class LineCountMismatch(ToktoolsError):
    """The parallel files do not have the same number of lines (a usage error: exit 2)."""


@dataclass
class Premium:
    """One language's token premium over the reference for one tokenizer."""

    mean: float | None
    median: float | None
    total_ratio: float | None
    lines: int
    skipped: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": _round(self.mean),
            "median": _round(self.median),
            "total_ratio": _round(self.total_ratio),
            "lines": self.lines,
            "skipped": self.skipped,
        }


@dataclass
class Parity:
    """Every tokenizer's premiums on line-aligned files (see the module docstring)."""

    files: list[str]
    languages: list[str]
    lines: int
    tokens: dict[str, dict[str, int]]  # tokenizer -> language -> tokens over every line
    premiums: dict[str, dict[str, Premium]]  # tokenizer -> language (not the reference) -> premium

    def spread(self, tokenizer: str) -> float | None:
        means = [p.mean for p in self.premiums[tokenizer].values()]
        if not means or any(m is None or m <= 0 for m in means):
            return None
        values = [1.0, *(m for m in means if m is not None)]
        return max(values) / min(values)

    @property
    def fairest(self) -> str | None:
        spreads = [(s, index, name) for index, name in enumerate(self.premiums) if (s := self.spread(name)) is not None]
        return min(spreads)[2] if spreads else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "languages": self.languages,
            "reference": self.languages[0],
            "lines": self.lines,
            "tokenizers": {
                name: {
                    "tokens": self.tokens[name],
                    "premium": {language: p.to_dict() for language, p in self.premiums[name].items()},
                    "spread": _round(self.spread(name)),
                }
                for name in self.premiums
            },
            "fairest": self.fairest,
        }

    def render_plain(self, markdown: bool = False) -> str:
        """One table (the same renderers as the other tables; ``markdown``: in Markdown), then
        the fairest tokenizer."""
        reference = self.languages[0]
        header = ["parity", *(f"{language} tokens" for language in self.languages)]
        for language in self.languages[1:]:
            header += [f"{language}/{reference} mean", f"{language}/{reference} median"]
        header.append("spread")
        body = []
        for name in self.premiums:
            row = [name, *(str(self.tokens[name][language]) for language in self.languages)]
            for language in self.languages[1:]:
                premium = self.premiums[name][language]
                row += [_cell(premium.mean), _cell(premium.median)]
            row.append(_cell(self.spread(name)))
            body.append(row)
        out = f"{self.lines} aligned lines; premium = tokens / {reference} tokens, per line\n\n" + (
            markdown_table if markdown else table
        )(header, body)
        skipped = {p.skipped for each in self.premiums.values() for p in each.values()}
        if skipped != {0}:
            out += (
                "lines skipped (blank, or no tokens, in a language or in the reference): "
                + ", ".join(
                    f"{name} {language} {p.skipped}"
                    for name, each in self.premiums.items()
                    for language, p in each.items()
                )
                + "\n"
            )
        fairest = self.fairest
        if fairest is not None:
            out += f"fairest: {fairest} (spread {self.spread(fairest):.3f}: largest / smallest mean premium)\n"
        return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def language_names(paths: Sequence[str]) -> list[str]:
    """Each file's language label: its name without extensions (``en.txt.gz`` → ``en``), the
    whole name where two would be the same."""
    stems = [Path(path).name.split(".")[0] or Path(path).name for path in paths]
    if len(set(stems)) == len(stems):
        return stems
    from toktools.analysis.labels import short_names

    return short_names(list(paths))


def read_parallel(paths: Sequence[str]) -> list[list[str]]:
    """The lines of every file (without ``\\n`` and a final ``\\r``); files of different line
    counts are refused in one line (:class:`LineCountMismatch`)."""
    from toktools.corpus.reading import read_lines

    if len(paths) < 2:
        raise LineCountMismatch("--parallel needs at least two line-aligned files")
    texts = [[line[:-1] if line.endswith("\r") else line for line in read_lines([path])] for path in paths]
    counts = [len(lines) for lines in texts]
    if len(set(counts)) > 1:
        found = ", ".join(f"{path} {count}" for path, count in zip(paths, counts))
        raise LineCountMismatch(f"the --parallel files must have the same number of lines: {found}")
    if not counts[0]:
        raise LineCountMismatch(f"the --parallel files are empty: {', '.join(paths)}")
    return texts


def _premium(reference: Sequence[int], other: Sequence[int], ref_lines: list[str], lines: list[str]) -> Premium:
    ratios, ref_total, total = [], 0, 0
    for r, o, ref_text, text in zip(reference, other, ref_lines, lines):
        if r > 0 and o > 0 and ref_text.strip() and text.strip():
            ratios.append(o / r)
            ref_total += r
            total += o
    skipped = len(reference) - len(ratios)
    if not ratios:
        return Premium(None, None, None, 0, skipped)
    return Premium(statistics.fmean(ratios), statistics.median(ratios), total / ref_total, len(ratios), skipped)


def parallel_parity(tokenizers: Sequence[tuple[str, Any]], paths: Sequence[str]) -> Parity:
    """The token premiums of every file's language over the first file's, for every tokenizer."""
    from toktools.analysis import token_view
    from toktools.analysis.fast_offsets import offsets_encoder

    texts = read_parallel(paths)
    languages = language_names(paths)
    tokens: dict[str, dict[str, int]] = {}
    premiums: dict[str, dict[str, Premium]] = {}
    for name, tokenizer in tokenizers:
        encode = offsets_encoder(token_view.without_truncation(tokenizer))
        counts = [[len(ids) for ids, _ in encode(lines)] for lines in texts]
        tokens[name] = {language: sum(c) for language, c in zip(languages, counts)}
        premiums[name] = {
            language: _premium(counts[0], counts[k], texts[0], texts[k])
            for k, language in enumerate(languages)
            if k > 0
        }
    return Parity(list(paths), languages, len(texts[0]), tokens, premiums)
