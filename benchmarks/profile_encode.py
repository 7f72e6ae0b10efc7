"""Where the time of one ``toktools.encode_corpus`` run goes, phase by phase (what
``bench_encode.py`` times as a whole), beside the raw batch call of the fastest exact library
on the same lines.

    PYTHONPATH=. python benchmarks/profile_encode.py --tokenizers gpt2,bert-base-uncased --langs zh
    PYTHONPATH=. python benchmarks/profile_encode.py --verify 0 --repeat 5

Each run is a fresh process (as in ``bench_encode.py``), which imports toktools from the current
directory first: run it from the root of the checkout to profile (another checkout's code with
``cd OTHER && PYTHONPATH=. python PATH/TO/profile_encode.py``). The phases are wall seconds of the
functions named, wrapped with a timer: ``encode_batch`` runs on the encoding thread while the
main thread reads the next batch and writes the last one, so the phases overlap and add up to
more than the total. ``cpu`` is the whole process with its children (the ``--verify`` checker,
the reference's workers); ``checker+workers`` is the children's share. The run with the least
wall time is shown. The machine is shared: compare CPU seconds, and runs made side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import workdir  # noqa: E402
from bench_encode import TOKENIZERS, compile_toktools, job_environment, sample_file  # noqa: E402

_PROFILED = r"""
import json, resource, sys, time
job = json.loads(sys.argv[1])
times = {}
def timed(owner, attr, name):
    real = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            times[name] = times.get(name, 0.0) + time.perf_counter() - start
    setattr(owner, attr, wrapper)
def timed_iterator(owner, attr, name):
    real = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        items = real(*args, **kwargs)
        while True:
            start = time.perf_counter()
            item = next(items, None)
            times[name] = times.get(name, 0.0) + time.perf_counter() - start
            if item is None:
                return
            yield item
    setattr(owner, attr, wrapper)
started = time.perf_counter()
import toktools.corpus.encode as api
from toktools.corpus import verify as corpus_verify
from toktools.corpus import writers as corpus_writers
from toktools.corpus import shards as encode_shards
from toktools.engines import analysis, choice
from toktools.engines.reference import ReferenceEngine
from toktools.engines.tiktoken_engine import TiktokenEngine
from toktools.engines.tokenizers_engine import TokenizersEngine
times["import"] = time.perf_counter() - started
timed(encode_shards, "load_corpus_tokenizer", "load tokenizer (cached: not parsed)")
timed(encode_shards, "check_outputs", "check outputs")
timed(encode_shards, "input_entries", "input sha256")
timed(analysis, "analyse", "exactness analysis")
timed(choice, "make_engine", "build engine")
timed(corpus_verify.Verifier, "check", "verify: send sample")
timed(corpus_verify.Verifier, "sync", "verify: wait for checker")
timed(corpus_writers.DocumentWriter, "flush", "ids to bytes + write")
timed(corpus_writers.DocumentWriter, "finish", "finish shard (fsync, sha256, index)")
timed_iterator(encode_shards, "_batches", "read + split (main thread)")
for engine in (TokenizersEngine, TiktokenEngine, ReferenceEngine):
    timed(engine, "encode_batch", "encode_batch (encoding thread)")
timed(TiktokenEngine, "encode_packed", "encode_packed (encoding thread)")
import shutil, tempfile
out = tempfile.mkdtemp(prefix="profile-encode-")
start = time.perf_counter()
result = api.encode_corpus([job["path"]], job["tokenizer"], out + "/shard", format="megatron", engine=job["engine"],
                           shard_tokens=2_000_000, append_eos=False, verify=job["verify"])
total = time.perf_counter() - start
shutil.rmtree(out)
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"engine": result.engine, "total": times["import"] + total,
                  "cpu": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
                  "checker+workers": kids.ru_utime + kids.ru_stime, "phases": times}))
"""

_RAW = r"""
import json, os, resource, sys, time
job = json.loads(sys.argv[1])
from toktools.engines.analysis import analyse
from toktools.corpus.prepared_tokenizer import load_document
doc, fingerprint = load_document(job["tokenizer"])
lines = [line for line in open(job["path"], encoding="utf-8").read().split("\n") if line]
analysis = analyse(doc, fingerprint)
def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime
if analysis.tiktoken_reason is None:
    import tiktoken
    plan = analysis.plan
    enc = tiktoken.Encoding("raw", pat_str=plan.pattern, mergeable_ranks=plan.mergeable_ranks, special_tokens=plan.special_tokens)
    start, cpu_start = time.perf_counter(), cpu()
    enc.encode_ordinary_batch(lines, num_threads=os.cpu_count())
    name = "tiktoken encode_ordinary_batch"
else:
    import tokenizers
    hf = tokenizers.Tokenizer.from_str(json.dumps(doc))
    start, cpu_start = time.perf_counter(), cpu()
    hf.encode_batch(lines, add_special_tokens=False)
    name = "tokenizers encode_batch"
print(json.dumps({"engine": name, "total": time.perf_counter() - start, "cpu": cpu() - cpu_start}))
"""


def run(script: str, job: dict) -> dict:
    completed = subprocess.run(
        [sys.executable, "-c", script, json.dumps(job)], capture_output=True, text=True, env=job_environment()
    )
    if completed.returncode != 0:
        sys.exit(f"profile job failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=5, help="input size in MB")
    parser.add_argument("--tokenizers", default=",".join(TOKENIZERS))
    parser.add_argument("--langs", default="en,zh")
    parser.add_argument("--engine", default="auto")
    parser.add_argument("--verify", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="fresh runs per case (the fastest is shown)")
    args = parser.parse_args()
    compile_toktools()
    for lang in args.langs.split(","):
        path = str(sample_file(lang, args.size, workdir()))
        for name in args.tokenizers.split(","):
            job = {"path": path, "tokenizer": TOKENIZERS[name], "engine": args.engine, "verify": args.verify}
            raws, runs = [], []
            for _ in range(max(1, args.repeat)):  # side by side, so that both see the same load
                raws.append(run(_RAW, job))
                runs.append(run(_PROFILED, job))
            raw, best = min(raws, key=lambda r: r["total"]), min(runs, key=lambda r: r["total"])
            print(
                f"{name} {lang} {args.size} MB, engine {args.engine}→{best['engine']}, verify {args.verify} "
                f"(load {os.getloadavg()[0]:.1f})"
            )
            print(f"  raw {raw['engine']}: {raw['total']:.3f} s, cpu {min(r['cpu'] for r in raws):.3f} s")
            print(
                f"  toktools end to end: {best['total']:.3f} s, cpu {min(r['cpu'] for r in runs):.3f} s "
                f"(checker+workers {best['checker+workers']:.3f} s) → {raw['total'] / best['total']:.2f}x wall, "
                f"{min(r['cpu'] for r in raws) / min(r['cpu'] for r in runs):.2f}x cpu"
            )
            for phase, seconds in best["phases"].items():
                print(f"    {phase:<38}{seconds:>7.3f} s")


if __name__ == "__main__":
    main()
