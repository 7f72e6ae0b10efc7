"""Segmentation metrics of one tokenizer on one text, and their plain-text table (definitions,
one each, in :mod:`toktools.analysis.segstats`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.columns import table
from toktools.analysis.plain_data import ratio
from toktools.analysis.segstats import THRESHOLDS, WELL_USED, Document, SegmentStats, Tally
from toktools.tokenizer import Tokenizer

__all__ = ["Metrics", "encoding_metrics", "render_metrics_plain", "segment_metrics"]

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
    ("bytes_per_token", "bytes/token", "{:.2f}"),
    ("tokens_per_word", "tokens/word", "{:.2f}"),
    ("split_share", "split words", "{:.1%}"),
    ("unk_rate", "UNK", "{:.2%}"),
    ("byte_piece_share", "byte pieces", "{:.2%}"),
)


def render_metrics_plain(metrics: Mapping[str, Metrics], lengths: bool = False, vocabulary: bool = False) -> str:
    """A plain-text table, one row per tokenizer (``-`` where a ratio is undefined); with
    ``lengths``, a second table of sequence lengths per document (special tokens included); with
    ``vocabulary``, a third of how evenly and how much of the vocabulary is used."""
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
        out += "\n" + _vocabulary_table(metrics)
    return out


def _vocabulary_table(metrics: Mapping[str, Metrics]) -> str:
    alpha = next(iter(metrics.values())).renyi_alpha if metrics else 2.5
    header = ["vocabulary", "size", "seen", f"seen ≥{WELL_USED}", f"Rényi eff. (α={alpha:g})", "Shannon eff."]
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
        body.append([name] + cells)
    return table(header, body)
