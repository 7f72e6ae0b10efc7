"""Compiling a kernel in a detached, low-priority process, so that the next job finds its
machine code in the user cache (:mod:`toktools.runtime.machine_code`).

A small job does not wait for numba (seconds) when the Python steps finish sooner; it starts
this process instead and runs them. The process:

* runs at the lowest priority (``nice 19``), its output discarded: a failure is never shown,
  and is remembered (a marker next to the entry) so that later jobs do not try again;
* holds the entry's lock while it compiles (:func:`~toktools.runtime.compile_lock.compile_lock`, also taken by a job that
  compiles in the foreground, which then waits, :data:`~toktools.runtime.compile_lock.WAIT_SECONDS` at most, and reads the
  entry): the kernel is not compiled twice at once, and a second job sees the lock and starts
  nothing;
* ends by itself: at most :data:`CPU_SECONDS` of CPU and :data:`WALL_SECONDS` of wall time.

``TOKTOOLS_BACKGROUND_COMPILE=0`` turns it off (the test suite does: its jobs must not spend
cores on compiles nobody waits for); so does a cache turned off (``TOKTOOLS_CACHE_DIR=``),
where there is nowhere to keep the code. It needs ``fcntl`` (POSIX) for the lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from toktools.runtime.compile_lock import compile_lock

#: The process stops past this much CPU time (numba needs about 5 s for the training kernel).
CPU_SECONDS = 300
#: ... or this much wall time (at the lowest priority on a busy machine, it may wait long).
WALL_SECONDS = 1800
#: The switch, read from the environment by each job.
VARIABLE = "TOKTOOLS_BACKGROUND_COMPILE"


def enabled() -> bool:
    """Whether jobs may start background compiles (``TOKTOOLS_BACKGROUND_COMPILE=0``: no)."""
    return os.environ.get(VARIABLE, "1").strip().lower() not in ("0", "false", "no", "off")


def failed_marker(entry: Path) -> Path:
    """The file that says a background compile of ``entry`` failed (its key names the code)."""
    return entry.with_name(entry.name + ".failed")


def start(module: str, function: str, parameters: Sequence[str]) -> subprocess.Popen[bytes] | None:
    """Start compiling ``module.function`` into the user cache in a detached process, unless it
    is there already, being compiled, failed before, or background compiles are off; the
    process (for tests to wait on), or None when none was started. Never raises."""
    if not enabled() or sys.platform == "win32":
        return None
    try:
        from toktools.runtime.machine_code import entry_path

        entry = entry_path(module, function, tuple(parameters))
        if entry is None or entry.exists() or failed_marker(entry).exists():
            return None
        with compile_lock(entry, wait=False) as free:
            if not free:
                return None
        root = Path(__file__).resolve().parents[2]  # where this toktools is imported from
        command = [sys.executable, "-m", __name__, json.dumps([module, function, list(parameters)])]
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": str(root) + (os.pathsep + path if path else "")}
        process = subprocess.Popen(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not stopped by the job's Ctrl-C
        )
    except Exception:  # noqa: BLE001 - a missed background compile only means a slower next job
        return None
    # reaped when it ends (no zombie in a long-lived process), and referenced until then (no
    # "subprocess is still running" ResourceWarning); the job never waits for it
    threading.Thread(target=process.wait, name="toktools-background-compile", daemon=True).start()
    return process


def _lower_priority_and_limit_time() -> None:
    """The lowest CPU priority, and limits after which the system ends the process."""
    import resource
    import signal

    try:
        os.nice(19)
    except OSError:
        pass
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 10))
    except (ValueError, OSError):
        pass

    def _too_long(signum: int, frame: object) -> None:
        raise SystemExit(0)  # unwinds, so a half-written entry's temporary file is removed

    signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(WALL_SECONDS)


def main(argv: Sequence[str] | None = None) -> int:
    """The detached process: compile the kernel named by the JSON argument into the cache."""
    try:
        module, function, parameters = json.loads((sys.argv[1:] if argv is None else argv)[0])
        _lower_priority_and_limit_time()
        from toktools.runtime.machine_code import compile_into_cache, entry_path

        try:
            compile_into_cache(module, function, parameters, wait=False)  # (None: another one compiles it)
        except Exception:  # noqa: BLE001 - numba cannot compile it here: later jobs need not try again
            entry = entry_path(module, function, parameters)
            if entry is not None:
                failed_marker(entry).touch()
    except BaseException:  # noqa: BLE001 - nobody reads this process's errors; the next job runs as before
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
