"""Dynamic masking speed: examples per second of toktools' MaskingCollator against transformers'
DataCollatorForLanguageModeling (return_tensors="np", no PyTorch) on the same ids, in one run.

Ids: the first --mb MB of the shared English Wikipedia encoded with a shipped vocabulary, cut into
rows of --length tokens ([CLS] … [SEP]); batches of --batch rows. transformers is timed twice:
with plain id lists (it asks the tokenizer for each row's special-token mask) and with dicts that
carry ``special_tokens_mask`` (its documented fast path). The static BERT sampler
(``mask_tokens``, one row at a time) is shown for reference.

    python benchmarks/bench_masking.py [--vocab wordpiece-30k] [--mb 4] [--length 512] [--batch 32] [--whole-word]
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
import warnings

from _common import CORPORA, REPO

sys.path.insert(0, str(REPO))


def timed(label: str, run, batches: int, rows_per_batch: int) -> float:
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    rate = batches * rows_per_batch / seconds
    print(f"{label:<58} {rate:>10,.0f} examples/s  ({seconds:.2f} s)")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="wordpiece-30k")
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument(
        "--whole-word", action="store_true", help="also time whole-word masking (transformers needs offsets)"
    )
    args = parser.parse_args()

    import numpy as np
    import transformers

    from toktools.formats import load
    from toktools.pretraining.masking import MaskingCollator, mask_tokens, masking_info

    with gzip.open(CORPORA / "en_wiki.txt.gz", "rt", encoding="utf-8") as handle:
        text = handle.read(int(args.mb * 1e6))
    tokenizer = load(args.vocab)
    info = masking_info(tokenizer)
    flat = [i for e in tokenizer.encode_batch(text.splitlines(), add_special_tokens=False) for i in e.ids]
    room = args.length - 2
    rows = [[info.cls_id, *flat[i : i + room], info.sep_id] for i in range(0, len(flat) - room + 1, room)]
    batches = [rows[i : i + args.batch] for i in range(0, len(rows) - args.batch + 1, args.batch)]
    used = len(batches) * args.batch
    print(
        f"{args.vocab}: {len(flat):,} tokens from {len(text) / 1e6:.1f} MB → {used:,} rows of {args.length}, "
        f"batches of {args.batch}"
    )

    reference = transformers.AutoTokenizer.from_pretrained(str(REPO / "vocabs" / args.vocab))
    theirs = transformers.DataCollatorForLanguageModeling(reference, return_tensors="np", seed=0)
    ours = MaskingCollator(info, seed=0)
    with_mask = [
        [{"input_ids": r, "special_tokens_mask": info.special[np.asarray(r)].astype(int).tolist()} for r in b]
        for b in batches
    ]

    ours_rate = timed(
        "toktools MaskingCollator (id lists)", lambda: [ours(b) for b in batches], len(batches), args.batch
    )
    theirs_rate = timed(
        "transformers DataCollatorForLanguageModeling (id lists)",
        lambda: [theirs(b) for b in batches],
        len(batches),
        args.batch,
    )
    ours_dict = timed(
        "toktools MaskingCollator (dicts with special_tokens_mask)",
        lambda: [ours(b) for b in with_mask],
        len(batches),
        args.batch,
    )
    theirs_dict = timed(
        "transformers (dicts with special_tokens_mask)",
        lambda: [theirs(b) for b in with_mask],
        len(batches),
        args.batch,
    )
    rng = np.random.default_rng(0)
    arrays = [np.asarray(r) for r in rows[:used]]
    timed(
        "toktools mask_tokens, BERT sampler (static, row by row)",
        lambda: [mask_tokens(r, info, rng) for r in arrays],
        len(batches),
        args.batch,
    )
    print(
        f"ratio (ours / transformers), id lists: {ours_rate / theirs_rate:.2f}×; "
        f"dicts with special_tokens_mask: {ours_dict / theirs_dict:.2f}×"
    )

    if args.whole_word:
        encoded = reference(
            [text[i : i + 3000] for i in range(0, len(text), 3000)],
            truncation=True,
            max_length=args.length,
            padding="max_length",
            return_offsets_mapping=True,
            return_special_tokens_mask=True,
        )
        features = [
            {"input_ids": i, "offset_mapping": o, "special_tokens_mask": s}
            for i, o, s in zip(encoded["input_ids"], encoded["offset_mapping"], encoded["special_tokens_mask"])
        ]
        word_batches = [features[i : i + args.batch] for i in range(0, len(features) - args.batch + 1, args.batch)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs_wwm = transformers.DataCollatorForLanguageModeling(
                reference, whole_word_mask=True, return_tensors="np", seed=0
            )
        ours_wwm = MaskingCollator(info, whole_word=True, mask_replace_prob=1.0, random_replace_prob=0.0, seed=0)
        ids_only = [[f["input_ids"] for f in b] for b in word_batches]
        a = timed(
            "toktools whole-word collator", lambda: [ours_wwm(b) for b in ids_only], len(word_batches), args.batch
        )
        b = timed(
            "transformers whole_word_mask=True (offsets)",
            lambda: [theirs_wwm(x) for x in word_batches],
            len(word_batches),
            args.batch,
        )
        print(f"ratio (ours / transformers), whole words: {a / b:.2f}×")


if __name__ == "__main__":
    main()
