"""WordPiece: train 30K on the full shared English corpus and on the Chinese running-text
corpus with both backends in one run (wall time, peak memory, ratio), then encoding throughput
(MB/s) of both on the same text.

    python benchmarks/bench_wordpiece.py [--vocab-size 30000] [--only english|chinese] [--encode-mb 20]
"""

from __future__ import annotations

import argparse
import json

from _common import CHINESE, ENGLISH, corpus_files, run_job, workdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-size", type=int, default=30000)
    parser.add_argument("--only", choices=["english", "chinese"], default=None)
    parser.add_argument("--encode-mb", type=float, default=20.0, help="MB of each corpus to encode for throughput")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    work = workdir()
    rows = []
    for name, files in {"english": ENGLISH, "chinese": CHINESE}.items():
        if args.only and name != args.only:
            continue
        paths = corpus_files(files, work)
        out_ref, out_fast = work / f"wp-{name}-ref", work / f"wp-{name}-fast"
        fast = run_job(
            "from toktools import fast; import pathlib",
            f"tok = fast.train_wordpiece({paths!r}, {args.vocab_size}); pathlib.Path({str(out_fast)!r}).mkdir(exist_ok=True); "
            f"pathlib.Path({str(out_fast)!r}, 'vocab.txt').write_text(fast.wordpiece_vocab_txt(tok), encoding='utf-8')",
        )
        ref = run_job(
            "import toktools",
            f"tok = toktools.train_wordpiece({paths!r}, {args.vocab_size}, workers={args.workers!r}); tok.save({str(out_ref)!r})",
        )
        ours = set((out_ref / "vocab.txt").read_text(encoding="utf-8").split("\n"))
        theirs = set((out_fast / "vocab.txt").read_text(encoding="utf-8").split("\n"))
        overlap = len(ours & theirs) / max(len(ours | theirs), 1)
        # encoding throughput on the first N MB of the corpus, same vocabulary (ours) on both sides;
        # both sides read the ids of every encoding (both build Python lists lazily)
        read = (
            f"import itertools; lines = []; size = 0\n"
            f"for path in {paths!r}:\n"
            f"    for line in open(path, encoding='utf-8'):\n"
            f"        lines.append(line.rstrip('\\n')); size += len(line.encode('utf-8'))\n"
            f"        if size > {args.encode_mb} * 1e6: break\n"
            f"    if size > {args.encode_mb} * 1e6: break\n"
        )
        enc_fast = run_job(
            "from tokenizers import BertWordPieceTokenizer\n"
            + read
            + f"tok = BertWordPieceTokenizer({str(out_ref / 'vocab.txt')!r})",
            "ids = [e.ids for e in tok.encode_batch(lines)]; result = size",
        )
        enc_ref = run_job(
            "import toktools\n" + read + f"tok = toktools.load({str(out_ref)!r})",
            f"ids = [e.ids for e in tok.encode_batch(lines, workers={args.workers!r})]; result = size",
        )
        rows.append((name, ref, fast, overlap, enc_ref, enc_fast))
    print(f"WordPiece, vocab {args.vocab_size}")
    print(
        f"{'corpus':<8} {'train ref s':>11} {'fast s':>7} {'ratio':>6} {'ref MiB':>8} {'fast MiB':>9} {'token overlap':>13}"
        f" {'enc ref MB/s':>12} {'enc fast MB/s':>13} {'speed ref/fast':>14}"
    )
    out = []
    for name, ref, fast, overlap, enc_ref, enc_fast in rows:
        ref_mbs = enc_ref["result"] / 1e6 / enc_ref["seconds"]
        fast_mbs = enc_fast["result"] / 1e6 / enc_fast["seconds"]
        print(
            f"{name:<8} {ref['seconds']:>11.1f} {fast['seconds']:>7.1f} {ref['seconds'] / fast['seconds']:>6.2f} "
            f"{ref['peak_mib']:>8.0f} {fast['peak_mib']:>9.0f} {overlap:>13.4f} {ref_mbs:>12.2f} {fast_mbs:>13.2f} {ref_mbs / fast_mbs:>14.2f}"
        )
        out.append(
            {
                "corpus": name,
                "train_reference_s": ref["seconds"],
                "train_fast_s": fast["seconds"],
                "train_ratio": ref["seconds"] / fast["seconds"],
                "token_overlap": overlap,
                "encode_reference_mb_s": ref_mbs,
                "encode_fast_mb_s": fast_mbs,
            }
        )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
