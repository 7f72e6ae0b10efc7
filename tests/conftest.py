"""Shared fixtures: where the read-only research material lives, and skips when it is absent.

The corpora and published vocabularies are never copied into this repository. Tests that need
them read ``../shared`` (next to the checkout) or the directory named by ``TOKTOOLS_SHARED``;
``TOKTOOLS_CORPORA`` overrides just the corpora folder. When they are missing the tests skip
with a reason that says where they were looked for.
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = Path(os.environ.get("TOKTOOLS_SHARED", REPO_ROOT.parent / "shared"))
CORPORA_DIR = Path(os.environ.get("TOKTOOLS_CORPORA", SHARED_DIR / "corpora"))
VOCABS_REF_DIR = SHARED_DIR / "vocabs-ref"


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what} not found at {path} (set TOKTOOLS_SHARED / TOKTOOLS_CORPORA to run this test)")
    return path


def corpus_path(name: str) -> Path:
    """Path of a shared corpus file, or skip the test with a clear reason."""
    return _require(CORPORA_DIR / name, f"shared corpus {name!r}")


def ref_vocab_dir(name: str) -> Path:
    """Directory of a published vocabulary in ``shared/vocabs-ref``, or skip."""
    return _require(VOCABS_REF_DIR / name, f"published vocabulary {name!r}")


def read_corpus_sample(name: str, max_bytes: int, *, skip_lines: int = 0) -> str:
    """The first ``max_bytes`` (cut at a line end) of a shared corpus, decompressing ``.gz``.

    Tests sample the corpora to keep the suite fast; full sizes belong to ``benchmarks/``.
    """
    path = corpus_path(name)
    opener = gzip.open if path.suffix == ".gz" else open
    out: list[str] = []
    size = 0
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        for index, line in enumerate(handle):
            if index < skip_lines:
                continue
            out.append(line)
            size += len(line.encode("utf-8"))
            if size >= max_bytes:
                break
    return "".join(out)


@pytest.fixture
def shared_dir() -> Path:
    return _require(SHARED_DIR, "the shared research folder")


#: Set in the child pytest process that runs a module's Dask cluster tests.
DASK_CHILD_VARIABLE = "TOKTOOLS_DASK_TEST_CHILD"
IN_DASK_CHILD = os.environ.get(DASK_CHILD_VARIABLE) == "1"


def run_in_fresh_process(test_file: str, expected_passed: int, timeout: float = 900) -> None:
    """Run ``test_file``'s cluster tests in a fresh pytest process and check they all passed.

    A LocalCluster started late in a long pytest process (after tests that fork worker pools
    and install signal handlers) was seen to hang, and importing ``distributed`` made later
    forked pools hang: so the parent process never imports Dask."""
    import subprocess
    import sys

    env = {**os.environ, DASK_CHILD_VARIABLE: "1"}
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:logging", "-p", "no:cacheprovider", test_file],
                               env=env, capture_output=True, text=True, timeout=timeout,
                               cwd=Path(__file__).resolve().parent.parent)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    assert f"{expected_passed} passed" in completed.stdout, completed.stdout[-2000:]
