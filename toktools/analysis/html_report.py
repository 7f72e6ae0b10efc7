"""``compare … --html report.html``: one self-contained HTML page to share a comparison.

The page is rendered from the same dictionary as ``--json`` and is generic over it: every
per-tokenizer figure becomes a table column, every histogram a row of small bar charts (inline
SVG) with its numbers beside it, every shown place a block of coloured token boxes, and any other
key a plain table. So a metric added to the report appears here without work. No network: CSS
is inline, pictures are inline SVG, nothing is fetched.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["render_html", "write_html"]

#: Okabe–Ito: eight colours told apart with every common colour-vision deficiency.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC","PingFang SC","Microsoft YaHei",sans-serif;margin:24px auto;max-width:1200px;
 padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.name,th.name,td.l{text-align:left}td.name,th.name{font-weight:600}
.key{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}
.wrap{overflow-x:auto}td>.wrap{max-width:70vw}.multiples{display:flex;flex-wrap:wrap;gap:10px}
.multiple{border:1px solid #eee;padding:4px;width:220px;display:flex;flex-direction:column}
.multiple svg{margin-top:auto}
.multiple div{font-size:12px;font-weight:600;overflow-wrap:anywhere}
.tokens{font:13px/2.1 ui-monospace,Menlo,Consolas,"Noto Sans Mono CJK SC","Noto Sans CJK SC",monospace;margin:2px 0 10px}
.row{display:flex;gap:8px;align-items:baseline}.row .tokens{flex:1;min-width:0;overflow-wrap:anywhere}
.row .who{flex:0 0 170px;font-weight:600;font-size:12px;overflow-wrap:anywhere}
.t{border:1px solid #8aa;border-radius:3px;padding:1px 2px;margin:0 1px;white-space:pre}
.t0{background:#dbeafe}.t1{background:#fde8c8}.t2{background:#d1f0e4}
.t.partial{background:#f3d6ef;border-style:dashed;border-color:#a04a90}
.t.unk{background:#fbd0c0;border-color:#c0392b;color:#8b1a0a;font-weight:700}
.legend span{margin-right:14px}details{margin:4px 0 12px}summary{cursor:pointer;color:#555}
.text{white-space:pre-wrap;background:#fafafa;border-left:3px solid #ccc;padding:4px 8px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> str:
    """A figure as it is in ``--json`` (so the page holds it exactly), floats trimmed only for display."""
    if isinstance(value, bool) or value is None:
        return _e(value)
    if isinstance(value, float):
        return f'<span title="{value!r}">{value:.4g}</span>' if f"{value:.4g}" != repr(value) else repr(value)
    return _e(value)


def _cell(value: Any) -> str:
    if isinstance(value, (int, float)) or value is None:
        return _number(value)
    if isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(_number(v) if isinstance(v, (int, float)) else _e(v) for v in value)
    if isinstance(value, (dict, list)):
        return f"<code>{_e(json.dumps(value, ensure_ascii=False))}</code>"
    return _e(value)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested figures as ``a.b`` columns; histograms (a dict whose keys are numbers) left out."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if _is_histogram(value):
                continue
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _is_histogram(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(re.fullmatch(r"-?\d+", str(k)) for k in value)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())  # counts, not shares
    )


def _histograms(data: Mapping[str, Any], prefix: str = "") -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if _is_histogram(value):
            found[name] = value
        elif isinstance(value, Mapping):
            found.update(_histograms(value, name + "."))
    return found


def _colours(names: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _metrics_table(metrics: Mapping[str, Mapping[str, Any]], colours: Mapping[str, str]) -> str:
    flat = {name: _flatten(m) for name, m in metrics.items()}
    columns: list[str] = []
    for row in flat.values():
        columns += [c for c in row if c not in columns]
    if len(columns) > 12:  # many figures: one row per figure, one column per tokenizer (no side scrolling)
        keys = "".join(
            f'<th><span class="key" style="background:{colours[name]}"></span>{_e(name).replace("/", "/<wbr>")}</th>'
            for name in flat
        )
        body = "".join(
            f'<tr><td class="name">{_e(c)}</td>'
            + "".join(f"<td>{_cell(row.get(c, ''))}</td>" for row in flat.values())
            + "</tr>"
            for c in columns
        )
        return f'<div class="wrap"><table><tr><th class="name">figure</th>{keys}</tr>{body}</table></div>'
    head = "".join(f"<th>{_e(c).replace('.', '.<wbr>').replace('_', '_<wbr>')}</th>" for c in columns)
    rows = []
    for name, row in flat.items():
        cells = "".join(f"<td>{_cell(row.get(c, ''))}</td>" for c in columns)
        key = f'<span class="key" style="background:{colours[name]}"></span>'
        rows.append(f'<tr><td class="name">{key}{_e(name)}</td>{cells}</tr>')
    return f'<div class="wrap"><table><tr><th class="name">tokenizer</th>{head}</tr>{"".join(rows)}</table></div>'


def _bars_svg(
    items: Sequence[tuple[str, float]],
    colour: str,
    top: float,
    ticks: Sequence[int] = (),
    width: int = 220,
    height: int = 90,
) -> str:
    """One small bar chart (share of the total per bar), on a shared vertical scale ``top``.
    Bars labelled ``UNK`` are red with their share written above, ``byte`` bars dashed grey
    (as in ``--plot``); ``ticks`` are the bars labelled under the axis (first and last if none)."""
    total = sum(v for _, v in items) or 1.0
    n = len(items)
    bar = (width - 10) / max(n, 1)
    lines = 2 if any(label == "byte" for label, _ in items) and 1 in ticks else 1  # "UNK" over "byte" would collide
    parts = [f'<svg width="{width}" height="{height + 4 + 12 * lines}" role="img">']
    parts.append(f'<line x1="0" y1="{height}" x2="{width}" y2="{height}" stroke="#999"/>')
    for i, (k, v) in enumerate(items):
        h = (v / total) / (top or 1) * (height - 14)
        x = 5 + i * bar
        fill, extra = colour, ""
        if k == "UNK":
            fill, extra = _UNK_COLOUR, ' class="unk-bar"'
        elif k == "byte":
            fill, extra = "#eee", ' class="byte-bar" stroke="#555" stroke-width="0.8" stroke-dasharray="2,1"'
        parts.append(
            f'<rect x="{x:.1f}" y="{height - h:.1f}" width="{max(bar - 1, 0.6):.1f}" height="{h:.1f}"'
            f' fill="{fill}"{extra}><title>{_e(_BAR_NAMES.get(k, k))}: {_e(v if v != int(v) else int(v))}'
            f" ({v / total:.1%})</title></rect>"
        )
        if k == "UNK" and v:
            parts.append(
                f'<text x="{x:.1f}" y="{height - h - 2:.1f}" font-size="9" fill="{_UNK_COLOUR}">{v / total:.1%}</text>'
            )
    labelled = list(ticks) or ([0, n - 1] if n > 1 else [0] if n else [])
    for i in labelled:
        label = items[i][0].split("–")[0] if i == 0 and not ticks else items[i][0]
        x = 5 + (i + 0.5) * bar
        anchor = "start" if i == 0 and not ticks else "end" if i == n - 1 and not ticks else "middle"
        x = 4 if anchor == "start" else width - 4 if anchor == "end" else x
        colour_attr = f' fill="{_UNK_COLOUR}"' if items[i][0] == "UNK" else ""
        parts.append(
            f'<text x="{x:.1f}" y="{height + (24 if lines == 2 and i == 1 else 12)}" font-size="10"'
            f' text-anchor="{anchor}"{colour_attr}>{_e(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _binned(
    items: list[tuple[int, float]], total: float, limit: int = 40, scale: list[tuple[int, float]] | None = None
) -> list[tuple[str, float]]:
    """At most ``limit`` bars, labelled by the values they hold: many distinct values (sequence
    lengths) go into equal-width bins up to the 99th percentile and one last bar for the rest,
    so a long outlier does not squeeze the others into a line (exact numbers stay in the table).
    ``scale`` (all panels' values together) chooses the bins, so every panel has the same x axis."""
    scale = sorted(scale) if scale is not None else items
    if len(scale) <= limit:
        present = dict(items)
        return [(str(k), present.get(k, 0.0)) for k, _ in scale]
    scale_total = sum(v for _, v in scale)
    running, high = 0.0, scale[-1][0]
    for key, value in scale:
        running += value
        if running >= 0.99 * scale_total:
            high = key
            break
    low = scale[0][0]
    width = max(1, -(-(high - low + 1) // (limit - 1)))
    bins: dict[int, float] = {}
    for key, value in items:
        index = min((key - low) // width, limit - 1) if key <= high else limit - 1
        bins[index] = bins.get(index, 0.0) + value
    last = max(min((k - low) // width, limit - 1) if k <= high else limit - 1 for k, _ in scale)
    out = []
    for index in range(last + 1):
        start = low + index * width
        label = f"{start}+" if index == limit - 1 else f"{start}–{start + width - 1}" if width > 1 else str(start)
        out.append((label, bins.get(index, 0.0)))
    return out


#: Token lengths from this one up share the last bar, as in ``--plot`` (plots._TOKEN_LENGTH_CAP).
TOKEN_LENGTH_CAP = 16
#: The red of unknown tokens, in the bars as in the token boxes.
_UNK_COLOUR = "#B22222"
_BAR_NAMES = {"UNK": "unknown tokens (UNK)", "byte": "byte pieces (part of a character)"}


def _token_length_bars(histogram: Mapping[str, Any], unknown: int) -> list[tuple[str, float]]:
    """UNK, byte pieces (length 0), 1, 2, …, 16+ characters: the token-length histogram leaves
    unknown tokens out, so they get their own bar and count in the total (as in ``--plot``)."""
    counts = [0.0] * (TOKEN_LENGTH_CAP + 1)
    for key, value in histogram.items():
        counts[min(int(key), TOKEN_LENGTH_CAP)] += float(value)
    labels = ["byte"] + [str(k) for k in range(1, TOKEN_LENGTH_CAP)] + [f"{TOKEN_LENGTH_CAP}+"]
    return [("UNK", float(unknown)), *zip(labels, counts)]


#: The labelled bars of the token-length panels: UNK, byte, 1, 4, 8, 12, 16+.
_TOKEN_LENGTH_TICKS = (0, 1, 2, 5, 9, 13, TOKEN_LENGTH_CAP + 1)


def _histogram_section(metrics: Mapping[str, Mapping[str, Any]], colours: Mapping[str, str]) -> str:
    per_name = {name: _histograms(m) for name, m in metrics.items()}
    kinds: list[str] = []
    for found in per_name.values():
        kinds += [k for k in found if k not in kinds]
    out = []
    for kind in kinds:
        token_length = kind.split(".")[-1] == "token_length"
        merged: dict[int, float] = {}
        for found in per_name.values():
            for k, v in found.get(kind, {}).items():
                merged[int(k)] = merged.get(int(k), 0.0) + float(v)
        bars: dict[str, list[tuple[str, float]]] = {}
        for name, found in per_name.items():
            if kind not in found:
                continue
            if token_length:
                unknown = metrics[name].get("unk_count", 0)
                bars[name] = _token_length_bars(found[kind], unknown if isinstance(unknown, int) else 0)
            else:
                values = sorted((int(k), float(v)) for k, v in found[kind].items())
                bars[name] = _binned(values, sum(v for _, v in values), scale=sorted(merged.items()))
        top = max((v / (sum(x for _, x in b) or 1) for b in bars.values() for _, v in b), default=1.0)
        title = kind.removeprefix("histograms.").replace("_", " ")
        boxes = []
        table = []
        for name, panel in bars.items():
            ticks = _TOKEN_LENGTH_TICKS if token_length else ()
            boxes.append(
                f'<div class="multiple"><div>{_e(name).replace("/", "/<wbr>")}</div>'
                f"{_bars_svg(panel, colours[name], top, ticks)}</div>"
            )
            cells = "".join(f"<td>{_e(k)}: {_number(v)}</td>" for k, v in per_name[name][kind].items())
            if token_length:
                unknown = metrics[name].get("unk_count", 0)
                cells = f'<td class="unk-cell">UNK: {_number(unknown)}</td>' + cells
            table.append(f'<tr><td class="name">{_e(name)}</td>{cells}</tr>')
        note = "share of the total per value, same scale in every panel"
        if token_length:
            note = (
                "share of all tokens by length in characters (spaces around a token not counted), same scale in "
                f'every panel; <span style="color:{_UNK_COLOUR};font-weight:600">UNK</span> = unknown tokens '
                "(left out of the lengths, so they get their own bar), byte = byte pieces (part of a character, "
                f"dashed grey); {TOKEN_LENGTH_CAP}+ holds the longer ones"
            )
        elif any(len(items) > 1 and "–" in items[1][0] for items in bars.values()):
            note += "; the values are binned (the last bar holds everything from its value up)"
        out.append(
            f"<h3>{_e(title)}</h3><p>{note}</p>"
            f'<div class="multiples">{"".join(boxes)}</div>'
            f'<details><summary>the numbers</summary><div class="wrap"><table>{"".join(table)}</table></div></details>'
        )
    return "".join(out)


def _token_boxes(alignment: Mapping[str, Any]) -> str:
    """The aligned text as one line of boxes per tokenizer: alternating colours, byte pieces
    dashed, unknowns red; each box's tooltip gives id and offsets."""
    text = str(alignment.get("text", ""))
    data = text.encode("utf-8")
    rows = []
    for row in alignment.get("rows", []):
        boxes = []
        end = 0
        spans = row.get("spans", [])
        in_bytes = all("byte_start" in span and "byte_end" in span for span in spans)  # a token's own spaces
        first, last = ("byte_start", "byte_end") if in_bytes else ("char_start", "char_end")
        for index, span in enumerate(spans):
            start = int(span.get(first, end))
            if start > end:
                boxes.append(_e(data[end:start].decode("utf-8", "replace") if in_bytes else text[end:start]))
            classes = ["t", f"t{index % 3}"]
            if span.get("partial"):
                classes.append("partial")
            if span.get("unknown"):
                classes.append("unk")
            shown = span.get("readable", span.get("token", ""))
            details = " · ".join(f"{k} {v}" for k, v in span.items() if k not in ("readable",))
            boxes.append(f'<span class="{" ".join(classes)}" title="{_e(details)}">{_e(shown)}</span>')
            end = max(end, int(span.get(last, start)))
        extra = " · ".join(f"{k}: {_cell(v)}" for k, v in row.items() if k not in ("name", "spans"))
        rows.append(
            f'<div class="row"><span class="who">{_e(row.get("name", "")).replace("/", "/<wbr>")}</span>'
            f'<span class="tokens">{"".join(boxes)}</span></div>'
            + (
                f'<details style="font-size:11px;color:#666;margin-left:178px"><summary>{_e(row.get("name", ""))}: '
                f"boundaries and offsets</summary>{extra}</details>"
                if extra
                else ""
            )
        )
    others = {k: v for k, v in alignment.items() if k not in ("text", "rows")}
    tail = f"<details><summary>more about this place</summary>{_generic(others)}</details>" if others else ""
    return f'<div class="text">{_e(text)}</div>{"".join(rows)}{tail}'


def _is_alignment(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("rows"), list) and "text" in value


def _shown_section(shown: Sequence[Any]) -> str:
    out = []
    for index, place in enumerate(shown, 1):
        if not isinstance(place, Mapping):
            out.append(f"<p>{_cell(place)}</p>")
            continue
        caption = " · ".join(f"{_e(k)} {_cell(v)}" for k, v in place.items() if not _is_alignment(v))
        out.append(f"<h3>{index}. {caption}</h3>")
        out += [_token_boxes(v) for v in place.values() if _is_alignment(v)]
    legend = (
        '<p class="legend"><span><span class="t t0">token</span><span class="t t1">next</span></span>'
        '<span><span class="t partial">byte piece</span> part of a character</span>'
        '<span><span class="t unk">[UNK]</span> unknown</span> hover a box for its id and offsets</p>'
    )
    return legend + "".join(out)


def _is_figure(value: Any) -> bool:
    """A number (or list of numbers): right-aligned like the tables' figures; text reads from the left."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_is_figure(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _generic(value: Any) -> str:
    """Any other part of the report: dicts as two-column tables, lists of dicts as tables."""
    if _is_alignment(value):
        return _token_boxes(value)
    if isinstance(value, Mapping):
        if value and all(isinstance(v, Mapping) for v in value.values()):
            return _metrics_table(value, _colours(list(value)))  # type: ignore[arg-type]
        rows = "".join(
            f'<tr><th class="name">{_e(k)}</th><td{"" if _is_figure(v) else " class=l"}>{_generic(v)}</td></tr>'
            for k, v in value.items()
        )
        return f"<table>{rows}</table>"
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        flat = [_flatten(v) for v in value]
        columns: list[str] = []
        for row in flat:
            columns += [c for c in row if c not in columns]
        head = "".join(f"<th>{_e(c)}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c, ''))}</td>" for c in columns) + "</tr>" for r in flat)
        return f'<div class="wrap"><table><tr>{head}</tr>{body}</table></div>'
    return _cell(value)


#: Section titles that say more than the report key.
_TITLES = {
    "shown": "Where the tokenizers disagree most (--show)",
    "parallel": "Cross-lingual parity (--parallel): tokens of each language per token of the first",
    "unused": "Never-seen tokens (--unused)",
}


def render_html(report: Mapping[str, Any], title: str = "Tokenizer comparison") -> str:
    """The page for one ``compare`` report (the ``--json`` dictionary)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
    ]
    about = {k: v for k, v in report.items() if not isinstance(v, (Mapping, list)) or k == "sources"}
    if about:
        parts.append(_generic(about))
    metrics = report.get("metrics")
    if isinstance(metrics, Mapping) and metrics:
        colours = _colours(list(metrics))
        parts.append("<h2>Statistics per tokenizer</h2>")
        parts.append(_metrics_table(metrics, colours))
        pictures = _histogram_section(metrics, colours)
        if pictures:
            parts.append("<h2>Distributions</h2>" + pictures)
    for key, value in report.items():
        if key in about or key == "metrics" or value in (None, [], {}):
            continue
        parts.append(f"<h2>{_e(_TITLES.get(key, key.replace('_', ' ').capitalize()))}</h2>")
        if key == "shown" and isinstance(value, list):
            parts.append(_shown_section(value))
        else:
            parts.append(_generic(value))
    parts.append("<p style='color:#888;font-size:12px'>made by toktools compare --html</p></body></html>")
    return "\n".join(parts) + "\n"


def write_html(report: Mapping[str, Any], path: str | os.PathLike[str], title: str = "Tokenizer comparison") -> Path:
    """Render and write atomically (the output policy of :mod:`toktools.io.outputs`)."""
    from toktools.io.outputs import atomic_file, check_output_file

    target = check_output_file(path, force=True, what="HTML report")
    page = render_html(report, title)
    with atomic_file(target) as out:
        out.write(page)
    return target
