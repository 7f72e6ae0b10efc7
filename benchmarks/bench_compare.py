"""`compare --corpus` against plain encoding: is one statistics pass close to the cost of the
encoding it needs?

Baseline: the same documents encoded by each tokenizer one after another (``encode_batch`` in
the same batches, default workers, no special tokens). Then ``compare_corpus`` with the same
tokenizers (statistics, sequence lengths, the 3 most disputed lines aligned). Each run loads
fresh tokenizers so that no word cache carries over. Target: ratio ≤ 1.5.

    python benchmarks/bench_compare.py                  # 5 MB of English Wikipedia, 4 tokenizers
    python benchmarks/bench_compare.py --mb 1 --corpus zh_wiki_sample.txt

``--cli`` measures issue 23's row instead, on the command line: the four
``toktools encode -t T --format npy --verify 0`` one after another (the baseline) against
``toktools compare T1..T4 --corpus FILE --json`` (show 3), alternated for ``--rounds`` rounds,
and with ``--tree DIR`` (repeatable) for each source tree in turn (``PYTHONPATH=DIR``), so that
before and after are measured side by side in one run:

    python benchmarks/bench_compare.py --cli --mb 3.3 --tree /tmp/before --tree .
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import CORPORA, SHARED  # noqa: E402

TOKENIZERS = [
    "wordpiece-30k",
    "bytebpe-50k",
    str(SHARED / "vocabs-ref" / "bert-base-uncased"),
    str(SHARED / "vocabs-ref" / "gpt2"),
]


def _sample(name: str, megabytes: float, directory: Path) -> Path:
    source = CORPORA / name
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rb") as handle:
        data = handle.read(int(megabytes * 1_000_000))
    data = data[: data.rfind(b"\n") + 1]
    target = directory / "sample.txt"
    target.write_bytes(data)
    return target


def _timed(command: list[str], tree: str) -> tuple[float, float]:
    """(wall time, CPU time of the process and its children) of one ``toktools`` command run
    with ``tree`` first on the path. CPU time is the figure a loaded machine disturbs least."""
    import os
    import resource
    import subprocess

    env = {**os.environ, "PYTHONPATH": tree}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main_cli(args: argparse.Namespace) -> None:
    """Issue 23's row on the command line: encode with the four vs ``compare --corpus``."""
    import os

    trees = [str(Path(t).resolve()) for t in (args.tree or [str(Path(__file__).resolve().parent.parent)])]
    with tempfile.TemporaryDirectory() as tmp:
        path = _sample(args.corpus, args.mb, Path(tmp))
        out = str(Path(tmp) / "out.npy")
        print(f"corpus: first {path.stat().st_size:,} bytes of {args.corpus}; load average {os.getloadavg()[0]:.1f}")
        for round_ in range(1, args.rounds + 1):
            for tree in trees:
                encode = [
                    _timed(
                        [
                            "toktools",
                            "encode",
                            "-t",
                            t,
                            "--format",
                            "npy",
                            "-o",
                            out,
                            "--force",
                            "--verify",
                            "0",
                            "--no-progress",
                            str(path),
                        ],
                        tree,
                    )
                    for t in TOKENIZERS
                ]
                compared = _timed(
                    [
                        "toktools",
                        "compare",
                        *TOKENIZERS,
                        "--corpus",
                        str(path),
                        "--json",
                        "--no-progress",
                        "--show",
                        str(args.show),
                    ],
                    tree,
                )
                baseline, baseline_cpu = sum(w for w, _ in encode), sum(c for _, c in encode)
                print(
                    f"round {round_} {tree}: encode the four {baseline:6.2f} s ("
                    + " + ".join(f"{w:.1f}" for w, _ in encode)
                    + f"), compare --corpus {compared[0]:6.2f} s, ratio {compared[0] / baseline:.2f}"
                    + f"; CPU {baseline_cpu:.1f} s vs {compared[1]:.1f} s, ratio {compared[1] / baseline_cpu:.2f}"
                    + f"  (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--corpus", default="en_wiki.txt.gz")
    parser.add_argument("--show", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--cli", action="store_true", help="issue 23's row: toktools encode --verify 0 vs compare --corpus"
    )
    parser.add_argument("--tree", action="append", help="with --cli: a source tree to measure (repeatable)")
    args = parser.parse_args()
    if args.cli:
        main_cli(args)
        return

    import toktools
    from toktools.analysis import compare_chunks, corpus_compare
    from toktools.corpus.reading import expand_sources

    with tempfile.TemporaryDirectory() as tmp:
        path = _sample(args.corpus, args.mb, Path(tmp))
        documents = [text for _, text in corpus_compare.iter_documents(expand_sources([str(path)]))]

        def batches_of(limit_chars: int, limit_docs: int) -> list[list[str]]:
            out, batch, size = [], [], 0
            for text in documents:
                batch.append(text)
                size += len(text)
                if size >= limit_chars or len(batch) >= limit_docs:
                    out.append(batch)
                    batch, size = [], 0
            return out + ([batch] if batch else [])

        # two ways to encode: 1 MB batches (encode_batch uses worker processes), and the
        # 256 KB chunks compare uses (in one process); the baseline is the faster. The machine
        # is shared and noisy: the three runs alternate for --rounds rounds, each keeping its best.
        plans = {
            "1 MB batches, worker processes": batches_of(1 << 20, 20_000),
            "256 KB batches, one process": batches_of(compare_chunks.CHUNK_CHARS, compare_chunks.CHUNK_DOCUMENTS),
        }
        baselines: dict[str, float] = {}
        per_tokenizer: dict[str, list[float]] = {}
        compared = float("inf")
        for _ in range(args.rounds):
            for label, batches in plans.items():
                tokenizers = [toktools.load(name) for name in TOKENIZERS]
                started = time.perf_counter()
                times = []
                for tokenizer in tokenizers:
                    t0 = time.perf_counter()
                    for batch in batches:
                        tokenizer.encode_batch(batch, add_special_tokens=False)
                    times.append(time.perf_counter() - t0)
                elapsed = time.perf_counter() - started
                if elapsed < baselines.get(label, float("inf")):
                    baselines[label], per_tokenizer[label] = elapsed, times
            tokenizers = [toktools.load(name) for name in TOKENIZERS]
            started = time.perf_counter()
            result = corpus_compare.compare_corpus(
                [(Path(n).name, t) for n, t in zip(TOKENIZERS, tokenizers)], [str(path)], show=args.show
            )
            compared = min(compared, time.perf_counter() - started)
        best = min(baselines, key=baselines.get)
        baseline = baselines[best]

    print(
        f"corpus: {args.corpus}, {path.stat().st_size if path.exists() else args.mb * 1e6:.0f} bytes read, "
        f"{len(documents)} documents"
    )
    for label, seconds in baselines.items():
        detail = ", ".join(f"{Path(n).name} {t:.1f}" for n, t in zip(TOKENIZERS, per_tokenizer[label]))
        print(f"encode with the {len(TOKENIZERS)} one after another ({label}): {seconds:7.2f} s  ({detail})")
    print(f"baseline (the faster): {baseline:7.2f} s")
    print(f"compare --corpus (statistics + {args.show} aligned lines)           {compared:7.2f} s")
    print(f"ratio compare / baseline: {compared / baseline:.2f}  (target ≤ 1.5)")
    first = next(iter(result.metrics.values()))
    print(f"({first.documents} documents, {first.characters} characters)")


if __name__ == "__main__":
    main()
