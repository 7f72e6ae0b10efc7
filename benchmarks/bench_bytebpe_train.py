"""Train a 50K byte-level BPE on the full shared English corpus and on the Chinese running-text
corpus, with the reference (pure Python) and the fast (``tokenizers``) backend, in one run.

Prints wall time, peak memory and the ratio reference / fast, and checks that both backends
wrote byte-identical files.

    python benchmarks/bench_bytebpe_train.py [--vocab-size 50000] [--workers N] [--only english|chinese]
"""

from __future__ import annotations

import argparse
import filecmp
import json

from _common import CHINESE, ENGLISH, corpus_files, run_job, workdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-size", type=int, default=50000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--only", choices=["english", "chinese"], default=None)
    args = parser.parse_args()
    work = workdir()
    corpora = {"english": ENGLISH, "chinese": CHINESE}
    rows = []
    for name, files in corpora.items():
        if args.only and name != args.only:
            continue
        paths = corpus_files(files, work)
        out_ref, out_fast = work / f"{name}-ref", work / f"{name}-fast"
        fast = run_job(
            "from toktools import fast",
            f"tok = fast.train_bytebpe({paths!r}, {args.vocab_size}); fast.save_bytebpe(tok, {str(out_fast)!r})",
        )
        ref = run_job(
            "import toktools",
            f"tok = toktools.train_bytebpe({paths!r}, {args.vocab_size}, workers={args.workers!r}); tok.save({str(out_ref)!r})",
        )
        identical = all(filecmp.cmp(out_ref / f, out_fast / f, shallow=False) for f in ("vocab.json", "merges.txt"))
        rows.append((name, ref, fast, identical))
    print(f"byte-level BPE, vocab {args.vocab_size}")
    print(
        f"{'corpus':<8} {'reference s':>11} {'fast s':>8} {'ratio':>6} {'ref MiB':>8} {'fast MiB':>9}  files identical"
    )
    for name, ref, fast, identical in rows:
        print(
            f"{name:<8} {ref['seconds']:>11.1f} {fast['seconds']:>8.1f} {ref['seconds'] / fast['seconds']:>6.2f} "
            f"{ref['peak_mib']:>8.0f} {fast['peak_mib']:>9.0f}  {identical}"
        )
    print(
        json.dumps(
            [
                {
                    "corpus": n,
                    "reference_s": r["seconds"],
                    "fast_s": f["seconds"],
                    "ratio": r["seconds"] / f["seconds"],
                    "reference_peak_mib": r["peak_mib"],
                    "fast_peak_mib": f["peak_mib"],
                    "identical": i,
                }
                for n, r, f, i in rows
            ]
        )
    )


if __name__ == "__main__":
    main()
