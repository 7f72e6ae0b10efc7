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


#: Set in the child pytest process that runs the Dask cluster tests.
DASK_CHILD_VARIABLE = "TOKTOOLS_DASK_TEST_CHILD"
IN_DASK_CHILD = os.environ.get(DASK_CHILD_VARIABLE) == "1"
#: The test, in each Dask test module, that checks the module's cluster tests in the child run.
CHILD_RUNNER = "test_the_cluster_tests_pass_in_a_fresh_process"

#: Outcomes of the child runs made in this session: files run → (outcome → node ids, output).
_CHILD_RUNS: dict[tuple[str, ...], tuple[dict[str, list[str]], str]] = {}


def run_in_fresh_process(request: pytest.FixtureRequest, expected_passed: int, timeout: float = 900) -> None:
    """Check that the cluster tests of the calling test's module passed in a fresh pytest process.

    A LocalCluster started late in a long pytest process (after tests that fork worker pools
    and install signal handlers) was seen to hang, and importing ``distributed`` made later
    forked pools hang: so the parent process never imports Dask. One child process runs the
    cluster tests of every Dask module collected in this session (they share one cluster, the
    ``dask_client`` fixture); each module's runner test then checks its own module's outcomes."""
    files = tuple(sorted({item.path.relative_to(REPO_ROOT).as_posix() for item in request.session.items
                          if getattr(item, "originalname", None) == CHILD_RUNNER}))
    if files not in _CHILD_RUNS:
        _CHILD_RUNS[files] = _run_child(files, timeout)
    outcomes, output = _CHILD_RUNS[files]
    module = request.path.relative_to(REPO_ROOT).as_posix()
    mine = {outcome: [node for node in nodes if node.startswith(module + "::")] for outcome, nodes in outcomes.items()}
    bad = mine.get("FAILED", []) + mine.get("ERROR", [])
    assert not bad, f"failed in the child run: {bad}\n" + output[-5000:]
    assert len(mine.get("PASSED", [])) == expected_passed, (mine.get("PASSED"), output[-3000:])


def _run_child(files: tuple[str, ...], timeout: float) -> tuple[dict[str, list[str]], str]:
    """Run ``files`` in one child pytest process; its outcomes by node id (from ``-rA``)."""
    import subprocess
    import sys

    env = {**os.environ, DASK_CHILD_VARIABLE: "1"}
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:logging", "-p", "no:cacheprovider",
                                *files], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
    output = completed.stdout + completed.stderr
    outcomes: dict[str, list[str]] = {}
    for line in completed.stdout.splitlines():
        outcome, _, node = line.partition(" ")
        if outcome in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS") and "::" in node:
            outcomes.setdefault(outcome, []).append(node.split(" - ")[0])
    if completed.returncode not in (0, 1) or not outcomes:  # 1: some tests failed, reported per module
        raise AssertionError(f"the child pytest run exited with {completed.returncode}:\n" + output[-5000:])
    return outcomes, output


@pytest.fixture(scope="session")
def dask_client(tmp_path_factory: pytest.TempPathFactory):
    """One LocalCluster for the whole child run: two worker processes (one thread each) on the
    loopback, no other address. Its workers pause in each encoded block while the file named
    by ``distributed_encode.TEST_PAUSE_VARIABLE`` holds a number of seconds (set before the
    workers start, so that the workers a nanny restarts see it too)."""
    assert IN_DASK_CHILD, "Dask is only imported in the child pytest process"
    from toktools import distributed, distributed_encode

    os.environ[distributed_encode.TEST_PAUSE_VARIABLE] = str(tmp_path_factory.mktemp("pause") / "seconds")
    with distributed.cluster_client("local:2", timeout=60) as client:
        yield client
