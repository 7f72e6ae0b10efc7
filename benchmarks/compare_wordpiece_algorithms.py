"""How the likelihood-scored WordPiece vocabulary compares with the default (BPE-count) one.

Trains both on the same corpus sample and measures, on held-out text: tokens per word
(fertility), share of words split, UNK rate, and the overlap of the two vocabularies.

    python benchmarks/compare_wordpiece_algorithms.py [--corpus en_wiki.txt.gz] [--train-mb 10]
        [--vocab-size 30000] [--min-pair-frequency 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import time

from _common import CORPORA


def read_lines(name: str, skip_mb: float, take_mb: float) -> list[str]:
    path = CORPORA / name
    opener = gzip.open if path.suffix == ".gz" else open
    lines, size = [], 0
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            size += len(line.encode("utf-8"))
            if size <= skip_mb * 1e6:
                continue
            lines.append(line.rstrip("\n"))
            if size > (skip_mb + take_mb) * 1e6:
                break
    return lines


def measure(tok, lines: list[str]) -> dict[str, float]:
    words = tokens = split = unk = 0
    for encoding in tok.encode_batch(lines, add_special_tokens=False, workers=1):
        # a word is a run of tokens where each continuation starts with ##
        count = 0
        for token in encoding.tokens:
            if not token.startswith("##"):
                if count:
                    words += 1
                    split += count > 1
                count = 0
            count += 1
            tokens += 1
            unk += token == "[UNK]"
        if count:
            words += 1
            split += count > 1
    return {"tokens_per_word": tokens / words, "split_share": split / words, "unk_rate": unk / tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="en_wiki.txt.gz")
    parser.add_argument("--train-mb", type=float, default=10.0)
    parser.add_argument("--heldout-mb", type=float, default=2.0)
    parser.add_argument("--vocab-size", type=int, default=30000)
    parser.add_argument("--min-pair-frequency", type=int, default=5)
    args = parser.parse_args()
    train = read_lines(args.corpus, 0, args.train_mb)
    heldout = read_lines(args.corpus, args.train_mb + 1, args.heldout_mb)
    from toktools.training import pipeline as training

    counts = training.count_wordpiece_words(texts=train)
    results = {}
    vocabs = {}
    for algorithm in ("bpe", "likelihood"):
        started = time.perf_counter()
        tok = training.train_wordpiece(
            word_counts=dict(counts),
            vocab_size=args.vocab_size,
            algorithm=algorithm,
            min_pair_frequency=args.min_pair_frequency,
        )
        seconds = time.perf_counter() - started
        vocabs[algorithm] = set(tok.vocab)
        results[algorithm] = {"train_s": seconds, "vocab": len(tok.vocab), **measure(tok, heldout)}
    overlap = len(vocabs["bpe"] & vocabs["likelihood"]) / len(vocabs["bpe"] | vocabs["likelihood"])
    print(
        f"corpus {args.corpus}: train {args.train_mb} MB, held-out {args.heldout_mb} MB, vocab {args.vocab_size}, "
        f"likelihood min pair frequency {args.min_pair_frequency}"
    )
    print(f"{'algorithm':<11} {'vocab':>6} {'train s':>8} {'tokens/word':>11} {'words split':>11} {'UNK rate':>9}")
    for name, r in results.items():
        print(
            f"{name:<11} {r['vocab']:>6} {r['train_s']:>8.1f} {r['tokens_per_word']:>11.3f} {r['split_share']:>11.3f} {r['unk_rate']:>9.5f}"
        )
    print(f"vocabulary overlap (Jaccard): {overlap:.3f}")
    print(json.dumps({"results": results, "overlap": overlap}))


if __name__ == "__main__":
    main()
