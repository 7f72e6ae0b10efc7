"""Training's first job on a fresh machine: the training rows of ``bench_small_jobs.py`` with an
empty user cache (``--cache cold``: nothing compiled yet, as after ``pip install``) or a warm one
(the kernel compiled), for one or more toktools trees side by side with ``tokenizers``
(A B … T, A B … T, each job in a fresh process). Prints wall and CPU seconds (own + waited
children: the counting workers, not a detached background compile) and both ratios per run:
on a loaded machine the CPU ratio is the steadier one.

    python benchmarks/bench_train_cache.py --cache cold [--trees new=.,base=../wt-base] [--repeat 2] [--train-mb 5]

With ``--cache cold`` each tree's cache directory is emptied once, before its first run: run 1
is a fresh machine's first job, run 2 the next one (a background compile started by run 1 may
have finished by then, or not).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

from _common import REPO, workdir
from bench_small_jobs import _prefix

_RUNNER = r"""
import json, resource, sys, time
job = json.loads(sys.argv[1])
namespace = {}
exec(job["setup"], namespace)
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
start_cpu, start = cpu(), time.perf_counter()
exec(job["run"], namespace)
print(json.dumps({"wall": time.perf_counter() - start, "cpu": cpu() - start_cpu}))
"""


def _run(tree: str, cache: str | None, setup: str, run: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    if cache is not None:
        env["TOKTOOLS_CACHE_DIR"] = cache
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps({"setup": setup, "run": run})],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
    )
    if done.returncode != 0:
        sys.exit(f"benchmark job failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", choices=["cold", "warm"], required=True)
    parser.add_argument("--trees", default=f"toktools={REPO}", help="label=path,... (toktools checkouts)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--train-mb", type=float, default=5.0)
    parser.add_argument("--jobs", default="bpe-en,bpe-zh,wp-en")
    args = parser.parse_args()
    trees = {label: os.path.abspath(path) for label, path in (item.split("=", 1) for item in args.trees.split(","))}
    work = workdir()
    english = _prefix("en_wiki.txt.gz", args.train_mb, work / f"en-{args.train_mb}mb.txt")
    chinese = _prefix("zh_novels.txt", args.train_mb / 2, work / f"zh-{args.train_mb / 2}mb.txt")
    jobs = {
        "bpe-en": (english, "bytebpe", 50000),
        "bpe-zh": (chinese, "bytebpe", 50000),
        "wp-en": (english, "wordpiece", 30000),
    }
    for name in args.jobs.split(","):
        path, kind, size = jobs[name]
        caches = {label: str(work / f"cache-{args.cache}-{label}") for label in trees}
        for label, tree in trees.items():
            if args.cache == "cold":
                shutil.rmtree(caches[label], ignore_errors=True)
            else:
                prepare = "from toktools.models.bpe.compiled_training import prepare_kernel"
                _run(tree, caches[label], prepare, "prepare_kernel()")
        ours = f"toktools.train_{kind}([{path!r}], {size}).save({str(work / 'cache-ours')!r})"
        if kind == "bytebpe":
            theirs = f"fast.save_bytebpe(fast.train_bytebpe([{path!r}], {size}), {str(work / 'cache-theirs')!r})"
        else:
            theirs = f"tok = fast.train_wordpiece([{path!r}], {size})"
        results: dict[str, list[dict]] = {label: [] for label in [*trees, "tokenizers"]}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                results[label].append(_run(tree, caches[label], "import toktools", ours))
            first = next(iter(trees.values()))
            results["tokenizers"].append(_run(first, None, "from toktools import fast", theirs))
        print(f"{name} {os.path.basename(path)}, cache {args.cache}")
        theirs_runs = results["tokenizers"]
        for label in trees:
            runs = "  ".join(
                f"run {k + 1}: wall {a['wall']:.2f}s ({a['wall'] / b['wall']:.2f}×) cpu {a['cpu']:.2f}s ({a['cpu'] / b['cpu']:.2f}×)"
                for k, (a, b) in enumerate(zip(results[label], theirs_runs))
            )
            print(f"  {label:<10} {runs}")
        runs = "  ".join(f"run {k + 1}: wall {b['wall']:.2f}s cpu {b['cpu']:.2f}s" for k, b in enumerate(theirs_runs))
        print(f"  {'tokenizers':<10} {runs}", flush=True)


if __name__ == "__main__":
    main()
