"""CPU per MB of a sentencepiece ``.model``: sentencepiece's own batch call (all cores and one
thread) against toktools' reference encoder (compiled Viterbi, one process) and, end to end,
``toktools encode --engine sentencepiece`` / ``reference`` (the cost of each extra MB: a 10 MB
run minus a 2 MB run, start-up cancelled). Trains a 30K Unigram model with spm_train on half of
the shared English and Chinese corpora, encodes held-out text from the other half. One run: on a
loaded machine, read the ratios.

    PYTHONPATH=. python benchmarks/bench_sentencepiece.py [WORKDIR]
"""

from __future__ import annotations

import gzip
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import sentencepiece as spm

import toktools

SHARED = Path(os.environ.get("TOKTOOLS_SHARED", Path(__file__).resolve().parent.parent.parent / "shared")) / "corpora"


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def prepare(work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    model = work / "m30k.model"
    if all((work / name).exists() for name in ("m30k.model", "en10.txt", "en2.txt", "zh2.txt")):
        return model
    en = gzip.open(SHARED / "en_wiki.txt.gz", "rt", encoding="utf-8").read().splitlines()
    zh = (
        (SHARED / "zh_wiki_sample.txt").read_text("utf-8") + (SHARED / "zh_novels.txt").read_text("utf-8")
    ).splitlines()
    (work / "train.txt").write_text("\n".join(en[: len(en) // 2] + zh[: len(zh) // 2]) + "\n", "utf-8")
    held_en = "\n".join(en[len(en) // 2 :]).encode("utf-8")
    held_zh = "\n".join(zh[len(zh) // 2 :]).encode("utf-8")
    for name, data, size in (
        ("en10.txt", held_en, 10_000_000),
        ("en2.txt", held_en, 2_000_000),
        ("zh2.txt", held_zh, 2_000_000),
    ):
        cut = data[:size]
        (work / name).write_bytes(cut[: cut.rfind(b"\n") + 1])
    if model.exists():
        return model
    spm.SentencePieceTrainer.train(
        input=str(work / "train.txt"),
        model_prefix=str(work / "m30k"),
        vocab_size=30000,
        model_type="unigram",
        num_threads=1,
        input_sentence_size=300000,
        shuffle_input_sentence=True,
        minloglevel=2,
    )
    return model


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/toktools-bench-spm")
    model = prepare(work)
    sp = spm.SentencePieceProcessor(model_file=str(model))
    tokenizer = toktools.load(model)
    tokenizer.ids_batch(["warm up the compiled Viterbi"])
    yardstick = {}  # sentencepiece's batch call on all cores, per MB of en10.txt: CPU, wall
    for name in ("en10.txt", "zh2.txt"):
        lines = (work / name).read_text("utf-8").splitlines()
        mb = (work / name).stat().st_size / 1e6
        start, wall = cpu(), time.perf_counter()
        theirs_all = sp.encode(lines, num_threads=-1)
        all_cores = cpu() - start
        yardstick.setdefault("cpu", all_cores / mb)
        yardstick.setdefault("wall", (time.perf_counter() - wall) / mb)
        start = cpu()
        theirs = sp.encode(lines, num_threads=1)
        one = cpu() - start
        start = cpu()
        ours = tokenizer.ids_batch(lines)
        reference = cpu() - start
        print(
            f"{name} ({mb:.1f} MB): sentencepiece batch, all cores {all_cores / mb:.3f} s/MB CPU, one thread "
            f"{one / mb:.3f}; toktools reference {reference / mb:.3f} ({reference / one:.2f}x one thread); "
            f"same ids {ours == theirs == theirs_all}"
        )
    for engine in ("sentencepiece", "reference"):
        costs = {}
        for name in ("en2.txt", "en10.txt"):
            before, wall = children_cpu(), time.perf_counter()
            subprocess.run(
                [
                    "toktools",
                    "encode",
                    "-t",
                    str(model),
                    str(work / name),
                    "--format",
                    "npy",
                    "-o",
                    str(work / f"{engine}.npy"),
                ]
                + ["--force", "--no-progress", "--engine", engine, "--verify", "0"],
                check=True,
            )
            costs[name] = children_cpu() - before, time.perf_counter() - wall
        mb = ((work / "en10.txt").stat().st_size - (work / "en2.txt").stat().st_size) / 1e6
        extra_cpu = (costs["en10.txt"][0] - costs["en2.txt"][0]) / mb
        extra_wall = (costs["en10.txt"][1] - costs["en2.txt"][1]) / mb
        print(
            f"toktools encode --engine {engine}: each extra MB {extra_cpu:.3f} s CPU, {extra_wall:.3f} s wall "
            f"({extra_cpu / yardstick['cpu']:.2f}x / {extra_wall / yardstick['wall']:.2f}x sentencepiece's batch call "
            f"on all cores: {yardstick['cpu']:.3f} s CPU, {yardstick['wall']:.3f} s wall per MB; "
            f"2 MB run {costs['en2.txt'][0]:.2f} s CPU, 10 MB run {costs['en10.txt'][0]:.2f} s CPU)"
        )


if __name__ == "__main__":
    main()
