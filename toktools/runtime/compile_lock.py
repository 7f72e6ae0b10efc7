"""One compile of a kernel at a time, across processes: a lock file beside its cache entry,
taken by a job that compiles in the foreground (:mod:`toktools.runtime.machine_code`) and by a
detached background compile (:mod:`toktools.runtime.background_compile`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: A job that needs the kernel waits this long at most for another process's compile (about what
#: one takes on a loaded machine), then compiles it itself: a compile starved at the lowest
#: priority on a busy machine must not stall it.
WAIT_SECONDS = 20


@contextmanager
def compile_lock(entry: Path, *, wait: bool) -> Iterator[bool]:
    """Hold the lock of the cache entry ``entry`` while compiling it; yields whether to compile:
    with ``wait=False``, False at once when another process holds it; with ``wait=True``, True
    once the lock is free, or after :data:`WAIT_SECONDS` without it. Where there is no
    ``fcntl`` or the lock file cannot be made, it yields True without locking (compiles may then
    happen twice, as before locks). The operating system releases it if the process dies."""
    try:
        import fcntl
    except ImportError:
        yield True
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(entry.with_name(entry.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield True
        return
    try:
        held = _try_lock(fcntl, handle)
        if wait and not held:  # polled, not blocked: a compile stuck elsewhere must not stall this one
            import time

            deadline = time.monotonic() + WAIT_SECONDS
            while not held and time.monotonic() < deadline:
                time.sleep(0.05)
                held = _try_lock(fcntl, handle)
        yield held or wait  # (waited long enough: compile here all the same)
    finally:
        os.close(handle)  # closing releases the lock


def _try_lock(fcntl: Any, handle: int) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held elsewhere (or a file system without locks)
        return False
    return True
