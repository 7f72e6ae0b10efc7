"""The ``toktools`` command line: parses options, calls the library, renders results.

No algorithm lives here. Results go to stdout; progress and diagnostics to stderr. Every
:class:`~toktools.errors.ToktoolsError` becomes one readable line on stderr and exit code 1.
Heavy modules are imported inside the commands so that ``toktools --help`` starts fast.
"""
from __future__ import annotations

import os
import sys
from typing import Any

import click

from toktools import __version__
from toktools.errors import ToktoolsError


class ToktoolsGroup(click.Group):
    """A group that turns our errors (and Ctrl-C) into one line without a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ToktoolsError as err:
            click.echo(f"toktools: error: {err}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("toktools: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # `toktools encode big.txt | head`: the reader went away; that is not an error.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)


@click.group(cls=ToktoolsGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="toktools")
def main() -> None:
    """Train, run and compare WordPiece and byte-level BPE tokenizers.

    \b
    Examples:
      toktools train bytebpe corpus.txt -o my-bpe --vocab-size 50000
      echo "Hello world" | toktools encode -t my-bpe --format tokens
    """


def _register() -> None:
    """Each command lives in its own module under ``toktools/commands``."""
    from toktools.commands import compare, convert, count, encode, inspect, parity, pretrain, train

    for command in (train.train, count.count, encode.encode, encode.decode, convert.convert, inspect.inspect,
                    compare.compare, parity.parity, pretrain.pretrain_data):
        main.add_command(command)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
