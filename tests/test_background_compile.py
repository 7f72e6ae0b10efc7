"""The training kernel on a fresh machine.

Where the LLVM IR shipped in toktools/tables/lowered_kernels.py applies (lowered from the current
sources, same LLVM major version and triple), the kernel is machine code in a tenth of a second,
so even a first small job runs it; the IR must be regenerated when the kernel's sources change.

Elsewhere, kernels are compiled in a detached process (toktools.runtime.background_compile): a
small training job on a cold cache runs the Python engines and leaves the kernel compiling for
the next job; the process stores the machine code the next job loads, one process at a time (a
held lock starts nothing), remembers a kernel that cannot compile, and starts nothing when the
suite turns it off (conftest sets ``TOKTOOLS_BACKGROUND_COMPILE=0``; these tests turn it on)."""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest

pytest.importorskip("numba")
pytest.importorskip("llvmlite")

from toktools.models.bpe import compiled_training  # noqa: E402
from toktools.models.bpe import trainer as bpe  # noqa: E402
from toktools.runtime import background_compile, compile_lock, machine_code  # noqa: E402

#: A kernel small enough to compile in well under a second (a sum over a pointer).
_TINY = '''
from numba import carray


def total_at(n, values):
    """The sum of ``n`` int64 values."""
    values = carray(values, (n,))
    out = 0
    for i in range(n):
        out += values[i]
    return out


def broken_at(n, values):
    """Not compilable: a Python object numba cannot type."""
    return len(object()) + n
'''
_PARAMETERS = ("int64", "int64*")


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty user cache, background compiles on, and the tiny kernel module importable here
    and in the detached process (its ``PYTHONPATH``)."""
    package = tmp_path / "modules"
    package.mkdir()
    name = f"toktools_tiny_kernel_{os.getpid()}"
    (package / f"{name}.py").write_text(textwrap.dedent(_TINY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(package), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(background_compile.VARIABLE, "1")
    monkeypatch.setattr(machine_code, "_loaded", {})
    return name


def _finished(process: subprocess.Popen[bytes] | None) -> int:
    assert process is not None, "no background compile was started"
    return process.wait(timeout=600)  # (a generous bound: a hang fails instead of blocking CI)


def test_the_detached_process_stores_the_kernel_the_next_job_loads(fresh_cache):
    entry = machine_code.entry_path(fresh_cache, "total_at", _PARAMETERS)
    assert not machine_code.ready(fresh_cache, "total_at", _PARAMETERS)
    assert _finished(background_compile.start(fresh_cache, "total_at", _PARAMETERS)) == 0
    assert entry.exists() and machine_code.ready(fresh_cache, "total_at", _PARAMETERS)
    assert background_compile.start(fresh_cache, "total_at", _PARAMETERS) is None, "compiled already"
    from array import array

    values = array("q", [5, -2, 40, 1 << 40])
    run = machine_code.kernel(fresh_cache, "total_at", _PARAMETERS)
    assert run is not None and run(len(values), values.buffer_info()[0]) == sum(values)


def test_a_kernel_that_cannot_compile_is_not_tried_again(fresh_cache):
    entry = machine_code.entry_path(fresh_cache, "broken_at", _PARAMETERS)
    assert _finished(background_compile.start(fresh_cache, "broken_at", _PARAMETERS)) == 0, "silent"
    assert not entry.exists() and background_compile.failed_marker(entry).exists()
    assert background_compile.start(fresh_cache, "broken_at", _PARAMETERS) is None


def test_a_compile_under_way_is_not_started_twice(fresh_cache, monkeypatch):
    """While one process holds the entry's lock, no other starts a background compile, and a
    compile that would not wait returns at once (a foreground one waits: compile_into_cache)."""
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("a second compile was started"))
    entry = machine_code.entry_path(fresh_cache, "total_at", _PARAMETERS)
    with compile_lock.compile_lock(entry, wait=False) as held:
        assert held
        assert background_compile.start(fresh_cache, "total_at", _PARAMETERS) is None
        assert machine_code.compile_into_cache(fresh_cache, "total_at", _PARAMETERS, wait=False) is None
    assert not entry.exists()


def test_a_job_that_needs_the_kernel_waits_for_the_lock_then_compiles_all_the_same(fresh_cache, monkeypatch):
    """A foreground compile waits for the process holding the lock, but not for ever: a compile
    stuck at the lowest priority must not stall a job (it then compiles the kernel itself)."""
    monkeypatch.setattr(compile_lock, "WAIT_SECONDS", 0.2)
    entry = machine_code.entry_path(fresh_cache, "total_at", _PARAMETERS)
    with compile_lock.compile_lock(entry, wait=False) as held:
        assert held
        with compile_lock.compile_lock(entry, wait=False) as second:
            assert not second
        with compile_lock.compile_lock(entry, wait=True) as second:
            assert second
    with compile_lock.compile_lock(entry, wait=False) as held:
        assert held, "released"


def test_nothing_starts_when_turned_off_or_without_a_cache(fresh_cache, monkeypatch):
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail("a compile was started"))
    monkeypatch.setenv(background_compile.VARIABLE, "0")
    assert background_compile.start(fresh_cache, "total_at", _PARAMETERS) is None
    monkeypatch.setenv(background_compile.VARIABLE, "1")
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", "")
    assert background_compile.start(fresh_cache, "total_at", _PARAMETERS) is None


def test_a_small_job_on_a_cold_cache_trains_in_python_and_compiles_for_the_next(monkeypatch):
    """The job does not wait: it starts the compile of the training kernel and returns the
    Python engines' result, the literal port's."""
    from tests.test_bpe_engines import _random_case

    started = []
    monkeypatch.setattr(machine_code, "ready", lambda *kernel: False)
    monkeypatch.setattr(machine_code, "kernel", lambda *kernel: pytest.fail("the job waited for the kernel"))
    monkeypatch.setattr(background_compile, "start", lambda *kernel: started.append(kernel))
    word_counts, config = _random_case(7)
    trained = bpe.train_bpe(word_counts, config)
    assert started == [compiled_training._KERNEL]
    exact = bpe._train(word_counts, config, None, bpe._ExactEngine)
    assert (trained.vocab, trained.merges, trained.merge_counts) == (exact.vocab, exact.merges, exact.merge_counts)


@pytest.mark.full
def test_the_training_kernel_compiled_in_the_background_trains_the_next_job(tmp_path, monkeypatch):
    """The real kernel, end to end: a first small job starts its compile, the second job (after
    it) runs it, with the literal port's result."""
    from tests.test_bpe_engines import _random_case

    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(background_compile.VARIABLE, "1")
    monkeypatch.setattr(machine_code, "_loaded", {})
    monkeypatch.setattr(machine_code, "shipped_ir", lambda *kernel: None)  # (here: a machine it does not fit)
    processes = []
    start = background_compile.start
    monkeypatch.setattr(background_compile, "start", lambda *kernel: processes.append(start(*kernel)))
    word_counts, config = _random_case(3)
    exact = bpe._train(word_counts, config, None, bpe._ExactEngine)
    first = bpe.train_bpe(word_counts, config)
    assert len(processes) == 1 and _finished(processes[0]) == 0
    assert machine_code.ready(*compiled_training._KERNEL)
    second = bpe._train(word_counts, config, None, None)  # the kernel, now that it is ready
    for trained in (first, second):
        assert (trained.vocab, trained.merges, trained.merge_counts) == (exact.vocab, exact.merges, exact.merge_counts)


def test_the_shipped_ir_is_lowered_from_the_current_kernel_sources():
    """Editing a shipped kernel (or a module it imports) needs the IR lowered again:
    ``python scripts/gen_lowered_kernels.py`` (otherwise numba compiles it on each machine)."""
    from toktools.analysis.han_segmenter import _KERNEL as han
    from toktools.models.bpe.compiled_merge import _KERNEL as merge
    from toktools.models.bpe.compiled_merge import _TABLE_KERNEL as table
    from toktools.models.bpe.compiled_offsets import _KERNEL as offsets
    from toktools.models.bpe.compiled_split import _KERNEL as split
    from toktools.models.wordpiece.compiled import _KERNEL as wordpiece
    from toktools.models.wordpiece.compiled import _OFFSETS_KERNEL as wordpiece_offsets
    from toktools.models.wordpiece.compiled import _TABLE_KERNEL as wordpiece_table
    from toktools.tables.lowered_kernels import KERNELS

    kernels = [
        compiled_training._KERNEL,
        merge,
        table,
        split,
        offsets,
        wordpiece,
        wordpiece_table,
        wordpiece_offsets,
        han,
    ]
    assert sorted(KERNELS) == sorted(f"{module}.{function}" for module, function, _ in kernels)
    for module, function, parameters in kernels:
        record = KERNELS[f"{module}.{function}"]
        assert tuple(record["parameters"]) == tuple(parameters), function
        assert record["sources"] == machine_code.source_key(module), (
            f"{function}: run python scripts/gen_lowered_kernels.py"
        )


def _check_random_cases(seeds) -> None:
    from tests.test_bpe_engines import _random_case

    for seed in seeds:
        word_counts, config = _random_case(seed)
        exact = bpe._train(word_counts, config, None, bpe._ExactEngine)
        try:
            compiled = bpe._train(word_counts, config, None, None)
        except bpe._DuplicateToken:
            continue  # (the exact engine trains those: tested in test_bpe_engines)
        assert (compiled.vocab, compiled.merges, compiled.merge_counts) == (
            exact.vocab,
            exact.merges,
            exact.merge_counts,
        ), seed


def _shipped_ir_applies() -> None:
    from toktools.tables.lowered_kernels import KERNELS

    if machine_code.shipped_ir(*compiled_training._KERNEL) is None:
        record = KERNELS[".".join(compiled_training._KERNEL[:2])]
        pytest.skip(f"the shipped IR is for LLVM {record['llvm']} on {record['triple']}, not this machine")


def test_a_fresh_cache_gets_the_kernel_from_the_shipped_ir_without_numba(tmp_path, monkeypatch):
    """No numba compile (it is made to fail): the first small job runs the kernel, and learns
    what the literal port learns; without a cache too."""
    _shipped_ir_applies()
    monkeypatch.setattr(machine_code, "lower", lambda *kernel: pytest.fail("numba compiled the kernel"))
    monkeypatch.setattr(compiled_training, "COMPILE_FROM_SYMBOLS", 1 << 40)  # every job is small
    monkeypatch.setattr(background_compile, "start", lambda *kernel: pytest.fail("a compile was started"))
    for cache in (str(tmp_path / "cache"), ""):
        monkeypatch.setenv("TOKTOOLS_CACHE_DIR", cache)
        monkeypatch.setattr(machine_code, "_loaded", {})
        assert machine_code.ready(*compiled_training._KERNEL)
        _check_random_cases(range(0, 300, 10))
        assert machine_code._loaded[compiled_training._KERNEL] is not None


@pytest.mark.full
def test_the_kernel_numba_compiles_learns_what_the_shipped_ir_does(tmp_path, monkeypatch):
    """Where the shipped IR does not apply, numba compiles the kernel from its source: the same
    merges (the default run checks the shipped IR, or numba's kernel where it does not apply)."""
    monkeypatch.setenv("TOKTOOLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(machine_code, "_loaded", {})
    monkeypatch.setattr(machine_code, "shipped_ir", lambda *kernel: None)
    monkeypatch.setattr(compiled_training, "COMPILE_FROM_SYMBOLS", 0)
    _check_random_cases(range(300))
    assert machine_code._loaded[compiled_training._KERNEL] is not None
