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


#: Okabe–Ito: eight colours told apart with every common colour-vision deficiency (then repeated).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _token_length_shares(m: SegmentStats) -> list[float]:
    """% of all tokens: UNK, byte pieces, 1, 2, …, 16+ characters (UNK is its own bar: the
    length histogram leaves unknowns out, which would flatter a tokenizer full of them)."""
    counts = [m.unk_count, *_capped(m.token_lengths, _TOKEN_LENGTH_CAP)]
    total = sum(counts) or 1
    return [c / total * 100 for c in counts]


def plot_comparison(metrics: Mapping[str, SegmentStats], path: str | Path) -> Path:
    """A picture that stays readable with 2–10 tokenizers: one row per tokenizer in the first two
    panels (sequence-length percentiles against the 512 line; words cut into 1, 2, … 6+ tokens as
    one stacked bar), then the token-length distribution as small multiples, one panel per
    tokenizer on a shared scale, with UNK and byte pieces as their own bars."""
    from toktools.analysis.labels import short_names

    plt = require_matplotlib()
    path = Path(path)
    names = short_names(list(metrics))
    stats = list(metrics.values())
    n = max(len(stats), 1)
    columns = min(n, 4)
    grid_rows = math.ceil(n / columns)
    row_height = 0.42
    top_height = max(2.2, 0.9 + row_height * n)
    figure = plt.figure(figsize=(13, top_height + 2.6 * grid_rows + 0.6), layout="constrained")
    upper, lower = figure.subfigures(2, 1, height_ratios=[top_height, 2.6 * grid_rows + 0.6])
    lengths, per_word = upper.subplots(1, 2)
    cells = lower.subplots(grid_rows, columns, sharey=True, squeeze=False).flatten()
    y = list(range(n))[::-1]  # the first tokenizer on top

    for row, m, index in zip(y, stats, range(n)):
        if not m.sequence_lengths:
            continue
        p50, p90, p99 = (m.length_percentile(q) for q in (50, 90, 99))
        longest = max(m.sequence_lengths)
        lengths.plot([p50, longest], [row, row], color=_colour(index), linewidth=1.2, alpha=0.6)
        lengths.plot([p50, p99], [row, row], color=_colour(index), linewidth=5, solid_capstyle="butt")
        lengths.plot([p50], [row], "o", color="white", markeredgecolor=_colour(index), markersize=8, zorder=3)
        lengths.plot([p90], [row], "|", color="black", markersize=12, zorder=3)
        lengths.plot([longest], [row], "x", color=_colour(index), markersize=6)
        lengths.text(longest, row, f"  {longest}", va="center", fontsize="x-small")
    lengths.axvline(512, color="black", linestyle="--", linewidth=1)
    lengths.text(512, 1.0, "512", transform=lengths.get_xaxis_transform(), ha="center", va="bottom", fontsize="small")
    lengths.set_xscale("log")
    lengths.set_yticks(y)
    lengths.set_yticklabels(names)
    lengths.set_ylim(-0.6, n - 0.4)
    lengths.set_xlabel("tokens per document (special tokens included)")
    lengths.set_title("Sequence length: ○ p50, | p90, bar to p99, × longest", fontsize="medium", pad=14)
    lengths.margins(x=0.15)

    labels = [str(k) for k in range(1, _TOKENS_PER_WORD_CAP)] + [f"{_TOKENS_PER_WORD_CAP}+"]
    shades = plt.get_cmap("cividis")  # sequential and colour-blind safe: more pieces, lighter
    left = [0.0] * n
    for k, label in enumerate(labels):
        widths = []
        for m in stats:
            counts = _capped(m.tokens_per_word_histogram, _TOKENS_PER_WORD_CAP)[1:]
            widths.append(counts[k] / (sum(counts) or 1) * 100)
        per_word.barh(y, widths, left=left, color=shades(k / (len(labels) - 1)), label=label, edgecolor="white")
        left = [a + b for a, b in zip(left, widths)]
    for row, m in zip(y, stats):
        per_word.text(101, row, f"{m.tokens_per_word or 0:.2f}/word", va="center", fontsize="x-small")
    per_word.set_yticks(y)
    per_word.set_yticklabels(names)
    per_word.set_ylim(-0.6, n - 0.4)
    per_word.set_xlim(0, 100)
    per_word.set_xlabel("% of words, by the number of tokens they are cut into")
    per_word.set_title("Tokens per word", fontsize="medium", pad=14)
    per_word.legend(
        ncol=len(labels),
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        fontsize="x-small",
        frameon=False,
        handlelength=1.2,
        columnspacing=0.8,
        borderaxespad=0.2,
    )
    per_word.title.set_position((0.5, 1.06))

    tick_labels = ["UNK", "byte"] + [str(k) for k in range(1, _TOKEN_LENGTH_CAP)] + [f"{_TOKEN_LENGTH_CAP}+"]
    shown_ticks = [0, 1, 2, 5, 9, 13, len(tick_labels) - 1]  # 1, 4, 8, 12 and 16+: no labels collide
    shares = [_token_length_shares(m) for m in stats]
    top = max((max(s) for s in shares), default=1) * 1.15
    for axis in cells[n:]:
        axis.set_visible(False)
    for index, (name, m, values, axis) in enumerate(zip(names, stats, shares, cells)):
        colours = ["#B22222", "#777777"] + [_colour(index)] * (len(values) - 2)
        bars = axis.bar(range(len(values)), values, color=colours, width=0.8)
        bars[1].set_hatch("///")
        bars[1].set_facecolor("white")
        bars[1].set_edgecolor("#555555")
        if m.unk_count:
            axis.text(0, values[0], f"{values[0]:.1f}", ha="center", va="bottom", fontsize="x-small", color="#B22222")
        axis.set_xticks(shown_ticks)
        axis.set_xticklabels([tick_labels[t] for t in shown_ticks], fontsize="x-small")
        for label in axis.get_xticklabels()[:2]:  # side by side, "UNK" and "byte" would collide
            label.set_rotation(90)
        axis.set_ylim(0, top)
        axis.tick_params(axis="y", labelsize="x-small")
        axis.set_title(f"{name}: {m.chars_per_token or 0:.2f} chars/token", fontsize="small")
        if index % columns == 0:
            axis.set_ylabel("% of tokens", fontsize="small")
    lower.supxlabel(
        "Token length in characters (spaces around it not counted); UNK = unknown token, byte = piece of a character",
        fontsize="small",
    )
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
    from toktools.analysis.labels import short_name

    shown_name = short_name(name) if name else ""
    lengths.set_title(
        f"Token length{' — ' + shown_name if shown_name else ''} ({stats.counted} entries, specials left out)"
    )

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
