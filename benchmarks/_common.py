"""Shared helpers for the benchmarks: find the corpora, run one job in a fresh process and
measure its wall time and peak memory, print ratios.

Each job runs in its own subprocess so that peak memory (ru_maxrss of the process and of its
worker processes) belongs to that job alone, and so that no cache is shared between backends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKTOOLS_SHARED", REPO.parent / "shared"))
CORPORA = Path(os.environ.get("TOKTOOLS_CORPORA", SHARED / "corpora"))

ENGLISH = ["en_wiki.txt.gz"]
CHINESE = ["zh_poetry.txt.gz", "zh_novels.txt", "zh_wiki_sample.txt"]


def corpus_files(names: list[str], workdir: Path) -> list[str]:
    """The shared corpus files, decompressed into ``workdir`` (tokenizers reads plain text only)."""
    import gzip
    import shutil

    out = []
    for name in names:
        source = CORPORA / name
        if not source.exists():
            sys.exit(f"corpus {source} not found (set TOKTOOLS_CORPORA)")
        if source.suffix == ".gz":
            target = workdir / source.stem
            if not target.exists():
                with gzip.open(source, "rb") as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            out.append(str(target))
        else:
            out.append(str(source))
    return out


_RUNNER = r"""
import json, resource, sys, time
job = json.loads(sys.argv[1])
namespace = {}
exec(job["setup"], namespace)
start = time.perf_counter()
exec(job["run"], namespace)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_mib": peak / 1024, "result": namespace.get("result")}))
"""


def run_job(setup: str, run: str) -> dict:
    """Run ``setup`` then time ``run`` in a fresh interpreter; ``result`` may be set by ``run``."""
    completed = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps({"setup": setup, "run": run})],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if completed.returncode != 0:
        sys.exit(f"benchmark job failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def workdir() -> Path:
    path = Path(os.environ.get("TOKTOOLS_BENCH_DIR", Path(tempfile.gettempdir()) / "toktools-bench"))
    path.mkdir(parents=True, exist_ok=True)
    return path
