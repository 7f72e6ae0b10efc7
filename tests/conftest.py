"""Shared fixtures: where the read-only research material lives, and skips when it is absent.

The corpora and published vocabularies are never copied into this repository. Tests that need
them read ``../shared`` (next to the checkout) or the directory named by ``TOKTOOLS_SHARED``;
``TOKTOOLS_CORPORA`` overrides just the corpora folder. When they are missing the tests skip
with a reason that says where they were looked for.
"""

from __future__ import annotations

import functools
import gzip
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# A small training job on a cold cache starts compiling its kernel in a detached process for the
# next job (toktools/runtime/background_compile.py): the suite's jobs, and the commands its tests
# start, must not spend cores on compiles nobody waits for. test_background_compile.py turns it on.
os.environ.setdefault("TOKTOOLS_BACKGROUND_COMPILE", "0")


def _keep_bytecode_outside_the_tree() -> None:
    """Under ``PYTHONDONTWRITEBYTECODE`` every process compiles every module it imports from
    source: each ``toktools`` command a test starts (~0.3 s of CPU), and pytest's rewrite of each
    test module in each worker. The suite keeps its bytecode in ``.pytest_cache/pycache``
    instead, which pytest writes anyway and git ignores; the checkout itself stays clean."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = str(REPO_ROOT / ".pytest_cache" / "pycache")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix  # for the processes the tests start
    sys.dont_write_bytecode, sys.pycache_prefix = False, prefix  # for this one


_keep_bytecode_outside_the_tree()
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
    Read once per session (many modules take the same samples; a ``str`` is safe to share).
    """
    corpus_path(name)  # skips when absent (a skip is not cached)
    return _read_corpus_sample(name, max_bytes, skip_lines)


@functools.cache
def _read_corpus_sample(name: str, max_bytes: int, skip_lines: int) -> str:
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


# ---------------------------------------------------------------------------------------------
# Code-point sweeps: a sample by default, every scalar value under ``-m full``
# ---------------------------------------------------------------------------------------------

#: Every this-many-th code point is in the sample, besides the places where behaviour changes.
SAMPLE_STEP = 97
#: Blocks taken whole: ASCII and Latin with its combining marks, Greek, Cyrillic.
SAMPLE_WHOLE_BLOCKS = ((0x0000, 0x052F),)
_HEX_RANGE = re.compile(r"\b([0-9A-Fa-f]{1,6})(?:-([0-9A-Fa-f]{1,6}))?\b")


def _is_scalar(code_point: int) -> bool:
    return 0 <= code_point < 0x110000 and not 0xD800 <= code_point <= 0xDFFF


@functools.cache
def all_unicode_scalars() -> tuple[int, ...]:
    """All 1,112,064 Unicode scalar values (code points but the surrogates), in order."""
    return tuple(c for c in range(0x110000) if _is_scalar(c))


@functools.cache
def sampled_unicode_scalars() -> tuple[int, ...]:
    """A deterministic sample of about 2.5 % of the scalar values, in code point order, for the
    default run's sweeps (the full sweeps run under ``-m full``): every ``SAMPLE_STEP``-th code
    point; ``SAMPLE_WHOLE_BLOCKS``; every key of toktools' generated per-code-point tables and
    both ends, the middle and the outer neighbours of each of their ranges (where tokenizers'
    behaviour changes, measured from tokenizers itself); and both sides of every change of
    general category, combining class or decomposition in Python's ``unicodedata`` (which
    toktools does not use, so this part is independent of the tables)."""
    import importlib
    import unicodedata

    points: set[int] = set(range(0, 0x110000, SAMPLE_STEP))
    for first, last in SAMPLE_WHOLE_BLOCKS:
        points.update(range(first, last + 1))

    def add_range(first: int, last: int) -> None:
        points.update((first - 1, first, (first + last) // 2, last, last + 1))

    def walk(value: object) -> None:
        if isinstance(value, dict):
            points.update(key for key in value if isinstance(key, int))
            for item in value.values():
                walk(item)
        elif isinstance(value, (tuple, list)):
            if len(value) in (2, 3) and all(isinstance(item, int) for item in value):
                add_range(value[0], value[1])
            else:
                for item in value:
                    walk(item)
        elif isinstance(value, str) and re.fullmatch(r"[0-9A-Fa-f\- ]+", value):
            for match in _HEX_RANGE.finditer(value):
                add_range(int(match[1], 16), int(match[2] or match[1], 16))

    for name in ("bert", "bytelevel", "parts"):
        tables = importlib.import_module(f"toktools.tables.{name}")
        for attribute, value in vars(tables).items():
            if attribute.isupper():
                walk(value)
    previous = None
    for code_point in range(0x110000):
        char = chr(code_point)
        properties = (
            unicodedata.category(char),
            unicodedata.combining(char),
            bool(unicodedata.decomposition(char)),
        )
        if properties != previous:
            points.update((code_point - 1, code_point))
        previous = properties
    return tuple(sorted(c for c in points if _is_scalar(c)))


@pytest.fixture(
    scope="session",
    params=[pytest.param("sample", id="sample"), pytest.param("all", id="every", marks=pytest.mark.full)],
)
def unicode_scalars(request: pytest.FixtureRequest) -> tuple[int, ...]:
    """The scalar values a code-point sweep covers: the sample (default run) or all of them
    (``-m full``). Tests that take it run once for each."""
    return sampled_unicode_scalars() if request.param == "sample" else all_unicode_scalars()


@pytest.fixture
def shared_dir() -> Path:
    return _require(SHARED_DIR, "the shared research folder")


# ---------------------------------------------------------------------------------------------
# The user cache (TOKTOOLS_CACHE_DIR or ~/.cache/toktools), warmed once per session
# ---------------------------------------------------------------------------------------------

#: Fills what many tests read from the user cache: the byte-level merge and split and the WordPiece
#: kernels as machine code (numba compiles, ~2.5 s, ~1.5 s, ~2 s, when the cache is cold; a load otherwise), and compare's jieba
#: segmenter (a compile and the dictionary's trie, ~4 s cold).
_WARM_UP = """
from toktools.engines.ids_only import ids_encoder
from toktools.formats import load
ids_encoder(load("bytebpe-50k")).load_compiled()
try:  # the compiled GPT-2 split of the lazy byte-level batches
    from toktools.models.bpe.compiled_split import CompiledSplit
    CompiledSplit()
except ImportError:
    pass
try:  # the compiled WordPiece of the lazy WordPiece batches
    from toktools.models.wordpiece.compiled import _KERNEL
    from toktools.runtime.machine_code import kernel
    kernel(*_KERNEL)
except ImportError:
    pass
try:  # compare's jieba segmentation: its kernel and jieba's dictionary as a trie
    from toktools.analysis.han_segmenter import segmenter
    segmenter()
except ImportError:
    pass
try:  # gigatoken's classes of every code point against tokenizers' (once per gigatoken version)
    from toktools.engines.gigatoken_probe import unicode_disagreements
    unicode_disagreements()
except ImportError:
    pass
"""
_WARMING: list[Any] = []


#: Above this many items (bytes, characters, list elements), a failed ``==`` is explained by
#: its lengths and first difference, not by pytest's difflib diff, which is quadratic: on two
#: 800 KB byte strings it ran for more than 20 minutes, so a failing test looked like a hang.
_LARGE_OPERAND = 10_000


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    """A short explanation for ``==`` between large sequences (see :data:`_LARGE_OPERAND`)."""
    if op != "==" or not isinstance(left, (bytes, str, list, tuple)) or type(left) is not type(right):
        return None
    if max(len(left), len(right)) <= _LARGE_OPERAND:
        return None
    first = next((k for k, (a, b) in enumerate(zip(left, right)) if a != b), min(len(left), len(right)))
    return [
        f"{type(left).__name__} of {len(left):,} == {type(right).__name__} of {len(right):,} items",
        f"first difference at index {first:,}:",
        f"  left:  {left[max(0, first - 20) : first + 40]!r}",
        f"  right: {right[max(0, first - 20) : first + 40]!r}",
    ]


def pytest_configure(config: pytest.Config) -> None:
    """Warm the user cache once per session, in a process of its own while the tests are being
    collected (by the pytest-xdist controller, not by each worker): on a cold cache the workers
    then find the compiled code instead of each compiling it."""
    import subprocess
    import sys

    if IN_DASK_CHILD or hasattr(config, "workerinput") or config.option.collectonly:
        return
    if os.environ.get("TOKTOOLS_CACHE_DIR") == "":  # the cache is turned off
        return
    _WARMING.append(  # run in the checkout, so that it imports this toktools
        subprocess.Popen(
            [sys.executable, "-c", _WARM_UP], cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """A warm-up still going (a short session) is let finish its entry, not cut off mid-write."""
    import subprocess

    for process in _WARMING:
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    _WARMING.clear()


#: Set in the child pytest process that runs the Dask cluster tests.
DASK_CHILD_VARIABLE = "TOKTOOLS_DASK_TEST_CHILD"
IN_DASK_CHILD = os.environ.get(DASK_CHILD_VARIABLE) == "1"
#: The test, in each Dask test module, that checks the module's cluster tests in the child run.
CHILD_RUNNER = "test_the_cluster_tests_pass_in_a_fresh_process"
#: Under pytest-xdist, the folder (in each worker's ``workerinput``) where the controller's
#: child run writes ``output.txt``, then ``returncode`` when it has finished.
XDIST_CHILD_FOLDER = "toktools_dask_child_folder"

#: The child run of this session, started when collection finishes: files → (process, output file).
#: (Test modules import this module as ``conftest``, the name pytest loads it under: as
#: ``tests.conftest`` it would be a second module with its own, empty, state.)
_CHILD_PROCESSES: dict[tuple[str, ...], tuple[Any, Any]] = {}
#: Its outcomes once it has finished: files → (outcome → node ids, output).
_CHILD_RUNS: dict[tuple[str, ...], tuple[dict[str, list[str]], str]] = {}
#: The controller's folder for the child run under pytest-xdist (see ``XDIST_CHILD_FOLDER``).
_XDIST_FOLDER: list[Path] = []


def _child_files(items: list[pytest.Item]) -> tuple[str, ...]:
    """The Dask test modules among ``items``: those whose runner test was collected."""
    return tuple(
        sorted(
            {
                item.path.relative_to(REPO_ROOT).as_posix()
                for item in items
                if getattr(item, "originalname", None) == CHILD_RUNNER
            }
        )
    )


def _start_child(files: tuple[str, ...], output_path: Path | None = None) -> Any:
    """Start one child pytest process for the cluster tests of ``files``, in its own session
    (so that an aborted parent run can stop it and its Dask workers together), writing its
    output to ``output_path`` (a temporary file if none). It runs its tests itself (``-n 0``)."""
    import importlib.util
    import subprocess
    import sys
    import tempfile

    output = (
        open(output_path, "w+", encoding="utf-8")
        if output_path is not None
        else tempfile.TemporaryFile("w+", encoding="utf-8")
    )
    serial = ["-n", "0"] if importlib.util.find_spec("xdist") is not None else []
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:logging", "-p", "no:cacheprovider", *serial, *files],
        env={**os.environ, DASK_CHILD_VARIABLE: "1"},
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO_ROOT,
        start_new_session=True,
    )
    _CHILD_PROCESSES[files] = (process, output)
    return process


def _starts_early(config: pytest.Config) -> bool:
    return not IN_DASK_CHILD and not config.option.collectonly and os.environ.get("TOKTOOLS_DASK_CHILD_LATE") != "1"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the cluster tests' child run now: it then runs alongside the tests before the first
    runner test (the parent mostly keeps one core busy), which only waits for its outcomes.
    (Under pytest-xdist the controller starts it instead: ``pytest_xdist_node_collection_finished``.)"""
    files = _child_files(session.items)
    if files and _starts_early(session.config) and not hasattr(session.config, "workerinput"):
        _start_child(files)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller: tell each worker where the one child run writes its outcome."""
    import tempfile

    if not _XDIST_FOLDER:
        _XDIST_FOLDER.append(Path(tempfile.mkdtemp(prefix="toktools-dask-child-")))
    node.workerinput[XDIST_CHILD_FOLDER] = str(_XDIST_FOLDER[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """pytest-xdist controller: start the one child run for the Dask modules the workers
    collected (each worker collects every test), before any test is handed out; a thread
    writes its exit code beside its output when it ends."""
    import json
    import threading

    files = tuple(sorted({nodeid.split("::")[0] for nodeid in ids if nodeid.endswith("::" + CHILD_RUNNER)}))
    if not files or not _XDIST_FOLDER or _CHILD_PROCESSES or not _starts_early(node.config):
        return
    folder = _XDIST_FOLDER[0]
    (folder / "files.json").write_text(json.dumps(files), encoding="utf-8")
    process = _start_child(files, folder / "output.txt")

    def note_the_end() -> None:
        code = process.wait()
        (folder / "returncode.tmp").write_text(str(code), encoding="utf-8")
        (folder / "returncode.tmp").replace(folder / "returncode")

    threading.Thread(target=note_the_end, name="dask child run", daemon=True).start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A child run still going (the parent run was cut short) is stopped with its workers."""
    import shutil
    import signal

    for process, output in _CHILD_PROCESSES.values():
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
        output.close()
    _CHILD_PROCESSES.clear()
    for folder in _XDIST_FOLDER:
        shutil.rmtree(folder, ignore_errors=True)
    _XDIST_FOLDER.clear()


def run_in_fresh_process(request: pytest.FixtureRequest, expected_passed: int, timeout: float = 900) -> None:
    """Check that the cluster tests of the calling test's module passed in a fresh pytest process.

    A LocalCluster started late in a long pytest process (after tests that fork worker pools
    and install signal handlers) was seen to hang, and importing ``distributed`` made later
    forked pools hang: so the parent process never imports Dask. One child process runs the
    cluster tests of every Dask module collected in this session (they share one cluster, the
    ``dask_client`` fixture), started as soon as collection finishes (unless
    ``TOKTOOLS_DASK_CHILD_LATE=1``: then by the first runner test; under pytest-xdist the
    controller starts it and the workers read its output); each module's runner test checks
    its own module's outcomes."""
    files = _child_files(request.session.items)
    if files not in _CHILD_RUNS:
        shared = _shared_child_folder(request.config, files)
        if shared is not None:
            _CHILD_RUNS[files] = _read_shared_child(shared, timeout)
        else:
            if files not in _CHILD_PROCESSES:
                _start_child(files)
            _CHILD_RUNS[files] = _finish_child(files, timeout)
    outcomes, output = _CHILD_RUNS[files]
    module = request.path.relative_to(REPO_ROOT).as_posix()
    mine = {outcome: [node for node in nodes if node.startswith(module + "::")] for outcome, nodes in outcomes.items()}
    bad = mine.get("FAILED", []) + mine.get("ERROR", [])
    assert not bad, f"failed in the child run: {bad}\n" + output[-5000:]
    assert len(mine.get("PASSED", [])) == expected_passed, (mine.get("PASSED"), output[-3000:])


def _shared_child_folder(config: pytest.Config, files: tuple[str, ...]) -> Path | None:
    """The folder of the controller's child run of ``files`` (pytest-xdist worker), if there is one."""
    import json

    folder = getattr(config, "workerinput", {}).get(XDIST_CHILD_FOLDER)
    if folder is None or not (Path(folder) / "files.json").exists():
        return None
    started = tuple(json.loads((Path(folder) / "files.json").read_text(encoding="utf-8")))
    return Path(folder) if started == files else None


def _read_shared_child(folder: Path, timeout: float) -> tuple[dict[str, list[str]], str]:
    """Wait for the controller's child run to end; its outcomes and output."""
    import time

    deadline = time.monotonic() + timeout
    while not (folder / "returncode").exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the child pytest run did not end within {timeout} s")
        time.sleep(0.2)
    returncode = int((folder / "returncode").read_text(encoding="utf-8"))
    return _outcomes(returncode, (folder / "output.txt").read_text(encoding="utf-8"))


def _finish_child(files: tuple[str, ...], timeout: float) -> tuple[dict[str, list[str]], str]:
    """Wait for the child run of ``files``; its outcomes by node id (from ``-rA``) and output."""
    import signal
    import subprocess

    process, output_file = _CHILD_PROCESSES.pop(files)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    output_file.seek(0)
    output = output_file.read()
    output_file.close()
    return _outcomes(process.returncode, output)


def _outcomes(returncode: int, output: str) -> tuple[dict[str, list[str]], str]:
    """A child run's outcomes by node id (from its ``-rA`` summary), and its output."""
    outcomes: dict[str, list[str]] = {}
    for line in output.splitlines():
        outcome, _, node = line.partition(" ")
        if outcome in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS") and "::" in node:
            outcomes.setdefault(outcome, []).append(node.split(" - ")[0])
    if returncode not in (0, 1) or not outcomes:  # 1: some tests failed, reported per module
        raise AssertionError(f"the child pytest run exited with {returncode}:\n" + output[-5000:])
    return outcomes, output


@pytest.fixture(scope="session")
def dask_client(tmp_path_factory: pytest.TempPathFactory):
    """One LocalCluster for the whole child run: two worker processes (one thread each) on the
    loopback, no other address. Its workers pause in each encoded block while the file named
    by ``distributed_encode.TEST_PAUSE_VARIABLE`` holds a number of seconds (set before the
    workers start, so that the workers a nanny restarts see it too)."""
    assert IN_DASK_CHILD, "Dask is only imported in the child pytest process"
    from toktools.cluster import blocks as distributed
    from toktools.cluster import encode as distributed_encode

    os.environ[distributed_encode.TEST_PAUSE_VARIABLE] = str(tmp_path_factory.mktemp("pause") / "seconds")
    with distributed.cluster_client("local:2", timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def side_process():
    """One spawned helper process for ``tokenizers``' side of the training parity tests: it
    trains there while toktools trains in the test process, so on two cores a comparison takes
    about as long as the slower side instead of both added up. Spawned, not forked: a fork
    would inherit ``tokenizers``' thread pool and run it single-threaded (or hang). Module
    scoped, so that the executor's thread is gone before later modules fork worker pools.
    Submit module-level functions (they are pickled by name); results come back pickled."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool
