"""The aligned view on long lines: time must grow linearly with the line.

Issue 9 measured 6 s for one 30 KB line and 16 s for 60 KB (the regions of disagreement were
matched against every token of every row: quadratic). This aligns and renders lines of 30, 60
and 120 KB of English Wikipedia with BERT and GPT-2 and prints the time per KB.

    python benchmarks/bench_align.py
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import CORPORA, SHARED  # noqa: E402


def main() -> None:
    import toktools
    from toktools.analysis.alignment import align_segmentations

    with gzip.open(CORPORA / "en_wiki.txt.gz", "rt", encoding="utf-8") as handle:
        text = " ".join(line.strip() for _, line in zip(range(2000), handle))
    tokenizers = {
        "bert": toktools.load(SHARED / "vocabs-ref" / "bert-base-uncased"),
        "gpt2": toktools.load(SHARED / "vocabs-ref" / "gpt2"),
    }
    align_segmentations(text[:1000], tokenizers).render_plain(width=120)  # warm up
    for kb in (30, 60, 120):
        line = text[: kb * 1000]
        started = time.perf_counter()
        alignment = align_segmentations(line, tokenizers)
        aligned = time.perf_counter() - started
        alignment.render_plain(width=120)
        total = time.perf_counter() - started
        print(
            f"{kb:4d} KB line: align {aligned:6.2f} s, align + render {total:6.2f} s "
            f"({total / kb * 1000:6.1f} ms per KB, {len(alignment.diffs)} differing regions)"
        )


if __name__ == "__main__":
    main()
