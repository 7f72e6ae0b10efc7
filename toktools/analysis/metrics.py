"""Segmentation metrics of one tokenizer on one text, and their plain-text table (definitions,
one each, in :mod:`toktools.analysis.segstats`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.columns import markdown_table, table
from toktools.analysis.plain_data import ratio
from toktools.analysis.segstats import (
    COMMON_CHARACTERS,
    HIGH_UNK_RATE,
    THRESHOLDS,
    WELL_USED,
    Document,
    SegmentStats,
    Tally,
)
from toktools.tokenizer import Tokenizer

__all__ = ["Metrics", "encoding_metrics", "render_metrics_plain", "segment_metrics", "segmentation_line", "warnings_of"]

#: One tokenizer's statistics on a text or a corpus (definitions in :mod:`toktools.analysis.segstats`).
Metrics = SegmentStats


def encoding_metrics(tokenizer: Tokenizer, text: str, encoding: Any) -> Metrics:
    """:func:`segment_metrics` of a text already encoded (without special tokens)."""
    tally = Tally(tokenizer)
    tally.add(Document(text), encoding.ids, encoding.offsets)
    return tally.stats()


def segment_metrics(tokenizer: Tokenizer, text: str) -> Metrics:
    """Tokens, chars/token, bytes/token, tokens/word, split words, UNK rate and byte pieces of
    ``tokenizer`` on ``text``, taken as one document (see :mod:`toktools.analysis.segstats`)."""
    return encoding_metrics(tokenizer, text, token_view.encode_plain(tokenizer, text))


_METRIC_COLUMNS = (
    ("tokens", "tokens", "{:d}"),
    ("chars_per_token", "chars/token", "{:.2f}"),
    ("chars_per_token_known", "chars/token known", "{:.2f}"),
    ("bytes_per_token", "bytes/token", "{:.2f}"),
    ("tokens_per_word", "tokens/word", "{:.2f}"),
    ("split_share", "split words", "{:.1%}"),
    ("unk_rate", "UNK", "{:.2%}"),
    ("fallback_rate", "byte fallback", "{:.2%}"),
    ("byte_piece_share", "byte pieces", "{:.2%}"),
)


def segmentation_line(metrics: Mapping[str, Metrics]) -> str:
    """What the words of tokens/word and split words are, e.g. ``words: whitespace + jieba
    (4,918 by whitespace, 12,230 by jieba's dictionary)``."""
    first = next(iter(metrics.values()), None)
    if first is None:
        return "words: -"
    made = {"whitespace": "by whitespace", "jieba": "by jieba's dictionary", "per character": "one per character"}
    parts = [
        f"{first.segmentation.get(name, 0):,} {what}" for name, what in made.items() if first.segmentation.get(name)
    ]
    return f"words: {first.segmentation_name}" + (f" ({', '.join(parts)})" if len(parts) > 1 else "")


def warnings_of(metrics: Mapping[str, Metrics]) -> list[str]:
    """One line per tokenizer whose UNK rate is ``HIGH_UNK_RATE`` or more: it loses text, and
    its chars/token counts the text it lost."""
    lines = []
    for name, m in metrics.items():
        rate = m.unk_rate
        if rate is not None and rate >= HIGH_UNK_RATE:
            known = m.chars_per_token_known
            lines.append(
                f"warning: {name}: {rate:.1%} of its tokens are unknown (UNK), characters lost: {m.unk_chars:,}; "
                f"chars/token {m.chars_per_token:.2f} counts them, on known text it is "
                + ("-" if known is None else f"{known:.2f}")
            )
    return lines


def render_metrics_plain(
    metrics: Mapping[str, Metrics], lengths: bool = False, vocabulary: bool = False, markdown: bool = False
) -> str:
    """A plain-text table, one row per tokenizer (``-`` where a ratio is undefined); with
    ``lengths``, a second table of sequence lengths per document (special tokens included); with
    ``vocabulary``, a third of how evenly and how much of the vocabulary is used. ``markdown``:
    the same tables in Markdown, separated by blank lines."""
    table = markdown_table if markdown else _plain_table
    header = ["tokenizer"] + [title for _, title, _ in _METRIC_COLUMNS]
    body = []
    for name, m in metrics.items():
        row = [name]
        for attribute, _, fmt in _METRIC_COLUMNS:
            value = getattr(m, attribute)
            row.append("-" if value is None else fmt.format(value))
        body.append(row)
    out = table(header, body)
    if lengths:
        header = ["sequence length", "documents", "+specials", "p50", "p90", "p99", "max"] + [
            f">{n}" for n in THRESHOLDS
        ]
        body = []
        for name, m in metrics.items():
            cells = [
                m.length_percentile(50),
                m.length_percentile(90),
                m.length_percentile(99),
                max(m.sequence_lengths, default=None),
            ]
            row = [name, str(m.documents), str(m.specials_per_sequence)] + ["-" if c is None else str(c) for c in cells]
            row += ["-" if m.over(n) is None else f"{m.over(n):.1%}" for n in THRESHOLDS]
            body.append(row)
        out += "\n" + table(header, body)
    if vocabulary:
        out += "\n" + _vocabulary_table(metrics, table)
    return out


_plain_table = table


def _vocabulary_table(metrics: Mapping[str, Metrics], table: Any = _plain_table) -> str:
    alpha = next(iter(metrics.values())).renyi_alpha if metrics else 2.5
    header = ["vocabulary", "size", "seen", f"seen ≥{WELL_USED}", f"Rényi eff. (α={alpha:g})", "Shannon eff."]
    common = any(m.common_considered for m in metrics.values())
    if common:
        header.append(f"top {COMMON_CHARACTERS:,} zh chars as 1 token")
    body = []
    for name, m in metrics.items():
        seen, well = ratio(m.seen, m.vocab_size), ratio(m.seen_well, m.vocab_size)
        cells = [
            str(m.vocab_size),
            "-" if seen is None else f"{seen:.1%}",
            "-" if well is None else f"{well:.1%}",
            "-" if m.renyi_efficiency is None else f"{m.renyi_efficiency:.4f}",
            "-" if m.shannon_efficiency is None else f"{m.shannon_efficiency:.4f}",
        ]
        if common:
            share = m.common_share
            cells.append("-" if share is None else f"{share:.1%} of {m.common_considered:,}")
        body.append([name] + cells)
    return table(header, body)
