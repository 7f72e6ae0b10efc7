"""The ``toktools`` command line: parses options, calls the library, renders results.

No algorithm lives here. Results go to stdout; progress and diagnostics to stderr. Every
:class:`~toktools.errors.ToktoolsError` becomes one readable line on stderr and exit code 1.
Heavy modules are imported inside the commands so that ``toktools --help`` starts fast.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

from toktools._version import __version__
from toktools.errors import ToktoolsError


def _running_as_the_program() -> bool:
    """``toktools`` (the console script) or ``python -m toktools.cli``, not an import by a library
    or a test: only then may this process's signal handling be taken over."""
    return __name__ == "__main__" or os.path.basename(sys.argv[0] if sys.argv else "") == "toktools"


if _running_as_the_program():  # before importing click: a SIGTERM while it loads is one line too
    from toktools.runtime import interrupts

    interrupts.install()
    # no command does linear algebra; OpenBLAS, loaded with NumPy, otherwise starts a thread per
    # core that spins for ~0.05 s of CPU (measured: NumPy's import 0.11 s CPU, 0.06 s with one)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click  # noqa: E402 - after the handlers above


class ToktoolsGroup(click.Group):
    """A group that turns our errors, Ctrl-C and SIGTERM into one line without a traceback."""

    def main(self, args: Any = None, *rest: Any, **options: Any) -> Any:
        if args is None:  # run as the program (not from a test's CliRunner): SIGTERM like Ctrl-C
            from toktools.runtime import interrupts

            interrupts.install()
        return super().main(args, *rest, **options)

    def invoke(self, ctx: click.Context) -> Any:
        from toktools.runtime import interrupts

        try:
            with interrupts.working():  # a signal raises from here on (before: reported at once)
                result = super().invoke(ctx)
                sys.stdout.flush()  # a full disk must be reported now, not at interpreter exit
            return result
        except ToktoolsError as err:
            click.echo(f"toktools: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt as interrupt:  # Ctrl-C, or SIGTERM (interrupts.Terminated)
            _report_interrupt(ctx, interrupt)
        except SystemError as err:
            # a signal that landed inside a compiled (numba) call: its dispatcher reports the
            # handler's KeyboardInterrupt as "returned a result with an exception set"
            signalled = interrupts.interrupt_behind(err)
            if signalled is None:
                raise
            _report_interrupt(ctx, signalled)
        except EOFError as err:
            # an input that ends too early (a truncated compressed file) that no reader named:
            # still one line, not click's "Aborted!" (which it prints for EOFError)
            detail = f" ({err})" if str(err) else ""
            click.echo(f"toktools: error: an input ended too early{detail}", err=True)
            ctx.exit(1)
        except BrokenPipeError:
            # `toktools encode big.txt | head`: the reader went away; that is not an error.
            _silence_stdout()
            ctx.exit(0)
        except OSError as err:
            if err.filename is not None or err.errno not in _WRITE_ERRORS:
                raise
            _silence_stdout()
            click.echo(f"toktools: error: cannot write to standard output: {err.strerror}", err=True)
            ctx.exit(1)


def _report_interrupt(ctx: click.Context, interrupt: KeyboardInterrupt) -> None:
    """One line and 128 + the signal number, unless the watcher thread is reporting already."""
    from toktools.runtime import interrupts

    if interrupts.claim_exit():
        click.echo(interrupts.message(interrupt), err=True)
        ctx.exit(interrupts.exit_code(interrupt))
    _silence_stdout()
    ctx.exit(interrupts.exit_code(interrupt))  # the watcher thread is reporting


#: Errors of writing to standard output (``toktools encode > /dev/full``).
_WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@click.group(cls=ToktoolsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="toktools")
def main() -> None:
    """Train, run and compare WordPiece, byte-level BPE and Unigram/SentencePiece tokenizers.

    \b
    Examples:
      toktools train bytebpe corpus.txt -o my-bpe --vocab-size 50000
      echo "Hello world" | toktools encode -t my-bpe --format tokens
    """


#: Each command lives in its own module under ``toktools/commands``: name -> (module, attribute).
#: A run imports only the module of the command it runs (``--help`` imports them all, to list
#: them): the others cost ~10 ms of start-up for nothing (``compare``, ``train``, ``count``).
COMMANDS = {
    "train": ("train", "train"),
    "count": ("count", "count"),
    "encode": ("encode", "encode"),
    "decode": ("encode", "decode"),
    "convert": ("convert", "convert"),
    "inspect": ("inspect", "inspect"),
    "compare": ("compare", "compare"),
    "extend": ("extend", "extend"),
    "parity": ("parity", "parity"),
    "pretrain-data": ("pretrain", "pretrain_data"),
}


class LazyCommands(dict):  # type: ignore[type-arg]
    """The group's ``name -> command`` map, each command's module imported when the command is
    first looked up (click's ``get_command``, ``main.commands["encode"]``) or all of them when
    the map is listed (``--help``)."""

    def __init__(self, where: dict[str, tuple[str, str]]) -> None:
        super().__init__()
        self._where = dict(where)

    def _load(self, name: str) -> None:
        import importlib

        module, attribute = self._where.pop(name)
        command = getattr(importlib.import_module(f"toktools.commands.{module}"), attribute)
        assert command.name == name, (command.name, name)
        dict.__setitem__(self, name, command)

    def _load_all(self) -> None:
        for name in list(self._where):
            self._load(name)

    def __missing__(self, name: str) -> Any:
        if name not in self._where:
            raise KeyError(name)
        self._load(name)
        return dict.__getitem__(self, name)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name in self._where:
            self._load(name)
        return dict.get(self, name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._where or dict.__contains__(self, name)

    def __len__(self) -> int:
        return len(self._where) + dict.__len__(self)

    def __iter__(self) -> Any:
        self._load_all()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._load_all()
        return dict.keys(self)

    def values(self) -> Any:
        self._load_all()
        return dict.values(self)

    def items(self) -> Any:
        self._load_all()
        return dict.items(self)


main.commands = LazyCommands(COMMANDS)

if __name__ == "__main__":  # pragma: no cover
    main()
