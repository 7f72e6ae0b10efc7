"""``toktools encode --cluster`` against the local pool: overhead, and identical output.

    PYTHONPATH=. python benchmarks/bench_distributed_encode.py                 # 100 MB, GPT-2, local:2
    PYTHONPATH=. python benchmarks/bench_distributed_encode.py --mb 20 --cluster tcp://127.0.0.1:8786

Builds a corpus of ``--mb`` MB from the shared English and Chinese corpora, then times, in turn,
whole ``toktools encode --format megatron`` commands (process start to exit, cluster start-up
included for ``local:N``): the local pool (``--workers 2``), the same with ``--block-size``
(the files a cluster writes), and ``--cluster``. It checks that the cluster's shards are the
block run's files byte for byte and that their ids, back to back, are the local run's
``.bin``. Issue 10's target: cluster wall time at most 1.15x the local pool's. The machine is
shared and noisy: quote the ratio with the input size.
"""

from __future__ import annotations

import argparse
import filecmp
import gzip
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CORPORA, REPO, SHARED, workdir  # noqa: E402


def build_corpus(target: Path, megabytes: int) -> Path:
    if target.exists() and target.stat().st_size >= megabytes * 10**6 * 0.99:
        return target
    parts = [
        gzip.open(CORPORA / "en_wiki.txt.gz", "rb").read(),
        (CORPORA / "zh_novels.txt").read_bytes(),
        (CORPORA / "zh_wiki_sample.txt").read_bytes(),
    ]
    data = bytearray()
    while len(data) < megabytes * 10**6:
        for part in parts:
            data += part if part.endswith(b"\n") else part + b"\n"
    target.write_bytes(bytes(data[: megabytes * 10**6]).rsplit(b"\n", 1)[0] + b"\n")
    return target


def encode(tokenizer: str, corpus: Path, output: Path, *extra: str) -> float:
    if output.parent.exists():
        shutil.rmtree(output.parent)
    output.parent.mkdir(parents=True)
    command = [
        sys.executable,
        "-m",
        "toktools.cli",
        "encode",
        "-t",
        tokenizer,
        "--format",
        "megatron",
        "-o",
        str(output),
        "--no-progress",
        *extra,
        str(corpus),
    ]
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{completed.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--tokenizer", default=str(SHARED / "vocabs-ref" / "gpt2"))
    parser.add_argument("--cluster", default="local:2")
    parser.add_argument("--block-size", default="25MB", help="4 blocks of 100 MB: two per worker")
    args = parser.parse_args()
    root = workdir() / "distributed-encode"
    root.mkdir(exist_ok=True)
    corpus = build_corpus(root / f"corpus-{args.mb}mb.txt", args.mb)
    local = encode(args.tokenizer, corpus, root / "local" / "web", "--workers", "2")
    blocks = encode(args.tokenizer, corpus, root / "blocks" / "web", "--workers", "2", "--block-size", args.block_size)
    remote = encode(
        args.tokenizer, corpus, root / "cluster" / "web", "--cluster", args.cluster, "--block-size", args.block_size
    )
    names = sorted(p.name for p in (root / "blocks").iterdir())
    same_files = names == sorted(p.name for p in (root / "cluster").iterdir()) and filecmp.cmpfiles(
        root / "blocks", root / "cluster", names, shallow=False
    )[1:] == ([], [])
    shards = sorted((root / "cluster").glob("web-[0-9]*.bin"))
    same_ids = b"".join(p.read_bytes() for p in shards) == (root / "local" / "web.bin").read_bytes()
    print(f"{args.mb} MB, {Path(args.tokenizer).name}, blocks of {args.block_size}")
    print(f"local pool (--workers 2)          {local:8.1f} s")
    print(f"local, --block-size {args.block_size:<13} {blocks:8.1f} s   {blocks / local:.2f}x")
    print(f"--cluster {args.cluster:<23} {remote:8.1f} s   {remote / local:.2f}x   (target <= 1.15x)")
    print(f"cluster files == block run's files: {same_files}; cluster ids == local ids: {same_ids}")


if __name__ == "__main__":
    main()
