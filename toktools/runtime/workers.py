"""Worker processes: the one place that starts them, so that every pool behaves the same.

* never more processes than cores (more only thrash a machine and cost start-up time);
* workers leave Ctrl-C and SIGTERM to the parent, which stops cleanly with one message;
* a worker never outlives its parent: on Linux the kernel kills it when the parent dies
  (``PR_SET_PDEATHSIG``), elsewhere a watcher thread notices the new parent pid;
* leaving the pool early (an error, an interrupt) stops the workers at once instead of
  letting them finish the queued work.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a pool starts: ~15 ms of every run's start-up otherwise
    from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cap_workers(requested: int | None) -> int | None:
    """``requested`` workers, but never more than the cores (``None`` stays ``None``: the
    caller picks its default)."""
    return None if requested is None else max(1, min(requested, available_cores()))


def worth_starting(requested: int, items: int, per_worker: int) -> int:
    """How many of ``requested`` workers are worth starting for ``items`` pieces of work, each
    worker wanting at least ``per_worker`` of them (1: stay in this process)."""
    return max(1, min(requested, available_cores(), items // max(1, per_worker)))


def fork_available() -> bool:
    """Workers can be forked here (and so inherit the parent's memory instead of pickling it)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _die_with_parent(parent: int) -> None:
    """Make the kernel kill this worker when its parent dies; a thread watches the parent pid
    where that is not available."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="toktools-parent-watch", daemon=True).start()


def worker_init(parent: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()) -> None:
    """Run in every worker: Ctrl-C and SIGTERM are the parent's business (it sends SIGTERM to
    stop us, and that must kill us silently, not run the parent's handler we inherited). The
    parent's signal wakeup fd is dropped too: a signal a worker receives must not wake the
    parent's watcher (:mod:`toktools.runtime.interrupts`), which would then stop the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    _die_with_parent(parent)
    if initializer is not None:
        initializer(*initargs)


def start_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> ProcessPoolExecutor:
    """A pool of at most ``workers`` forked processes (capped at the cores) that behave as the
    module docstring says; for a pool kept across calls (an engine), stopped by :func:`stop_pool`.
    Prefer :func:`process_pool` where a ``with`` block fits. ``initializer(*initargs)`` runs in
    every worker after the signal set-up (with fork, ``initargs`` are inherited, not pickled).
    The workers are forked on the first ``submit``."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context: multiprocessing.context.BaseContext
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform
        context = multiprocessing.get_context()
    return ProcessPoolExecutor(
        max_workers=cap_workers(workers),
        mp_context=context,
        initializer=worker_init,
        initargs=(os.getpid(), initializer, initargs),
    )


@contextmanager
def process_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> Iterator[ProcessPoolExecutor]:
    """A pool of at most ``workers`` forked processes (capped at the cores).

    Forked workers inherit the parent's memory (e.g. a loaded tokenizer), so nothing big is
    pickled. On normal exit the pool finishes its work; on an exception (including an
    interrupt, and ``GeneratorExit`` when a generator holding the pool is closed) the queued
    work is dropped and the workers are killed before it propagates."""
    pool = start_pool(workers, initializer, initargs)
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    else:
        pool.shutdown(wait=True)


#: Seconds a worker has to exit on SIGTERM before it is killed.
TERMINATE_GRACE_SECONDS = 5.0


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Drop queued work and kill the workers now (they hold no state worth saving); callers
    still waiting on a result get ``BrokenProcessPool``."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=TERMINATE_GRACE_SECONDS)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
    # Let the pool's manager thread see the dead workers and close its pipes now: left running
    # into interpreter exit, it races concurrent.futures' exit hook (Python 3.11), which then
    # prints "Exception ignored in: <module 'threading'>" after our one line. A signal can land
    # after the pool made its manager thread but before it started it (ident still None):
    # joining that one raises "cannot join thread before it is started".
    if manager is not None and manager.ident is not None and manager is not threading.current_thread():
        manager.join(timeout=5)


_stop = stop_pool
