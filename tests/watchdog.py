"""A watchdog for commands that must never wait forever (issue 21), and its launcher.

:func:`run_watched` starts ``toktools ARGS`` (or a function of a test module, :func:`call_watched`)
in a process of its own and watches it. Progress is the command's stdout, stderr or output files
growing, or the CPU time of its process tree advancing. When nothing progresses for ``stall``
seconds (30 by default), the watchdog asks every process of the tree for the stacks of all its
threads, kills the tree, and fails the test with those stacks. A hang is thereby a failure with
a diagnosis, not a test session that never ends; and a slow run on a loaded machine is never a
failure, since it still uses CPU time or writes (no test here races the machine).

The stacks come from :mod:`faulthandler`, registered on ``SIGUSR1`` by the launcher (this same
file run as a script) before toktools is imported. Forked processes (the ``--verify`` checker,
worker pools) inherit the registration and the stderr it writes to, so each process of the tree
prints its own stacks when signalled; a process that does not catch ``SIGUSR1`` (see
``SigCgt`` in ``/proc/PID/status``) is listed, not signalled.

The launcher also makes socket buffers small when ``TOKTOOLS_TEST_SNDBUF`` names a size: every
socket pair the process creates (:func:`multiprocessing.Pipe` is one) gets send and receive
buffers of that many bytes, so a protocol that deadlocks when both ends write deadlocks every
time, not only on long documents and bad timing::

    python tests/watchdog.py -m toktools.cli encode ...      # toktools ARGS
    python tests/watchdog.py --call MODULE:FUNCTION [ARG...]  # FUNCTION(*ARGS) from tests/MODULE.py

Linux only (``/proc``); the tests that use it skip elsewhere.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve()
REPO_ROOT = HERE.parent.parent
#: Seconds without progress after which a run is a hang.
STALL_SECONDS = 30.0
#: How often progress is sampled.
POLL_SECONDS = 0.5
#: The environment variable that makes the launcher's socket pairs small.
SNDBUF_VARIABLE = "TOKTOOLS_TEST_SNDBUF"
#: The smallest buffers Linux grants (it doubles the value asked for, to at least ~4.5 KB).
SMALL_SNDBUF = 4096
_SIGUSR1_BIT = 1 << (signal.SIGUSR1 - 1)


@dataclass
class Finished:
    """A watched run that ended by itself."""

    returncode: int
    stdout: bytes
    stderr: str
    #: the longest stretch without progress, in seconds
    longest_stall: float


class Stalled(AssertionError):
    """A watched run made no progress for the allowed time (the message holds every stack)."""


# ---------------------------------------------------------------------------------------------
# The watching side (in the test process)
# ---------------------------------------------------------------------------------------------


def run_watched(
    args: Sequence[str],
    *,
    watch: Iterable[Path] = (),
    sndbuf: int | None = None,
    stall: float = STALL_SECONDS,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> Finished:
    """``toktools ARGS`` under the watchdog. ``watch``: files or folders whose growth (any file
    in them, temporaries included) counts as progress; ``sndbuf``: socket buffer size for every
    socket pair of the run (:data:`SMALL_SNDBUF` for the smallest). Raises :class:`Stalled`."""
    return _watch([sys.executable, str(HERE), "-m", "toktools.cli", *args], watch, sndbuf, stall, cwd, env, stdin)


def call_watched(
    target: str, *args: str, sndbuf: int | None = None, stall: float = STALL_SECONDS, watch: Iterable[Path] = ()
) -> Finished:
    """``FUNCTION(*args)`` from ``tests/MODULE.py`` (``target`` is ``MODULE:FUNCTION``) in a
    process of its own, under the watchdog: for a test whose failure mode is a hang."""
    return _watch([sys.executable, str(HERE), "--call", target, *args], watch, sndbuf, stall, None, None, None)


def _watch(
    command: list[str],
    watch: Iterable[Path],
    sndbuf: int | None,
    stall: float,
    cwd: Path | None,
    env: dict[str, str] | None,
    stdin: bytes | None,
) -> Finished:
    import tempfile

    if not Path("/proc/self/stat").exists():
        import pytest

        pytest.skip("the watchdog reads /proc (Linux)")
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), environment.get("PYTHONPATH", "")) if p)
    environment.pop(SNDBUF_VARIABLE, None)
    if sndbuf:
        environment[SNDBUF_VARIABLE] = str(sndbuf)
    watched = [Path(p) for p in watch]
    with tempfile.TemporaryDirectory(prefix="watchdog-") as folder:
        out_path, err_path = Path(folder) / "stdout", Path(folder) / "stderr"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=cwd,
                env=environment,
            )
            if stdin is not None:
                assert process.stdin is not None
                _feed(process.stdin, stdin)
            longest = _wait(process, [out_path, err_path, *watched], stall, err_path, command)
        return Finished(
            process.returncode,
            out_path.read_bytes(),
            err_path.read_bytes().decode("utf-8", errors="replace"),
            longest,
        )


def _feed(pipe: object, data: bytes) -> None:
    """Write ``data`` to the child's stdin from a thread (a child that reads slowly must not
    block the watchdog)."""
    import threading

    def feed() -> None:
        try:
            pipe.write(data)  # type: ignore[attr-defined]
        except OSError:
            pass
        finally:
            try:
                pipe.close()  # type: ignore[attr-defined]
            except OSError:
                pass

    threading.Thread(target=feed, name="watchdog-stdin", daemon=True).start()


def _wait(
    process: subprocess.Popen[bytes], watched: list[Path], stall: float, err_path: Path, command: list[str]
) -> float:
    """Wait for ``process``; raise :class:`Stalled` (after collecting stacks and killing the tree)
    when nothing progresses for ``stall`` seconds. Returns the longest stretch without progress."""
    last_state: tuple[int, ...] | None = None
    last_change = time.monotonic()
    longest = 0.0
    while True:
        try:
            process.wait(timeout=POLL_SECONDS)
            return longest
        except subprocess.TimeoutExpired:
            pass
        tree = process_tree(process.pid)
        state = (cpu_ticks(tree), *(_size(p) for p in watched))
        now = time.monotonic()
        if state != last_state:
            last_state, last_change = state, now
            continue
        longest = max(longest, now - last_change)
        if now - last_change >= stall:
            stacks = dump_stacks(tree, err_path)
            kill_tree(process)
            raise Stalled(
                f"no progress for {stall:.0f} s (no output, no CPU time) in: {' '.join(command[3:])}\n"
                f"stacks of every process:\n{stacks}"
            )


def _size(path: Path) -> int:
    """Bytes in ``path``: a file's size, or the sum over a folder's files (recursively)."""
    try:
        if path.is_dir():
            return sum(_size(child) for child in path.iterdir())
        return path.stat().st_size
    except OSError:
        return -1  # appeared or vanished: a change is progress


def process_tree(root: int) -> list[int]:
    """``root`` and its descendants, parents before children (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is not None:
            children.setdefault(int(stat[1]), []).append(int(entry.name))
    tree, queue = [], [root]
    while queue:
        pid = queue.pop(0)
        tree.append(pid)
        queue.extend(sorted(children.get(pid, [])))
    return tree


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, ...)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def cpu_ticks(pids: Iterable[int]) -> int:
    """CPU time of ``pids`` and of their waited-for children, in clock ticks."""
    total = 0
    for pid in pids:
        stat = _stat(pid)
        if stat is not None:  # utime, stime, cutime, cstime: fields 14-17, here 11-14
            total += sum(int(value) for value in stat[11:15])
    return total


def _catches_sigusr1(pid: int) -> bool:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & _SIGUSR1_BIT)
    except OSError:
        pass
    return False


def _describe(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmdline = "?"
    stat = _stat(pid)
    state = stat[0] if stat else "?"
    return f"pid {pid} (state {state}): {cmdline[:200]}"


def dump_stacks(pids: Sequence[int], err_path: Path) -> str:
    """Each process's stacks, written by its faulthandler into ``err_path`` when signalled one
    at a time (so that each chunk of the file belongs to one process)."""
    parts: list[str] = []
    for pid in pids:
        header = _describe(pid)
        if not _catches_sigusr1(pid):
            parts.append(f"--- {header}: does not catch SIGUSR1, no stacks")
            continue
        before = _size(err_path)
        try:
            os.kill(pid, signal.SIGUSR1)
        except ProcessLookupError:
            continue
        written = _settled_size(err_path, before)
        with err_path.open("rb") as handle:
            handle.seek(before)
            chunk = handle.read(max(0, written - before)).decode("utf-8", errors="replace")
        parts.append(f"--- {header}\n{chunk.rstrip()}")
    return "\n".join(parts)


def _settled_size(path: Path, before: int) -> int:
    """The size of ``path`` once it has grown past ``before`` and then stayed the same for a
    moment (a process writing its stacks), or after 5 s."""
    deadline = time.monotonic() + 5.0
    size, steady_since = _size(path), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now_size = _size(path)
        if now_size != size:
            size, steady_since = now_size, time.monotonic()
        elif size > before and time.monotonic() - steady_since >= 0.3:
            break
    return size


def kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to ``process`` and every descendant (children first), then reap it."""
    for pid in reversed(process_tree(process.pid)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


# ---------------------------------------------------------------------------------------------
# The launcher (in the watched process)
# ---------------------------------------------------------------------------------------------


def _small_socket_pairs(size: int) -> None:
    """Every later ``socket.socketpair()`` gets ``size``-byte send and receive buffers."""
    import socket

    original = socket.socketpair

    def socketpair(*args: object, **kwargs: object) -> tuple[socket.socket, socket.socket]:
        pair = original(*args, **kwargs)  # type: ignore[arg-type]
        for sock in pair:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, size)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
        return pair

    socket.socketpair = socketpair  # type: ignore[assignment]


def _launch(argv: list[str]) -> None:
    import faulthandler
    import runpy

    faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)
    size = int(os.environ.get(SNDBUF_VARIABLE) or 0)
    if size:
        _small_socket_pairs(size)
    if argv[:1] == ["-m"]:
        sys.argv = ["toktools" if argv[1] == "toktools.cli" else argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__")
    elif argv[:1] == ["--call"]:
        import importlib

        module_name, _, function = argv[1].partition(":")
        sys.path.insert(0, str(HERE.parent))
        getattr(importlib.import_module(module_name), function)(*argv[2:])
    else:
        raise SystemExit("usage: watchdog.py -m MODULE [ARG...] | --call MODULE:FUNCTION [ARG...]")


if __name__ == "__main__":
    _launch(sys.argv[1:])
