"""What ``toktools compare`` shows on one text: every tokenizer's metrics and their alignment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.alignment import Alignment, align_encoded, named_tokenizers
from toktools.analysis.metrics import Metrics, encoding_metrics, render_metrics_plain, segmentation_line, warnings_of
from toktools.tokenizer import Tokenizer

__all__ = ["Comparison", "compare"]


@dataclass
class Comparison:
    """What ``toktools compare`` shows on one text: metrics per tokenizer and the alignment."""

    text: str
    metrics: dict[str, Metrics]
    alignment: Alignment

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "alignment": self.alignment.to_dict(),
            "warnings": warnings_of(self.metrics),
        }

    def render_plain(self, width: int | None = None, byte_view: bool | None = None, markdown: bool = False) -> str:
        """The alignment and the table; ``markdown``: the alignment fenced, the table in Markdown."""
        aligned = self.alignment.render_plain(width, byte_view)
        if markdown:
            aligned = "```text\n" + aligned.rstrip("\n") + "\n```\n"
        notes = [segmentation_line(self.metrics), *warnings_of(self.metrics)]
        if markdown:
            notes = [f"> **{n}**" if n.startswith("warning") else n for n in notes]
        tables = render_metrics_plain(self.metrics, markdown=markdown)
        return aligned + "\n" + ("\n\n" if markdown else "\n").join(notes) + "\n\n" + tables


def compare(tokenizers: Mapping[str, Tokenizer] | Sequence[tuple[str, Tokenizer]], text: str) -> Comparison:
    """Segment ``text`` with every tokenizer once; return the metrics of each and the alignment."""
    encoded = [(name, tok, token_view.encode_plain(tok, text)) for name, tok in named_tokenizers(tokenizers)]
    metrics = {name: encoding_metrics(tok, text, encoding) for name, tok, encoding in encoded}
    return Comparison(text, metrics, align_encoded(text, encoded))
