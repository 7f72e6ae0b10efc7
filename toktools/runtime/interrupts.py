"""SIGTERM handled like Ctrl-C: one line, the conventional exit code, no temporary files left.

:func:`install` makes SIGTERM raise :class:`Terminated` (a ``KeyboardInterrupt``, so every
``finally`` and every pool shutdown that copes with Ctrl-C copes with it too) while a command
runs (inside :func:`working`). Outside it (click still parsing the command line, or the command
done and the process exiting) there is nothing to unwind and click would print ``Aborted!``
for a ``KeyboardInterrupt``: there SIGTERM and Ctrl-C report and exit at once. Python runs
signal handlers only between bytecodes, so a long call into native code (``tokenizers``
training a big corpus) would delay them: a watcher thread, woken through the signal wakeup fd,
gives the main thread a grace period to unwind, then removes the registered temporary files
itself and exits.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: How long the main thread may take to unwind before the watcher exits for it.
GRACE_SECONDS = 3.0
_exit_lock = threading.Lock()
_installed = False
_sockets: list[socket.socket] = []
#: True while a command runs: a signal then raises, so that ``finally`` blocks clean up.
_working = False


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop like Ctrl-C, but report it as termination (exit code 143)."""


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal number, as shells report a process killed by that signal."""
    return 128 + (signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT)


def message(interrupt: KeyboardInterrupt) -> str:
    return "toktools: terminated" if isinstance(interrupt, Terminated) else "toktools: interrupted"


def interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C or SIGTERM that caused ``error``, if any: a signal handler that raises inside a
    C call (numba's ``CPUDispatcher``) surfaces as a ``SystemError`` whose cause is the signal's
    exception; it is stopped like the signal anywhere else."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None


def claim_exit() -> bool:
    """True for the first caller only: the main thread and the watcher never both report."""
    return _exit_lock.acquire(blocking=False)


@contextmanager
def working() -> Iterator[None]:
    """The command's own work: signals raise (:class:`Terminated`, ``KeyboardInterrupt``)."""
    global _working
    _working = True
    try:
        yield
    finally:
        _working = False


def _remove_temporaries() -> None:
    """Remove the registered temporary files, if :mod:`toktools.io.outputs` (which keeps them) is
    loaded: the signal may land while it is being imported, when nothing is registered yet
    (importing it here would find it half-initialised)."""
    outputs = sys.modules.get("toktools.io.outputs")
    remove = getattr(outputs, "remove_registered_temporaries", None)
    if remove is not None:
        remove()


def _exit_now(signum: int) -> None:
    """Report and exit from the signal handler (no command is running: nothing to unwind)."""
    if not claim_exit():
        return  # the main thread or the watcher is already reporting and exiting
    _remove_temporaries()
    try:
        sys.stderr.write("toktools: terminated\n" if signum == signal.SIGTERM else "toktools: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a reentrant write, if the signal came mid-write
        os.write(2, b"toktools: terminated\n" if signum == signal.SIGTERM else b"toktools: interrupted\n")
    os._exit(128 + signum)


def _on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM kills at once
    if not _working:
        _exit_now(signal.SIGTERM)
        return
    raise Terminated()


def _on_sigint(signum: int, frame: object) -> None:
    if not _working:
        _exit_now(signal.SIGINT)
        return
    raise KeyboardInterrupt()


def _on_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A signal's exception raised where Python cannot propagate it (a fork hook such as
    logging's while a worker is forked, a ``__del__``) would be printed as "Exception ignored"
    and lost: deliver the signal again a moment later, when the main thread is past that place."""
    kind = getattr(unraisable, "exc_type", None)
    if isinstance(kind, type) and issubclass(kind, KeyboardInterrupt):
        signum = signal.SIGTERM if issubclass(kind, Terminated) else signal.SIGINT
        if signum == signal.SIGTERM:
            try:
                signal.signal(signal.SIGTERM, _on_sigterm)  # the lost one made the next SIGTERM fatal
            except ValueError:  # not the main thread: there the handler never runs
                return
        timer = threading.Timer(0.02, _deliver_again, (signum,))
        timer.daemon = True
        timer.start()
        return
    _previous_unraisablehook(unraisable)


_previous_unraisablehook = sys.unraisablehook


def _deliver_again(signum: int) -> None:
    if not _exit_lock.locked():  # unless the process is already reporting and exiting
        os.kill(os.getpid(), signum)


def _in_forked_child() -> None:
    """A forked child (a worker) is not the process that reports: SIGTERM kills it at once (the
    parent stops workers with SIGTERM, possibly before their initializer ran), Ctrl-C is the
    parent's, and its signals must not wake the parent's watcher through the shared socket."""
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if signal.getsignal(signal.SIGINT) is _on_sigint:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass


def _watch(reader: socket.socket) -> None:
    """Wait for a signal byte; if the main thread has not exited after the grace period (it
    is stuck in native code), clean up and exit from here."""
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        numbers = set(data)
        if numbers & {signal.SIGTERM, signal.SIGINT}:
            time.sleep(GRACE_SECONDS)
            if not claim_exit():
                return  # the main thread is already reporting and exiting
            _remove_temporaries()
            terminated = signal.SIGTERM in numbers
            try:
                sys.stderr.write("toktools: terminated\n" if terminated else "toktools: interrupted\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os._exit(128 + (signal.SIGTERM if terminated else signal.SIGINT))


def install() -> None:
    """Install the SIGTERM handler and the watcher (main thread only; idempotent)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where Ctrl-C is ignored (nohup, &)
        signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _on_unraisable
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_in_forked_child)
    try:
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (OSError, ValueError):
        return
    _sockets.extend((reader, writer))  # they live as long as the process
    threading.Thread(target=_watch, args=(reader,), name="toktools-signal-watch", daemon=True).start()
