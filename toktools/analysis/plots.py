"""Pictures of the reports: ``compare --corpus … --plot`` and ``inspect --plot``.

matplotlib is an optional extra (``pip install 'toktools[plot]'``); without it the commands say
so in one line. The figure format follows the file name (.png, .svg, .pdf). Files are written
atomically.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toktools.errors import ToktoolsError

if TYPE_CHECKING:  # pragma: no cover
    from toktools.analysis.segstats import SegmentStats
    from toktools.analysis.vocabulary import VocabStats

__all__ = ["require_matplotlib", "plot_comparison", "plot_vocab"]

_FORMATS = (".png", ".svg", ".pdf")
_TOKENS_PER_WORD_CAP = 6  # 6 stands for "6 or more"
_TOKEN_LENGTH_CAP = 16


def require_matplotlib() -> Any:
    """matplotlib.pyplot with a file-only backend, or a one-line error naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise ToktoolsError("plotting needs matplotlib: pip install 'toktools[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_plot(path: str | Path, inputs: Sequence[str | Path] = ()) -> Path:
    """Before any work: a plot name with a known format, at a place that can be written, never
    over one of ``inputs`` (an existing plot is replaced: the commands that draw have no --force)."""
    path = Path(path)
    if path.suffix.lower() not in _FORMATS:
        raise ToktoolsError(f"{path}: the plot format follows the name; use {', '.join(_FORMATS)}")
    from toktools.io.outputs import check_output_file

    return check_output_file(path, force=True, inputs=inputs, what="plot")


def _save(figure: Any, path: Path) -> None:
    suffix = path.suffix.lower()
    check_plot(path)
    from toktools.io.outputs import publish, temporary_for, unregister_temporary

    try:  # registered: a SIGTERM while matplotlib draws removes it too
        handle, temporary = temporary_for(path)
    except OSError as err:
        raise ToktoolsError(f"cannot write {path}: {err.strerror or err}") from None
    os.close(handle)
    try:
        figure.savefig(temporary, format=suffix[1:], dpi=110, bbox_inches="tight", metadata=_metadata(suffix))
        publish(temporary, path)  # the umask's mode; a device or FIFO is written into
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
        unregister_temporary(temporary)


def _metadata(suffix: str) -> dict[str, Any]:
    """No creation date or software version in the file, so the same data gives the same bytes."""
    if suffix == ".svg":
        return {"Date": None, "Creator": None}
    if suffix == ".pdf":
        return {"CreationDate": None, "Producer": None, "Creator": None}
    return {"Software": None}


def _capped(histogram: Mapping[int, int], cap: int) -> list[int]:
    """Counts for 0, 1, …, cap, the last one holding everything from ``cap`` up."""
    counts = [0] * (cap + 1)
    for value, count in histogram.items():
        counts[min(value, cap)] += count
    return counts


def _grouped_bars(axis: Any, series: Mapping[str, list[float]], labels: list[str]) -> None:
    n = max(len(series), 1)
    width = 0.8 / n
    for index, (name, values) in enumerate(series.items()):
        positions = [x + (index - (n - 1) / 2) * width for x in range(len(labels))]
        axis.bar(positions, values, width=width, label=name)
    axis.set_xticks(range(len(labels)))
    axis.set_xticklabels(labels)


def plot_comparison(metrics: Mapping[str, SegmentStats], path: str | Path) -> Path:
    """Three panels, one series per tokenizer: the distribution of sequence lengths per
    document (log scale, special tokens included) with the 512 line; the share of words cut
    into 1, 2, … tokens; the share of tokens by length in characters (byte pieces at 0)."""
    plt = require_matplotlib()
    path = Path(path)
    figure, (lengths, per_word, token_lengths) = plt.subplots(3, 1, figsize=(9, 11))
    longest = max((max(m.sequence_lengths, default=1) for m in metrics.values()), default=1)
    top = max(longest, 600)
    # integer-aligned bins on a log scale: no empty bins between small whole numbers
    edges = [e - 0.5 for e in sorted({round(math.exp(math.log(top + 1) * i / 60)) for i in range(61)} | {top + 1})]
    for name, m in metrics.items():
        if m.sequence_lengths:
            p99 = m.length_percentile(99)
            lengths.hist(
                list(m.sequence_lengths),
                bins=edges,
                weights=list(m.sequence_lengths.values()),
                histtype="step",
                linewidth=1.6,
                label=f"{name} (p50 {m.length_percentile(50)}, p99 {p99})",
            )
    lengths.axvline(512, color="black", linestyle="--", linewidth=1)
    lengths.text(512, 0.97, " 512", transform=lengths.get_xaxis_transform(), va="top")
    lengths.set_xscale("log")
    lengths.set_xlabel("tokens per document (special tokens included)")
    lengths.set_ylabel("documents")
    lengths.set_title("Sequence length per document")
    lengths.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))

    labels = [str(k) for k in range(1, _TOKENS_PER_WORD_CAP)] + [f"{_TOKENS_PER_WORD_CAP}+"]
    series = {}
    for name, m in metrics.items():
        counts = _capped(m.tokens_per_word_histogram, _TOKENS_PER_WORD_CAP)[1:]
        total = sum(counts) or 1
        series[f"{name} ({m.tokens_per_word or 0:.2f} tokens/word)"] = [c / total * 100 for c in counts]
    _grouped_bars(per_word, series, labels)
    per_word.set_xlabel("tokens in the word")
    per_word.set_ylabel("% of words")
    per_word.set_title("Tokens per word")
    per_word.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))

    labels = ["byte\npiece"] + [str(k) for k in range(1, _TOKEN_LENGTH_CAP)] + [f"{_TOKEN_LENGTH_CAP}+"]
    series = {}
    for name, m in metrics.items():
        counts = _capped(m.token_lengths, _TOKEN_LENGTH_CAP)
        total = sum(counts) or 1
        series[f"{name} ({m.chars_per_token or 0:.2f} chars/token)"] = [c / total * 100 for c in counts]
    _grouped_bars(token_lengths, series, labels)
    token_lengths.set_xlabel("characters in the token (spaces around it not counted)")
    token_lengths.set_ylabel("% of tokens in the corpus")
    token_lengths.set_title("Token length")
    token_lengths.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    figure.tight_layout()
    _save(figure, path)
    plt.close(figure)
    return path


def plot_vocab(stats: VocabStats, path: str | Path, name: str = "") -> Path:
    """Two panels: vocabulary entries by length in characters (and byte pieces), and the script
    mix of the vocabulary (the ten largest scripts; the rest as "other")."""
    plt = require_matplotlib()
    path = Path(path)
    figure, (lengths, scripts) = plt.subplots(1, 2, figsize=(12, 4.5))
    counts = _capped(stats.length_chars, _TOKEN_LENGTH_CAP)
    counts[0] += stats.partial_byte_tokens
    labels = ["byte\npiece"] + [str(k) for k in range(1, _TOKEN_LENGTH_CAP)] + [f"{_TOKEN_LENGTH_CAP}+"]
    if not counts[0]:  # no byte pieces in this vocabulary: no empty bar
        counts, labels = counts[1:], labels[1:]
    lengths.bar(range(len(counts)), counts, color="tab:blue")

    lengths.set_xticks(range(len(labels)))
    lengths.set_xticklabels(labels, fontsize="small")
    lengths.set_xlabel("characters in the token")
    lengths.set_ylabel("vocabulary entries")
    lengths.set_title(f"Token length{' — ' + name if name else ''} ({stats.counted} entries, special tokens left out)")

    ranked = list(stats.scripts.items())
    shown = ranked[:10]
    rest = sum(c for _, c in ranked[10:])
    if rest:
        shown.append(("other", rest))
    shown.reverse()
    total = stats.counted or 1
    scripts.barh([s for s, _ in shown], [c / total * 100 for _, c in shown], color="tab:green")
    for y, (_, c) in enumerate(shown):
        scripts.text(c / total * 100, y, f" {c}", va="center", fontsize="small")
    scripts.set_xlabel("% of the vocabulary")
    scripts.set_title("Script mix")
    scripts.set_xlim(0, max((c / total * 100 for _, c in shown), default=1) * 1.18)
    figure.tight_layout()
    _save(figure, path)
    plt.close(figure)
    return path
