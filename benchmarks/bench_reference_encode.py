"""Encoding throughput of the two shipped presets (BERT WordPiece, byte-level BPE), toktools in
one process against ``tokenizers`` in one run, on the first MB of the English and Chinese corpora.

    python benchmarks/bench_encode.py [--mb 2] [--repeat 3]

Prints MB/s per corpus and tokenizer and the ratio toktools / tokenizers (the machine is noisy:
compare ratios, best of ``--repeat`` runs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time

from _common import CORPORA, REPO

sys.path.insert(0, str(REPO))


def _sample(name: str, mb: float) -> list[str]:
    path = CORPORA / name
    opener = gzip.open if path.suffix == ".gz" else open
    lines, size = [], 0
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            lines.append(line.rstrip("\n"))
            size += len(line.encode("utf-8"))
            if size > mb * 1e6:
                break
    return lines


def _best(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import tokenizers

    import toktools

    rows = []
    for vocab in ("wordpiece-30k", "bytebpe-50k"):
        ours = toktools.load(vocab)
        theirs = tokenizers.Tokenizer.from_file(str(REPO / "vocabs" / vocab / "tokenizer.json"))
        for corpus in ("en_wiki.txt.gz", "zh_wiki_sample.txt"):
            lines = _sample(corpus, args.mb)
            size = sum(len(line.encode("utf-8")) for line in lines) / 1e6
            mine = _best(
                lambda ours=ours, lines=lines: [e.ids for e in ours.encode_batch(lines, workers=1)], args.repeat
            )
            fast = _best(lambda theirs=theirs, lines=lines: [e.ids for e in theirs.encode_batch(lines)], args.repeat)
            rows.append(
                {
                    "tokenizer": vocab,
                    "corpus": corpus,
                    "mb": round(size, 2),
                    "toktools_mb_s": round(size / mine, 3),
                    "tokenizers_mb_s": round(size / fast, 3),
                    "ratio": round(fast / mine, 4),
                }
            )
            print(
                f"{vocab:<14} {corpus:<20} {size:6.2f} MB  toktools {size / mine:7.3f} MB/s  "
                f"tokenizers {size / fast:7.2f} MB/s  ratio {fast / mine:.4f}",
                flush=True,
            )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
