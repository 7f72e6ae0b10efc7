"""What the commands share: progress bars, consoles, reading input lines, option callbacks,
``--quiet`` and the one-line warnings it silences."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from toktools.errors import ToktoolsError, ToktoolsWarning


@contextmanager
def progress_bars(enabled: bool) -> Iterator[Any]:
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
    with Progress(
        TextColumn("[bold]{task.description:<8}"),
        BarColumn(),
        TextColumn("{task.fields[amount]}"),
        TimeElapsedColumn(),
        _HonestRemaining(),
        console=console,
        transient=False,
    ) as progress:

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                label = {"read": "reading", "merge": "merging", "encode": "encoding", "em": "EM"}.get(stage, stage)
                tasks[stage] = progress.add_task(
                    label, total=total or None, amount="", eta=stage not in ("merge", "em")
                )
            if stage == "em":  # Unigram: EM steps until the vocabulary is pruned to size (no known end)
                progress.update(tasks[stage], completed=done, total=None, amount=f"step {done}, {total} pieces")
                return
            amount = (
                f"{done}/{total} merges (at most)" if stage == "merge" else f"{done / 1e6:.1f}/{total / 1e6:.1f} MB"
            )
            progress.update(tasks[stage], completed=done, total=total or None, amount=amount)

        yield update


def split_list(value: str | None) -> list[str]:
    """``"a,b,,c"`` → ``["a", "b", "c"]``: a comma-separated option value."""
    return [item for item in (value or "").split(",") if item]


def stdout_console() -> Any:
    """A rich console on stdout; plain (no colour, no markup) when NO_COLOR is set or stdout is
    not a terminal, so pipes and scripts get stable text."""
    from rich.console import Console

    plain = bool(os.environ.get("NO_COLOR")) or not sys.stdout.isatty()
    return Console(
        no_color=plain, highlight=False, emoji=False, soft_wrap=True, force_terminal=None if not plain else False
    )


def echo_plain_or_rich(text: str, styles: Sequence[tuple[str, str]] = ()) -> None:
    """Print ``text``; on a colour terminal, colour the given substrings (regex, style)."""
    console = stdout_console()
    if console.no_color or not console.is_terminal:
        sys.stdout.write(text)
        return
    from rich.text import Text

    rendered = Text(text)
    for pattern, style in styles:
        rendered.highlight_regex(pattern, style)
    console.print(rendered, end="")


def input_lines(files: Sequence[str]) -> Iterator[str]:
    """Lines of the inputs without their ``\\n`` (see :func:`toktools.corpus.reading.read_lines`)."""
    from toktools.corpus.reading import read_lines

    return read_lines(files)


def cap_workers(ctx: Any, param: Any, value: int | None) -> int | None:
    """``--workers`` callback: more processes than cores only slow things down, so cap with a note."""
    from toktools.runtime.workers import available_cores

    cores = available_cores()
    if value is not None and value > cores:
        import click

        if not (ctx is not None and ctx.params.get("quiet")):  # --quiet is eager: parsed before
            click.echo(f"toktools: note: --workers {value} capped at the {cores} available cores", err=True)
        return cores
    return value


def cluster_options(command: Any) -> Any:
    """Adds ``--cluster``, ``--cluster-timeout`` and ``--block-size`` to a command, which gets
    them as one argument ``cluster``: a :class:`toktools.cluster.settings.Cluster`, or None for the
    local process pool. Put it below ``@click.command()`` (and below ``--workers``, if any).

    The two tuning options without ``--cluster``, or ``--workers`` with it, are usage errors —
    except ``--block-size`` for a command marked ``blocks_without_cluster = True`` (encode),
    which then gets ``block_bytes`` and writes here the shards a cluster would write;
    ``--cluster`` without Dask installed says in one line what to install."""
    import functools

    import click

    @functools.wraps(command)
    def wrapper(
        *args: Any, cluster: str | None, cluster_timeout: float | None, block_size: str | None, **kwargs: Any
    ) -> Any:
        ctx = click.get_current_context()
        if cluster is None:
            given = [
                flag
                for flag, value in (("--cluster-timeout", cluster_timeout), ("--block-size", block_size))
                if value is not None
            ]
            if given == ["--block-size"] and getattr(command, "blocks_without_cluster", False):
                from toktools.cluster.settings import parse_size  # encode: the same shards, written here

                try:
                    block_bytes = parse_size(block_size)  # type: ignore[arg-type]
                except ToktoolsError as err:
                    raise click.BadParameter(str(err), param_hint="--block-size") from None
                return command(*args, cluster=None, block_bytes=block_bytes, **kwargs)
            if given:
                raise click.UsageError(
                    f"{' and '.join(given)} only appl{'y' if len(given) > 1 else 'ies'} with --cluster"
                )
            return command(*args, cluster=None, **kwargs)
        if "workers" in kwargs and ctx.get_parameter_source("workers") == click.core.ParameterSource.COMMANDLINE:
            raise click.UsageError("--workers does not apply with --cluster (local:N sets the number of local workers)")
        import importlib.util

        from toktools.cluster.settings import DEFAULT_BLOCK_BYTES, DEFAULT_TIMEOUT, Cluster, parse_size

        if importlib.util.find_spec("distributed") is None:
            raise ToktoolsError("--cluster needs Dask: pip install 'toktools[dask]'")
        try:
            block_bytes = DEFAULT_BLOCK_BYTES if block_size is None else parse_size(block_size)
        except ToktoolsError as err:
            raise click.BadParameter(str(err), param_hint="--block-size") from None
        chosen = Cluster(cluster, DEFAULT_TIMEOUT if cluster_timeout is None else cluster_timeout, block_bytes)
        return command(*args, cluster=chosen, **kwargs)

    options = [
        click.option(
            "--cluster",
            default=None,
            metavar="ADDRESS",
            help="Run on a Dask cluster: a scheduler (tcp://host:8786) or local[:N] (N worker processes "
            "here). Needs toktools[dask]; output is identical to a local run.",
        ),
        click.option(
            "--cluster-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            metavar="SECONDS",
            help="With --cluster: how long to wait for the scheduler and its workers  [default: 30]",
        ),
        click.option(
            "--block-size",
            default=None,
            metavar="SIZE",
            help="With --cluster: bytes of input per task, e.g. 64MB, 256MiB  [default: 64MiB]",
        ),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


@contextmanager
def reported_warnings(quiet: bool) -> Iterator[None]:
    """Every :class:`~toktools.errors.ToktoolsWarning` issued inside, printed at once as one line
    on stderr (``toktools: warning: ...``), each time it is issued; none with ``quiet``. Other
    warnings are shown as Python shows them."""
    import warnings

    import click

    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if quiet else "always", ToktoolsWarning)
        python_show = warnings.showwarning

        def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
            if issubclass(category, ToktoolsWarning):
                click.echo(f"toktools: warning: {message}", err=True)
            else:
                python_show(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


def quiet_option(command: Any) -> Any:
    """Adds ``-q/--quiet`` to a command (put it right below ``@click.command()``): no warnings or
    notes on stderr; errors, results and summaries still print. The command runs with its
    warnings reported (:func:`reported_warnings`) and does not get the option itself."""
    import functools

    import click

    @functools.wraps(command)
    def wrapper(*args: Any, quiet: bool, **kwargs: Any) -> Any:
        with reported_warnings(quiet):
            return command(*args, **kwargs)

    return click.option(
        "-q",
        "--quiet",
        is_flag=True,
        is_eager=True,  # parsed first, so that option callbacks (--workers' note) see it
        help="Print no warnings or notes on stderr (errors, results and summaries still print).",
    )(wrapper)


def model_rule_option(command: Any) -> Any:
    """``--model-rule``: how a sentencepiece ``.model`` encodes (see
    :mod:`toktools.sentencepiece.tokenizer`)."""
    import click

    return click.option(
        "--model-rule",
        "model_rule",
        type=click.Choice(["sentencepiece", "tokenizers"]),
        default=None,
        help="How a sentencepiece .model encodes: sentencepiece (default: SentencePieceProcessor.encode's "
        "ids on every line) or tokenizers (its converted tokenizer.json, as the tokenizers library runs it).",
    )(command)


def tokenizer_with_rule(path: str, model_rule: str | None) -> Any:
    """``path`` as given, or, with ``--model-rule``, the tokenizer loaded with that rule (which
    only a sentencepiece ``.model`` has a choice of)."""
    if model_rule is None:
        return path
    from toktools.formats import load

    tokenizer = load(path, model_rule=model_rule)
    if model_rule == "sentencepiece" and not hasattr(tokenizer, "spm_model"):
        raise ToktoolsError(f"--model-rule sentencepiece: {path} is not a sentencepiece .model")
    return tokenizer


def sampling_options(command: Any) -> Any:
    """``--dropout``, ``--sample-alpha``, ``--nbest-size``, ``--seed``: subword regularisation."""
    return _with_sampling_options(command, with_seed=True)


def sampling_options_without_seed(command: Any) -> Any:
    """``--dropout``, ``--sample-alpha``, ``--nbest-size``, for a command with its own ``--seed``."""
    return _with_sampling_options(command, with_seed=False)


def _with_sampling_options(command: Any, *, with_seed: bool) -> Any:
    import click

    options = [
        click.option(
            "--dropout",
            type=click.FloatRange(0.0, 1.0),
            default=None,
            help="BPE-dropout: skip each merge with this probability (tokenizers' semantics).",
        ),
        click.option(
            "--sample-alpha",
            "sample_alpha",
            type=float,
            default=None,
            help="Unigram .model: sample segmentations as sentencepiece does with this alpha.",
        ),
        click.option(
            "--nbest-size",
            "nbest_size",
            type=int,
            default=-1,
            show_default=True,
            help="With --sample-alpha: -1 samples over the whole lattice, N > 1 among the N best.",
        ),
    ]
    if with_seed:
        options.append(
            click.option(
                "--seed",
                type=int,
                default=0,
                show_default=True,
                help="Seed of --dropout / --sample-alpha (draws depend on the seed and the text only).",
            )
        )
    for option in reversed(options):
        command = option(command)
    return command


def tokenizer_with_sampling(
    tokenizer: Any,
    model_rule: str | None,
    dropout: float | None,
    sample_alpha: float | None,
    nbest_size: int,
    seed: int,
) -> Any:
    """``tokenizer`` (a path or a loaded tokenizer), loaded and set to sample when asked."""
    if dropout is None and sample_alpha is None:
        return tokenizer
    from toktools.formats import load
    from toktools.subword_sampling import Sampling, apply_sampling

    if isinstance(tokenizer, str):
        tokenizer = load(tokenizer, model_rule=model_rule)
    apply_sampling(tokenizer, Sampling(dropout, sample_alpha, nbest_size), seed)
    return tokenizer
