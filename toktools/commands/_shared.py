"""What the commands share: progress bars, consoles, reading input lines, atomic outputs."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence


from toktools.errors import ToktoolsError


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress display on stderr: bytes read, then merges (or Unigram's EM steps). Yields a callback
    ``(stage, done, total)`` or None when disabled or stderr is not a terminal.

    Only reading gets a time estimate: bytes are read at a steady rate. Merges are not: the
    first ones touch most of the corpus and the last ones a few words, and merging may stop
    early at ``--min-frequency``, so an ETA from merges done / planned was wildly wrong (7
    minutes for a 15 s job). Merges show their count and the elapsed time only."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    class _HonestRemaining(TimeRemainingColumn):
        def render(self, task: Any) -> Any:
            from rich.text import Text

            if not task.fields.get("eta", True):
                return Text("")
            return super().render(task)

    console = Console(stderr=True)
    tasks: dict[str, Any] = {}
    with Progress(TextColumn("[bold]{task.description:<8}"), BarColumn(), TextColumn("{task.fields[amount]}"),
                  TimeElapsedColumn(), _HonestRemaining(), console=console, transient=False) as progress:
        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = {"read": "reading", "merge": "merging", "encode": "encoding", "em": "EM"}.get(stage, stage)
                tasks[stage] = progress.add_task(label, total=total or None, amount="", eta=stage not in ("merge", "em"))
            if stage == "em":  # Unigram: EM steps until the vocabulary is pruned to size (no known end)
                progress.update(tasks[stage], completed=done, total=None, amount=f"step {done}, {total} pieces")
                return
            amount = f"{done}/{total} merges (at most)" if stage == "merge" else f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
            progress.update(tasks[stage], completed=done, total=total or None, amount=amount)
        yield update


def _split_list(value: str | None) -> list[str]:
    return [item for item in (value or "").split(",") if item]


def _console() -> Any:
    """A rich console on stdout; plain (no colour, no markup) when NO_COLOR is set or stdout is
    not a terminal, so pipes and scripts get stable text."""
    from rich.console import Console

    plain = bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
    return Console(no_color=plain, highlight=False, emoji=False, soft_wrap=True, force_terminal=None if not plain else False)


def _echo_plain_or_rich(text: str, styles: Sequence[tuple[str, str]] = ()) -> None:
    """Print ``text``; on a colour terminal, colour the given substrings (regex, style)."""
    console = _console()
    if console.no_color or not console.is_terminal:
        sys.stdout.write(text)
        return
    from rich.text import Text

    rendered = Text(text)
    for pattern, style in styles:
        rendered.highlight_regex(pattern, style)
    console.print(rendered, end="")


@contextmanager
def _output(path: Path | None, binary: bool = False) -> Iterator[Any]:
    """stdout, or a temporary file renamed over ``path`` only when everything was written
    (check ``path`` first with :func:`toktools.outputs.check_output_file`)."""
    if path is None:
        yield sys.stdout.buffer if binary else sys.stdout
        sys.stdout.flush()
        return
    from toktools.outputs import atomic_file

    with atomic_file(path, binary=binary) as out:
        yield out


def _input_lines(files: Sequence[str]) -> Iterator[str]:
    """Lines of the inputs without their ``\\n`` (see :func:`toktools.corpus.read_lines`)."""
    from toktools.corpus import read_lines

    return read_lines(files)


def _cap_workers(ctx: Any, param: Any, value: int | None) -> int | None:
    """``--workers`` callback: more processes than cores only slow things down, so cap with a note."""
    from toktools.workers import available_cores

    cores = available_cores()
    if value is not None and value > cores:
        import click

        click.echo(f"toktools: note: --workers {value} capped at the {cores} available cores", err=True)
        return cores
    return value
